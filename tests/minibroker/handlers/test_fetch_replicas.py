"""Fetch from the closest replica (KIP-392) and Fetch's out-of-range rules of the divergence
check (KIP-595), on cluster-mode broker states without a network (issue 13 step 2, item 3).

The leader of "t" (replicas 0, 1, 2 on racks a, b, c) picks a consumer's preferred read
replica with ``replica.selector.class`` = Kafka's RackAwareReplicaSelector; a follower
serves a consumer's v11+ fetch up to its own high watermark.
"""

from __future__ import annotations

import dataclasses

from kproto.errors import NotLeaderOrFollowerError, OffsetOutOfRangeError
from kproto.protocol.messages import FetchRequest
from minibroker.cluster.metadata import PartitionRegistration
from minibroker.config import LEADER_SELECTOR, RACK_AWARE_SELECTOR
from minibroker.handlers import fetch
from tests.minibroker.handlers.test_replication_errors import (
    do_fetch,
    fetch_request,
    header,
    node,
    offsets_of,
    produce_one,
    run,
)

RACKS = ("a", "b", "c")


def rack_node(tmp_path, selector=RACK_AWARE_SELECTOR, **kwargs):
    state = node(tmp_path, broker_config={"replica.selector.class": selector}, **kwargs)
    image = state.cluster.image
    image.brokers = {i: dataclasses.replace(b, rack=RACKS[i]) for i, b in image.brokers.items()}
    return state


async def consumer_fetch(state, offset, rack, version=11, **kwargs):
    request = fetch_request(offset, version=version, **kwargs)
    request.rack_id = rack
    return (await fetch.handle(state, header(version), request)).responses[0].partitions[0]


async def three_records_both_followers_caught_up(state):
    await produce_one(state, values=(b"x", b"y", b"z"))
    for follower in (1, 2):
        await do_fetch(state, 3, replica_id=follower, replica_epoch=100 + follower)


def test_the_leader_sends_a_consumer_to_the_in_sync_replica_of_its_rack(tmp_path):
    """ReplicaManager.findPreferredReadReplica with RackAwareReplicaSelector: rack b's
    consumer is told replica 1 with no records (and the leader's offsets); the leader's own
    rack, an unknown rack or no rack read from the leader."""
    state = rack_node(tmp_path)

    async def scenario():
        await three_records_both_followers_caught_up(state)
        return [await consumer_fetch(state, 0, rack) for rack in ("b", "c", "a", "z", "")]

    try:
        to_b, to_c, here, unknown, none = run(scenario())
        assert (to_b.error_code, to_b.preferred_read_replica, offsets_of(to_b.records)) == (0, 1, [])
        assert (to_b.high_watermark, to_b.log_start_offset) == (3, 0)
        assert to_c.preferred_read_replica == 2
        for answer in (here, unknown, none):
            assert (answer.error_code, answer.preferred_read_replica, offsets_of(answer.records)) == (0, -1, [0, 1, 2])
    finally:
        state.close()


def test_without_the_rack_aware_selector_or_before_v11_the_leader_serves(tmp_path):
    """replica.selector.class empty (Kafka's default) or LeaderReplicaSelector: the leader."""
    for selector in ("", LEADER_SELECTOR):
        state = rack_node(tmp_path / (selector or "none"), selector=selector)

        async def scenario(state=state):
            await three_records_both_followers_caught_up(state)
            return await consumer_fetch(state, 0, "b")

        try:
            answer = run(scenario())
            assert (answer.preferred_read_replica, offsets_of(answer.records)) == (-1, [0, 1, 2])
        finally:
            state.close()
    state = rack_node(tmp_path / "v10")
    try:
        run(three_records_both_followers_caught_up(state))
        answer = run(consumer_fetch(state, 0, "b", version=10))
        assert offsets_of(answer.records) == [0, 1, 2]
    finally:
        state.close()


def test_a_replica_out_of_the_isr_or_without_the_offset_is_not_preferred(tmp_path):
    """Only ISR members holding the fetch offset are candidates (Kafka's comment: a lagging
    follower would be picked again and again)."""
    state = rack_node(tmp_path / "isr")
    try:
        run(three_records_both_followers_caught_up(state))
        p = state.topics["t"].partitions[0]
        p.apply_registration(PartitionRegistration(replicas=(0, 1, 2), isr=(0, 2), leader=0, leader_epoch=3,
                                                   partition_epoch=p.partition_epoch + 1), state.clock_ms())
        assert run(consumer_fetch(state, 0, "b")).preferred_read_replica == -1
    finally:
        state.close()
    state = rack_node(tmp_path / "behind")

    async def behind():
        await produce_one(state, values=(b"x", b"y", b"z"))
        await do_fetch(state, 1, replica_id=1, replica_epoch=101)  # replica 1 holds offsets 0..0
        await do_fetch(state, 3, replica_id=2, replica_epoch=102)
        return await consumer_fetch(state, 1, "b"), await consumer_fetch(state, 2, "b")

    try:
        at_its_end, past_it = run(behind())
        assert at_its_end.preferred_read_replica == 1
        assert past_it.preferred_read_replica == -1
    finally:
        state.close()


