"""Log compaction (``cleanup.policy=compact``): keep the last record of every key.

Theory of operation (Kafka's ``Cleaner``, simplified to one pass over the cleanable range):

1. The *cleanable* range is the inactive segments up to the first uncleanable offset
   (Kafka's ``LogCleanerManager.cleanableOffsets``): the active segment, and, with
   ``min.compaction.lag.ms``, the first segment after the first dirty offset whose
   largest timestamp is within that lag of now, and all after it. What lies beyond is
   never read or touched, so a key whose newest value is there keeps its older values
   until it becomes cleanable (as in Kafka, whose offset map stops at the same offset).
2. An offset map ``key -> last offset`` is built over the cleanable range.
3. Segments are grouped, oldest first, while their summed size stays within
   ``segment_bytes`` and their offsets within an i32 of the first base offset (Kafka's
   ``groupSegmentsBySize``); each group becomes one segment named after its first.
4. Each batch is filtered. A record is kept when it is its key's last occurrence, unless
   it is a tombstone (null value) older than ``delete_retention_ms``. Records without a
   key are dropped (on a compacted topic the produce handler must reject them with
   INVALID_RECORD, as Kafka does; this module only cleans). A batch that keeps every
   record is copied byte for byte; one that keeps some is rebuilt with
   :class:`~kproto.records.BatchBuilder`, same base offset, compression, producer id,
   epoch, base sequence, transactional flag and leader epoch, each record at its own
   offset (``offset_delta``), and the original lastOffsetDelta, so the batch still spans
   the same offsets and the producer's last sequence survives (Kafka's
   ``buildRetainedRecordsInto`` / ``overrideLastOffset``). A batch that keeps nothing is
   dropped, unless it is the last batch of a producer id (its sequence numbers must
   survive, Kafka's RETAIN_EMPTY) or the last batch of its group: then an empty batch,
   only a header with the same base offset and lastOffsetDelta (Kafka's
   ``writeEmptyHeader``), keeps the offsets advancing. Offsets never change; compaction
   leaves gaps, which consumers skip.
5. Legacy (magic 0/1) messages are copied unchanged.
6. Transactions (Kafka's ``CleanedTransactionMetadata``, KIP-98): the cleanable range
   ends before the segment holding the partition's last stable offset
   (:attr:`PartitionLog.first_unstable_offset`, the broker's producer state, capped by the
   high watermark; Kafka stops at the LSO itself), so no undecided record is cleaned. The
   aborted transactions of the range come from the ``.txnindex`` files
   (:meth:`PartitionLog.collect_aborted_transactions`) and are met in first-offset order:
   a batch of an aborted transaction adds no key to the offset map and is removed (an
   empty batch stays where a producer's last sequence or the group's last offset must);
   an ABORT marker whose transaction had batches in the range is kept and its index entry
   goes to the cleaned segment's ``.txnindex``; a COMMIT marker whose transaction had
   batches in the range is kept (the transactions are followed across the groups, so data
   and marker may lie in two of them). Any other marker (its data is gone) may go: it is kept
   ``delete.retention.ms`` from the first cleaning that found it so (Kafka's delete
   horizon, KIP-534, which Kafka writes into the batch; here it is kept in memory per log,
   so a restart starts that wait again, which only keeps a marker longer), and also while
   it is the last batch of its producer (its epoch fences zombies). Its index entry goes.

When a log is due (Kafka's ``LogCleanerManager.grabFilthiestCompactedLog``, decided by
:func:`minibroker.log.maintenance.compact` through :func:`cleanable`): the part of the
log already cleaned ends at the *first dirty offset*, where the last cleaning stopped
(Kafka's ``cleaner-offset-checkpoint``; kept in memory here, so after a restart the whole
log is dirty, as in Kafka without a checkpoint). A log is cleaned when its dirty ratio,
cleanable bytes / (clean bytes + cleanable bytes), exceeds ``min.cleanable.dirty.ratio``,
or when ``max.compaction.lag.ms`` has passed since the first batch of its oldest dirty
segment and something is cleanable, whatever the ratio. :func:`clean` and
:meth:`PartitionLog.compact` clean whatever is cleanable, due or not.

Tombstones: Kafka 3.1+ (KIP-534) starts a tombstone's ``delete.retention.ms`` at the first
cleaning that sees it, stored in the batch's base timestamp with the delete-horizon
attribute bit. Here the clock starts at the tombstone's own timestamp: stateless and
simpler, at the price that a tombstone produced with an old timestamp goes sooner.

Swapping files (crash safety, as Kafka's ``.cleaned`` / ``.swap`` suffixes): a group is
written to ``NNN.log.cleaned`` (+ ``.index.cleaned``, ``.timeindex.cleaned``) and fsynced;
the three are renamed to ``.swap``, the ``.log`` last, and the directory is fsynced: the
``.log.swap`` name is the commit point. Then the group's other segments are deleted and
the ``.swap`` files renamed over the first one's. On open, ``.cleaned`` files are deleted
(the originals are intact) and a ``.log.swap`` is completed by :func:`complete_swaps`.
Readers holding slices of replaced segments keep reading the old files.

Off the event loop: :class:`Cleaning` splits one compaction in three phases, so that the
broker (:mod:`minibroker.log.maintenance`) runs the long one in a worker thread while the
log goes on serving appends and fetches on its event loop. The log is not thread-safe,
so the thread touches none of it:

- ``plan`` (the log's thread) groups the inactive segments, opens each anew for reading
  (descriptors of its own: the log may close or delete the originals meanwhile, and a
  closed descriptor's number can be reused by another file), opens the active segment
  likewise (its bytes up to now: for the producers' last batches), and creates the
  ``.cleaned`` output files, so that the thread never adds a name to the directory;
- ``build`` (any thread) reads, filters and writes the outputs and fsyncs them. Inactive
  segments never change, so reading them races with nothing; a flag stops it between
  two batches;
- ``apply`` (the log's thread) swaps each group in, but only a group the log still holds
  as it was, in a log not closed: a DeleteRecords, retention or topic deletion that came
  meanwhile wins, and that group's output is deleted. The offset map may miss records
  appended meanwhile; they can only make more records obsolete, so what is kept is
  never wrong, at most not minimal until the next cleaning.

:func:`clean` runs the three phases in a row on the calling thread.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from kproto.errors import CorruptRecordError
from kproto.log_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_name,
)
from kproto.records import (
    Batch,
    BatchBuilder,
    ControlType,
    Record,
    empty_batch,
    parse_control_record,
    read_batch_header,
    rewrite_batch,
)
from minibroker.log.config import INT32_MAX, LogConfig
from minibroker.log.files import fsync_dir
from minibroker.log.segment import LogSegment
from minibroker.log.txn_index import AbortedTxn

if TYPE_CHECKING:
    from minibroker.log.partition import PartitionLog

__all__ = ["Cleanable", "Cleaning", "CleanerStats", "CleaningAborted", "clean", "cleanable", "complete_swaps"]

log = logging.getLogger(__name__)

CLEANED = ".cleaned"
SWAP = ".swap"

_LOG_SWAP = re.compile(r"^(\d{20})\.log\.swap$")

# Where each log's last cleaning stopped: Kafka's cleaner-offset-checkpoint, in memory.
_first_dirty: WeakKeyDictionary[PartitionLog, int] = WeakKeyDictionary()
# Each log's markers that may go, by offset: when (ms) they may (Kafka's delete horizon).
_marker_horizons: WeakKeyDictionary[PartitionLog, dict[int, int]] = WeakKeyDictionary()


@dataclass(slots=True)
class CleanerStats:
    """What one :func:`clean` did."""

    groups: int = 0
    segments_cleaned: int = 0
    batches_read: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_removed: int = 0
    empty_batches_kept: int = 0
    markers_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


class _CleanedTxns:
    """Kafka's ``CleanedTransactionMetadata``: the transactions met while walking batches
    in offset order, given the aborted ones of the range (see the module docstring)."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._pending = sorted(aborted, key=lambda t: t.first_offset)
        self._next = 0
        self._aborted: dict[int, tuple[AbortedTxn, bool]] = {}  # producer id -> (entry, batches seen)
        self._committed: set[int] = set()  # producers whose batches were seen, transaction not aborted
        self.kept: list[AbortedTxn] = []  # index entries of the aborts kept, in marker order

    def _consume_up_to(self, offset: int) -> None:
        while self._next < len(self._pending) and self._pending[self._next].first_offset <= offset:
            txn = self._pending[self._next]
            self._next += 1
            self._aborted.setdefault(txn.producer_id, (txn, False))

    def on_batch(self, batch: Batch) -> bool:
        """A data batch; whether it belongs to an aborted transaction (``onBatchRead``)."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        entry = self._aborted.get(batch.producer_id)
        if entry is not None:
            self._aborted[batch.producer_id] = (entry[0], True)
            return True
        self._committed.add(batch.producer_id)
        return False

    def on_marker(self, batch: Batch) -> bool:
        """A control batch; whether it may be discarded (``onControlBatchRead``)."""
        self._consume_up_to(batch.last_offset)
        records = batch.records()
        if not records:
            return True  # already emptied by a cleaning
        try:
            _, kind = parse_control_record(records[0])
        except CorruptRecordError:
            return False
        if kind == ControlType.ABORT:
            entry = self._aborted.pop(batch.producer_id, None)
            if entry is not None and entry[1]:
                self.kept.append(entry[0])
                return False
            return True
        if kind == ControlType.COMMIT:
            if batch.producer_id in self._committed:
                self._committed.discard(batch.producer_id)
                return False
            return True
        return False


def _rebuilt(batch: Batch, kept: list[Record]) -> bytes:
    builder = BatchBuilder(
        2, batch.compression, base_offset=batch.base_offset, producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional, partition_leader_epoch=batch.partition_leader_epoch,
        timestamp_type=batch.timestamp_type if batch.timestamp_type in (0, 1) else 0,
    )
    for record in kept:
        builder.append(record.timestamp, record.key, record.value, record.headers or None,
                       offset_delta=record.offset - batch.base_offset)
    # The builder ends the batch at its last record; the original end must stay, so that
    # offsets keep advancing past dropped records and the last sequence number survives.
    return rewrite_batch(builder.build(), last_offset_delta=batch.last_offset_delta)


@dataclass(frozen=True, slots=True)
class Cleanable:
    """What of a log compaction may clean now, and whether it is due (Kafka's
    ``LogToClean``; see "When a log is due" above)."""

    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment's base offset: the cleanable range ends there
    clean_bytes: int  # segments wholly below the first dirty offset
    cleanable_bytes: int  # inactive segments from the first dirty offset to the first uncleanable one
    max_compaction_delay_ms: int  # how long past max.compaction.lag.ms the oldest dirty batch is

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    def due(self, config: LogConfig) -> bool:
        """Kafka's test: ``(needCompactionNow && cleanableBytes > 0) || cleanableRatio > minCleanableRatio``."""
        return ((self.max_compaction_delay_ms > 0 and self.cleanable_bytes > 0)
                or self.dirty_ratio > config.min_cleanable_dirty_ratio)


