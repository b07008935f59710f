"""minibroker.log recovery: torn tails, damaged indexes, a SIGKILLed writer, interrupted compaction.

Each test damages real files the way a crash would (or worse), reopens the directory and
checks that the log is the longest valid prefix, that its indexes equal the ones Kafka's
rules give, and that appends continue at the right offset.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kproto.records import decode_record_set, read_batches
from minibroker.log import LogConfig, PartitionLog
from minibroker.log import cleaner as cleaner_module
from minibroker.log.segment import LogSegment

from .test_log import (
    append,
    decode_offset_index,
    decode_time_index,
    expected_indexes,
    fill,
    verify_like_dump_log_segments,
)

CONFIG = LogConfig(segment_bytes=1_500, index_interval_bytes=100)
REPO = Path(__file__).resolve().parents[3]


def written_log(directory: Path, batches: int = 40):
    plog = PartitionLog(directory, config=CONFIG)
    written = fill(plog, batches=batches)
    assert len(plog.segments) >= 3
    plog.close()
    return written


def last_log(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def check_indexes(directory: Path, plog: PartitionLog) -> None:
    for segment in plog.segments:
        stem = directory / f"{segment.base_offset:020d}"
        offsets, times = expected_indexes(stem.with_suffix(".log").read_bytes(), segment.base_offset,
                                          CONFIG.index_interval_bytes, final=True)
        assert decode_offset_index(stem.with_suffix(".index")) == offsets
        assert decode_time_index(stem.with_suffix(".timeindex")) == times
        verify_like_dump_log_segments(stem.with_suffix(".log"))


# -- torn tails ------------------------------------------------------------------------


def _cut_mid_batch(path: Path, sizes: list[int]) -> int:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - sizes[-1] // 2])
    return len(sizes) - 1


def _cut_in_header(path: Path, sizes: list[int]) -> int:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - sizes[-1] + 7])
    return len(sizes) - 1


def _flip_byte_in_last(path: Path, sizes: list[int]) -> int:
    data = bytearray(path.read_bytes())
    data[len(data) - 3] ^= 0x55  # inside the records: the CRC-32C no longer matches
    path.write_bytes(bytes(data))
    return len(sizes) - 1


def _flip_byte_in_middle(path: Path, sizes: list[int]) -> int:
    data = bytearray(path.read_bytes())
    keep = len(sizes) // 2
    data[sum(sizes[:keep]) + 30] ^= 0x01  # the attributes..records of batch `keep`
    path.write_bytes(bytes(data))
    return keep


def _garbage(path: Path, sizes: list[int]) -> int:
    with open(path, "ab") as f:
        f.write(os.urandom(100))
    return len(sizes)


def _zeros(path: Path, sizes: list[int]) -> int:
    # What a file system may show after power loss: the size grew, the data did not land.
    with open(path, "ab") as f:
        f.write(bytes(4096))
    return len(sizes)


def _plausible_length_then_nothing(path: Path, sizes: list[int]) -> int:
    with open(path, "ab") as f:
        f.write((1234).to_bytes(8, "big") + (5000).to_bytes(4, "big"))
    return len(sizes)


@pytest.mark.parametrize("damage", [_cut_mid_batch, _cut_in_header, _flip_byte_in_last, _flip_byte_in_middle,
                                    _garbage, _zeros, _plausible_length_then_nothing])
def test_torn_tail_is_cut_to_the_last_good_batch(tmp_path, damage):
    directory = tmp_path / "t-0"
    written = written_log(directory)
    path = last_log(directory)
    base = int(path.stem)
    mine = [(b, d) for b, d in written if b >= base]
    kept = damage(path, [len(d) for _, d in mine])
    good = b"".join(d for _, d in mine[:kept])
    expected_end = mine[kept][0] if kept < len(mine) else written[-1][0] + 3

    plog = PartitionLog(directory, config=CONFIG)
    assert plog.log_end_offset == expected_end
    assert path.read_bytes() == good
    assert plog.read(base, 1 << 30) == good
    assert plog.read(0, 1 << 30) == b"".join(d for b, d in written if b < expected_end)
    check_indexes(directory, plog)
    assert append(plog, [(1, b"k", b"after")]) == expected_end
    plog.close()
    reopened = PartitionLog(directory, config=CONFIG)
    assert reopened.log_end_offset == expected_end + 1
    assert decode_record_set(reopened.read(expected_end, 1000))[0][0].value == b"after"
    reopened.close()


def test_an_emptied_active_segment_keeps_its_base_offset(tmp_path):
    directory = tmp_path / "t-0"
    written_log(directory)
    path = last_log(directory)
    path.write_bytes(b"")
    plog = PartitionLog(directory, config=CONFIG)
    assert plog.log_end_offset == int(path.stem)
    assert append(plog, [(1, b"k", b"v")]) == int(path.stem)
    plog.close()


# -- indexes ---------------------------------------------------------------------------


def _delete(path: Path) -> None:
    path.unlink()


def _partial_entry(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"\x01\x02\x03")


def _emptied(path: Path) -> None:
    path.write_bytes(b"")


def _wrong_position(path: Path) -> None:
    data = bytearray(path.read_bytes())
    if path.suffix == ".index":
        data[-1] ^= 0x04  # the last entry's position no longer starts its batch
    else:
        data[0:8] = (2**62).to_bytes(8, "big")  # timestamps no longer increase
    path.write_bytes(bytes(data))


def _out_of_order(path: Path) -> None:
    data = path.read_bytes()
    size = 8 if path.suffix == ".index" else 12
    entries = [data[i : i + size] for i in range(0, len(data), size)]
    path.write_bytes(b"".join(reversed(entries)))


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("damage", [_delete, _partial_entry, _emptied, _wrong_position, _out_of_order])
def test_damaged_index_of_an_inactive_segment_is_rebuilt(tmp_path, suffix, damage):
    directory = tmp_path / "t-0"
    written_log(directory)
    target = sorted(directory.glob(f"*{suffix}"))[1]
    original = target.read_bytes()
    assert len(original) >= 2 * (8 if suffix == ".index" else 12)
    damage(target)
    plog = PartitionLog(directory, config=CONFIG)
    assert target.read_bytes() == original
    check_indexes(directory, plog)
    assert [r.offset for r in decode_record_set(plog.read(0, 1 << 30))[0]] == list(range(120))
    plog.close()


def test_leftovers_and_orphans_are_removed(tmp_path):
    directory = tmp_path / "t-0"
    written_log(directory)
    junk = ["00000000000000099999.index", "00000000000000099999.timeindex",
            "00000000000000000000.log.cleaned", "00000000000000000000.index.swap",
            "00000000000000000042.log.deleted"]
    for name in junk:
        (directory / name).write_bytes(b"junk")
    (directory / "leader-epoch-checkpoint").write_text("0\n0\n")  # not ours: left alone
    plog = PartitionLog(directory, config=CONFIG)
    assert not any((directory / name).exists() for name in junk)
    assert (directory / "leader-epoch-checkpoint").exists()
    assert plog.log_end_offset == 120
    plog.close()


# -- a writer killed with SIGKILL ------------------------------------------------------------

_WRITER = textwrap.dedent("""
    import sys
    from kproto.records import BatchBuilder
    from minibroker.log import LogConfig, PartitionLog

    plog = PartitionLog(sys.argv[1], config=LogConfig(
        segment_bytes=20_000, index_interval_bytes=512, flush_interval_messages=int(sys.argv[2])))
    i = 0
    while True:
        builder = BatchBuilder()
        for j in range(4):
            builder.append(1_000 + i, b"key-%d" % i, b"value-%d-%d:" % (i, j) * 40)
        base = plog.append(builder.build(), last_offset_delta=3, max_timestamp=1_000 + i, leader_epoch=0)
        # Acknowledged only once append (and its flush) returned.
        sys.stdout.write("%d\\n" % base)
        sys.stdout.flush()
        i += 1
