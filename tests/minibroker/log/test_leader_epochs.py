"""minibroker.log.leader_epochs: the leader epoch cache and its ``leader-epoch-checkpoint``
(issue 13, step 1, WP1; KIP-101 / KIP-279, Kafka's ``LeaderEpochFileCache``)."""

from __future__ import annotations

import errno
import os

import pytest

from kproto.log_files import LEADER_EPOCH_CHECKPOINT
from minibroker.log import LeaderEpochCache, PartitionLog
from tests.minibroker.log.test_log import make_batch


def append(plog, epoch, n=1, ts=1_000):
    data = make_batch([(ts + i, b"k", b"v") for i in range(n)])
    return plog.append(data, last_offset_delta=n - 1, max_timestamp=ts + n - 1, leader_epoch=epoch)


def test_assign_adds_only_newer_epochs():
    cache = LeaderEpochCache(None)
    assert cache.latest_epoch() == -1 and cache.entries == ()
    cache.assign(0, 0)
    cache.assign(0, 5)  # the same epoch again: nothing
    cache.assign(-1, 7)  # a batch without an epoch: nothing
    cache.assign(2, 10)
    assert cache.entries == ((0, 0), (2, 10)) and cache.latest_epoch() == 2


@pytest.mark.parametrize("epoch, start", [(1, 20), (3, 5)])
def test_assign_refuses_an_older_epoch_or_a_start_going_back(epoch, start):
    cache = LeaderEpochCache(None, [(0, 0), (2, 10)])
    with pytest.raises(ValueError):
        cache.assign(epoch, start)
    assert cache.entries == ((0, 0), (2, 10))


def test_entries_must_increase():
    with pytest.raises(ValueError):
        LeaderEpochCache(None, [(2, 0), (1, 5)])


@pytest.mark.parametrize("asked, answer", [
    (4, (4, 100)),  # the latest epoch ends at the log end offset
    (5, (-1, -1)),  # above every cached epoch: unknown
    (-1, (-1, -1)),
    (2, (2, 30)),  # ends where the next epoch began
    (3, (2, 30)),  # not cached: the largest epoch below it, ending at the next one's start
    (0, (0, 10)),  # below the first entry: itself, ending at the first start
    (1, (1, 20)),
])
def test_end_offset_for_follows_kafkas_rule(asked, answer):
    cache = LeaderEpochCache(None, [(1, 10), (2, 20), (4, 30)])
    assert cache.end_offset_for(asked, 100) == answer


def test_end_offset_for_an_empty_cache_is_unknown():
    assert LeaderEpochCache(None).end_offset_for(0, 5) == (-1, -1)


def test_truncate_from_end_drops_entries_starting_at_or_after_it():
    cache = LeaderEpochCache(None, [(1, 10), (2, 20), (4, 30)])
    cache.truncate_from_end(31)
    assert cache.entries == ((1, 10), (2, 20), (4, 30))
    cache.truncate_from_end(20)
    assert cache.entries == ((1, 10),)


def test_truncate_from_start_moves_the_first_entry_up():
    cache = LeaderEpochCache(None, [(1, 10), (2, 20), (4, 30)])
    cache.truncate_from_start(5)
    assert cache.entries == ((1, 10), (2, 20), (4, 30))
    cache.truncate_from_start(25)
    assert cache.entries == ((2, 25), (4, 30))
    cache.truncate_from_start(30)
    assert cache.entries == ((4, 30),)


def test_the_checkpoint_is_kafkas_text_and_round_trips(tmp_path):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache = LeaderEpochCache(path)
    cache.assign(0, 0)
    cache.assign(3, 42)
    assert path.read_text() == "0\n2\n0 0\n3 42\n"
    assert LeaderEpochCache.load(path).entries == ((0, 0), (3, 42))
    cache.truncate_from_end(42)
    assert path.read_text() == "0\n1\n0 0\n"


def test_a_checkpoint_written_the_way_kafka_writes_it_loads(tmp_path):
    """Kafka's CheckpointFile: version line, count line, ``epoch offset`` lines, a final newline."""
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text("0\n3\n0 0\n1 1520\n5 98211\n")
    assert LeaderEpochCache.load(path).entries == ((0, 0), (1, 1520), (5, 98211))


@pytest.mark.parametrize("text", ["", "1\n0\n", "0\n2\n0 0\n", "0\n1\n0\n", "0\n2\n3 0\n1 5\n", "garbage"])
def test_an_unparsable_checkpoint_loads_as_none(tmp_path, text):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(text)
    assert LeaderEpochCache.load(path) is None
    assert LeaderEpochCache.load(tmp_path / "missing") is None


