"""The consumer: :class:`AIOConsumer` for asyncio, :class:`Consumer` for threads.

:class:`AIOConsumer` is the implementation. Background tasks on its loop fetch ahead
(:mod:`~kproto.consumer.fetcher`) and keep metadata fresh; :meth:`AIOConsumer.poll`
hands out what was fetched, up to ``max.poll.records``, after stepping each job that
happens in poll. The jobs are parts of the class, one module each:

- :mod:`~kproto.consumer.positions`: where each partition's next record comes from
  (seeks, committed offsets, ``auto.offset.reset``), pausing, and partition offsets;
- :mod:`~kproto.consumer.rebalance`: subscribe or assign, and the group's rebalances
  with their callbacks;
- :mod:`~kproto.consumer.commits`: sync, async and automatic commits;
- :mod:`~kproto.consumer.iteration`: ``for`` / ``async for`` one record at a time;
- :mod:`~kproto.consumer.columnar`: ``poll_arrow``, records as one Arrow record batch.

This module holds what ties them: the state, starting and stopping the background tasks,
poll's loop and close. :class:`Consumer` runs the same object through a
:class:`~kproto._loop.Portal` (the loop thread the sync clients share) and blocks on it;
its rebalance and commit callbacks run in the thread that called poll (or close), so they
may call the consumer's blocking methods, ``commit`` included. A sync poll that finds
records buffered and nothing else due takes them through the portal's quick call
(:meth:`AIOConsumer._poll_now`: no task, about a third of a full call), since a poll per
``max.poll.records`` records makes that cost count per record. Even so, a trip to the loop
thread costs about twice the decoding of the records it takes (two thread wake-ups, two
hand-overs of the GIL), so the quick call drains up to ``_AHEAD`` polls' worth and the next
polls hand the rest out in the caller's thread without a trip: records drained ahead,
which count as not consumed until a poll returns them
(:mod:`~kproto.consumer.iteration`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kproto._habits import missing
from kproto._loop import Portal, blocking, check_loop, refuse_when_closed, wait_for
from kproto.config import ClientConfig
from kproto.consumer.columnar import Columnar
from kproto.consumer.commits import CommitCallback, Commits
from kproto.consumer.coordinator import GroupCoordinator
from kproto.consumer.fetcher import Fetcher
from kproto.consumer.iteration import Ahead, Batch, Iteration
from kproto.consumer.membership import Membership
from kproto.consumer.positions import Positions
from kproto.consumer.rebalance import RebalanceCallback, Rebalancing, assignors, topics_or_pattern
from kproto.consumer.structs import ConsumerRecord
from kproto.consumer.subscription import SubscriptionState, SubscriptionType
from kproto.errors import ClientClosedError, ConfigError, InvalidGroupIdError, KafkaError
from kproto.interceptors import ConsumerInterceptor, ConsumerInterceptors, load
from kproto.io import Cluster
from kproto.io.retry import Backoff
from kproto.metrics import ConsumerMetrics, MetricName, Statistics
from kproto.structs import ConsumerGroupMetadata

if TYPE_CHECKING:
    import pyarrow as pa  # poll_arrow's result; pyarrow is imported only when it is called

__all__ = ["AIOConsumer", "Consumer"]

log = logging.getLogger("kproto.consumer")

_CLOSE_TIMEOUT_S = 30.0  # Java's KafkaConsumer.DEFAULT_CLOSE_TIMEOUT_MS

_IMPLAUSIBLE = 300  # seconds: a poll as long as max.poll.interval.ms's default is surely in ms

# Polls' worth of records a sync poll's trip to the loop thread drains (issue 16): a trip
# costs about what decoding 1,000 records does; the rest is handed out without a trip.
_AHEAD = 8


def _seconds(timeout: float | None, timeout_ms: int | None) -> float | None:
    """poll's timeout in seconds, from ``timeout`` (seconds) or ``timeout_ms`` (kafka-python's)."""
    if timeout_ms is not None:
        if timeout is not None:
            raise TypeError("poll() takes timeout (seconds) or timeout_ms (milliseconds), not both")
        return timeout_ms / 1000
    if timeout is not None and timeout >= _IMPLAUSIBLE:
        warnings.warn(f"poll({timeout!r}) waits {timeout!r} seconds: kproto's timeouts are in seconds, as "
                      f"confluent-kafka's; for milliseconds (kafka-python's habit) write poll(timeout_ms={timeout!r})",
                      UserWarning, stacklevel=3)
    return timeout


@refuse_when_closed("consumer", lambda self: self._closed, keep=("close", "stop"))
class AIOConsumer(Positions, Rebalancing, Commits, Iteration, Columnar):
    """The consumer for asyncio code.

    Args:
        config: Kafka consumer settings (``bootstrap.servers`` is required). A topic name
            (or a list of them) in its place subscribes to them, as kafka-python's and
            aiokafka's ``KafkaConsumer("topic", group_id=..., ...)`` do (a group is needed).
        **kwargs: the same, with dots written as underscores.

    Use ``async with AIOConsumer(...) as consumer:`` or call :meth:`close`. Every method
    must be called from the event loop the consumer first ran on.
    """

    def __init__(self, config: Mapping[str, Any] | str | list[str] | tuple[str, ...] | None = None, **kwargs: Any) -> None:
        topics = None
        if isinstance(config, str) or (isinstance(config, (list, tuple)) and all(isinstance(t, str) for t in config)):
            # kafka-python's and aiokafka's habit, KafkaConsumer("topic", bootstrap_servers=...):
            # subscribe to it (at the first call, on the consumer's loop).
            topics, config = config, None
        self.config = ClientConfig("consumer", config, **kwargs)
        c = self.config
        if topics is not None and not c["group.id"]:
            raise ConfigError(f"{type(self).__name__}({topics!r}, ...) subscribes to {topics!r} as a member of a "
                              f"group: add group_id='...', or, without a group, assign partitions: "
                              f"consumer.assign([TopicPartition({(topics if isinstance(topics, str) else topics[0])!r}, 0)])")
        self._initial_topics = topics_or_pattern(topics) if topics is not None else None
        self._cluster = Cluster(c, allow_auto_topic_creation=c["allow.auto.create.topics"])
        self._subscriptions = SubscriptionState(c["auto.offset.reset"], c["exclude.internal.topics"])
        self._api_timeout = c["default.api.timeout.ms"] / 1000
        # Java's close timer: min(close timeout (30 s), request.timeout.ms) bounds a close's
        # commits and LeaveGroup, so a broker that stopped answering cannot hold it.
        self._close_timeout = min(_CLOSE_TIMEOUT_S, c["request.timeout.ms"] / 1000)
        self._closing_by: float | None = None  # set while closing: no wait goes past it
        self._max_poll_records = c["max.poll.records"]
        self._event: asyncio.Event | None = None  # something for poll happened
        self._metadata_wanted: asyncio.Event | None = None
        self._fetcher: Fetcher | None = None
        self._tasks: list[asyncio.Task] = []
        self._positions: asyncio.Task | None = None
        self._iteration: Batch | None = None
        self._ahead: Ahead | None = None  # the sync face's records drained ahead (kproto.consumer.iteration)
        self._home: asyncio.AbstractEventLoop | None = None  # the loop its tasks run on
        self._closed = False
        # Groups: the coordinator (with group.id), the running join, callbacks, auto-commit.
        group_id = c["group.id"]
        if not group_id and c["enable.auto.commit"] and "enable.auto.commit" in c.explicit:
            raise ConfigError("enable.auto.commit=true needs a group.id (commits belong to a group)")
        self._auto_commit = bool(group_id) and c["enable.auto.commit"]
        self._auto_commit_interval = c["auto.commit.interval.ms"] / 1000
        self._next_auto_commit = 0.0
        self._retry_backoff = c["retry.backoff.ms"] / 1000
        self._membership = Membership(
            group_id, assignors(c["partition.assignment.strategy"]), session_timeout_ms=c["session.timeout.ms"],
            rebalance_timeout_ms=c["max.poll.interval.ms"], group_instance_id=c["group.instance.id"],
            rack_id=c["client.rack"]) if group_id else None
        self._group: GroupCoordinator | None = None
        self._join: asyncio.Task | None = None
        self._callbacks: dict[str, RebalanceCallback | None] = {"assign": None, "revoke": None, "lost": None}
        self._snapshot: dict[str, int | None] | None = None  # partition counts the last assignment was made for
        self._matched = False  # a pattern subscription has seen the cluster's topics
        self._commits: set[asyncio.Task] = set()
        self._commit_results: list[tuple[CommitCallback, dict, BaseException | None]] = []
        self._last_poll = time.monotonic()  # when the last poll returned
        self._polling = 0  # polls in progress
        self._face: Any = self  # what callbacks get as their consumer (Consumer sets itself)
        self._arrow_built = {}  # poll_arrow's batches of columns taken part way
        # -- observability: metrics (always on, as Java's), statistics, interceptors --------
        self._metrics = ConsumerMetrics(c, lambda: len(self._subscriptions.assigned()))
        self._metrics.attach(self._cluster)
        self._statistics = Statistics(c, self._metrics)
        self._interceptors = ConsumerInterceptors(load(c, ConsumerInterceptor)) if c["interceptor.classes"] else None
        # what a poll's records go through before they are returned: one call per poll
        self._polled = self._metrics.polled if self._interceptors is None else (
            lambda records: self._interceptors.on_consume(self._metrics.polled(records)))

    _habit_kind = "consumer"
    __getattr__ = missing  # a peer's method name gets an error naming kproto's call

    async def __aenter__(self) -> AIOConsumer:
        return self

    async def start(self) -> None:
        """Start fetching in the background and learn the cluster; optional (the first call
        does it). aiokafka's habit, as :meth:`stop` is.

        Raises:
            NoBrokersAvailableError: no bootstrap server could be reached.
        """
        self._started()
        await self._cluster.refresh()

    async def stop(self) -> None:
        """:meth:`close` under aiokafka's name."""
        await self.close()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- plumbing -------------------------------------------------------------------------

    def _started(self) -> Fetcher:
        """The fetcher, with the background tasks started on the running loop (once)."""
        if self._closed:
            raise ClientClosedError("the consumer is closed")
        loop = check_loop(self._home, "AIOConsumer")
        if self._fetcher is None:
            self._home = loop
            self._event = asyncio.Event()
            self._metadata_wanted = asyncio.Event()
            self._fetcher = Fetcher(self._cluster, self.config, self._subscriptions,
                                    on_data=self._event.set, on_stale_metadata=self._metadata_wanted.set,
                                    metrics=self._metrics)
            self._fetcher.start()
            self._tasks.append(loop.create_task(self._metadata_loop(), name="kproto-metadata"))
            if self._membership is not None:
                self._group = GroupCoordinator(self.config, self._membership, self._cluster, self._event.set)
                self._group.on_commit = self._committed  # observability
                self._metrics.attach(self._group._cluster)
                self._tasks.append(loop.create_task(self._group.heartbeat_loop(self._since_poll),
                                                    name="kproto-heartbeat"))
            if self._initial_topics is not None:
                self.subscribe(self._initial_topics)
            self._statistics.start()
        return self._fetcher

    def _committed(self, offsets: Mapping[Any, Any], seconds: float) -> None:
        """Offsets were committed after ``seconds``: commit metrics and interceptors' on_commit."""
        self._metrics.committed(seconds)
        if self._interceptors is not None:
            self._interceptors.on_commit(offsets)

    def metrics(self) -> dict[MetricName, float]:
        """The consumer's metrics now, with Java's names: ``{MetricName: value}``
        (``consumer-fetch-manager-metrics`` ``records-consumed-rate``, ``fetch-latency-avg``,
        ``records-lag-max``...; see the observability guide and :mod:`kproto.metrics`)."""
        return self._metrics.snapshot()

    def _since_poll(self) -> float:
        """Seconds since the application last polled (0 while a poll is in progress)."""
        return 0.0 if self._polling else time.monotonic() - self._last_poll

    def _deadline(self, timeout: float | None) -> float:
        deadline = time.monotonic() + (self._api_timeout if timeout is None else timeout)
        return deadline if self._closing_by is None else min(deadline, self._closing_by)

    async def _metadata_loop(self) -> None:
        """Refresh metadata every ``metadata.max.age.ms``, or soon when something is stale
        (but not twice within ``retry.backoff.ms``: a topic without a leader asks each time)."""
        wanted = self._metadata_wanted
        max_age = self.config["metadata.max.age.ms"] / 1000
        backoff, failures = Backoff.retry(self.config), 0
        while True:
            try:
                await wait_for(wanted.wait(), max_age)
            except TimeoutError:
                pass
            wanted.clear()
            try:
                await self._cluster.refresh(all_topics=self._subscriptions.type is SubscriptionType.AUTO_PATTERN)
            except (KafkaError, OSError) as exc:
                log.debug("metadata refresh failed: %s", exc)
                wanted.set()
                failures += 1
            else:
                failures = 0
                self._on_metadata()
                self._fetcher.wakeup()
            # At most one refresh per retry.backoff.ms, doubling while refreshes fail (KIP-580).
            await asyncio.sleep(backoff.delay(max(failures, 1)))

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
            await wait_for(event.wait(), remaining)
        except TimeoutError:
            return False
        return True

    # -- consuming --------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None, *, max_records: int | None = None,
                   timeout_ms: int | None = None) -> list[ConsumerRecord]:
        """Records from the assigned partitions, in offset order per partition.

        Returns as soon as records are buffered (at most ``max_records``, default
        ``max.poll.records``), or an empty list after ``timeout`` seconds (None: wait
        until there are records). ``timeout`` is in seconds, as confluent-kafka's;
        ``timeout_ms=`` takes milliseconds, as kafka-python's ``poll(timeout_ms=...)``.
        A positional ``timeout`` of 300 or more (``max.poll.interval.ms``'s default: a poll
        that long would cost the group membership) warns that it is seconds, since
        ``poll(1000)`` is most likely kafka-python's milliseconds (issue 11).

        Raises:
            TypeError: both ``timeout`` and ``timeout_ms`` are given.
            RuntimeError: nothing is subscribed or assigned.
            OffsetOutOfRangeError: a position is outside the log and
                ``auto.offset.reset`` is ``none`` (``.partitions`` says which and where).
            LogTruncationError: (a subclass of the above) after a leader change the log
                was found truncated under a position (KIP-320) and ``auto.offset.reset``
                is ``none``; ``.divergent_offsets`` says where it diverged.
            NoOffsetForPartitionError: a partition has no position, no committed offset,
                and ``auto.offset.reset`` is ``none``.
            RecordDeserializationError: a deserializer failed (the position stays at
                that record: seek past it).
            CorruptRecordError: a batch is corrupt (idem).
            KafkaError: any other error from fetching.
        """
        timeout = _seconds(timeout, timeout_ms)
        self._started()
        return await self._poll(timeout, max_records)

    def _poll_now(self, max_records: int | None, columns: bool = False, ahead: int = 1) -> Any:
        """A poll that finishes at once, run on the loop with no task (the sync face's quick
        path, :meth:`~kproto._loop.Portal.call_plain`): the buffered records, or None when
        the full :meth:`poll` is due instead, because nothing is buffered or because a commit
        callback or a group step is waiting (they may run callbacks in the caller's thread).
        Otherwise the same steps as :meth:`_poll`'s, in its order. With ``columns``, the
        fetcher's columns (poll_arrow's quick path, which counts the rows it returns). With
        ``ahead`` > 1, up to that many polls' worth of records, put in ``_ahead`` (an Ahead) here on the
        loop and returned: the sync face hands them out a poll at a time
        (:meth:`Consumer.poll`), counting each poll; until then they count as not consumed,
        so a Ctrl-C that abandons this call has nothing to undo."""
        fetcher = self._started()
        if self._subscriptions.type is SubscriptionType.NONE or self._commit_results or not self._group_idle():
            return None
        self._abandon_iteration()
        try:
            self._maybe_auto_commit()
            self._event.clear()
            self._step_positions()
            limit = self._max_poll_records if max_records is None else max_records
            records: list = fetcher.drain_columns(limit) if columns else fetcher.drain(limit * ahead)
            if not records:
                return None
            if ahead > 1:  # not consumed until a poll hands them out (from here: whatever
                self._ahead = Ahead(records, limit)  # happens in the caller's thread meanwhile)
                return self._ahead
            self._metrics.poll_started()  # the full poll that follows a None counts its own
            # metrics, interceptors (observability); poll_arrow counts the rows it makes
            return records if columns else self._polled(records)
        finally:
            self._last_poll = time.monotonic()

    def _served(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        """A sync poll returns ``records`` drained ahead (:meth:`Consumer.poll`), in its own
        thread: what a poll on the loop records (metrics; max.poll.interval.ms's clock).
        The loop reads these as the application's thread writes them, as ``metrics()`` does."""
        self._metrics.poll_started()
        self._last_poll = time.monotonic()
        return self._metrics.polled(records)

    async def _poll(self, timeout: float | None, max_records: int | None = None,
                    drain: Callable[[int], list] | None = None) -> list:
        """poll's loop; ``drain`` takes the buffered records (default: the fetcher's
        :meth:`~kproto.consumer.fetcher.Fetcher.drain`; poll_arrow's drains columns)."""
        fetcher = self._started()
        # Every poll and iteration comes through here (or _poll_now): an iteration left
        # early is to be polled again from its first record not yet yielded. An iteration's
        # own poll comes once its batch is all yielded, so this seeks nothing then.
        self._abandon_iteration()
        if self._subscriptions.type is SubscriptionType.NONE:
            raise RuntimeError("subscribe() or assign() before poll()")
        limit = self._max_poll_records if max_records is None else max_records
        deadline = None if timeout is None else time.monotonic() + timeout
        self._metrics.poll_started()
        self._polling += 1  # waiting in poll is polling: max.poll.interval.ms counts from its end
        try:
            # One turn of the loop first (before anything is drained, so that a cancelled poll
            # loses no record): with records buffered nothing below waits, and an application
            # polling in a loop would otherwise give the fetcher no turn to read the next
            # response or send the next fetch until the buffer ran dry.
            await asyncio.sleep(0)
            if self._closed:
                raise ClientClosedError("the consumer was closed while polling")
            await self._run_commit_callbacks()
            self._maybe_auto_commit()
            while True:
                self._event.clear()
                await self._step_group()
                self._step_positions()
                if drain is not None:  # poll_arrow's columns: it counts the rows it returns
                    records = drain(limit)
                    if records:
                        return records
                elif records := fetcher.drain(limit):
                    return self._polled(records)  # metrics, interceptors (observability)
                if self._auto_commit and (deadline is None or self._next_auto_commit < deadline):
                    await self._wait(self._next_auto_commit)  # a waiting poll auto-commits on time, as Java's
                elif not await self._wait(deadline):
                    return records
                if self._closed:
                    raise ClientClosedError("the consumer was closed while polling")
                self._maybe_auto_commit()
        finally:
            self._polling -= 1
            self._last_poll = time.monotonic()

    # -- groups and transactions ------------------------------------------------------------

    def group_metadata(self) -> ConsumerGroupMetadata:
        """Where this consumer stands in its group now: group id, generation, member id and
        group instance id, for a transactional producer's
        :meth:`~kproto.producer.Producer.send_offsets_to_transaction` (KIP-447; Java's
        ``groupMetadata()``). Take it after the poll whose records the transaction holds:
        if a rebalance fences this member before the commit, the group coordinator refuses
        the offsets and the transaction must be aborted.

        Raises:
            InvalidGroupIdError: the consumer has no ``group.id``.
        """
        membership = self._membership
        if membership is None:
            raise InvalidGroupIdError("group_metadata() needs a group.id (a consumer without one has no group)")
        return ConsumerGroupMetadata(group_id=membership.group_id, generation_id=membership.generation_id,
                                     member_id=membership.member_id,
                                     group_instance_id=membership.group_instance_id)

    # -- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Leave the group and close every connection. Idempotent.

        With a group: auto-commit commits what was consumed, on_revoke (or on_lost) runs
        for the partitions held, and a dynamic member sends LeaveGroup (a static one
        does not: its session timeout ends its membership, so that a restart within it
        keeps its partitions without a rebalance).

        Raises:
            Exception: what a rebalance callback raised (the consumer closes all the same).
        """
        if self._closed:
            return
        if self._home is not None and self._home.is_closed():
            self._closed = True  # its loop ended (and took its tasks): nothing left to run or send
            return
        check_loop(self._home, "AIOConsumer")
        self._closing_by = time.monotonic() + self._close_timeout
        # Records drained ahead (sync face) are polled again, not handed out by a poll in
        # another thread while close revokes their partitions; close commits up to them.
        self._drop_ahead()
        try:
            if self._group is not None:
                await self._close_group()
        finally:
            self._closed = True
            if self._event is not None:
                self._event.set()  # a poll waiting now raises ClientClosedError
            await self._stop_joining()
            tasks = [t for t in (*self._tasks, self._positions, *self._commits) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._fetcher is not None:
                await self._fetcher.close()
            left = max(self._closing_by - time.monotonic(), 0)
            if self._group is not None:
                await self._group.close(left)
            await self._cluster.close(left)
            await self._statistics.stop()
            if self._interceptors is not None:
                self._interceptors.close()


# -- the face for threads ------------------------------------------------------------------

def _dropping_ahead(method: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`~kproto._loop.blocking`'s twin for the calls that change the assignment: on
    the loop, the records drained ahead of the sync polls are sought back to first
    (:meth:`~kproto.consumer.iteration.Iteration._drop_ahead`), so that the call acts on
    the positions the application has seen (a commit before reassigning commits only what
    polls returned). Seeks and pause do it for their partitions themselves."""
    name = method.__name__

    def dropped(core: AIOConsumer, *args: Any, **kwargs: Any) -> Any:
        core._drop_ahead()
        return getattr(core, name)(*args, **kwargs)

    @functools.wraps(method)
    def call(self: Consumer, /, *args: Any, **kwargs: Any) -> Any:
        return self._portal.call(dropped, self._core, *args, **kwargs)

    return call


@refuse_when_closed("consumer", lambda self: self._core._closed)
class Consumer:
    """The consumer for threads: :class:`AIOConsumer` on a background loop.

    Every method has the same arguments, results and errors as its :class:`AIOConsumer`
    namesake and blocks until done. Use ``with Consumer(...) as consumer:`` or call
    :meth:`close`. Iterate with ``for record in consumer``. One thread at a time should
    use a consumer, as in Java.
    """

    def __init__(self, config: Mapping[str, Any] | str | list[str] | tuple[str, ...] | None = None, **kwargs: Any) -> None:
        self._core = AIOConsumer(config, **kwargs)  # validates the config before a thread starts
        self.config = self._core.config
        self._core._face = self
        # The shared loop thread (kproto._loop); its calls run the consumer's callbacks in
        # the thread that called poll (or close), as Java does.
        self._portal = Portal("consumer")

    _habit_kind = "consumer"
    __getattr__ = missing

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[ConsumerRecord]:
        core = self._core
        if core._closed:  # a close during the iteration ends it; iterating a closed one is a mistake
            raise ClientClosedError("the consumer is closed")
        while True:
            try:
                # The previous batch was all yielded: the quick call's abandoning seeks nothing.
                batch = self._take(None) or self._portal.call(core._poll, None)
            except ClientClosedError:
                return
            yield from core._yielding(batch)

    def close(self) -> None:
        """Close the consumer and let go of the background loop (which the sync clients
        share; the last one closed stops it). Idempotent."""
        self._portal.close_after(self._core.close)

    def metrics(self) -> dict[MetricName, float]:
        """The consumer's metrics now; see :meth:`AIOConsumer.metrics`."""
        return self._core.metrics()

    subscribe = _dropping_ahead(AIOConsumer.subscribe)
    unsubscribe = _dropping_ahead(AIOConsumer.unsubscribe)
    assign = _dropping_ahead(AIOConsumer.assign)
    assignment = blocking(AIOConsumer.assignment)
    subscription = blocking(AIOConsumer.subscription)
    commit = blocking(AIOConsumer.commit)
    commit_async = blocking(AIOConsumer.commit_async)
    committed = blocking(AIOConsumer.committed)

    def poll(self, timeout: float | None = None, *, max_records: int | None = None,
             timeout_ms: int | None = None) -> list[ConsumerRecord]:
        # Records already buffered come back through the portal's quick call (a poll every
        # max.poll.records records: its cost counts per record); anything else, the full poll.
        if (timeout is None or timeout_ms is None) and (timeout is None or timeout < _IMPLAUSIBLE):
            records = self._take(max_records)
            if records is not None:
                return records
        return self._portal.call(self._core.poll, timeout, max_records=max_records, timeout_ms=timeout_ms)

    poll.__doc__ = AIOConsumer.poll.__doc__  # one docstring, as blocking() gives the others

    def _take(self, max_records: int | None) -> list[ConsumerRecord] | None:
        """A poll's records without waiting: from those drained ahead, in this thread, or
        through the portal's quick call, which drains up to ``_AHEAD`` polls' worth into
        ``_ahead`` (kproto.consumer.iteration) and hands out the first; None when the full
        poll is due. Interceptors see each poll's records on the loop, as before: no
        read-ahead then."""
        core = self._core
        if core._closed:  # by another thread: what was drained ahead is not handed out
            raise ClientClosedError("the consumer is closed")
        limit = core._max_poll_records if max_records is None else max_records
        if core._ahead and core._ahead_due():
            if core._commit_results:  # commit callbacks run in poll, in this thread (as Java's)
                self._portal.call(core._run_commit_callbacks)  # (one may seek: read _ahead after)
            if core._auto_commit and time.monotonic() >= core._next_auto_commit:
                # On time, as Java's poll does it (it commits what polls returned: _consumed)
                self._portal.call_plain(core._maybe_auto_commit)
            ahead = core._ahead
            if ahead:
                return self._hand_out(ahead, limit)
        if core._interceptors is not None or limit <= 0 or _AHEAD == 1:
            # Ctrl-C meanwhile: records drained for nobody are sought back to (on_abandoned).
            return self._portal.call_plain(core._poll_now, max_records, on_abandoned=core._poll_abandoned)
        drained = self._portal.call_plain(core._poll_now, max_records, False, _AHEAD)
        return None if drained is None else self._hand_out(drained, limit)

    def _hand_out(self, ahead: Ahead, limit: int) -> list[ConsumerRecord]:
        """A poll's records from those drained ahead: they stay there, not consumed, until
        nothing can fail (Ctrl-C in the metrics leaves them for the next poll)."""
        records = ahead.peek(limit)
        served = self._core._served(records)
        ahead.advance(len(records))
        return served

    def poll_arrow(self, timeout: float | None = None, *, max_records: int | None = None,
                   include_headers: bool = True) -> pa.RecordBatch:
        # As poll: what is buffered comes back through the quick call, anything else through
        # the full poll_arrow (a small max_records makes the per-call cost count). Large polls
        # mostly find the buffer empty (the fetch is the bound): they skip the quick call, by
        # a look from this thread (a hint: the quick call decides on the loop).
        fetcher = self._core._fetcher
        if fetcher is not None and fetcher._buffered:
            batch = self._portal.call_plain(self._core._poll_arrow_now, max_records, include_headers,
                                            on_abandoned=self._core._poll_arrow_abandoned)
            if batch is not None:
                return batch
        return self._portal.call(self._core.poll_arrow, timeout, max_records=max_records,
                                 include_headers=include_headers)

    poll_arrow.__doc__ = AIOConsumer.poll_arrow.__doc__
    position = blocking(AIOConsumer.position)
    # (seeks and pause see to the records drained ahead of their partitions themselves)
    seek = blocking(AIOConsumer.seek)
    seek_to_beginning = blocking(AIOConsumer.seek_to_beginning)
    seek_to_end = blocking(AIOConsumer.seek_to_end)
    pause = blocking(AIOConsumer.pause)
    resume = blocking(AIOConsumer.resume)
    paused = blocking(AIOConsumer.paused)
    beginning_offsets = blocking(AIOConsumer.beginning_offsets)
    end_offsets = blocking(AIOConsumer.end_offsets)
    offsets_for_times = blocking(AIOConsumer.offsets_for_times)
    group_metadata = blocking(AIOConsumer.group_metadata)
