"""The classic group state machine and the offset store, without sockets: time is passed in."""

import asyncio
import struct

import pytest

from kproto.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from minibroker.coordinator import (
    TRANSITIONS,
    CommittedOffset,
    Group,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    IllegalTransitionError,
    OffsetStore,
)
from minibroker.coordinator.groups import parse_subscription_topics

S = GroupState
RANGE = (("range", b"r"),)


class Replies(list):
    """Collects what a held request is answered with."""

    def __call__(self, result):
        self.append(result)

    @property
    def one(self):
        assert len(self) == 1, self
        return self[0]


def join(group, member_id="", *, now=0.0, protocols=RANGE, instance=None, session=10_000, rebalance=10_000,
         require=False, client_id="c", protocol_type="consumer"):
    replies = Replies()
    group.join(member_id=member_id, group_instance_id=instance, client_id=client_id, client_host="",
               session_timeout_ms=session, rebalance_timeout_ms=rebalance, protocol_type=protocol_type,
               protocols=protocols, require_known_member_id=require, now=now, reply=replies)
    return replies


def sync(group, member_id, generation, assignments=None, *, now=0.0, instance=None):
    replies = Replies()
    group.sync(member_id=member_id, group_instance_id=instance, generation_id=generation, protocol_type=None,
               protocol_name=None, assignments=assignments or {}, now=now, reply=replies)
    return replies


def stable_group(n=2, config=None, **kw):
    """A Stable group of ``n`` members (joined in order at t=0), each assigned b"a<i>"."""
    group = Group("g", config)
    first = join(group, **kw).one
    ids = [first.member_id]
    sync(group, ids[0], 1, {ids[0]: b"a0"})
    for _ in range(1, n):
        pending = join(group, **kw)
        assert not pending and group.state is S.PreparingRebalance
        rejoins = [join(group, m, **kw) for m in ids]
        ids.append(pending.one.member_id)
        assert group.state is S.CompletingRebalance and all(r.one.error_code == 0 for r in rejoins)
        leader = group.leader_id
        followers = [sync(group, m, group.generation_id) for m in ids if m != leader]
        sync(group, leader, group.generation_id, {m: b"a%d" % i for i, m in enumerate(ids)})
        assert all(f.one.error_code == 0 for f in followers)
    assert group.state is S.Stable
    return group, ids


# -- the state machine as data ------------------------------------------------------------


def test_every_state_has_transitions_and_illegal_moves_raise():
    assert set(TRANSITIONS) == set(GroupState)
    group = Group("g")
    with pytest.raises(IllegalTransitionError, match="Empty -> Stable"):
        group.transition(S.Stable)
    group.transition(S.PreparingRebalance)
    group.transition(S.CompletingRebalance)
    group.transition(S.Stable)
    with pytest.raises(IllegalTransitionError):
        group.transition(S.CompletingRebalance)
    group.transition(S.Dead)
    with pytest.raises(IllegalTransitionError):
        group.transition(S.Empty)


def test_first_member_completes_at_once_and_leads():
    group = Group("g")
    result = join(group, protocols=(("range", b"meta"),)).one
    assert result.error_code == 0 and result.generation_id == 1
    assert result.leader_id == result.member_id and result.member_id.startswith("c-")
    assert [(m.member_id, m.metadata) for m in result.members] == [(result.member_id, b"meta")]
    assert result.protocol_name == "range" and group.state is S.CompletingRebalance
    reply = sync(group, result.member_id, 1, {result.member_id: b"assigned"}).one
    assert reply.error_code == 0 and reply.assignment == b"assigned" and reply.protocol_name == "range"
    assert group.state is S.Stable


