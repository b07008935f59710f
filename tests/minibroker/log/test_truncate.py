"""PartitionLog.truncate_to / truncate_fully_and_start_at: a follower cutting its log to
its leader's (issue 13, step 1, WP1; KIP-101, Kafka's ``UnifiedLog.truncateTo``)."""

from __future__ import annotations

import errno
import os

import pytest

from kproto.errors import KafkaStorageError
from kproto.log_files import LEADER_EPOCH_CHECKPOINT
from kproto.records import read_batches
from minibroker.log import LogConfig, PartitionLog
from tests.minibroker.log.test_log import make_batch, verify_like_dump_log_segments


@pytest.fixture(params=["memory", "disk"])
def open_log(request, tmp_path):
    opened = []

    def factory(**config):
        directory = tmp_path / "t-0" if request.param == "disk" else None
        plog = PartitionLog(directory, config=LogConfig(**config), epoch_checkpoint=True)
        opened.append(plog)
        return plog

    yield factory
    for plog in opened:
        plog.close()


def fill(plog, batches, per_batch=3, epoch_of=lambda i: 0):
    """``batches`` batches of ``per_batch`` records; batch i gets epoch ``epoch_of(i)``."""
    for i in range(batches):
        recs = [(1_000 + 10 * i + j, b"k%d" % i, b"v-%d-%d" % (i, j)) for j in range(per_batch)]
        plog.append(make_batch(recs), last_offset_delta=per_batch - 1, max_timestamp=recs[-1][0],
                    leader_epoch=epoch_of(i))


def offsets(plog):
    return [b.last_offset for b in read_batches(plog.read(0, 1 << 30))]


def test_truncate_mid_segment_keeps_whole_batches_below_the_target(open_log):
    plog = open_log()
    fill(plog, 10)  # batches of offsets 0-2, 3-5, ... 27-29
    assert plog.truncate_to(12) == 18
    assert plog.log_end_offset == 12 and offsets(plog)[-1] == 11
    fill(plog, 1)  # appends continue at the new end
    assert offsets(plog)[-1] == 14


def test_a_target_inside_a_batch_removes_the_whole_batch(open_log):
    plog = open_log()
    fill(plog, 10)
    assert plog.truncate_to(13) == 18  # 12-14 goes whole
    assert plog.log_end_offset == 12


def test_truncation_across_segments_deletes_the_later_ones(open_log, tmp_path):
    plog = open_log(segment_bytes=300, index_interval_bytes=50)
    fill(plog, 30)
    assert len(plog.segments) > 4
    target = plog.segments[2].base_offset + 3
    plog.truncate_to(target)
    assert len(plog.segments) == 3 and plog.log_end_offset <= target
    assert offsets(plog)[-1] == plog.log_end_offset - 1
    if plog.directory is not None:
        logs = sorted(p.name for p in plog.directory.glob("*.log"))
        assert logs == [f"{s.base_offset:020d}.log" for s in plog.segments]


def test_truncating_at_a_segments_base_empties_it(open_log):
    plog = open_log(segment_bytes=300)
    fill(plog, 20)
    base = plog.segments[2].base_offset
    plog.truncate_to(base)
    assert plog.log_end_offset == base and plog.segments[-1].size == 0


