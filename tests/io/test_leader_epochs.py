"""Leader epochs in the client's metadata (issue 13 step 2, item 4.1; KIP-320, KIP-951).

Network-free: Metadata answers are applied to a :class:`~kproto.io.cluster.Cluster` as a
broker would send them, and the cache is checked; then a real MiniBroker shows the epoch
is sent (a cached epoch ahead of the broker's gets UNKNOWN_LEADER_EPOCH back).
"""

import asyncio
import uuid

from kproto.config import ClientConfig
from kproto.errors import UnknownLeaderEpochError
from kproto.io import Cluster
from kproto.io.fetch import FetchSettings, fetch
from kproto.io.leader_epochs import offsets_for_leader_epoch
from kproto.io.list_offsets import list_offsets
from kproto.protocol.messages import MetadataResponse, ProduceResponse
from kproto.protocol.timestamps import OffsetTimestamp
from kproto.structs import TopicPartition

TOPIC_ID = uuid.UUID(int=7)


def _answer(leader, epoch, *, topic_id=TOPIC_ID, brokers=(0, 1, 2), error_code=0):
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9000 + n) for n in brokers],
        cluster_id="c", controller_id=0,
        topics=[MetadataResponse.MetadataResponseTopic(
            error_code=0, name="t", topic_id=topic_id, is_internal=False,
            partitions=[MetadataResponse.MetadataResponsePartition(
                error_code=error_code, partition_index=0, leader_id=leader, leader_epoch=epoch,
                replica_nodes=[0, 1, 2], isr_nodes=[leader, 2] if leader >= 0 else [2], offline_replicas=[1])])])


def _cluster():
    return Cluster(ClientConfig("consumer", bootstrap_servers="127.0.0.1:9"))


def test_an_answer_with_an_older_leader_epoch_does_not_replace_the_cached_one():
    """Java's Metadata.updateLatestMetadata: a broker that missed an election cannot move
    the partition back to its old leader."""
    cluster = _cluster()
    cluster._apply(_answer(leader=1, epoch=5), full=False)
    assert (cluster.leader("t", 0), cluster.leader_epoch("t", 0)) == (1, 5)
    cluster._apply(_answer(leader=0, epoch=4), full=False)  # stale broker
    assert (cluster.leader("t", 0), cluster.leader_epoch("t", 0)) == (1, 5)
    cluster._apply(_answer(leader=2, epoch=5), full=False)  # same epoch: taken
    assert cluster.leader("t", 0) == 2
    cluster._apply(_answer(leader=0, epoch=6), full=False)  # newer: taken
    assert (cluster.leader("t", 0), cluster.leader_epoch("t", 0)) == (0, 6)
    info = cluster.topics["t"].partitions[0]
    assert info.replicas == (0, 1, 2) and info.isr == (0, 2) and info.offline_replicas == (1,)


def test_a_recreated_topic_or_an_answer_without_epoch_starts_over():
    cluster = _cluster()
    cluster._apply(_answer(leader=1, epoch=5), full=False)
    cluster._apply(_answer(leader=0, epoch=0, topic_id=uuid.UUID(int=8)), full=False)  # a new topic id
    assert (cluster.leader("t", 0), cluster.leader_epoch("t", 0)) == (0, 0)
    cluster._apply(_answer(leader=-1, epoch=-1, error_code=5), full=False)  # LEADER_NOT_AVAILABLE
    assert cluster.leader_epoch("t", 0) == -1
    cluster._apply(_answer(leader=2, epoch=0), full=False)  # the epoch was forgotten: anything goes
    assert cluster.leader("t", 0) == 2


