"""AddPartitionsToTxn v0-5, AddOffsetsToTxn v0-4, EndTxn v0-4, DescribeTransactions v0 and
ListTransactions v0-1: the transaction coordinator's requests (KIP-98, KIP-664).

Behaviour: the decisions are :mod:`minibroker.coordinator.transactions`' and the driver
:mod:`minibroker.coordinator.txn_coordinator`'s (Kafka's ``TransactionCoordinator``); these
handlers translate, as Kafka's ``KafkaApis`` does:

- AddPartitionsToTxn: partitions of topics that do not exist are UNKNOWN_TOPIC_OR_PARTITION
  and the others OPERATION_NOT_ATTEMPTED, nothing added; otherwise every partition gets
  the coordinator's answer. v4+ is a broker's (KIP-890 part 1, Kafka's
  ``AddPartitionsToTxnManager``): a batch of transactions, each answered on its own;
  with ``verify_only`` nothing is added and each partition is 0 when it is in the
  ongoing transaction, else TRANSACTION_ABORTABLE (INVALID_TXN_STATE for v4), or the
  transaction's error (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
  CONCURRENT_TRANSACTIONS while it ends: Kafka's ``handleVerifyPartitionsInTransaction``);
- AddOffsetsToTxn adds the group's partition of ``__consumer_offsets`` (made on first use,
  as for a commit) to the transaction, so that its TxnOffsetCommit is committed or
  aborted with it;
- PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below AddPartitionsToTxn, AddOffsetsToTxn and
  EndTxn v2 (KIP-588);
- DescribeTransactions answers per id: NOT_COORDINATOR elsewhere, TRANSACTIONAL_ID_NOT_FOUND
  for an unknown one; ListTransactions filters by state names (unknown ones are listed
  back), producer ids and, v1, by how long ago the transaction started (KIP-994), and is
  COORDINATOR_LOAD_IN_PROGRESS while a partition of ``__transaction_state`` loads.

In a MiniCluster, the coordinator of a transactional id is the leader of its
``__transaction_state`` partition (created through the controller on the first
FindCoordinator for a transaction, :func:`transaction_state_topic_spec`); elsewhere a request
is NOT_COORDINATOR, and COORDINATOR_LOAD_IN_PROGRESS while a new leader loads the partition.

- EndTxn v5 with ``transaction.version`` 2 (KIP-890 part 2, Kafka's ``endTransaction`` TV2
  branch): the epoch is bumped at every commit and abort, the markers carry the bumped
  epoch, and the answer names the producer id and epoch for the next transaction (a new
  producer id at epoch 0 once the epoch is exhausted); a retry (the epoch before the bump)
  of an end already complete is answered with them again; an abort with no transaction
  ongoing is allowed. Below transaction version 2 v5 is not advertised, and a v5 request
  is ended as v4 (producer id and epoch -1).

Version notes: AddOffsetsToTxn v4 and EndTxn v4 only add TRANSACTION_ABORTABLE, which this
coordinator never answers to them.
Authorization (Kafka's ``KafkaApis``): AddPartitionsToTxn v0-3, AddOffsetsToTxn and EndTxn
need WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), AddPartitionsToTxn
v0-3 WRITE on each topic too (TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED),
AddOffsetsToTxn READ on the group (GROUP_AUTHORIZATION_FAILED); AddPartitionsToTxn v4+, a
broker's, CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED). DescribeTransactions
needs DESCRIBE on each id and shows only the partitions of topics the principal may
DESCRIBE; ListTransactions lists only the ids it may DESCRIBE.
"""

from kproto.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OperationNotAttemptedError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    DescribeTransactionsResponse,
    EndTxnResponse,
    ListTransactionsResponse,
)
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.coordinator.offsets_log import OFFSETS_TOPIC, partition_for
from minibroker.handlers import handles
from minibroker.handlers.metadata import offsets_topic_spec

