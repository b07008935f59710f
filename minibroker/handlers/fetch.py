"""Fetch v4-17.

Behaviour: whole batches from the one holding the fetch offset (clients drop the
records before it), at least one batch per response even above the size limits
(KIP-74), then as many as ``partition_max_bytes`` and ``max_bytes`` allow. A request
that finds fewer than ``min_bytes`` waits up to ``max_wait_ms`` and is woken by any
produce; an error in any partition answers at once. High watermark, last stable offset
and log start offset come with every partition answered without an error. Records are
not read here: each partition's are a :class:`~minibroker.log.segment.RecordSlices` over
its log, which the server sends from the segment files with ``os.sendfile`` (see
:mod:`minibroker.server`). A partition answered with an error carries empty records,
never null ones, and -1 for its offsets (Kafka's ``LogReadResult`` of an error, with
``MemoryRecords.EMPTY``; librdkafka refuses a whole response holding a null records
field, issue 10). ``aborted_transactions`` is null for read_uncommitted and a list for
read_committed, as Kafka's ``LocalLog.read`` gives it.
Replication (Kafka's ``ReplicaManager.fetchMessages`` / ``Partition.fetchRecords``): a
follower's fetch and a consumer's before v11 need the leader (NOT_LEADER_OR_FOLLOWER); a
consumer's v11+ fetch carries client metadata, so a follower serves it too (KIP-392's
``fetchOnlyFromLeader`` rule); v9+ ``current_leader_epoch`` is fenced
(FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, KIP-320). A consumer (replica id -1) reads
only batches below the high watermark (a follower's own, which trails the leader's); an
offset between it and the log end answers no records and no error, one past the log end
OFFSET_OUT_OF_RANGE. With ``replica.selector.class`` = Kafka's
``RackAwareReplicaSelector``, the leader answers a consumer that names its ``rack_id``
(v11+) with ``preferred_read_replica``: an in-sync, live follower in that rack holding the
fetch offset (the most caught up), with no records and at once; -1 (and records) when the
leader is in that rack or no such follower exists (``findPreferredReadReplica``). A follower (replica id >= 0: the v0-14 ``replica_id``, the v15+
``replica_state``) must be one of the partition's replicas; its fetch offset is its log
end (``Partition.on_follower_fetch``: the high watermark may move, and an ISR change is
proposed to the controller at once, as Kafka expands the ISR on fetch); it reads up to
the log end. v12+ ``last_fetched_epoch`` is checked against the leader's epochs (KIP-595,
``Partition.readRecords``): an epoch whose end is unknown, or an offset below the log
start, is OFFSET_OUT_OF_RANGE; a follower whose log diverges gets ``diverging_epoch`` and
no records. A single broker's
partition is its own ISR (high watermark = log end) and serves any replica id read-only.
v12+ errors of leadership carry the leader and epoch this broker knows in ``current_leader``
(KIP-951), and v16+ answers list in ``node_endpoints`` where the leaders named by
NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH listen.
Version notes: v7+ sessions (KIP-227) are declined (session_id 0, every request is a
full fetch); v13+ names topics by id; v12+ flexible.
Authorization (``KafkaApis.handleFetchRequest``): READ on the topic for a consumer,
CLUSTER_ACTION on the cluster for a follower; else TOPIC_AUTHORIZATION_FAILED for the
partition, before it is looked up (a topic id that names no topic stays UNKNOWN_TOPIC_ID).
Transactions (KIP-98, Kafka's ``LocalLog.read`` and ``UnifiedLog.collectAbortedTransactions``):
``last_stable_offset`` is the partition's (:attr:`~minibroker.cluster.partition.Partition.last_stable_offset`;
a follower serving a consumer gives its own). A read_committed consumer (isolation level
1) gets only batches below it, and ``aborted_transactions`` lists ``(producer id, first
offset)`` of every aborted transaction in the ``.txnindex`` overlapping the range read,
``[fetch offset, LSO)`` (Kafka bounds it by the segment or the index entry after the
fetched bytes; a wider range lists transactions past the records returned, which clients
ignore). A long poll waiting at the LSO wakes when a marker or the high watermark moves it.
"""

import time

