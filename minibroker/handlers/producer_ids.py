"""InitProducerId v0-5, non-transactional.

Behaviour: every idempotent producer gets a new producer id with epoch 0, never one
handed out before, by this broker or an earlier run of it on the same data: ids come in
blocks recorded durably before use (see :class:`~minibroker.coordinator.producer_state.ProducerIdManager`).
Produce checks the sequences of each id (see :mod:`minibroker.coordinator.producer_state`).
A block that cannot be recorded (a full disk) hands out nothing: the answer is
COORDINATOR_LOAD_IN_PROGRESS (retriable), as Kafka's while no id block is available.
In a cluster the blocks come from the controller (Kafka's AllocateProducerIds,
``ProducerIdsRecord``), so no two brokers hand out the same id; a refusal is
COORDINATOR_LOAD_IN_PROGRESS too.
Not implemented yet: transactional ids (the transaction coordinator), epoch bumps of
an existing producer id (v3+).
"""

from kproto.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaCodeError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import InitProducerIdResponse
from minibroker.handlers import handles


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
async def handle(state, header, request):
    if request.transactional_id is not None:
        # No transaction coordinator yet: say so the way Kafka does while one is missing.
        return InitProducerIdResponse(error_code=CoordinatorNotAvailableError.code)
    try:
        producer_id = await state.new_producer_id_async()
    except (OSError, KafkaCodeError):  # Kafka's RPCProducerIdManager without a block: CoordinatorLoadInProgressException
        return InitProducerIdResponse(error_code=CoordinatorLoadInProgressError.code, producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(error_code=0, producer_id=producer_id, producer_epoch=0)