def cleanable(log_: PartitionLog, now_ms: int) -> Cleanable:
    """The cleanable range of ``log_`` at ``now_ms`` (Kafka's ``cleanableOffsets``,
    ``calculateCleanableBytes`` and ``maxCompactionDelay``)."""
    segments = log_.segments
    first_dirty = _first_dirty.get(log_, log_.log_start_offset)
    if not log_.log_start_offset <= first_dirty <= log_.log_end_offset:
        first_dirty = log_.log_start_offset  # as Kafka resets a checkpoint out of range
    ends = [s.base_offset for s in segments[1:]]  # each inactive segment ends before the next
    dirty = [s for s, end in zip(segments, ends) if end > first_dirty]
    first_uncleanable = segments[-1].base_offset
    # Never past the last stable offset (Kafka's cleanableOffsets): the segment holding it
    # stays whole, so no record of an undecided transaction is cleaned.
    unstable = log_.first_unstable_offset()
    lso = log_.high_watermark if unstable is None else min(unstable, log_.high_watermark)
    for segment, end in zip(segments, ends):
        if end > lso:
            first_uncleanable = min(first_uncleanable, segment.base_offset)
            break
    if log_.config.min_compaction_lag_ms > 0:
        for segment in dirty:  # Kafka: the first dirty segment with a record within the lag
            if segment.largest_timestamp > now_ms - log_.config.min_compaction_lag_ms:
                first_uncleanable = segment.base_offset
                break
    clean_until = now_ms - log_.config.max_compaction_lag_ms
    stamps = [t for t in map(_first_batch_timestamp, dirty) if t > 0] if clean_until > 0 else []
    delay = clean_until - min(stamps) if stamps and min(stamps) < clean_until else 0
    return Cleanable(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=sum(s.size for s, end in zip(segments, ends) if end <= first_dirty),
        cleanable_bytes=sum(s.size for s in dirty if s.base_offset < first_uncleanable),
        max_compaction_delay_ms=delay,
    )


