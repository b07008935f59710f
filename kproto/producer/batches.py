"""``send_batch``: many records from columns into record batches, one codec call per batch.

A producer's ``send`` encodes one record per call; ``send_batch(topic, values, keys, ...)``
takes whole columns (Python lists or tuples of bytes, or pyarrow arrays, read in place
from their Arrow buffers) and encodes each record batch with one call of the codec's
:meth:`~kproto.codec.BatchBuilder.append_columns`, on the caller's thread, compression
and CRC included. The finished batches go into the accumulator closed
(:meth:`~kproto.producer.accumulator.RecordAccumulator.enqueue`), so from there on they
are the producer's batches like any other: the sender routes them to leaders, keeps
``max.in.flight.requests.per.connection``, stamps an idempotent producer's sequence
numbers as they are first sent, adds their partitions to the open transaction, retries
and settles them.

Theory of operation.

1. Check everything before anything is queued (a bad row fails the call, with nothing
   sent): the producer is open (and in a transaction, if transactional); columns have one
   entry per value; keys and values are bytes or None (``key.serializer`` and
   ``value.serializer`` are applied to Python sequences first, as ``send`` does); and no
   record alone is over ``max.request.size`` (:func:`~kproto.codec.largest_record`, one
   pass in C; the same estimate and the same :class:`~kproto.errors.MessageTooLargeError`
   as ``send``, Java's ``RecordTooLargeException``).
2. Partition, as ``send`` would for each record (:mod:`kproto.producer.partitioner`): a
   given ``partition`` takes every record; otherwise ``partitioner.class`` decides per
   record when set; otherwise keyed records go to murmur2's partition (Java's
   ``BuiltInPartitioner``; :func:`~kproto.codec.partition_rows` groups the rows by
   partition in C, keeping their order) and keyless ones to the topic's sticky partition
   (KIP-480), which moves on after the call as it does when ``send`` fills a batch.
3. Cut each partition's rows into batches of at most ``batch.size`` bytes (a record
   bigger than that goes alone, as in Java), build each (``compression.type`` and its
   level; an idempotent producer's uncompressed batch is finished by the sender, which
   writes its sequence number in place), and queue it. When ``buffer.memory`` is full the call waits for batches to
   settle, up to ``max.block.ms`` without progress (then
   :class:`~kproto.errors.KafkaTimeoutError`, naming how many records were queued: those
   are sent).
4. Reuse memory (Java's ``BufferPool`` gives a settled batch's buffer to the next one): a
   settled batch of the producer's earlier calls (or of this one) is kept as a spare
   (:class:`_Spares`), and a new batch is written into one that nothing refers to any
   more (:meth:`~kproto.codec.BatchBuilder.reuse`) rather than into fresh memory, whose
   page faults cost as much CPU as encoding the records (issue 16). Spares count against
   ``buffer.memory`` and are let go when a send finds no room.

The call returns a :class:`BatchFuture` of one :class:`BatchMetadata` per record batch.
Records of one call to one partition keep their order, and come after the records that
``send`` queued for that partition before the call and before those sent after it.
"""

from __future__ import annotations

import array
import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kproto._loop import wait_for
from kproto.codec import BatchBuilder, BinaryArray, largest_record, partition_rows
from kproto.errors import KafkaTimeoutError, MessageTooLargeError
from kproto.producer.accumulator import RECORD_OVERHEAD, ProducerBatch
from kproto.producer.futures import RecordFuture
from kproto.structs import check_topic

if TYPE_CHECKING:
    from kproto.producer.accumulator import RecordAccumulator
    from kproto.producer.producer import AIOProducer, Producer

__all__ = ["BatchFuture", "BatchMetadata", "send_batch_async", "send_batch_blocking"]


class BatchMetadata(NamedTuple):
    """Where one record batch of a ``send_batch`` call was written.

    ``rows`` are the indices, in the call's columns, of the batch's records in offset
    order: record ``rows[j]`` has offset ``base_offset + j``. ``base_offset`` is -1 with
    acks=0 (the broker does not say) and when ``error`` is set (the batch failed).
    """

    topic: str
    partition: int
    base_offset: int
    record_count: int
    rows: Sequence[int]
    error: BaseException | None = None


