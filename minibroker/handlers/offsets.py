"""OffsetCommit v0-9, OffsetFetch v0-9, OffsetDelete v0 and TxnOffsetCommit v0-3: committed
offsets of groups.

Behaviour: offsets live in :class:`minibroker.coordinator.OffsetStore`, which writes every
change to the compacted ``__consumer_offsets`` topic (created on the first commit) before
it counts, and reads them back on start, so commits survive a restart. An
OffsetCommit with generation -1 and no member id is a simple consumer's commit, accepted
while the group has no members (an unknown group is then created Empty, as Kafka does);
any other commit must come from a current member of the current generation
(UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION), and is refused with
REBALANCE_IN_PROGRESS while the group waits for its leader's assignment (members may
still commit while the group is PreparingRebalance: that is how they hand over cleanly).
Unknown topics or partitions get UNKNOWN_TOPIC_OR_PARTITION, metadata over 4096 bytes
(Kafka's ``offset.metadata.max.bytes``) OFFSET_METADATA_TOO_LARGE; the metadata string
round-trips (null metadata is stored as "", as Kafka does). OffsetFetch answers -1 (with empty metadata and no error) for partitions
without a commit, and every committed partition for null topics. OffsetDelete refuses
topics that a member of a non-empty ``consumer`` group subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC, read from the members' subscriptions; unreadable ones count
as subscribed to everything), and non-empty groups of other protocol types
(NON_EMPTY_GROUP). A commit or deletion whose record cannot be written to
``__consumer_offsets`` (a full disk, an offline partition, the topic cannot be created)
changes nothing and is answered as Kafka's ``GroupMetadataManager`` maps the append's
error: NOT_COORDINATOR, or COORDINATOR_NOT_AVAILABLE (see
:mod:`minibroker.coordinator.group_coordinator`); OffsetDelete answers it for the whole
request, as Kafka's group coordinator does. In a cluster only the group's coordinator (the
leader of its ``__consumer_offsets`` partition, ``BrokerState.coordinator_error``) answers;
another broker says NOT_COORDINATOR, as Kafka's ``GroupCoordinator`` does for a group it
does not own, and a coordinator still loading the partition's offsets (it has just become
its leader) COORDINATOR_LOAD_IN_PROGRESS. A cluster's OffsetCommit is written with
acks=all (Kafka's ``GroupMetadataManager.storeOffsets``): it is answered, and OffsetFetch
shows it, only once every ISR member of the partition has it. An ISR below the
partition's ``min.insync.replicas`` (nothing written), one that shrank below it meanwhile,
or no acknowledgement within ``offsets.commit.timeout.ms`` is COORDINATOR_NOT_AVAILABLE;
leadership lost meanwhile is NOT_COORDINATOR; the client retries either. Deletions
(OffsetDelete, DeleteGroups, expiry) count once appended, as Kafka's classic coordinator
appends them with acks=0.
Version notes: OffsetCommit v1 generation and member id, v1 only commit_timestamp, v2-4
retention_time_ms (ignored, as Kafka does since KIP-211), v6 leader epoch (KIP-320), v7
group_instance_id (KIP-345). OffsetFetch v2 null topics = all and a top-level error, v5
leader epoch, v7 require_stable (KIP-447: a partition with a transactional commit not yet
decided is UNSTABLE_OFFSET_COMMIT, offset -1; without it the last decided commit shows),
v8 several groups (KIP-709), v9 member id and epoch (KIP-848; not checked for classic
groups, as in Kafka).
Offsets expire after ``offsets.retention.minutes`` as in Kafka (KIP-211), and empty groups
without offsets are removed: see :mod:`minibroker.coordinator.group_coordinator`.

TxnOffsetCommit (KIP-98), sent by a transactional producer to the group's coordinator
after AddOffsetsToTxn: the commits are written to ``__consumer_offsets`` in the producer's
transactional batch and count only when the transaction commits (its marker on the
group's partition), as Kafka's ``GroupCoordinator.handleTxnCommitOffsets``: an unknown
group is created; clients before KIP-447 (no member id, generation -1: v0-v2) commit in
any state of the group; from v3, a member id, generation or instance id must match the
group's current member (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID).
Unknown partitions are UNKNOWN_TOPIC_OR_PARTITION, oversized metadata
OFFSET_METADATA_TOO_LARGE, a failed write as OffsetCommit's. v4 (TRANSACTION_ABORTABLE,
KIP-890) is not advertised.

Authorization (Kafka's ``KafkaApis``): OffsetCommit needs READ on the group (else every
partition GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED);
TxnOffsetCommit first WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
then the same; OffsetFetch DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) and on each
named topic (TOPIC_AUTHORIZATION_FAILED; all topics lists only those it may describe);
OffsetDelete DELETE on the group and READ on each topic.
"""