def _first_batch_timestamp(segment: LogSegment) -> int:
    """The max timestamp of a segment's first batch (Kafka's ``getFirstBatchTimestamp``),
    read once from the file for a segment opened without a full scan."""
    if segment.first_batch_timestamp is None:
        for _, batch in segment.scan():
            segment.first_batch_timestamp = batch.max_timestamp
            break
    return -1 if segment.first_batch_timestamp is None else segment.first_batch_timestamp


def _group(log_: PartitionLog, segment_bytes: int, first_uncleanable: int) -> list[list[LogSegment]]:
    segments = [s for s in log_.segments[:-1] if s.base_offset < first_uncleanable]
    segments.append(log_.segments[len(segments)])
    groups: list[list[LogSegment]] = []
    for i, segment in enumerate(segments[:-1]):
        end = segments[i + 1].base_offset  # the next segment bounds this one's offsets
        if groups:
            current = groups[-1]
            if (sum(s.size for s in current) + segment.size <= segment_bytes
                    and end - 1 - current[0].base_offset <= INT32_MAX):
                current.append(segment)
                continue
        groups.append([segment])
    return groups


def _batches(group: list[LogSegment]) -> Iterator[tuple[LogSegment, int, Batch]]:
    for segment in group:
        for position, batch in segment.scan():
            yield segment, position, batch