def test_protocol_is_voted_among_those_all_members_support():
    group = Group("g")
    a = join(group, protocols=(("range", b""), ("roundrobin", b""))).one.member_id
    b = join(group, protocols=(("roundrobin", b""), ("range", b"")))
    c = join(group, protocols=(("range", b""), ("roundrobin", b""), ("sticky", b"")))
    join(group, a, protocols=(("range", b""), ("roundrobin", b"")))
    assert b.one.protocol_name == c.one.protocol_name == "range"  # two votes to one
    assert group.select_protocol() == "range"
    # a member that supports only roundrobin narrows the candidates
    d = join(group, protocols=(("roundrobin", b""),))
    for m, protocols in [(a, (("range", b""), ("roundrobin", b""))), (b.one.member_id, (("roundrobin", b""), ("range", b""))),
                         (c.one.member_id, (("range", b""), ("roundrobin", b""), ("sticky", b"")))]:
        join(group, m, protocols=protocols)
    assert d.one.protocol_name == "roundrobin"


def test_inconsistent_protocols_and_bad_session_timeouts_are_refused():
    group = Group("g")
    join(group)
    assert join(group, protocols=(("other", b""),)).one.error_code == InconsistentGroupProtocolError.code
    assert join(group, protocol_type="connect").one.error_code == InconsistentGroupProtocolError.code
    assert join(group, session=100).one.error_code == InvalidSessionTimeoutError.code
    assert join(Group("h"), protocols=()).one.error_code == InconsistentGroupProtocolError.code


def test_rebalance_waits_for_every_member_then_the_leader_gets_all_metadata():
    group, (a, b) = stable_group(2)
    assert group.leader_id == a and group.generation_id == 2
    late = join(group, now=1.0)
    assert not late and group.state is S.PreparingRebalance
    assert group.heartbeat(member_id=a, group_instance_id=None, generation_id=2, now=1.1) == RebalanceInProgressError.code
    ra = join(group, a, now=1.2)
    assert not ra
    rb = join(group, b, now=1.3)
    assert group.state is S.CompletingRebalance
    assert ra.one.generation_id == rb.one.generation_id == late.one.generation_id == 3
    assert ra.one.leader_id == a and len(ra.one.members) == 3
    assert rb.one.members == () and late.one.members == ()


def test_members_that_do_not_rejoin_in_the_rebalance_timeout_are_removed():
    group, (a, b) = stable_group(2, rebalance=5_000, session=30_000)
    assert join(group, a, now=10.0, rebalance=5_000, session=30_000) == []
    assert group.next_deadline() == pytest.approx(15.0)
    group.expire(14.9)
    assert group.state is S.PreparingRebalance
    group.heartbeat(member_id=b, group_instance_id=None, generation_id=2, now=14.0)  # heartbeats do not count
    group.expire(15.0)
    assert group.state is S.CompletingRebalance and list(group.members) == [a] and group.generation_id == 3


def test_the_leader_is_kept_and_replaced_only_when_it_leaves():
    group, (a, b, c) = stable_group(3)
    assert group.leader_id == a
    assert group.leave(member_id=a, group_instance_id=None, now=1.0) == 0
    assert group.leader_id == b and group.state is S.PreparingRebalance
    rc = join(group, c, now=1.1)
    rb = join(group, b, now=1.2)
    assert rb.one.leader_id == rc.one.leader_id == b and len(rb.one.members) == 2
    assert group.leave(member_id=a, group_instance_id=None, now=1.3) == UnknownMemberIdError.code


def test_session_timeout_removes_a_silent_member_and_rebalances():
    group, (a, b) = stable_group(2, session=6_000)
    for t in (3.0, 6.0, 9.0):
        assert group.heartbeat(member_id=a, group_instance_id=None, generation_id=2, now=t) == 0
    assert group.next_deadline() == pytest.approx(6.0)  # b's session, renewed last at t=0
    group.expire(6.0)
    assert list(group.members) == [a] and group.state is S.PreparingRebalance
    assert group.heartbeat(member_id=b, group_instance_id=None, generation_id=2, now=6.1) == UnknownMemberIdError.code
    assert group.heartbeat(member_id=a, group_instance_id=None, generation_id=2, now=6.1) == RebalanceInProgressError.code
    result = join(group, a, now=6.2).one
    assert result.generation_id == 3 and [m.member_id for m in result.members] == [a]


