"""One partition's log: record batches in segments, in memory or in Kafka's on-disk layout.

Theory of operation: a Produce batch is validated by the handler, then appended here
with its base offset and partition leader epoch written into the header. Both fields lie
outside the CRC-32C (which covers attributes to the end), so the checksum stays valid
and nothing is re-encoded. Fetch hands back the same bytes.

The log is a list of segments (:mod:`minibroker.log.segment`), each named by its base
offset; the last is the active one, the only one appended to. ``PartitionLog()`` keeps
them in memory; ``PartitionLog(directory)`` keeps them as Kafka does, in a partition
directory (``<topic>-<partition>/``) of ``NNN.log``, ``NNN.index`` and ``NNN.timeindex``
files that Kafka's tools read (see :mod:`minibroker.log.index` for the formats). Both
modes share every rule: rolling, retention, DeleteRecords, compaction.

Durability: what survives what
------------------------------

``append`` writes the batch to the ``.log`` with ``pwrite`` before it returns, so the
bytes are in the operating system's page cache at once. Then:

- **This process crashes or is killed** (an exception, ``SIGKILL``, the OOM killer): every
  append that returned survives, whatever the flush policy. The kernel owns the page
  cache and writes it back later; no fsync is needed for this case. An append cut short
  by the kill leaves a partial batch at the end of the active segment, which the next
  open cuts off.
- **The machine crashes or loses power**: only what was fsynced survives for sure.
  ``flush()`` fsyncs; ``flush_interval_messages = N`` fsyncs after every N appended
  records, so up to N - 1 acknowledged records can be lost (N = 1: none are);
  ``flush_ms = T`` fsyncs once T ms have passed since the last flush, checked at each
  append and by :meth:`PartitionLog.run_scheduled` (the broker's periodic upkeep; Kafka's
  flusher task, every ``log.flush.scheduler.interval.ms``); both defaults
  (Long.MAX, Kafka's) never fsync on append and rely on the kernel's writeback
  (typically within ~30 s) and on rolls: a segment is fsynced, with its indexes and the
  directory, when it stops being active, so every segment but the active one is durable.
  Whatever the kernel wrote back may be torn at the end (a partial batch, zeros); the next
  open keeps the longest valid prefix. Kafka makes the same trade: with one replica and
  no fsync it loses what the page cache held; with replicas it relies on them instead.

When a write fails (disk full, I/O errors)
------------------------------------------

The rule: an offset is never assigned twice, and bytes that are not valid batches are
never served. Kafka's way (``LogDirFailureChannel``) is to take the whole log dir offline
on any ``IOException`` and answer KAFKA_STORAGE_ERROR; this log does the same for itself,
but first tries to undo, so that a full disk costs one refused batch, not the partition:

- **A write fails and is undone** (the usual case: ENOSPC, maybe after a short write that
  left part of the batch in the file). The segment truncates the ``.log`` and both
  indexes back to their sizes before the append and restores its in-memory state
  (:mod:`minibroker.log.segment`); ``append`` raises
  :class:`~kproto.errors.KafkaStorageError` and the log end offset has not moved. The
  log is exactly as before, so the producer's retry gets that same offset once space is
  back, and the offset was never given to anything else. Produce answers
  KAFKA_STORAGE_ERROR (retriable) for that partition only.
- **A roll fails** to create the new segment's files: those that were created are
  removed, the old segment stays active, and the batch is refused as above.
- **The undo fails too, or an fsync fails.** The files may now hold bytes that the log
  does not account for, or data the kernel dropped (after a failed fsync a retried one
  may report success: nothing tells what reached the disk). The log goes **offline**:
  every later ``append`` and ``read`` raises KafkaStorageError (Produce and Fetch answer
  KAFKA_STORAGE_ERROR), retention and compaction leave it alone, ``close`` writes nothing,
  until the log is reopened (the broker restarts), which recovers it from its files as
  below. A batch whose write failed was never acknowledged, so if recovery keeps it (it
  was written whole before the failure) a producer retry may duplicate it, as with Kafka.

``log_end_offset`` moves only after the batch and its index entries are written, which is
what keeps an offset from being handed out twice.

Opening a directory (recovery)
------------------------------

Every open recovers, and validates every segment: leftovers of an interrupted compaction
are completed or dropped (see :mod:`minibroker.log.cleaner`), index files without a
``.log`` are removed, and every segment is read whole, every batch's length, CRC-32C and
offsets checked (increasing, and below the next segment's base offset). The active
segment is cut after its last good batch and its indexes are rebuilt; appends continue at
the offset after that batch. An inactive segment whose batches are all valid keeps its
indexes if they check (each offset index entry names a batch; time index sizes, order,
bounds); otherwise it is recovered like the active one: cut after its last valid batch,
indexes rebuilt, fsynced. The later segments stay: the offsets cut off are a gap, legal
in a Kafka log (compaction leaves them too), and consumers skip to the next batch.

The rule is the on-disk invariant of issue 10: the broker serves only valid data and
loses nothing acknowledged that is intact on disk, whatever file was damaged and however
cleanly the broker stopped. Kafka recovers only the segments after its recovery point,
and only after an unclean shutdown (no ``.kafka_cleanshutdown``); damage inside an old
segment is then served as is, and the fetching client fails on its CRC. minibroker checks
everything at every open instead, because it is cheap: one read of each file, CRC-32C in
C. Measured on a 1 GiB partition (8 segments of 128 MiB, one core of a shared VM):
0.3 s with 16 KiB batches and 1 s with 1 KiB batches when the files are in the page cache,
2 to 2.5 s read cold from a virtio disk (the open was 0.1 s when only the active segment
was read). The cost grows with the data: a broker holding 100 GiB would take minutes to
start, which is Kafka's territory, not a test broker's.

The log start offset (moved by retention and DeleteRecords) is kept in
``log-start-offset-checkpoint`` in the partition directory, in the text format of Kafka's
log-directory-wide file of that name (version 0, one entry: ``topic partition offset``).

Rolling (Kafka's ``LogSegment.shouldRoll``): the active segment rolls before a batch that
would take it past ``segment_bytes``, once it is older than ``segment_ms`` less its own
random jitter (``segment_jitter_ms``, drawn when the segment is made or loaded), when its
offset or time index holds what ``segment_index_bytes`` allows, or when the batch's
offsets would not fit its 32-bit relative offsets.

Deleting segments (retention, DeleteRecords): a segment leaves the log at once and its
files are renamed ``*.deleted``; they are removed ``file_delete_delay_ms`` later by
:meth:`PartitionLog.run_scheduled` (at once when that is 0, and when the log closes), as
Kafka's ``LocalLog.deleteSegmentFiles`` does with its scheduler. Reads in flight hold the
``.log``'s descriptor anyway (see :mod:`minibroker.log.segment`).

Replication (KIP-101, KIP-279; Kafka's ``UnifiedLog``)
------------------------------------------------------

- **Leader epochs**: :attr:`PartitionLog.epochs` (:mod:`minibroker.log.leader_epochs`) holds
  where each leader epoch began; :meth:`~PartitionLog.append` records the epoch it stamps
  when it is newer, :meth:`~PartitionLog.append_replicated` the epochs of the batches it
  copies. On disk the cache is ``leader-epoch-checkpoint`` in the partition directory; a
  missing or unreadable one is rebuilt at open from the batch headers. At open it is cut
  to the log end offset (a crash may have written it ahead of the log) and to the log
  start offset.
- **A follower's appends**: :meth:`~PartitionLog.append_replicated` takes batches exactly
  as the leader wrote them (offsets, epochs and CRCs untouched: the ``.log`` files come
  out byte-identical), CRC-checked, starting at or after the log end offset (Kafka lets
  offsets skip forward, as compaction leaves them; backwards is refused).
- **The high watermark** is the log end offset until someone sets it
  (:meth:`~PartitionLog.set_high_watermark`: a replicated partition); then it stays
  within ``[log start, log end]``. ``read_slices(..., max_offset=hw)`` gives a
  consumer only whole batches below it.
- **Truncation**: :meth:`~PartitionLog.truncate_to` removes whole batches from the end
  (segments wholly past the target are deleted, the one holding it is cut at a batch
  start and its indexes rebuilt), cuts the epoch cache and clamps the high watermark and
  recovery point; :meth:`~PartitionLog.truncate_fully_and_start_at` empties the log.
  Producer state is the broker's: the caller rebuilds it after a truncation (the records
  removed are returned).
- **A crash**: :meth:`~PartitionLog.abandon` closes the files without writing anything.

Transactions (KIP-98): each segment has its aborted-transaction index, ``NNN.txnindex``
(:mod:`minibroker.log.txn_index`): :meth:`~PartitionLog.append_aborted_txn` records an
aborted transaction in the index of the segment holding its ABORT marker (the broker
knows the transaction's first offset: the producer state is its business),
:meth:`~PartitionLog.collect_aborted_transactions` answers a read_committed fetch. The
index is truncated, deleted and renamed with its segment, and cut at open to its valid
prefix inside the segment; the broker's replay of the log at start adds what a crash lost.

Not implemented: partition.metadata (the broker's business), preallocated files (``preallocate``, and
index files sized to ``segment.index.bytes``).
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kproto.errors import KafkaStorageError, OffsetOutOfRangeError
from kproto.log_files import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    format_checkpoint,
    parse_checkpoint,
    parse_partition_dir,
    parse_segment_file,
    segment_name,
)
from kproto.log_files import LOG_START_OFFSET_CHECKPOINT as CHECKPOINT_FILE
from kproto.records import (
    decode_record_set,
    read_batches,
    stamped_head,
)
from minibroker.log.cleaner import CleanerStats, clean, complete_swaps
from minibroker.log.config import LogConfig
from minibroker.log.files import fsync_dir
from minibroker.log.index import IndexCorrupt
from minibroker.log.leader_epochs import LeaderEpochCache
from minibroker.log.segment import LogSegment, SegmentDamaged
from minibroker.log.store import LogSlice
from minibroker.log.txn_index import AbortedTxn

__all__ = ["PartitionLog", "CHECKPOINT_FILE"]

log = logging.getLogger(__name__)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _no_transactions() -> int | None:
    return None


class PartitionLog:
    """The batches of one partition, with Kafka's offsets bookkeeping.

    With one replica the high watermark is the log end offset: a batch is committed
    as soon as it is appended; a replicated partition sets it
    (:meth:`set_high_watermark`). Not thread-safe: the broker drives it from its event loop.

    Args:
        directory: the partition directory (created if missing); None keeps the log in
            memory.
        config: segment, retention, flush and cleanup settings (Kafka's defaults).
        clock: milliseconds since the epoch, for time-based rolling of batches without
            timestamps, for ``flush_ms`` and ``file_delete_delay_ms``, and for retention
            and compaction when no ``now_ms`` is given.
        rng: draws each segment's roll jitter (``segment_jitter_ms``); a seeded one makes
            it repeatable.
        epoch_checkpoint: keep :attr:`epochs` in ``leader-epoch-checkpoint`` (a replica
            of a cluster); otherwise the cache lives in memory and is rebuilt at each
            open from the batches (the single broker's directories keep their files).

    Attributes:
        log_start_offset: the first offset a consumer may fetch.
        log_end_offset: the offset the next appended record gets.
        epochs: the leader epochs of the log and where each began (KIP-101).
        first_unstable_offset: the first offset of an undecided transaction (or one whose
            marker is not yet below the high watermark), None when there is none: the
            broker's producer state answers it; compaction stops before it.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        config: LogConfig | None = None,
        clock: Callable[[], int] | None = None,
        rng: random.Random | None = None,
        epoch_checkpoint: bool = False,
    ) -> None:
        self.config = config if config is not None else LogConfig()
        self.directory = Path(directory) if directory is not None else None
        self._clock = clock if clock is not None else _wall_clock_ms
        self._random = rng if rng is not None else random.Random()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []  # for bisect: base offset of each segment
        self.log_start_offset = 0
        self.log_end_offset = 0
        self._recovery_point = 0  # offsets below are fsynced (or the log is in memory)
        self._last_flush_ms = self._clock()  # Kafka's lastFlushedTime, for flush_ms
        # Deleted segments whose files (renamed *.deleted) go at a time: file_delete_delay_ms.
        self._deleted: list[tuple[int, LogSegment]] = []
        self._closed = False
        self._offline_reason: str | None = None  # why a storage error took the log offline
        self._high_watermark: int | None = None  # None: the log end offset (one replica)
        self._epoch_checkpoint = epoch_checkpoint
        self.first_unstable_offset: Callable[[], int | None] = _no_transactions
        if self.directory is None:
            self._add_segment(self.new_segment(0))
            self.epochs = LeaderEpochCache(None)
        else:
            self._load()

    # -- facts ----------------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        """The offset below which records are committed: the log end offset unless
        :meth:`set_high_watermark` was called."""
        if self._high_watermark is None:
            return self.log_end_offset
        # Retention may move the log start past a high watermark set earlier.
        return min(max(self._high_watermark, self.log_start_offset), self.log_end_offset)

    def set_high_watermark(self, offset: int) -> None:
        """Set the high watermark (a replicated partition's), clamped to
        ``[log_start_offset, log_end_offset]``. From then on it moves only when set, or
        down when a truncation passes it."""
        self._high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first; the last is the active one."""
        return tuple(self._segments)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def offline(self) -> bool:
        """Whether a storage error took the log offline: its files may not match what it
        holds in memory, so it refuses every append and read until it is reopened."""
        return self._offline_reason is not None

    @property
    def recovery_point(self) -> int:
        """Offsets below this are fsynced (all of them for a log in memory)."""
        return self.log_end_offset if self.directory is None else self._recovery_point

    # -- writing --------------------------------------------------------------------------

    def append(self, batch: bytes | memoryview, *, last_offset_delta: int, max_timestamp: int, leader_epoch: int) -> int:
        """Append one validated v2 batch; returns the base offset it was given.

        Raises:
            KafkaStorageError: a write failed and was undone (the log is as it was, and a
                retry may succeed), or the log is (now) offline; see "Durability" above.
        """
        base = self.log_end_offset
        # Both outside the CRC, in the batch's first 16 bytes: those are written stamped,
        # then the rest as received, with no copy of the records and no CRC pass (issue 16).
        head = stamped_head(batch, base, leader_epoch)
        rest = memoryview(batch)[len(head):]
        size = len(head) + len(rest)
        last = base + last_offset_delta
        with self._storage("append"):
            segment = self._segments[-1]
            now = self._clock()
            if segment.should_roll(
                batch_size=size, max_timestamp=max_timestamp, last_offset=last, now_ms=now,
                segment_bytes=self.config.segment_bytes, segment_ms=self.config.segment_ms,
                index_bytes=self.config.segment_index_bytes,
            ):
                segment = self.roll(now_ms=now)
            segment.append(head, rest, last_offset=last, max_timestamp=max_timestamp)
            # Only now, with the batch and its index entries written: a failed write never
            # moves the log end offset, so no offset is ever handed out twice.
            self.log_end_offset = last + 1
            # Kafka's UnifiedLog.append (as leader): a batch of a newer epoch starts it.
            # An older epoch is not recorded (a leader never writes one; a copy of a log
            # written by brokers with higher epochs keeps its cache).
            if leader_epoch > self.epochs.latest_epoch():
                self._assign_epoch(leader_epoch, base)
            self._maybe_flush(now)
        return base

    def append_replicated(self, records: bytes | bytearray | memoryview) -> int:
        """Append a follower's copy of the leader's batches, byte for byte; returns the new
        log end offset.

        Kafka's ``UnifiedLog.appendAsFollower``: offsets, partition leader epochs and CRCs
        stay as the leader wrote them (no ``rewrite_batch``). Every batch is checked
        before any is written: CRC-32C, offsets increasing, the first starting at or after
        the log end offset (a gap forward is legal, as compaction leaves them; Kafka's
        ``UnexpectedAppendOffsetException`` refuses a batch below it), leader epochs not
        going backwards. A partial batch at the end (a fetch cut by its byte limit) is
        ignored. A batch of a newer epoch adds it to :attr:`epochs`.

        Raises:
            CorruptRecordError: a batch does not parse or its CRC is wrong (nothing written).
            ValueError: a batch starts below the log end offset, or offsets or epochs go
                backwards (nothing written).
            KafkaStorageError: as :meth:`append` (the batches before the failing one stay).
        """
        self._check_online()
        batches = []
        position, next_offset, epoch = 0, self.log_end_offset, self.epochs.latest_epoch()
        for batch in read_batches(records, True):
            first = batch.base_offset if batch.magic >= 2 else batch.last_offset
            if first < next_offset or batch.last_offset < first:
                raise ValueError(f"{self._where()}: batch at offsets {first}-{batch.last_offset} does not follow "
                                 f"offset {next_offset - 1} (log end offset {self.log_end_offset})")
            if batch.magic >= 2 and 0 <= batch.partition_leader_epoch < epoch:
                raise ValueError(f"{self._where()}: batch at offset {first} has leader epoch "
                                 f"{batch.partition_leader_epoch}, below {epoch}")
            if batch.magic >= 2:
                epoch = max(epoch, batch.partition_leader_epoch)
            batches.append((position, batch))
            position += batch.size
            next_offset = batch.last_offset + 1
        view = memoryview(records)
        with self._storage("append"):
            now = self._clock()
            for position, batch in batches:
                data = view[position:position + batch.size]
                first = batch.base_offset if batch.magic >= 2 else batch.last_offset
                segment = self._segments[-1]
                if segment.should_roll(
                    batch_size=batch.size, max_timestamp=batch.max_timestamp, last_offset=batch.last_offset,
                    now_ms=now, segment_bytes=self.config.segment_bytes, segment_ms=self.config.segment_ms,
                    index_bytes=self.config.segment_index_bytes,
                ):
                    # Kafka rolls at the batch's first offset (a gap forward may name it).
                    segment = self.roll(now_ms=now, base_offset=first)
                segment.append(data, last_offset=batch.last_offset, max_timestamp=batch.max_timestamp)
                self.log_end_offset = batch.last_offset + 1
                if batch.magic >= 2:
                    self._assign_epoch(batch.partition_leader_epoch, batch.base_offset)
            self._maybe_flush(now)
        return self.log_end_offset

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        try:
            self.epochs.assign(epoch, start_offset)
        except OSError as exc:
            # The batch is in the log already: the append cannot be undone, and the
            # checkpoint is neither right nor gone (see leader_epochs). A reopen rebuilds.
            self.go_offline(f"cannot write or remove the leader epoch checkpoint: {exc}")
            raise

    def _maybe_flush(self, now_ms: int) -> None:
        if (self.log_end_offset - self._recovery_point >= self.config.flush_interval_messages
                or self._flush_due(now_ms)):
            self.flush()

    def _flush_due(self, now_ms: int) -> bool:
        # flush.ms: Kafka's LogManager.flushDirtyLogs, "time since the last flush >= flush.ms".
        return now_ms - self._last_flush_ms >= self.config.flush_ms

    def roll(self, *, now_ms: int | None = None, base_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (a no-op on an empty one), or
        at ``base_offset`` when that is higher (a follower's batch after a gap).

        The old segment gets its final time index entry and, on disk, is fsynced with its
        indexes before the new files appear: every inactive segment is durable.

        Raises:
            KafkaStorageError: as :meth:`append`; a roll that failed before the new
                segment's files were all created leaves the old segment active.
        """
        with self._storage("roll"):
            active = self._segments[-1]
            if active.size == 0:
                return active
            now = self._clock() if now_ms is None else now_ms
            active.on_become_inactive()
            if self.directory is not None:
                self._fsync(active.flush)
                self._fsync(self.epochs.flush)
                self._recovery_point = max(self._recovery_point, self.log_end_offset)
                self._last_flush_ms = now
            segment = self.new_segment(max(self.log_end_offset, base_offset or 0), now)
            self._add_segment(segment)
            if self.directory is not None:
                self._fsync(functools.partial(fsync_dir, self.directory))
            return segment

    def flush(self) -> None:
        """fsync everything appended so far (see the module docstring for what it buys).

        Raises:
            KafkaStorageError: the fsync failed; the log is offline from then on.
        """
        with self._storage("flush"):
            if self.directory is not None and self._recovery_point < self.log_end_offset:
                # Inactive segments were fsynced when they rolled; only the active one is dirty.
                self._fsync(self._segments[-1].flush)
                # The epochs of what is now durable (written unsynced by append).
                self._fsync(self.epochs.flush)
            self._recovery_point = self.log_end_offset
            self._last_flush_ms = self._clock()

    def run_scheduled(self, now_ms: int | None = None) -> list[LogSegment]:
        """The duties Kafka's ``LogManager`` schedules by time, for the broker's periodic
        upkeep: fsync when ``flush_ms`` has passed since the last flush (its flusher task;
        appends check it too), and remove the ``*.deleted`` files of segments deleted at
        least ``file_delete_delay_ms`` ago. An offline log is left alone.

        Returns:
            The segments whose files were removed: their descriptors close when the last
            reference goes, which the caller may let happen off the event loop.

        Raises:
            KafkaStorageError: the fsync failed (the log is offline from then on).
        """
        if self.offline:
            return []
        now = self._clock() if now_ms is None else now_ms
        if self._recovery_point < self.log_end_offset and self._flush_due(now):
            self.flush()
        return self._remove_deleted_files(now)

    @contextmanager
    def _storage(self, what: str) -> Iterator[None]:
        """Refuse an offline log; turn a file error into KAFKA_STORAGE_ERROR.

        A plain ``OSError`` comes from a write that the segment undid: the log stays
        online. :class:`SegmentDamaged` (an undo failed) and fsync failures (see
        :meth:`_fsync`) take it offline.
        """
        self._check_online()
        try:
            yield
        except SegmentDamaged as exc:
            self.go_offline(str(exc))
            raise KafkaStorageError(f"{self._where()}: {what} failed, the log is offline: {exc}") from exc
        except OSError as exc:
            outcome = "the log is offline" if self.offline else "undone"
            raise KafkaStorageError(f"{self._where()}: {what} failed, {outcome}: {exc}") from exc

    def _check_online(self) -> None:
        if self._offline_reason is not None:
            raise KafkaStorageError(f"{self._where()} is offline after a storage error "
                                    f"({self._offline_reason}); it recovers when it is reopened")

    def _fsync(self, fsync: Callable[[], None]) -> None:
        # After a failed fsync the kernel may have dropped the dirty pages and a second
        # fsync reports success: nothing tells what reached the disk. Kafka takes the log
        # dir offline (LogDirFailureChannel); so does this log, until a reopen recovers it.
        try:
            fsync()
        except OSError as exc:
            self.go_offline(f"fsync failed: {exc}")
            raise

    def _where(self) -> str:
        return f"partition log {self.directory}" if self.directory is not None else "partition log in memory"

    # -- reading --------------------------------------------------------------------------

    def read_slices(
        self, offset: int, max_bytes: int, *, at_least_one: bool = True, max_offset: int | None = None,
    ) -> list[LogSlice]:
        """Like :meth:`read`, as ``(source, position, length)`` runs for ``os.sendfile``.

        In order: one slice per segment on disk touched, which holds its open file (valid
        even if retention or compaction deletes the segment meanwhile); for a segment in
        memory, one per chunk (see :meth:`~minibroker.log.store.MemoryStore.slices`).
        """
        self._check_online()
        end = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        if offset >= end:
            return []
        # The last segment that may hold offsets below ``end``, and in it the start of the
        # first batch reaching ``end`` (None: every batch of it is below).
        last = max(bisect.bisect_right(self._bases, end - 1) - 1, 0)
        cut = self._segments[last].translate(end) if end < self.log_end_offset else None
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        out: list[LogSlice] = []
        total = 0
        for j in range(i, last + 1):
            segment = self._segments[j]
            found = segment.read_range(offset, max_bytes - total, take_first=at_least_one and not out,
                                       end_position=cut.position if cut is not None and j == last else None)
            if found is None:
                continue  # nothing at or after offset here (a gap left by compaction)
            position, length, stopped = found
            if length:
                out.extend(segment.slices(position, length))
                total += length
            if stopped:
                break
        return out

    def read(self, offset: int, max_bytes: int, *, at_least_one: bool = True, max_offset: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``.

        With ``at_least_one`` the first batch comes even when it is larger than
        ``max_bytes`` (KIP-74). Clients drop the records before ``offset``. With
        ``max_offset`` (a consumer's read: the high watermark) no batch whose last offset
        is at or above it is returned.
        """
        slices = self.read_slices(offset, max_bytes, at_least_one=at_least_one, max_offset=max_offset)
        return b"".join(s.tobytes() for s in slices)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """The first record whose timestamp is >= ``timestamp``: ``(offset, timestamp)``.

        Kafka's lookup: the first segment whose largest timestamp reaches it, then that
        segment's time and offset indexes; records below the log start offset do not count.
        """
        for segment in self._segments:
            if segment.size == 0 or segment.max_timestamp < timestamp:
                continue
            found = segment.find_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """The record with the largest timestamp (ListOffsets -3, KIP-734)."""
        best = None
        for segment in self._segments:
            if segment.size and (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        if best is None:
            return None
        info = best.translate(best.offset_of_max_timestamp)
        if info is not None:
            for record in decode_record_set(best.batch_bytes(info))[0]:
                if record.timestamp == best.max_timestamp:
                    return record.offset, record.timestamp
        return best.offset_of_max_timestamp, best.max_timestamp

    # -- transactions ---------------------------------------------------------------------

    def append_aborted_txn(self, txn: AbortedTxn) -> bool:
        """Record an aborted transaction in the ``.txnindex`` of the segment holding its
        ABORT marker (Kafka's ``LogSegment.updateTxnIndex``); returns whether it was added.

        An entry whose marker is not after the last one of that segment's index is taken
        as already there (a replay of the log at start or on a leader change adds only
        what a crash lost); one whose segment is gone (retention) is dropped.

        Raises:
            KafkaStorageError: the write failed: the log goes offline (the marker is in the
                log, its index entry is not; a reopen rebuilds it).
        """
        if txn.last_offset < self.log_start_offset or txn.last_offset >= self.log_end_offset:
            return False
        segment = self._segments[max(bisect.bisect_right(self._bases, txn.last_offset) - 1, 0)]
        if txn.last_offset <= segment.txn_index.last_offset:
            return False
        with self._storage("txn index append"):
            try:
                segment.txn_index.append(txn)
            except OSError as exc:
                self.go_offline(f"cannot write the transaction index: {exc}")
                raise
        return True

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start_offset, upper_bound_offset)``,
        searched from the segment holding ``start_offset`` on until an entry's last stable
        offset reaches the upper bound (Kafka's ``UnifiedLog.collectAbortedTransactions``)."""
        found: list[AbortedTxn] = []
        first = max(bisect.bisect_right(self._bases, start_offset) - 1, 0)
        for segment in self._segments[first:]:
            entries, complete = segment.txn_index.collect(start_offset, upper_bound_offset)
            found.extend(entries)
            if complete:
                break
        return found

    # -- truncation (replication) ---------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is at or above ``offset``; returns how many
        offsets the log end offset went back (0 when ``offset`` is at or past it).

        Kafka's ``UnifiedLog.truncateTo`` (a follower matching its leader, KIP-101):
        segments starting above ``offset`` are deleted (newest first, so a crash halfway
        leaves a prefix of the log), the one holding it is cut at the start of the batch
        holding it (a target inside a batch removes the whole batch) and its indexes
        rebuilt; then the epoch cache loses the epochs starting at or after the new log
        end offset, and the high watermark and recovery point are clamped to it. A target
        below the log start offset empties the log (:meth:`truncate_fully_and_start_at`).
        The caller rebuilds whatever it derives from the log (producer state).

        Raises:
            KafkaStorageError: a file could not be cut; the log is offline.
        """
        if offset >= self.log_end_offset:
            # KAFKA-10706: epochs begun at the log end without data (a leader that wrote
            # nothing) may still conflict with the new leader's.
            with self._storage("truncate"):
                self.epochs.truncate_from_end(offset)
            return 0
        if offset < self.log_start_offset:
            removed = self.log_end_offset - offset
            self.truncate_fully_and_start_at(offset)
            return removed
        before = self.log_end_offset
        with self._storage("truncate"):
            try:
                while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
                    segment = self._segments.pop()
                    self._bases.pop()
                    # Unlinked, not closed: a read in flight keeps its descriptor (see store).
                    segment.delete()
                self._segments[-1].truncate_to(offset)
            except OSError as exc:
                raise SegmentDamaged(f"truncating to offset {offset} failed halfway: {exc}") from exc
            self.log_end_offset = self._segments[-1].next_offset
            self._after_truncation()
        log.info("%s truncated to offset %d: log end offset %d -> %d", self._where(), offset, before,
                 self.log_end_offset)
        return before - self.log_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it again at ``offset`` (log start = log end = high
        watermark = ``offset``): Kafka's ``truncateFullyAndStartAt``, for a follower whose
        log ends before its leader's log start. The epoch cache is cleared.

        Raises:
            KafkaStorageError: a file could not be changed; the log is offline.
        """
        with self._storage("truncate"):
            try:
                for segment in reversed(self._segments):
                    segment.delete()
                self._segments.clear()
                self._bases.clear()
                self._add_segment(self.new_segment(offset))
            except OSError as exc:
                raise SegmentDamaged(f"emptying the log to start at offset {offset} failed: {exc}") from exc
            self.log_start_offset = self.log_end_offset = offset
            self._write_checkpoint()
            self.epochs.clear()
            self._after_truncation()
            if self.directory is not None:
                fsync_dir(self.directory)
        log.info("%s emptied, starting at offset %d", self._where(), offset)

    def _after_truncation(self) -> None:
        self.epochs.truncate_from_end(self.log_end_offset)
        self._recovery_point = min(self._recovery_point, self.log_end_offset)
        if self._high_watermark is not None:
            self._high_watermark = min(max(self._high_watermark, self.log_start_offset), self.log_end_offset)

    # -- retention ------------------------------------------------------------------------

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete old inactive segments; returns how many went.

        Kafka's ``deleteOldSegments``, oldest first, never the active segment: with
        ``cleanup_policy`` "delete", segments whose largest timestamp is more than
        ``retention_ms`` before ``now_ms``, then segments while the log stays above
        ``retention_bytes`` without them; with any policy, segments wholly below the log
        start offset. The log start offset then moves up to the first remaining segment.
        """
        if self.offline:
            return 0  # an offline log's files are left alone until it is reopened
        now = self._clock() if now_ms is None else now_ms
        deleted = self._delete_oldest_while(lambda s, nxt: nxt.base_offset <= self.log_start_offset)
        if self.config.delete:
            if self.config.retention_ms >= 0:
                deleted += self._delete_oldest_while(lambda s, nxt: now - s.largest_timestamp > self.config.retention_ms)
            if self.config.retention_bytes >= 0:
                excess = self.size_in_bytes - self.config.retention_bytes

                def too_big(s: LogSegment, nxt: LogSegment) -> bool:
                    nonlocal excess
                    if excess - s.size < 0:
                        return False
                    excess -= s.size
                    return True

                deleted += self._delete_oldest_while(too_big)
        return deleted

    def delete_records(self, before_offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``before_offset``.

        Segments wholly below it are deleted; the rest of the data stays until retention
        or compaction reaches it, but is no longer served. Returns the new log start offset
        (the API's ``low_watermark``); a lower ``before_offset`` changes nothing.

        Args:
            before_offset: the new log start offset; -1 means the high watermark.

        Raises:
            OffsetOutOfRangeError: ``before_offset`` is above the high watermark (or below -1).
        """
        if before_offset == -1:
            before_offset = self.high_watermark
        if not 0 <= before_offset <= self.high_watermark:
            raise OffsetOutOfRangeError(f"offset {before_offset} is outside [0, {self.high_watermark}]")
        if before_offset > self.log_start_offset:
            self.log_start_offset = before_offset
            # Durable before any file goes: a reopened log must not serve deleted records.
            self._write_checkpoint()
            self.epochs.truncate_from_start(self.log_start_offset)
            self._delete_oldest_while(lambda s, nxt: nxt.base_offset <= self.log_start_offset)
        return self.log_start_offset

    def _delete_oldest_while(self, predicate: Callable[[LogSegment, LogSegment], bool]) -> int:
        """Delete the oldest segments while ``predicate(oldest, next)`` holds.

        As Kafka's ``LocalLog.deleteSegmentFiles``: a segment leaves the log at once, its
        files are renamed ``*.deleted`` and removed ``file_delete_delay_ms`` later (by
        :meth:`run_scheduled`, or here when the delay is 0), so a read of it in flight
        ends first. A crash in between leaves ``*.deleted`` files, which the next open
        removes. A rename that fails takes the log offline, as Kafka takes its log dir.
        """
        count = 0
        now = self._clock()
        while len(self._segments) > 1 and predicate(self._segments[0], self._segments[1]):
            segment = self._segments.pop(0)
            self._bases.pop(0)
            if segment.on_disk:
                try:
                    segment.rename("", DELETED_SUFFIX)
                except OSError as exc:
                    self.go_offline(f"cannot rename a deleted segment's files: {exc}")
                    raise KafkaStorageError(f"{self._where()}: deleting {segment.path} failed, the log is offline: {exc}") from exc
                self._deleted.append((now + self.config.file_delete_delay_ms, segment))
            else:
                segment.delete()
            count += 1
        if count:
            if self._segments[0].base_offset > self.log_start_offset:
                self.log_start_offset = self._segments[0].base_offset
                self._write_checkpoint()
                self.epochs.truncate_from_start(self.log_start_offset)
            if self.directory is not None:
                fsync_dir(self.directory)
            self._remove_deleted_files(now)
        return count

    def _remove_deleted_files(self, now_ms: int) -> list[LogSegment]:
        removed = []
        while self._deleted and self._deleted[0][0] <= now_ms:
            _, segment = self._deleted.pop(0)
            segment.delete()
            removed.append(segment)
        return removed

    # -- compaction -----------------------------------------------------------------------

    def compact(self, now_ms: int | None = None) -> CleanerStats:
        """Compact the inactive segments (``cleanup_policy`` "compact"); see
        :func:`minibroker.log.cleaner.clean`. A log without that policy is left alone."""
        if not self.config.compact or self.offline:
            return CleanerStats()
        return clean(self, self._clock() if now_ms is None else now_ms)

    # -- for the cleaner and maintenance --------------------------------------------------
    # What minibroker.log.cleaner and minibroker.log.maintenance need beyond the facts
    # above: they change the segments' files themselves (in a worker thread, off the event
    # loop), so the log gives them its clock, new segments and the swap in memory; nothing
    # else outside this module touches its internals.

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (its topic deleted, the broker stopping):
        maintenance and compaction then leave the log alone."""
        return self._closed

    def now_ms(self) -> int:
        """The log's clock (the ``clock`` argument), in milliseconds since the epoch."""
        return self._clock()

    def new_segment(self, base_offset: int, now_ms: int | None = None, suffix: str = "") -> LogSegment:
        """A new, empty segment of this log starting at ``base_offset``, not yet part of it;
        ``suffix`` (e.g. ``.cleaned``) is added to its file names, as the cleaner's output's."""
        return LogSegment.create(
            self.directory, base_offset, index_interval_bytes=self.config.index_interval_bytes,
            now_ms=self._clock() if now_ms is None else now_ms, suffix=suffix, roll_jitter_ms=self._roll_jitter(),
        )

    def replace_segments(self, old: list[LogSegment], new: LogSegment | None) -> None:
        """Swap consecutive inactive segments for their cleaned replacement, or for nothing
        (in memory; the cleaner has already done the files)."""
        first = self._segments.index(old[0])
        assert self._segments[first : first + len(old)] == old and first + len(old) < len(self._segments)
        self._segments[first : first + len(old)] = [new] if new is not None else []
        self._bases = [s.base_offset for s in self._segments]

    def go_offline(self, reason: str) -> None:
        """Take the log offline after a storage error (see :attr:`offline`): a change of its
        files failed halfway, so they may no longer match what the log holds in memory.
        The first reason is kept and logged; the log recovers when it is reopened."""
        if self._offline_reason is None:
            log.error("%s goes offline: %s", self._where(), reason)
            self._offline_reason = reason

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Flush and close the files (a log in memory just stays as it is).

        A storage error while flushing is logged, not raised, and the files are closed
        all the same: the next open recovers the active segment whatever state it is in.
        An offline log is closed without writing anything.
        """
        if self._closed or self.directory is None:
            return
        self._closed = True
        try:
            if not self.offline:
                # As Kafka's LogSegment.close: the active segment's largest timestamp goes
                # last into its time index too.
                with self._storage("close"):
                    self._segments[-1].on_become_inactive()
                    self._fsync(self._segments[-1].flush)
                    self._fsync(self.epochs.flush)
                    self._recovery_point = self.log_end_offset
        except KafkaStorageError as exc:
            log.error("%s", exc)
        finally:
            for segment in self._segments:
                segment.close()
            # Nothing reads them any more: the deleted segments' files go now (Kafka leaves
            # them to the next start, which removes *.deleted files too).
            for _, segment in self._deleted:
                segment.delete()
            self._deleted.clear()

    def abandon(self) -> None:
        """Close the files without writing anything: a crash, as a killed process leaves
        them (no flush, no final time index entry, ``*.deleted`` files left for the next
        open). What :meth:`append` wrote is in the page cache and a reopen recovers it."""
        if self._closed:
            return
        self._closed = True
        for segment in self._segments:
            segment.close()
        for _, segment in self._deleted:
            segment.close()
        self._deleted.clear()

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = str(self.directory) if self.directory is not None else "memory"
        return (f"PartitionLog({where!r}, log_start_offset={self.log_start_offset}, "
                f"log_end_offset={self.log_end_offset}, segments={len(self._segments)})")

    # -- internals ------------------------------------------------------------------------

    def _roll_jitter(self) -> int:
        # Kafka's LogConfig.randomSegmentJitter: uniform in [0, min(segment.jitter.ms, segment.ms)).
        jitter = min(self.config.segment_jitter_ms, self.config.segment_ms)
        return self._random.randrange(jitter) if jitter > 0 else 0

    def _add_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def _load(self) -> None:
        directory = self.directory
        assert directory is not None
        if not directory.is_dir():
            directory.mkdir(parents=True)
            fsync_dir(directory.parent)
        complete_swaps(directory, self.config)
        bases = _tidy_directory(directory)
        checkpoint = self._read_checkpoint()
        now = self._clock()
        if not bases:
            self._add_segment(self.new_segment(checkpoint or 0, now))
            fsync_dir(directory)
        for i, base in enumerate(bases):
            segment = LogSegment.open(directory, base, index_interval_bytes=self.config.index_interval_bytes, now_ms=now,
                                      roll_jitter_ms=self._roll_jitter())
            if i + 1 < len(bases):
                try:
                    segment.load_indexes(offset_limit=bases[i + 1])
                except IndexCorrupt as exc:
                    # Cut after the last valid batch, indexes rebuilt, the later segments
                    # kept: the offsets cut off become a gap, legal in a Kafka log (as
                    # after compaction), and nothing intact after the damage is lost.
                    log.warning("recovering %s: %s", segment.path, exc)
                    segment.recover(offset_limit=bases[i + 1])
                    segment.flush()
                    segment.next_offset = bases[i + 1]
            else:
                segment.recover()
                # Whatever recovery kept is made durable now, so the flush policy counts
                # from a clean slate.
                segment.flush()
            segment.txn_index.load(offset_limit=segment.next_offset)
            self._add_segment(segment)
        self.log_end_offset = self._segments[-1].next_offset
        self.log_start_offset = min(max(self._segments[0].base_offset, checkpoint or 0), self.log_end_offset)
        self._recovery_point = self.log_end_offset
        path = directory / LEADER_EPOCH_CHECKPOINT if self._epoch_checkpoint else None
        epochs = LeaderEpochCache.load(path) if path is not None else None
        if epochs is None:
            # The segments noted the epochs while they were validated above: no re-read.
            epochs = LeaderEpochCache.rebuild(path, (e for s in self._segments for e in s.epoch_starts))
        # As Kafka's UnifiedLog on load: the file may be ahead of a log cut by recovery.
        epochs.truncate_from_end(self.log_end_offset)
        epochs.truncate_from_start(self.log_start_offset)
        self.epochs = epochs

    def _read_checkpoint(self) -> int | None:
        assert self.directory is not None
        try:
            entries = parse_checkpoint((self.directory / CHECKPOINT_FILE).read_text())
            if len(entries) != 1:
                raise ValueError("unknown version or entry count")
            return entries[0][2]
        except FileNotFoundError:
            return None
        except ValueError as exc:
            log.warning("ignoring %s: %s", self.directory / CHECKPOINT_FILE, exc)
            return None

    def _write_checkpoint(self) -> None:
        if self.directory is None:
            return
        topic, partition = parse_partition_dir(self.directory.name) or (self.directory.name, 0)
        path = self.directory / CHECKPOINT_FILE
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(format_checkpoint([(topic, partition, self.log_start_offset)]))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(self.directory)


def _tidy_directory(directory: Path) -> list[int]:
    """Remove leftovers and orphans; return the base offsets of the segments, sorted.

    Leftovers: ``.cleaned`` (a compaction that did not finish: its originals are intact),
    ``.deleted``, and ``.swap`` index files whose ``.log.swap`` is gone (never committed).
    Orphans: index files whose ``.log`` is gone (a deletion cut short).
    """
    logs: set[int] = set()
    others: list[tuple[Path, int, str]] = []
    for path in directory.iterdir():
        parsed = parse_segment_file(path.name)
        if parsed is None:
            continue
        base, kind, suffix = parsed
        if suffix:
            log.warning("removing leftover %s", path)
            path.unlink()
        elif kind == LOG_SUFFIX:
            logs.add(base)
        else:
            others.append((path, base, kind))
    for path, base, kind in others:
        if base not in logs and kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            log.warning("removing %s: its log %s%s is gone", path, segment_name(base), LOG_SUFFIX)
            path.unlink()
    return sorted(logs)