class CleaningAborted(Exception):
    """The log went away (closed, its topic deleted) or the broker is stopping."""


@dataclass(eq=False)
class Cleaning:
    """One compaction of one log, in three phases (see "Off the event loop" above).

    Build it with :meth:`plan` on the thread that drives the log; run :meth:`build` on
    any thread; then :meth:`apply` on the log's thread again. :meth:`discard` undoes a
    cleaning that will not be applied. :attr:`aborted` stops :meth:`build` between two
    batches.
    """

    log: PartitionLog
    now_ms: int
    delete_retention_ms: int
    groups: list[list[LogSegment]]  # the log's segments, grouped (the active one excluded)
    readers: list[list[LogSegment]]  # what build reads: the same segments, opened anew
    active_reader: LogSegment  # the active segment as it was, for the producers' last batches
    outputs: list[LogSegment]  # one cleaned segment per group, its files already created
    stats: CleanerStats
    first_uncleanable_offset: int  # where the cleaned range ends: the next first dirty offset
    range_txns: list[AbortedTxn]  # the aborted transactions of the cleanable range
    horizons: dict[int, int]  # markers that may go: offset -> from when (a copy of the log's)
    new_horizons: dict[int, int] = field(default_factory=dict)  # markers found so by this cleaning
    aborted: bool = False

    @classmethod
    def plan(cls, log_: PartitionLog, now_ms: int) -> Cleaning | None:
        """Snapshot what to clean and create the output files; None when nothing is cleanable.

        Every file build writes exists once this returns, so a thread never adds a name
        to the directory: a topic deleted meanwhile only unlinks files build still writes.
        """
        if len(log_.segments) < 2 or log_.closed:
            return None
        upper = cleanable(log_, now_ms).first_uncleanable_offset
        groups = _group(log_, log_.config.segment_bytes, upper)
        if not groups:
            return None
        readers: list[list[LogSegment]] = []
        outputs: list[LogSegment] = []
        opened: list[LogSegment] = []
        try:
            for group in groups:
                readers.append([_reader(log_, s) for s in group])
                opened.extend(readers[-1])
                outputs.append(log_.new_segment(group[0].base_offset, now_ms, suffix=CLEANED if log_.directory else ""))
            active = _reader(log_, log_.segments[-1])
        except BaseException:
            for segment in outputs:
                segment.delete()
            _close_readers(opened, log_)
            raise
        ends = [log_.segments[log_.segments.index(group[-1]) + 1].base_offset for group in groups]
        range_txns = log_.collect_aborted_transactions(groups[0][0].base_offset, ends[-1])
        return cls(log_, now_ms, log_.config.delete_retention_ms, groups, readers, active, outputs, CleanerStats(),
                   upper, range_txns, dict(_marker_horizons.get(log_, {})))

    def build(self) -> CleanerStats:
        """Read the snapshot and write every cleaned segment (safe off the log's thread:
        it touches only its readers and outputs). Raises :exc:`CleaningAborted`."""
        stats = self.stats
        try:
            cleanable = [r for group in self.readers for r in group]
            latest: dict[bytes, int] = {}
            txns = _CleanedTxns(self.range_txns)
            for _, _, batch in self._batches(cleanable):
                if batch.magic < 2:
                    continue
                if batch.is_control:
                    txns.on_marker(batch)
                elif not txns.on_batch(batch):  # an aborted transaction's keys do not count
                    for record in batch.records():
                        if record.key is not None:
                            latest[record.key] = record.offset
            # The last batch of each producer id anywhere in the log (active segment included):
            # it carries the producer's last sequence number and must not vanish.
            last_of_producer: dict[int, int] = {}
            for _, _, batch in self._batches([*cleanable, self.active_reader]):
                if batch.producer_id >= 0:
                    last_of_producer[batch.producer_id] = batch.last_offset

            def keep(record: Record) -> bool:
                if record.key is None or latest.get(record.key) != record.offset:
                    return False
                if record.value is None and self.now_ms - record.timestamp > self.delete_retention_ms:
                    stats.tombstones_removed += 1
                    return False
                return True

            # One walk of the transactions across the groups (Kafka's doClean shares one
            # CleanedTransactionMetadata): a transaction's data and its marker may lie in
            # two groups, and the marker must know its data is still there.
            txns = _CleanedTxns(self.range_txns)
            for group, cleaned in zip(self.readers, self.outputs):
                stats.groups += 1
                stats.segments_cleaned += len(group)
                stats.bytes_before += sum(s.size for s in group)
                batches = self._batches(group)
                current = next(batches, None)
                while current is not None:
                    following = next(batches, None)
                    segment, position, batch = current
                    stats.batches_read += 1
                    last_of_producer_here = last_of_producer.get(batch.producer_id) == batch.last_offset
                    if batch.magic >= 2 and batch.is_control:
                        drop = txns.on_marker(batch) and self._marker_may_go(batch) and not (
                            following is None or last_of_producer_here)
                        out, max_ts = (None, -1) if drop else (segment.pread(position, batch.size), batch.max_timestamp)
                        stats.markers_removed += drop
                    else:
                        aborted_batch = batch.magic >= 2 and txns.on_batch(batch)
                        out, max_ts = _filter(segment, position, batch, (lambda r: False) if aborted_batch else keep,
                                              stats, retain_empty=following is None or last_of_producer_here)
                    if out is not None:
                        cleaned.append(out, last_offset=batch.last_offset, max_timestamp=max_ts)
                    current = following
                for txn in txns.kept:  # the aborts whose markers this group kept
                    cleaned.txn_index.append(txn)
                txns.kept.clear()
                cleaned.on_become_inactive()
                if self.log.directory is not None:
                    cleaned.flush()
                stats.bytes_after += cleaned.size
        finally:
            _close_readers([*(r for group in self.readers for r in group), self.active_reader], self.log)
        return stats

    def _marker_may_go(self, batch: Batch) -> bool:
        """A marker whose transaction's data is gone: kept ``delete.retention.ms`` from the
        first cleaning that found it so (Kafka's delete horizon)."""
        horizon = self.horizons.get(batch.base_offset)
        if horizon is None:
            self.new_horizons[batch.base_offset] = self.now_ms + self.delete_retention_ms
            return False
        return horizon <= self.now_ms

    def _batches(self, segments: list[LogSegment]) -> Iterator[tuple[LogSegment, int, Batch]]:
        for item in _batches(segments):
            if self.aborted:
                raise CleaningAborted(f"compaction of {self.log!r} aborted")
            yield item

    def apply(self) -> CleanerStats:
        """Swap each group for its cleaned segment, on the log's thread. A group the log
        no longer holds as it was (DeleteRecords or retention removed some of it) or a
        closed log (its topic deleted) gets nothing: its output is deleted."""
        pending = list(zip(self.groups, self.outputs))
        try:
            while pending:
                group, cleaned = pending.pop(0)
                if self.log.closed or not _intact(self.log, group):
                    cleaned.delete()
                    continue
                if self.log.directory is not None:
                    _swap_in(self.log, group, cleaned)
                self.log.replace_segments(group, cleaned)
        finally:
            for _, cleaned in pending:
                cleaned.delete()  # not committed: the originals stay
        if not self.log.closed:
            _first_dirty[self.log] = self.first_uncleanable_offset
            horizons = _marker_horizons.setdefault(self.log, {})
            for offset, horizon in self.new_horizons.items():
                horizons.setdefault(offset, horizon)
            for offset in [o for o in horizons if o < self.log.log_start_offset]:
                del horizons[offset]
        return self.stats

    def discard(self) -> None:
        """Delete every output: the originals stay (after an abort or a failed build)."""
        for cleaned in self.outputs:
            cleaned.delete()


