"""InitProducerId v0-5, non-transactional.

Behaviour: every idempotent producer gets a new producer id with epoch 0, never one
handed out before, by this broker or an earlier run of it on the same data: ids come in
blocks recorded durably before use (see :class:`~minibroker.producer_state.ProducerIdManager`).
Produce checks the sequences of each id (see :mod:`minibroker.producer_state`).
Not implemented yet: transactional ids (the transaction coordinator), epoch bumps of
an existing producer id (v3+).
"""

from kproto.errors import CoordinatorNotAvailableError
from kproto.protocol import ApiKey
from kproto.protocol.messages import InitProducerIdResponse
from minibroker.handlers import handles


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
async def handle(state, header, request):
    if request.transactional_id is not None:
        # No transaction coordinator yet: say so the way Kafka does while one is missing.
        return InitProducerIdResponse(error_code=CoordinatorNotAvailableError.code)
    return InitProducerIdResponse(error_code=0, producer_id=state.new_producer_id(), producer_epoch=0)
