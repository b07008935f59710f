"""The group member's state machine without a network: the join flow as a generator fed
hand-made responses (KIP-394's two-step join, the leader's assignment, rejoins), heartbeat
answers, LeaveGroup by version, and illegal moves."""

import pytest

from kproto.consumer.assignors import CooperativeStickyAssignor, RangeAssignor
from kproto.consumer.membership import (
    IllegalTransitionError,
    Membership,
    MemberState,
    NeedPartitions,
)
from kproto.consumer.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kproto.errors import FencedInstanceIdError, GroupAuthorizationFailedError, NotCoordinatorError
from kproto.protocol.messages import (
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kproto.structs import TopicPartition


def membership(*assignors, **kwargs):
    return Membership("g", assignors or (RangeAssignor(),), session_timeout_ms=6000, rebalance_timeout_ms=9000, **kwargs)


def joined(member_id, leader, members=(), code=0, generation=1):
    return JoinGroupResponse(error_code=code, generation_id=generation, protocol_name="range", leader=leader,
                             member_id=member_id, members=[
                                 JoinGroupResponse.JoinGroupResponseMember(member_id=m, metadata=md) for m, md in members])


def test_a_leader_joins_in_two_steps_assigns_and_syncs():
    m = membership()
    flow = m.join(["t"], [])
    first = next(flow)
    assert isinstance(first, JoinGroupRequest) and first.member_id == "" and m.state is MemberState.PREPARING_REBALANCE
    assert decode_subscription(first.protocols[0].metadata).topics == ("t",)
    again = flow.send(JoinGroupResponse(error_code=79, member_id="me-1"))  # MEMBER_ID_REQUIRED
    assert again.member_id == "me-1" and again.reason.startswith("KIP-394")
    other = encode_subscription(Subscription(("t", "u")))
    need = flow.send(joined("me-1", "me-1", [("me-1", first.protocols[0].metadata), ("zz", other)]))
    assert need == NeedPartitions(frozenset({"t", "u"})) and m.is_leader and m.state is MemberState.COMPLETING_REBALANCE
    sync = flow.send({"t": 2, "u": 1})
    assert isinstance(sync, SyncGroupRequest) and sync.generation_id == 1
    given = {a.member_id: decode_assignment(a.assignment).partitions for a in sync.assignments}
    assert given == {"me-1": (TopicPartition("t", 0),), "zz": (TopicPartition("t", 1), TopicPartition("u", 0))}
    with pytest.raises(StopIteration) as done:
        flow.send(SyncGroupResponse(error_code=0, assignment=encode_assignment(Assignment(given["me-1"]))))
    assert done.value.value.partitions == given["me-1"]
    assert m.state is MemberState.STABLE and m.rejoin_reason is None


def test_a_follower_rejoins_when_the_rebalance_moved_on_and_fails_on_fatal_errors():
    m = membership()
    flow = m.join(["t"], [])
    next(flow)
    sync = flow.send(joined("f", "leader"))
    assert sync.assignments == []
    rejoin = flow.send(SyncGroupResponse(error_code=27))  # REBALANCE_IN_PROGRESS: join again
    assert isinstance(rejoin, JoinGroupRequest) and rejoin.member_id == "f"
    with pytest.raises(GroupAuthorizationFailedError):
        flow.send(JoinGroupResponse(error_code=30))
    assert m.state is MemberState.UNJOINED and m.generation_id == -1 and m.rejoin_reason
    flow = m.join(["t"], [])
    next(flow)
    with pytest.raises(NotCoordinatorError):  # retriable: the driver finds the coordinator again
        flow.send(JoinGroupResponse(error_code=16))


def test_cooperative_members_send_owned_partitions_and_their_generation():
    m = membership(CooperativeStickyAssignor())
    m.generation_id = 4
    owned = [TopicPartition("t", 1)]
    sent = decode_subscription(next(m.join(["t"], owned)).protocols[0].metadata)
    assert sent.owned_partitions == tuple(owned) and sent.generation_id == 4
    eager = membership()
    assert decode_subscription(next(eager.join(["t"], owned)).protocols[0].metadata).owned_partitions == ()


def test_heartbeat_answers_and_leaving():
    m = membership()
    m.member_id, m.generation_id, m.rejoin_reason, m.state = "me", 3, None, MemberState.STABLE
    m.on_heartbeat(0, 3)
    m.on_heartbeat(27, 3)
    assert m.rejoin_reason == "the group is rebalancing" and m.state is MemberState.STABLE
    m.on_heartbeat(22, 2)  # an answer about an older generation: ignored
    assert not m.lost
    m.on_heartbeat(22, 3)  # ILLEGAL_GENERATION: partitions lost, member id kept
    assert m.lost and m.member_id == "me" and m.state is MemberState.UNJOINED
    assert m.leave_request(5, "bye").members[0].member_id == "me"
    assert m.leave_request(2, "bye").member_id == "me"
    static = membership(group_instance_id="i-1")
    static.member_id, static.generation_id, static.state = "s", 1, MemberState.STABLE
    assert static.leave_request(5, "bye") is None and static.min_version(11) == 5
    with pytest.raises(FencedInstanceIdError):
        static.on_heartbeat(82, 1)
    with pytest.raises(IllegalTransitionError):
        m._move(MemberState.STABLE)