# -- in a partition log -------------------------------------------------------------------


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_appends_record_each_new_epoch_where_it_began(tmp_path, where):
    plog = PartitionLog(tmp_path / "t-0" if where == "disk" else None, epoch_checkpoint=True)
    append(plog, 0, 3)
    append(plog, 0, 2)
    append(plog, 2, 1)
    append(plog, 1, 1)  # older than the latest: stamped but not recorded (a leader never does this)
    assert plog.epochs.entries == ((0, 0), (2, 5))
    plog.close()


def test_the_cache_survives_a_reopen_and_is_rebuilt_without_its_file(tmp_path):
    plog = PartitionLog(tmp_path / "t-0", epoch_checkpoint=True)
    append(plog, 0, 3)
    append(plog, 4, 2)
    plog.close()
    path = tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT
    assert path.read_text() == "0\n2\n0 0\n4 3\n"
    with PartitionLog(tmp_path / "t-0", epoch_checkpoint=True) as again:
        assert again.epochs.entries == ((0, 0), (4, 3))
    path.write_text("0\n7\ntorn")
    with PartitionLog(tmp_path / "t-0", epoch_checkpoint=True) as rebuilt:
        assert rebuilt.epochs.entries == ((0, 0), (4, 3))
    assert path.read_text() == "0\n2\n0 0\n4 3\n"
    path.unlink()
    with PartitionLog(tmp_path / "t-0", epoch_checkpoint=True) as rebuilt:
        assert rebuilt.epochs.entries == ((0, 0), (4, 3))


def test_a_checkpoint_ahead_of_the_log_is_cut_at_open(tmp_path):
    """A crash may leave entries past the log end (KAFKA-10706): the open drops them."""
    plog = PartitionLog(tmp_path / "t-0", epoch_checkpoint=True)
    append(plog, 0, 3)
    plog.close()
    (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n0 0\n6 3\n")
    with PartitionLog(tmp_path / "t-0", epoch_checkpoint=True) as again:
        assert again.epochs.entries == ((0, 0),)


def test_a_single_brokers_log_writes_no_epoch_file_but_knows_its_epochs(tmp_path):
    """Without ``epoch_checkpoint`` (the single broker) the directory keeps only its segment
    files; the cache is rebuilt from the batches at open."""
    plog = PartitionLog(tmp_path / "t-0")
    append(plog, 0, 2)
    append(plog, 1, 2)
    plog.close()
    assert not (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).exists()
    with PartitionLog(tmp_path / "t-0") as again:
        assert again.epochs.entries == ((0, 0), (1, 2))


def test_delete_records_moves_the_first_epoch_up(tmp_path):
    plog = PartitionLog(epoch_checkpoint=True)
    append(plog, 0, 3)
    append(plog, 1, 3)
    plog.delete_records(4)
    assert plog.epochs.entries == ((1, 4),)


def test_a_new_epochs_entry_is_fsynced_with_the_log_not_on_append(tmp_path, monkeypatch):
    """KAFKA-15046: no fsync on the append path; the entry becomes durable with the batches
    it describes, when the log is flushed (or rolls)."""
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd))[1])
    plog = PartitionLog(tmp_path / "t-0", epoch_checkpoint=True)
    synced.clear()
    append(plog, 0, 2)
    assert (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"
    assert not any(p.endswith(LEADER_EPOCH_CHECKPOINT) for p in synced)
    plog.flush()
    assert any(p.endswith(LEADER_EPOCH_CHECKPOINT) for p in synced)
    synced.clear()
    plog.flush()
    assert not synced  # nothing new
    plog.close()


def test_a_checkpoint_that_cannot_be_written_is_removed_and_rebuilt_at_the_next_open(tmp_path, monkeypatch):
    """A full disk while the checkpoint is rewritten: a stale file would mislead the next
    open, so it goes; the appends go on and the next open rebuilds it from the batches."""
    plog = PartitionLog(tmp_path / "t-0", epoch_checkpoint=True)
    append(plog, 0, 2)
    path = tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT
    assert path.exists()
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith(LEADER_EPOCH_CHECKPOINT):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    append(plog, 3, 2)
    assert not path.exists() and not path.with_name(path.name + ".tmp").exists()
    assert plog.epochs.entries == ((0, 0), (3, 2)) and not plog.offline
    monkeypatch.setattr(os, "replace", real_replace)
    plog.close()
    with PartitionLog(tmp_path / "t-0", epoch_checkpoint=True) as again:
        assert again.epochs.entries == ((0, 0), (3, 2))
    assert path.read_text() == "0\n2\n0 0\n3 2\n"
