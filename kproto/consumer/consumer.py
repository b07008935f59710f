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

Groups. With ``group.id``, :meth:`~AIOConsumer.subscribe` joins the group (Java's
classic protocol; :mod:`~kproto.consumer.membership`, :mod:`~kproto.consumer.coordinator`).
Heartbeats run in the background; joining, rebalance callbacks and auto-commits happen in
poll, in the caller's context, as in Java. Eager assignors (range, roundrobin, or any mix
with them) revoke every partition before a rebalance; with cooperative-sticky alone only
the partitions that move are revoked, and the others keep being fetched and returned
while the group rebalances (KIP-429). Before each rebalance and on close, auto-commit
commits what was consumed. :class:`Consumer` runs callbacks in the thread that called
poll (or close), so they may call the consumer's blocking methods, ``commit`` included.

Iteration (``for record in consumer`` / ``async for``) polls batches and yields their
records one by one. A record counts as consumed once yielded: a commit inside the loop
commits up to it, and after leaving the loop early, the next poll starts each partition
at its first record not yet yielded (the consumer seeks back), so nothing is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

from kproto._habits import missing
from kproto._loop import Portal, blocking, check_loop, refuse_when_closed, run_in_caller
from kproto.config import ClientConfig
from kproto.consumer.assignors import ASSIGNORS, Assignor, RebalanceProtocol
from kproto.consumer.coordinator import GroupCoordinator
from kproto.consumer.errors import NoOffsetForPartitionError
from kproto.consumer.fetcher import Fetcher
from kproto.consumer.membership import Membership, MemberState
from kproto.consumer.protocol import Assignment
from kproto.consumer.structs import ConsumerRecord, OffsetAndTimestamp
from kproto.consumer.subscription import SubscriptionState, SubscriptionType
from kproto.errors import (
    ClientClosedError,
    ConfigError,
    InvalidGroupIdError,
    KafkaError,
    KafkaTimeoutError,
)
from kproto.io import Cluster
from kproto.structs import OffsetAndMetadata, TopicPartition, check_topic

__all__ = ["AIOConsumer", "Consumer"]

log = logging.getLogger("kproto.consumer")

_EARLIEST, _LATEST = -2, -1  # ListOffsets' special timestamps
_CLOSE_TIMEOUT_S = 30.0  # Java's KafkaConsumer.DEFAULT_CLOSE_TIMEOUT_MS

#: ``on_assign(consumer, partitions)``, ``on_revoke``, ``on_lost``: plain or async functions.
RebalanceCallback = Callable[[Any, list[TopicPartition]], Any]
#: ``callback(offsets, error)`` of :meth:`AIOConsumer.commit_async` (error None on success).
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], BaseException | None], Any]


def _assignors(names: Iterable[Any]) -> list[Assignor]:
    """``partition.assignment.strategy``: names, or :class:`Assignor` instances as they are."""
    return [ASSIGNORS[n]() if isinstance(n, str) else n for n in names]