def test_truncation_cuts_the_epoch_cache_and_clamps_high_watermark_and_recovery_point(open_log):
    plog = open_log()
    fill(plog, 10, epoch_of=lambda i: i // 3)  # epochs 0 (0-8), 1 (9-17), 2 (18-26), 3 (27-29)
    assert plog.epochs.entries == ((0, 0), (1, 9), (2, 18), (3, 27))
    plog.set_high_watermark(25)
    plog.flush()
    plog.truncate_to(18)
    assert plog.epochs.entries == ((0, 0), (1, 9))
    assert plog.high_watermark == 18 and plog.recovery_point == 18


def test_truncation_at_or_past_the_end_removes_nothing_but_cuts_epochs_started_there(open_log):
    """KAFKA-10706: a leader that began an epoch and wrote nothing has an entry at its log
    end; truncating to that end must still drop it."""
    plog = open_log()
    fill(plog, 2)
    plog.epochs.assign(5, plog.log_end_offset)
    assert plog.truncate_to(plog.log_end_offset + 3) == 0
    assert plog.epochs.latest_epoch() == 5
    assert plog.truncate_to(plog.log_end_offset) == 0
    assert plog.epochs.entries == ((0, 0),) and plog.log_end_offset == 6


def test_truncated_logs_reopen_with_the_same_end_valid_indexes_and_epoch_file(tmp_path):
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, config=LogConfig(segment_bytes=600, index_interval_bytes=60), epoch_checkpoint=True)
    fill(plog, 40, epoch_of=lambda i: i // 10)
    mid = plog.segments[1]
    target = mid.base_offset + 7
    plog.truncate_to(target)
    end, entries, data = plog.log_end_offset, plog.epochs.entries, plog.read(0, 1 << 30)
    for segment in plog.segments:
        verify_like_dump_log_segments(segment.path)
    plog.close()
    text = (directory / LEADER_EPOCH_CHECKPOINT).read_text()
    assert text == f"0\n{len(entries)}\n" + "".join(f"{e} {s}\n" for e, s in entries)
    with PartitionLog(directory, config=LogConfig(segment_bytes=600, index_interval_bytes=60),
                      epoch_checkpoint=True) as again:
        assert again.log_end_offset == end and again.epochs.entries == entries
        assert again.read(0, 1 << 30) == data
        for segment in again.segments:
            verify_like_dump_log_segments(segment.path)


def test_the_indexes_after_truncation_serve_reads_and_timestamps(open_log):
    plog = open_log(index_interval_bytes=60)
    fill(plog, 20)
    plog.truncate_to(30)
    for offset in range(0, 30):
        first = next(read_batches(plog.read(offset, 1)))
        assert first.base_offset <= offset <= first.last_offset
    assert plog.read(30, 1000) == b""
    assert plog.offset_for_timestamp(1_000 + 10 * 9) == (27, 1_090)
    assert plog.offset_for_timestamp(1_000 + 10 * 10) is None


def test_truncate_fully_and_start_at_empties_the_log(open_log):
    plog = open_log(segment_bytes=300)
    fill(plog, 20, epoch_of=lambda i: i // 5)
    plog.truncate_fully_and_start_at(500)
    assert (plog.log_start_offset, plog.log_end_offset, plog.high_watermark) == (500, 500, 500)
    assert plog.epochs.entries == () and len(plog.segments) == 1 and plog.segments[0].base_offset == 500
    fill(plog, 1, epoch_of=lambda i: 7)
    assert offsets(plog) == [502] and plog.epochs.entries == ((7, 500),)


def test_truncate_fully_survives_a_reopen(tmp_path):
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, epoch_checkpoint=True)
    fill(plog, 5)
    plog.truncate_fully_and_start_at(100)
    plog.close()
    with PartitionLog(directory, epoch_checkpoint=True) as again:
        assert (again.log_start_offset, again.log_end_offset) == (100, 100)
        assert again.epochs.entries == ()


def test_a_target_below_the_log_start_empties_the_log(open_log):
    plog = open_log()
    fill(plog, 5)
    plog.delete_records(9)
    assert plog.truncate_to(4) == 11
    assert (plog.log_start_offset, plog.log_end_offset) == (4, 4)


def test_a_target_in_a_gap_before_a_deleted_segment_ends_the_log_there(tmp_path):
    """A compacted log's gap (here a follower's forward skip) at the end of a segment: after
    the later segments go, the log ends at the target, not at their base (reopened: the
    inactive segment's end was the next segment's base)."""
    leader = PartitionLog()
    fill(leader, 10)
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=100)  # one batch per segment
    plog = PartitionLog(directory, config=config)
    plog.append_replicated(leader.read(0, 1))  # 0-2
    plog.append_replicated(leader.read(12, 1 << 20))  # 12-29, rolling at 12 (Kafka rolls at the batch)
    plog.close()
    with PartitionLog(directory, config=config) as again:
        assert [s.base_offset for s in again.segments][:2] == [0, 12]
        assert again.truncate_to(7) == 23
        assert again.log_end_offset == 7 and len(again.segments) == 1


def test_a_truncation_whose_file_cut_fails_takes_the_log_offline_until_reopened(tmp_path, monkeypatch):
    """As every other failed change of a log's files: KAFKA_STORAGE_ERROR, offline, and a
    reopen recovers from what the files hold."""
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory)
    fill(plog, 5)
    real_ftruncate = os.ftruncate

    def ftruncate(fd, size):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".log"):
            raise OSError(errno.EIO, "Input/output error")
        return real_ftruncate(fd, size)

    monkeypatch.setattr(os, "ftruncate", ftruncate)
    with pytest.raises(KafkaStorageError, match="offline"):
        plog.truncate_to(6)
    assert plog.offline
    with pytest.raises(KafkaStorageError):
        plog.read(0, 100)
    monkeypatch.setattr(os, "ftruncate", real_ftruncate)
    plog.close()
    with PartitionLog(directory) as again:
        assert again.log_end_offset == 15 and again.truncate_to(6) == 9
