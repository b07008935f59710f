"""kproto's consumer on a replicated MiniCluster (issue 13 step 2, items 4.2 and 4.4): it
follows a leader across a kill without losing records (at-least-once; assign and group),
and it notices a log truncated under its position by an unclean election (KIP-320):
LogTruncationError with ``auto.offset.reset=none``, back to the divergence point otherwise.
Every test waits for states (leaders, ISR, records), never for a time."""

import time

import pytest

from kproto import Consumer, Producer
from kproto.errors import LogTruncationError
from kproto.structs import OffsetAndMetadata, TopicPartition
from tests.minibroker.cluster.conftest import produce_raw

TOPIC = "t"
N = 120


def _poll_until(consumer, want, seen, timeout=30.0):
    """Poll into ``seen`` (values) until it holds ``want`` distinct values."""
    deadline = time.monotonic() + timeout
    while len(set(seen)) < want and time.monotonic() < deadline:
        seen += [int(r.value) for r in consumer.poll(0.5)]
    assert len(set(seen)) >= want, f"read {len(set(seen))} of {want}"


def _produce(cluster, start, stop, partitions):
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=1) as producer:
        for i in range(start, stop):
            producer.send(TOPIC, b"%d" % i, partition=i % partitions)
        producer.flush(30)


@pytest.mark.parametrize("mode", ["assign", "group"])
def test_the_consumer_keeps_reading_across_a_leader_kill(cluster3, mode):
    """Half the records read, the leader of partition 0 killed (and, in a group, possibly
    the group coordinator too), the other half produced: every record is read, each
    partition in order (duplicates allowed: at-least-once)."""
    cluster3.create_topic(TOPIC, partitions=2, replication_factor=3, configs={"min.insync.replicas": "2"})
    for p in range(2):
        cluster3.wait_for_isr(TOPIC, p, 3)
    _produce(cluster3, 0, N // 2, 2)
    config = {"bootstrap_servers": cluster3.bootstrap_servers, "auto_offset_reset": "earliest",
              "retry_backoff_ms": 50}
    if mode == "group":
        config |= {"group_id": "g", "session_timeout_ms": 6000, "heartbeat_interval_ms": 200}
    seen: list[int] = []
    by_partition: dict[int, list[int]] = {0: [], 1: []}
    with Consumer(**config) as consumer:
        if mode == "group":
            consumer.subscribe([TOPIC])
        else:
            consumer.assign([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])

        def poll_until(want):
            deadline = time.monotonic() + 30
            while len(set(seen)) < want and time.monotonic() < deadline:
                for r in consumer.poll(0.5):
                    seen.append(int(r.value))
                    by_partition[r.partition].append(int(r.value))
            assert len(set(seen)) >= want, f"read {len(set(seen))} of {want}"

        poll_until(N // 2)
        if mode == "group":
            consumer.commit()
        leader = cluster3.leader_of(TOPIC, 0)
        cluster3.kill(leader)
        assert cluster3.wait_for_leader(TOPIC, 0, not_in=(leader,)) != leader
        _produce(cluster3, N // 2, N, 2)
        poll_until(N)
    assert set(seen) == set(range(N))
    for p, values in by_partition.items():
        firsts = list(dict.fromkeys(values))
        assert firsts == sorted(firsts) and all(v % 2 == p for v in values)


def _truncated_under_the_consumer(cluster, reset):
    """A consumer at offset 3 of a partition whose only up-to-date replicas then die, and
    an out-of-sync replica (1 record) elected uncleanly: its log is truncated under the
    consumer. Returns (consumer, partition, new leader); the consumer is open."""
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3,
                         configs={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
    cluster.wait_for_isr(TOPIC, 0, 3)
    leader = cluster.leader_of(TOPIC, 0)
    lagging, other = [r for r in cluster.describe(TOPIC)[0].replicas if r != leader]
    assert produce_raw(cluster.brokers[leader].port, TOPIC, [b"0"]) == (0, 0)
    cluster.wait_for_isr(TOPIC, 0, 3)
    cluster.kill(lagging)
    assert produce_raw(cluster.brokers[leader].port, TOPIC, [b"1", b"2"]) == (0, 1)
    tp = TopicPartition(TOPIC, 0)
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset=reset, retry_backoff_ms=50,
                        retry_backoff_max_ms=200)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen: list[int] = []
        _poll_until(consumer, 3, seen)
        assert consumer.position(tp) == 3
        cluster.kill(other)
        cluster.kill(leader)
        cluster.restart(lagging)
        assert cluster.wait_for_leader(TOPIC, 0) == lagging  # unclean: it has offset 0 only
    except BaseException:
        consumer.close()
        raise
    return consumer, tp, lagging


def test_a_log_truncated_under_the_position_raises_log_truncation_with_reset_none(cluster4):
    """KIP-320: after the leader change the consumer validates its position (OffsetForLeaderEpoch)
    and learns the log now ends at 1: LogTruncationError, with the divergent offset."""
    consumer, tp, _ = _truncated_under_the_consumer(cluster4, "none")
    with consumer:
        deadline = time.monotonic() + 30
        error = None
        while error is None and time.monotonic() < deadline:
            try:
                assert consumer.poll(0.5) == []
            except LogTruncationError as exc:
                error = exc
        assert error is not None, "no LogTruncationError"
        assert error.partitions == {tp: 3}
        divergent = error.divergent_offsets[tp]
        assert isinstance(divergent, OffsetAndMetadata) and divergent.offset == 1
        consumer.seek(tp, divergent.offset)
        assert consumer.poll(0.5) == []  # the log ends there; nothing raised any more


def test_a_log_truncated_under_the_position_goes_back_to_the_divergence_point(cluster4):
    """With a reset policy, Java's rule: the position moves to the first diverging offset,
    and records written there by the new leader are read."""
    consumer, tp, leader = _truncated_under_the_consumer(cluster4, "earliest")
    with consumer:
        assert produce_raw(cluster4.brokers[leader].port, TOPIC, [b"10"], acks=1) == (0, 1)
        seen: list[int] = []
        _poll_until(consumer, 1, seen)
        assert seen == [10] and consumer.position(tp) == 2