class BatchFuture(concurrent.futures.Future[list[BatchMetadata]]):
    """The future of one ``send_batch`` call: its result is the list of
    :class:`BatchMetadata` of the call's record batches, in the order they were queued.

    If a batch failed, :meth:`result` raises the first failed batch's error; the batches
    written anyway are in :attr:`batches` (each with its ``error``). It is a
    :class:`concurrent.futures.Future` and can also be awaited (on any event loop).
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._slots: list[BatchMetadata | None] = []
        self._pending = 0
        self._sealed = False
        self._finishing = False  # set once, by whichever thread completes the future

    @property
    def batches(self) -> list[BatchMetadata]:
        """The batches settled so far (all of them once the future is done)."""
        with self._lock:
            return [b for b in self._slots if b is not None]

    def _add(self, batch: ProducerBatch, rows: Sequence[int], spares: _Spares | None = None,
             acc: Any = None) -> None:
        """Watch a queued batch: its outcome fills its slot (and its memory goes to
        ``spares``, ``acc`` being the accumulator that counts memory)."""
        with self._lock:
            slot = len(self._slots)
            self._slots.append(None)
            self._pending += 1
        count = batch.record_count
        result = batch.result

        def settled(_: Any) -> None:
            if spares is not None:
                spares.offer(batch.data, acc)
            error = result.error
            meta = BatchMetadata(batch.topic, batch.partition, result.base_offset if error is None else -1, count,
                                 rows, error)
            with self._lock:
                self._slots[slot] = meta
                self._pending -= 1
            self._maybe_done()

        # A record future of the batch's last record: completion calls back once it settles.
        RecordFuture(result, count - 1, 0).add_done_callback(settled)

    def _seal(self) -> None:
        """Every batch of the call is queued: the future completes once they settle."""
        with self._lock:
            self._sealed = True
        self._maybe_done()

    def _maybe_done(self) -> None:
        with self._lock:  # the caller's thread (seal) and the loop's (a settle) may both get here
            if not self._sealed or self._pending or self._finishing:
                return
            self._finishing = True
            slots = [b for b in self._slots if b is not None]
        failed = next((b.error for b in slots if b.error is not None), None)
        if failed is not None:
            self.set_exception(failed)
        else:
            self.set_result(slots)

    def __await__(self) -> Generator[Any, Any, list[BatchMetadata]]:
        return (yield from asyncio.wrap_future(self).__await__())


# ---------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------


def _is_arrow(obj: Any) -> bool:
    # Without importing pyarrow: it is needed only when an Arrow array is given.
    return type(obj).__module__.startswith("pyarrow")


def _arrow_binary(arr: Any, name: str) -> BinaryArray:
    """A pyarrow binary, large_binary, string or large_string array (or a chunked one) as
    the codec's :class:`~kproto.codec.BinaryArray` over its own buffers (no copy, but for
    a chunked array of several chunks, which is combined, and view types, which are cast)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    t = arr.type
    if pa.types.is_binary_view(t) or pa.types.is_string_view(t) or pa.types.is_fixed_size_binary(t):
        arr = arr.cast(pa.large_binary())
        t = arr.type
    if pa.types.is_null(t):
        arr = arr.cast(pa.binary())
        t = arr.type
    large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    if not (large or pa.types.is_binary(t) or pa.types.is_string(t)):
        raise TypeError(f"{name} must be a binary or string Arrow array, not {t}")
    validity, offsets, data = arr.buffers()
    if data is None:  # every row null, or no rows: Arrow may leave the data buffer out
        data = b""
    return BinaryArray(len(arr), offsets, data, validity if arr.null_count else None, arr.offset, large)


