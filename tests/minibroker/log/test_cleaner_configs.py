"""The compaction topic configs, honoured as Kafka's LogCleanerManager does.

``min.cleanable.dirty.ratio`` (a log is cleaned only when its dirty share of the
cleanable bytes exceeds it), ``min.compaction.lag.ms`` (the cleanable range stops at the
first dirty segment holding a record within the lag), ``max.compaction.lag.ms`` (a log
with a dirty record older than that is cleaned whatever the ratio) and
``delete.retention.ms`` (how long tombstones stay). Each against a real PartitionLog on
disk with an injected clock, and the lags through a real MiniBroker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from kproto.records import BatchBuilder, decode_record_set
from minibroker import MiniBroker
from minibroker.log import LogConfig, PartitionLog
from minibroker.log.cleaner import cleanable
from minibroker.log.maintenance import compact
from tests.minibroker.log.test_disk_full import create_topic, fetch, produce
from tests.support.raw_client import RawClient


def keyed(key: bytes, value: bytes | None, timestamp: int) -> bytes:
    builder = BatchBuilder()
    builder.append(timestamp, key, value)
    return builder.build()


def append(plog: PartitionLog, key: bytes, value: bytes | None, timestamp: int) -> None:
    """One record in a segment of its own (the log rolls after it)."""
    plog.append(keyed(key, value, timestamp), last_offset_delta=0, max_timestamp=timestamp, leader_epoch=0)
    plog.roll()


def values(plog: PartitionLog) -> list[tuple[bytes, bytes | None]]:
    return [(r.key, r.value) for r in decode_record_set(plog.read(plog.log_start_offset, 1 << 20))[0]]


def open_log(directory, clock, **config) -> PartitionLog:
    return PartitionLog(directory, config=LogConfig(cleanup_policy="compact", segment_bytes=1000, **config),
                        clock=lambda: clock[0])


def test_min_cleanable_dirty_ratio_decides_whether_a_log_is_cleaned(tmp_path):
    """Before the fix every pass cleaned every compacted log, whatever its dirty share."""
    clock = [10_000]
    plog = open_log(tmp_path / "t-0", clock, min_cleanable_dirty_ratio=0.5)
    try:
        for i in range(10):
            append(plog, b"k%d" % i, b"v", 1_000)
        assert cleanable(plog, clock[0]).dirty_ratio == 1.0  # never cleaned: all dirty
        assert asyncio.run(compact(plog)).groups > 0
        after = cleanable(plog, clock[0])
        assert (after.first_dirty_offset, after.cleanable_bytes) == (10, 0)
        append(plog, b"k0", b"new", 1_000)  # one dirty segment in eleven: ratio ~0.09
        append(plog, b"k1", b"new", 1_000)
        ratio = cleanable(plog, clock[0]).dirty_ratio
        assert 0.1 < ratio < 0.5
        assert asyncio.run(compact(plog)).groups == 0  # not due: nothing changes
        assert len(values(plog)) == 12
        plog.config = dataclasses.replace(plog.config, min_cleanable_dirty_ratio=0.1)
        assert asyncio.run(compact(plog)).groups > 0
        assert len(values(plog)) == 10 and cleanable(plog, clock[0]).first_dirty_offset == 12
    finally:
        plog.close()


def test_min_compaction_lag_keeps_recent_records_uncompacted(tmp_path):
    """Records newer than min.compaction.lag.ms stay; the cleanable range stops at the
    first segment holding one. Before the fix the lag was stored only."""
    clock = [10_000]
    plog = open_log(tmp_path / "t-0", clock, min_compaction_lag_ms=5_000)
    try:
        append(plog, b"k", b"a", 1_000)
        append(plog, b"k", b"b", 2_000)
        append(plog, b"k", b"c", 9_000)  # within the lag at 10 000: this segment and after are left
        append(plog, b"k", b"d", 3_000)
        assert cleanable(plog, clock[0]).first_uncleanable_offset == 2
        plog.compact()
        assert values(plog) == [(b"k", b"b"), (b"k", b"c"), (b"k", b"d")]
        clock[0] = 20_000
        plog.compact()
        assert values(plog) == [(b"k", b"d")]
    finally:
        plog.close()


def test_max_compaction_lag_cleans_a_log_whatever_its_ratio(tmp_path):
    """A log whose oldest dirty batch is older than max.compaction.lag.ms is cleaned even
    though its dirty ratio never exceeds min.cleanable.dirty.ratio (1.0 here)."""
    clock = [3_000]
    plog = open_log(tmp_path / "t-0", clock, min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=5_000)
    try:
        append(plog, b"k", b"a", 1_000)
        append(plog, b"k", b"b", 2_000)
        assert asyncio.run(compact(plog)).groups == 0  # the ratio cannot exceed 1.0; the lag has not passed
        assert len(values(plog)) == 2
        clock[0] = 6_001
        assert cleanable(plog, clock[0]).max_compaction_delay_ms == 1
        assert asyncio.run(compact(plog)).groups > 0
        assert values(plog) == [(b"k", b"b")]
    finally:
        plog.close()


def test_delete_retention_keeps_tombstones_for_that_long(tmp_path):
    """A tombstone stays delete.retention.ms after its timestamp, then goes."""
    clock = [3_000]
    plog = open_log(tmp_path / "t-0", clock, delete_retention_ms=5_000)
    try:
        append(plog, b"k", b"a", 1_000)
        append(plog, b"k", None, 1_000)
        plog.compact()
        assert values(plog) == [(b"k", None)]
        clock[0] = 7_000
        assert plog.compact().tombstones_removed == 1
        assert values(plog) == []
    finally:
        plog.close()


def test_a_broker_honours_the_compaction_lags_of_each_topic(tmp_path):
    """Through a real broker (maintenance every 50 ms): a topic with a min.compaction.lag.ms
    of an hour keeps every value (before the fix it was compacted), one without is
    compacted, one with a dirty ratio it cannot exceed is compacted because of its
    max.compaction.lag.ms."""
    with MiniBroker(data_dir=tmp_path, config={"log.retention.check.interval.ms": 50}) as broker:
        client = RawClient(broker.port)
        try:
            # "eager" cleans whatever is dirty: a pass between two produces may leave a
            # dirty ratio of exactly 0.5, which Kafka's default (> 0.5) would not clean.
            configs = {"eager": {"min.cleanable.dirty.ratio": "0.01"}, "lagged": {"min.compaction.lag.ms": "3600000"},
                       "forced": {"min.cleanable.dirty.ratio": "1", "max.compaction.lag.ms": "1"}}
            for name, extra in configs.items():
                create_topic(client, name, 1, **{"cleanup.policy": "compact", "segment.bytes": "100", **extra})
            now = int(time.time() * 1000)
            for value in (b"a" * 60, b"b" * 60, b"c" * 60):  # a segment each: ~130-byte batches
                for name in configs:
                    assert produce(client, name, {0: keyed(b"k", value, now)})[0].error_code == 0

            def compacted(name: str) -> list[bytes]:
                return [r.value for r in decode_record_set(fetch(client, name, 0))[0]]

            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and (len(compacted("eager")) > 2 or len(compacted("forced")) > 2):
                time.sleep(0.05)
            assert compacted("eager") == [b"b" * 60, b"c" * 60]  # c is in the active segment
            assert compacted("forced") == [b"b" * 60, b"c" * 60]
            time.sleep(0.3)  # several more passes
            assert compacted("lagged") == [b"a" * 60, b"b" * 60, b"c" * 60]
        finally:
            client.close()