def test_last_member_leaving_empties_the_group():
    group, (a,) = stable_group(1)
    assert group.leave(member_id=a, group_instance_id=None, now=1.0) == 0
    assert group.state is S.Empty and group.generation_id == 2 and group.next_deadline() is None


def test_initial_rebalance_delay_waits_and_extends_while_members_arrive():
    group = Group("g", GroupConfig(initial_rebalance_delay_ms=3_000))
    first = join(group, now=0.0, rebalance=10_000)
    assert not first and group.next_deadline() == pytest.approx(3.0)
    second = join(group, now=1.0, rebalance=10_000)
    group.expire(3.0)  # a member arrived during the delay: wait another delay
    assert not first and group.next_deadline() == pytest.approx(6.0)
    group.expire(6.0)
    assert first.one.generation_id == second.one.generation_id == 1 and len(first.one.members) == 2


def test_member_id_required_two_step_join_kip_394():
    group = Group("g")
    first = join(group, require=True, now=0.0).one
    assert first.error_code == MemberIdRequiredError.code and first.member_id and group.state is S.Empty
    result = join(group, first.member_id, require=True, now=0.5).one
    assert result.error_code == 0 and result.member_id == first.member_id and result.generation_id == 1


def test_a_pending_member_id_holds_the_rebalance_until_it_expires():
    group, (a,) = stable_group(1)
    pending = join(group, require=True, now=1.0, session=6_000).one.member_id
    assert group.state is S.Stable  # handing out an id does not rebalance
    assert group.heartbeat(member_id=pending, group_instance_id=None, generation_id=1, now=1.1) == UnknownMemberIdError.code
    join(group, client_id="other", now=1.5)  # a v0-3 member: joins at once, rebalances
    ra = join(group, a, now=2.0)
    assert not ra  # everyone known rejoined, but the pending id may still come back
    group.expire(7.0)  # the pending id expired: the rebalance completes
    assert ra.one.error_code == 0 and ra.one.generation_id == 2 and len(ra.one.members) == 2


def test_followers_wait_for_the_leader_and_missing_assignments_are_empty():
    group = Group("g")
    a = join(group).one.member_id
    sync(group, a, 1, {a: b"x"})
    late = join(group, now=1.0)
    join(group, a, now=1.0)
    b = late.one.member_id
    follower = sync(group, b, 2, now=1.1)
    assert not follower
    assert sync(group, a, 1, now=1.1).one.error_code == IllegalGenerationError.code
    leader = sync(group, a, 2, {a: b"only-a"}, now=1.2)
    assert leader.one.assignment == b"only-a" and follower.one.assignment == b"" and follower.one.error_code == 0
    assert sync(group, b, 2, now=1.3).one.assignment == b""  # Stable: answered at once


def test_sync_during_a_rebalance_and_a_new_rebalance_voids_held_syncs():
    group, (a, b) = stable_group(2)
    join(group, now=1.0)
    assert sync(group, a, 2, now=1.0).one.error_code == RebalanceInProgressError.code
    join(group, a, now=1.1)
    join(group, b, now=1.1)
    assert group.state is S.CompletingRebalance
    held = sync(group, b, 3, now=1.2)
    join(group, client_id="newcomer", now=1.3)  # one more member: the held sync is void
    assert held.one.error_code == RebalanceInProgressError.code and group.state is S.PreparingRebalance


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout():
    group = Group("g")
    a = join(group, rebalance=4_000).one.member_id
    sync(group, a, 1)
    late = join(group, now=1.0, rebalance=4_000, session=30_000)
    join(group, a, now=1.0, rebalance=4_000, session=30_000)
    b = late.one.member_id
    sync(group, a, 2, {a: b"x", b: b"y"}, now=1.1)
    assert group.state is S.Stable and group.pending_sync == {b}
    group.expire(5.0)
    assert list(group.members) == [a] and group.state is S.PreparingRebalance


