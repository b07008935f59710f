"""The producer: :class:`AIOProducer` for asyncio, :class:`Producer` for threads.

Both share the per-record path (:meth:`kproto.codec.Appender.send`, in Cython: serialize,
partition, append into the open batch, as the accumulator's
:class:`~kproto.producer.accumulator.SendPolicy` says) and one asyncio sender; the sync
face runs the sender on a background loop and appends from the caller's thread directly, so a
``send`` crosses no thread boundary unless it must wait (for a topic's metadata, or for
room in ``buffer.memory``), which it does for at most ``max.block.ms``, or finds the sender
a megabyte behind, when it hands over to it for a moment
(:meth:`~kproto.producer.sender.Sender.hand_off`: the GIL would keep it from catching up).

Settings are Kafka's with Java's defaults (acks=all, idempotence on, linger.ms=5). As in
Java, idempotence that was not asked for explicitly turns itself off when other settings
contradict it (acks other than all, retries=0, more than 5 requests in flight); asked
for explicitly, or needed by a ``transactional.id``, the contradiction is a
:class:`~kproto.errors.ConfigError`.

Transactions (``transactional.id``; KIP-98): ``init_transactions()`` once, then
``begin_transaction()``, sends, ``send_offsets_to_transaction()``, and
``commit_transaction()`` or ``abort_transaction()`` (or ``with producer.transaction():``).
The state machine is :class:`~kproto.producer.idempotence.Idempotence`'s, the requests
:class:`~kproto.producer.transactions.Transactions`'. Outside a transaction the appender is
closed, so a send raises at once (the per-record path pays nothing for the check).

A producer that was never closed is closed at interpreter exit, with a warning (issue 11;
kafka-python does the same): a :class:`Producer` sends what it queued, waiting up to
``delivery.timeout.ms`` (after which those records would fail anyway); an
:class:`AIOProducer` whose event loop already ended can send nothing, and the warning
counts what is lost.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import warnings
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any

from kproto._habits import missing
from kproto._loop import Portal, blocking, check_loop, refuse_when_closed, wait_for
from kproto.compression import GZIP, LZ4, ZSTD, codec_id
from kproto.config import CONFIGS, ClientConfig
from kproto.errors import (
    ClientClosedError,
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    TransactionStateError,
    UnknownTopicOrPartitionError,
    for_code,
)
from kproto.interceptors import ProducerInterceptor, ProducerInterceptors, load
from kproto.io import Cluster
from kproto.io.retry import Backoff
from kproto.metrics import MetricName, ProducerMetrics, Statistics
from kproto.producer.accumulator import RecordAccumulator
from kproto.producer.batches import BatchFuture, send_batch_async, send_batch_blocking
from kproto.producer.futures import RecordFuture, RecordMetadata
from kproto.producer.idempotence import Idempotence, ProducerState
from kproto.producer.partitioner import Partitioner
from kproto.producer.sender import Sender
from kproto.producer.transactions import Transactions
from kproto.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition, check_topic

__all__ = ["AIOProducer", "Producer", "RecordMetadata"]

log = logging.getLogger("kproto.producer")

Headers = Sequence[tuple[str, Any]] | Mapping[str, Any] | None
DeliveryCallback = Callable[[BaseException | None, RecordMetadata | None], None]


def _resolve_idempotence(config: ClientConfig) -> bool:
    """Whether the producer is idempotent. As Java's ``ProducerConfig``: a transactional.id
    needs idempotence, so then a conflict is a ConfigError even if it was not asked for."""
    transactional = config["transactional.id"] is not None
    if transactional and not config["enable.idempotence"]:
        raise ConfigError("transactional.id needs enable.idempotence=true (transactions are idempotent)")
    conflicts = []
    if config["acks"] != -1:
        conflicts.append("acks must be all")
    if config["retries"] == 0:
        conflicts.append("retries must be > 0")
    if config["max.in.flight.requests.per.connection"] > 5:
        conflicts.append("max.in.flight.requests.per.connection must be <= 5")
    if not config["enable.idempotence"]:
        return False
    if conflicts and ("enable.idempotence" in config.explicit or transactional):
        raise ConfigError(f"enable.idempotence=true{' (needed by transactional.id)' if transactional else ''} "
                          f"needs: {'; '.join(conflicts)}")
    return not conflicts


_LEVELS = {GZIP: "compression.gzip.level", LZ4: "compression.lz4.level", ZSTD: "compression.zstd.level"}


def _compression(config: ClientConfig) -> tuple[int, int | None]:
    """``compression.type``'s codec id and the level to build batches at (None: the codec's
    default; the config checked every level's range). As in Java's ``Lz4BlockOutputStream``,
    lz4 at its default level (9) means lz4's fast compressor, and LZ4HC only at another level."""
    codec = codec_id(config["compression.type"])
    key = _LEVELS.get(codec)
    if key is None or config[key] == CONFIGS[key].default:
        return codec, None
    return codec, config[key]


