"""minibroker.log when a write fails: disk full, a short write, a failed roll or fsync.

Issue 10, items 1, 2 and 13a. The rule under test (Kafka's, see the theory of operation
in :mod:`minibroker.log.partition`): an append either lands whole, with its index
entries, or raises :class:`~kproto.errors.KafkaStorageError` and leaves the files and
the offsets exactly as they were; when even that undo fails, the partition goes offline
(every later append or read raises KAFKA_STORAGE_ERROR) until a reopen recovers it. An
offset is never assigned twice, and bytes that are not valid batches are never served,
also after a reopen.

Failures are injected at the file layer: ``os.pwrite``, ``os.ftruncate``, ``os.open``
and ``os.fsync`` fail for chosen files the way a full tmpfs makes them fail (a short
write, then ENOSPC). The same scenarios on a real tmpfs that fills up, through a real
broker and real clients, are in test_disk_full.py.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from kproto.errors import KafkaStorageError
from kproto.records import decode_record_set
from minibroker.log import LogConfig, PartitionLog

from .test_log import append, fill, make_batch, stored


class DiskFaults:
    """Make file operations on chosen files fail, as a full disk does.

    A rule matches files whose name ends with a suffix. ``fail_writes(suffix, partial)``
    lets ``partial`` more bytes be written to those files (one short write, as the kernel
    gives when the disk fills mid-write) and then raises ENOSPC; ``heal()`` frees the disk.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.write_budget: dict[str, int] = {}
        self.fail_truncate: set[str] = set()
        self.fail_open: set[str] = set()
        self.fail_fsync: set[str] = set()
        self.hits = 0
        real_pwrite, real_ftruncate, real_open, real_fsync = os.pwrite, os.ftruncate, os.open, os.fsync

        def pwrite(fd, data, offset):
            rule = self._match(self.write_budget, _fd_path(fd))
            if rule is None:
                return real_pwrite(fd, data, offset)
            self.hits += 1
            allowed = min(self.write_budget[rule], len(data))
            if not allowed:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.write_budget[rule] -= allowed
            return real_pwrite(fd, bytes(memoryview(data)[:allowed]), offset)

        def ftruncate(fd, length):
            if self._match(self.fail_truncate, _fd_path(fd)) is not None:
                self.hits += 1
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real_ftruncate(fd, length)

        def open_(path, flags, mode=0o777, *, dir_fd=None):
            if flags & os.O_CREAT and self._match(self.fail_open, str(path)) is not None and not os.path.exists(path):
                self.hits += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            return real_open(path, flags, mode, dir_fd=dir_fd)

        def fsync(fd):
            if self._match(self.fail_fsync, _fd_path(fd)) is not None:
                self.hits += 1
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real_fsync(fd)

        monkeypatch.setattr(os, "pwrite", pwrite)
        monkeypatch.setattr(os, "ftruncate", ftruncate)
        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "fsync", fsync)

    @staticmethod
    def _match(rules, path: str) -> str | None:
        return next((rule for rule in rules if path.endswith(rule)), None)

    def fail_writes(self, suffix: str, partial: int = 0) -> None:
        self.write_budget[suffix] = partial

    def heal(self) -> None:
        self.write_budget.clear()
        self.fail_truncate.clear()
        self.fail_open.clear()
        self.fail_fsync.clear()


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@pytest.fixture
def faults(monkeypatch):
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to tell which file a descriptor writes")
    return DiskFaults(monkeypatch)


def file_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(directory.iterdir()) if p.suffix in (".log", ".index", ".timeindex")}


def values_of(plog: PartitionLog) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value) for r in decode_record_set(plog.read(0, 1 << 30))[0]]


def test_a_failed_index_write_undoes_the_append_and_never_reuses_an_offset(tmp_path, faults):
    """Issue 10 item 1: the .log write succeeds, the .index write fails (disk full).

    Before the fix the batch stayed in the .log while the log end offset did not move, so
    the next batch got the same base offset, and recovery after a restart cut everything
    from that second batch on: acknowledged records were lost.
    """
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, config=LogConfig(index_interval_bytes=100))
    written = fill(plog, batches=6)
    before = file_sizes(directory)
    faults.fail_writes(".index")
    with pytest.raises(KafkaStorageError, match="No space left"):
        append(plog, [(5_000, b"k", b"refused")])
    assert faults.hits, "the append did not write an index entry: the test proves nothing"
    assert plog.log_end_offset == 18 and not plog.offline
    assert file_sizes(directory) == before
    assert plog.read(0, 1 << 30) == b"".join(data for _, data in written)

    faults.heal()  # space is back: the producer's retry and the next batch go on from 18
    assert append(plog, [(5_000, b"k", b"retried")]) == 18
    assert append(plog, [(5_001, b"k", b"next")]) == 19
    plog.close()

    reopened = PartitionLog(directory, config=LogConfig(index_interval_bytes=100))
    values = values_of(reopened)
    assert [o for o, _ in values] == list(range(20))
    assert values[-2:] == [(18, b"retried"), (19, b"next")]
    assert reopened.log_end_offset == 20
    reopened.close()


