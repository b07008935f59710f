"""minibroker.log: segments, indexes, reads, retention, DeleteRecords and compaction.

Most behaviour tests run twice, on a log in memory and on one in a temporary directory:
the handlers see the same log either way. File-format tests decode the files with
struct, following Kafka's OffsetIndex / TimeIndex / LogSegment rules independently of the
code under test. Recovery after damage and crashes is in test_recovery.py.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from kproto.errors import OffsetOutOfRangeError
from kproto.records import BatchBuilder, decode_record_set, empty_batch, read_batches
from minibroker.log import LogConfig, LogSlice, PartitionLog
from minibroker.log.partition import CHECKPOINT_FILE

# -- helpers ---------------------------------------------------------------------------


def make_batch(records, *, compression=0, producer_id=-1, producer_epoch=-1, base_sequence=-1):
    """A producer's batch: ``records`` are ``(timestamp, key, value)``."""
    builder = BatchBuilder(2, compression, producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence)
    for ts, key, value in records:
        builder.append(ts, key, value)
    return builder.build()


def append(plog, records, **kw):
    """Append one batch the way the produce handler does; returns its base offset."""
    data = make_batch(records, **kw)
    return plog.append(data, last_offset_delta=len(records) - 1,
                       max_timestamp=max(ts for ts, _, _ in records), leader_epoch=3)


def stored(data: bytes, base: int, epoch: int = 3) -> bytes:
    """What the log stores for ``data`` appended at ``base``: offset and epoch patched."""
    out = bytearray(data)
    struct.pack_into(">q", out, 0, base)
    struct.pack_into(">i", out, 12, epoch)
    return bytes(out)


def fill(plog, batches=30, per_batch=3, key_space=None, t0=1_000):
    """Append ``batches`` batches; returns the list of (base, stored bytes)."""
    out = []
    for i in range(batches):
        recs = [(t0 + 10 * i + j, (b"k%d" % ((i * per_batch + j) % key_space)) if key_space else b"k%d" % i,
                 b"value-%d-%d" % (i, j)) for j in range(per_batch)]
        data = make_batch(recs)
        base = plog.append(data, last_offset_delta=per_batch - 1, max_timestamp=t0 + 10 * i + per_batch - 1, leader_epoch=3)
        out.append((base, stored(data, base)))
    return out


def all_records(plog):
    return decode_record_set(plog.read(0, 1 << 30))[0]


@pytest.fixture(params=["memory", "disk"])
def open_log(request, tmp_path):
    """A factory of logs in the parametrized mode: ``open_log(**LogConfig fields)``."""

    opened = []

    def factory(clock=None, **config):
        directory = tmp_path / "topic-0" if request.param == "disk" else None
        plog = PartitionLog(directory, config=LogConfig(**config), clock=clock)
        opened.append(plog)
        return plog

    factory.mode = request.param
    yield factory
    for plog in opened:
        plog.close()


def test_default_constructor_is_in_memory_with_kafka_defaults():
    plog = PartitionLog()
    assert plog.directory is None
    assert plog.config == LogConfig()
    assert LogConfig().segment_bytes == 1073741824 and LogConfig().retention_ms == 604800000
    assert LogConfig().flush_interval_messages == 2**63 - 1 and LogConfig().index_interval_bytes == 4096
    assert (plog.log_start_offset, plog.log_end_offset, plog.high_watermark) == (0, 0, 0)
    assert plog.read(0, 100) == b""
    assert plog.offset_for_timestamp(0) is None and plog.max_timestamp_offset() is None


# -- append and read ---------------------------------------------------------------------


def test_round_trip_across_segments(open_log):
    plog = open_log(segment_bytes=400, index_interval_bytes=100)
    written = fill(plog, batches=40)
    assert len(plog.segments) > 5
    assert plog.log_end_offset == plog.high_watermark == 120
    assert plog.read(0, 1 << 30) == b"".join(data for _, data in written)
    records = all_records(plog)
    assert [r.offset for r in records] == list(range(120))
    assert records[50].value == b"value-16-2"
    # Every segment starts where the previous one ended.
    bases = [s.base_offset for s in plog.segments]
    assert bases == sorted(bases) and bases[0] == 0
    assert all(s.size <= 400 for s in plog.segments)