import time

from kproto.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    OffsetMetadataTooLargeError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    UnstableOffsetCommitError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    TxnOffsetCommitResponse,
)
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.coordinator import CommittedOffset, GroupState
from minibroker.handlers import handles

MAX_METADATA_BYTES = 4096  # Kafka's offset.metadata.max.bytes default


def _has_partition(state, topic_name, partition):
    topic = state.topics.get(topic_name)
    return topic is not None and 0 <= partition < len(topic.partitions)


def _screen(state, header, request, stamp, refused=0):
    """An offset commit's partitions (OffsetCommit, TxnOffsetCommit) checked before the
    group is asked: ``(codes, valid)``, the error code of each refused (topic, partition)
    and the others as (topic, partition, CommittedOffset); ``stamp(p)`` is a partition's
    commit timestamp. Authorization comes first, as in Kafka's ``handleOffsetCommitRequest``
    and ``handleTxnOffsetCommitRequest``: ``refused`` (the transactional id's refusal) or
    READ on the group refuses every partition, READ on a topic each of its partitions."""
    codes = {}
    valid = []
    if not refused and not state.authorizer.allows(header, AclOperation.READ, ResourceType.GROUP, request.group_id):
        refused = GroupAuthorizationFailedError.code
    coordinator_error = state.coordinator_error(request.group_id)
    for t in request.topics:
        readable = state.authorizer.allows(header, AclOperation.READ, ResourceType.TOPIC, t.name)
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if refused or not readable:
                codes[key] = refused or TopicAuthorizationFailedError.code
            elif coordinator_error:
                codes[key] = coordinator_error
            elif not _has_partition(state, t.name, p.partition_index):
                codes[key] = UnknownTopicOrPartitionError.code
            elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > MAX_METADATA_BYTES:
                codes[key] = OffsetMetadataTooLargeError.code
            else:
                valid.append((t.name, p.partition_index, CommittedOffset(
                    offset=p.committed_offset, leader_epoch=p.committed_leader_epoch,
                    metadata=p.committed_metadata or "", commit_timestamp=stamp(p))))
    return codes, valid


@handles(ApiKey.OFFSET_COMMIT, 0, 9)
async def offset_commit(state, header, request):
    version = header.api_version
    now_ms = int(time.time() * 1000)
    codes, valid = _screen(state, header, request, lambda p: (
        p.commit_timestamp if version == 1 and p.commit_timestamp >= 0 else now_ms))
    if valid:
        group_code = state.groups.commit_offsets(
            request.group_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id if version >= 7 else None,
            generation_id=request.generation_id_or_member_epoch,
            offsets=valid,
        )
        if not isinstance(group_code, int):  # a cluster's commit: applied once the ISR has it
            group_code = await group_code
        for name, partition, _ in valid:
            codes[(name, partition)] = group_code
    return OffsetCommitResponse(topics=[
        OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
            for p in t.partitions
        ])
        for t in request.topics
    ])


def _fetch_group(state, header, group_id, topics, require_stable=False):
    """[(topic, [(partition, CommittedOffset | None | UNSTABLE | DENIED)])] for one group;
    topics None = all committed. ``require_stable``: a partition whose transactional commit
    is not decided yet is UNSTABLE (Kafka's ``GroupMetadataManager.getOffsets``, KIP-447).
    A topic the principal may not DESCRIBE is left out of all, DENIED when named
    (``KafkaApis.handleOffsetFetchRequest``)."""
    offsets = state.groups.offsets

    def get(name, i):
        if not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            return DENIED
        if require_stable and offsets.has_pending(group_id, name, i):
            return UNSTABLE
        return offsets.get(group_id, name, i)

    if topics is None:
        by_topic = {}
        for name, partition in offsets.committed(group_id):
            by_topic.setdefault(name, []).append((partition, get(name, partition)))
        return [(name, sorted(parts, key=lambda x: x[0])) for name, parts in by_topic.items()
                if parts[0][1] is not DENIED]
    return [(t.name, [(i, get(t.name, i)) for i in t.partition_indexes]) for t in topics]


UNSTABLE = object()  # a partition answered UNSTABLE_OFFSET_COMMIT
DENIED = object()  # a partition answered TOPIC_AUTHORIZATION_FAILED


def _partition_fields(partition, committed):
    if committed is DENIED:
        return dict(partition_index=partition, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                    error_code=TopicAuthorizationFailedError.code)
    if committed is UNSTABLE:
        return dict(partition_index=partition, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                    error_code=UnstableOffsetCommitError.code)
    if committed is None:
        return dict(partition_index=partition, committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=0)
    return dict(partition_index=partition, committed_offset=committed.offset,
                committed_leader_epoch=committed.leader_epoch, metadata=committed.metadata, error_code=0)


