"""The executors' half of the ``kproto`` source: fetch one offset range into Arrow batches.

One Spark task reads one :class:`~kproto.spark.planning.OffsetRange` with a
:class:`~kproto.io.Cluster` of its own at a time (made for it, or kept by its worker from
an earlier task: below) and an event loop it drives itself, so the generator Spark
iterates needs no thread. Each Fetch response's records go through
:func:`~kproto.records.decode_columnar` straight into Arrow; records outside the
range are sliced off (a fetch returns whole batches, so the first may start before the
range and the last may run past it). Spark takes these ``pyarrow.RecordBatch`` objects
as they are (the Arrow path of Python data sources): no record becomes a Python object.
Before handing a batch to Spark the task sends its next Fetch, so that the broker reads
the following records while Spark takes this batch in; closing the generator early (a
LIMIT) cancels that Fetch, or leaves it unanswered on a client that is then closed.

The event loop runs for what needs it: connecting, metadata, a retry's backoff, a TLS
connection. Once the leader's connection is open the task writes each Fetch and reads its
answer itself, with the loop idle (:meth:`~kproto.io.connection.Connection.send_now`,
``wait_now``): a ``writev``, a ``poll`` and the reads per answer, where the loop took two
runs and seven ``epoll_wait`` (issue 16: 7% of a task's CPU outside Spark, 8%
of the workers' in ``bench/spark.py``).

A Spark worker keeps its tasks' clients between tasks (:class:`TaskClients`, the data
source's readers use :data:`WORKER_CLIENTS`): a task whose settings match a client kept
from an earlier task of that worker fetches on its connections and metadata rather than
connecting, asking ApiVersions and Metadata anew, as Spark's connector keeps its
executors' consumers between tasks and micro-batches.

A task's client takes the ``kafka.*`` options over :data:`TASK_DEFAULTS`, two settings
where a task's work differs from a consumer's (Spark's connector likewise sets
``receive.buffer.bytes`` on its executors when unset): the socket's receive buffer is
left to the OS, and a Fetch asks for 2 MiB of the partition (see :data:`TASK_DEFAULTS`).

Theory of operation, per Fetch (the request, its error actions and the read_committed
filter are :mod:`kproto.io.fetch`'s, shared with the consumer):

- The position starts at the range's start and moves to the ``next_offset`` of the
  batches read, so gaps left by compaction and the offsets of transaction markers
  are stepped over, as a Java consumer does.
- ``isolation.level=read_committed``: the broker answers up to the last stable offset
  and lists the aborted transactions; batches of those are dropped here before
  decoding (Java's ``Fetcher`` does the same walk over batch headers).
- Partition errors that a fetch may outlive (leader moved, metadata stale, a transient
  broker error) refresh the metadata and retry after a backoff
  (:class:`~kproto.io.retry.Backoff`: ``retry.backoff.ms`` doubling up to
  ``retry.backoff.max.ms``, with KIP-580's jitter). OFFSET_OUT_OF_RANGE, or a
  partition that ends before the range does, is data loss: an error under
  ``failOnDataLoss=true``, otherwise the task skips to what is still there (or stops).
- A response that brings no progress while the range is not done is retried until
  ``kafkaConsumer.pollTimeoutMs``, then fails the task (Spark's connector does too).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from kproto.arrow import arrow_schema, record_batch
from kproto.codec import decode_columnar
from kproto.config import ClientConfig
from kproto.errors import KafkaError, KafkaTimeoutError, LeaderNotAvailableError, for_code
from kproto.io import Cluster
from kproto.io.connection import Connection
from kproto.io.fetch import (
    Action,
    BatchFilter,
    FetchSettings,
    fetch,
    fetch_answers,
    fetch_request,
    kept_batches,
    partition_action,
)
from kproto.io.retry import Backoff
from kproto.spark.planning import DataLossError, OffsetRange, SourceOptions
from kproto.structs import TopicPartition

__all__ = ["TASK_DEFAULTS", "WORKER_CLIENTS", "TaskClients", "read_range", "task_config"]

log = logging.getLogger(__name__)

TASK_DEFAULTS = {"receive.buffer.bytes": "-1", "max.partition.fetch.bytes": str(2 << 20)}
"""The consumer settings of a task's client where the source's default is not Kafka's;
a ``kafka.*`` option of the same name wins.

