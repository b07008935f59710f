"""FindCoordinator v0-6, JoinGroup v0-9, Heartbeat v0-4, LeaveGroup v0-5, SyncGroup v0-5,
DescribeGroups v0-5, ListGroups v0-5 and DeleteGroups v0-2: classic consumer groups.

Behaviour: a single broker coordinates every group (a MiniCluster: see below). The decisions live in
:mod:`minibroker.coordinator.groups`; these handlers translate. JoinGroup and SyncGroup
answers are held until the rebalance completes or the leader's assignment arrives,
which holds back the member's own connection only. Group ids must be non-empty for
JoinGroup, SyncGroup, Heartbeat and LeaveGroup (INVALID_GROUP_ID), as in Kafka.
DescribeGroups reports an unknown group as Dead with no error, as Kafka does; member
metadata and assignments are shown only while the group is Stable; a member's
client_host is the address it first joined from, in Kafka's form ("/127.0.0.1"). Only
Empty groups can be deleted (NON_EMPTY_GROUP otherwise); deleting drops their committed
offsets, and a deletion whose tombstones cannot be written is NOT_COORDINATOR with the
group left as it was (see :mod:`minibroker.coordinator.group_coordinator`). Membership
is never written to disk, so JoinGroup and SyncGroup do not meet storage errors.
Version notes: FindCoordinator v1 adds key_type (KIP-98), v4 batched coordinator_keys
(KIP-699). JoinGroup v1 rebalance_timeout_ms (KIP-62; v0 uses the session timeout),
v4 MEMBER_ID_REQUIRED (KIP-394), v5 group_instance_id (KIP-345), v7 protocol_type in
the response (KIP-559), v9 skip_assignment (KIP-814; always false here). SyncGroup v5
echoes protocol type and name, and a mismatch is INCONSISTENT_GROUP_PROTOCOL.
LeaveGroup v3 batches members by member id or instance id. ListGroups v4 filters by
state (KIP-518), v5 by type (KIP-848; every group here is "classic").
FindCoordinator key_type 1 (KIP-98) names the transaction coordinator of a transactional
id: this broker, or in a MiniCluster the leader of the id's ``__transaction_state``
partition (the topic made on first use, as Kafka does; see :mod:`minibroker.handlers.txn`).
Not implemented: share groups (key_type 2 gets INVALID_REQUEST), ``group.max.size``, and the reason
strings (v8+/v5+), which are accepted and dropped. DescribeGroups v3+ reports the
operations on a group the principal is allowed when asked (KIP-430, :mod:`minibroker.authorizer`).
Authorization (Kafka's ``KafkaApis``): FindCoordinator needs DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED) or transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
JoinGroup, SyncGroup, Heartbeat and LeaveGroup READ on the group, DescribeGroups
DESCRIBE, DeleteGroups DELETE (GROUP_AUTHORIZATION_FAILED, checked first); ListGroups lists
every group to a principal that may DESCRIBE the cluster, else only the groups it may
DESCRIBE.

In a MiniCluster (``state.cluster``), as in Kafka: a group's coordinator is the leader of
its ``__consumer_offsets`` partition (:func:`~minibroker.coordinator.offsets_log.partition_for`),
the topic created through the controller on the first FindCoordinator
(``offsets.topic.replication.factor`` capped at the live brokers); a partition without a
leader is COORDINATOR_NOT_AVAILABLE. JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups and DeleteGroups of a group coordinated elsewhere are NOT_COORDINATOR
(:meth:`~minibroker.state.BrokerState.coordinator_error`), which sends the client back to
FindCoordinator. A group survives its coordinator's death, as in Kafka
(``GroupCoordinator.onElection`` / ``onResignation``): the broker that becomes leader of
the group's partition loads the partition's committed offsets from its replica of the
log (once its high watermark covers the log), and until then answers
COORDINATOR_LOAD_IN_PROGRESS to JoinGroup, LeaveGroup, DescribeGroups, DeleteGroups,
OffsetCommit, OffsetFetch and OffsetDelete, REBALANCE_IN_PROGRESS to SyncGroup and no
error to Heartbeat (Kafka's answers), and ListGroups says COORDINATOR_LOAD_IN_PROGRESS
with the groups it has. A broker that stops leading the partition answers the held
JoinGroup and SyncGroup requests NOT_COORDINATOR and forgets the groups. Membership is
not written to the log (Kafka writes it; minibroker does not), so a moved group comes
back Empty with its offsets: its members, answered UNKNOWN_MEMBER_ID, join again and
resume from the committed offsets. Commits wait for acks=all: see
:mod:`minibroker.handlers.offsets`.
"""

