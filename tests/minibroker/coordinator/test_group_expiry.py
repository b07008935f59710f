"""Offset expiry and the removal of empty groups (Kafka's offsets.retention.minutes and
offsets.retention.check.interval.ms, KIP-211): the rules with a fake clock, then real
clients, a real broker and a restart."""

from __future__ import annotations

import asyncio

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import LeaveGroupRequest, ListGroupsRequest, OffsetFetchRequest
from minibroker import MiniBroker
from minibroker.coordinator import CommittedOffset, GroupCoordinator, GroupState
from tests.minibroker.coordinator.test_groups import (
    PARTITIONS,
    Member,
    join_request,
    produce,
    wait_until,
)
from tests.support.raw_client import RawClient

MINUTE = 60_000
# A consumer Subscription v1 of topic "t": topics, null user_data, no owned partitions
# (the coordinator reads it whole, as Kafka's ConsumerProtocol does).
SUBSCRIBES_T = b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff\x00\x00\x00\x00"


def test_offsets_expire_as_kafka_says_and_empty_groups_go():
    """Issue 10, item 12: offsets expire retention after their group became Empty (never
    while it has members), a standalone consumer's retention after the commit, a Stable
    group's unsubscribed topics retention after the commit (KIP-496); an Empty group
    without offsets is removed at the next check; every expiry is a tombstone in the
    journal."""
    now = [0]
    written = []
    config = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10,
              "group.max.session.timeout.ms": 600_000, "offsets.retention.minutes": 10}
    retention = 10 * MINUTE

    def join_args():
        return dict(member_id="", group_instance_id=None, client_id="c", client_host="", session_timeout_ms=600_000,
                    rebalance_timeout_ms=1000, protocol_type="consumer", protocols=[("range", SUBSCRIBES_T)],
                    require_known_member_id=False)

    def commit(coordinator, group, topic, member="", generation=-1):
        assert coordinator.commit_offsets(group, member_id=member, group_instance_id=None, generation_id=generation,
                                          offsets=[(topic, 0, CommittedOffset(offset=5, commit_timestamp=now[0]))]) == 0

    async def run():
        coordinator = GroupCoordinator(config, wall_clock=lambda: now[0], journal=lambda g, e: written.append(e))
        member = await coordinator.join("g", **join_args())
        assert (await coordinator.sync("g", member_id=member.member_id, group_instance_id=None, generation_id=1,
                                       protocol_type=None, protocol_name=None, assignments={})).error_code == 0
        commit(coordinator, "g", "t", member.member_id, 1)
        commit(coordinator, "g", "old", member.member_id, 1)  # a topic no member subscribes to
        commit(coordinator, "standalone", "t")
        joined = await coordinator.join("joined-and-left", **join_args())
        assert coordinator.leave("joined-and-left", member_id=joined.member_id, group_instance_id=None) == 0

        assert coordinator.expire() == 1  # no offsets, Empty: Dead at the first check
        assert coordinator.get("joined-and-left") is None

        now[0] = retention
        assert coordinator.expire() == 1  # the standalone commit is retention old
        assert coordinator.get("standalone") is None and not coordinator.offsets.has_offsets("standalone")
        assert set(coordinator.offsets.committed("g")) == {("t", 0)}  # "old" went (KIP-496), "t" stays
        assert written[-2:] == [[("g", "old", 0, None)], [("standalone", "t", 0, None)]]

        now[0] = 3 * retention  # however old, a member's group keeps its offsets
        assert coordinator.expire() == 0 and coordinator.offsets.has_offsets("g")
        assert coordinator.leave("g", member_id=member.member_id, group_instance_id=None) == 0
        assert coordinator.get("g").state is GroupState.Empty
        now[0] = 4 * retention - 1
        assert coordinator.expire() == 0 and coordinator.offsets.has_offsets("g")
        now[0] = 4 * retention  # retention after it became Empty
        assert coordinator.expire() == 1
        assert coordinator.get("g") is None and written[-1] == [("g", "t", 0, None)]
        coordinator.close()

    asyncio.run(run())


def list_groups(client):
    return {g.group_id: g.group_state for g in client.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).groups}


def fetched_offset(client, group, topic, partition):
    response = client.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[partition])]))
    return response.topics[0].partitions[0].committed_offset


def test_empty_groups_and_their_offsets_go_and_stay_gone_after_a_restart(tmp_path):
    """Issue 10, item 12: many groups joined and left, and a real consumer's group that
    committed and closed, are removed by the periodic check (offsets.retention.minutes=0:
    at once once Empty); a group with a live member keeps its offsets; after a restart
    the removed ones stay gone (tombstones) and the kept ones are back. Before: every
    group stayed, forever."""
    pytest.importorskip("kafka")
    settings = {"num.partitions": PARTITIONS, "offsets.retention.minutes": 0,
                "offsets.retention.check.interval.ms": 200}
    with MiniBroker(data_dir=tmp_path, config=settings) as broker:
        produce(broker, "t", "x", 12)
        raw = RawClient(broker.port)
        try:
            for i in range(200):  # JoinGroup v3: no KIP-394 round trip; a lone member completes at once
                joined = raw.request(ApiKey.JOIN_GROUP, 3, join_request(group=f"g{i}"))
                assert joined.error_code == 0
                left = raw.request(ApiKey.LEAVE_GROUP, 0, LeaveGroupRequest(group_id=f"g{i}", member_id=joined.member_id))
                assert left.error_code == 0
            gone = Member("kafka-python", broker, "t", "gone", "gone-0")
            try:
                wait_until(lambda: len(gone.consumed) == 12, what="the first consumer")
            finally:
                gone.close()
            kept = Member("kafka-python", broker, "t", "kept", "kept-0")
            try:
                wait_until(lambda: len(kept.consumed) == 12, what="the second consumer")
                wait_until(lambda: set(list_groups(raw)) == {"kept"}, what="the empty groups to go",
                           detail=lambda: str(len(list_groups(raw))))
                assert fetched_offset(raw, "gone", "t", 0) == -1
                assert fetched_offset(raw, "kept", "t", 0) == 2  # a live group keeps its offsets
            finally:
                kept.close()
        finally:
            raw.close()
    # Restarted without expiry checks: what was removed must not come back from the log.
    with MiniBroker(data_dir=tmp_path, config={"num.partitions": PARTITIONS}) as broker:
        raw = RawClient(broker.port)
        try:
            assert set(list_groups(raw)) == {"kept"}
            assert fetched_offset(raw, "kept", "t", 0) == 2
            assert fetched_offset(raw, "gone", "t", 0) == -1
        finally:
            raw.close()

