"""PartitionLog.append_replicated, the high watermark and abandon(): a follower's copy of
its leader's log (issue 13, step 1, WP1; Kafka's ``UnifiedLog.appendAsFollower``)."""

from __future__ import annotations

import filecmp

import pytest

from kproto.errors import CorruptRecordError
from kproto.log_files import LEADER_EPOCH_CHECKPOINT
from kproto.records import read_batches
from minibroker.log import LogConfig, PartitionLog
from tests.minibroker.log.test_log import make_batch, verify_like_dump_log_segments

CONFIG = dict(segment_bytes=500, index_interval_bytes=80)


def fill(plog, batches, per_batch=3, epoch_of=lambda i: 0, start=0):
    for i in range(start, start + batches):
        recs = [(1_000 + 10 * i + j, b"k%d" % i, b"v-%d-%d" % (i, j)) for j in range(per_batch)]
        plog.append(make_batch(recs), last_offset_delta=per_batch - 1, max_timestamp=recs[-1][0],
                    leader_epoch=epoch_of(i))


def copy(leader, follower, max_bytes=700):
    """Fetch from ``leader`` at the follower's end, in rounds, as a replica fetcher does."""
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_replicated(leader.read(follower.log_end_offset, max_bytes))


@pytest.fixture
def logs(tmp_path):
    opened = []

    def factory(name, **config):
        plog = PartitionLog(tmp_path / name / "t-0", config=LogConfig(**{**CONFIG, **config}), epoch_checkpoint=True)
        opened.append(plog)
        return plog

    yield factory
    for plog in opened:
        plog.close()


def test_a_copy_of_a_leaders_batches_gives_byte_identical_files(logs):
    leader, follower = logs("a"), logs("b")
    fill(leader, 40, epoch_of=lambda i: i // 12)
    copy(leader, follower)
    assert follower.log_end_offset == leader.log_end_offset
    assert [s.base_offset for s in follower.segments] == [s.base_offset for s in leader.segments]
    for a, b in zip(leader.segments, follower.segments):
        assert filecmp.cmp(a.path, b.path, shallow=False)
        verify_like_dump_log_segments(b.path)
    assert follower.epochs.entries == leader.epochs.entries == ((0, 0), (1, 36), (2, 72), (3, 108))
    leader.close()
    follower.close()
    assert ((leader.directory / LEADER_EPOCH_CHECKPOINT).read_text()
            == (follower.directory / LEADER_EPOCH_CHECKPOINT).read_text())


def test_a_copy_in_memory_holds_the_same_bytes():
    leader, follower = PartitionLog(), PartitionLog()
    fill(leader, 10, epoch_of=lambda i: i // 4)
    copy(leader, follower)
    assert follower.read(0, 1 << 20) == leader.read(0, 1 << 20)
    assert follower.epochs.entries == leader.epochs.entries


def test_a_batch_below_the_log_end_is_refused_and_nothing_is_written(logs):
    leader, follower = logs("a"), logs("b")
    fill(leader, 4)
    copy(leader, follower)
    with pytest.raises(ValueError, match="does not follow"):
        follower.append_replicated(leader.read(3, 1 << 20))
    assert follower.log_end_offset == 12


def test_offsets_may_skip_forward_as_compaction_leaves_them():
    """Kafka lets a follower's offsets jump forward (a compacted leader's gaps)."""
    leader, follower = PartitionLog(), PartitionLog()
    fill(leader, 6)
    follower.append_replicated(leader.read(0, 1))  # 0-2
    assert follower.append_replicated(leader.read(9, 1 << 20)) == 18  # skips 3-8
    assert [b.base_offset for b in read_batches(follower.read(0, 1 << 20))] == [0, 9, 12, 15]


def test_a_corrupt_batch_is_refused_before_anything_is_written():
    leader, follower = PartitionLog(), PartitionLog()
    fill(leader, 3)
    data = bytearray(leader.read(0, 1 << 20))
    data[-3] ^= 0xFF  # inside the last batch's records: its CRC fails
    with pytest.raises(CorruptRecordError):
        follower.append_replicated(bytes(data))
    assert follower.log_end_offset == 0 and follower.read(0, 1 << 20) == b""


def test_an_epoch_going_backwards_is_refused():
    leader, follower = PartitionLog(), PartitionLog()
    fill(leader, 2, epoch_of=lambda i: 5)
    follower.append_replicated(leader.read(0, 1 << 20))
    old = PartitionLog()
    fill(old, 3, epoch_of=lambda i: 2)
    with pytest.raises(ValueError, match="leader epoch 2"):
        follower.append_replicated(old.read(6, 1 << 20))
    assert follower.log_end_offset == 6


def test_a_partial_batch_at_the_end_is_left_for_the_next_fetch():
    leader, follower = PartitionLog(), PartitionLog()
    fill(leader, 3)
    data = leader.read(0, 1 << 20)
    assert follower.append_replicated(data[:-5]) == 6
    copy(leader, follower)
    assert follower.read(0, 1 << 20) == data


# -- the high watermark -------------------------------------------------------------------


def test_the_high_watermark_is_the_log_end_until_set():
    plog = PartitionLog()
    fill(plog, 3)
    assert plog.high_watermark == 9
    plog.set_high_watermark(4)
    assert plog.high_watermark == 4
    fill(plog, 1)
    assert plog.high_watermark == 4
    plog.set_high_watermark(100)
    assert plog.high_watermark == 12
    plog.set_high_watermark(-5)
    assert plog.high_watermark == 0


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_reads_bounded_by_max_offset_return_only_whole_batches_below_it(tmp_path, where):
    plog = PartitionLog(tmp_path / "t-0" if where == "disk" else None, config=LogConfig(**CONFIG))
    fill(plog, 30)  # batches 0-2, 3-5, ...; several segments
    assert len(plog.segments) > 3
    for max_offset in range(0, plog.log_end_offset + 2):
        for offset in range(0, 90, 7):
            data = plog.read(offset, 1 << 20, max_offset=max_offset)
            batches = list(read_batches(data))
            assert all(b.last_offset < max_offset for b in batches)
            if offset < max_offset - max_offset % 3:  # a whole batch below max_offset holds it
                assert batches and batches[-1].last_offset == max_offset - max_offset % 3 - 1
            else:
                assert data == b""
    # KIP-74: the first batch comes even when larger than max_bytes, but never past max_offset
    assert [b.last_offset for b in read_batches(plog.read(0, 1, max_offset=3))] == [2]
    assert plog.read(0, 1, max_offset=2) == b""
    plog.close()


# -- a crash --------------------------------------------------------------------------------


def test_abandon_writes_nothing_and_a_reopen_recovers_every_append(tmp_path):
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory, config=LogConfig(**CONFIG), epoch_checkpoint=True)
    fill(plog, 25, epoch_of=lambda i: i // 10)
    end, entries, data = plog.log_end_offset, plog.epochs.entries, plog.read(0, 1 << 20)
    active = plog.segments[-1]
    timeindex_before = active.time_index.path.read_bytes()
    plog.abandon()
    assert active.time_index.path.read_bytes() == timeindex_before  # no final entry: nothing written
    with PartitionLog(directory, config=LogConfig(**CONFIG), epoch_checkpoint=True) as again:
        assert again.log_end_offset == end and again.epochs.entries == entries
        assert again.read(0, 1 << 20) == data