def _bytes_column(column: Any, name: str, serializer: Any) -> Any:
    """Keys or values as the codec reads them: a list or tuple, or a BinaryArray."""
    if column is None:
        return None
    if _is_arrow(column):
        return _arrow_binary(column, name)  # Arrow data is bytes already: no serializer
    if isinstance(column, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be a sequence of records' {name}, not one {type(column).__name__}")
    if serializer is not None:
        return [None if v is None else serializer(v) for v in column]
    return column if isinstance(column, (list, tuple)) else list(column)


def _timestamps(timestamps: Any, count: int) -> tuple[Any, int]:
    """``(per-record int64 buffer or None, the call's timestamp)``."""
    now = int(time.time() * 1000)
    if timestamps is None:
        return None, now
    if isinstance(timestamps, int):
        return None, timestamps
    if _is_arrow(timestamps):
        import pyarrow as pa  # type: ignore[import-untyped]

        if isinstance(timestamps, pa.ChunkedArray):
            timestamps = timestamps.combine_chunks()
        if timestamps.null_count:
            raise ValueError("timestamps has nulls")
        if pa.types.is_timestamp(timestamps.type):
            timestamps = timestamps.cast(pa.timestamp("ms", timestamps.type.tz), safe=False)
        timestamps = timestamps.cast(pa.int64())
        view = memoryview(timestamps.buffers()[1]).cast("B")
        start = timestamps.offset * 8
        column: Any = view[start:start + 8 * len(timestamps)].cast("q")
    else:
        column = array.array("q", timestamps)
    if len(column) != count:
        raise ValueError(f"timestamps has {len(column)} entries for {count} values")
    return column, now


def _headers(headers: Any, count: int) -> Any:
    """One header list (or None) per record; a mapping is every record's headers."""
    if headers is None:
        return None
    if isinstance(headers, Mapping):
        return [list(headers.items())] * count
    return [h if h is None or isinstance(h, (list, tuple)) else list(h.items()) for h in headers]


class _Spares:
    """A producer's settled ``send_batch`` batches, whose memory its next batches reuse.

    Theory of operation. A batch that settles is offered (:meth:`offer`, on the sender's
    loop) when it is large (:data:`SMALLEST`: smaller ones come from the allocator's free
    lists anyway) and when it fits in ``buffer.memory`` beside the memory in use; at most
    :data:`KEPT` are kept, the oldest let go first. Kept spares count in the accumulator's
    memory in use (``appender.used``), as Java's ``BufferPool`` counts its free buffers in
    its total, so what the producer holds stays within ``buffer.memory``; a batch written
    into one (:meth:`take`) gives its bytes back before its own are counted, and a send or
    ``send_batch`` that finds no room lets them all go (:meth:`release`) before it waits for
    batches to settle. A request or connection may still hold a spare for a while: the
    codec takes one only once the list alone refers to it
    (:meth:`~kproto.codec.BatchBuilder.reuse`), so no byte anyone can still read changes.
    The spares go with the producer.
    """

    SMALLEST = 64 << 10
    KEPT = 64  # a bound on the list; buffer.memory bounds the bytes

    def __init__(self) -> None:
        self.items: list[bytes] = []
        self.held = 0  # bytes of the items, counted in the accumulator's appender.used
        self.reused = 0  # batches written into a spare so far

    def offer(self, data: Any, acc: RecordAccumulator) -> None:
        """Keep ``data``, a settled batch's bytes, if it is worth it and fits."""
        if type(data) is not bytes or len(data) < self.SMALLEST:
            return
        size = len(data)
        items = self.items
        with acc.lock:
            used = acc.appender.used
            if used + size > acc.buffer_memory:
                return
            if len(items) >= self.KEPT:
                oldest = len(items.pop(0))
                self.held -= oldest
                used -= oldest
            items.append(data)
            self.held += size
            acc.appender.used = used + size

    def take(self, builder: BatchBuilder, acc: RecordAccumulator) -> bool:
        """Have the empty ``builder`` write into a spare, if one is free; whether it did."""
        if not self.items:
            return False
        with acc.lock:
            if not builder.reuse(self.items):
                return False
            freed = self.held - sum(map(len, self.items))
            self.held -= freed
            acc.appender.used -= freed
        self.reused += 1
        return True

    def release(self, acc: RecordAccumulator) -> bool:
        """Let every spare go, for a send that finds no room; whether there were any."""
        with acc.lock:
            if not self.items:
                return False
            acc.appender.used -= self.held
            self.items.clear()
            self.held = 0
            acc.space.notify_all()
        return True


def _spares(core: AIOProducer) -> _Spares:
    spares = core._batch_spares
    if spares is None:
        spares = core._batch_spares = _Spares()
    return spares


class _Job:
    """One ``send_batch`` call: its checked columns, its batches, its future."""

    def __init__(self, core: AIOProducer, topic: str, values: Any, keys: Any, partition: int | None,
                 headers: Any, timestamps: Any) -> None:
        acc = core._acc
        if acc.appender.closed:  # closed, or outside a transaction: as send
            raise acc.policy.closed_error()
        check_topic(topic)
        policy = acc.policy
        self.core = core
        self.topic = topic
        self.values = _bytes_column(values, "values", policy.value_serializer)
        self.keys = _bytes_column(keys, "keys", policy.key_serializer)
        self.count = len(self.values)
        self.headers = _headers(headers, self.count)
        self.timestamps, self.timestamp = _timestamps(timestamps, self.count)
        row, size = largest_record(self.values, self.keys, self.headers)
        try:  # as send's: over max.request.size or buffer.memory, it could never be sent
            policy.check_size(RECORD_OVERHEAD + size)
        except MessageTooLargeError as exc:
            raise MessageTooLargeError(f"record {row} of the batch: {exc}") from None
        if partition is not None and (isinstance(partition, bool) or not isinstance(partition, int)):
            raise TypeError(f"partition must be an int or None, not {type(partition).__name__}")
        self.partition = partition
        # Built here (compression and CRC on the caller's thread), unless the batch is an
        # idempotent producer's and not compressed: the sender then writes its sequence into
        # the header in place and computes the CRC once (built here it would be copied with
        # the new sequence: kproto.codec.rewrite_batch).
        self.build_later = core.idempotent and not acc.compression
        self.queued = 0  # records queued so far
        self.future = BatchFuture()
        self.spares = _spares(core)

    def _runs(self, partitions: int) -> tuple[Any, list[tuple[int, int, int]], int]:
        """``(rows, runs, sticky)``: the rows grouped by partition (None: in column order),
        ``(partition, start, stop)`` slices of them, and the sticky partition used (-1: none)."""
        acc = self.core._acc
        partitioner = acc.policy.partitioner
        if self.partition is not None:
            if not 0 <= self.partition < partitions:
                raise partitioner.refuse(self.topic, self.partition, partitions)
            return None, [(self.partition, 0, self.count)], -1
        if partitioner.chooser is not None:
            keys = self.keys
            chosen = [partitioner.chooser(self.topic, None if keys is None else keys[i], partitions)
                      for i in range(self.count)]
            rows, runs = partition_rows(self.count, partitions, partitions=chosen)
            return rows, runs, -1
        with acc.lock:  # the appender changes the sticky partition with the lock held
            sticky = partitioner.stick(self.topic, partitions)
        if self.keys is not None and partitioner.hash_keys:
            rows, runs = partition_rows(self.count, partitions, self.keys, null_partition=sticky)
            return rows, runs, sticky
        return None, [(sticky, 0, self.count)], sticky

    def batches(self, partitions: int) -> Generator[tuple[int, BatchBuilder, bytes | None, Sequence[int]], None, None]:
        """Build the call's batches one by one: ``(partition, builder, data, rows)`` (``data``
        None: the sender builds it, see ``build_later``)."""
        acc = self.core._acc
        rows, runs, sticky = self._runs(partitions)
        for partition, start, stop in runs:
            pos = start
            while pos < stop:
                builder = BatchBuilder(compression=acc.compression, compression_level=acc.compression_level,
                                       max_bytes=min(acc.batch_size, acc.buffer_memory), is_transactional=acc.transactional)
                self.spares.take(builder, acc)
                end = builder.append_columns(self.values, self.keys, self.headers, self.timestamps, self.timestamp,
                                             rows, pos, stop)
                taken: Sequence[int] = range(pos, end) if rows is None else rows[pos:end]
                yield partition, builder, None if self.build_later else builder.build(), taken
                pos = end
        if sticky >= 0:  # its batches are full: later keyless records go elsewhere (KIP-480)
            with acc.lock:
                acc.policy.partitioner.next_sticky(self.topic, sticky, partitions)

    def enqueue(self, partition: int, builder: BatchBuilder, data: bytes | None, rows: Sequence[int]) -> bool:
        """Queue one built batch; False when ``buffer.memory`` has no room for it yet."""
        batch = self.core._acc.enqueue(self.topic, partition, builder, data)
        if batch is None:
            return False
        self.queued += builder.record_count
        self.future._add(batch, rows, self.spares, self.core._acc)
        return True

    def out_of_memory(self) -> KafkaTimeoutError:
        return KafkaTimeoutError(
            f"waited {self.core._max_block * 1000:.0f} ms (max.block.ms) for memory (buffer.memory): "
            f"{self.queued} of the batch's {self.count} records were queued (they are sent), the rest were not")


# ---------------------------------------------------------------------------
# the two faces' drivers
# ---------------------------------------------------------------------------


def send_batch_blocking(face: Producer, topic: str, values: Any, keys: Any = None, partition: int | None = None,
                        headers: Any = None, timestamps: Any = None) -> BatchFuture:
    """:meth:`Producer.send_batch`: encode and queue on the caller's thread, waiting for
    metadata or memory as ``send`` does (up to ``max.block.ms``)."""
    core = face._core
    job = _Job(core, topic, values, keys, partition, headers, timestamps)
    acc = core._acc
    if acc.policy.counts.get(topic) is None:
        face._portal.call(core._prepare, topic)  # bounded by max.block.ms itself
    queued, every = 0, acc._hand_off_every  # batches queued since the last hand-off (per BEHIND_BYTES)
    for partition_, builder, data, rows in job.batches(acc.policy.counts[topic]):
        deadline = time.monotonic() + core._max_block
        while not job.enqueue(partition_, builder, data, rows):
            if job.spares.release(acc):
                continue
            with acc.space:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise job.out_of_memory()
                if acc.used and acc.used + builder.size_in_bytes() > acc.buffer_memory:
                    acc.space.wait(min(left, 0.2))
        queued += 1
        if queued >= every and core._sender is not None:
            # The GIL: while this thread encodes, the loop's thread cannot send what is
            # queued; hand over to it (Sender.hand_off) so the broker works meanwhile.
            queued = 0
            core._sender.hand_off()
    job.future._seal()
    return job.future


async def send_batch_async(core: AIOProducer, topic: str, values: Any, keys: Any = None,
                           partition: int | None = None, headers: Any = None, timestamps: Any = None) -> BatchFuture:
    """:meth:`AIOProducer.send_batch`: encode and queue on the event loop, batch by batch
    (the loop runs the sender between them), waiting for metadata or memory."""
    job = _Job(core, topic, values, keys, partition, headers, timestamps)
    core._start()
    if core._acc.appender.hold and core._waiting_task is not None:
        await asyncio.wait((core._waiting_task,))  # records sent before, waiting for metadata, go first
    acc = core._acc
    await core._prepare(topic)
    for partition_, builder, data, rows in job.batches(acc.policy.counts[topic]):
        deadline = time.monotonic() + core._max_block
        while not job.enqueue(partition_, builder, data, rows):
            if job.spares.release(acc):
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise job.out_of_memory()
            space = core._space
            assert space is not None  # made by _start
            space.clear()
            try:
                await wait_for(space.wait(), min(left, 0.2))
            except TimeoutError:
                pass
        await asyncio.sleep(0)  # let the sender take what is queued while the next batch is built
    job.future._seal()
    return job.future
