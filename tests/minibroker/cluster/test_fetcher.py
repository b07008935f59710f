"""The follower's fetcher against a real single MiniBroker as its leader (issue 13, WP4).

The MiniBroker's solo partitions serve any replica id up to their log end offset, answer
OffsetForLeaderEpoch for epoch 0, and ListOffsets: everything a follower asks. The
follower is a :class:`Partition` with a log on disk, replicating over real sockets.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path

import confluent_kafka
import confluent_kafka.admin

from kproto.errors import UnknownLeaderEpochError
from kproto.records import BatchBuilder
from minibroker import MiniBroker
from minibroker.cluster.fetcher import FetcherManager, FetchTarget
from minibroker.cluster.metadata import PartitionRegistration
from minibroker.cluster.partition import Partition, ReplicaRole
from minibroker.config import BrokerConfig
from minibroker.log import PartitionLog

TOPIC = "replicated"
FOLLOWER = 1


def produce(bootstrap: str, count: int, *, start: int = 0, batches: int = 3) -> None:
    """``count`` records in about ``batches`` acknowledged batches, with a real client."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    per = max(1, count // batches)
    for i in range(start, start + count):
        producer.produce(TOPIC, key=b"k%d" % i, value=b"value-%d" % i, partition=0)
        if (i - start + 1) % per == 0:
            assert producer.flush(10) == 0
    assert producer.flush(10) == 0


async def create_topic(broker: MiniBroker) -> uuid.UUID:
    await asyncio.to_thread(produce, broker.bootstrap_servers, 1)  # auto-created with one partition
    return broker._server.state.topics[TOPIC].topic_id


def leader_log(broker: MiniBroker) -> PartitionLog:
    held = broker._server.state.topics[TOPIC].partitions[0]
    # A PartitionLog until Topic.partitions holds Partitions (the data-path sweep, WP5).
    return held.log if isinstance(held, Partition) else held


def segment_bytes(directory: Path) -> dict[str, bytes]:
    segments = {p.name: p.read_bytes() for p in sorted(directory.glob("*.log"))}
    assert segments and all(segments.values()), directory
    return segments


