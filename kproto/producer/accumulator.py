"""The record accumulator: records appended into one open batch per partition.

``append`` is the per-record path and runs on the caller's thread (a sync producer's user
thread, or the asyncio producer's loop). Its decisions are made here, in Python, once:
:class:`SendPolicy` holds them (serializers, the :class:`~kproto.producer.partitioner.Partitioner`,
``max.request.size``, ``buffer.memory``, what makes a record's future, where a record that
must wait goes). The codec's :class:`~kproto.codec.Appender` (Cython) reads the policy
once and applies it per record with no Python call of ours: it serializes, picks the
partition, appends to the partition's open :class:`~kproto.records.BatchBuilder` (the
record is encoded at once, so no per-record object is kept) and returns a
:class:`~kproto.producer.futures.RecordFuture`; it calls back into the policy only per
batch (a new batch, a new sticky partition) and for a refused record. A batch closes when
the next record would take it past ``batch.size``; the sender takes closed batches, and
open ones once they are ``linger.ms`` old or a flush asks for them.

Each partition's queue is in send order: retried batches go back to its head, before
any batch not yet sent, in sequence order (the broker needs an idempotent producer's
sequences in order). One lock (the appender's) guards everything here; the sender holds
it only to look at and take batches. An asyncio producer, whose loop's thread alone
appends and sends, gives the appender that thread (``owner_thread``): its per-record
path then skips the lock, which nothing can contend for.

Memory: ``used`` counts what unsettled batches hold and never exceeds ``buffer.memory``
(issue 16). As in Java's producer, whose ``BufferPool`` gives each new batch
``max(batch.size, record size)`` bytes, each batch counts that from its first record,
not the bytes written into it, and its builder's buffer never grows past it
(``max_bytes`` is ``batch.size``: see :attr:`~kproto.codec.BatchBuilder.capacity`): a
10,000-byte record alone in a 16 KiB batch sits in a 16 KiB buffer and counts 16 KiB.
A record that needs a new batch is appended only if that fits in what is left, else it waits (up to ``max.block.ms``, in
the producer) for settled batches to free room; records that go into an open batch take
no more. A record that could never fit is refused at once with
:class:`~kproto.errors.MessageTooLargeError`, as Java's ``ensureValidRecordSize`` refuses
one bigger than ``buffer.memory``. A whole batch appended by other means must count its
``size`` into ``appender.used`` under the lock in the same way.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from kproto.codec import BATCH_HEADER_SIZE, Appender, OpenBatch
from kproto.errors import ClientClosedError, MessageTooLargeError
from kproto.producer.futures import BatchResult, RecordFuture
from kproto.producer.partitioner import Partitioner
from kproto.records import BatchBuilder

__all__ = ["ProducerBatch", "RecordAccumulator", "SendPolicy"]

# How far behind (bytes of full batches of a partition not taken yet, counted as batch.size
# each) the sender may fall before a sync producer's thread hands over to it, and again
# at each further such step: a hand-off costs two thread switches whatever the batch size,
# so it is paid per megabyte appended, not per 16 KiB batch.
BEHIND_BYTES = 1 << 20


# A record's bytes beyond its key, value, header keys and header values, at most, with a new
# batch's header: the appender's bound (kproto.codec's Appender: 36 bytes of varint framing)
# less the 10 per header, for a caller that has only the record's payload size
# (send_batch's largest_record) to check with SendPolicy.check_size.
RECORD_OVERHEAD = 36 + BATCH_HEADER_SIZE

class SendPolicy:
    """What a producer decides per record, in one place: the codec's
    :class:`~kproto.codec.Appender` reads these attributes once and applies them.

    Args:
        new_batch: ``(topic, partition) -> batch``: a new open batch (an
            :class:`~kproto.codec.OpenBatch` whose builder's ``max_bytes`` is
            ``batch.size``), registered by the owner; called with the appender's lock held.
        wake: called when a record arrives while no batch was open (a linger clock starts).
        buffer_memory: ``buffer.memory``: a record is appended only if what unsettled
            batches hold stays within it with the record (else the record waits).
        partitioner: which partition a record without one goes to.
        future_class: what a record's future is: a :class:`~kproto.codec.RecordRef`
            subclass, made without its ``__init__`` (the codec sets its three fields).
        counts: topic -> partition count, for the topics whose metadata is known (read
            without the lock: its owner only ever adds to it or replaces values). A topic
            not in it makes the record wait.
        key_serializer, value_serializer: ``key.serializer`` and ``value.serializer``:
            callables applied to a key or value that is not None, or None.
        max_request_size: ``max.request.size``: a bigger record is refused.
        waiting: ``(topic, value, key, partition, timestamp_ms, headers, on_delivery) ->``
            what ``send`` returns for a record that must wait (the owner's slow path).
        register: ``(future, on_delivery)``: attaches a delivery callback to a future.
        full: called, after the appender let go of its lock, when a batch filled up and
            closed (it need not linger); ``wake`` when not given.
        batch_size: ``batch.size``: what a new batch holds (its builder's ``max_bytes``;
            more for a bigger record). Taken as ``buffer.memory`` when bigger, so that a
            batch always fits.
    """

    __slots__ = ("new_batch", "wake", "full", "buffer_memory", "partitioner", "future_class", "counts",
                 "key_serializer", "value_serializer", "max_request_size", "max_record", "waiting", "register",
                 "refusal", "batch_size")

    def __init__(self, new_batch: Callable[[str, int], OpenBatch], wake: Callable[[], None],
                 buffer_memory: int, partitioner: Partitioner | None = None, future_class: type = RecordFuture,
                 counts: dict[str, int] | None = None, key_serializer: Callable[[Any], Any] | None = None,
                 value_serializer: Callable[[Any], Any] | None = None, max_request_size: int = 1048576,
                 waiting: Callable[..., Any] | None = None, register: Callable[[Any, Any], None] | None = None,
                 full: Callable[[], None] | None = None, batch_size: int = 16384) -> None:
        self.new_batch = new_batch
        self.wake = wake
        self.full = wake if full is None else full
        self.buffer_memory = buffer_memory
        self.partitioner = Partitioner() if partitioner is None else partitioner
        self.future_class = future_class
        self.counts = {} if counts is None else counts
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self.max_request_size = max_request_size
        # The codec bounds each record's size (key, value, headers, framing and a batch
        # header) and asks check_size only for records over this.
        self.max_record = min(max_request_size, buffer_memory)
        self.batch_size = min(batch_size, buffer_memory)
        self.waiting = waiting
        self.register = register
        # What a send raises while the appender is closed; the owner may replace it (a
        # transactional producer closes the appender outside a transaction, too).
        self.refusal: Callable[[], BaseException] = lambda: ClientClosedError("the producer is closed")

    def check_size(self, size: int) -> None:
        """Refuse a record whose size bound (``size``: key, value, headers, framing and a
        batch header) is over ``max.request.size`` or ``buffer.memory``: it could never
        be sent, or never fit (Java's ``KafkaProducer.ensureValidRecordSize``:
        RecordTooLargeException).

        Raises:
            MessageTooLargeError: it is.
        """
        if size > self.max_request_size:
            raise MessageTooLargeError(f"a record of up to {size} bytes is over max.request.size={self.max_request_size}")
        if size > self.buffer_memory:
            raise MessageTooLargeError(f"a record of up to {size} bytes is over buffer.memory={self.buffer_memory}, "
                                       "the memory for all unsent records")

    def closed_error(self) -> BaseException:
        """What a send raises while the appender is closed (``refusal``)."""
        return self.refusal()

    def thread_error(self) -> BaseException:
        """What a send from another thread raises when the appender has an owner thread
        (an asyncio producer's loop: it appends without a lock)."""
        return RuntimeError(
            "this AIOProducer belongs to the thread of the event loop it started on and was "
            "called from another thread; use the thread-safe Producer, which works from any "
            "thread and any loop")


class ProducerBatch(OpenBatch):
    """One batch of one partition, from its first record until it is settled.

    The codec's :class:`~kproto.codec.OpenBatch` holds what the per-record path touches
    (builder, result, size, closed) as C fields; the sender's bookkeeping is here.
    """

    __slots__ = ("topic", "partition", "created", "deadline", "attempts", "next_attempt", "stamp",
                 "base_sequence", "data", "last_error", "_count", "raw_size")

    def __init__(self, topic: str, partition: int, builder: BatchBuilder, now: float, delivery_timeout: float) -> None:
        super().__init__(builder, BatchResult(topic, partition))
        self.topic = topic
        self.partition = partition
        self.created = now
        self.deadline = now + delivery_timeout
        self.attempts = 0
        self.next_attempt = 0.0
        self.stamp: tuple[int, int] | None = None  # (producer id, epoch) its sequence belongs to
        self.base_sequence = -1
        self.data: bytes | None = None  # built at the first send
        self.last_error: BaseException | None = None  # why its last attempt failed (for expiry)

    @property
    def record_count(self) -> int:
        return self.builder.record_count if self.data is None else self._count

    def seal(self, data: bytes | None = None) -> bytes:
        """Build the batch's bytes (``data``) once it was taken to be sent, and let go of its
        builder, whose buffer is not needed any more (its memory stays counted until the
        batch settles, as Java's producer gives a batch's buffer back to its pool then).
        ``data``: the builder's ``build()`` made already (send_batch builds on the caller's
        thread). ``raw_size`` keeps the records' uncompressed size (the metrics'
        compression rate)."""
        builder = self.builder
        self._count = builder.record_count
        self.raw_size = builder.size_in_bytes()
        self.data = builder.build() if data is None else data
        self.builder = None
        return self.data

    def __repr__(self) -> str:
        return f"<ProducerBatch {self.topic}-{self.partition} {self.record_count} records>"


class RecordAccumulator:
    """Open and waiting batches of every partition.

    Args:
        batch_size: ``batch.size``.
        linger: ``linger.ms`` in seconds.
        buffer_memory: ``buffer.memory``.
        compression, compression_level: the codec id and level of new batches.
        delivery_timeout: ``delivery.timeout.ms`` in seconds.
        transactional: batches carry the transactional bit (``transactional.id`` is set).
        wake: called (from any thread) when a record arrives while no batch was open.
        freed: called (on the sender's loop) after a batch settles and frees memory.
        per_record: the rest of the :class:`SendPolicy` (partitioner, partition counts,
            serializers, ``max.request.size``, waiting, register, full).
    """

    def __init__(self, *, batch_size: int, linger: float, buffer_memory: int, compression: int,
                 compression_level: int | None, delivery_timeout: float, wake: Callable[[], None],
                 freed: Callable[[], None] = lambda: None, transactional: bool = False, **per_record: Any) -> None:
        self.transactional = transactional
        self.batch_size = batch_size
        self.linger = linger
        self.buffer_memory = buffer_memory
        self.compression = compression
        self.compression_level = compression_level
        self.delivery_timeout = delivery_timeout
        self._freed = freed
        self.queues: dict[tuple[str, int], deque[ProducerBatch]] = {}
        self.unsettled = 0  # batches not yet settled: flush waits for 0
        self.settled = 0  # batches settled so far: a record waiting for memory looks again when it moves
        self.behind = False  # a batch was opened another BEHIND_BYTES behind what the sender took
        self._hand_off_every = max(1, BEHIND_BYTES // max(batch_size, 1))  # batches
        self.flushing = 0  # > 0 while a flush wants every open batch sent now
        self.home: Any = None  # the sender's event loop, which settles batches (set when it starts)
        self.policy = SendPolicy(self._new_batch, wake, buffer_memory, batch_size=max(batch_size, 1), **per_record)
        self.appender = Appender(self.policy)
        self.lock = self.appender.lock  # one lock for the appender's state and the queues
        self.space = threading.Condition(self.lock)  # notified when memory is freed or batches settle
        # The per-record path, in the codec: ``send(topic, value, key, partition,
        # timestamp_ms, headers, on_delivery) -> RecordFuture`` or what ``waiting`` returns.
        self.send = self.appender.send

    @property
    def used(self) -> int:
        """Bytes counted for unsettled batches: ``max(batch.size, first record)`` each."""
        return self.appender.used

    def _new_batch(self, topic: str, partition: int) -> ProducerBatch:
        # Called by the appender, with the lock held.
        # max_bytes: its buffer never grows past max(batch.size, first record), which the appender counts.
        builder = BatchBuilder(compression=self.compression, compression_level=self.compression_level,
                               max_bytes=self.policy.batch_size, is_transactional=self.transactional)
        batch = ProducerBatch(topic, partition, builder, time.monotonic(), self.delivery_timeout)
        batch.result.home = self.home
        queue = self.queues.setdefault((topic, partition), deque())
        queue.append(batch)
        waiting = len(queue) - 1  # full batches of the partition the sender has not taken yet
        if waiting and waiting % self._hand_off_every == 0:
            self.behind = True  # another BEHIND_BYTES behind: the sync face hands over
        self.unsettled += 1
        return batch

    # -- the sender's side ----------------------------------------------------------------

    def ready(self, now: float) -> tuple[list[ProducerBatch], float | None]:
        """The head batch of every partition that may be sent now, and when to look again.

        A head batch is ready when it is closed, ``linger.ms`` old, flushed, or a retry
        whose backoff passed, and every one (but a retry in backoff) while a record waits
        for memory (the appender's ``exhausted``: Java's ``RecordAccumulator.ready`` sends
        them when its ``BufferPool`` has waiters, since only settled batches free memory). The second value is the earliest time a waiting head batch
        becomes ready (None: nothing waits).
        """
        ready = []
        soonest = None
        with self.lock:
            idle = True
            exhausted = self.appender.exhausted
            self.appender.exhausted = False
            for queue in self.queues.values():
                if not queue:
                    continue
                batch = queue[0]
                if not batch.closed:
                    idle = False
                if batch.attempts and batch.next_attempt > now:
                    at = batch.next_attempt
                elif (batch.closed or len(queue) > 1 or self.flushing or exhausted
                      or now >= batch.created + self.linger):
                    ready.append(batch)
                    continue
                else:
                    at = batch.created + self.linger
                soonest = at if soonest is None else min(soonest, at)
            self.appender.idle = idle
        return ready, soonest

    def take(self, batch: ProducerBatch) -> None:
        """Remove a head batch that is being sent (it closes: later records open a new one)."""
        with self.lock:
            queue = self.queues[(batch.topic, batch.partition)]
            assert queue[0] is batch
            queue.popleft()
            batch.closed = True
            if not queue:
                del self.queues[(batch.topic, batch.partition)]

    def requeue(self, batch: ProducerBatch, error: BaseException | None = None) -> None:
        """Put a batch to retry (after ``error``) back at its partition's head, in sequence order."""
        batch.last_error = error
        with self.lock:
            queue = self.queues.setdefault((batch.topic, batch.partition), deque())
            i = 0
            while i < len(queue) and queue[i].stamp is not None and queue[i].base_sequence < batch.base_sequence:
                i += 1
            queue.insert(i, batch)

    def settle(self, batch: ProducerBatch, base_offset: int, log_append_time: int = -1,
               error: BaseException | None = None) -> None:
        """Settle a batch (success or failure) and free its memory."""
        with self.lock:
            self.appender.used -= batch.size
            self.unsettled -= 1
            self.settled += 1
            self.space.notify_all()
        batch.result.complete(base_offset, log_append_time, error)
        self._freed()

    def expired(self, now: float) -> list[ProducerBatch]:
        """Remove and return batches waiting in queues past ``delivery.timeout.ms``."""
        out = []
        with self.lock:
            for key, queue in list(self.queues.items()):
                while queue and queue[0].deadline <= now:
                    out.append(queue.popleft())
                if not queue:
                    del self.queues[key]
        return out

    def abort_all(self) -> list[ProducerBatch]:
        """Remove and return every batch still queued (for a close that gives up)."""
        with self.lock:
            out = [b for queue in self.queues.values() for b in queue]
            self.queues.clear()
        return out

    # -- whole batches (the producer's send_batch: kproto.producer.batches) ---------------

    def enqueue(self, topic: str, partition: int, builder: BatchBuilder, data: bytes | None) -> ProducerBatch | None:
        """Queue a batch built whole (``data`` is ``builder.build()``, or None for the sender
        to build when it first sends it), closed, so it is sent
        at once. It closes the partition's open batch, which goes first: records appended
        later open a new batch behind it, so the partition keeps send order.

        Returns:
            the queued batch, or None when ``buffer.memory`` has no room for it (a batch
            is taken whatever its size when no other holds memory).

        Raises:
            ClientClosedError, KafkaError: the appender is closed (as a send would raise).
        """
        size = builder.size_in_bytes()
        if data is None:  # the builder holds its buffer until sent, a reused spare's all of it
            size = max(size, builder.capacity)
        with self.lock:
            if self.appender.closed:
                raise self.policy.closed_error()
            used = self.appender.used
            if used and used + size > self.buffer_memory:
                return None
            queue = self.queues.setdefault((topic, partition), deque())
            if queue:
                queue[-1].closed = True
            batch = ProducerBatch(topic, partition, builder, time.monotonic(), self.delivery_timeout)
            batch.result.home = self.home
            if data is not None:
                batch.seal(data)
            batch.size = size
            batch.closed = True
            queue.append(batch)
            self.unsettled += 1
            self.appender.used = used + size
        self.policy.wake()
        return batch