_unclosed: set[Any] = set()  # producers not closed yet (AIOProducer and Producer), for exit


@atexit.register
def _close_at_exit() -> None:
    """Close every producer the program left open (atexit runs before daemon threads stop)."""
    for producer in list(_unclosed):
        try:
            producer._close_at_exit()
        except Exception:
            log.exception("closing %r at exit failed", producer)


def _on_delivery(future: RecordFuture, callback: DeliveryCallback) -> None:
    # Kept by the batch, not as a done callback of the future: no closure, lists and
    # dict per record for the garbage collector to walk while the batch is in flight.
    future._batch.on_delivery(future._index, future._timestamp, callback)


def _abortable(exc: BaseException, idempotence: Idempotence | None) -> bool:
    """An exception out of a transaction block: the transaction may (must) be aborted."""
    fatal = getattr(exc, "fatal", False) or (idempotence is not None and idempotence.fatal_error is not None)
    return not fatal


async def _quietly(abort: Awaitable[None], cause: BaseException | None) -> None:
    """Abort, logging (not raising) what fails: ``cause`` is what the caller raises."""
    try:
        await abort
    except Exception as exc:
        log.warning("producer: aborting the transaction (after %r) failed: %s", cause, exc)


class _Waiting:
    """A record that could not be appended at once (no metadata or no memory yet).

    Awaiting it gives the record's :class:`RecordMetadata`; the producer appends waiting
    records in the order they were sent.
    """

    __slots__ = ("args", "appended")

    def __init__(self, args: tuple, appended: asyncio.Future) -> None:
        self.args = args
        self.appended = appended  # -> the RecordFuture once appended

    def __await__(self) -> Generator[Any, Any, RecordMetadata]:
        record = yield from self.appended.__await__()
        return (yield from record.__await__())