from kproto.errors import (
    FencedLeaderEpochError,
    FetchSessionIdNotFoundError,
    KafkaCodeError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import FetchResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.config import RACK_AWARE_SELECTOR
from minibroker.handlers import handles
from minibroker.log.store import RecordSlices

PartitionData = FetchResponse.PartitionData
TopicResponse = FetchResponse.FetchableTopicResponse

READ_COMMITTED = 1
_MOVED = (NotLeaderOrFollowerError.code, FencedLeaderEpochError.code)  # answers that name the leader


def _replica(request, version: int) -> tuple[int, int]:
    """(replica id, broker epoch) of the fetcher: -1 for a consumer (v15 moved the id into
    ``replica_state``, KIP-903)."""
    if version >= 15:
        return request.replica_state.replica_id, request.replica_state.replica_epoch
    return request.replica_id, -1


def _live_racks(state, version, request):
    """{live broker: its rack} when this broker picks preferred read replicas for this
    request (KIP-392: the rack-aware selector, a cluster, a consumer naming its rack in
    Fetch v11+), else None."""
    if (state.cluster is None or version < 11 or not request.rack_id
            or state.config["replica.selector.class"] != RACK_AWARE_SELECTOR):
        return None
    return {b.broker_id: b.rack for b in state.cluster.image.live_brokers()}


def _may_read(state, header, replica_id: int, topic: str) -> bool:
    """KafkaApis.handleFetchRequest: a follower needs CLUSTER_ACTION on the cluster, a
    consumer READ on the topic; else the partition is TOPIC_AUTHORIZATION_FAILED."""
    if replica_id >= 0:
        return state.authorizer.allows(header, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
    return state.authorizer.allows(header, AclOperation.READ, ResourceType.TOPIC, topic)


def _collect(state, header, request, version):
    """One pass over the requested partitions: (topic responses, bytes found, whether to
    answer at once: an error, a diverging epoch or a preferred read replica)."""
    by_id = version >= 13
    replica_id, replica_epoch = _replica(request, version)
    # ReplicaManager.fetchMessages: fetchOnlyFromLeader = isFromFollower || (isFromConsumer
    # && clientMetadata.isEmpty); a consumer's v11+ request has client metadata (KIP-392).
    require_leader = replica_id >= 0 or version < 11
    racks = None if replica_id >= 0 else _live_racks(state, version, request)
    budget = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
    total = 0
    at_once = False
    responses = []
    read_committed = request.isolation_level == READ_COMMITTED and replica_id < 0
    for asked in request.topics:
        topic = state.topic_by_id(asked.topic_id) if by_id else state.topics.get(asked.topic)
        partitions = []
        for p in asked.partitions:
            if not (by_id and topic is None) and not _may_read(state, header, replica_id,
                                                                asked.topic if topic is None else topic.name):
                partitions.append(PartitionData(partition_index=p.partition, error_code=TopicAuthorizationFailedError.code,
                                                high_watermark=-1, records=RecordSlices(())))
                at_once = True
                continue
            if topic is None or not 0 <= p.partition < len(topic.partitions):
                code = UnknownTopicIdError.code if by_id and topic is None else UnknownTopicOrPartitionError.code
                partitions.append(PartitionData(partition_index=p.partition, error_code=code, high_watermark=-1, records=RecordSlices(())))
                at_once = True
                continue
            try:
                partition = state.leader_partition(topic, p.partition, p.current_leader_epoch if version >= 9 else -1,
                                                   require_leader=require_leader)
                if replica_id >= 0:
                    partition.on_follower_fetch(replica_id, replica_epoch, p.fetch_offset, state.clock_ms(),
                                                p.log_start_offset if version >= 5 else -1)
                    state.propose_isr(partition)
                preferred = -1 if racks is None else partition.preferred_read_replica(
                    request.rack_id, p.fetch_offset, state.clock_ms(), racks)
                # KIP-595 (Partition.readRecords), skipped when another replica serves.
                diverging = (partition.diverging_epoch(p.last_fetched_epoch, p.fetch_offset)
                             if version >= 12 and preferred < 0 else None)
            except KafkaStorageError:  # a storage error took it offline: nothing is served until a restart
                partitions.append(PartitionData(partition_index=p.partition, error_code=KafkaStorageError.code,
                                                high_watermark=-1, records=None))
                at_once = True
                continue
            except OffsetOutOfRangeError:  # an epoch the log cannot place, or below the log start
                partitions.append(PartitionData(partition_index=p.partition, error_code=OffsetOutOfRangeError.code,
                                                high_watermark=-1, records=RecordSlices(())))
                at_once = True
                continue
            except KafkaCodeError as exc:  # NOT_LEADER_OR_FOLLOWER, FENCED / UNKNOWN_LEADER_EPOCH
                known = state.partition(topic, p.partition)  # KIP-951's hint (v12+): the leader we know
                hint = {} if version < 12 else {"current_leader": FetchResponse.LeaderIdAndEpoch(
                    leader_id=known.leader, leader_epoch=known.leader_epoch)}
                partitions.append(PartitionData(partition_index=p.partition, error_code=exc.code, high_watermark=-1,
                                                records=RecordSlices(()), **hint))
                at_once = True
                continue
            log = partition.log
            hw = log.high_watermark
            lso = partition.last_stable_offset
            aborted = [] if read_committed else None
            if preferred >= 0 or diverging is not None:
                # KIP-392: the consumer fetches from ``preferred`` from now on (Kafka answers
                # it with the leader's offsets and no records); KIP-595: the follower
                # truncates to ``diverging`` before fetching again. Both answered at once.
                extra = ({"preferred_read_replica": preferred} if preferred >= 0 else
                         {"diverging_epoch": FetchResponse.EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])})
                partitions.append(PartitionData(
                    partition_index=p.partition, error_code=0, high_watermark=hw, last_stable_offset=lso,
                    log_start_offset=log.log_start_offset, aborted_transactions=aborted, records=RecordSlices(()),
                    **extra))
                at_once = True
                continue
            if not log.log_start_offset <= p.fetch_offset <= log.log_end_offset:
                # As Kafka's LogReadResult for an error: no offsets (-1), empty records.
                partitions.append(PartitionData(partition_index=p.partition, error_code=OffsetOutOfRangeError.code,
                                                high_watermark=-1, records=RecordSlices(())))
                at_once = True
                continue
            # The first batch of the first partition with data comes whatever its size
            # (KIP-74), so a consumer can always make progress; the rest must fit.
            limit = min(p.partition_max_bytes, budget - total)
            # A consumer sees only what the ISR has (below the high watermark: a follower's
            # own, which trails the leader's), a read_committed one only what is decided
            # (below the LSO); a follower reads up to the log end.
            visible = lso if read_committed else hw
            up_to = None if replica_id >= 0 or visible >= log.log_end_offset else visible
            records = RecordSlices(log.read_slices(p.fetch_offset, limit, at_least_one=total == 0, max_offset=up_to))
            total += len(records)
            if read_committed and len(records):
                aborted = [FetchResponse.AbortedTransaction(producer_id=txn.producer_id, first_offset=txn.first_offset)
                           for txn in log.collect_aborted_transactions(p.fetch_offset, visible)]
            partitions.append(PartitionData(
                partition_index=p.partition, error_code=0, high_watermark=hw,
                last_stable_offset=lso, log_start_offset=log.log_start_offset,
                aborted_transactions=aborted, records=records,
            ))
        responses.append(TopicResponse(topic=asked.topic, topic_id=asked.topic_id, partitions=partitions))
    return responses, total, at_once