def test_static_member_rejoin_keeps_the_generation_and_fences_the_old_id_kip_345():
    group = Group("g")
    old = join(group, instance="i-1").one
    assert old.member_id.startswith("i-1-")
    sync(group, old.member_id, 1, {old.member_id: b"mine"})
    new = join(group, instance="i-1", now=1.0).one
    assert new.error_code == 0 and new.generation_id == 1 and new.member_id != old.member_id
    assert new.leader_id == old.member_id and new.members == ()  # acts as a follower: sync for the assignment
    assert group.state is S.Stable and group.leader_id == new.member_id
    assert sync(group, new.member_id, 1, instance="i-1", now=1.1).one.assignment == b"mine"
    assert group.heartbeat(member_id=old.member_id, group_instance_id="i-1", generation_id=1, now=1.2) == FencedInstanceIdError.code
    assert group.heartbeat(member_id=old.member_id, group_instance_id=None, generation_id=1, now=1.2) == UnknownMemberIdError.code
    assert join(group, old.member_id, instance="i-1", now=1.3).one.error_code == FencedInstanceIdError.code
    assert group.leave(member_id=old.member_id, group_instance_id="i-1", now=1.4) == FencedInstanceIdError.code
    assert group.leave(member_id="", group_instance_id="i-1", now=1.5) == 0 and group.state is S.Empty


def test_static_member_rejoin_with_other_protocols_rebalances():
    group = Group("g")
    old = join(group, instance="i-1").one
    sync(group, old.member_id, 1)
    new = join(group, instance="i-1", protocols=(("range", b"other topics"),), now=1.0).one
    assert new.generation_id == 2 and new.leader_id == new.member_id


def test_a_replaced_static_member_waiting_in_sync_is_fenced():
    group, (a,) = stable_group(1)
    static = join(group, instance="s", now=1.0)
    join(group, a, now=1.0)  # completes the rebalance
    held = sync(group, static.one.member_id, 2, instance="s", now=1.1)  # waits for the leader
    replacement = join(group, instance="s", now=1.2)  # CompletingRebalance: this one rebalances
    assert held.one.error_code == FencedInstanceIdError.code and not replacement
    assert group.state is S.PreparingRebalance


def test_offset_commit_validation():
    group = Group("g")
    assert group.validate_commit(member_id="", group_instance_id=None, generation_id=-1, now=0) == 0
    a = join(group).one.member_id
    assert group.validate_commit(member_id=a, group_instance_id=None, generation_id=1, now=0) == RebalanceInProgressError.code
    sync(group, a, 1)
    assert group.validate_commit(member_id=a, group_instance_id=None, generation_id=1, now=0) == 0
    assert group.validate_commit(member_id="", group_instance_id=None, generation_id=-1, now=0) == UnknownMemberIdError.code
    assert group.validate_commit(member_id=a, group_instance_id=None, generation_id=0, now=0) == IllegalGenerationError.code
    assert group.validate_commit(member_id="x", group_instance_id=None, generation_id=1, now=0) == UnknownMemberIdError.code
    join(group, now=1.0)  # PreparingRebalance: the current generation may still commit
    assert group.validate_commit(member_id=a, group_instance_id=None, generation_id=1, now=1.0) == 0


def subscription(*topics, version=1):
    body = struct.pack(">hi", version, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1) + b"\x00\x00\x00\x00"


def test_subscriptions_are_read_as_kafkas_consumer_protocol():
    """Issue 12: the coordinator reads subscriptions with the table's
    ConsumerProtocolSubscription, as Kafka's ClassicGroup.computeSubscribedTopics does with
    ConsumerProtocol: every version, newer ones as the newest known; a version below 0 or
    bytes cut short are unreadable (None: the topics are unknown), not a topic list."""
    from kproto.protocol.messages import ConsumerProtocolSubscription as Sub

    v3 = Sub(topics=["a", "b"], owned_partitions=[Sub.TopicPartition(topic="a", partitions=[0, 2])],
             generation_id=7, rack_id="r1").encode_versioned(3)
    assert parse_subscription_topics(v3) == ["a", "b"]
    assert parse_subscription_topics(b"\x00\x09" + v3[2:] + b"appended later") == ["a", "b"]
    assert parse_subscription_topics(b"\xff\xff" + subscription("a")[2:]) is None
    assert parse_subscription_topics(struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"a") is None  # no user_data