def _offsets(offsets: Mapping[TopicPartition, int | OffsetAndMetadata]) -> dict[TopicPartition, OffsetAndMetadata]:
    return {TopicPartition(*tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()}


def _topics_or_pattern(topics: Iterable[str] | str | re.Pattern[str]) -> list[str] | re.Pattern[str]:
    """What :meth:`AIOConsumer.subscribe` was given: checked topic names, or one pattern
    (names starting with ``^`` are patterns, as librdkafka's; literal names beside one are
    escaped into it)."""
    if isinstance(topics, re.Pattern):
        return topics
    topics = [topics] if isinstance(topics, str) else list(topics)
    if not any(isinstance(t, str) and t.startswith("^") for t in topics):
        return [check_topic(t) for t in topics]
    parts = [t if t.startswith("^") else re.escape(check_topic(t)) for t in topics]
    return re.compile(parts[0] if len(parts) == 1 else "|".join(f"(?:{p})" for p in parts))


_IMPLAUSIBLE = 300  # seconds: a poll as long as max.poll.interval.ms's default is surely in ms


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
class AIOConsumer:
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
        self._initial_topics = _topics_or_pattern(topics) if topics is not None else None
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
        self._iteration: _Iteration | None = None
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
            group_id, _assignors(c["partition.assignment.strategy"]), session_timeout_ms=c["session.timeout.ms"],
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

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        if self._closed:  # a close during the iteration ends it; iterating a closed one is a mistake
            raise ClientClosedError("the consumer is closed")
        return self._records()

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
                                    on_data=self._event.set, on_stale_metadata=self._metadata_wanted.set)
            self._fetcher.start()
            self._tasks.append(loop.create_task(self._metadata_loop(), name="kproto-metadata"))
            if self._membership is not None:
                self._group = GroupCoordinator(self.config, self._membership, self._cluster, self._event.set)
                self._tasks.append(loop.create_task(self._group.heartbeat_loop(self._since_poll),
                                                    name="kproto-heartbeat"))
            if self._initial_topics is not None:
                self.subscribe(self._initial_topics)
        return self._fetcher

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
        backoff = self.config["retry.backoff.ms"] / 1000
        while True:
            try:
                await asyncio.wait_for(wanted.wait(), max_age)
            except asyncio.TimeoutError:
                pass
            wanted.clear()
            try:
                await self._cluster.refresh(all_topics=self._subscriptions.type is SubscriptionType.AUTO_PATTERN)
            except (KafkaError, OSError) as exc:
                log.debug("metadata refresh failed: %s", exc)
                wanted.set()
            else:
                self._on_metadata()
                self._fetcher.wakeup()
            await asyncio.sleep(backoff)

    def _on_metadata(self) -> None:
        """After a refresh: a pattern's matches and partition counts may ask for a rebalance."""
        subscriptions, membership = self._subscriptions, self._membership
        if subscriptions.type is SubscriptionType.AUTO_PATTERN:
            if subscriptions.match((n, t.is_internal) for n, t in self._cluster.topics.items()) and self._matched:
                membership.request_rejoin("the subscription pattern matches other topics now")
            self._matched = True
            self._cluster.want(subscriptions.topics)
            self._event.set()
        if self._snapshot is not None and membership.state is MemberState.STABLE:
            if self._metadata_snapshot() != self._snapshot:
                membership.request_rejoin("partition counts of subscribed topics changed")
                self._event.set()

    def _metadata_snapshot(self) -> dict[str, int | None]:
        """Partition counts of the topics a rebalance depends on (the leader watches every member's)."""
        topics = self._membership.group_topics if self._membership.is_leader else self._subscriptions.topics
        return {t: self._cluster.partitions_for(t) for t in topics}

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
        subscriptions = self._subscriptions
        missing = subscriptions.missing_positions()
        if missing and self._group is not None:
            versions = {tp: subscriptions.state(tp).version for tp in missing}
            committed = await self._group.committed(missing, deadline)
            missing = []
            for tp, offset in committed.items():
                state = subscriptions.get(tp)
                if state is None or state.version != versions[tp] or state.position is not None:
                    continue  # moved while we asked
                if offset is not None:
                    subscriptions.seek(tp, offset.offset, offset.leader_epoch)
                else:
                    missing.append(tp)
        if missing and subscriptions.default_reset == "none":
            raise NoOffsetForPartitionError(missing)
        for tp in missing:
            subscriptions.request_reset(tp)
        self._fetcher.wakeup()
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

    def subscribe(self, topics: Iterable[str] | str | re.Pattern[str], *, on_assign: RebalanceCallback | None = None,
                  on_revoke: RebalanceCallback | None = None, on_lost: RebalanceCallback | None = None) -> None:
        """Consume ``topics`` (or every topic a compiled pattern matches whole) as a
        member of ``group.id``; replaces an earlier subscription (topics or pattern). Takes
        effect by the next poll.

        A topic name that starts with ``^`` is a regular expression, as in librdkafka
        (``subscribe("^orders-.*")``; Kafka's names cannot start with ``^``); a list that
        holds one subscribes to every topic matching it or named by the others.

        Callbacks get ``(consumer, partitions)`` and run inside poll (or close): on_revoke
        before partitions go (commit there to hand over cleanly), on_assign once new ones
        arrive (seek there to choose where they start), on_lost when they were taken away
        already (the member fell out of the group: committing is no longer possible;
        defaults to on_revoke). Patterns see topics created later once metadata is
        refreshed (``metadata.max.age.ms``).

        Raises:
            InvalidGroupIdError: there is no ``group.id``.
            RuntimeError: the consumer assigned partitions itself (unsubscribe first).
            TypeError, InvalidTopicError: a topic name is not a str, or not a legal name.
        """
        self._started()
        if self._membership is None:
            raise InvalidGroupIdError("subscribe() needs a group.id; use assign() to consume without a group")
        before = (self._subscriptions.pattern, self._subscriptions.topics)
        topics = _topics_or_pattern(topics)
        if isinstance(topics, re.Pattern):
            self._subscriptions.subscribe_pattern(topics)
            self._matched = False
            self._metadata_wanted.set()
        else:
            self._subscriptions.subscribe(topics)
            self._cluster.want(topics)
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        if (self._subscriptions.pattern, self._subscriptions.topics) != before:
            self._membership.request_rejoin("the subscription changed")
        self._event.set()

    async def unsubscribe(self) -> None:
        """Stop consuming: revoke (callbacks run) and leave the group, or drop a manual
        assignment; positions are forgotten."""
        fetcher = self._started()
        if self._subscriptions.auto_assigned:
            await self._stop_joining()
            await self._drop(self._subscriptions.assigned(), lost=self._membership.lost)
            await self._group.leave("the consumer unsubscribed")
        fetcher.forget(self._subscriptions.assigned())
        self._subscriptions.unsubscribe()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly ``partitions``, without group membership; replaces an earlier ``assign``.

        Positions of partitions kept stay; new ones start at their committed offset (with
        ``group.id``) or per ``auto.offset.reset``.

        Raises:
            RuntimeError: the consumer subscribed (call :meth:`unsubscribe` first).
        """
        fetcher = self._started()
        partitions = [TopicPartition(*tp) for tp in partitions]
        if self._auto_commit and self._subscriptions.type is SubscriptionType.USER_ASSIGNED:
            self._commit_in_background(self._consumed(), None)  # Java commits before reassigning
        before = set(self._subscriptions.assigned())
        self._subscriptions.assign(partitions)
        fetcher.forget(before - set(partitions))
        self._cluster.want({tp.topic for tp in partitions})
        self._metadata_wanted.set()

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned to this consumer now."""
        return set(self._subscriptions.assigned())

    def subscription(self) -> set[str]:
        """The topics subscribed to (for a pattern, those it matches now)."""
        return set(self._subscriptions.topics)

    # -- rebalancing (in poll) -----------------------------------------------------------

    async def _step_group(self) -> None:
        """Apply a finished join, hand over lost partitions, and start a join when one is due."""
        group, membership = self._group, self._membership
        if group is None or not self._subscriptions.auto_assigned:
            return
        if group.failure is not None:
            raise group.failure
        join = self._join
        if join is not None and join.done():
            self._join = None
            await self._assigned(join.result())  # a join fails only for good: poll raises it
        if membership.lost and self._join is None:
            await self._drop(self._subscriptions.assigned(), lost=True)
        if self._join is None and membership.rejoin_reason is not None:
            pattern = self._subscriptions.type is SubscriptionType.AUTO_PATTERN
            if pattern and not self._matched:
                self._metadata_wanted.set()  # a pattern joins once it knows what it matches
                return
            owned = self._subscriptions.assigned()
            if membership.protocol is RebalanceProtocol.EAGER:
                await self._drop(owned, lost=False)
            else:  # cooperative: commit all (Java's onJoinPrepare), give up what is no longer subscribed
                await self._commit_before_rebalance()
                await self._drop([tp for tp in owned if tp.topic not in self._subscriptions.topics], lost=False)
            self._join = asyncio.get_running_loop().create_task(
                group.join(self._subscriptions.topics, self._subscriptions.assigned()), name="kproto-join")
            self._join.add_done_callback(lambda _: self._event.set())

    async def _assigned(self, assignment: Assignment) -> None:
        """This member's new assignment arrived: keep, revoke and add partitions, then on_assign."""
        subscriptions, membership = self._subscriptions, self._membership
        new = list(assignment.partitions)
        owned = subscriptions.assigned()
        new_set, owned_set = set(new), set(owned)
        revoked = [tp for tp in owned if tp not in new_set]
        if revoked:  # cooperative (eager members own nothing here): hand these over, then rejoin
            await self._drop(revoked, lost=False)
            membership.request_rejoin("partitions were revoked; the group rebalances again to assign them")
        added = [tp for tp in new if tp not in owned_set]
        subscriptions.set_assignment(new)
        watched = membership.group_topics | subscriptions.topics
        self._cluster.want(watched)
        try:  # the snapshot must hold counts as they are now, not "not fetched yet"
            await self._cluster.refresh(watched)
        except KafkaError as exc:
            log.debug("metadata refresh after a rebalance failed: %s", exc)
        self._snapshot = self._metadata_snapshot()
        if any(tp.topic not in subscriptions.topics for tp in new):
            membership.request_rejoin("the assignment holds topics no longer subscribed")
        self._fetcher.wakeup()
        log.info("group %r generation %d: assigned %s", membership.group_id, membership.generation_id, added)
        if self._callbacks["assign"] is not None:
            await run_in_caller(self._callbacks["assign"], self._face, sorted(added))

    async def _drop(self, partitions: list[TopicPartition], *, lost: bool) -> None:
        """Give up ``partitions``: auto-commit them (unless lost), run on_revoke (or on_lost).

        Committing revoked partitions here, not only before the rebalance, matters to
        cooperative members: they keep consuming while the group rebalances.
        """
        if lost:
            self._membership.lost = False
        if not partitions:
            return
        if not lost and self._auto_commit and self._membership.generation_id >= 0:
            consumed = self._consumed()
            await self._commit_logged({tp: consumed[tp] for tp in partitions if tp in consumed})
        callback = (self._callbacks["lost"] or self._callbacks["revoke"]) if lost else self._callbacks["revoke"]
        try:
            if callback is not None:
                await run_in_caller(callback, self._face, sorted(partitions))
        finally:
            gone = set(partitions)
            self._subscriptions.set_assignment(tp for tp in self._subscriptions.assigned() if tp not in gone)
            self._fetcher.forget(partitions)

    async def _commit_before_rebalance(self) -> None:
        """Auto-commit what was consumed while the generation still counts (Java's onJoinPrepare)."""
        if self._auto_commit and self._membership.generation_id >= 0:
            await self._commit_logged(self._consumed())

    async def _commit_logged(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        if not offsets:
            return
        try:
            await self._group.commit(offsets, self._deadline(None), as_member=self._subscriptions.auto_assigned)
        except KafkaError as exc:
            log.warning("group %r: auto-commit failed: %s", self._membership.group_id, exc)

    async def _stop_joining(self) -> None:
        join, self._join = self._join, None
        if join is not None:
            join.cancel()
            await asyncio.gather(join, return_exceptions=True)

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
            NoOffsetForPartitionError: a partition has no position, no committed offset,
                and ``auto.offset.reset`` is ``none``.
            RecordDeserializationError: a deserializer failed (the position stays at
                that record: seek past it).
            CorruptRecordError: a batch is corrupt (idem).
            KafkaError: any other error from fetching.
        """
        timeout = _seconds(timeout, timeout_ms)
        self._started()
        self._abandon_iteration()
        return await self._poll(timeout, max_records)

    async def _poll(self, timeout: float | None, max_records: int | None = None) -> list[ConsumerRecord]:
        fetcher = self._started()
        if self._subscriptions.type is SubscriptionType.NONE:
            raise RuntimeError("subscribe() or assign() before poll()")
        limit = self._max_poll_records if max_records is None else max_records
        deadline = None if timeout is None else time.monotonic() + timeout
        self._polling += 1  # waiting in poll is polling: max.poll.interval.ms counts from its end
        try:
            await self._run_commit_callbacks()
            self._maybe_auto_commit()
            while True:
                self._event.clear()
                await self._step_group()
                self._step_positions()
                records = fetcher.drain(limit)
                if records:
                    return records
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

    # -- commits ------------------------------------------------------------------------------

    def _require_group(self) -> GroupCoordinator:
        self._started()
        if self._group is None:
            raise InvalidGroupIdError("committed offsets belong to a group: set group.id")
        return self._group

    def _consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Positions to commit: past every record handed out (by iteration: yielded)."""
        consumed = self._subscriptions.all_consumed()
        for tp, record in self._unconsumed().items():
            if tp in consumed:
                consumed[tp] = OffsetAndMetadata(record.offset, "", record.leader_epoch)
        return consumed

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     timeout: float | None = None) -> None:
        """Commit ``offsets`` (default: the position of every assigned partition, i.e. past
        every record polled) and wait for the coordinator's answer.

        An offset is the next one to consume; give an :class:`~kproto.structs.OffsetAndMetadata`
        to store metadata with it.

        Raises:
            InvalidGroupIdError: there is no ``group.id``.
            CommitFailedError: the group rebalanced without this member.
            RebalanceInProgressError: the group is rebalancing: poll, then commit again.
            KafkaTimeoutError: no success within ``timeout`` seconds (None:
                ``default.api.timeout.ms``), retrying what can be retried.
        """
        group = self._require_group()
        await self._run_commit_callbacks()
        offsets = self._consumed() if offsets is None else _offsets(offsets)
        if offsets:
            await group.commit(offsets, self._deadline(timeout), as_member=self._subscriptions.auto_assigned)

    def commit_async(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Commit in the background; ``callback(offsets, error)`` runs in a later
        :meth:`poll`, :meth:`commit` or :meth:`close` (error None on success).

        Raises:
            InvalidGroupIdError: there is no ``group.id``.
        """
        self._require_group()
        self._commit_in_background(self._consumed() if offsets is None else _offsets(offsets), callback)

    def _commit_in_background(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                              callback: CommitCallback | None, *, auto: bool = False) -> None:
        if not offsets and callback is None:
            return
        # In line now (commits reach the coordinator in the order they are made), and one
        # attempt: a later commit carries newer offsets (Java's commitOffsetsAsync).
        committing = self._group.commit(offsets, self._deadline(None), as_member=self._subscriptions.auto_assigned,
                                        retry=False) if offsets else None

        async def commit() -> None:
            error = None
            try:
                if committing is not None:
                    await committing
            except KafkaError as exc:
                error = exc
                if auto and exc.retriable:  # Java: the next auto-commit comes after retry.backoff.ms
                    self._next_auto_commit = min(self._next_auto_commit, time.monotonic() + self._retry_backoff)
            if callback is not None:
                self._commit_results.append((callback, offsets, error))
                self._event.set()
            elif error is not None:
                log.warning("group %r: commit failed: %s", self._membership.group_id, error)

        task = asyncio.get_running_loop().create_task(commit())
        self._commits.add(task)
        task.add_done_callback(self._commits.discard)
        if committing is not None:  # cancelled before it awaited the commit (a close): that stops too
            task.add_done_callback(lambda _: committing.cancel())

    async def _run_commit_callbacks(self) -> None:
        while self._commit_results:
            callback, offsets, error = self._commit_results.pop(0)
            await run_in_caller(callback, offsets, error)

    def _maybe_auto_commit(self) -> None:
        """Every ``auto.commit.interval.ms``, commit in the background what earlier polls returned."""
        now = time.monotonic()
        if not self._auto_commit or now < self._next_auto_commit:
            return
        if self._subscriptions.auto_assigned and self._membership.state is not MemberState.STABLE:
            # Rebalancing: the commit before the rebalance covers it; look again after
            # retry.backoff.ms (as Java), not at once (a waiting poll would spin).
            self._next_auto_commit = now + self._retry_backoff
            return
        self._next_auto_commit = now + self._auto_commit_interval
        self._commit_in_background(self._consumed(), None, auto=True)

    async def committed(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (None where there is none).

        Raises:
            InvalidGroupIdError: there is no ``group.id``.
            KafkaTimeoutError: no answer within ``timeout`` seconds (None: ``default.api.timeout.ms``).
        """
        group = self._require_group()
        return await group.committed([TopicPartition(*tp) for tp in partitions], self._deadline(timeout))

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

    async def _close_group(self) -> None:
        if self._commits:
            await asyncio.wait(self._commits, timeout=max(self._closing_by - time.monotonic(), 0))
        await self._run_commit_callbacks()
        if self._subscriptions.auto_assigned:
            await self._stop_joining()
            await self._drop(self._subscriptions.assigned(), lost=self._membership.lost)
            await self._group.leave("the consumer is closing", self._closing_by)
        elif self._auto_commit:
            await self._commit_logged(self._consumed())


class _Iteration:
    """A polled batch that ``for``/``async for`` hands out one record at a time."""

    __slots__ = ("batch", "consumed")

    def __init__(self, batch: list[ConsumerRecord]) -> None:
        self.batch = batch
        self.consumed = 0  # records yielded so far


# -- the face for threads ------------------------------------------------------------------

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
                batch = self._portal.call(core._poll, None)
            except ClientClosedError:
                return
            iteration = core._iteration = _Iteration(batch)
            for i, record in enumerate(batch, 1):
                iteration.consumed = i
                yield record

    def close(self) -> None:
        """Close the consumer and let go of the background loop (which the sync clients
        share; the last one closed stops it). Idempotent."""
        if not self._portal.closed:
            try:
                self._portal.call(self._core.close)
            finally:
                self._portal.close()

    subscribe = blocking(AIOConsumer.subscribe)
    unsubscribe = blocking(AIOConsumer.unsubscribe)
    assign = blocking(AIOConsumer.assign)
    assignment = blocking(AIOConsumer.assignment)
    subscription = blocking(AIOConsumer.subscription)
    commit = blocking(AIOConsumer.commit)
    commit_async = blocking(AIOConsumer.commit_async)
    committed = blocking(AIOConsumer.committed)
    poll = blocking(AIOConsumer.poll)
    position = blocking(AIOConsumer.position)
    seek = blocking(AIOConsumer.seek)
    seek_to_beginning = blocking(AIOConsumer.seek_to_beginning)
    seek_to_end = blocking(AIOConsumer.seek_to_end)
    pause = blocking(AIOConsumer.pause)
    resume = blocking(AIOConsumer.resume)
    paused = blocking(AIOConsumer.paused)
    beginning_offsets = blocking(AIOConsumer.beginning_offsets)
    end_offsets = blocking(AIOConsumer.end_offsets)
    offsets_for_times = blocking(AIOConsumer.offsets_for_times)