@handles(ApiKey.FETCH, 4, 17)
async def handle(state, header, request):
    if header.api_version >= 7 and request.session_id != 0:
        return FetchResponse(error_code=FetchSessionIdNotFoundError.code, session_id=0)
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        responses, total, at_once = _collect(state, header, request, header.api_version)
        remaining = deadline - time.monotonic()
        if at_once or total >= request.min_bytes or remaining <= 0:
            return FetchResponse(error_code=0, session_id=0, responses=responses,
                                 node_endpoints=_leader_endpoints(state, responses, header.listener_name)
                                 if header.api_version >= 16 else [])
        await state.wait_for_data(remaining)


def _leader_endpoints(state, responses, listener_name):
    """Fetch v16+'s ``node_endpoints`` (KIP-951, Kafka's ``KafkaApis.handleFetchRequest``):
    where the leaders named in NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH answers listen,
    so that a client can move there without a Metadata round trip."""
    if state.cluster is None:
        return []
    brokers = state.cluster.image.brokers
    named = sorted({p.current_leader.leader_id for t in responses for p in t.partitions
                    if p.error_code in _MOVED and p.current_leader is not None and p.current_leader.leader_id >= 0})
    return [FetchResponse.NodeEndpoint(node_id=b, host=at[0], port=at[1], rack=brokers[b].rack)
            for b in named if b in brokers and not brokers[b].fenced
            and (at := state.cluster_endpoint(brokers[b], listener_name)) is not None]