from kproto.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidGroupIdError,
    InvalidRequestError,
    RebalanceInProgressError,
    TransactionalIdAuthorizationFailedError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    SyncGroupResponse,
)
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.coordinator import GroupState
from minibroker.coordinator.offsets_log import OFFSETS_TOPIC, partition_for
from minibroker.handlers import handles
from minibroker.handlers.metadata import offsets_topic_spec, transaction_state_topic_spec
from minibroker.state import TRANSACTION_STATE_TOPIC

GROUP_KEY, TRANSACTION_KEY = 0, 1


LOADING = CoordinatorLoadInProgressError.code


async def _leader_of_internal_partition(state, topic_name, spec, key, whose, listener_name):
    """(error_code, error_message, node_id, host, port): a cluster's coordinator of ``key``,
    the leader of its partition of the internal topic ``topic_name`` (Kafka's
    ``partitionFor``), the topic made through the controller (``spec``) on first use, as
    Kafka does on the first FindCoordinator."""
    image = state.cluster.image
    topic = image.topic_by_name(topic_name)
    if topic is None:
        await state.cluster.channel.create_topics([spec(state)], validate_only=False)
        topic = image.topic_by_name(topic_name)
    if topic is None or not topic.partitions:
        return CoordinatorNotAvailableError.code, f"{topic_name} could not be created", -1, "", -1
    leader = topic.partitions[partition_for(key, len(topic.partitions))].leader
    broker = image.brokers.get(leader)
    at = None if broker is None else state.cluster_endpoint(broker, listener_name)
    if leader < 0 or broker is None or broker.fenced or at is None:
        return CoordinatorNotAvailableError.code, f"the {whose} partition has no leader", -1, "", -1
    return 0, None, broker.broker_id, *at


async def _transaction_coordinator(state, transactional_id, listener_name):
    """(error_code, error_message, node_id, host, port): the coordinator of a transactional
    id, the leader of its ``__transaction_state`` partition; a single broker makes the topic
    on first use."""
    if state.cluster is None:
        try:
            state.transaction_state_topic()
        except Exception as exc:  # a full disk: as Kafka while the topic cannot be made
            return CoordinatorNotAvailableError.code, f"{TRANSACTION_STATE_TOPIC} could not be created: {exc}", -1, "", -1
        return 0, None, state.node_id, *state.endpoint(listener_name)
    return await _leader_of_internal_partition(state, TRANSACTION_STATE_TOPIC, transaction_state_topic_spec,
                                               transactional_id, "transactional id's", listener_name)


async def _coordinator_for(state, header, key_type, key):
    """(error_code, error_message, node_id, host, port) for one FindCoordinator key."""
    if code := _find_refused(state, header, key_type, key):
        return code, None, -1, "", -1
    if key_type == GROUP_KEY:
        if state.cluster is not None:
            return await _leader_of_internal_partition(state, OFFSETS_TOPIC, offsets_topic_spec, key,
                                                       "group's offsets", header.listener_name)
        return 0, None, state.node_id, *state.endpoint(header.listener_name)
    if key_type == TRANSACTION_KEY:
        return await _transaction_coordinator(state, key, header.listener_name)
    return InvalidRequestError.code, f"unsupported coordinator key type {key_type}", -1, "", -1


