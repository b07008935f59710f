"""Compaction of transactional data (issue 14 step 1, item 8; Kafka's
``CleanedTransactionMetadata``): aborted batches go and never shadow a committed value,
markers stay while their transaction's data does and ``delete.retention.ms`` after, the
``.txnindex`` of a cleaned segment keeps the aborts whose data it keeps, and nothing at or
past the last stable offset is cleaned."""

import asyncio
import struct
import time

import pytest

from kproto.records import read_batches
from minibroker import MiniBroker
from tests.minibroker.txn.conftest import NO_VERIFICATION
from tests.minibroker.txn.txn_wire import produce, txn_batch, write_markers

RETENTION_MS = 1000


def _call(broker, fn):
    async def run():
        return fn()
    return asyncio.run_coroutine_threadsafe(run(), broker._loop).result(10)


def _log(broker, topic):
    return broker._server.state.topics[topic].partitions[0].log


def _offsets(broker, topic):
    log = _log(broker, topic)
    return [(b.base_offset, b.is_control, b.records_count)
            for b in _call(broker, lambda: list(read_batches(log.read(0, 1 << 20))))]


def _plain(key, value):
    return txn_batch(-1, -1, -1, [value], transactional=False, key=key)


def _read_committed(broker, topic, last=8):
    """Every record a read_committed consumer gets, up to the one at ``last``."""
    ck = pytest.importorskip("confluent_kafka")
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused",
                            "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        got, deadline = [], time.monotonic() + 10
        while time.monotonic() < deadline:
            messages = consumer.consume(10, timeout=0.5)
            got += [(m.offset(), m.key(), m.value()) for m in messages if m.error() is None]
            if got and got[-1][0] == last:
                return got
        return got
    finally:
        consumer.close()


def test_compaction_removes_aborted_data_then_its_marker(tmp_path):
    with MiniBroker(data_dir=tmp_path, config=NO_VERIFICATION) as broker:
        _call(broker, lambda: broker._server.state.create_topic(
            "c", 1, {"cleanup.policy": "compact", "delete.retention.ms": str(RETENTION_MS)}))
        port = broker.port
        assert produce(port, "c", _plain(b"k1", b"v1")) == (0, 0)
        assert produce(port, "c", txn_batch(1, 0, 0, [b"aborted"], key=b"k1")) == (0, 1)
        write_markers(port, 1, 0, False, [("c", 0)])  # 2
        assert produce(port, "c", txn_batch(2, 0, 0, [b"c"], key=b"k2")) == (0, 3)
        write_markers(port, 2, 0, True, [("c", 0)])  # 4
        assert produce(port, "c", _plain(b"k5", b"x")) == (0, 5)
        log = _log(broker, "c")
        _call(broker, log.roll)
        assert produce(port, "c", txn_batch(1, 0, 1, [b"y"], key=b"k6")) == (0, 6)
        write_markers(port, 1, 0, True, [("c", 0)])  # 7
        assert produce(port, "c", txn_batch(2, 0, 1, [b"z"], key=b"k7")) == (0, 8)
        write_markers(port, 2, 0, True, [("c", 0)])  # 9
        index = tmp_path / "c-0" / "00000000000000000000.txnindex"
        entry = struct.pack(">hqqqq", 0, 1, 1, 2, 3)
        assert index.read_bytes() == entry

        now = int(time.time() * 1000)
        _call(broker, lambda: log.compact(now))
        # The aborted batch is gone; k1's committed value stays (the abort shadows nothing).
        assert [o for o, _, _ in _offsets(broker, "c")] == [0, 2, 3, 4, 5, 6, 7, 8, 9]
        assert index.read_bytes() == entry  # its data went in this cleaning: the marker and entry stay
        expected = [(0, b"k1", b"v1"), (3, b"k2", b"c"), (5, b"k5", b"x"), (6, b"k6", b"y"), (8, b"k7", b"z")]
        assert _read_committed(broker, "c") == expected

        _call(broker, lambda: log.compact(now + 1))  # the marker's data is gone: its wait starts
        assert [o for o, _, _ in _offsets(broker, "c")] == [0, 2, 3, 4, 5, 6, 7, 8, 9]
        assert not index.exists() or index.read_bytes() == b""
        _call(broker, lambda: log.compact(now + 1 + RETENTION_MS - 1))
        assert 2 in [o for o, _, _ in _offsets(broker, "c")]
        _call(broker, lambda: log.compact(now + 1 + RETENTION_MS))
        assert [o for o, _, _ in _offsets(broker, "c")] == [0, 3, 4, 5, 6, 7, 8, 9]  # the COMMIT at 4 stays
        assert _read_committed(broker, "c") == expected


