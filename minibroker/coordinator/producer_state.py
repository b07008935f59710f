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
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kproto.errors import (
    DuplicateSequenceNumberError,
    InvalidProducerEpochError,
    OutOfOrderSequenceNumberError,
)

__all__ = ["CACHED_BATCHES", "PRODUCER_ID_BLOCK_SIZE", "PRODUCER_ID_EXPIRATION_MS", "ProducerIdManager",
           "ProducerStates"]

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


class ProducerStates:
    """Sequence bookkeeping for every (partition, producer id) that wrote to this broker.

    Args:
        expiration_ms: ``producer.id.expiration.ms``: a producer's state on a partition
            is dropped once it has not written there for that long.
        clock: milliseconds since the epoch (tests pass their own).
        check_interval_ms: how often every expired producer is forgotten at once.

    Raises:
        ValueError: ``expiration_ms`` below 1 (Kafka's lower bound).
    """

    def __init__(self, expiration_ms: int = PRODUCER_ID_EXPIRATION_MS, *, clock: Callable[[], int] | None = None,
                 check_interval_ms: int = EXPIRATION_CHECK_INTERVAL_MS) -> None:
        if expiration_ms < 1:
            raise ValueError(f"producer.id.expiration.ms must be at least 1, not {expiration_ms}")
        self._producers: dict[tuple[object, int, int], _Producer] = {}
        self._expiration_ms = expiration_ms
        self._clock = clock if clock is not None else _wall_clock_ms
        self._check_interval_ms = check_interval_ms
        self._last_check_ms = self._clock()

    def __len__(self) -> int:
        """How many (partition, producer id) states are held."""
        return len(self._producers)

    def _expired(self, state: _Producer, now_ms: int) -> bool:
        return now_ms - state.last_write_ms >= self._expiration_ms  # Kafka's isProducerExpired

    def remove_expired(self, now_ms: int | None = None) -> int:
        """Forget every producer that has not written for ``producer.id.expiration.ms``;
        returns how many (partition, producer id) states went."""
        now = self._clock() if now_ms is None else now_ms
        self._last_check_ms = now
        expired = [key for key, state in self._producers.items() if self._expired(state, now)]
        for key in expired:
            del self._producers[key]
        return len(expired)

    def check(self, partition_key: tuple[object, int], producer_id: int, epoch: int, first_seq: int, count: int) -> tuple[int, int]:
        """Decide on a batch before it is written.

        Returns:
            ``(error_code, base_offset)``: ``(0, -1)`` to append it, ``(0, offset)`` for
            a duplicate already written at ``offset``, or a Kafka error code and -1.
        """
        key = (*partition_key, producer_id)
        state = self._producers.get(key)
        if state is not None and self._expired(state, self._clock()):
            del self._producers[key]
            state = None
        if state is None:
            return 0, -1
        if epoch < state.epoch:
            return InvalidProducerEpochError.code, -1
        last_seq = (first_seq + count - 1) % _SEQ_MOD
        if epoch > state.epoch:
            return (0, -1) if first_seq == 0 else (OutOfOrderSequenceNumberError.code, -1)
        for first, last, base_offset in state.batches:
            if first == first_seq and last == last_seq:
                return 0, base_offset
        if state.batches and first_seq == _next(state.batches[-1][1]):
            return 0, -1
        oldest = state.batches[0][0] if state.batches else None
        if oldest is not None and _is_before(first_seq, oldest):
            return DuplicateSequenceNumberError.code, -1
        return OutOfOrderSequenceNumberError.code, -1

    def record(self, partition_key: tuple[object, int], producer_id: int, epoch: int, first_seq: int, count: int, base_offset: int) -> None:
        """Remember a batch that was written."""
        now = self._clock()
        if now - self._last_check_ms >= self._check_interval_ms:
            self.remove_expired(now)
        key = (*partition_key, producer_id)
        state = self._producers.get(key)
        if state is None or epoch > state.epoch:
            state = self._producers[key] = _Producer(epoch, now)
        state.last_write_ms = now
        state.batches.append((first_seq, (first_seq + count - 1) % _SEQ_MOD, base_offset))


    def rebuild(self, partition_key: tuple[object, int], batches: Iterable[Any]) -> int:
        """Replay a partition's batches (oldest first); returns the highest producer id seen (-1 if none)."""
        highest = -1
        for batch in batches:
            if batch.producer_id < 0 or batch.is_control:
                continue
            self.record(partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                        batch.last_offset_delta + 1, batch.base_offset)
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