def _find_refused(state, header, key_type, key) -> int:
    """KafkaApis.handleFindCoordinatorRequest: DESCRIBE on the group or transactional id."""
    if key_type == GROUP_KEY and not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return GroupAuthorizationFailedError.code
    if key_type == TRANSACTION_KEY and not state.authorizer.allows(
            header, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return TransactionalIdAuthorizationFailedError.code
    return 0


def _unreadable(state, header, group_id) -> int:
    """GROUP_AUTHORIZATION_FAILED unless the principal may READ the group (Kafka's check of
    JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit), else 0."""
    if state.authorizer.allows(header, AclOperation.READ, ResourceType.GROUP, group_id):
        return 0
    return GroupAuthorizationFailedError.code


@handles(ApiKey.FIND_COORDINATOR, 0, 6)
async def find_coordinator(state, header, request):
    key_type = request.key_type if header.api_version >= 1 else GROUP_KEY
    if header.api_version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            code, message, node, host, port = await _coordinator_for(state, header, key_type, key)
            coordinators.append(FindCoordinatorResponse.Coordinator(
                key=key, node_id=node, host=host, port=port, error_code=code, error_message=message))
        return FindCoordinatorResponse(coordinators=coordinators)
    code, message, node, host, port = await _coordinator_for(state, header, key_type, request.key)
    return FindCoordinatorResponse(error_code=code, error_message=message, node_id=node, host=host, port=port)


@handles(ApiKey.JOIN_GROUP, 0, 9)
async def join_group(state, header, request):
    version = header.api_version
    if code := _unreadable(state, header, request.group_id):
        result_code, result = code, None
    elif not request.group_id:
        result_code, result = InvalidGroupIdError.code, None
    elif code := state.coordinator_error(request.group_id):
        result_code, result = code, None
    else:
        result = await state.groups.join(
            request.group_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id if version >= 5 else None,
            client_id=header.client_id or "",
            client_host=header.client_host,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, p.metadata) for p in request.protocols],
            require_known_member_id=version >= 4,
        )
        result_code = result.error_code
    if result is None or result_code != 0:
        return JoinGroupResponse(
            error_code=result_code, generation_id=-1,
            protocol_name=None if version >= 7 else "",
            member_id=result.member_id if result is not None else request.member_id,
        )
    return JoinGroupResponse(
        error_code=0,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        leader=result.leader_id,
        member_id=result.member_id,
        members=[
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
            for m in result.members
        ],
    )


@handles(ApiKey.SYNC_GROUP, 0, 5)
async def sync_group(state, header, request):
    version = header.api_version
    if code := _unreadable(state, header, request.group_id):
        return SyncGroupResponse(error_code=code, assignment=b"")
    if not request.group_id:
        return SyncGroupResponse(error_code=InvalidGroupIdError.code, assignment=b"")
    if code := state.coordinator_error(request.group_id):
        # Kafka's handleSyncGroup: a loading coordinator lost the rebalance, so the member
        # rejoins (REBALANCE_IN_PROGRESS) without looking the coordinator up again.
        return SyncGroupResponse(error_code=RebalanceInProgressError.code if code == LOADING else code,
                                 assignment=b"")
    result = await state.groups.sync(
        request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if version >= 3 else None,
        generation_id=request.generation_id,
        protocol_type=request.protocol_type if version >= 5 else None,
        protocol_name=request.protocol_name if version >= 5 else None,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return SyncGroupResponse(
        error_code=result.error_code, assignment=result.assignment,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name,
    )


@handles(ApiKey.HEARTBEAT, 0, 4)
async def heartbeat(state, header, request):
    if code := _unreadable(state, header, request.group_id):
        return HeartbeatResponse(error_code=code)
    if not request.group_id:
        return HeartbeatResponse(error_code=InvalidGroupIdError.code)
    if code := state.coordinator_error(request.group_id):
        # Kafka's handleHeartbeat: "the group is still loading, so respond just blindly".
        return HeartbeatResponse(error_code=0 if code == LOADING else code)
    code = state.groups.heartbeat(
        request.group_id, member_id=request.member_id,
        group_instance_id=request.group_instance_id if header.api_version >= 3 else None,
        generation_id=request.generation_id,
    )
    return HeartbeatResponse(error_code=code)


@handles(ApiKey.LEAVE_GROUP, 0, 5)
async def leave_group(state, header, request):
    version = header.api_version
    if version < 3:
        leaving = [(request.member_id, None)]
    else:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    if code := _unreadable(state, header, request.group_id):
        return LeaveGroupResponse(error_code=code)
    if not request.group_id:
        codes = [InvalidGroupIdError.code] * len(leaving)
    elif code := state.coordinator_error(request.group_id):
        if version >= 3:
            return LeaveGroupResponse(error_code=code)
        codes = [code]
    else:
        codes = [state.groups.leave(request.group_id, member_id=member_id, group_instance_id=instance_id)
                 for member_id, instance_id in leaving]
    if version < 3:
        return LeaveGroupResponse(error_code=codes[0])
    if not request.group_id:
        return LeaveGroupResponse(error_code=InvalidGroupIdError.code)
    return LeaveGroupResponse(error_code=0, members=[
        LeaveGroupResponse.MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=code)
        for (member_id, instance_id), code in zip(leaving, codes)
    ])