def test_a_dead_replica_is_not_preferred(tmp_path):
    state = rack_node(tmp_path)
    try:
        run(three_records_both_followers_caught_up(state))
        image = state.cluster.image
        image.brokers[1] = dataclasses.replace(image.brokers[1], fenced=True)
        assert run(consumer_fetch(state, 0, "b")).preferred_read_replica == -1
    finally:
        state.close()


def test_a_follower_serves_a_consumer_up_to_its_own_high_watermark(tmp_path):
    """ReplicaManager.fetchMessages: a consumer's v11+ fetch (client metadata) is not
    leader-only; the follower reads below its high watermark (the leader's as of its last
    fetch), never what is not committed; past its log end is OFFSET_OUT_OF_RANGE; v10 and
    replica fetches need the leader (NOT_LEADER_OR_FOLLOWER)."""
    leader = rack_node(tmp_path / "a")
    follower = rack_node(tmp_path / "b", node_id=1)

    async def scenario():
        await produce_one(leader, values=(b"x", b"y"))
        await produce_one(leader, values=(b"z",))
        replicated = await do_fetch(leader, 0, replica_id=1, replica_epoch=101)
        partition = follower.topics["t"].partitions[0]
        partition.append_as_follower(replicated.records.tobytes() if hasattr(replicated.records, "tobytes")
                                     else bytes(replicated.records))
        partition.update_follower_high_watermark(2, 0)  # the leader had 2 in sync when it answered
        return (await consumer_fetch(follower, 0, "b"), await consumer_fetch(follower, 0, "b", version=15),
                await consumer_fetch(follower, 2, "b"), await consumer_fetch(follower, 4, "b"),
                await consumer_fetch(follower, 0, "b", version=10), await do_fetch(follower, 0, replica_id=2))

    try:
        v11, v15, at_hw, past_end, v10, as_replica = run(scenario())
        assert (v11.error_code, v11.high_watermark, offsets_of(v11.records)) == (0, 2, [0, 1])
        assert offsets_of(v15.records) == [0, 1]
        assert (at_hw.error_code, offsets_of(at_hw.records)) == (0, [])
        assert past_end.error_code == OffsetOutOfRangeError.code
        assert v10.error_code == as_replica.error_code == NotLeaderOrFollowerError.code
    finally:
        leader.close()
        follower.close()


def test_fetch_with_an_epoch_the_leader_cannot_place_is_offset_out_of_range(tmp_path):
    """Partition.readRecords: a last fetched epoch whose end the leader does not know
    (OffsetForLeaderEpoch would answer (-1, -1)) is OFFSET_OUT_OF_RANGE, not a diverging
    epoch of (-1, -1); so is an offset below the log start, diverging or not."""
    state = node(tmp_path)

    async def scenario():
        await produce_one(state, values=(b"a", b"b"))  # epoch 3 from offset 0
        return await do_fetch(state, 2, version=12, replica_id=1, last_fetched_epoch=9)

    try:
        answer = run(scenario())
        assert answer.error_code == OffsetOutOfRangeError.code
        assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (-1, -1)
        assert offsets_of(answer.records) == []
    finally:
        state.close()


def test_fetch_request_v11_carries_the_rack():
    request = FetchRequest(rack_id="b", topics=[])
    assert FetchRequest.decode(request.encode(11), 11).rack_id == "b"


def test_fetch_v16_names_where_the_leader_listens(tmp_path):
    """KIP-951: a v16+ NOT_LEADER_OR_FOLLOWER answer carries the leader (current_leader)
    and its endpoint (node_endpoints), so a client moves without a Metadata round trip."""
    follower = rack_node(tmp_path, node_id=1)
    try:
        request = fetch_request(0, version=16, replica_id=2)
        response = run(fetch.handle(follower, header(16), request))
        answer = response.responses[0].partitions[0]
        assert answer.error_code == NotLeaderOrFollowerError.code
        assert answer.current_leader.leader_id == 0
        assert [(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints] == [(0, "127.0.0.1", 9000, "a")]
        old = run(fetch.handle(follower, header(15), fetch_request(0, version=15, replica_id=2)))
        assert old.node_endpoints == []
    finally:
        follower.close()