def test_a_leader_hint_of_a_newer_epoch_moves_the_leader_without_a_refresh():
    """KIP-951: Produce v10+ / Fetch v12+ name the new leader in current_leader."""
    cluster = _cluster()
    cluster._apply(_answer(leader=1, epoch=5, brokers=(0, 1)), full=False)
    assert not cluster.update_leader("t", 0, 0, 4)  # older
    assert not cluster.update_leader("t", 0, 2, 6)  # broker 2 unknown, no endpoint given
    assert cluster.leader("t", 0) == 1
    endpoint = ProduceResponse.NodeEndpoint(node_id=2, host="127.0.0.1", port=9002, rack="b")
    assert cluster.update_leader("t", 0, 2, 6, [endpoint])
    assert (cluster.leader("t", 0), cluster.leader_epoch("t", 0)) == (2, 6)
    assert cluster.brokers[2].rack == "b"
    cluster._apply(_answer(leader=1, epoch=5), full=False)  # a refresh from a stale broker after it
    assert (cluster.leader("t", 0), cluster.leader_epoch("t", 0)) == (2, 6)


def test_requests_carry_the_cached_leader_epoch(broker):
    """Fetch, ListOffsets and OffsetForLeaderEpoch send current_leader_epoch: a cache one
    epoch ahead of the broker's gets UNKNOWN_LEADER_EPOCH (retriable) from each."""
    tp = TopicPartition("epochs-sent", 0)

    async def run():
        config = ClientConfig("consumer", bootstrap_servers=broker.bootstrap_servers, allow_auto_create_topics=True)
        cluster = Cluster(config, allow_auto_topic_creation=True)
        try:
            await cluster.refresh([tp.topic])
            while cluster.leader(*tp) < 0:
                await asyncio.sleep(0.05)
                await cluster.refresh([tp.topic])
            leader, epoch = cluster.leader(*tp), cluster.leader_epoch(*tp)
            assert epoch >= 0
            settings = FetchSettings.from_config(config)
            ok = await fetch(cluster, leader, settings, {tp: 0})
            assert ok[tp].error_code == 0
            assert (await list_offsets(cluster, leader, {tp: OffsetTimestamp.LATEST}, read_committed=False)
                    )[tp].error_code == 0
            assert (await offsets_for_leader_epoch(cluster, leader, {tp: epoch}))[tp].error_code == 0
            cluster.update_leader(tp.topic, 0, leader, epoch + 1)  # the client is ahead of the broker
            assert (await fetch(cluster, leader, settings, {tp: 0}))[tp].error_code == UnknownLeaderEpochError.code
            assert (await list_offsets(cluster, leader, {tp: OffsetTimestamp.LATEST}, read_committed=False)
                    )[tp].error_code == UnknownLeaderEpochError.code
            assert (await offsets_for_leader_epoch(cluster, leader, {tp: epoch}))[tp].error_code == \
                UnknownLeaderEpochError.code
        finally:
            await cluster.close()

    asyncio.run(run())


def test_a_fetch_answer_naming_the_new_leader_updates_the_metadata_without_a_refresh(cluster3):
    """KIP-951 on a MiniCluster: after the leader's death a replica that is not the new
    leader answers a Fetch with NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) and the
    new leader in current_leader; fetch() puts it in the cache, no Metadata asked."""
    cluster3.create_topic("hinted", partitions=1, replication_factor=3)
    cluster3.wait_for_isr("hinted", 0, 3)
    tp = TopicPartition("hinted", 0)

    async def run():
        config = ClientConfig("consumer", bootstrap_servers=cluster3.bootstrap_servers)
        cluster = Cluster(config)
        try:
            await cluster.refresh([tp.topic])
            old, epoch = cluster.leader(*tp), cluster.leader_epoch(*tp)
            await asyncio.to_thread(cluster3.kill, old)
            new = await asyncio.to_thread(cluster3.wait_for_leader, tp.topic, 0, (old,))
            other = next(n for n in range(3) if n not in (old, new))
            refreshes = []
            cluster._fetch_metadata = lambda names: refreshes.append(names)  # none may happen
            answer = (await fetch(cluster, other, FetchSettings.from_config(config), {tp: 0}))[tp]
            assert answer.error_code != 0 and answer.current_leader.leader_id == new
            assert (cluster.leader(*tp), cluster.leader_epoch(*tp)) == (new, answer.current_leader.leader_epoch)
            assert cluster.leader_epoch(*tp) > epoch and refreshes == []
        finally:
            await cluster.close()

    asyncio.run(run())