def test_a_failed_time_index_write_undoes_the_offset_index_entry_too(tmp_path, faults):
    """Issue 10 item 1: the offset index entry was written, the time index one was not."""
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, config=LogConfig(index_interval_bytes=100))
    fill(plog, batches=6)
    before, entries = file_sizes(directory), plog.segments[-1].offset_index.entries()
    faults.fail_writes(".timeindex", partial=5)
    with pytest.raises(KafkaStorageError):
        append(plog, [(5_000, b"k", b"refused")])
    assert faults.hits
    assert file_sizes(directory) == before and plog.segments[-1].offset_index.entries() == entries
    faults.heal()
    assert append(plog, [(5_000, b"k", b"retried")]) == 18
    plog.close()
    with PartitionLog(directory, config=LogConfig(index_interval_bytes=100)) as reopened:
        assert [o for o, _ in values_of(reopened)] == list(range(19))


def test_a_short_log_write_leaves_no_garbage_even_after_a_roll_and_a_reopen(tmp_path, faults):
    """Issue 10 item 2: the disk fills in the middle of a batch (a short write, then ENOSPC).

    Before the fix the partial batch stayed in the file past the size the segment kept in
    memory; once the segment rolled, a reopen took its size from the file and Fetch served
    the garbage between two valid batches.
    """
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=3_000, index_interval_bytes=100)
    plog = PartitionLog(directory, config=config)
    written = fill(plog, batches=6)
    before = file_sizes(directory)
    faults.fail_writes(".log", partial=700)
    with pytest.raises(KafkaStorageError):
        append(plog, [(5_000, b"k", b"x" * 1_500)])
    assert faults.hits and file_sizes(directory) == before
    faults.heal()
    # A larger batch rolls the segment: the one the write failed on becomes inactive.
    big = make_batch([(5_000, b"k", b"y" * 2_800)])
    assert plog.append(big, last_offset_delta=0, max_timestamp=5_000, leader_epoch=3) == 18
    assert len(plog.segments) == 2
    plog.close()

    with PartitionLog(directory, config=config) as reopened:
        assert reopened.read(0, 1 << 30) == b"".join(data for _, data in written) + stored(big, 18)
        assert [o for o, _ in values_of(reopened)] == list(range(19))


def _prefix_of_a_batch(good: bytes) -> bytes:
    return stored(make_batch([(9_000, b"k", b"z" * 5_000)]), 99)[:3_796]  # what a full tmpfs left


def _a_batch_again(good: bytes) -> bytes:
    return good  # item 1's orphan: a whole batch whose offsets do not follow


def _noise(good: bytes) -> bytes:
    return bytes(range(256)) * 3


def _zeros(good: bytes) -> bytes:
    return bytes(600)


@pytest.mark.parametrize("garbage", [_prefix_of_a_batch, _a_batch_again, _noise, _zeros])
def test_reopen_cuts_garbage_after_the_last_valid_batch_of_an_inactive_segment(tmp_path, garbage):
    """Issue 10 items 2 and 13a: a reopen never serves bytes that are not valid batches.

    The tail of every inactive segment (from its last offset index entry) is checked
    batch by batch, CRC and offsets included; whatever follows the last valid batch is cut.
    """
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=600, index_interval_bytes=100)
    plog = PartitionLog(directory, config=config)
    written = fill(plog, batches=20)
    end = plog.log_end_offset
    plog.close()
    first = directory / "00000000000000000000.log"
    valid_size = first.stat().st_size
    with open(first, "ab") as f:
        f.write(garbage(written[0][1]))

    with PartitionLog(directory, config=config) as reopened:
        assert reopened.read(0, 1 << 30) == b"".join(data for _, data in written)
        assert first.stat().st_size == valid_size
        assert reopened.log_end_offset == end
        assert append(reopened, [(9_000, b"k", b"after")]) == end