def test_subscribed_topics_come_from_consumer_subscriptions():
    assert parse_subscription_topics(subscription("a", "b")) == ["a", "b"]
    assert parse_subscription_topics(b"\x00") is None
    group = Group("g")
    a = join(group, protocols=(("range", subscription("t1")),)).one.member_id
    assert group.subscribed_topics() == {"t1"}
    group.leave(member_id=a, group_instance_id=None, now=0)
    assert group.subscribed_topics() == set()
    other = Group("h")
    join(other, protocol_type="connect")
    assert other.subscribed_topics() is None


def test_offset_store():
    store = OffsetStore()
    assert store.get("g", "t", 0) is None and not store.has_offsets("g")
    store.commit("g", [("t", 0, CommittedOffset(offset=5, metadata="m", leader_epoch=2)), ("t", 1, CommittedOffset(offset=7))])
    assert store.get("g", "t", 0).metadata == "m" and list(store.committed("g")) == [("t", 0), ("t", 1)]
    store.delete_partitions("g", [("t", 0)])
    assert list(store.committed("g")) == [("t", 1)]
    store.delete_group("g")
    assert not store.has_offsets("g") and list(store.groups()) == []


def test_offset_store_journals_every_change_before_applying_it_and_replays_it():
    written = []
    store = OffsetStore(lambda group, entries: written.append((group, entries)))
    one, two = CommittedOffset(offset=1), CommittedOffset(offset=2)
    store.commit("g", [("t", 0, one), ("u", 0, two)])
    store.commit("h", [("t", 0, two)])
    store.delete_partitions("g", [("nothing-there", 0)])  # no change, nothing written
    store.delete_partitions("g", [("t", 0)])
    store.delete_partitions("h", [("t", 0)])
    store.delete_group("g")
    assert written == [
        ("g", [("g", "t", 0, one), ("g", "u", 0, two)]),
        ("h", [("h", "t", 0, two)]),
        ("g", [("g", "t", 0, None)]),
        ("h", [("h", "t", 0, None)]),
        ("g", [("g", "u", 0, None)]),
    ]
    replayed = OffsetStore()
    replayed.replay(entry for _, entries in written[:2] for entry in entries)
    assert replayed.committed("g") == {("t", 0): one, ("u", 0): two} and replayed.get("h", "t", 0) == two

    def failing(group, entries):
        raise OSError("disk full")
    store = OffsetStore(failing)
    with pytest.raises(OSError):
        store.commit("g", [("t", 0, one)])
    assert not store.has_offsets("g")  # memory still agrees with the log


def test_coordinator_holds_joins_and_its_timer_evicts_members_that_do_not_rejoin():
    config = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10,
              "group.max.session.timeout.ms": 60_000}

    def args(member_id=""):
        return dict(member_id=member_id, group_instance_id=None, client_id="c", client_host="",
                    session_timeout_ms=5_000, rebalance_timeout_ms=200, protocol_type="consumer",
                    protocols=RANGE, require_known_member_id=False)

    async def run():
        coordinator = GroupCoordinator(config)
        first = await coordinator.join("g", **args())
        assert (await coordinator.sync("g", member_id=first.member_id, group_instance_id=None, generation_id=1,
                                       protocol_type=None, protocol_name=None, assignments={})).error_code == 0
        # a second member's join is held until the first rejoins or the 200 ms rebalance timeout passes
        second = await asyncio.wait_for(coordinator.join("g", **args()), 2)
        assert second.generation_id == 2 and second.leader_id == second.member_id
        assert list(coordinator.get("g").members) == [second.member_id]
        assert (await coordinator.join("nope", **args("someone"))).error_code == UnknownMemberIdError.code
        coordinator.close()

    asyncio.run(run())