class Follower:
    """Broker 1's replica of partition 0, following broker 0 at epoch 0."""

    def __init__(self, directory: Path, topic_id: uuid.UUID, leader: MiniBroker, backoff_ms: int = 50):
        self.dir = directory / f"{TOPIC}-0"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log = PartitionLog(self.dir, epoch_checkpoint=True)
        self.log.set_high_watermark(self.log.log_start_offset)
        self.partition = Partition(topic=TOPIC, topic_id=topic_id, index=0, node_id=FOLLOWER, log=self.log)
        self.partition.apply_registration(PartitionRegistration(
            replicas=(0, FOLLOWER), isr=(0, FOLLOWER), leader=0, leader_epoch=0, partition_epoch=0), 0)
        assert self.partition.role is ReplicaRole.FOLLOWER
        self.leader = leader
        self.manager = FetcherManager(
            node_id=FOLLOWER,
            config=BrokerConfig({"replica.fetch.backoff.ms": backoff_ms, "replica.fetch.wait.max.ms": 100}),
            partitions=lambda tid, i: self.partition if (tid, i) == (topic_id, 0) else None,
            endpoint=lambda node: (self.leader.host, self.leader.port) if node == 0 else None,
            broker_epoch=lambda: 7)
        self.target = FetchTarget(topic=TOPIC, topic_id=topic_id, index=0, leader=0, leader_epoch=0)

    def start(self) -> None:
        self.manager.set_targets([self.target])

    async def caught_up(self, leader_log: PartitionLog, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not (self.log.log_end_offset == leader_log.log_end_offset
                   and self.log.high_watermark == leader_log.high_watermark):
            assert time.monotonic() < deadline, (
                f"follower at LEO {self.log.log_end_offset} HW {self.log.high_watermark}, "
                f"leader at {leader_log.log_end_offset}")
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        await self.manager.close()
        assert not self.manager.fetchers
        self.log.close()


def run(coro):
    """Run a test's coroutine, then check that it left no task behind (fetchers, run())."""
    async def checked():
        await coro
        await asyncio.sleep(0)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not left, left
    asyncio.run(checked())


def test_follower_segments_are_byte_identical_to_the_leaders(tmp_path):
    """A follower catching up from empty holds the leader's .log files byte for byte."""
    async def main():
        async with MiniBroker(data_dir=tmp_path / "leader") as leader:
            topic_id = await create_topic(leader)
            await asyncio.to_thread(produce, leader.bootstrap_servers, 30, start=1)
            follower = Follower(tmp_path / "follower", topic_id, leader)
            try:
                follower.start()
                await follower.caught_up(leader_log(leader))
                # Appends after the catch-up arrive through the long poll.
                await asyncio.to_thread(produce, leader.bootstrap_servers, 10, start=31)
                await follower.caught_up(leader_log(leader))
                assert follower.log.log_end_offset == 41
                assert follower.log.epochs.entries == ((0, 0),)
                assert segment_bytes(follower.dir) == segment_bytes(tmp_path / "leader" / f"{TOPIC}-0")
                assert follower.partition.truncated_records == 0
            finally:
                await follower.close()
    run(main())


def batch(base: int, epoch: int, count: int) -> bytes:
    builder = BatchBuilder(2, 0)
    for i in range(count):
        builder.append(1_000 + i, b"x", b"extra-%d" % i)
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")
    data[12:16] = epoch.to_bytes(4, "big", signed=True)
    return bytes(data)  # the CRC covers neither the base offset nor the leader epoch


def test_longer_follower_log_truncates_through_offset_for_leader_epoch(tmp_path, caplog):
    """Extra epoch-0 batches the leader lacks: OffsetForLeaderEpoch(0) answers the leader's
    log end, the follower truncates there (counted, logged at INFO), then fetches."""
    async def main():
        async with MiniBroker(data_dir=tmp_path / "leader") as leader:
            topic_id = await create_topic(leader)
            await asyncio.to_thread(produce, leader.bootstrap_servers, 9, start=1)
            follower = Follower(tmp_path / "follower", topic_id, leader)
            try:
                follower.start()
                await follower.caught_up(leader_log(leader))
                await follower.manager.close()
                # The follower, a leader at epoch 0 for a moment, wrote 5 records no one has.
                end = follower.log.log_end_offset
                follower.log.append_replicated(batch(end, 0, 5))
                assert follower.log.log_end_offset == end + 5
                follower.manager = FetcherManager(
                    node_id=FOLLOWER, config=follower.manager.config, partitions=follower.manager.partitions,
                    endpoint=follower.manager.endpoint, broker_epoch=follower.manager.broker_epoch)
                with caplog.at_level(logging.INFO, logger="minibroker.cluster"):
                    follower.start()
                    await follower.caught_up(leader_log(leader))
                assert follower.partition.truncated_records == 5
                assert any("truncated 5 record(s) to offset 10" in r.getMessage() for r in caplog.records)
                await asyncio.to_thread(produce, leader.bootstrap_servers, 3, start=10)
                await follower.caught_up(leader_log(leader))
                assert follower.log.log_end_offset == 13
                assert segment_bytes(follower.dir) == segment_bytes(tmp_path / "leader" / f"{TOPIC}-0")
            finally:
                await follower.close()
    run(main())


def test_epoch_the_leader_never_had_falls_back_to_the_high_watermark(tmp_path):
    """A follower batch of epoch 3 (the leader only ever had 0): the leader answers
    (-1, -1) and the follower truncates to its high watermark, then catches up."""
    async def main():
        async with MiniBroker(data_dir=tmp_path / "leader") as leader:
            topic_id = await create_topic(leader)
            await asyncio.to_thread(produce, leader.bootstrap_servers, 5, start=1)
            follower = Follower(tmp_path / "follower", topic_id, leader)
            try:
                follower.start()
                await follower.caught_up(leader_log(leader))
                await follower.manager.close()
                hw = follower.log.high_watermark
                follower.log.append_replicated(batch(follower.log.log_end_offset, 3, 4))
                assert follower.log.epochs.latest_epoch() == 3 and follower.log.high_watermark == hw
                follower.manager = FetcherManager(
                    node_id=FOLLOWER, config=follower.manager.config, partitions=follower.manager.partitions,
                    endpoint=follower.manager.endpoint, broker_epoch=follower.manager.broker_epoch)
                await asyncio.to_thread(produce, leader.bootstrap_servers, 2, start=6)
                follower.start()
                await follower.caught_up(leader_log(leader))
                assert follower.partition.truncated_records == 4
                assert follower.log.epochs.entries == ((0, 0),)
                assert segment_bytes(follower.dir) == segment_bytes(tmp_path / "leader" / f"{TOPIC}-0")
            finally:
                await follower.close()
    run(main())


def test_leader_stopped_mid_fetch_backs_off_reconnects_and_catches_up(tmp_path, caplog):
    """The leader stops while the follower's Fetch is parked at it: the fetcher backs off
    (replica.fetch.backoff.ms), keeps its target, and catches up once the leader is back
    on the same port."""
    async def main():
        leader = MiniBroker(data_dir=tmp_path / "leader")
        await leader.start_async()
        port = leader.port
        follower = None
        try:
            topic_id = await create_topic(leader)
            await asyncio.to_thread(produce, leader.bootstrap_servers, 5, start=1)
            follower = Follower(tmp_path / "follower", topic_id, leader)
            follower.start()
            await follower.caught_up(leader_log(leader))
            await asyncio.sleep(0.05)  # the follower's next Fetch now waits at the leader
            with caplog.at_level(logging.INFO, logger="minibroker.cluster"):
                await leader.stop_async()
                deadline = time.monotonic() + 10
                while sum("fetching from broker 0 failed" in r.getMessage() for r in caplog.records) < 2:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.02)
            fetcher = follower.manager.fetchers[0]
            assert not fetcher.task.done() and list(fetcher.targets) == [(topic_id, 0)]
            leader = MiniBroker(data_dir=tmp_path / "leader", port=port)
            follower.leader = leader
            await leader.start_async()
            await asyncio.to_thread(produce, leader.bootstrap_servers, 7, start=6)
            await follower.caught_up(leader_log(leader))
            assert follower.log.log_end_offset == 13
            assert segment_bytes(follower.dir) == segment_bytes(tmp_path / "leader" / f"{TOPIC}-0")
        finally:
            if follower is not None:
                await follower.close()
            await leader.stop_async()
    run(main())