def _describe(state, header, group_id, asked):
    Described = DescribeGroupsResponse.DescribedGroup
    if not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return Described(error_code=GroupAuthorizationFailedError.code, group_id=group_id, group_state="",
                         protocol_type="", protocol_data="", members=[])
    operations = state.authorizer.operations(header, ResourceType.GROUP, group_id, asked)
    if code := state.coordinator_error(group_id):
        return Described(error_code=code, group_id=group_id, group_state="",
                         protocol_type="", protocol_data="", members=[], authorized_operations=operations)
    group = state.groups.get(group_id)
    if group is None:
        return Described(error_code=0, group_id=group_id, group_state=GroupState.Dead.value,
                         protocol_type="", protocol_data="", members=[], authorized_operations=operations)
    stable = group.state is GroupState.Stable
    return Described(
        error_code=0, group_id=group_id, group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=[
            DescribeGroupsResponse.DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ],
        authorized_operations=operations,
    )


@handles(ApiKey.DESCRIBE_GROUPS, 0, 5)
async def describe_groups(state, header, request):
    asked = header.api_version >= 3 and request.include_authorized_operations
    return DescribeGroupsResponse(groups=[_describe(state, header, group_id, asked) for group_id in request.groups])


@handles(ApiKey.LIST_GROUPS, 0, 5)
async def list_groups(state, header, request):
    version = header.api_version
    states = {s.lower() for s in request.states_filter} if version >= 4 else set()
    types = {t.lower() for t in request.types_filter} if version >= 5 else set()
    listed = []
    every = state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.CLUSTER)
    for group in state.groups.groups.values():
        if not every and not state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
            continue  # KafkaApis.handleListGroupsRequest: DESCRIBE on the cluster, or on the group
        if states and group.state.value.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        listed.append(ListGroupsResponse.ListedGroup(
            group_id=group.group_id, protocol_type=group.protocol_type or "",
            group_state=group.state.value, group_type="classic",
        ))
    # Kafka's handleListGroups: the groups held, and COORDINATOR_LOAD_IN_PROGRESS while
    # some partition's groups are still loading (the list may miss them).
    return ListGroupsResponse(error_code=LOADING if state.groups.loading() else 0, groups=listed)


@handles(ApiKey.DELETE_GROUPS, 0, 2)
async def delete_groups(state, header, request):
    return DeleteGroupsResponse(results=[
        DeleteGroupsResponse.DeletableGroupResult(
            group_id=group_id,
            error_code=(GroupAuthorizationFailedError.code if not state.authorizer.allows(
                header, AclOperation.DELETE, ResourceType.GROUP, group_id)
                else state.coordinator_error(group_id) or state.groups.delete_group(group_id)))
        for group_id in request.groups_names
    ])