def _reader(log_: PartitionLog, segment: LogSegment) -> LogSegment:
    """A segment to read off the log's thread. On disk, the same files opened anew: the
    log may close or delete the original meanwhile (a descriptor number closed under a
    reader could even be reused by another file). In memory, the segment itself: its
    bytes are only ever appended to, and a deleted one reads as empty."""
    if log_.directory is None:
        return segment
    return LogSegment.open(log_.directory, segment.base_offset,
                           index_interval_bytes=log_.config.index_interval_bytes, now_ms=0)


def _close_readers(readers: list[LogSegment], log_: PartitionLog) -> None:
    if log_.directory is not None:
        for reader in readers:
            reader.close()


def _intact(log_: PartitionLog, group: list[LogSegment]) -> bool:
    """Whether ``group`` is still a run of inactive segments of ``log_``."""
    segments = log_.segments
    for i, segment in enumerate(segments[:-1]):
        if segment is group[0]:
            run = segments[i : i + len(group)]
            return len(run) == len(group) and all(a is b for a, b in zip(run, group)) and i + len(group) < len(segments)
    return False


def clean(log_: PartitionLog, now_ms: int) -> CleanerStats:
    """Compact every inactive segment of ``log_`` (see the module docstring), all phases
    on the calling thread.

    The log's offsets, log start offset and active segment are unchanged.
    """
    cleaning = Cleaning.plan(log_, now_ms)
    if cleaning is None:
        return CleanerStats()
    try:
        cleaning.build()
    except BaseException:
        cleaning.discard()  # nothing committed: the originals stay
        raise
    return cleaning.apply()