def test_when_the_undo_fails_too_the_partition_goes_offline_until_reopened(tmp_path, faults):
    """Issue 10 item 13a: a short write, and the truncate back fails as well (EIO).

    The segment's files then hold bytes nothing accounts for: every later append and
    read raises KAFKA_STORAGE_ERROR (Kafka takes the log dir offline), also once the disk
    works again, until a reopen recovers the log from its files.
    """
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, config=LogConfig(index_interval_bytes=100))
    written = fill(plog, batches=6)
    faults.fail_writes(".log", partial=40)
    faults.fail_truncate.add(".log")
    with pytest.raises(KafkaStorageError):
        append(plog, [(5_000, b"k", b"x" * 500)])
    assert plog.offline
    faults.heal()
    with pytest.raises(KafkaStorageError, match="offline"):
        append(plog, [(5_001, b"k", b"refused")])
    with pytest.raises(KafkaStorageError, match="offline"):
        plog.read_slices(0, 1 << 20)
    assert plog.log_end_offset == 18
    plog.close()

    with PartitionLog(directory, config=LogConfig(index_interval_bytes=100)) as reopened:
        assert not reopened.offline
        assert reopened.read(0, 1 << 30) == b"".join(data for _, data in written)
        assert append(reopened, [(5_002, b"k", b"after")]) == 18


def test_a_failed_roll_leaves_no_new_files_and_the_next_roll_works(tmp_path, faults):
    """Issue 10 item 13a: creating the next segment's files fails (disk full).

    Before the fix the new segment's .log stayed behind, so every later roll failed on
    the existing file and every later append raised.
    """
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=500, index_interval_bytes=100)
    plog = PartitionLog(directory, config=config)
    written = fill(plog, batches=4)  # 4 x 115 bytes: the next batch rolls
    segments, names = len(plog.segments), sorted(p.name for p in directory.iterdir())
    end = plog.log_end_offset
    faults.fail_open.add(f"{end:020d}.index")
    with pytest.raises(KafkaStorageError):
        fill(plog, batches=1, t0=9_000)
    assert faults.hits
    assert sorted(p.name for p in directory.iterdir()) == names and len(plog.segments) == segments
    faults.heal()
    more = fill(plog, batches=3, t0=9_000)
    assert more[0][0] == end and len(plog.segments) > segments
    plog.close()
    with PartitionLog(directory, config=config) as reopened:
        assert reopened.read(0, 1 << 30) == b"".join(data for _, data in written + more)


def test_a_failed_fsync_takes_the_partition_offline(tmp_path, faults):
    """Issue 10 item 13a: fsync failed (EIO): what reached the disk is unknown, and a
    retried fsync may report success for pages the kernel already dropped, so the
    partition goes offline (Kafka: LogDirFailureChannel) instead of going on."""
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, config=LogConfig(flush_interval_messages=1))
    written = fill(plog, batches=3)
    faults.fail_fsync.add(".log")
    with pytest.raises(KafkaStorageError):
        append(plog, [(5_000, b"k", b"maybe")])
    assert plog.offline
    faults.heal()
    with pytest.raises(KafkaStorageError):
        append(plog, [(5_001, b"k", b"refused")])
    plog.close()
    with PartitionLog(directory) as reopened:
        # The batch whose fsync failed was written: it may be there (it was never
        # acknowledged, so a producer retries it), and nothing else is.
        data = reopened.read(0, 1 << 30)
        assert data.startswith(b"".join(d for _, d in written))
        assert [o for o, _ in values_of(reopened)] == list(range(reopened.log_end_offset))


@pytest.mark.parametrize("partial", [0, 16, 17])
def test_a_write_failing_between_the_stamped_head_and_the_records_is_undone(tmp_path, faults, partial):
    """Issue 16 (broker produce): a batch is written as its stamped 16-byte head, then the
    records as received (no joined copy); a disk that fills before, at or just after that
    seam leaves the files and the log end offset as they were, and the retry is stored whole."""
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, config=LogConfig(index_interval_bytes=100))
    written = fill(plog, batches=3)
    before = file_sizes(directory)
    faults.fail_writes(".log", partial=partial)
    with pytest.raises(KafkaStorageError):
        append(plog, [(5_000, b"k", b"refused")])
    assert faults.hits and file_sizes(directory) == before and plog.log_end_offset == 9
    faults.heal()
    retry = make_batch([(5_000, b"k", b"retried")])
    assert plog.append(retry, last_offset_delta=0, max_timestamp=5_000, leader_epoch=3) == 9
    assert plog.read(0, 1 << 30) == b"".join(data for _, data in written) + stored(retry, 9)
    plog.close()