def test_a_batch_given_as_a_view_into_a_request_is_stored_stamped_and_left_untouched(open_log):
    """Issue 16 (broker produce): the Produce handler hands the log a memoryview into the
    request frame; the log writes the base offset and leader epoch into its own 16-byte
    head and the records as they are, so the stored batch is the stamped one (CRC still
    right) and the request's bytes are not changed."""
    plog = open_log()
    append(plog, [(1_000, b"k", b"first")])
    data = make_batch([(2_000, b"k%d" % i, b"v%d" % i) for i in range(50)])
    frame = b"request header" + data + b"next partition"
    view = memoryview(frame)[14:14 + len(data)]
    assert plog.append(view, last_offset_delta=49, max_timestamp=2_000, leader_epoch=3) == 1
    assert frame == b"request header" + data + b"next partition"
    assert plog.read(1, 1 << 20) == stored(data, 1)
    assert [r.offset for r in all_records(plog)] == list(range(51))  # CRCs checked
    plog.close()


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 37, 38, 59, 119])
def test_read_from_any_offset_starts_with_the_batch_holding_it(open_log, offset):
    plog = open_log(segment_bytes=400, index_interval_bytes=100)
    written = fill(plog, batches=40)
    data = plog.read(offset, 1 << 30)
    first = next(read_batches(data))
    assert first.base_offset <= offset <= first.last_offset
    # Clients drop the records before the fetch offset.
    assert decode_record_set(data, offset)[0][0].offset == offset
    assert data == b"".join(d for base, d in written if base + 2 >= offset)


def test_max_bytes_and_at_least_one(open_log):
    plog = open_log(segment_bytes=400, index_interval_bytes=100)
    written = fill(plog, batches=40)
    size = len(written[0][1])
    assert plog.read(0, 1) == written[0][1]  # KIP-74: one batch even when too big
    assert plog.read(0, 1, at_least_one=False) == b""
    assert plog.read(0, 0, at_least_one=False) == b""
    assert plog.read(0, size) == written[0][1]
    assert plog.read(0, 2 * size - 1) == written[0][1]
    assert plog.read(4, 3 * size) == b"".join(d for _, d in written[1:4])
    # Across a segment boundary, whole batches only.
    second_base = plog.segments[1].base_offset
    i = next(i for i, (b, _) in enumerate(written) if b == second_base)
    assert plog.read(written[i - 1][0], 2 * size + 5) == written[i - 1][1] + written[i][1]
    # Nothing at or past the end.
    assert plog.read(120, 1000) == b"" and plog.read(500, 1000) == b""


def test_read_slices_match_read_and_serve_sendfile(open_log, tmp_path):
    plog = open_log(segment_bytes=400, index_interval_bytes=100)
    fill(plog, batches=40)
    slices = plog.read_slices(7, 1000)
    assert all(isinstance(s, LogSlice) for s in slices)
    assert b"".join(s.tobytes() for s in slices) == plog.read(7, 1000)
    assert len(slices) >= 2  # 1000 bytes span segments of <= 400
    if open_log.mode == "disk":
        out_path = tmp_path / "sent"
        with open(out_path, "wb") as out:
            for source, position, length in slices:
                sent = 0
                while sent < length:
                    sent += os.sendfile(out.fileno(), source.fileno(), position + sent, length - sent)
        assert out_path.read_bytes() == plog.read(7, 1000)
    else:
        assert all(isinstance(s.source, bytes) for s in slices)


def test_slices_outlive_deleted_segments(tmp_path):
    plog = PartitionLog(tmp_path / "t-0", config=LogConfig(segment_bytes=400))
    fill(plog, batches=20)
    slices = plog.read_slices(0, 350)
    expected = b"".join(s.tobytes() for s in slices)
    plog.delete_records(plog.segments[2].base_offset)
    assert not (tmp_path / "t-0" / "00000000000000000000.log").exists()
    assert b"".join(s.tobytes() for s in slices) == expected
    plog.close()


