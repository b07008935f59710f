"""InitProducerId v0-5: producer ids for idempotent and transactional producers.

Behaviour, as Kafka's ``KafkaApis.handleInitProducerIdRequest`` and
``TransactionCoordinator.handleInitProducerId``:

- authorization first: a transactional id needs WRITE on it
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer IDEMPOTENT_WRITE on the
  cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED; KIP-679, Kafka 2.8+);

- without a transactional id (an idempotent producer) every request gets a new producer
  id with epoch 0, never one handed out before, by this broker or an earlier run of it
  on the same data: ids come in blocks recorded durably before use (see
  :class:`~minibroker.coordinator.producer_state.ProducerIdManager`). A producer id and
  epoch given (v3+, KIP-360) do not change that: Kafka answers a new id too. Produce
  checks the sequences of each id (see :mod:`minibroker.coordinator.producer_state`). A
  block that cannot be recorded (a full disk) hands out nothing: the answer is
  COORDINATOR_LOAD_IN_PROGRESS (retriable), as Kafka's while no id block is available.
  In a cluster the blocks come from the controller (Kafka's AllocateProducerIds,
  ``ProducerIdsRecord``), so no two brokers hand out the same id; a refusal is
  COORDINATOR_LOAD_IN_PROGRESS too;
- with a transactional id the transaction coordinator answers
  (:meth:`~minibroker.coordinator.txn_coordinator.TransactionCoordinator.init_producer_id`):
  the id's producer id with its epoch bumped (a new producer id once the epochs are used
  up), fencing older producers of the id; an ongoing transaction is aborted first and
  the answer is CONCURRENT_TRANSACTIONS until that is done; a ``transaction_timeout_ms``
  above ``transaction.max.timeout.ms`` is INVALID_TRANSACTION_TIMEOUT;
- a producer id without an epoch, or the reverse, is INVALID_REQUEST.

Version notes: v3 producer_id/producer_epoch (KIP-360: resume after an error, or fenced
with PRODUCER_FENCED if another producer took the id over); v4 PRODUCER_FENCED, which
older versions get as INVALID_PRODUCER_EPOCH (KIP-588); v5 TRANSACTION_ABORTABLE (KIP-890),
never answered here.
"""

from kproto.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorLoadInProgressError,
    InvalidRequestError,
    KafkaCodeError,
    TransactionalIdAuthorizationFailedError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import InitProducerIdResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles
from minibroker.handlers.txn import fenced_code


def _refused(state, header, transactional_id) -> int:
    """KafkaApis.handleInitProducerIdRequest: WRITE on the transactional id; without one,
    IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679, Kafka 2.8+)."""
    if transactional_id is not None:
        if state.authorizer.allows(header, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return 0
        return TransactionalIdAuthorizationFailedError.code
    if (state.authorizer.allows(header, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER)
            or state.authorizer.allows_any(header, AclOperation.WRITE, ResourceType.TOPIC)):
        return 0
    return ClusterAuthorizationFailedError.code


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
async def handle(state, header, request):
    producer_id, producer_epoch = (request.producer_id, request.producer_epoch) if header.api_version >= 3 else (-1, -1)
    if (producer_id == -1) != (producer_epoch == -1):
        return InitProducerIdResponse(error_code=InvalidRequestError.code, producer_id=-1, producer_epoch=-1)
    if code := _refused(state, header, request.transactional_id):
        return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        code, producer_id, producer_epoch = await state.transactions.init_producer_id(
            request.transactional_id, request.transaction_timeout_ms,
            None if producer_id == -1 else (producer_id, producer_epoch))
        return InitProducerIdResponse(error_code=fenced_code(code, header.api_version, first=4),
                                      producer_id=producer_id, producer_epoch=producer_epoch)
    try:
        producer_id = await state.new_producer_id_async()
    except (OSError, KafkaCodeError):  # Kafka's RPCProducerIdManager without a block: CoordinatorLoadInProgressException
        return InitProducerIdResponse(error_code=CoordinatorLoadInProgressError.code, producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(error_code=0, producer_id=producer_id, producer_epoch=0)