def _filter(segment: LogSegment, position: int, batch: Batch, keep, stats: CleanerStats, *, retain_empty: bool) -> tuple[bytes | None, int]:
    """One batch after cleaning: (bytes or None when dropped, its max timestamp)."""
    if batch.magic < 2 or batch.is_control:
        return segment.pread(position, batch.size), batch.max_timestamp
    records = batch.records()
    stats.records_read += len(records)
    kept = [r for r in records if keep(r)]
    stats.records_kept += len(kept)
    if len(kept) == len(records):
        return segment.pread(position, batch.size), batch.max_timestamp
    if kept:
        data = _rebuilt(batch, kept)
        return data, read_batch_header(data).max_timestamp
    if retain_empty:
        stats.empty_batches_kept += 1
        return empty_batch(batch), batch.max_timestamp
    return None, -1


def _swap_in(log_: PartitionLog, group: list[LogSegment], cleaned: LogSegment) -> None:
    """Swap the files of ``cleaned`` in for ``group``'s. A failure before the commit point
    leaves the originals; one after it leaves files that the log in memory does not
    match: the log goes offline (KAFKA_STORAGE_ERROR) until a reopen completes the swap."""
    directory = log_.directory
    assert directory is not None
    try:
        cleaned.rename(CLEANED, SWAP)  # the .log goes last: its new name is the commit
    except BaseException:
        cleaned.delete()  # not committed: the originals stay
        raise
    try:
        fsync_dir(directory)  # committed: from here a crash is completed by complete_swaps
        for old in group[1:]:
            old.delete()
        # The first old segment's files are replaced by the renames below; its open
        # descriptors (and any LogSlice on them) keep the old bytes readable.
        group[0].offset_index.close()
        group[0].time_index.close()
        if not len(cleaned.txn_index):
            group[0].txn_index.unlink()  # no .txnindex.swap replaces it
        cleaned.rename(SWAP, "")
        fsync_dir(directory)
    except OSError as exc:
        log_.go_offline(f"compaction failed after its commit point: {exc}")
        raise


def complete_swaps(directory: Path, config: LogConfig) -> int:
    """Finish compactions that committed (a ``.log.swap`` exists) before a crash.

    Each swap segment is recovered (its indexes rebuilt if missing), the old segments
    whose base offsets fall in its offset range are deleted, and it takes its final name.
    Returns how many were completed. ``.cleaned`` leftovers are the caller's to delete.
    """
    done = 0
    swaps = sorted(int(m.group(1)) for p in directory.iterdir() if (m := _LOG_SWAP.match(p.name)))
    for base in swaps:
        segment = LogSegment.open(directory, base, index_interval_bytes=config.index_interval_bytes, now_ms=0, suffix=SWAP)
        segment.recover()
        end = max(segment.next_offset, base + 1)
        for path in directory.iterdir():
            name = path.name
            if name.endswith(LOG_SUFFIX) and name[:20].isdigit() and base < int(name[:20]) < end:
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    (directory / f"{name[:20]}{suffix}").unlink(missing_ok=True)
        segment.rename(SWAP, "")
        segment.close()
        log.warning("completed the compaction of %s%s", segment_name(base), LOG_SUFFIX)
        done += 1
    if done:
        fsync_dir(directory)
    return done