def test_roll_by_size_time_and_clock(open_log):
    plog = open_log(segment_bytes=10_000, segment_ms=1_000)
    append(plog, [(5_000, b"a", b"1")])
    append(plog, [(5_900, b"a", b"2")])
    assert len(plog.segments) == 1
    # Kafka measures from the segment's first batch timestamp to the new batch's.
    append(plog, [(6_001, b"a", b"3")])
    assert [s.base_offset for s in plog.segments] == [0, 2]
    # Without timestamps (-1) the clock since the segment's creation decides.
    now = [100_000]
    plog = open_log(segment_bytes=10_000, segment_ms=1_000, clock=lambda: now[0])
    append(plog, [(-1, b"a", b"1")])
    now[0] += 999
    append(plog, [(-1, b"a", b"2")])
    now[0] += 2
    append(plog, [(-1, b"a", b"3")])
    assert [s.base_offset for s in plog.segments] == [0, 2]


def test_a_batch_larger_than_a_segment_gets_its_own(open_log):
    plog = open_log(segment_bytes=200)
    append(plog, [(1, b"k", b"x" * 50)])
    append(plog, [(2, b"k", b"y" * 500)])
    append(plog, [(3, b"k", b"z")])
    assert [s.base_offset for s in plog.segments] == [0, 1, 2]
    assert [r.value[:1] for r in all_records(plog)] == [b"x", b"y", b"z"]


# -- timestamps ----------------------------------------------------------------------------


def test_offset_for_timestamp_matches_a_scan_of_every_record(open_log):
    plog = open_log(segment_bytes=500, index_interval_bytes=120)
    # Timestamps go up and down, as producers' clocks do.
    stamps = [1000, 1010, 990, 1050, 1040, 1100, 1100, 1095, 1200, 1150, 1300, 1250] * 4
    stamps = [ts + 1000 * (i // 12) for i, ts in enumerate(stamps)]
    for i in range(0, len(stamps), 2):
        append(plog, [(stamps[i], b"k", b"a"), (stamps[i + 1], b"k", b"b")])
    assert len(plog.segments) > 2 and any(len(s.time_index) > 1 for s in plog.segments)
    for target in range(900, max(stamps) + 20, 7):
        expected = next(((o, ts) for o, ts in enumerate(stamps) if ts >= target), None)
        assert plog.offset_for_timestamp(target) == expected, target
    top = max(stamps)
    assert plog.max_timestamp_offset() == (stamps.index(top), top)


def test_offset_for_timestamp_ignores_records_below_the_log_start(open_log):
    plog = open_log()
    for i in range(5):
        append(plog, [(100 + i, b"k", b"v")])
    plog.delete_records(3)
    assert plog.offset_for_timestamp(0) == (3, 103)


# -- file layout (Kafka's format) ---------------------------------------------------------


def decode_offset_index(path: Path):
    data = path.read_bytes()
    assert len(data) % 8 == 0  # exact size: no preallocated tail
    return list(struct.iter_unpack(">ii", data))  # relativeOffset, position


def decode_time_index(path: Path):
    data = path.read_bytes()
    assert len(data) % 12 == 0
    return list(struct.iter_unpack(">qi", data))  # timestamp, relativeOffset


def expected_indexes(log_bytes: bytes, base: int, interval: int, final: bool):
    """Kafka's LogSegment.append index rules, applied to a .log's batches."""
    offsets, times = [], []
    max_ts, max_ts_offset, last_indexed, position = -1, base, 0, 0
    for batch in read_batches(log_bytes):
        if batch.max_timestamp > max_ts:
            max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
        if position - last_indexed > interval:
            offsets.append((batch.last_offset - base, position))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_ts_offset - base))
            last_indexed = position
        position += batch.size
    if final and max_ts >= 0 and (not times or max_ts > times[-1][0]):
        times.append((max_ts, max_ts_offset - base))  # onBecomeInactiveSegment
    return offsets, times