def test_compaction_stops_before_an_open_transaction(broker):
    _call(broker, lambda: broker._server.state.create_topic("o", 1, {"cleanup.policy": "compact"}))
    assert produce(broker.port, "o", _plain(b"k", b"old")) == (0, 0)
    assert produce(broker.port, "o", txn_batch(3, 0, 0, [b"open"], key=b"k")) == (0, 1)
    log = _log(broker, "o")
    _call(broker, log.roll)
    assert produce(broker.port, "o", _plain(b"k", b"new")) == (0, 2)
    _call(broker, log.roll)
    assert produce(broker.port, "o", _plain(b"other", b"x")) == (0, 3)
    now = int(time.time() * 1000)
    assert _call(broker, lambda: log.compact(now)).groups == 0  # the LSO (1) is in the first segment
    assert [o for o, _, _ in _offsets(broker, "o")] == [0, 1, 2, 3]
    write_markers(broker.port, 3, 0, False, [("o", 0)])  # 4: the transaction aborts
    _call(broker, log.roll)
    _call(broker, lambda: log.compact(now))
    # k's latest committed value is at 2: 0 goes, and the aborted 1 too.
    assert [o for o, _, _ in _offsets(broker, "o")] == [2, 3, 4]


def test_a_commit_marker_in_a_later_group_than_its_data_is_kept(tmp_path):
    """issue 14 (review of step 1): a transaction whose data and COMMIT marker fall in two
    cleaner groups (a transaction across a segment roll) keeps its marker: the cleaning
    follows transactions across its groups (Kafka's one ``CleanedTransactionMetadata`` per
    ``doClean``). Dropping it left committed data without a marker, which a restart paired
    with the producer's next ABORT: read_committed then lost the committed record."""
    with MiniBroker(data_dir=tmp_path, config=NO_VERIFICATION) as broker:
        _call(broker, lambda: broker._server.state.create_topic(
            "c", 1, {"cleanup.policy": "compact", "delete.retention.ms": str(RETENTION_MS), "segment.bytes": "200"}))
        port = broker.port
        log = _log(broker, "c")
        assert produce(port, "c", txn_batch(1, 0, 0, [b"committed"], key=b"k1")) == (0, 0)
        _call(broker, log.roll)
        write_markers(port, 1, 0, True, [("c", 0)])  # 1: its COMMIT, in the next segment
        assert produce(port, "c", _plain(b"k8", b"x")) == (0, 2)
        _call(broker, log.roll)
        assert produce(port, "c", txn_batch(1, 0, 1, [b"aborted"], key=b"k2")) == (0, 3)
        write_markers(port, 1, 0, False, [("c", 0)])  # 4: ABORT of the next transaction
        _call(broker, log.roll)
        assert produce(port, "c", _plain(b"k9", b"x")) == (0, 5)
        _call(broker, log.roll)
        now = int(time.time() * 1000)
        for t in (now, now + 1, now + 2 + RETENTION_MS, now + 3 + 2 * RETENTION_MS):
            _call(broker, lambda t=t: log.compact(t))
        assert (1, True, 1) in _offsets(broker, "c")
    with MiniBroker(data_dir=tmp_path, port=port, config=NO_VERIFICATION) as broker:
        assert (0, b"k1", b"committed") in _read_committed(broker, "c", last=5)