def delete_records(bootstrap: str, before: int) -> None:
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([confluent_kafka.TopicPartition(TOPIC, 0, before)])
    for future in futures.values():
        future.result(10)


def test_follower_behind_the_leaders_log_start_starts_again_there(tmp_path):
    """OFFSET_OUT_OF_RANGE: a new follower at offset 0 while the leader's log starts at 8
    (DeleteRecords): ListOffsets as replica 1 says the leader's log end is ahead, its log
    start is past the follower's end, so the follower empties its log to start at 8
    (Kafka's fetchOffsetAndTruncate) and fetches from there; the leader's log start also
    reaches it later through the Fetch answers."""
    async def main():
        async with MiniBroker(data_dir=tmp_path / "leader") as leader:
            topic_id = await create_topic(leader)
            await asyncio.to_thread(produce, leader.bootstrap_servers, 9, start=1)
            await asyncio.to_thread(delete_records, leader.bootstrap_servers, 8)
            assert leader_log(leader).log_start_offset == 8
            follower = Follower(tmp_path / "follower", topic_id, leader)
            try:
                follower.start()
                await follower.caught_up(leader_log(leader))
                assert (follower.log.log_start_offset, follower.log.log_end_offset) == (8, 10)
                await asyncio.to_thread(produce, leader.bootstrap_servers, 4, start=10)
                await follower.caught_up(leader_log(leader))
                await asyncio.to_thread(delete_records, leader.bootstrap_servers, 12)
                deadline = time.monotonic() + 10
                while follower.log.log_start_offset != 12:
                    assert time.monotonic() < deadline, follower.log.log_start_offset
                    await asyncio.sleep(0.01)
            finally:
                await follower.close()
    run(main())