__all__ = ["fenced_code"]


def fenced_code(code: int, version: int, first: int = 2) -> int:
    """PRODUCER_FENCED as clients before ``first`` know it: INVALID_PRODUCER_EPOCH (KIP-588)."""
    return InvalidProducerEpochError.code if code == ProducerFencedError.code and version < first else code


def _missing_codes(state, asked):
    """KafkaApis: with a partition of an unknown topic nothing is added, that one is
    UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED; None when all exist."""
    missing = {tp for tp in asked if not state.topic_partition_exists(tp)}
    if not missing:
        return None
    return {tp: UnknownTopicOrPartitionError.code if tp in missing else OperationNotAttemptedError.code for tp in asked}


def _unwritable(state, header, transactional_id) -> int:
    """TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless the principal may WRITE the id, else 0."""
    if state.authorizer.allows(header, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return 0
    return TransactionalIdAuthorizationFailedError.code


def _refused_codes(state, header, transactional_id, asked):
    """KafkaApis.handleAddPartitionsToTxnRequest (a client's, v0-3): WRITE on the id, else
    every partition refused; WRITE on each topic, else TOPIC_AUTHORIZATION_FAILED and the
    others OPERATION_NOT_ATTEMPTED. None when all is allowed."""
    if code := _unwritable(state, header, transactional_id):
        return dict.fromkeys(asked, code)
    denied = {name for name, _ in asked
              if not state.authorizer.allows(header, AclOperation.WRITE, ResourceType.TOPIC, name)}
    if not denied:
        return None
    return {tp: TopicAuthorizationFailedError.code if tp[0] in denied else OperationNotAttemptedError.code
            for tp in asked}


async def _add_or_verify(state, version, transactional_id, producer_id, producer_epoch, asked, verify_only):
    # A leader's add (v4+, not verify_only) is KIP-890 part 2's implicit add of a TV2 producer.
    tv = 2 if version >= 4 and state.config["transaction.version"] >= 2 else 0
    """One transaction's partitions: each one's code (KafkaApis.handleAddPartitionsToTxnRequest)."""
    codes = _missing_codes(state, asked)
    if codes is not None:
        return codes
    if verify_only:  # KIP-890 part 1: a leader asks before a transactional append
        codes = state.transactions.verify_partitions(transactional_id, producer_id, producer_epoch, asked)
    else:
        code = await state.transactions.add_partitions(transactional_id, producer_id, producer_epoch, asked, tv)
        codes = dict.fromkeys(asked, code)
    # TRANSACTION_ABORTABLE is v5's (KIP-890); a v4 leader gets what it knows, INVALID_TXN_STATE.
    return {tp: InvalidTxnStateError.code if c == TransactionAbortableError.code and version < 5
            else fenced_code(c, version) for tp, c in codes.items()}


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5)
async def add_partitions_to_txn(state, header, request):
    R = AddPartitionsToTxnResponse
    version = header.api_version

    def topic_results(topics, codes):
        return [R.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
            R.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=codes[(t.name, p)])
            for p in t.partitions]) for t in topics]

    if version < 4:  # a client's: one transaction
        asked = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
        codes = _refused_codes(state, header, request.v3_and_below_transactional_id, asked) or await _add_or_verify(state, version, request.v3_and_below_transactional_id,
                                     request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
                                     asked, False)
        return R(results_by_topic_v3_and_below=topic_results(request.v3_and_below_topics, codes))
    # v4+: a broker's batch of transactions (KIP-890, AddPartitionsToTxnManager), answered one by one.
    if not state.authorizer.allows(header, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER):
        return R(error_code=ClusterAuthorizationFailedError.code, results_by_transaction=[])
    results = []
    for txn in request.transactions:
        asked = [(t.name, p) for t in txn.topics for p in t.partitions]
        codes = await _add_or_verify(state, version, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                     asked, txn.verify_only)
        results.append(R.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                  topic_results=topic_results(txn.topics, codes)))
    return R(error_code=0, results_by_transaction=results)