@refuse_when_closed("producer", lambda self: self._closed, keep=("close", "stop"))
class AIOProducer:
    """The producer for asyncio code.

    Args:
        config: Kafka producer settings (``bootstrap.servers`` is required).
        **kwargs: the same, with dots written as underscores.

    Use ``async with AIOProducer(...) as producer:`` or call :meth:`close`.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = c = ClientConfig("producer", config, **kwargs)
        self.idempotent = _resolve_idempotence(c)
        self.transactional_id: str | None = c["transactional.id"]
        self._idempotence = Idempotence(self.transactional_id, c["transaction.timeout.ms"]) if self.idempotent else None
        codec, level = _compression(c)
        self._cluster = Cluster(c, allow_auto_topic_creation=c["allow.auto.create.topics"])
        self._acc = RecordAccumulator(
            batch_size=c["batch.size"], linger=c["linger.ms"] / 1000, buffer_memory=c["buffer.memory"],
            compression=codec, compression_level=level,
            delivery_timeout=c["delivery.timeout.ms"] / 1000, wake=self._wake, full=self._full, freed=self._freed,
            partitioner=Partitioner(c["partitioner.class"], c["partitioner.ignore.keys"]),
            counts=self._cluster.partition_counts, key_serializer=c["key.serializer"],
            value_serializer=c["value.serializer"], max_request_size=c["max.request.size"],
            waiting=self._wait_then_append, register=_on_delivery, transactional=self.transactional_id is not None)
        self._append = self._acc.appender.try_send
        self._txn: Transactions | None = None  # the transactional requests (made with the sender)
        if self.transactional_id is not None:
            # The gate: outside a transaction the appender is closed and a send raises why.
            self._acc.appender.closed = True
            self._acc.policy.refusal = self._refusal
            self._idempotence.on_move = self._gate
        # The per-record path runs in the codec with no Python frame of ours: the method
        # below documents it, and this instance attribute is what calls reach.
        self.send = self._acc.send
        # -- observability: metrics (always on, as Java's), statistics, interceptors --------
        self._metrics = ProducerMetrics(c, self._buffer_in_use, lambda: sum(self._sender._in_flight.values()) if self._sender else 0)
        self._metrics.attach(self._cluster)
        self._statistics = Statistics(c, self._metrics)
        self._interceptors = ProducerInterceptors(load(c, ProducerInterceptor)) if c["interceptor.classes"] else None
        if self._interceptors is not None:  # without interceptors, send stays the codec's own
            self.send = self._interceptors.wrap(self.send, RecordMetadata)
        self._max_block = c["max.block.ms"] / 1000
        self._sender: Sender | None = None
        self._waiting: deque[_Waiting] = deque()
        self._waiting_task: asyncio.Task | None = None
        self._space: asyncio.Event | None = None
        self._batch_spares: Any = None  # send_batch's settled batches, reused (kproto.producer.batches)
        self._home: asyncio.AbstractEventLoop | None = None  # the loop the sender runs on
        self._metadata_errors: dict[str, BaseException] = {}  # why a topic's metadata is missing
        self._metadata_attempts: dict[str, int] = {}  # failed looks at a topic: their backoff grows
        self._closed = False
        self._threaded = False  # sends come from other threads than the loop's (the sync face)
        _unclosed.add(self)

    _habit_kind = "producer"
    __getattr__ = missing  # a peer's method name gets an error naming kproto's call

    async def __aenter__(self) -> AIOProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start the sender (done by the first send too) and learn the cluster."""
        self._start()
        await self._cluster.refresh()

    async def _begin(self) -> None:
        """Start the sender without waiting for a broker (the sync face's constructor)."""
        self._start()

    def _start(self) -> None:
        loop = check_loop(self._home, "AIOProducer")
        if self._sender is None:
            if self._closed:
                raise ClientClosedError("the producer is closed")
            self._home = self._acc.home = loop
            if not self._threaded:
                # Only the loop's thread appends: the per-record path skips the appender's
                # lock, and refuses sends from other threads (the thread face shares it).
                self._acc.appender.owner_thread = threading.get_ident()
            self._space = asyncio.Event()
            if self.transactional_id is not None:
                self._txn = Transactions(self._idempotence, self._cluster, self.config, self.flush, self._wake)
            self._sender = Sender(self.config, self._cluster, self._acc, self._idempotence, self._txn, self._metrics)
            self._statistics.start()

    async def stop(self) -> None:
        """:meth:`close` under aiokafka's name (with :meth:`start`, its lifecycle)."""
        await self.close()

    def _wake(self) -> None:
        if self._sender is not None:
            self._sender.wake()

    def _full(self) -> None:
        """A batch filled up: it need not linger. A sync face's thread that finds the sender
        behind (a batch was opened behind a megabyte it had not taken: the accumulator's
        ``BEHIND_BYTES``) hands over to it (:meth:`~kproto.producer.sender.Sender.hand_off`)
        so that it catches up."""
        if self._sender is not None:
            if self._threaded and self._acc.behind:
                self._acc.behind = False
                self._sender.hand_off()
            else:
                self._sender.wake()

    def _buffer_in_use(self) -> int:
        """What ``buffer-available-bytes`` counts as used: unsettled batches, not the free
        spares send_batch keeps (Java's BufferPool counts its free buffers as available)."""
        spares = self._batch_spares
        return self._acc.used - (spares.held if spares is not None else 0)

    def _release_spares(self) -> bool:
        """Let send_batch's spares go (they count in buffer.memory) for a send that finds no
        room; whether there were any."""
        return self._batch_spares is not None and self._batch_spares.release(self._acc)

    def _freed(self) -> None:
        if self._space is not None:
            self._space.set()

    # -- the per-record path ----------------------------------------------------------------

    def send(self, topic: str, value: Any = None, key: Any = None, *, partition: int | None = None,
             timestamp_ms: int | None = None, headers: Headers = None,
             on_delivery: DeliveryCallback | None = None) -> Awaitable[RecordMetadata]:
        """Queue a record; returns an awaitable of its :class:`RecordMetadata`.

        The record is appended at once when the topic's partitions are known and memory
        allows (the awaitable is then a :class:`~kproto.producer.futures.RecordFuture`);
        otherwise it waits, in order behind other waiting records, up to ``max.block.ms``.
        Awaiting is optional: queued records are sent either way. ``on_delivery(error,
        metadata)`` is called on the event loop when the record is settled.

        Raises:
            TypeError: key or value is not bytes and there is no serializer for it, or
                ``topic`` is not a str.
            InvalidTopicError: ``topic`` breaks Kafka's naming rule ([a-zA-Z0-9._-], at
                most 249 characters, not "." or "..").
            MessageTooLargeError: the record alone is over ``max.request.size``.
            ClientClosedError: the producer is closed.
            RuntimeError: called from another thread than its event loop's (it appends
                without a lock; :class:`Producer` is the face for threads).
        """
        return self._acc.send(topic, value, key, partition, timestamp_ms, headers, on_delivery)

    def _wait_then_append(self, topic: str, value: Any, key: Any, partition: int | None, timestamp_ms: int | None,
                          headers: Headers, on_delivery: DeliveryCallback | None) -> _Waiting:
        """The slow path of :meth:`send`: queue the record to be appended in order."""
        if self._acc.appender.closed:  # closed, or outside a transaction: raised now, not when awaited
            raise self._acc.policy.closed_error()
        check_topic(topic)  # an unknown topic comes here first: a bad name fails now, alone
        self._start()
        loop = asyncio.get_running_loop()
        waiting = _Waiting((topic, value, key, partition, timestamp_ms, headers, on_delivery), loop.create_future())
        self._waiting.append(waiting)
        self._acc.appender.hold = True  # later records queue behind this one
        if self._waiting_task is None or self._waiting_task.done():
            self._waiting_task = loop.create_task(self._append_waiting())
        return waiting

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> RecordMetadata:
        """:meth:`send` and wait for the record's metadata."""
        return await self.send(topic, value, key, **kwargs)

    async def _append_waiting(self) -> None:
        try:
            await self._drain_waiting()
        finally:
            self._acc.appender.hold = False

    async def _drain_waiting(self) -> None:
        while self._waiting:
            waiting = self._waiting[0]
            topic, value, key, partition, timestamp_ms, headers, on_delivery = waiting.args
            try:
                deadline = time.monotonic() + self._max_block
                while (record := self._append(topic, value, key, partition, timestamp_ms, headers)) is None:
                    await self._wait_for_room(topic, deadline)
            except BaseException as exc:
                self._waiting.popleft()
                if not waiting.appended.done():
                    waiting.appended.set_exception(exc)
                    waiting.appended.exception()  # retrieved: the sender may never await it
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            self._waiting.popleft()
            if on_delivery is not None:
                _on_delivery(record, on_delivery)
            waiting.appended.set_result(record)

    async def _wait_for_room(self, topic: str, deadline: float) -> None:
        """Wait for ``topic``'s metadata or for memory, until ``deadline``."""
        left = deadline - time.monotonic()
        if left <= 0:
            if self._cluster.partitions_for(topic) is None:
                raise self._no_metadata(topic)
            raise KafkaTimeoutError(f"waited {self._max_block * 1000:.0f} ms (max.block.ms) for memory (buffer.memory)")
        if self._cluster.partitions_for(topic) is None:
            await self._fetch_metadata(topic, deadline)
        elif self._release_spares():
            return  # send_batch's spares held the memory: the caller appends again
        else:
            self._space.clear()
            try:
                await wait_for(self._space.wait(), left)
            except TimeoutError:
                pass

    async def _fetch_metadata(self, topic: str, deadline: float) -> None:
        """One attempt at ``topic``'s metadata (then a backoff if it is still unknown).

        What keeps it unknown (no broker reachable yet, UNKNOWN_TOPIC_OR_PARTITION...) is
        remembered for the error at ``max.block.ms``: as in Java's ``waitOnMetadata``, the
        producer keeps asking until then, since the broker or the topic may come.
        """
        self._cluster.want([topic])
        try:
            await wait_for(self._cluster.refresh([topic]), max(deadline - time.monotonic(), 0.001))
        except (TimeoutError, KafkaConnectionError) as exc:
            self._metadata_errors[topic] = exc
        info = self._cluster.topics.get(topic)
        if info is not None and info.error_code:
            error = for_code(info.error_code)
            if not error.retriable:
                raise error(f"topic {topic!r}")
            self._metadata_errors[topic] = error(f"topic {topic!r}")
        if self._cluster.partitions_for(topic) is None:
            # Java's metadata backoff since KIP-580: retry.backoff.ms doubling, with jitter.
            attempts = self._metadata_attempts[topic] = self._metadata_attempts.get(topic, 0) + 1
            await asyncio.sleep(min(Backoff.retry(self.config).delay(attempts), max(deadline - time.monotonic(), 0)))
        else:
            self._metadata_attempts.pop(topic, None)

    def _no_metadata(self, topic: str) -> KafkaTimeoutError:
        """The error of a send or call that waited ``max.block.ms`` for ``topic``'s metadata."""
        message = f"topic {topic!r} not in the metadata after {self._max_block * 1000:.0f} ms (max.block.ms)"
        why = self._metadata_errors.get(topic)
        if isinstance(why, UnknownTopicOrPartitionError):
            message += (": the topic does not exist (the broker answers UNKNOWN_TOPIC_OR_PARTITION) and is not "
                        "created automatically (auto.create.topics.enable=false on the broker, or "
                        "allow.auto.create.topics=false here); create it first")
        elif isinstance(why, asyncio.TimeoutError):
            message += ": the metadata request got no answer"
        elif why is not None:
            message += f"; last error: {why}"
        return KafkaTimeoutError(message)

    async def _prepare(self, topic: str) -> None:
        """Make sure ``topic``'s metadata is known (waits up to ``max.block.ms``)."""
        check_topic(topic)
        deadline = time.monotonic() + self._max_block
        while self._cluster.partitions_for(topic) is None:
            if time.monotonic() >= deadline:
                raise self._no_metadata(topic)
            await self._fetch_metadata(topic, deadline)

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (fetching its metadata if needed)."""
        check_loop(self._home, "AIOProducer")
        await self._prepare(topic)
        return sorted(self._cluster.topics[topic].partitions)

    # -- transactions (KIP-98, KIP-447) -------------------------------------------------------

    def _gate(self, state: ProducerState) -> None:
        """After every move of the transactional state: sends are taken in a transaction only."""
        self._acc.appender.closed = self._closed or state is not ProducerState.IN_TRANSACTION

    def _refusal(self) -> BaseException:
        """What a send raises while the appender is closed."""
        if self._closed:
            return ClientClosedError("the producer is closed")
        try:
            self._idempotence.raise_if_failed()  # ABORTABLE_ERROR, FATAL_ERROR: their error
        except KafkaError as exc:
            return exc
        return self._idempotence.state_error("send")

    def _transactions(self, call: str) -> Transactions:
        if self.transactional_id is None:
            raise TransactionStateError(f"{call}() needs transactional.id (a transactional producer)")
        self._start()
        return self._txn

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id and epoch of ``transactional.id`` from its transaction
        coordinator (InitProducerId); call it once, before the first transaction.

        It fences every earlier producer with the same ``transactional.id`` (their next
        transactional call fails with :class:`~kproto.errors.ProducerFencedError`) and
        ends the transaction such a producer left open: committed if its commit had begun,
        else aborted.

        Args:
            timeout: seconds to wait (None: ``max.block.ms``). Retriable errors are retried
                within it; after it the call raises and the work goes on: call it again to
                wait for it.

        Raises:
            KafkaTimeoutError: the timeout passed (retriable: call it again).
            TransactionStateError: no ``transactional.id``, or called twice.
            KafkaError: a fatal error (``fatal`` set): close the producer.
        """
        txn = self._transactions("init_transactions")
        await txn.run("init_transactions", txn.init_transactions, timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: sends are taken from now until the commit or abort begins.

        Raises:
            TransactionStateError: not after :meth:`init_transactions`, or a transaction
                is open already.
            KafkaError: the producer is in FATAL_ERROR (``fatal`` set).
        """
        self._transactions("begin_transaction").forget_finished()
        self._idempotence.begin_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                          group_metadata: ConsumerGroupMetadata, timeout: float | None = None) -> None:
        """Commit a consumer group's ``offsets`` with the transaction (AddOffsetsToTxn, then
        TxnOffsetCommit to the group's coordinator): they count only if the transaction
        commits, so records consumed, transformed and produced go exactly once.

        Args:
            offsets: ``{TopicPartition: next offset to consume}`` (an
                :class:`~kproto.structs.OffsetAndMetadata` or an int).
            group_metadata: the consumer's :meth:`~kproto.consumer.Consumer.group_metadata`,
                taken after the poll: the group coordinator refuses the offsets of a member
                fenced since (KIP-447).
            timeout: as :meth:`init_transactions`'.

        Raises:
            TransactionStateError: not in a transaction.
            KafkaTimeoutError: the timeout passed (retriable: call it again).
            KafkaError: abortable (``txn_requires_abort``: a rebalance fenced the member,
                ILLEGAL_GENERATION...) or fatal (``fatal``).
        """
        txn = self._transactions("send_offsets_to_transaction")
        offsets = dict(offsets)
        await txn.run("send_offsets_to_transaction", lambda: txn.send_offsets(offsets, group_metadata), timeout,
                      args=(sorted(offsets.items()), group_metadata))

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit the transaction (EndTxn): its records become visible to
        read_committed consumers and its offsets count.

        Raises:
            TransactionStateError: not in a transaction.
            KafkaTimeoutError: the timeout passed (retriable: call it again to wait for the
                same commit).
            KafkaError: the first error of a record of the transaction, or of the commit,
                abortable (``txn_requires_abort``: call :meth:`abort_transaction`) or fatal
                (``fatal``: close the producer), as Java's ``commitTransaction``.
        """
        txn = self._transactions("commit_transaction")
        if self._waiting_task is not None and not self._waiting_task.done():
            await asyncio.wait((self._waiting_task,))  # records sent in the transaction, waiting for metadata
        await txn.run("commit_transaction", txn.commit, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not sent yet fail with
        :class:`~kproto.errors.TransactionAbortedError`, those sent are marked aborted
        (read_committed consumers skip them), its offsets do not count. After an abortable
        error, this is the way on.

        Raises:
            TransactionStateError: not in a transaction.
            KafkaTimeoutError: the timeout passed (retriable: call it again).
            KafkaError: fatal (``fatal``: close the producer).
        """
        txn = self._transactions("abort_transaction")
        await txn.run("abort_transaction", txn.abort, timeout)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AIOProducer]:
        """``async with producer.transaction():`` begins a transaction, commits it when the
        block ends, or aborts it when the block raises (and lets the exception go on). A
        commit that fails with an abortable error is aborted, and its error raised."""
        self.begin_transaction()
        try:
            yield self
        except BaseException as exc:
            if _abortable(exc, self._idempotence):
                await _quietly(self.abort_transaction(), exc)
            raise
        try:
            await self.commit_transaction()
        except KafkaError as exc:
            if exc.txn_requires_abort:
                await _quietly(self.abort_transaction(), exc)
            raise

    # -- flush and close ----------------------------------------------------------------------

    async def flush(self, timeout: float | None = None) -> None:
        """Send every queued record now and wait until all are settled.

        Raises:
            KafkaTimeoutError: ``timeout`` seconds passed first.
            KafkaError: the producer's sender stopped on an unexpected error (a bug), which
                the message names; every record not acknowledged failed with it.
        """
        check_loop(self._home, "AIOProducer")
        if self._sender is None:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        self._acc.flushing += 1
        try:
            self._sender.wake()
            while True:
                if self._sender.failed is not None:  # a bug stopped it: says so even when all settled
                    self._sender.fail_queued(self._sender.failed)
                    raise self._sender.failed
                if not (self._waiting or self._acc.unsettled):
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise KafkaTimeoutError(f"flush: {self._acc.unsettled} batches still unsettled after {timeout:g} s")
                self._space.clear()
                try:
                    await wait_for(self._space.wait(), left if left is not None else 1.0)
                except TimeoutError:
                    pass
        finally:
            self._acc.flushing -= 1

    async def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting up to ``timeout`` seconds), then close. Idempotent.

        Records still unsent after the timeout fail with :class:`~kproto.errors.KafkaTimeoutError`.
        Called from another loop than the one it started on, once that loop is closed
        (nothing can be sent any more), it fails what is queued and closes at once.
        """
        if self._closed:
            return
        if self._home is not None and self._home.is_closed():
            self._abandon()
            return
        check_loop(self._home, "AIOProducer")
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if self._txn is not None and self._idempotence.state in (ProducerState.IN_TRANSACTION,
                                                                     ProducerState.ABORTABLE_ERROR):
                # Java's Sender at shutdown: an open transaction is aborted, not left to time out.
                log.info("producer: aborting the open transaction of %r: the producer is closing", self.transactional_id)
                await _quietly(self.abort_transaction(timeout), None)
            if self._sender is not None:
                try:
                    await self.flush(timeout)
                except KafkaError:
                    pass  # a timeout (what is left fails below) or the sender's failure (its records failed)
        finally:
            self._closed = self._acc.appender.closed = True
            _unclosed.discard(self)
            if self._waiting_task is not None:
                self._waiting_task.cancel()
                await asyncio.gather(self._waiting_task, return_exceptions=True)
            if self._txn is not None:
                await self._txn.close()
            if self._sender is not None:
                left = None if deadline is None else max(deadline - time.monotonic(), 0)
                await self._sender.close(left)
            await self._cluster.close(None if deadline is None else max(deadline - time.monotonic(), 0))
            await self._statistics.stop()
            if self._interceptors is not None:
                self._interceptors.close()
            self._release_spares()  # send_batch's, offered as the last batches settled


    def metrics(self) -> dict[MetricName, float]:
        """The producer's metrics now, with Java's names: ``{MetricName: value}``
        (``producer-metrics`` ``record-send-rate``, ``request-latency-avg``...; see the
        observability guide for the list and :mod:`kproto.metrics`)."""
        return self._metrics.snapshot()

    def _abandon(self) -> None:
        """Close after the sender's loop ended: fail what is queued, send nothing."""
        self._closed = self._acc.appender.closed = True
        _unclosed.discard(self)
        error = ClientClosedError("the producer's event loop ended before the record was sent (close() "
                                  "must run on the loop the producer started on)")
        for batch in self._acc.abort_all():
            self._acc.settle(batch, -1, error=error)
        self._waiting.clear()  # their futures belong to the ended loop: nobody can await them

    def _close_at_exit(self) -> None:
        lost = self._acc.unsettled + len(self._waiting)
        # A Python warning, not a log record: a script that configured no logging must see it
        # (the package logger has a NullHandler); logging.captureWarnings() routes it to logs.
        if lost:
            warnings.warn(f"an AIOProducer was not closed before its event loop ended: {lost} batches of "
                          "records were not sent. Await close() (or use 'async with AIOProducer(...)') "
                          "before the loop ends", UserWarning, stacklevel=1)
        else:
            warnings.warn("an AIOProducer was not closed: await close() or use 'async with "
                          "AIOProducer(...)'", UserWarning, stacklevel=1)
        if self._home is None or self._home.is_closed():
            self._abandon()

    # -- whole columns (kproto.producer.batches) ----------------------------------------------

    async def send_batch(self, topic: str, values: Any, keys: Any = None, *, partition: int | None = None,
                         headers: Any = None, timestamps: Any = None) -> BatchFuture:
        """Queue many records at once, from columns: each record batch is encoded by one
        codec call (see :mod:`kproto.producer.batches`). Returns, once every record is
        queued, a :class:`~kproto.producer.batches.BatchFuture`; awaiting it gives one
        :class:`~kproto.producer.batches.BatchMetadata` per record batch written.

        Args:
            topic: the topic.
            values: the records' values: a list or tuple of bytes or None (after
                ``value.serializer``), or a pyarrow ``binary``, ``large_binary``,
                ``string`` or ``large_string`` array (read from its buffers; pyarrow is
                imported only then).
            keys: None, or one key per value, as ``values``.
            partition: every record's partition; None: as :meth:`send` would choose
                per record (murmur2 of the key, the sticky partition without one).
            headers: None, one header list (``(str, bytes | None)`` pairs or a mapping)
                per record, or one mapping for every record.
            timestamps: None (now), one int for every record, or one per record (ints or
                a pyarrow int64 or timestamp array), in milliseconds.

        Raises:
            TypeError: a key, value or header of the wrong type (nothing is queued).
            ValueError: columns of different lengths, or a partition not the topic's.
            MessageTooLargeError: a record alone is over ``max.request.size`` (nothing is
                queued).
            KafkaTimeoutError: ``max.block.ms`` passed waiting for the topic's metadata,
                or for memory (``buffer.memory``) with no batch settling; the records
                queued before are sent.
            ClientClosedError, TransactionStateError: as :meth:`send`.
        """
        return await send_batch_async(self, topic, values, keys, partition, headers, timestamps)


@refuse_when_closed("producer", lambda self: self._core._closed)
class Producer:
    """The producer for threads: :class:`AIOProducer`'s engine on a background loop.

    Making one needs no broker: it connects at the first send, which waits up to
    ``max.block.ms`` for the cluster (a broker starting a moment later is fine).

    ``send`` appends from the calling thread and returns a
    :class:`concurrent.futures.Future` (a :class:`~kproto.producer.futures.RecordFuture`)
    of the record's :class:`RecordMetadata`; it blocks only while it must wait for a
    topic's metadata or for memory, up to ``max.block.ms``. Delivery callbacks run on the
    background loop's thread, which every sync client of the process shares: keep them
    short and do not call a client's blocking methods from them.

    Args:
        config: Kafka producer settings (``bootstrap.servers`` is required).
        **kwargs: the same, with dots written as underscores.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._core = AIOProducer(config, **kwargs)
        self.config = self._core.config
        self._core._acc.appender.waiting = self._append_blocking  # threads block where asyncio would queue
        self._core._threaded = True  # and hand over to the sender when it falls behind
        self.send = self._core._acc.send  # see AIOProducer.__init__
        if self._core._interceptors is not None:  # observability (kproto.interceptors)
            self.send = self._core._interceptors.wrap(self.send, RecordMetadata)
        self._portal = Portal("producer")  # the shared loop thread (kproto._loop)
        # No broker is needed yet: as Java's and librdkafka's, the producer connects
        # lazily, and max.block.ms bounds the first send's wait for metadata (issue 11).
        self._portal.call(self._core._begin)
        _unclosed.discard(self._core)  # closed with this face, which is what exit closes
        _unclosed.add(self)

    _habit_kind = "producer"
    __getattr__ = missing

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, topic: str, value: Any = None, key: Any = None, *, partition: int | None = None,
             timestamp_ms: int | None = None, headers: Headers = None,
             on_delivery: DeliveryCallback | None = None) -> RecordFuture:
        """Queue a record; see :meth:`AIOProducer.send`. Returns a future of its metadata."""
        return self._core._acc.send(topic, value, key, partition, timestamp_ms, headers, on_delivery)

    def _append_blocking(self, topic: str, value: Any, key: Any, partition: int | None, timestamp_ms: int | None,
                         headers: Headers, on_delivery: DeliveryCallback | None) -> RecordFuture:
        """The slow path of :meth:`send`: wait for metadata or memory, up to ``max.block.ms``."""
        core = self._core
        acc = core._acc
        check_topic(topic)
        deadline = time.monotonic() + core._max_block
        while True:
            settled = acc.settled  # a batch settled after the attempt: try again at once
            if (record := core._append(topic, value, key, partition, timestamp_ms, headers)) is not None:
                break
            left = deadline - time.monotonic()
            if core._cluster.partitions_for(topic) is None:
                self._portal.call(core._prepare, topic)  # bounded by max.block.ms itself
                continue
            if core._release_spares():
                continue
            with acc.space:
                if left <= 0:
                    raise KafkaTimeoutError(f"waited {core._max_block * 1000:.0f} ms (max.block.ms) for memory (buffer.memory)")
                if acc.settled == settled:
                    acc.space.wait(min(left, 0.2))
        if on_delivery is not None:
            _on_delivery(record, on_delivery)
        return record

    def _close_at_exit(self) -> None:
        timeout = self.config["delivery.timeout.ms"] / 1000
        warnings.warn(f"a Producer was not closed: sending what it queued at exit (up to "
                      f"delivery.timeout.ms, {timeout:g} s). Call close() or use 'with Producer(...)'",
                      UserWarning, stacklevel=1)  # seen without logging configured (see above)
        self.close(timeout)

    def metrics(self) -> dict[MetricName, float]:
        """The producer's metrics now; see :meth:`AIOProducer.metrics`."""
        return self._core.metrics()

    partitions_for = blocking(AIOProducer.partitions_for)
    flush = blocking(AIOProducer.flush)
    init_transactions = blocking(AIOProducer.init_transactions)
    begin_transaction = blocking(AIOProducer.begin_transaction)
    send_offsets_to_transaction = blocking(AIOProducer.send_offsets_to_transaction)
    commit_transaction = blocking(AIOProducer.commit_transaction)
    abort_transaction = blocking(AIOProducer.abort_transaction)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Producer]:
        """``with producer.transaction():`` begins a transaction, commits it when the block
        ends, or aborts it when the block raises (and lets the exception go on); see
        :meth:`AIOProducer.transaction`."""
        self.begin_transaction()
        try:
            yield self
        except BaseException as exc:
            if _abortable(exc, self._core._idempotence):
                self._abort_quietly(exc)
            raise
        try:
            self.commit_transaction()
        except KafkaError as exc:
            if exc.txn_requires_abort:
                self._abort_quietly(exc)
            raise

    def _abort_quietly(self, cause: BaseException) -> None:
        self._portal.call(lambda: _quietly(self._core.abort_transaction(), cause))

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting up to ``timeout`` seconds), then close and let go of
        the background loop (which the sync clients share; the last one closed stops it).
        Idempotent."""
        _unclosed.discard(self)
        self._portal.close_after(self._core.close, timeout)

    # -- whole columns (kproto.producer.batches) ----------------------------------------------

    def send_batch(self, topic: str, values: Any, keys: Any = None, *, partition: int | None = None,
                   headers: Any = None, timestamps: Any = None) -> BatchFuture:
        """Queue many records at once, from columns; see :meth:`AIOProducer.send_batch`.
        Encodes on the calling thread and returns once every record is queued (waiting
        for metadata or memory as :meth:`send` does); the
        :class:`~kproto.producer.batches.BatchFuture`'s ``result()`` is the list of
        :class:`~kproto.producer.batches.BatchMetadata`."""
        return send_batch_blocking(self, topic, values, keys, partition, headers, timestamps)
