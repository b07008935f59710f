"""The admin client's transaction calls (KIP-664): list and describe transactions, describe
a partition's producers, abort a hanging transaction.

A *hanging* transaction is one a partition holds open that no transaction coordinator
will ever end: its producer wrote transactional data the coordinator does not know of
(a lost AddPartitionsToTxn, before KIP-890's verification), or the coordinator forgot it.
The partition's last stable offset stops at the transaction's first offset, so
``read_committed`` consumers stop there too, and the log cannot be compacted or deleted
past it. Finding one takes three calls: :meth:`~Transactions.describe_producers` shows
each open transaction's first offset on a partition, :meth:`~Transactions.list_transactions`
maps its producer id to a transactional id, :meth:`~Transactions.describe_transactions`
says whether the coordinator still counts the partition in that id's transaction; if
nothing claims it, :meth:`~Transactions.abort_transaction` writes the ABORT marker the
coordinator never will (``kproto transactions find-hanging`` and ``abort`` do this).

Routing and retries, as Java's ``KafkaAdminClient`` handlers do (``ListTransactionsHandler``,
``DescribeTransactionsHandler``, ``DescribeProducersHandler``, ``AbortTransactionHandler``):

- ListTransactions goes to every broker (each coordinator knows only its own ids);
  COORDINATOR_LOAD_IN_PROGRESS is asked again, any other error fails the call;
- DescribeTransactions goes to each id's coordinator (FindCoordinator, key type 1);
  NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE look the coordinator up again,
  COORDINATOR_LOAD_IN_PROGRESS asks again, TRANSACTIONAL_ID_NOT_FOUND and the rest are
  that id's result;
- DescribeProducers and WriteTxnMarkers go to the partition's leader; an answer that
  says the leader moved (NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE,
  BROKER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION while the metadata still has the
  partition) is asked again of the new leader.

Retries end at ``default.api.timeout.ms``. A partition of a topic the cluster's metadata
does not have fails at once with UNKNOWN_TOPIC_OR_PARTITION (Java waits for it until the
timeout, as for a topic still being created); kproto's other partition calls do the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kproto.admin.base import AdminState, item_error, outcome
from kproto.errors import (
    BrokerNotAvailableError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaCodeError,
    KafkaError,
    LeaderNotAvailableError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    ReplicaNotAvailableError,
    UnknownTopicOrPartitionError,
    for_code,
)
from kproto.protocol.messages import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)
from kproto.structs import TopicPartition, by_topic

__all__ = ["TRANSACTION_STATES", "ProducerState", "TransactionDescription", "TransactionListing", "Transactions"]

#: The states a transaction is listed in, under Kafka's names (Java's ``TransactionState``).
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                      "PrepareEpochFence")

_TRANSACTION = 1  # FindCoordinator's key type of a transactional id
# The answers each call asks again after, as Java's handlers do; every other error is the
# call's (or the item's) at once, even one retriable elsewhere (NOT_ENOUGH_REPLICAS...).
# DescribeTransactionsHandler: find the coordinator again (or, loading, just ask again).
_COORDINATOR_MOVED = (NotCoordinatorError.code, CoordinatorNotAvailableError.code,
                      CoordinatorLoadInProgressError.code)
# AbortTransactionHandler, DescribeProducersHandler: find the leader again.
_LEADER_MOVED = (NotLeaderOrFollowerError.code, ReplicaNotAvailableError.code, BrokerNotAvailableError.code,
                 UnknownTopicOrPartitionError.code)


# -- what comes out --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TransactionListing:
    """A transactional id as ListTransactions lists it (Java's ``TransactionListing``).

    Attributes:
        transactional_id: the id.
        producer_id: its current producer id.
        state: its transaction's state, Kafka's name (one of :data:`TRANSACTION_STATES`).
        coordinator_id: the broker that listed it: the id's transaction coordinator (what
            Java's ``ListTransactionsResult.allByBrokerId`` keys by).
    """

    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """A transactional id as its coordinator describes it (Java's ``TransactionDescription``).

    Attributes:
        coordinator_id: the broker that is its transaction coordinator.
        state: Kafka's name of the state (``Ongoing``, ``CompleteCommit``...).
        producer_id: its producer id.
        producer_epoch: its producer epoch.
        transaction_timeout_ms: the ``transaction.timeout.ms`` its producer asked for.
        transaction_start_time_ms: when the ongoing (or last) transaction started, wall
            milliseconds; None when none did.
        topic_partitions: the partitions of the ongoing transaction; in PrepareCommit or
            PrepareAbort, those whose marker is not written yet.
    """

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    topic_partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """An active producer of a partition, as its leader keeps it (Java's ``ProducerState``).

    Attributes:
        producer_id: the producer id.
        producer_epoch: its latest epoch seen on the partition.
        last_sequence: the sequence of its last record (-1 when only markers were seen).
        last_timestamp: the max timestamp of its last batch or marker.
        coordinator_epoch: the coordinator epoch of its last marker; None before any.
        current_transaction_start_offset: the first offset of its open transaction on the
            partition; None when it has none.
    """

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


# -- the calls -------------------------------------------------------------------------------

class Transactions(AdminState):
    """The transaction calls of :class:`~kproto.admin.AIOAdminClient` (see the module)."""

    async def list_transactions(self, states: Iterable[str] | None = None,
                                producer_ids: Iterable[int] | None = None,
                                duration_filter_ms: int | None = None) -> list[TransactionListing]:
        """Every transactional id every broker coordinates, sorted by id (Java's
        ``Admin.listTransactions``), optionally only those:

        Args:
            states: in these states (Kafka's names, :data:`TRANSACTION_STATES`).
            producer_ids: with these producer ids.
            duration_filter_ms: whose transaction started more than this many
                milliseconds ago (KIP-994; ListTransactions v1, Kafka 3.8+).

        Raises:
            ValueError: an unknown state name, or a negative duration.
            UnsupportedVersionError: ``duration_filter_ms`` with a broker before Kafka 3.8.
            KafkaCodeError: a broker's error (COORDINATOR_NOT_AVAILABLE while it shuts
                down...); COORDINATOR_LOAD_IN_PROGRESS is retried.
        """
        wanted = [] if states is None else list(dict.fromkeys([states] if isinstance(states, str) else states))
        unknown = [s for s in wanted if s not in TRANSACTION_STATES]
        if unknown:
            raise ValueError(f"unknown transaction state(s) {', '.join(map(repr, unknown))}: "
                             f"the states are {', '.join(TRANSACTION_STATES)}")
        if duration_filter_ms is not None and duration_filter_ms < 0:
            raise ValueError(f"duration_filter_ms must be >= 0, not {duration_filter_ms}")
        request = ListTransactionsRequest(state_filters=wanted, producer_id_filters=list(producer_ids or ()),
                                          duration_filter=-1 if duration_filter_ms is None else duration_filter_ms)
        min_version = 0 if duration_filter_ms is None else 1  # v0 has no duration filter: refuse, never drop it
        by_broker: dict[int, list[TransactionListing]] = {}

        async def attempt() -> None:
            await self._cluster.refresh()
            for node_id in sorted(self._cluster.brokers):
                if node_id in by_broker:
                    continue
                conn = await self._cluster.connection(node_id)
                response = await conn.request(request, min_version=min_version)
                if response.error_code:  # ListTransactionsHandler: only a loading coordinator is asked again
                    error = for_code(response.error_code)(f"ListTransactions on broker {node_id}")
                    raise _retried(error, response.error_code == CoordinatorLoadInProgressError.code)
                by_broker[node_id] = [TransactionListing(t.transactional_id, t.producer_id, t.transaction_state,
                                                         node_id) for t in response.transaction_states]

        await self._retrying(attempt)
        return sorted((t for listings in by_broker.values() for t in listings),
                      key=lambda t: (t.transactional_id, t.coordinator_id))

    async def describe_transactions(self, transactional_ids: Iterable[str]) -> dict[str, TransactionDescription]:
        """State, producer, timeout, start time and partitions of transactional ids, each
        asked of its coordinator (Java's ``Admin.describeTransactions``).

        As other multi-item calls, it raises the first id's error with ``.results`` holding
        every id's outcome: ``TransactionalIdNotFoundError`` (no such id, or it expired),
        ``TransactionalIdAuthorizationFailedError``...
        """
        ids = list(dict.fromkeys([transactional_ids] if isinstance(transactional_ids, str) else transactional_ids))
        results: dict[str, Any] = {}

        async def attempt() -> None:
            retry: KafkaError | None = None
            by_node: dict[int, list[str]] = {}
            for transactional_id in (i for i in ids if i not in results):
                try:
                    node = await self._cluster.find_coordinator(transactional_id, _TRANSACTION)
                except KafkaCodeError as exc:
                    if exc.retriable:
                        retry = exc
                    else:
                        results[transactional_id] = exc
                    continue
                by_node.setdefault(node, []).append(transactional_id)
            for node, asked in by_node.items():
                response = await self._cluster.request(node, DescribeTransactionsRequest(transactional_ids=asked))
                for t in response.transaction_states:
                    if t.transactional_id not in asked:
                        continue  # not ours (Java logs and skips it); an id left unanswered is asked again
                    error = item_error(t.error_code, None, f"transactional id {t.transactional_id!r}")
                    if t.error_code in _COORDINATOR_MOVED:  # it moved or loads: find it again
                        retry = error
                        continue
                    results[t.transactional_id] = error or TransactionDescription(
                        node, t.transaction_state, t.producer_id, t.producer_epoch, t.transaction_timeout_ms,
                        None if t.transaction_start_time_ms < 0 else t.transaction_start_time_ms,
                        frozenset(TopicPartition(d.topic, p) for d in t.topics for p in d.partitions))
            if retry is None and len(results) < len(ids):
                retry = NotCoordinatorError("a coordinator left a transactional id unanswered")
            if retry is not None:
                raise _retried(retry, True)

        await self._retrying(attempt)
        return outcome({i: results[i] for i in ids})

    async def describe_producers(self, partitions: Iterable[TopicPartition], *, broker_id: int | None = None
                                 ) -> dict[TopicPartition, list[ProducerState]]:
        """The active producers of partitions, as each partition's leader keeps them
        (Java's ``Admin.describeProducers``): ids, epochs, last sequence and timestamp,
        the last marker's coordinator epoch and the open transaction's first offset.

        Args:
            partitions: the partitions.
            broker_id: ask this broker instead of the leaders (Java's
                ``DescribeProducersOptions.brokerId``: a follower's view); then
                NOT_LEADER_OR_FOLLOWER is that partition's error, not a reason to retry.

        As other multi-item calls, it raises the first partition's error with ``.results``
        holding every partition's outcome (``UnknownTopicOrPartitionError``...).
        """
        asked = list(dict.fromkeys(partitions))
        results: dict[TopicPartition, Any] = {}

        async def attempt() -> None:
            retry: KafkaError | None = None
            pending = [tp for tp in asked if tp not in results]
            targets = {broker_id: pending} if broker_id is not None else await self._leaders(pending)
            for node, tps in targets.items():
                if node < 0:
                    retry = self._leaderless(tps, results) or retry
                    continue
                request = DescribeProducersRequest(topics=[
                    DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps)
                    for t, ps in by_topic(tps).items()])
                response = await self._cluster.request(node, request)
                for t in response.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        error = item_error(p.error_code, p.error_message, f"{tp.topic}-{tp.partition}")
                        if error is not None and broker_id is None and p.error_code in _LEADER_MOVED:
                            retry = error
                            continue
                        results[tp] = error or [ProducerState(
                            s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                            None if s.coordinator_epoch < 0 else s.coordinator_epoch,
                            None if s.current_txn_start_offset < 0 else s.current_txn_start_offset)
                            for s in p.active_producers]
            if retry is not None:
                raise _retried(retry, True)

        await self._retrying(attempt)
        return outcome({tp: results[tp] for tp in asked})

    async def abort_transaction(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                                coordinator_epoch: int) -> None:
        """Abort a hanging transaction on one partition: write the ABORT marker its
        coordinator never will, with WriteTxnMarkers to the partition's leader (KIP-664;
        Java's ``Admin.abortTransaction`` with an ``AbortTransactionSpec``).

        The arguments are what :meth:`describe_producers` shows of the producer whose
        transaction hangs: its id and epoch, and the coordinator epoch of its last marker
        (0 when it has none). The marker closes that producer's open transaction on this
        partition only; the last stable offset moves past it, so ``read_committed``
        consumers go on. Kafka's brokers take WriteTxnMarkers only from a principal with
        ClusterAction on the cluster.

        Raises:
            InvalidProducerEpochError: ``producer_epoch`` is older than the partition's.
            TransactionCoordinatorFencedError: ``coordinator_epoch`` is older than the
                epoch of a marker the partition has.
            ClusterAuthorizationFailedError: the principal may not write markers.
            UnknownTopicOrPartitionError: no such partition.
            KafkaCodeError: another error of the leader (NOT_ENOUGH_REPLICAS...).
        """
        tp = TopicPartition(topic, partition)
        request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=False,
            coordinator_epoch=coordinator_epoch,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])])])
        failed: dict[TopicPartition, Any] = {}

        async def attempt() -> None:
            leader = (await self._leaders([tp])).popitem()[0]
            if leader < 0:
                retry = self._leaderless([tp], failed)
                if retry is not None:
                    raise _retried(retry, True)
                return  # no such partition: failed, below
            response = await self._cluster.request(leader, request)
            codes = [(m.producer_id, t.name, p.partition_index, p.error_code)
                     for m in response.markers for t in m.topics for p in t.partitions]
            if [c[:3] for c in codes] != [(producer_id, topic, partition)]:  # as Java's handler checks
                raise KafkaError(f"WriteTxnMarkers answered {codes} for producer {producer_id} on {topic}-{partition}")
            error = item_error(codes[0][3], None, f"aborting producer {producer_id}'s transaction on "
                                                  f"{topic}-{partition}")
            if error is not None:
                raise _retried(error, codes[0][3] in _LEADER_MOVED)

        await self._retrying(attempt)
        if failed:
            raise failed[tp]

    def _leaderless(self, tps: Iterable[TopicPartition], results: dict[TopicPartition, Any]) -> KafkaError | None:
        """Partitions the metadata gives no leader: those of an unknown topic (or past
        its partitions) fail now, the others wait for an election (the error to retry)."""
        retry: KafkaError | None = None
        for tp in tps:
            info = self._cluster.topics.get(tp.topic)
            if info is None or (not info.error_code and tp.partition not in info.partitions):
                code = UnknownTopicOrPartitionError.code
            else:
                code = info.error_code
            if code == UnknownTopicOrPartitionError.code or (code and not for_code(code).retriable):
                results[tp] = for_code(code)(f"{tp.topic}-{tp.partition}")
            else:
                retry = LeaderNotAvailableError(f"{tp.topic}-{tp.partition} has no leader")
        return retry


def _retried(error: KafkaError, retry: bool) -> KafkaError:
    """``error``, asked again after (or not) as Java's handler for the call decides, which
    is not always what its code's class says (BROKER_NOT_AVAILABLE is retried after a new
    leader lookup, NOT_ENOUGH_REPLICAS fails an abort): set on the instance, as errors' flags are."""
    error.retriable = retry
    return error