""")


@pytest.mark.parametrize("flush_every", [1, 1000])
def test_sigkill_mid_append_keeps_every_acknowledged_batch(tmp_path, flush_every):
    """A process crash loses nothing acknowledged, fsync or not: the page cache survives."""
    directory = tmp_path / "t-0"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(directory), str(flush_every)],
                             stdout=subprocess.PIPE, env=env, text=True)
    acknowledged = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            acknowledged.append(int(line))
            if len(acknowledged) >= 400:
                break
        child.send_signal(signal.SIGKILL)
        acknowledged += [int(line) for line in child.stdout.read().split()]
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert len(acknowledged) >= 400

    plog = PartitionLog(directory, config=LogConfig(segment_bytes=20_000, index_interval_bytes=512))
    assert len(plog.segments) > 3
    records = decode_record_set(plog.read(0, 1 << 30))[0]
    # A consistent prefix: every offset from 0, every record as the writer made it.
    assert [r.offset for r in records] == list(range(plog.log_end_offset))
    for r in records:
        i, j = divmod(r.offset, 4)
        assert (r.key, r.value, r.timestamp) == (b"key-%d" % i, b"value-%d-%d:" % (i, j) * 40, 1_000 + i)
    assert plog.log_end_offset >= acknowledged[-1] + 4
    assert acknowledged == list(range(0, acknowledged[-1] + 1, 4))
    assert append(plog, [(1, b"k", b"after")]) == plog.log_end_offset - 1
    plog.close()


# -- interrupted compaction ------------------------------------------------------------------


def compacted_setup(directory: Path):
    config = LogConfig(segment_bytes=400, cleanup_policy="compact")
    plog = PartitionLog(directory, config=config)
    for i in range(30):
        append(plog, [(i, b"key-%d" % (i % 4), b"v%d" % i), (i, b"key-%d" % ((i + 1) % 4), b"w%d" % i)])
    return plog, config


def records_at(directory: Path, config: LogConfig):
    plog = PartitionLog(directory, config=config)
    try:
        return [(r.offset, r.key, r.value) for r in decode_record_set(plog.read(0, 1 << 30))[0]], plog.log_end_offset
    finally:
        plog.close()


def test_compaction_interrupted_before_commit_leaves_the_originals(tmp_path, monkeypatch):
    directory = tmp_path / "t-0"
    plog, config = compacted_setup(directory)
    plog.close()
    before = records_at(directory, config)
    plog = PartitionLog(directory, config=config)

    def crash(self, old, new):
        raise OSError("disk gone")

    monkeypatch.setattr(LogSegment, "rename", crash)
    with pytest.raises(OSError):
        plog.compact(now_ms=0)
    monkeypatch.undo()
    assert not list(directory.glob("*.cleaned"))  # cleaned up at once
    (directory / "00000000000000000000.log.cleaned").write_bytes(b"half-written")  # or by the next open
    assert records_at(directory, config) == before
    assert not list(directory.glob("*.cleaned"))


@pytest.mark.parametrize("crash_at", ["deleting old segments", "final rename"])
def test_compaction_interrupted_after_commit_is_completed_on_open(tmp_path, monkeypatch, crash_at):
    directory = tmp_path / "t-0"
    plog, config = compacted_setup(directory)
    # A first pass shrinks the segments, so the second one merges them into groups and
    # has old segments to delete.
    plog.compact(now_ms=0)
    # What a finished compaction gives, in a twin directory.
    twin, _ = compacted_setup(tmp_path / "twin-0")
    twin.compact(now_ms=0)
    stats = twin.compact(now_ms=0)
    assert stats.segments_cleaned > stats.groups
    twin.close()
    expected = records_at(tmp_path / "twin-0", config)

    real_rename, real_delete = LogSegment.rename, LogSegment.delete

    def rename(self, old, new):
        if crash_at == "final rename" and old == cleaner_module.SWAP:
            # Crash halfway through the renames: indexes renamed, the .log not.
            for index in (self.offset_index, self.time_index):
                index.rename(index.path.with_name(index.path.name[: -len(old)]))
            raise OSError("power cut")
        return real_rename(self, old, new)

    def delete(self):
        if crash_at == "deleting old segments":
            raise OSError("power cut")
        return real_delete(self)

    monkeypatch.setattr(LogSegment, "rename", rename)
    monkeypatch.setattr(LogSegment, "delete", delete)
    with pytest.raises(OSError):
        plog.compact(now_ms=0)
    monkeypatch.undo()
    assert list(directory.glob("*.log.swap"))
    assert records_at(directory, config) == expected
    assert not [p for p in directory.iterdir() if p.name.endswith((".swap", ".cleaned"))]
    # The completed files are the ones a finished compaction writes.
    assert sorted(p.name for p in directory.iterdir()) == sorted(p.name for p in (tmp_path / "twin-0").iterdir())
    for p in directory.iterdir():
        assert p.read_bytes() == (tmp_path / "twin-0" / p.name).read_bytes(), p.name
    assert len(list(read_batches(last_log(directory).read_bytes()))) > 0