async def _offsets_partition_count(state) -> int:
    """Partitions of ``__consumer_offsets``, made on first use (a cluster's through the controller)."""
    if state.cluster is None:
        return len(state.offsets_topic().partitions)
    image = state.cluster.image
    if image.topic_by_name(OFFSETS_TOPIC) is None:
        await state.cluster.channel.create_topics([offsets_topic_spec(state)], validate_only=False)
    topic = image.topic_by_name(OFFSETS_TOPIC)
    return len(topic.partitions) if topic is not None else 0


@handles(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4)
async def add_offsets_to_txn(state, header, request):
    if code := _unwritable(state, header, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=code)
    if not state.authorizer.allows(header, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=GroupAuthorizationFailedError.code)
    try:
        count = await _offsets_partition_count(state)
    except Exception:  # a full disk, no controller: as Kafka while the topic cannot be had
        count = 0
    if not count:
        return AddOffsetsToTxnResponse(error_code=CoordinatorNotAvailableError.code)
    code = await state.transactions.add_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch,
        [(OFFSETS_TOPIC, partition_for(request.group_id, count))])
    return AddOffsetsToTxnResponse(error_code=fenced_code(code, header.api_version))


@handles(ApiKey.END_TXN, 0, 5)
async def end_txn(state, header, request):
    if code := _unwritable(state, header, request.transactional_id):
        return EndTxnResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    if header.api_version >= 5 and state.config["transaction.version"] >= 2:
        # KIP-890 part 2: Kafka's TransactionVersion.transactionVersionForEndTxn (v5+ is TV2).
        code, producer_id, producer_epoch = await state.transactions.end_txn_v2(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed)
        return EndTxnResponse(error_code=code, producer_id=producer_id, producer_epoch=producer_epoch)
    code = await state.transactions.end_txn(request.transactional_id, request.producer_id,
                                            request.producer_epoch, request.committed)
    return EndTxnResponse(error_code=fenced_code(code, header.api_version), producer_id=-1, producer_epoch=-1)


@handles(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0)
async def describe_transactions(state, header, request):
    R = DescribeTransactionsResponse
    answers = []
    for transactional_id in request.transactional_ids:
        if not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            answers.append(R.TransactionState(error_code=TransactionalIdAuthorizationFailedError.code,
                                              transactional_id=transactional_id))
            continue
        code, md = state.transactions.describe(transactional_id)
        if md is None:
            answers.append(R.TransactionState(error_code=code, transactional_id=transactional_id))
            continue
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(md.partitions):
            if not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TOPIC, topic):
                continue  # KafkaApis.handleDescribeTransactionsRequest leaves them out
            topics.setdefault(topic, []).append(index)
        answers.append(R.TransactionState(
            error_code=0, transactional_id=transactional_id, transaction_state=md.state.name,
            transaction_timeout_ms=md.txn_timeout_ms, transaction_start_time_ms=md.txn_start_timestamp,
            producer_id=md.producer_id, producer_epoch=md.producer_epoch,
            topics=[R.TopicData(topic=t, partitions=p) for t, p in topics.items()]))
    return R(transaction_states=answers)


@handles(ApiKey.LIST_TRANSACTIONS, 0, 1)
async def list_transactions(state, header, request):
    duration = request.duration_filter if header.api_version >= 1 else -1
    code, unknown, rows = state.transactions.list(request.state_filters, request.producer_id_filters, duration)
    R = ListTransactionsResponse
    return R(error_code=code, unknown_state_filters=unknown, transaction_states=[
        R.TransactionState(transactional_id=row.transactional_id, producer_id=row.producer_id,
                           transaction_state=row.state.name) for row in rows
        # KafkaApis.handleListTransactionsRequest: only the ids the principal may DESCRIBE
        if state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, row.transactional_id)])