def test_unknown_leader_epoch_is_retried_after_the_backoff_not_parked(tmp_path, caplog):
    """A follower at leader epoch 1 asks a leader still at epoch 0: UNKNOWN_LEADER_EPOCH,
    retried every replica.fetch.backoff.ms (the leader is behind on metadata), the log
    untouched; a partition whose local epoch moved on is parked (Kafka's onPartitionFenced)."""
    async def main():
        async with MiniBroker(data_dir=tmp_path / "leader") as leader:
            topic_id = await create_topic(leader)
            follower = Follower(tmp_path / "follower", topic_id, leader)
            follower.log.append_replicated(batch(0, 0, 1))  # an epoch to ask OffsetForLeaderEpoch about
            follower.partition.apply_registration(PartitionRegistration(
                replicas=(0, FOLLOWER), isr=(0, FOLLOWER), leader=0, leader_epoch=1, partition_epoch=1), 0)
            try:
                with caplog.at_level(logging.DEBUG, logger="minibroker.cluster"):
                    follower.manager.set_targets([FetchTarget(topic=TOPIC, topic_id=topic_id, index=0, leader=0,
                                                              leader_epoch=1)])
                    deadline = time.monotonic() + 10
                    while sum(f"error {UnknownLeaderEpochError.code}; retrying" in r.getMessage() for r in caplog.records) < 3:
                        assert time.monotonic() < deadline
                        await asyncio.sleep(0.02)
                fetching = follower.manager.fetchers[0].targets[(topic_id, 0)]
                assert not fetching.parked and follower.log.log_end_offset == 1
                # The old target (epoch 0) no longer matches the replica's epoch 1: parked.
                follower.manager.set_targets([follower.target])
                deadline = time.monotonic() + 10
                while not follower.manager.fetchers[0].targets[(topic_id, 0)].parked:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.02)
            finally:
                await follower.close()
    run(main())


def test_a_fetcher_left_without_partitions_ends_even_when_its_cancel_meets_its_wake_up(tmp_path, caplog):
    """Issue 13, step 2, item 6 (seen as a MiniCluster.kill that never returned under the
    pipeline's traffic): a fetcher waiting out a backoff sleeps in ``asyncio.wait_for`` on its
    wake-up event. Removing its last partition sets that event and cancels the task in one
    go; Python 3.11's ``wait_for`` then returns the event's result and drops the cancel
    (CPython gh-86296), and the fetcher ran on. It must end (Kafka's
    shutdownIdleFetcherThreads), and so must every fetcher that close() stops."""
    async def main():
        async with MiniBroker(data_dir=tmp_path / "leader") as leader:
            topic_id = await create_topic(leader)
            follower = Follower(tmp_path / "follower", topic_id, leader, backoff_ms=10_000)
            follower.log.append_replicated(batch(0, 0, 1))
            follower.partition.apply_registration(PartitionRegistration(
                replicas=(0, FOLLOWER), isr=(0, FOLLOWER), leader=0, leader_epoch=1, partition_epoch=1), 0)
            try:
                with caplog.at_level(logging.DEBUG, logger="minibroker.cluster"):
                    follower.manager.set_targets([FetchTarget(topic=TOPIC, topic_id=topic_id, index=0, leader=0,
                                                              leader_epoch=1)])
                    deadline = time.monotonic() + 10
                    while not any(f"error {UnknownLeaderEpochError.code}; retrying" in r.getMessage()
                                  for r in caplog.records):
                        assert time.monotonic() < deadline
                        await asyncio.sleep(0.02)
                fetcher = follower.manager.fetchers[0]  # now waiting out its 10 s backoff
                follower.manager.remove([(topic_id, 0)])
                deadline = time.monotonic() + 5
                while not fetcher.task.done():
                    assert time.monotonic() < deadline, "the idle fetcher still runs after its cancel"
                    await asyncio.sleep(0.02)
            finally:
                await follower.close()
    run(main())
