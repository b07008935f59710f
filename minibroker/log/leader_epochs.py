"""A partition's leader epochs and the offset each began at: the ``leader-epoch-checkpoint``.

Facts (KIP-101, KIP-279; Kafka's ``LeaderEpochFileCache`` and ``LeaderEpochCheckpointFile``):

- Every batch written by a leader carries its leader epoch (the batch's partition leader
  epoch). The cache holds one entry per epoch seen in the log, ``(epoch, start_offset)``:
  the first offset written in that epoch. Epochs and start offsets both increase.
- A leader (and a follower copying its batches) adds an entry when a batch's epoch is
  newer than the latest one (``assign``). ``end_offset_for`` answers OffsetForLeaderEpoch:
  where an epoch ended, which lets a follower truncate exactly the batches the new leader
  does not have (KIP-101), epoch by epoch (KIP-279).
- Truncating the log truncates the cache from the end; moving the log start offset moves
  the first entry's start up (``truncateFromStart``).
- The file is text, ``0``, the entry count, then ``epoch start_offset`` per line, in the
  partition directory (:func:`kproto.log_files.format_epoch_checkpoint`), rewritten whole
  and atomically (write, rename) on every change, as Kafka's ``CheckpointFile``.
- When it is fsynced: a truncation's rewrite at once (Kafka fsyncs every write since
  KAFKA-16541). A new epoch's entry, written on the append path, is fsynced with the log
  (:meth:`LeaderEpochCache.flush`, called by the partition log's ``flush``), as Kafka
  moved fsyncs off the append path (KAFKA-15046): the entry is then exactly as durable as
  the batches it describes. After a power loss the file is as old as the last flush of
  the log, or torn, which the open detects (unparsable: rebuilt from the batches; entries
  past the log end: cut).

Where minibroker differs: Kafka's ``assign`` of an older epoch removes the newer entries
(with a warning); here it is refused with ``ValueError`` (the log checks batches before
writing them, so a follower never writes what the cache would refuse). A checkpoint that
cannot be written (a full disk) is removed instead, with a warning: the next open then
rebuilds the cache from the batch headers (:meth:`LeaderEpochCache.rebuild`), which is
always right; a stale file would not be. Only when the removal fails too is the error
raised (the partition log goes offline).
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from kproto.log_files import format_epoch_checkpoint, parse_epoch_checkpoint
from minibroker.log.files import fsync_dir

__all__ = ["LeaderEpochCache", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET"]

log = logging.getLogger(__name__)

#: OffsetForLeaderEpoch's "no such epoch" (Kafka's ``RecordBatch.NO_PARTITION_LEADER_EPOCH``).
UNDEFINED_EPOCH = -1
#: OffsetForLeaderEpoch's "no end offset" (Kafka's ``UNDEFINED_EPOCH_OFFSET``).
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """``(epoch, start_offset)`` entries of one partition, persisted in ``path``.

    Args:
        path: the ``leader-epoch-checkpoint`` file, or None for a log kept in memory.
        entries: the initial entries (not written: they come from the file or a rebuild).

    Raises:
        ValueError: ``entries`` are not increasing in both epoch and start offset.
    """

    def __init__(self, path: Path | None, entries: Sequence[tuple[int, int]] = ()):
        self.path = path
        self._dirty = False  # written since the last fsync (see flush)
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries:
            if self._epochs and (epoch <= self._epochs[-1] or start < self._starts[-1]):
                raise ValueError(f"epoch entry {(epoch, start)} does not follow {self.entries[-1]}")
            self._epochs.append(epoch)
            self._starts.append(start)

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache | None:
        """The cache in ``path``; None when the file is missing or unparsable (logged),
        so that the caller rebuilds it from the log."""
        try:
            return cls(path, parse_epoch_checkpoint(path.read_text()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            log.warning("%s is unreadable (%s): rebuilding it from the log's batches", path, exc)
            return None

    @classmethod
    def rebuild(cls, path: Path | None, batches: Iterable[tuple[int, int]]) -> LeaderEpochCache:
        """A cache from the ``(partition_leader_epoch, base_offset)`` of every batch, in
        log order: an entry wherever the epoch grows (batches without one, epoch < 0, and
        epochs lower than an earlier batch's are skipped). Written when it has entries."""
        cache = cls(path)
        for epoch, base_offset in batches:
            if epoch > cache.latest_epoch():
                cache._epochs.append(epoch)
                cache._starts.append(base_offset)
        if cache._epochs:
            cache._write(sync=True)
        return cache

    # -- facts ----------------------------------------------------------------------------

    @property
    def entries(self) -> tuple[tuple[int, int], ...]:
        """``(epoch, start_offset)``, oldest first."""
        return tuple(zip(self._epochs, self._starts))

    def latest_epoch(self) -> int:
        """The newest epoch, -1 when there is none."""
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def start_offset_of_latest(self) -> int:
        """Where the newest epoch began, -1 when there is none."""
        return self._starts[-1] if self._starts else UNDEFINED_EPOCH_OFFSET

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's answer for ``epoch``: ``(epoch, end_offset)``.

        Kafka's ``LeaderEpochFileCache.endOffsetFor``: the latest epoch ends at the log end
        offset; an epoch above every cached one (or -1, or an empty cache) is unknown,
        ``(-1, -1)``; otherwise it ends where the next cached epoch began, and the epoch
        answered is the largest cached one at or below it (``epoch`` itself when it is
        below the first entry).
        """
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor_epoch = self._epochs[higher - 1] if higher else epoch
        return floor_epoch, self._starts[higher]

    # -- changes --------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` began at ``start_offset`` if it is newer than the latest.

        The latest epoch again, or a negative one (a batch without an epoch), changes
        nothing. Kafka's ``assign``, but without its removal of newer entries (see the
        module docstring).

        Raises:
            ValueError: ``epoch`` is older than the latest, or newer but starting before it.
            OSError: the checkpoint could not be written nor removed.
        """
        if epoch < 0 or epoch == self.latest_epoch():
            return
        if epoch < self.latest_epoch() or start_offset < self.start_offset_of_latest():
            raise ValueError(f"leader epoch {epoch} at offset {start_offset} does not follow "
                             f"epoch {self.latest_epoch()} at {self.start_offset_of_latest()}")
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        self._write(sync=False)

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries starting at or after ``end_offset`` (the log was truncated there).

        Raises:
            OSError: as :meth:`assign`.
        """
        keep = bisect.bisect_left(self._starts, end_offset)
        if keep < len(self._starts):
            del self._epochs[keep:], self._starts[keep:]
            self._write(sync=True)

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start offset moved up to ``start_offset``: entries wholly before it go,
        and the entry holding it now starts there (Kafka's ``truncateFromStart``).

        Raises:
            OSError: as :meth:`assign`.
        """
        floor = bisect.bisect_right(self._starts, start_offset) - 1
        if floor < 0 or (floor == 0 and self._starts[0] == start_offset):
            return
        del self._epochs[:floor], self._starts[:floor]
        self._starts[0] = start_offset
        self._write(sync=True)

    def clear(self) -> None:
        """Drop every entry (the log was emptied: ``truncate_fully_and_start_at``).

        Raises:
            OSError: as :meth:`assign`.
        """
        if self._epochs:
            self._epochs.clear()
            self._starts.clear()
            self._write(sync=True)

    # -- the file -------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the file (and its directory) if a write since the last one was not.

        Raises:
            OSError: the fsync failed.
        """
        if self.path is None or not self._dirty:
            return
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(self.path.parent)
        self._dirty = False

    def _write(self, *, sync: bool) -> None:
        if self.path is None:
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w") as f:
                f.write(format_epoch_checkpoint(self.entries))
                if sync:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, self.path)
            if sync:
                fsync_dir(self.path.parent)
            self._dirty = not sync
        except OSError as exc:
            # A stale file would mislead the next open; no file makes it rebuild from the
            # batches, which is always right (see the module docstring).
            log.warning("cannot write %s (%s): removed, the next open rebuilds it", self.path, exc)
            for path in (tmp, self.path):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
            fsync_dir(self.path.parent)

    def __repr__(self) -> str:
        return f"LeaderEpochCache({list(self.entries)})"