- ``receive.buffer.bytes`` -1: SO_RCVBUF is left to the OS, which grows it as data comes
  (librdkafka leaves it so too). With a fixed 32 KiB (kproto's default; the Java
  consumer's is 64 KiB) a 2 MiB Fetch answer arrives in dozens of reads, each a turn of
  the task's event loop, and TCP's window holds the broker back to that size: a quarter
  more of a task's CPU per record (issue 16). Spark's connector too sets this one on its
  executors when unset (to 64 KiB, KAFKA-3135).
- ``max.partition.fetch.bytes`` 2 MiB (Java: 1 MiB): a task reads one partition, so this
  is what each Fetch brings, and one Arrow batch: half the round trips. 4 and 8 MiB were
  no faster for the consumer's ``poll_arrow`` (bench/peers.py), nor 4 MiB measurably
  faster here (``bench/spark.py --source-option``).
"""


def task_config(options: SourceOptions) -> ClientConfig:
    """The consumer settings of a task's client: ``options``' ``kafka.*`` over :data:`TASK_DEFAULTS`.

    Raises:
        ConfigError: a ``kafka.*`` option kproto's consumer does not take.
    """
    return ClientConfig("consumer", {**TASK_DEFAULTS, **options.kafka})


class _RangeReader:
    """The state of one task's fetch loop (see the module docstring)."""

    def __init__(self, options: SourceOptions, task: OffsetRange, cluster: Cluster | None = None) -> None:
        self.options = options
        self.task = task
        self.config = task_config(options)
        self.cluster = Cluster(self.config) if cluster is None else cluster  # (one kept by TaskClients)
        self.position = task.start
        self.settings = FetchSettings.from_config(self.config)
        self.read_committed = self.settings.read_committed
        self.backoff = Backoff.retry(self.config)
        self.failures = 0  # fetches in a row that ended in a retry
        self.schema = arrow_schema(options.include_headers)
        self.last_error: KafkaError | None = None  # of the retries, for the timeout's message
        self.partition = TopicPartition(task.topic, task.partition)

    async def _leader(self) -> int:
        t = self.task
        if self.cluster.leader(t.topic, t.partition) < 0 or self.cluster.stale:
            await self.cluster.refresh([t.topic])
        leader = self.cluster.leader(t.topic, t.partition)
        if leader < 0:
            raise LeaderNotAvailableError(f"{t.topic}-{t.partition} has no leader")  # retriable
        return leader

    async def fetch(self) -> tuple[Any, KafkaError | None]:
        """One Fetch through the event loop (connecting and refreshing the metadata as
        needed): :meth:`_answer`'s pair."""
        try:
            leader = await self._leader()
            answers = await fetch(self.cluster, leader, self.settings, {self.partition: self.position})
        except KafkaError as exc:
            return self._answer(None, exc)
        return self._answer(answers[self.partition])

    def send_now(self) -> _Sent | None:
        """The next Fetch, written at once on the open connection to the leader, without the
        event loop (:meth:`~kproto.io.connection.Connection.send_now`); None when the loop
        must send it (no open connection or no leader known, metadata to refresh, a
        connection the loop writes: see there)."""
        t = self.task
        leader = self.cluster.leader(t.topic, t.partition)
        conn = self.cluster.connected(leader) if leader >= 0 and not self.cluster.stale else None
        if conn is None:
            return None
        future = conn.send_now(fetch_request(self.cluster, self.settings, {self.partition: self.position}))
        return None if future is None else _Sent(conn, leader, future)

    def wait_now(self, sent: _Sent) -> tuple[Any, KafkaError | None]:
        """:meth:`fetch` for a Fetch of :meth:`send_now`: its answer read without the event loop."""
        try:
            answers = fetch_answers(self.cluster, sent.leader, sent.conn.wait_now(sent.future, self.settings.timeout))
        except KafkaError as exc:
            return self._answer(None, exc)
        return self._answer(answers[self.partition])

    def _answer(self, data: Any, error: KafkaError | None = None) -> tuple[Any, KafkaError | None]:
        """A Fetch's outcome: ``(the partition's answer, None)`` to take, or ``(None, the
        error)`` to retry after a backoff; ``error`` when the Fetch itself failed.

        Raises:
            KafkaError: one that fetching again does not mend.
        """
        if error is not None:
            if not error.retriable:
                raise error
            return None, error
        t = self.task
        action = partition_action(data.error_code)
        if action is Action.REFRESH or action is Action.RETRY:
            return None, for_code(data.error_code)(f"fetching {t.topic}-{t.partition} at {self.position}")
        if action is Action.RAISE:
            raise for_code(data.error_code)(f"fetching {t.topic}-{t.partition} at {self.position}")
        self.failures = 0
        return data, None

    async def _retry_later(self, error: KafkaError) -> None:
        self.last_error = error
        self.cluster.topics.pop(self.task.topic, None)  # forces a metadata refresh
        self.failures += 1
        await asyncio.sleep(self.backoff.delay(self.failures))

    def lost(self, what: str) -> None:
        if self.options.fail_on_data_loss:
            raise DataLossError(f"{self.task.topic}-{self.task.partition}: {what}. "
                                "Set failOnDataLoss=false to skip what is gone.")

    def take(self, data: Any) -> pa.RecordBatch | None:
        """Advance past ``data`` (a partition's Fetch answer); its records in the range, if any."""
        t = self.task
        if partition_action(data.error_code) is Action.OUT_OF_RANGE:
            if self.position < data.log_start_offset:
                self.lost(f"offsets {self.position}-{data.log_start_offset - 1} are gone (the log starts at "
                          f"{data.log_start_offset})")
                self.position = data.log_start_offset
            else:
                self.lost(f"the log ends at {data.high_watermark}, before offset {t.end} that was planned")
                self.position = t.end
            return None
        records = data.records
        if records is None or len(records) == 0:
            end_of_log = data.last_stable_offset if self.read_committed and data.last_stable_offset >= 0 \
                else data.high_watermark
            if end_of_log <= self.position and end_of_log < t.end:
                self.lost(f"the log ends at {end_of_log}, before offset {t.end} that was planned")
                self.position = t.end
            return None
        check_crc = self.config["check.crcs"]
        walked = -1
        if self.read_committed and data.aborted_transactions:
            records, walked = kept_batches(records, BatchFilter.of(data, True), check_crc)
        cols = decode_columnar(records, self.position, check_crc)
        # Past the batches decoded, and past aborted batches and markers dropped after them.
        self.position = max(self.position, cols.next_offset, walked)
        if cols.count == 0:
            return None
        batch = record_batch(cols, t.topic, t.partition, self.schema)
        offsets = np.frombuffer(cols.offsets, np.int64, cols.count)
        keep = int(np.searchsorted(offsets, t.end))  # offsets increase within a partition
        return batch if keep == cols.count else batch.slice(0, keep)

    def batches(self, loop: asyncio.AbstractEventLoop) -> Iterator[pa.RecordBatch]:
        timeout = self.options.poll_timeout_ms / 1000
        last_progress = time.monotonic()
        # The next Fetch: written at once (a _Sent) or, where only the event loop may send
        # it, for the loop to run (a task of it when sent before a batch is handed over).
        ahead: _Sent | Awaitable[tuple[Any, KafkaError | None]] | None = None
        try:
            while self.position < self.task.end:
                before = self.position
                if ahead is None:
                    ahead = self.send_now() or self.fetch()
                data, retry = self.wait_now(ahead) if isinstance(ahead, _Sent) else loop.run_until_complete(ahead)
                ahead = None
                if retry is not None:  # (the loop runs the backoff, whichever way the Fetch went)
                    loop.run_until_complete(self._retry_later(retry))
                batch = None if data is None else self.take(data)
                # Let go of the answer (its records are a view of the response's frame): the
                # connection fills that frame again with the next answer, rather than a fresh
                # buffer that page-faults as it fills (kproto.protocol.frames).
                data = None
                if self.position > before:
                    last_progress = time.monotonic()
                elif time.monotonic() - last_progress > timeout:
                    raise KafkaTimeoutError(
                        f"no records of {self.task.topic}-{self.task.partition} from offset {self.position} in "
                        f"{timeout:g} s (kafkaConsumer.pollTimeoutMs); {self.task.end} was planned"
                        + (f"; last error: {self.last_error}" if self.last_error else "")) from self.last_error
                if batch is not None and batch.num_rows:
                    if self.position < self.task.end:
                        # Ask for what follows before Spark takes this batch: the broker reads
                        # it meanwhile. Through the loop, one step of it writes the request.
                        ahead = self.send_now()
                        if ahead is None:
                            ahead = loop.create_task(self.fetch())
                            loop.run_until_complete(asyncio.sleep(0))
                    yield batch
        finally:
            # Spark stopped reading early (a limit), or the task failed. A Fetch written
            # directly is left unanswered: such a task's client is closed (TaskClients).
            if isinstance(ahead, asyncio.Task):
                ahead.cancel()
                loop.run_until_complete(asyncio.gather(ahead, return_exceptions=True))


class _Sent(NamedTuple):
    """A Fetch written without the event loop (_RangeReader.send_now)."""

    conn: Connection
    leader: int
    future: asyncio.Future


class TaskClients:
    """The clients a process keeps between the Spark tasks it runs: an event loop and a
    :class:`~kproto.io.Cluster` (its connections and metadata) per task client settings
    (:func:`task_config`), so that the next task with the same settings fetches at once.

    Spark's Kafka connector keeps its executors' consumers the same way; its defaults
    (``spark.kafka.consumer.cache.capacity`` 64, ``spark.kafka.consumer.cache.timeout``
    5 minutes) are the defaults here. A task takes the client kept for its settings, or
    makes one, and gives it back only when it read its range to the end: a task that
    failed, or that Spark stopped early (a LIMIT, its Fetch ahead cancelled in flight),
    closes its client instead, so that no task inherits a broken connection or another
    task's answer. Clients past the capacity (the least recently used first) and clients
    unused for ``idle_timeout`` seconds are closed when a task next takes or gives one back:
    no thread runs meanwhile. A connection the broker closed in the meantime is found closed
    when the next task takes the client, and that task's Fetch opens a new one.
    """

    def __init__(self, capacity: int = 64, idle_timeout: float = 300.0) -> None:
        self.capacity = capacity
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()  # (a worker runs one task at a time; a thread may not)
        self._kept: OrderedDict[tuple, tuple[asyncio.AbstractEventLoop, Cluster, float]] = OrderedDict()
        self._inherited: list[object] = []  # a forked child's copies of its parent's clients

    def __len__(self) -> int:
        return len(self._kept)

    def read(self, options: SourceOptions, task: OffsetRange) -> Iterator[pa.RecordBatch]:
        """:func:`read_range` on a kept client (see the class docstring)."""
        return self._read_with(_RangeReader, options, task)

    def _read_with(self, reader_type: type[_RangeReader], options: SourceOptions, task: OffsetRange
                   ) -> Iterator[pa.RecordBatch]:
        # (bench/spark.py's fetch-only row reads with a reader of its own)
        key = tuple(sorted({**TASK_DEFAULTS, **options.kafka}.items()))  # what task_config is made of
        with self._lock:
            kept = self._kept.pop(key, None)
            stale = self._expired(time.monotonic())
        _close_all(stale)
        loop, cluster = (kept[0], kept[1]) if kept is not None else (asyncio.new_event_loop(), None)
        done = False
        try:
            if cluster is not None:
                # One turn of the loop first: what came while it stood still (a broker's close
                # of a connection idle too long) is taken in, so the Fetch opens a new
                # connection rather than failing on the old one and waiting out a retry backoff.
                loop.run_until_complete(asyncio.sleep(0))
            reader = reader_type(options, task, cluster)
            cluster = reader.cluster
            yield from reader.batches(loop)
            done = True
        finally:
            if done:
                self._give_back(key, loop, cluster)
            elif cluster is not None:
                _close_all([(loop, cluster)])
            else:  # the reader could not be made (its settings): nothing but the loop to close
                loop.close()

    def close(self) -> None:
        """Close every kept client."""
        with self._lock:
            kept = [(loop, cluster) for loop, cluster, _ in self._kept.values()]
            self._kept.clear()
        _close_all(kept)

    def _after_fork(self) -> None:
        """In a child forked from this process (a PySpark daemon forks its workers): no kept
        client, for their sockets are the parent's, and a lock no other thread holds. The
        parent's clients stay referenced, never closed: closing a loop or a transport here
        would take its descriptors out of an epoll set the parent shares."""
        self._lock = threading.Lock()
        self._inherited.extend(self._kept.values())
        self._kept.clear()

    def _give_back(self, key: tuple, loop: asyncio.AbstractEventLoop, cluster: Cluster) -> None:
        now = time.monotonic()
        with self._lock:
            stale = self._expired(now)
            old = self._kept.pop(key, None)  # another thread's task gave one back first
            if old is not None:
                stale.append((old[0], old[1]))
            self._kept[key] = (loop, cluster, now)
            while len(self._kept) > self.capacity:
                loop_, cluster_, _ = self._kept.popitem(last=False)[1]
                stale.append((loop_, cluster_))
        _close_all(stale)

    def _expired(self, now: float) -> list[tuple[asyncio.AbstractEventLoop, Cluster]]:
        """Take out the clients unused for ``idle_timeout`` (under the lock)."""
        expired = [key for key, (_, _, at) in self._kept.items() if now - at > self.idle_timeout]
        return [self._kept.pop(key)[:2] for key in expired]


def _close_all(clients: Iterable[tuple[asyncio.AbstractEventLoop, Cluster]]) -> None:
    """Close each client; one that fails to close is logged, not raised: the task that
    evicts it read its own range, and the clients after it still close."""
    for loop, cluster in clients:
        try:
            loop.run_until_complete(cluster.close())
        except Exception:
            log.warning("closing a Spark task's client failed", exc_info=True)
        finally:
            loop.close()


WORKER_CLIENTS = TaskClients()
"""The clients a PySpark worker keeps between its tasks: ``spark.read.format("kproto")``
and ``readStream`` fetch through it (:class:`TaskClients`)."""

os.register_at_fork(after_in_child=WORKER_CLIENTS._after_fork)


def read_range(options: SourceOptions, task: OffsetRange, clients: TaskClients | None = None
               ) -> Iterator[pa.RecordBatch]:
    """Fetch ``task``'s offsets and yield them as Arrow batches of the source's schema,
    with a client of its own closed at the end, or one kept in ``clients``.

    Raises:
        DataLossError: offsets of the range are gone and ``failOnDataLoss`` is set.
        KafkaTimeoutError: no progress for ``kafkaConsumer.pollTimeoutMs``.
        KafkaError: a non-retriable error from the broker.
    """
    yield from (TaskClients(capacity=0) if clients is None else clients).read(options, task)  # (0: none kept)
