"""Fetch, one owner (kproto.io.fetch): the request the consumer and the Spark source send,
what each partition error asks (Java's AbstractFetch), and the read_committed batch
filter both apply (issue 12)."""

import asyncio

import pytest

from kproto.config import ClientConfig
from kproto.io import Cluster
from kproto.io.fetch import (
    Action,
    BatchFilter,
    FetchSettings,
    fetch,
    kept_batches,
    partition_action,
)
from kproto.producer import Producer
from kproto.protocol.messages import FetchResponse
from kproto.records import BatchBuilder, ControlType, build_control_batch, read_batches
from kproto.structs import TopicPartition
from minibroker import MiniBroker


def batch(base, count, producer_id=-1, transactional=False):
    builder = BatchBuilder(2, 0, base_offset=base, producer_id=producer_id,
                           producer_epoch=0 if producer_id >= 0 else -1,
                           base_sequence=0 if producer_id >= 0 else -1, is_transactional=transactional)
    for i in range(count):
        builder.append(1000 + i, None, b"v%d" % (base + i))
    return builder.build()


def marker(offset, producer_id, kind):
    return build_control_batch(kind, producer_id=producer_id, producer_epoch=0, timestamp=5, base_offset=offset)


def aborted(producer_id, first_offset):
    return FetchResponse.AbortedTransaction(producer_id=producer_id, first_offset=first_offset)


@pytest.mark.parametrize("code, action", [
    (0, Action.RECORDS), (1, Action.OUT_OF_RANGE),
    (6, Action.REFRESH), (3, Action.REFRESH), (5, Action.REFRESH), (9, Action.REFRESH), (56, Action.REFRESH),
    (74, Action.REFRESH), (78, Action.REFRESH), (100, Action.REFRESH), (103, Action.REFRESH),
    (75, Action.RETRY), (-1, Action.RETRY),
    (29, Action.RAISE), (2, Action.RAISE), (76, Action.RAISE),
], ids=lambda v: v.name if isinstance(v, Action) else str(v))
def test_each_partition_error_asks_what_javas_fetcher_does(code, action):
    """Issue 12: UNKNOWN_LEADER_EPOCH (75) is fetched again and UNSUPPORTED_COMPRESSION_TYPE
    (76) raised; the consumer had them the other way round."""
    assert partition_action(code) is action


def test_control_batches_are_never_returned_and_aborted_ones_only_under_read_uncommitted():
    log = (batch(0, 2, 1, True) + batch(2, 1, 2, True) + marker(3, 1, ControlType.ABORT)
           + marker(4, 2, ControlType.COMMIT) + batch(5, 1, 1, True))
    batches = list(read_batches(log))
    uncommitted = BatchFilter(None)
    assert [uncommitted.skip(b) for b in batches] == [False, False, True, True, False]
    committed = BatchFilter([aborted(1, 0)])
    # producer 1's transaction from offset 0 is aborted until its ABORT marker; its later one is not
    assert [committed.skip(b) for b in batches] == [True, False, True, True, False]


def test_kept_batches_ends_after_the_last_batch_read_even_a_skipped_one():
    log = batch(0, 1) + batch(1, 2, 9, True) + marker(3, 9, ControlType.ABORT)
    kept, end = kept_batches(log, BatchFilter([aborted(9, 1)]), check_crc=True)
    assert kept == batch(0, 1) and end == 4
    assert kept_batches(b"", BatchFilter(None), check_crc=True) == (b"", -1)


def test_the_request_carries_the_consumers_settings():
    settings = FetchSettings.from_config(ClientConfig("consumer", {
        "bootstrap.servers": "127.0.0.1:9", "isolation.level": "read_committed", "fetch.max.wait.ms": 250,
        "fetch.min.bytes": 7, "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 4096, "client.rack": "r1",
        "request.timeout.ms": 10000}))
    request = settings.request({TopicPartition("a", 0): 5, TopicPartition("b", 1): 9, TopicPartition("a", 2): 0})
    assert (request.max_wait_ms, request.min_bytes, request.max_bytes, request.isolation_level, request.rack_id) == (
        250, 7, 1 << 20, 1, "r1")
    assert (request.session_id, request.session_epoch) == (0, -1)  # a full fetch, no session (KIP-227)
    assert [(t.topic, [(p.partition, p.fetch_offset, p.partition_max_bytes) for p in t.partitions])
            for t in request.topics] == [("a", [(0, 5, 4096), (2, 0, 4096)]), ("b", [(1, 9, 4096)])]
    assert settings.timeout == pytest.approx(10.25)  # the broker may hold the request fetch.max.wait.ms


def test_fetch_returns_each_partitions_answer():
    tp, missing = TopicPartition("fetched", 0), TopicPartition("fetched", 5)
    with MiniBroker() as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
            for i in range(3):
                producer.send(tp.topic, b"%d" % i, partition=0)
            producer.flush()

        async def main():
            config = ClientConfig("consumer", {"bootstrap.servers": broker.bootstrap_servers})
            cluster = Cluster(config)
            try:
                await cluster.refresh([tp.topic])
                return await fetch(cluster, cluster.leader(tp.topic, 0), FetchSettings.from_config(config),
                                   {tp: 1, missing: 0})
            finally:
                await cluster.close()

        answers = asyncio.run(main())
    assert set(answers) == {tp, missing}
    assert answers[tp].error_code == 0 and answers[tp].high_watermark == 3
    assert [b.base_offset for b in read_batches(answers[tp].records)] and answers[missing].error_code == 3