def verify_like_dump_log_segments(log_path: Path) -> None:
    """The checks Kafka's ``kafka-dump-log.sh --verify-index-only`` makes (DumpLogSegments
    ``dumpIndex`` / ``dumpTimeIndex``), written out here since no Kafka runs in the tests.

    Offset index: the batch at each entry's position ends at the entry's offset. Time
    index: the offset index's position for the entry's offset leads to a batch ending at
    that offset whose largest record timestamp is the entry's; timestamps increase.
    """
    base = int(log_path.stem)
    log_bytes = log_path.read_bytes()
    index = decode_offset_index(log_path.with_suffix(".index"))
    for relative, position in index:
        assert next(read_batches(log_bytes[position:])).last_offset == base + relative
    previous = -1
    for timestamp, relative in decode_time_index(log_path.with_suffix(".timeindex")):
        offset = base + relative
        position = max((p for r, p in index if base + r <= offset), default=0)  # OffsetIndex.lookup
        batch = next(b for b in read_batches(log_bytes[position:]) if b.last_offset >= offset)
        assert batch.last_offset == offset
        records = batch.records()
        if records:  # an empty batch left by the cleaner keeps only its header's timestamp, in Kafka too
            assert max(r.timestamp for r in records) == timestamp
        assert timestamp > previous
        previous = timestamp


def test_files_are_kafkas_layout(tmp_path):
    directory = tmp_path / "orders-3"
    plog = PartitionLog(directory, config=LogConfig(segment_bytes=1_000, index_interval_bytes=150))
    written = fill(plog, batches=60)
    names = sorted(p.name for p in directory.iterdir())
    bases = [s.base_offset for s in plog.segments]
    assert names == sorted(f"{b:020d}{ext}" for b in bases for ext in (".log", ".index", ".timeindex"))
    by_base = dict(written)
    for i, segment in enumerate(plog.segments):
        stem = directory / f"{segment.base_offset:020d}"
        log_bytes = (stem.with_suffix(".log")).read_bytes()
        end = bases[i + 1] if i + 1 < len(bases) else plog.log_end_offset
        # The .log is the stored batches back to back, the same bytes Fetch returns.
        assert log_bytes == b"".join(d for b, d in written if segment.base_offset <= b < end)
        assert log_bytes == plog.read(segment.base_offset, len(log_bytes))
        offsets, times = expected_indexes(log_bytes, segment.base_offset, 150, final=i + 1 < len(bases))
        assert decode_offset_index(stem.with_suffix(".index")) == offsets
        assert decode_time_index(stem.with_suffix(".timeindex")) == times
        assert offsets, "segments of 1000 bytes with a 150-byte interval have index entries"
        for relative, position in offsets:
            batch = next(read_batches(log_bytes[position:]))
            assert batch.last_offset == segment.base_offset + relative
            assert by_base[batch.base_offset] == log_bytes[position : position + batch.size]
        assert [ts for ts, _ in times] == sorted({ts for ts, _ in times})
        verify_like_dump_log_segments(stem.with_suffix(".log"))
    plog.close()
    # Closing adds the active segment's final time index entry, as Kafka's close does.
    last = plog.segments[-1]
    stem = directory / f"{last.base_offset:020d}"
    assert decode_time_index(stem.with_suffix(".timeindex"))[-1] == (last.max_timestamp, last.offset_of_max_timestamp - last.base_offset)


def test_reopen_gives_the_same_log(tmp_path):
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=700, index_interval_bytes=100)
    plog = PartitionLog(directory, config=config)
    fill(plog, batches=50)
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    snapshot = (plog.log_start_offset, plog.log_end_offset, [s.base_offset for s in plog.segments],
                plog.read(0, 1 << 30), plog.read(77, 500), plog.offset_for_timestamp(1234), plog.max_timestamp_offset())
    plog.close()
    reopened = PartitionLog(directory, config=config)
    assert (reopened.log_start_offset, reopened.log_end_offset, [s.base_offset for s in reopened.segments],
            reopened.read(0, 1 << 30), reopened.read(77, 500), reopened.offset_for_timestamp(1234),
            reopened.max_timestamp_offset()) == snapshot
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == {**before, **{
        n: (directory / n).read_bytes() for n in before if n.endswith(".timeindex")}}
    assert append(reopened, [(9_999, b"k", b"after")]) == 150
    reopened.close()
    again = PartitionLog(directory, config=config)
    assert all_records(again)[-1].value == b"after" and again.log_end_offset == 151
    again.close()


