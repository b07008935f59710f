"""One log segment: a ``.log`` of record batches and its ``.index`` and ``.timeindex``.

A segment holds the batches from its base offset up to the next segment's. Its files are
named by the base offset in 20 digits, in the partition directory (Kafka's
``LogFileUtils``; the names are :mod:`kproto.log_files`')::

    00000000000000000000.log         the batches, byte for byte as Produce stored them and
                                     Fetch returns them (no framing of our own)
    00000000000000000000.index       offset index   (see minibroker.log.index)
    00000000000000000000.timeindex   time index
    00000000000000000000.txnindex    aborted transactions (see minibroker.log.txn_index;
                                     made by the first entry)

A segment without a directory keeps the same bytes in memory (a
:class:`~minibroker.log.store.MemoryStore`) and the same indexes in memory only: one code
path for both modes.

Theory of operation (Kafka's ``LogSegment``):

- ``append`` writes a whole batch at the end and, when more than
  ``index.interval.bytes`` were written since the last index entry, adds an offset index
  entry ``(last offset of this batch, its position)`` and a time index entry (largest
  timestamp so far, last offset of the batch that holds it).
- ``translate(offset)``: the offset index gives a batch start at or before the offset;
  batch headers are walked from there (one ``BATCH_HEADER_SIZE`` read per batch, read by
  :func:`~kproto.records.read_batch_header`) to the first batch whose last offset reaches it. Reads never load a whole segment.
- ``read_range``: from that batch, whole batches up to a byte budget; the end is found
  from the indexed positions (batch boundaries) and a short walk, so a 1 MiB read of
  small batches does not parse every header.
- ``recover``: validate every batch (length, CRC, increasing offsets), cut the file after
  the last good one, and rebuild both indexes from what remains.
- The ``.log`` is written with ``os.pwrite`` (no user-space buffer): once ``append``
  returns, the bytes are in the OS page cache and survive the death of this process.
- ``append`` is all or nothing: when a write fails (the disk fills: a short write, then
  ENOSPC), the ``.log`` and both indexes are truncated back to their sizes before it and
  the in-memory state is restored, then the ``OSError`` is raised. If that undo fails too,
  :class:`SegmentDamaged` is raised instead: the files may hold bytes the segment does not
  account for, and only a reopen (``recover``) may trust them again. A new segment whose
  files cannot all be created removes the ones that were.
- ``load_indexes`` (an inactive segment on reopen) validates every batch as ``recover``
  does (length, CRC, offsets increasing and below the next segment's base offset) and
  checks the indexes cheaply; damage anywhere (a flipped byte, a torn tail, garbage left
  by a failed write) sends the segment to ``recover``, which cuts it after its last valid
  batch.

The bytes live in a store (:mod:`minibroker.log.store`: a file or memory); reads for
``os.sendfile`` are its :class:`~minibroker.log.store.LogSlice` objects, which keep a
deleted segment's file readable while a Fetch answer still refers to it, whatever
``file.delete.delay.ms`` (which the partition log honours too, see
:meth:`~minibroker.log.partition.PartitionLog.run_scheduled`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from kproto.errors import KafkaError
from kproto.log_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_name,
)
from kproto.records import (
    BATCH_HEADER_SIZE,
    Batch,
    decode_record_set,
    read_batch_header,
    read_batches,
)
from minibroker.log.config import INT32_MAX
from minibroker.log.index import IndexCorrupt, OffsetIndex, TimeIndex
from minibroker.log.store import FileStore, LogSlice, MemoryStore
from minibroker.log.txn_index import TransactionIndex

__all__ = [
    "LogSegment",
    "BatchInfo",
    "SegmentDamaged",
]

log = logging.getLogger(__name__)

# A batch (v2 or legacy) is framed by its offset i64 and length i32: 12 bytes that its
# length does not count (Kafka's LOG_OVERHEAD). Everything else of a header is the codec's.
_LOG_OVERHEAD = 12

_SCAN_CHUNK = 4 << 20  # recovery and compaction read segments in 4 MiB chunks


class SegmentDamaged(Exception):
    """A failed write could not be undone: the segment's files may hold bytes that its
    in-memory state does not account for (a partial batch, say). Its partition log goes
    offline until a reopen recovers it (see :mod:`minibroker.log.partition`)."""


class _Mark(NamedTuple):
    """What a failed write must restore: file sizes and in-memory facts of a segment."""

    size: int
    offset_entries: int
    time_entries: int
    max_timestamp: int
    offset_of_max_timestamp: int
    first_batch_timestamp: int | None
    last_indexed_position: int


class BatchInfo(NamedTuple):
    """Where a batch is and what its header says (read without decoding records)."""

    position: int
    size: int
    last_offset: int
    max_timestamp: int


class LogSegment:
    """One segment of a partition log, on disk or in memory.

    Build one with :meth:`create` or :meth:`open`; the partition log owns it. Not
    thread-safe: the broker drives logs from its event loop.

    Attributes:
        base_offset: the first offset this segment may hold; names its files.
        next_offset: the offset after its last batch (for a segment loaded from disk and
            not recovered, the next segment's base offset).
        max_timestamp: the largest batch max timestamp (-1: none yet).
        offset_of_max_timestamp: the last offset of the first batch that reached it.
        first_batch_timestamp: the first batch's max timestamp, for time-based rolling.
        created_ms: when this object was created (Kafka: segment creation or load time).
        roll_jitter_ms: how much earlier than ``segment.ms`` this segment rolls by time
            (Kafka's ``LogSegment.rollJitterMs``, drawn when the segment is made or loaded).
    """

    def __init__(
        self,
        base_offset: int,
        store: FileStore | MemoryStore,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        *,
        index_interval_bytes: int,
        created_ms: int,
        roll_jitter_ms: int = 0,
        txn_index: TransactionIndex | None = None,
    ):
        self.base_offset = base_offset
        self._store = store
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index if txn_index is not None else TransactionIndex(base_offset)
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        # (partition leader epoch, base offset) wherever the epoch grows, as the last
        # recover() or load_indexes() found them: the partition log rebuilds its leader
        # epoch cache from these without reading the segment again.
        self.epoch_starts: list[tuple[int, int]] = []
        # Position of the batch that got the last index entry: Kafka's
        # bytesSinceLastIndexEntry is "current position minus this".
        self._last_indexed_position = 0

    # -- construction -------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path | None,
        base_offset: int,
        *,
        index_interval_bytes: int,
        now_ms: int,
        suffix: str = "",
        roll_jitter_ms: int = 0,
    ) -> LogSegment:
        """A new, empty segment; on disk its three files are created (empty).

        Args:
            suffix: appended to each file name (``".cleaned"`` while the cleaner writes).
            roll_jitter_ms: see :attr:`roll_jitter_ms`.
        """
        if directory is None:
            return cls(
                base_offset, MemoryStore(now_ms), OffsetIndex(base_offset), TimeIndex(base_offset),
                index_interval_bytes=index_interval_bytes, created_ms=now_ms, roll_jitter_ms=roll_jitter_ms,
            )
        stem = directory / segment_name(base_offset)
        store = FileStore(Path(f"{stem}{LOG_SUFFIX}{suffix}"), create=True)
        offset_index = OffsetIndex(base_offset, Path(f"{stem}{INDEX_SUFFIX}{suffix}"))
        time_index = TimeIndex(base_offset, Path(f"{stem}{TIME_INDEX_SUFFIX}{suffix}"))
        txn_index = TransactionIndex(base_offset, Path(f"{stem}{TXN_INDEX_SUFFIX}{suffix}"))
        segment = cls(base_offset, store, offset_index, time_index, index_interval_bytes=index_interval_bytes,
                      created_ms=now_ms, roll_jitter_ms=roll_jitter_ms, txn_index=txn_index)
        try:
            offset_index.reset()
            time_index.reset()
        except OSError as exc:
            # A .log left behind would make every later attempt at this base offset fail
            # (O_EXCL), and a reopen take it for a segment.
            try:
                segment.delete()
                segment.close()
            except OSError as undo:
                raise SegmentDamaged(f"{store.path}: cannot remove a half-created segment ({undo})") from exc
            raise
        return segment

    @classmethod
    def open(
        cls, directory: Path, base_offset: int, *, index_interval_bytes: int, now_ms: int, suffix: str = "",
        roll_jitter_ms: int = 0,
    ) -> LogSegment:
        """An existing segment's files, not yet checked: call :meth:`load_indexes` or :meth:`recover`."""
        stem = directory / segment_name(base_offset)
        store = FileStore(Path(f"{stem}{LOG_SUFFIX}{suffix}"), create=False)
        offset_index = OffsetIndex(base_offset, Path(f"{stem}{INDEX_SUFFIX}{suffix}"))
        time_index = TimeIndex(base_offset, Path(f"{stem}{TIME_INDEX_SUFFIX}{suffix}"))
        txn_index = TransactionIndex(base_offset, Path(f"{stem}{TXN_INDEX_SUFFIX}{suffix}"))
        return cls(base_offset, store, offset_index, time_index, index_interval_bytes=index_interval_bytes,
                   created_ms=now_ms, roll_jitter_ms=roll_jitter_ms, txn_index=txn_index)

    # -- facts ----------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes of whole batches in the segment."""
        return self._store.size

    @property
    def on_disk(self) -> bool:
        return isinstance(self._store, FileStore)

    @property
    def path(self) -> Path | None:
        """The ``.log`` file, or None in memory."""
        return self._store.path if isinstance(self._store, FileStore) else None

    @property
    def largest_timestamp(self) -> int:
        """For retention: the largest record timestamp, else the file's mtime (Kafka's rule)."""
        return self.max_timestamp if self.max_timestamp >= 0 else self._store.mtime_ms()

    def can_hold(self, last_offset: int) -> bool:
        """Whether ``last_offset`` fits the indexes' i32 relative offsets."""
        return 0 <= last_offset - self.base_offset <= INT32_MAX

    # -- writing --------------------------------------------------------------------------

    def should_roll(
        self, *, batch_size: int, max_timestamp: int, last_offset: int, now_ms: int, segment_bytes: int,
        segment_ms: int, index_bytes: int,
    ) -> bool:
        """Kafka's ``LogSegment.shouldRoll``: the batch would take the segment past
        ``segment_bytes``, the segment is older than ``segment_ms`` less its
        :attr:`roll_jitter_ms`, its offset or time index holds what ``index_bytes``
        (``segment.index.bytes``) allows, or the batch's offsets are too far from its base.

        An empty segment rolls only for the last reason, so one batch larger than
        ``segment_bytes`` (or indexes too small for one entry) still finds a home: Kafka
        gets there by replacing an empty active segment with a new one at the same offset,
        and the first batch of a segment never gets an index entry.
        """
        if self.size == 0:
            return not self.can_hold(last_offset)
        if self.size > segment_bytes - batch_size:
            return True
        if self.first_batch_timestamp is not None and self.first_batch_timestamp >= 0:
            waited = max_timestamp - self.first_batch_timestamp
        else:
            waited = now_ms - self.created_ms
        return (waited > segment_ms - self.roll_jitter_ms or self.offset_index.is_full(index_bytes)
                or self.time_index.is_full(index_bytes) or not self.can_hold(last_offset))

    def append(self, *parts: bytes | bytearray | memoryview, last_offset: int, max_timestamp: int) -> int:
        """Write one whole batch at the end, given as one buffer or as consecutive pieces
        (a stamped head and the records as received: no copy is made to join them);
        returns its position.

        Raises:
            ValueError: the batch's offsets go backwards or do not fit this segment.
        """
        if last_offset < self.next_offset or not self.can_hold(last_offset):
            raise ValueError(f"batch ending at offset {last_offset} does not fit segment {self.base_offset} (next {self.next_offset})")
        with self._all_or_nothing():
            position = self._store.append(*parts)
            if position == 0:
                self.first_batch_timestamp = max_timestamp
            self._note_batch(position, self._store.size - position, last_offset, max_timestamp)
        self.next_offset = last_offset + 1
        return position

    @contextmanager
    def _all_or_nothing(self) -> Iterator[None]:
        """Undo the writes of the block if one fails: files and in-memory state as before.

        Raises:
            OSError: the write's error, once undone.
            SegmentDamaged: the undo failed too (the write's error is its context).
        """
        mark = _Mark(self._store.size, len(self.offset_index), len(self.time_index), self.max_timestamp,
                     self.offset_of_max_timestamp, self.first_batch_timestamp, self._last_indexed_position)
        try:
            yield
        except OSError as exc:
            (_, _, _, self.max_timestamp, self.offset_of_max_timestamp, self.first_batch_timestamp,
             self._last_indexed_position) = mark
            try:
                self._store.truncate(mark.size)
                self.offset_index.truncate_to_entries(mark.offset_entries)
                self.time_index.truncate_to_entries(mark.time_entries)
            except OSError as undo:
                raise SegmentDamaged(f"{self.path}: cannot undo a failed write ({exc}): {undo}") from undo
            log.warning("%s: a write failed and was undone: %s", self.path, exc)
            raise

    def _note_batch(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        # Kafka updates the max timestamp before the index entry, so the time entry made
        # at this batch counts it.
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if position - self._last_indexed_position > self.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._last_indexed_position = position

    def on_become_inactive(self) -> None:
        """Record the segment's largest timestamp as the last time index entry (Kafka's
        ``onBecomeInactiveSegment``), so its age is known on reopen without reading it."""
        with self._all_or_nothing():
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def flush(self) -> None:
        """fsync the ``.log`` and the indexes."""
        self._store.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    # -- reading --------------------------------------------------------------------------

    def pread(self, position: int, length: int) -> bytes:
        return self._store.pread(position, length)

    def slices(self, position: int, length: int) -> list[LogSlice]:
        return self._store.slices(position, length)

    def batches(self, position: int = 0) -> Iterator[BatchInfo]:
        """Walk batch headers from ``position`` (a batch start) to the end."""
        end = self._store.size
        while end - position > _LOG_OVERHEAD:
            try:
                header = read_batch_header(self._store.pread(position, BATCH_HEADER_SIZE))
            except KafkaError:
                return  # only valid batches are ever written; stop rather than walk garbage
            if header is None or header.size <= _LOG_OVERHEAD or position + header.size > end:
                return  # only whole batches are ever written; stop rather than loop
            yield BatchInfo(position, header.size, header.last_offset, header.max_timestamp)
            position += header.size

    def translate(self, offset: int) -> BatchInfo | None:
        """The first batch whose last offset is at or above ``offset``, or None."""
        _, position = self.offset_index.lookup(offset)
        for info in self.batches(position):
            if info.last_offset >= offset:
                return info
        return None

    def read_range(
        self, offset: int, budget: int, *, take_first: bool, end_position: int | None = None,
    ) -> tuple[int, int, bool] | None:
        """Whole batches from the one holding ``offset``, within ``budget`` bytes.

        Args:
            end_position: a batch start (or the size) where the range must end at the
                latest: the high watermark's batch, for a consumer's read.

        Returns:
            ``(position, length, stopped)``, where ``stopped`` says the budget ended the
            range before the end of the segment (or ``end_position``); None when no batch
            reaches ``offset`` before ``end_position``. With ``take_first`` the first
            batch is included whatever its size (KIP-74).
        """
        first = self.translate(offset)
        size = self._store.size if end_position is None else min(end_position, self._store.size)
        if first is None or first.position >= size:
            return None
        start = first.position
        if budget >= size - start:
            return start, size - start, False
        limit = start + max(budget, 0)
        # Indexed positions are batch starts: jump to the last one within the budget,
        # then walk the few batches after it.
        end = max(start, self.offset_index.position_at_or_below(limit))
        for info in self.batches(end):
            if info.position + info.size > limit:
                break
            end = info.position + info.size
        if end == start and take_first:
            end = start + first.size
        return start, end - start, True

    def batch_bytes(self, info: BatchInfo) -> bytes:
        return self._store.pread(info.position, info.size)

    def find_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """The first record at or after ``start_offset`` with a timestamp >= ``timestamp``.

        Kafka's ``findOffsetByTimestamp``: the time index names an offset before which
        every timestamp is smaller, the offset index turns it into a position, and the
        batches from there are checked by their max timestamp before any is decoded.
        """
        _, indexed_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(indexed_offset, start_offset))
        for info in self.batches(position):
            if info.max_timestamp < timestamp or info.last_offset < start_offset:
                continue
            for record in decode_record_set(self.batch_bytes(info), start_offset)[0]:
                if record.timestamp >= timestamp:
                    return record.offset, record.timestamp
        return None

    def scan(self, position: int = 0, *, offset_limit: int | None = None) -> Iterator[tuple[int, Batch]]:
        """Every valid batch from ``position`` (a batch start), header and CRC checked.

        Stops quietly at the first batch that is torn, corrupt or out of order (offsets
        not increasing, below the base offset, or at or above ``offset_limit``, the next
        segment's base offset); the position after the last one yielded (or ``position``)
        is then :attr:`valid_bytes`.
        """
        self.valid_bytes = position
        end = self._store.size
        want = _SCAN_CHUNK
        next_offset = self.base_offset
        while position < end:
            chunk = self._store.pread(position, min(want, end - position))
            consumed = 0
            try:
                for batch in read_batches(chunk, True):
                    first = batch.base_offset if batch.magic >= 2 else batch.last_offset
                    if (first < next_offset or batch.last_offset < first or not self.can_hold(batch.last_offset)
                            or (offset_limit is not None and batch.last_offset >= offset_limit)):
                        log.warning("%s: batch at byte %d has offsets %d-%d after %d; the valid log ends there",
                                    self.path, position + consumed, first, batch.last_offset, next_offset)
                        return
                    yield position + consumed, batch
                    consumed += batch.size
                    next_offset = batch.last_offset + 1
                    self.valid_bytes = position + consumed
            except (KafkaError, ValueError) as exc:
                log.warning("%s: invalid batch at byte %d (%s); the valid log ends there", self.path, position + consumed, exc)
                return
            if consumed:
                position += consumed
                want = _SCAN_CHUNK
                continue
            # No whole batch in the chunk: a batch larger than the chunk, or a torn tail.
            try:
                header = read_batch_header(chunk)
            except KafkaError as exc:
                log.warning("%s: invalid batch at byte %d (%s); the valid log ends there", self.path, position, exc)
                return
            if header is None or header.size > end - position or header.size <= len(chunk):
                return
            want = header.size

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is at or above ``offset``; returns the bytes cut.

        Kafka's ``LogSegment.truncateTo``: the ``.log`` is cut at the start of the first
        such batch (a target inside a batch removes the whole batch), then both indexes
        and the segment's facts are rebuilt from what remains, as :meth:`recover` does on
        open, so that ``.index`` and ``.timeindex`` name only batches still in the log.

        Raises:
            OSError: the ``.log`` could not be cut (nothing changed).
            SegmentDamaged: the ``.log`` was cut but the indexes could not be rebuilt.
        """
        info = self.translate(offset)
        if info is None:
            # Every batch is below ``offset``; a segment loaded inactive may still name the
            # next (now deleted) segment's base as its end: the end is ``offset`` at most,
            # as Kafka's log end after a truncation is the target.
            self.next_offset = min(self.next_offset, offset)
            return 0
        removed = self.size - info.position
        self._store.truncate(info.position)
        try:
            self.recover()
        except OSError as exc:
            raise SegmentDamaged(f"{self.path}: truncated to byte {info.position}, but its indexes "
                                 f"could not be rebuilt: {exc}") from exc
        return removed

    # -- recovery -------------------------------------------------------------------------

    def recover(self, *, offset_limit: int | None = None) -> int:
        """Validate every batch, cut the log after the last good one, rebuild both indexes.

        Kafka's ``LogSegment.recover``: the same index rules as :meth:`append`, and the
        largest timestamp appended last to the time index. ``offset_limit`` (an inactive
        segment: the next segment's base offset) bounds the offsets a valid batch may hold.

        Returns:
            how many bytes were cut off the end.
        """
        offset_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.first_batch_timestamp = None
        self.next_offset = self.base_offset
        self.epoch_starts = []
        last_indexed = 0
        for position, batch in self.scan(offset_limit=offset_limit):
            self._note_epoch(batch)
            if position == 0:
                self.first_batch_timestamp = batch.max_timestamp
            if batch.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = batch.max_timestamp, batch.last_offset
            if position - last_indexed > self.index_interval_bytes:
                offset_entries.append((batch.last_offset, position))
                if not time_entries or self.max_timestamp > time_entries[-1][0]:
                    time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))
                last_indexed = position
            self.next_offset = batch.last_offset + 1
        if self.max_timestamp >= 0 and (not time_entries or self.max_timestamp > time_entries[-1][0]):
            time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))
        truncated = self._store.size - self.valid_bytes
        if truncated:
            log.warning("%s: cut %d bytes of torn or invalid data after byte %d", self.path, truncated, self.valid_bytes)
            self._store.truncate(self.valid_bytes)
        self.offset_index.reset(offset_entries)
        self.time_index.reset(time_entries)
        # Aborted transactions whose marker was cut off go too (Kafka's recover resets the
        # index and rebuilds it; the broker's producer state replay adds what is missing).
        self.txn_index.truncate_to(self.next_offset)
        self._last_indexed_position = last_indexed
        return truncated

    def _note_epoch(self, batch: Batch) -> None:
        if batch.magic >= 2 and batch.partition_leader_epoch > (self.epoch_starts[-1][0] if self.epoch_starts else -1):
            self.epoch_starts.append((batch.partition_leader_epoch, batch.base_offset))

    def load_indexes(self, *, offset_limit: int) -> None:
        """Validate an inactive segment's log whole and load its index files.

        Every batch is checked as :meth:`recover` does (length, CRC-32C, offsets increasing
        and below ``offset_limit``, the next segment's base), since damage anywhere in an
        old segment must never be served; the indexes get the cheap checks (entry sizes,
        order, bounds, each offset index entry naming a batch: the position where it starts
        and its last offset), matched during the same pass.

        Raises:
            IndexCorrupt: the log or an index is damaged; the caller recovers the segment
                with :meth:`recover`, which cuts it after its last valid batch.
        """
        self.offset_index.load(log_size=self.size)
        entries = self.offset_index.entries()
        if not entries and self.size > 2 * self.index_interval_bytes:
            # Possible only with very large batches; rebuilding is the cheaper doubt.
            raise IndexCorrupt(f"{self.offset_index.path} is empty for {self.size} bytes of log")
        # One pass: every batch validated, and every offset index entry matched to the
        # batch it names (its position a batch start, its offset that batch's last).
        matched, stray = 0, None
        self.epoch_starts = []
        for position, batch in self.scan(offset_limit=offset_limit):
            self._note_epoch(batch)
            while matched < len(entries) and entries[matched][1] <= position:
                if entries[matched] != (batch.last_offset, position):
                    stray = stray or entries[matched]
                matched += 1
        if self.valid_bytes != self.size:
            raise IndexCorrupt(f"{self.path}: {self.size - self.valid_bytes} bytes after the last valid batch")
        if stray is not None or matched != len(entries):
            entry = stray or entries[matched]
            raise IndexCorrupt(f"{self.offset_index.path}: entry {entry} is not a batch of the log")
        self.time_index.load(offset_limit=offset_limit)
        if not len(self.time_index) and self.size:
            # A rolled segment's time index ends with its largest timestamp.
            raise IndexCorrupt(f"{self.time_index.path} is empty for a non-empty segment")
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry()
        self.next_offset = offset_limit

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the files (the segment stays on disk)."""
        self._store.close()
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()

    def delete(self) -> None:
        """Remove the segment's files: the ``.log`` first, so a crash halfway leaves only
        index files, which the next open deletes as orphans."""
        self._store.unlink()
        self.offset_index.unlink()
        self.time_index.unlink()
        self.txn_index.unlink()

    def rename(self, old_suffix: str, new_suffix: str) -> None:
        """Change the suffix of all its files: indexes first, the ``.log`` last, so
        the ``.log``'s name is the commit point (see the cleaner's swap protocol)."""
        assert isinstance(self._store, FileStore)
        for index in (self.offset_index, self.time_index, self.txn_index):
            assert index.path is not None
            index.rename(_with_suffix(index.path, old_suffix, new_suffix))
        self._store.rename(_with_suffix(self._store.path, old_suffix, new_suffix))

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"


def _with_suffix(path: Path, old: str, new: str) -> Path:
    name = path.name
    if old:
        assert name.endswith(old), (name, old)
        name = name[: -len(old)]
    return path.with_name(name + new)
