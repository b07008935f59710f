"""The consumer: :class:`AIOConsumer` for asyncio, :class:`Consumer` for threads.

:class:`AIOConsumer` is the implementation. Background tasks on its loop fetch ahead
(:mod:`~kproto.consumer.fetcher`) and keep metadata fresh; :meth:`AIOConsumer.poll`
hands out what was fetched, up to ``max.poll.records``. :class:`Consumer` runs the same
object on a background loop and blocks on it.

Positions. A partition's position is the offset of the next record poll returns. A new
partition gets one from a seek, else (with ``group.id``) from its committed offset, else
from ``auto.offset.reset``; these lookups run in the background, started by poll, so a
poll with a short timeout never abandons one half way. Calls that move positions
(:meth:`~AIOConsumer.seek`, :meth:`~AIOConsumer.seek_to_beginning`...) are lazy as in
Java: they take effect by the next poll.

Iteration (``for record in consumer`` / ``async for``) polls batches and yields their
records one by one. A record counts as consumed once yielded: a commit inside the loop
commits up to it, and after leaving the loop early, the next poll starts each partition
at its first record not yet yielded (the consumer seeks back), so nothing is skipped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

from kproto._loop import LoopThread
from kproto.config import ClientConfig
from kproto.consumer.fetcher import Fetcher
from kproto.consumer.structs import ConsumerRecord, OffsetAndTimestamp
from kproto.consumer.subscription import SubscriptionState, SubscriptionType
from kproto.errors import ClientClosedError, KafkaError, KafkaTimeoutError
from kproto.io import Cluster
from kproto.structs import OffsetAndMetadata, TopicPartition

__all__ = ["AIOConsumer", "Consumer"]

log = logging.getLogger("kproto.consumer")

_EARLIEST, _LATEST = -2, -1  # ListOffsets' special timestamps
_SLICE = 0.2  # seconds: how often a blocked sync call lets Ctrl-C in


class AIOConsumer:
    """The consumer for asyncio code.

    Args:
        config: Kafka consumer settings (``bootstrap.servers`` is required).
        **kwargs: the same, with dots written as underscores.

    Use ``async with AIOConsumer(...) as consumer:`` or call :meth:`close`. Every method
    must be called from the event loop the consumer first ran on.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = ClientConfig("consumer", config, **kwargs)
        c = self.config
        self._cluster = Cluster(c, allow_auto_topic_creation=c["allow.auto.create.topics"])
        self._subscriptions = SubscriptionState(c["auto.offset.reset"], c["exclude.internal.topics"])
        self._api_timeout = c["default.api.timeout.ms"] / 1000
        self._max_poll_records = c["max.poll.records"]
        self._event: asyncio.Event | None = None  # something for poll happened
        self._metadata_wanted: asyncio.Event | None = None
        self._fetcher: Fetcher | None = None
        self._tasks: list[asyncio.Task] = []
        self._positions: asyncio.Task | None = None
        self._iteration: _Iteration | None = None
        self._closed = False

    async def __aenter__(self) -> AIOConsumer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._records()

    # -- plumbing -------------------------------------------------------------------------

    def _started(self) -> Fetcher:
        """The fetcher, with the background tasks started on the running loop (once)."""
        if self._closed:
            raise ClientClosedError("the consumer is closed")
        if self._fetcher is None:
            self._event = asyncio.Event()
            self._metadata_wanted = asyncio.Event()
            self._fetcher = Fetcher(self._cluster, self.config, self._subscriptions,
                                    on_data=self._event.set, on_stale_metadata=self._metadata_wanted.set)
            self._fetcher.start()
            self._tasks.append(asyncio.get_running_loop().create_task(self._metadata_loop(), name="kproto-metadata"))
        return self._fetcher

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self._api_timeout if timeout is None else timeout)

    async def _metadata_loop(self) -> None:
        """Refresh metadata every ``metadata.max.age.ms``, or at once when something is stale."""
        wanted = self._metadata_wanted
        max_age = self.config["metadata.max.age.ms"] / 1000
        backoff = self.config["retry.backoff.ms"] / 1000
        while True:
            try:
                await asyncio.wait_for(wanted.wait(), max_age)
            except asyncio.TimeoutError:
                pass
            wanted.clear()
            try:
                await self._cluster.refresh()
            except (KafkaError, OSError) as exc:
                log.debug("metadata refresh failed: %s", exc)
                await asyncio.sleep(backoff)
                wanted.set()
                continue
            self._fetcher.wakeup()

    def _step_positions(self) -> None:
        """Start looking up missing positions; raise what the last lookup could not resolve."""
        task = self._positions
        if task is not None and task.done():
            self._positions = None
            error = task.exception()
            if error is not None and not (isinstance(error, KafkaError) and error.retriable):
                raise error
        subscriptions = self._subscriptions
        if self._positions is None and (subscriptions.missing_positions() or subscriptions.awaiting_reset()):
            self._positions = asyncio.get_running_loop().create_task(self._update_positions())
            self._positions.add_done_callback(lambda _: self._event.set())

    async def _update_positions(self) -> None:
        deadline = self._deadline(None)
        for tp in self._subscriptions.missing_positions():
            self._subscriptions.request_reset(tp)
        await self._fetcher.reset_positions(deadline)

    async def _wait(self, deadline: float | None) -> bool:
        """Wait for an event or ``deadline`` (monotonic; None: no limit); False on timeout."""
        event = self._event
        if deadline is None:
            await event.wait()
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            await asyncio.wait_for(event.wait(), remaining)
        except asyncio.TimeoutError:
            return False
        return True

    # -- subscription and assignment -------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly ``partitions``, without a group; replaces an earlier ``assign``.

        Positions of partitions kept stay; new ones start at their committed offset (with
        ``group.id``) or per ``auto.offset.reset``.

        Raises:
            RuntimeError: the consumer subscribed (call :meth:`unsubscribe` first).
        """
        fetcher = self._started()
        partitions = [TopicPartition(*tp) for tp in partitions]
        before = set(self._subscriptions.assigned())
        self._subscriptions.assign(partitions)
        fetcher.forget(before - set(partitions))
        self._cluster.want({tp.topic for tp in partitions})
        self._metadata_wanted.set()

    def unsubscribe(self) -> None:
        """Drop the manual assignment and every position."""
        fetcher = self._started()
        fetcher.forget(self._subscriptions.assigned())
        self._subscriptions.unsubscribe()

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned to this consumer now."""
        return set(self._subscriptions.assigned())

    # -- consuming --------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None, *, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records from the assigned partitions, in offset order per partition.

        Returns as soon as records are buffered (at most ``max_records``, default
        ``max.poll.records``), or an empty list after ``timeout`` seconds (None: wait
        until there are records).

        Raises:
            RuntimeError: nothing is subscribed or assigned.
            OffsetOutOfRangeError: a position is outside the log and
                ``auto.offset.reset`` is ``none`` (``.partitions`` says which and where).
            NoOffsetForPartitionError: a partition has no position, no committed offset,
                and ``auto.offset.reset`` is ``none``.
            RecordDeserializationError: a deserializer failed (the position stays at
                that record: seek past it).
            CorruptRecordError: a batch is corrupt (idem).
            KafkaError: any other error from fetching.
        """
        self._started()
        self._abandon_iteration()
        return await self._poll(timeout, max_records)

    async def _poll(self, timeout: float | None, max_records: int | None = None) -> list[ConsumerRecord]:
        fetcher = self._started()
        if self._subscriptions.type is SubscriptionType.NONE:
            raise RuntimeError("subscribe() or assign() before poll()")
        limit = self._max_poll_records if max_records is None else max_records
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._event.clear()
            self._step_positions()
            records = fetcher.drain(limit)
            if records or not await self._wait(deadline):
                return records
            if self._closed:
                raise ClientClosedError("the consumer was closed while polling")

    async def _records(self) -> AsyncIterator[ConsumerRecord]:
        while True:
            try:
                batch = await self._poll(None)
            except ClientClosedError:
                return
            iteration = self._iteration = _Iteration(batch)
            for i, record in enumerate(batch, 1):
                iteration.consumed = i
                yield record

    def _unconsumed(self) -> dict[TopicPartition, ConsumerRecord]:
        """First record per partition that iteration handed out of a batch but not yet yielded."""
        iteration = self._iteration
        if iteration is None:
            return {}
        first: dict[TopicPartition, ConsumerRecord] = {}
        for record in iteration.batch[iteration.consumed:]:
            first.setdefault(TopicPartition(record.topic, record.partition), record)
        return first

    def _abandon_iteration(self) -> None:
        """An iteration was left early: its records not yet yielded are to be polled again."""
        for tp, record in self._unconsumed().items():
            if self._subscriptions.get(tp) is not None:
                self.seek(tp, OffsetAndMetadata(record.offset, "", record.leader_epoch))
        self._iteration = None

    # -- positions --------------------------------------------------------------------------

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record :meth:`poll` returns from ``partition``.

        Looks the position up (committed offset or ``auto.offset.reset``) if it is not
        known yet, for at most ``timeout`` seconds (None: ``default.api.timeout.ms``).

        Raises:
            ValueError: the partition is not assigned.
            KafkaTimeoutError: the position could not be found in time.
        """
        self._started()
        state = self._subscriptions.state(partition)
        unconsumed = self._unconsumed().get(partition)
        if unconsumed is not None:
            return unconsumed.offset
        deadline = self._deadline(timeout)
        while state.position is None:
            self._event.clear()
            self._step_positions()
            if state.position is None and not await self._wait(deadline):
                raise KafkaTimeoutError(f"no position for {partition.topic}-{partition.partition} in time")
        return state.position

    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Make the next poll of ``partition`` start at ``offset``.

        Raises:
            ValueError: the partition is not assigned, or the offset is negative.
        """
        fetcher = self._started()
        if isinstance(offset, OffsetAndMetadata):
            self._subscriptions.seek(partition, offset.offset, offset.leader_epoch)
        else:
            self._subscriptions.seek(partition, offset)
        fetcher.forget([partition])

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Move ``partitions`` (default: all assigned) to their first offset, by the next poll."""
        self._reset(partitions, "earliest")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Move ``partitions`` (default: all assigned) to their end (the last stable offset
        under read_committed), by the next poll."""
        self._reset(partitions, "latest")

    def _reset(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        fetcher = self._started()
        partitions = self._subscriptions.assigned() if partitions is None else list(partitions)
        for tp in partitions:
            self._subscriptions.request_reset(tp, strategy)
        fetcher.forget(partitions)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching and returning ``partitions`` until :meth:`resume`; what was
        fetched already is kept."""
        self._started()
        self._subscriptions.pause(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch and return paused ``partitions`` again."""
        fetcher = self._started()
        self._subscriptions.resume(partitions)
        fetcher.wakeup()
        self._event.set()

    def paused(self) -> set[TopicPartition]:
        """The partitions paused now."""
        return set(self._subscriptions.paused())

    # -- offsets of partitions --------------------------------------------------------------

    async def beginning_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                                ) -> dict[TopicPartition, int]:
        """The first offset of each partition (its log start offset)."""
        self._started()
        found = await self._fetcher.list_offsets({tp: _EARLIEST for tp in partitions}, self._deadline(timeout))
        return {tp: f.offset for tp, f in found.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                          ) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition: the high watermark, or the
        last stable offset under read_committed.

        Raises:
            KafkaTimeoutError: not every partition answered within ``timeout`` seconds
                (None: ``default.api.timeout.ms``).
        """
        self._started()
        found = await self._fetcher.list_offsets({tp: _LATEST for tp in partitions}, self._deadline(timeout))
        return {tp: f.offset for tp, f in found.items()}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the first offset whose timestamp is at or after the given
        one (ms), with that timestamp; None when every record is older."""
        self._started()
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"timestamp of {tp.topic}-{tp.partition} must be >= 0, got {ts}")
        found = await self._fetcher.list_offsets(dict(timestamps), self._deadline(timeout))
        return {tp: f if f.offset >= 0 else None for tp, f in found.items()}

    # -- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop fetching and close every connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._event is not None:
            self._event.set()  # a poll waiting now raises ClientClosedError
        tasks = [t for t in (*self._tasks, self._positions) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._fetcher is not None:
            await self._fetcher.close()
        await self._cluster.close()


class _Iteration:
    """A polled batch that ``for``/``async for`` hands out one record at a time."""

    __slots__ = ("batch", "consumed")

    def __init__(self, batch: list[ConsumerRecord]) -> None:
        self.batch = batch
        self.consumed = 0  # records yielded so far


# -- the face for threads ------------------------------------------------------------------

async def _call(method: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return method(*args, **kwargs)


def _on_loop(method: Callable[..., Any]) -> Callable[..., Any]:
    """The sync twin of an :class:`AIOConsumer` method: run on the consumer's loop and wait.

    Coroutine methods are awaited there; plain ones are called there (the consumer's
    state belongs to its loop's thread).
    """
    name = method.__name__
    is_async = inspect.iscoroutinefunction(method)

    @functools.wraps(method)
    def call(self: Consumer, *args: Any, **kwargs: Any) -> Any:
        bound = getattr(self._core, name)
        return self._run(bound(*args, **kwargs) if is_async else _call(bound, args, kwargs))

    return call


class Consumer:
    """The consumer for threads: :class:`AIOConsumer` on a background loop.

    Every method has the same arguments, results and errors as its :class:`AIOConsumer`
    namesake and blocks until done. Use ``with Consumer(...) as consumer:`` or call
    :meth:`close`. Iterate with ``for record in consumer``. One thread at a time should
    use a consumer, as in Java.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._core = AIOConsumer(config, **kwargs)  # validates the config before a thread starts
        self.config = self._core.config
        self._loop = LoopThread("kproto-consumer")

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[ConsumerRecord]:
        core = self._core
        while True:
            try:
                batch = self._run(core._poll(None))
            except ClientClosedError:
                return
            iteration = core._iteration = _Iteration(batch)
            for i, record in enumerate(batch, 1):
                iteration.consumed = i
                yield record

    def _run(self, coro: Any) -> Any:
        """Run ``coro`` on the loop and wait for it, letting Ctrl-C in every 200 ms."""
        loop = self._loop.loop
        if loop.is_closed():
            coro.close()
            raise ClientClosedError("the consumer is closed")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError("a blocking consumer call was made from the consumer's own loop")
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        while True:
            try:
                return future.result(_SLICE)
            except concurrent.futures.TimeoutError:
                continue
            except concurrent.futures.CancelledError:
                raise ClientClosedError("the consumer was closed during the call") from None
            except KeyboardInterrupt:
                future.cancel()
                raise

    def close(self) -> None:
        """Close the consumer and stop its background loop. Idempotent."""
        if not self._loop.loop.is_closed():
            self._run(self._core.close())
            self._loop.stop()

    assign = _on_loop(AIOConsumer.assign)
    unsubscribe = _on_loop(AIOConsumer.unsubscribe)
    assignment = _on_loop(AIOConsumer.assignment)
    poll = _on_loop(AIOConsumer.poll)
    position = _on_loop(AIOConsumer.position)
    seek = _on_loop(AIOConsumer.seek)
    seek_to_beginning = _on_loop(AIOConsumer.seek_to_beginning)
    seek_to_end = _on_loop(AIOConsumer.seek_to_end)
    pause = _on_loop(AIOConsumer.pause)
    resume = _on_loop(AIOConsumer.resume)
    paused = _on_loop(AIOConsumer.paused)
    beginning_offsets = _on_loop(AIOConsumer.beginning_offsets)
    end_offsets = _on_loop(AIOConsumer.end_offsets)
    offsets_for_times = _on_loop(AIOConsumer.offsets_for_times)