# -- flush policy ----------------------------------------------------------------------


def test_flush_interval_messages(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    plog = PartitionLog(tmp_path / "t-0", config=LogConfig(flush_interval_messages=5))
    synced.clear()
    append(plog, [(1, b"k", b"v")] * 3)
    assert plog.recovery_point == 0 and not synced
    append(plog, [(1, b"k", b"v")] * 2)  # 5 records: flush
    assert plog.recovery_point == 5 and synced
    synced.clear()
    append(plog, [(1, b"k", b"v")])
    assert plog.recovery_point == 5 and not synced
    plog.flush()
    assert plog.recovery_point == 6 and synced
    plog.close()
    memory = PartitionLog()
    append(memory, [(1, b"k", b"v")])
    assert memory.recovery_point == 1


# -- retention and DeleteRecords -------------------------------------------------------


def test_retention_by_time_deletes_whole_old_segments(open_log):
    plog = open_log(segment_bytes=400, retention_ms=1_000)
    fill(plog, batches=30, t0=10_000)  # batch i has timestamps 10_000 + 10 i ...
    segments = list(plog.segments)
    cutoff = segments[3].max_timestamp  # everything up to segment 3 is older than now - 1000
    deleted = plog.apply_retention(now_ms=cutoff + 1_001)
    assert deleted == 4
    assert plog.segments[0] is segments[4]
    assert plog.log_start_offset == segments[4].base_offset
    assert all_records(plog)[0].offset == segments[4].base_offset
    # The active segment stays even when all of it has expired.
    assert plog.apply_retention(now_ms=10**12) == len(segments) - 5
    assert len(plog.segments) == 1 and plog.log_start_offset == plog.segments[0].base_offset
    assert plog.log_end_offset == 90
    if open_log.mode == "disk":
        assert sorted(p.name for p in plog.directory.iterdir() if p.suffix == ".log") == [f"{plog.segments[0].base_offset:020d}.log"]


def test_retention_by_bytes(open_log):
    plog = open_log(segment_bytes=400, retention_bytes=1_000, retention_ms=-1)
    fill(plog, batches=30)
    before = plog.size_in_bytes
    assert plog.apply_retention(now_ms=10**12) > 0
    # Kafka's rule: a segment goes only if the log stays at or above retention.bytes
    # without it, so the log ends between the limit and the limit plus one segment.
    assert 1_000 <= plog.size_in_bytes < before
    assert plog.size_in_bytes - plog.segments[0].size < 1_000
    assert plog.log_start_offset == plog.segments[0].base_offset


def test_compact_only_policy_keeps_old_segments(open_log):
    plog = open_log(segment_bytes=400, retention_ms=1, cleanup_policy="compact")
    fill(plog, batches=20)
    assert plog.apply_retention(now_ms=10**12) == 0


def test_delete_records(open_log, tmp_path):
    plog = open_log(segment_bytes=400)
    fill(plog, batches=30)
    second = plog.segments[1].base_offset
    assert plog.delete_records(5) == 5
    assert plog.log_start_offset == 5 and plog.segments[0].base_offset == 0  # inside segment 0
    assert plog.delete_records(2) == 5  # never backwards
    assert plog.delete_records(second + 1) == second + 1
    assert plog.segments[0].base_offset == second
    assert plog.offset_for_timestamp(0)[0] == second + 1
    with pytest.raises(OffsetOutOfRangeError):
        plog.delete_records(91)
    assert plog.delete_records(-1) == 90  # -1: the high watermark
    assert len(plog.segments) == 1 and plog.log_end_offset == 90
    assert append(plog, [(1, b"k", b"v")]) == 90
    if open_log.mode == "disk":
        text = (plog.directory / CHECKPOINT_FILE).read_text()
        assert text == "0\n1\ntopic 0 90\n"


def test_log_start_offset_survives_reopen(tmp_path):
    plog = PartitionLog(tmp_path / "t-0", config=LogConfig(segment_bytes=400))
    fill(plog, batches=30)
    plog.delete_records(17)
    plog.close()
    reopened = PartitionLog(tmp_path / "t-0", config=LogConfig(segment_bytes=400))
    assert reopened.log_start_offset == 17 and reopened.log_end_offset == 90
    reopened.close()


# -- compaction ------------------------------------------------------------------------


def records_of(plog):
    return [(r.offset, r.key, r.value) for r in all_records(plog)]


def test_compaction_keeps_the_last_value_per_key(open_log):
    plog = open_log(segment_bytes=300, cleanup_policy="compact", delete_retention_ms=1_000)
    history = []
    for i in range(40):
        recs = [(1_000 + i, b"key-%d" % ((3 * i + j) % 7), b"v%d.%d" % (i, j)) for j in range(3)]
        base = append(plog, recs)
        history += [(base + j, k, v) for j, (_, k, v) in enumerate(recs)]
    active = plog.segments[-1]
    active_bytes = plog.read(active.base_offset, 1 << 30)
    end = plog.log_end_offset
    inactive = len(plog.segments) - 1
    stats = plog.compact(now_ms=2_000)
    assert stats.segments_cleaned == inactive and stats.records_kept < stats.records_read
    cleanable_end = active.base_offset
    last = {}
    for offset, key, _ in history:
        if offset < cleanable_end:
            last[key] = offset
    expected = [(o, k, v) for o, k, v in history if o >= cleanable_end or last[k] == o]
    assert records_of(plog) == expected
    # Offsets are unchanged, with gaps; the log end and the active segment are untouched.
    assert plog.log_end_offset == end and plog.segments[-1] is active
    assert plog.read(active.base_offset, 1 << 30) == active_bytes
    # Batches still cover their original ranges, so reading the whole log advances to the end.
    assert decode_record_set(plog.read(0, 1 << 30))[1] == end
    # A second pass merges the shrunken segments and keeps the same records.
    before = len(plog.segments)
    plog.compact(now_ms=2_000)
    assert len(plog.segments) < before and records_of(plog) == expected


def test_compaction_drops_tombstones_after_delete_retention(open_log):
    plog = open_log(segment_bytes=200, cleanup_policy="compact", delete_retention_ms=1_000)
    append(plog, [(1_000, b"a", b"1"), (1_000, b"b", b"1")])
    append(plog, [(5_000, b"a", None)])  # a tombstone, produced at t=5000
    append(plog, [(5_000, b"c", b"x" * 150)])
    append(plog, [(9_000, b"z", b"active")])  # rolls: the active segment
    assert len(plog.segments) >= 3
    plog.compact(now_ms=5_500)  # tombstone 500 ms old: kept, and hides the old "a"
    assert [(k, v) for _, k, v in records_of(plog)] == [(b"b", b"1"), (b"a", None), (b"c", b"x" * 150), (b"z", b"active")]
    plog.compact(now_ms=6_001)  # now older than delete.retention.ms: gone
    assert [(k, v) for _, k, v in records_of(plog)] == [(b"b", b"1"), (b"c", b"x" * 150), (b"z", b"active")]
    assert plog.log_end_offset == 5


def test_compaction_preserves_batch_fields_and_empty_batches(open_log):
    plog = open_log(segment_bytes=250, cleanup_policy="compact")
    append(plog, [(10, b"k", b"old"), (11, b"j", b"old"), (12, b"k", b"mid")], producer_id=7, producer_epoch=2, base_sequence=0)
    append(plog, [(20, b"j", b"new"), (21, b"k", b"new")], producer_id=8, producer_epoch=0, base_sequence=0)
    append(plog, [(30, b"j", b"newer" * 40)] * 2, compression=1)  # gzip (it shrinks), no producer
    append(plog, [(40, b"x", b"y" * 200)])
    append(plog, [(50, b"active", b"v")])
    plog.compact(now_ms=100)
    data = plog.read(0, 1 << 30)
    batches = list(read_batches(data))
    # Batch 0 (producer 7) lost every record but is the last batch of producer 7: kept empty,
    # with its offsets and sequence fields, as Kafka's RETAIN_EMPTY.
    b0 = batches[0]
    assert (b0.base_offset, b0.last_offset, b0.records_count, b0.producer_id, b0.producer_epoch, b0.base_sequence) == (0, 2, 0, 7, 2, 0)
    assert b0.records() == []
    # Batch 1 keeps its last record only, at offset 4, lastOffsetDelta unchanged.
    b1 = batches[1]
    assert (b1.base_offset, b1.last_offset, b1.producer_id, b1.base_sequence) == (3, 4, 8, 0)
    assert [(r.offset, r.key, r.value) for r in b1.records()] == [(4, b"k", b"new")]
    # Batch 2: same key twice: the second survives, still compressed, offsets kept.
    b2 = batches[2]
    assert (b2.base_offset, b2.last_offset, b2.compression) == (5, 6, 1)
    assert [(r.offset, r.value) for r in b2.records()] == [(6, b"newer" * 40)]
    assert decode_record_set(data)[1] == plog.log_end_offset == 9
    assert empty_batch(b0) == data[: b0.size]


def test_compaction_keeps_an_empty_batch_at_the_end_of_each_group(open_log):
    plog = open_log(segment_bytes=150, cleanup_policy="compact")
    append(plog, [(1, b"k", b"v1")])
    append(plog, [(2, b"k", b"v2")])
    append(plog, [(3, b"k", b"v3" * 60)])  # rolls; the last value of k
    append(plog, [(4, b"other", b"x" * 120)])  # rolls again: active
    plog.compact(now_ms=10)
    batches = list(read_batches(plog.read(0, 1 << 30)))
    # The first group lost all its records; its last batch stays, empty, so its offsets
    # are still accounted for in its files.
    assert [(b.base_offset, b.records_count) for b in batches][-2:] == [(2, 1), (3, 1)]
    assert any(b.records_count == 0 for b in batches)
    assert decode_record_set(plog.read(0, 1 << 30))[1] == 4


def test_compacted_files_decode_and_reopen(tmp_path):
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=300, cleanup_policy="compact", index_interval_bytes=64)
    plog = PartitionLog(directory, config=config)
    for i in range(40):
        append(plog, [(i, b"key-%d" % (i % 5), b"v%d" % i), (i, b"key-%d" % ((i + 2) % 5), b"w%d" % i)])
    plog.compact(now_ms=100)
    expected = records_of(plog)
    files = {}
    for segment in plog.segments:
        path = directory / f"{segment.base_offset:020d}.log"
        files[path.name] = path.read_bytes()
        records, next_offset, whole = decode_record_set(path.read_bytes())
        assert whole == len(path.read_bytes())
        offsets, times = expected_indexes(path.read_bytes(), segment.base_offset, 64, final=segment is not plog.segments[-1])
        assert decode_offset_index(path.with_suffix(".index")) == offsets
        assert decode_time_index(path.with_suffix(".timeindex")) == times
        verify_like_dump_log_segments(path)
    assert not [p for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    plog.close()
    reopened = PartitionLog(directory, config=config)
    assert records_of(reopened) == expected
    reopened.close()


# -- config ----------------------------------------------------------------------------


def test_log_config_from_kafka_names():
    config = LogConfig.from_configs({
        "log.segment.bytes": "1000", "segment.bytes": 2000, "log.retention.hours": 1,
        "log.retention.minutes": 2, "cleanup.policy": "compact,delete", "flush.messages": 1,
        "retention.bytes": -1, "max.message.bytes": 5,
    })
    assert config.segment_bytes == 2000  # the topic's setting wins
    assert config.retention_ms == 120_000  # minutes beat hours, ms beat both
    assert config.compact and config.delete and config.flush_interval_messages == 1
    with pytest.raises(ValueError):
        LogConfig(cleanup_policy="shred")
    with pytest.raises(ValueError):
        LogConfig(segment_bytes=2**31)
