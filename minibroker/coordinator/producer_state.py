"""Idempotent producers: per producer id, epoch and partition, which sequences were written.

Facts (KIP-98, KIP-360, Java's ``ProducerStateManager``; franz-go's kfake notes what
Kafka and Redpanda do at the edges):

- Each batch of an idempotent producer carries (producer id, epoch, base sequence);
  its last sequence is base + lastOffsetDelta, wrapping after 2**31 - 1 to 0.
- The broker remembers the last 5 batches per producer and partition (a producer keeps
  at most 5 requests in flight). A retry of one of them is a duplicate: it is answered
  with the offset it got the first time and not written again.
- A duplicate older than those 5 gets DUPLICATE_SEQUENCE_NUMBER, which clients treat as
  success; a batch that does not follow the last one gets OUT_OF_ORDER_SEQUENCE_NUMBER;
  an older epoch gets INVALID_PRODUCER_EPOCH; a newer epoch must start at sequence 0.
- The first batch seen from a producer on a partition is accepted whatever its
  sequence: the broker may have lost its state (e.g. after retention), not the producer.
- On start the state is rebuilt from the batches in the logs (Kafka does the same, from
  its snapshots and the log after them), so a retry that crosses a broker restart is
  still recognised as a duplicate.
- A producer's state on a partition expires when it has not written there for
  ``producer.id.expiration.ms`` (default 86400000, one day; KIP-854, Kafka's
  ``ProducerStateManager.removeExpiredProducers``): the producer is then unknown again,
  so its next batch is accepted whatever its sequence, and a retry of a batch written
  before is written again. Kafka counts from the batch's max timestamp, which the client
  sets; minibroker counts from when it wrote the batch, so old record timestamps do not
  expire a producer that is writing. An expired producer is forgotten when it is next
  looked up, and all of them every ``producer.id.expiration.check.interval.ms`` (Kafka's
  internal setting, 600000 here; the memory they hold goes then). State rebuilt on start
  counts from the start: a restart never shortens a producer's time.

Producer ids (:class:`ProducerIdManager`) are never handed out twice, also across
restarts and crashes: as Kafka's controller does (``ProducerIdManager``,
``AllocateProducerIds``, KIP-730), ids are taken in blocks of
:data:`PRODUCER_ID_BLOCK_SIZE`, and a block is recorded durably before its first id is
given out. An id given out but not yet used in any log (a producer that has not written
yet) is thus never given to another producer after a restart.

Transactions (KIP-98; Kafka's ``ProducerStateManager``, ``ProducerAppendInfo``,
``CompletedTxn``), per partition:

- A transactional data batch opens its producer's transaction at the batch's first
  offset, unless one is open already; a COMMIT or ABORT marker closes it. A marker that
  closes nothing (an empty transaction) completes no transaction: it changes neither the
  last stable offset nor the aborted-transaction index.
- Checks of a client's append (the leader's; a follower's copy and a replay of the log
  check nothing): a non-transactional batch of a producer with an open transaction on the
  partition is INVALID_TXN_STATE (``appendDataBatch``); a marker whose producer epoch is
  older than the producer's is INVALID_PRODUCER_EPOCH (``checkProducerEpoch``), one whose
  coordinator epoch is older than the producer's last marker's is
  TRANSACTION_COORDINATOR_FENCED (``checkCoordinatorEpoch``). A marker of a newer epoch
  becomes the producer's epoch (its sequences start again at 0).
- The *first unstable offset* is the first offset of the earliest transaction still open,
  or of a completed one whose marker is not yet below the high watermark
  (``firstUnstableOffset``: ``ongoingTxns`` and ``unreplicatedTxns``); a completed
  transaction is forgotten once the high watermark passes its marker
  (``onHighWatermarkUpdated``). The last stable offset is the smaller of it and the high
  watermark (``UnifiedLog.lastStableOffset``).
- An aborted transaction's index entry carries the last stable offset right after its
  marker: the first offset of the earliest transaction of *another* producer still open,
  else the marker's offset + 1 (``ProducerStateManager.lastStableOffset(CompletedTxn)``).
- A producer with an open transaction never expires (``isProducerExpired``).
- KIP-890 part 1 (Kafka's ``VerificationStateEntry`` / ``VerificationGuard``): before a
  transactional batch that would open a transaction is appended, the leader asks the
  transaction coordinator whether the partition is in the producer's transaction; the
  guard taken before asking (:meth:`ProducerStates.verification_guard`) is dropped by the
  producer's next marker, so that a marker written while the answer was on its way makes
  the append fail (:meth:`ProducerStates.guard_holds`) instead of opening a transaction
  that no marker will close.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kproto.errors import (
    CorruptRecordError,
    DuplicateSequenceNumberError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)
from kproto.records import ControlType, parse_txn_marker

__all__ = ["CACHED_BATCHES", "PRODUCER_ID_BLOCK_SIZE", "PRODUCER_ID_EXPIRATION_MS", "CompletedTxn", "ProducerIdManager",
           "ProducerInfo", "ProducerStates"]

CACHED_BATCHES = 5
PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
PRODUCER_ID_EXPIRATION_MS = 86_400_000  # Kafka's producer.id.expiration.ms default
EXPIRATION_CHECK_INTERVAL_MS = 600_000  # Kafka's producer.id.expiration.check.interval.ms default
_SEQ_MOD = 1 << 31


def _next(seq: int) -> int:
    return (seq + 1) % _SEQ_MOD


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class _Producer:
    epoch: int
    last_write_ms: int  # when the broker last wrote a batch of it (expiration counts from here)
    # (first sequence, last sequence, base offset) of the latest batches, oldest first.
    batches: deque = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    coordinator_epoch: int = -1  # of the last marker written for it
    txn_first_offset: int = -1  # its open transaction's first offset (Kafka's currentTxnFirstOffset)
    last_timestamp: int = -1  # max timestamp of its last batch or marker


@dataclass
class _Partition:
    producers: dict[int, _Producer] = field(default_factory=dict)
    ongoing: dict[int, int] = field(default_factory=dict)  # open: first offset -> producer id, in offset order
    unreplicated: dict[int, int] = field(default_factory=dict)  # completed: first offset -> marker offset


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker closed (Kafka's ``CompletedTxn``): its first offset, the
    marker's offset, and whether it aborted."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class ProducerInfo:
    """An active producer of a partition, as DescribeProducers shows it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int  # -1: no batch (only markers)
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction


class ProducerStates:
    """Sequence and transaction bookkeeping for every (partition, producer id) that wrote to
    this broker; partitions are named by an opaque key (the broker's ``(topic id, index)``).

    Args:
        expiration_ms: ``producer.id.expiration.ms``: a producer's state on a partition
            is dropped once it has not written there for that long (never while it has
            an open transaction there).
        clock: milliseconds since the epoch (tests pass their own).
        check_interval_ms: how often every expired producer is forgotten at once.

    Raises:
        ValueError: ``expiration_ms`` below 1 (Kafka's lower bound).
    """

    def __init__(self, expiration_ms: int = PRODUCER_ID_EXPIRATION_MS, *, clock: Callable[[], int] | None = None,
                 check_interval_ms: int = EXPIRATION_CHECK_INTERVAL_MS) -> None:
        if expiration_ms < 1:
            raise ValueError(f"producer.id.expiration.ms must be at least 1, not {expiration_ms}")
        self._partitions: dict[tuple[object, int], _Partition] = {}
        self._expiration_ms = expiration_ms
        self._clock = clock if clock is not None else _wall_clock_ms
        self._check_interval_ms = check_interval_ms
        self._last_check_ms = self._clock()
        self._guards: dict[tuple[tuple[object, int], int], object] = {}  # KIP-890: (partition, producer id) -> guard

    def __len__(self) -> int:
        """How many (partition, producer id) states are held."""
        return sum(len(p.producers) for p in self._partitions.values())

    def _expired(self, state: _Producer, now_ms: int) -> bool:
        # Kafka's isProducerExpired: never with an open transaction.
        return state.txn_first_offset < 0 and now_ms - state.last_write_ms >= self._expiration_ms

    def remove_expired(self, now_ms: int | None = None) -> int:
        """Forget every producer that has not written for ``producer.id.expiration.ms``;
        returns how many (partition, producer id) states went."""
        now = self._clock() if now_ms is None else now_ms
        self._last_check_ms = now
        count = 0
        for partition in self._partitions.values():
            expired = [pid for pid, state in partition.producers.items() if self._expired(state, now)]
            for pid in expired:
                del partition.producers[pid]
            count += len(expired)
        return count

    def _lookup(self, partition_key: tuple[object, int], producer_id: int) -> _Producer | None:
        partition = self._partitions.get(partition_key)
        state = partition.producers.get(producer_id) if partition is not None else None
        if state is not None and self._expired(state, self._clock()):
            del partition.producers[producer_id]  # type: ignore[union-attr]
            state = None
        return state

    def _entry(self, partition_key: tuple[object, int], producer_id: int, epoch: int) -> _Producer:
        """The producer's state to update, made if unknown; a newer epoch becomes its epoch
        and forgets its sequences (Kafka's ``maybeUpdateProducerEpoch``), keeping its open
        transaction and coordinator epoch."""
        now = self._clock()
        if now - self._last_check_ms >= self._check_interval_ms:
            self.remove_expired(now)
        partition = self._partitions.setdefault(partition_key, _Partition())
        state = self._lookup(partition_key, producer_id)
        if state is None:
            state = partition.producers[producer_id] = _Producer(epoch, now)
        elif epoch != state.epoch:
            state.epoch = epoch
            state.batches.clear()
        state.last_write_ms = now
        return state

    def check(self, partition_key: tuple[object, int], producer_id: int, epoch: int, first_seq: int, count: int,
              *, is_transactional: bool = False) -> tuple[int, int]:
        """Decide on a client's batch before it is written.

        Returns:
            ``(error_code, base_offset)``: ``(0, -1)`` to append it, ``(0, offset)`` for
            a duplicate already written at ``offset``, or a Kafka error code and -1.
        """
        state = self._lookup(partition_key, producer_id)
        if state is None:
            return 0, -1
        if epoch < state.epoch:
            return InvalidProducerEpochError.code, -1
        last_seq = (first_seq + count - 1) % _SEQ_MOD
        if epoch > state.epoch:
            code = 0 if first_seq == 0 else OutOfOrderSequenceNumberError.code
        else:
            for first, last, base_offset in state.batches:
                if first == first_seq and last == last_seq:
                    return 0, base_offset
            if not state.batches:  # known from markers only: Kafka's inSequence(NO_SEQUENCE, first)
                code = 0 if first_seq == 0 else OutOfOrderSequenceNumberError.code
            elif first_seq == _next(state.batches[-1][1]):
                code = 0
            elif _is_before(first_seq, state.batches[0][0]):
                code = DuplicateSequenceNumberError.code
            else:
                code = OutOfOrderSequenceNumberError.code
        if code == 0 and not is_transactional and state.txn_first_offset >= 0:
            # ProducerAppendInfo.appendDataBatch: a non-transactional write during a transaction.
            code = InvalidTxnStateError.code
        return code, -1

    def check_epoch(self, partition_key: tuple[object, int], producer_id: int, epoch: int) -> int:
        """Decide on a batch the broker writes for a producer (a TxnOffsetCommit's, origin
        COORDINATOR: no sequence check): INVALID_PRODUCER_EPOCH when its epoch is older
        than the producer's on the partition, e.g. a zombie fenced by a newer instance's
        marker (Kafka's ``ProducerAppendInfo.checkProducerEpoch``); else 0."""
        state = self._lookup(partition_key, producer_id)
        return InvalidProducerEpochError.code if state is not None and epoch < state.epoch else 0

    def has_ongoing_txn(self, partition_key: tuple[object, int], producer_id: int, epoch: int) -> bool:
        """Whether the producer has an open transaction on the partition under ``epoch``
        (Kafka's ``UnifiedLog.hasOngoingTransaction``): its batches need no verification."""
        state = self._lookup(partition_key, producer_id)
        return state is not None and state.txn_first_offset >= 0 and state.epoch == epoch

    def verification_guard(self, partition_key: tuple[object, int], producer_id: int) -> object:
        """A new guard for the producer's verification on the partition (Kafka's
        ``maybeCreateVerificationStateEntry``): the one :meth:`guard_holds` accepts
        until a marker of the producer is written there."""
        guard = self._guards[(partition_key, producer_id)] = object()
        return guard

    def guard_holds(self, partition_key: tuple[object, int], producer_id: int, guard: object) -> bool:
        """Whether ``guard`` is still the producer's (Kafka's ``verifyTransaction`` check
        in ``UnifiedLog.append``), or its transaction is open already."""
        state = self._lookup(partition_key, producer_id)
        if state is not None and state.txn_first_offset >= 0:
            return True
        return self._guards.get((partition_key, producer_id)) is guard

    def record(self, partition_key: tuple[object, int], producer_id: int, epoch: int, first_seq: int, count: int,
               base_offset: int, *, is_transactional: bool = False, max_timestamp: int = -1) -> None:
        """Remember a data batch that was written; a transactional one opens its producer's
        transaction at ``base_offset`` unless one is open."""
        state = self._entry(partition_key, producer_id, epoch)
        state.batches.append((first_seq, (first_seq + count - 1) % _SEQ_MOD, base_offset))
        state.last_timestamp = max_timestamp
        if is_transactional and state.txn_first_offset < 0:
            self._guards.pop((partition_key, producer_id), None)  # used: the transaction is open
            state.txn_first_offset = base_offset
            self._partitions[partition_key].ongoing[base_offset] = producer_id

    def check_marker(self, partition_key: tuple[object, int], producer_id: int, epoch: int,
                     coordinator_epoch: int) -> int:
        """Decide on a COMMIT/ABORT marker before it is written: 0, INVALID_PRODUCER_EPOCH
        or TRANSACTION_COORDINATOR_FENCED (see the module docstring)."""
        state = self._lookup(partition_key, producer_id)
        if state is None:
            return 0
        if epoch < state.epoch:
            return InvalidProducerEpochError.code
        if state.coordinator_epoch > coordinator_epoch:
            return TransactionCoordinatorFencedError.code
        return 0

    def end_txn(self, partition_key: tuple[object, int], producer_id: int, epoch: int, coordinator_epoch: int,
                offset: int, *, commit: bool, timestamp: int = -1) -> tuple[CompletedTxn, int] | None:
        """Remember a marker written at ``offset`` (Kafka's ``appendEndTxnMarker`` then
        ``completeTxn``): the transaction it closed and the last stable offset to index
        with it (:meth:`last_stable_offset` rule), or None when no transaction was open."""
        self._guards.pop((partition_key, producer_id), None)  # Kafka's clearVerificationStateEntry
        state = self._entry(partition_key, producer_id, epoch)
        state.coordinator_epoch = coordinator_epoch
        state.last_timestamp = timestamp
        first, state.txn_first_offset = state.txn_first_offset, -1
        if first < 0:
            return None
        partition = self._partitions[partition_key]
        completed = CompletedTxn(producer_id, first, offset, not commit)
        # ProducerStateManager.lastStableOffset(completedTxn): the first transaction of
        # another producer still open, else the offset after the marker.
        others = (f for f, pid in partition.ongoing.items() if pid != producer_id)
        lso = next(others, offset + 1)
        partition.ongoing.pop(first, None)
        partition.unreplicated[first] = offset
        return completed, lso

    def first_unstable_offset(self, partition_key: tuple[object, int], high_watermark: int) -> int | None:
        """The first offset of the earliest open transaction, or of a completed one whose
        marker is not below ``high_watermark`` (those below are forgotten now, Kafka's
        ``onHighWatermarkUpdated``); None when there is none."""
        partition = self._partitions.get(partition_key)
        if partition is None:
            return None
        self.on_high_watermark(partition_key, high_watermark)
        candidates = [*partition.unreplicated, *partition.ongoing]
        return min(candidates) if candidates else None

    def on_high_watermark(self, partition_key: tuple[object, int], high_watermark: int) -> None:
        """Forget the completed transactions whose marker is below ``high_watermark``
        (Kafka's ``onHighWatermarkUpdated``): they no longer hold the LSO."""
        partition = self._partitions.get(partition_key)
        if partition is not None and partition.unreplicated:
            for first in [f for f, last in partition.unreplicated.items() if last < high_watermark]:
                del partition.unreplicated[first]

    def producers(self, partition_key: tuple[object, int]) -> list[ProducerInfo]:
        """The active (unexpired) producers of a partition (DescribeProducers)."""
        partition = self._partitions.get(partition_key)
        if partition is None:
            return []
        now = self._clock()
        return [ProducerInfo(pid, s.epoch, s.batches[-1][1] if s.batches else -1, s.last_timestamp,
                             s.coordinator_epoch, s.txn_first_offset)
                for pid, s in partition.producers.items() if not self._expired(s, now)]

    def forget(self, partition_key: tuple[object, int]) -> None:
        """Drop everything known of a partition (before a replay of its log)."""
        self._partitions.pop(partition_key, None)
        for key in [k for k in self._guards if k[0] == partition_key]:
            del self._guards[key]

    def replay(self, partition_key: tuple[object, int], batch: Any) -> tuple[CompletedTxn, int] | None:
        """Take a batch already in the log (a follower's copy, a replay of the log): no
        check, as Kafka's appends of origin REPLICATION; returns what a marker completed
        (:meth:`end_txn`)."""
        if batch.producer_id < 0:
            return None
        if batch.is_control:
            records = batch.records()
            try:
                control_type, coordinator_epoch = parse_txn_marker(records[0]) if records else (-1, -1)
            except CorruptRecordError:
                return None
            if control_type not in (ControlType.ABORT, ControlType.COMMIT):
                return None  # a control type this broker does not know: skipped, as Kafka's readers do
            return self.end_txn(partition_key, batch.producer_id, batch.producer_epoch, coordinator_epoch,
                                batch.base_offset, commit=control_type == ControlType.COMMIT,
                                timestamp=batch.max_timestamp)
        self.record(partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                    batch.last_offset_delta + 1, batch.base_offset, is_transactional=batch.is_transactional,
                    max_timestamp=batch.max_timestamp)
        return None

    def rebuild(self, partition_key: tuple[object, int], batches: Iterable[Any],
                on_completed: Callable[[CompletedTxn, int], None] | None = None) -> int:
        """Forget the partition, then replay its batches (oldest first, control batches
        included); ``on_completed`` gets every transaction a marker closed and its last
        stable offset. Returns the highest producer id seen (-1 if none)."""
        self.forget(partition_key)
        highest = -1
        for batch in batches:
            completed = self.replay(partition_key, batch)
            if completed is not None and on_completed is not None:
                on_completed(*completed)
            highest = max(highest, batch.producer_id)
        return highest


class ProducerIdManager:
    """Hands out producer ids, each once, in durably recorded blocks (see the module docstring).

    Args:
        next_block_start: the first id of the next block: above every id this broker ever
            gave out (the end of its last recorded block) and every id in its logs.
        record_block: called with ``(first, last)`` of a new block before any of its ids
            is handed out; it must make the block durable (it raises if it cannot, and
            then no id is handed out). None for a broker in memory.
    """

    def __init__(self, next_block_start: int = 0, record_block: Callable[[int, int], None] | None = None) -> None:
        self._next = next_block_start
        self._block_end = next_block_start  # exclusive; no block is taken until an id is asked for
        self._record_block = record_block

    def next_id(self) -> int:
        """A producer id never handed out before."""
        if self._next >= self._block_end:
            first, last = self._next, self._next + PRODUCER_ID_BLOCK_SIZE - 1
            if self._record_block is not None:
                self._record_block(first, last)
            self._block_end = last + 1
        producer_id = self._next
        self._next += 1
        return producer_id


def _is_before(seq: int, reference: int) -> bool:
    """Whether ``seq`` comes before ``reference`` in wrapping sequence order."""
    return 0 < (reference - seq) % _SEQ_MOD < _SEQ_MOD // 2