def _undescribed(state, header, group_id) -> int:
    """GROUP_AUTHORIZATION_FAILED unless the principal may DESCRIBE the group, else 0."""
    if state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return 0
    return GroupAuthorizationFailedError.code


@handles(ApiKey.OFFSET_FETCH, 0, 9)
async def offset_fetch(state, header, request):
    if header.api_version >= 8:
        R = OffsetFetchResponse
        groups = []
        for g in request.groups:
            code = _undescribed(state, header, g.group_id) or state.coordinator_error(g.group_id)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[]) if code else
                          R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=0, topics=[
                              R.OffsetFetchResponseTopics(name=name, partitions=[
                                  R.OffsetFetchResponsePartitions(**_partition_fields(i, c)) for i, c in parts])
                              for name, parts in _fetch_group(state, header, g.group_id, g.topics,
                                                              request.require_stable)]))
        return R(groups=groups)
    if code := _undescribed(state, header, request.group_id) or state.coordinator_error(request.group_id):
        return OffsetFetchResponse(error_code=code, topics=[
            OffsetFetchResponse.OffsetFetchResponseTopic(name=t.name, partitions=[
                OffsetFetchResponse.OffsetFetchResponsePartition(
                    partition_index=i, committed_offset=-1, error_code=code)
                for i in t.partition_indexes])
            for t in request.topics or ()])
    return OffsetFetchResponse(error_code=0, topics=[
        OffsetFetchResponse.OffsetFetchResponseTopic(name=name, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartition(**_partition_fields(i, c)) for i, c in parts])
        for name, parts in _fetch_group(state, header, request.group_id, request.topics,
                                        header.api_version >= 7 and request.require_stable)
    ])


@handles(ApiKey.OFFSET_DELETE, 0, 0)
async def offset_delete(state, header, request):
    if not state.authorizer.allows(header, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return OffsetDeleteResponse(error_code=GroupAuthorizationFailedError.code, topics=[])
    if code := state.coordinator_error(request.group_id):
        return OffsetDeleteResponse(error_code=code, topics=[])
    group = state.groups.get(request.group_id)
    if group is None or group.state is GroupState.Dead:
        return OffsetDeleteResponse(error_code=GroupIdNotFoundError.code, topics=[])
    subscribed = set()  # an Empty group subscribes to nothing
    if group.state is not GroupState.Empty:
        if group.protocol_type != "consumer":
            return OffsetDeleteResponse(error_code=NonEmptyGroupError.code, topics=[])
        subscribed = group.subscribed_topics()  # None: unknown, so every topic counts
    codes = {}
    for t in request.topics:
        readable = state.authorizer.allows(header, AclOperation.READ, ResourceType.TOPIC, t.name)
        for p in t.partitions:
            if not readable:
                codes[(t.name, p.partition_index)] = TopicAuthorizationFailedError.code
            elif not _has_partition(state, t.name, p.partition_index):
                codes[(t.name, p.partition_index)] = UnknownTopicOrPartitionError.code
            elif subscribed is None or t.name in subscribed:
                codes[(t.name, p.partition_index)] = GroupSubscribedToTopicError.code
            else:
                codes[(t.name, p.partition_index)] = 0
    # One write for the group; if it fails, nothing is deleted and the whole request gets
    # the error, as Kafka's group coordinator answers a failed write.
    code = state.groups.delete_offsets(request.group_id, [key for key, c in codes.items() if c == 0])
    if code:
        return OffsetDeleteResponse(error_code=code, topics=[])
    return OffsetDeleteResponse(error_code=0, topics=[
        OffsetDeleteResponse.OffsetDeleteResponseTopic(name=t.name, partitions=[
            OffsetDeleteResponse.OffsetDeleteResponsePartition(
                partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
            for p in t.partitions])
        for t in request.topics
    ])


@handles(ApiKey.TXN_OFFSET_COMMIT, 0, 3)
async def txn_offset_commit(state, header, request):
    version = header.api_version
    now_ms = int(time.time() * 1000)
    refused = 0 if state.authorizer.allows(header, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                           request.transactional_id) else TransactionalIdAuthorizationFailedError.code
    codes, valid = _screen(state, header, request, lambda p: now_ms, refused)
    if valid:
        group_code = await state.groups.txn_commit_offsets(
            request.group_id, producer_id=request.producer_id, producer_epoch=request.producer_epoch,
            member_id=request.member_id if version >= 3 else "",
            group_instance_id=request.group_instance_id if version >= 3 else None,
            generation_id=request.generation_id if version >= 3 else -1, offsets=valid)
        for name, partition, _ in valid:
            codes[(name, partition)] = group_code
    R = TxnOffsetCommitResponse
    return R(topics=[R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
        R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
        for p in t.partitions]) for t in request.topics])
