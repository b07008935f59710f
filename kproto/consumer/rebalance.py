"""The consumer's group membership seen from poll: subscribing, and the rebalances it
orchestrates (:class:`Rebalancing`, a part of :class:`~kproto.consumer.AIOConsumer`).

With ``group.id``, :meth:`~Rebalancing.subscribe` joins the group (Java's classic
protocol; the member's state machine is :mod:`~kproto.consumer.membership`, its requests
:mod:`~kproto.consumer.coordinator`). Heartbeats run in the background; joining,
rebalance callbacks and auto-commits happen in poll, in the caller's context, as in Java.
Eager assignors (range, roundrobin, or any mix with them) revoke every partition before
a rebalance; with cooperative-sticky alone only the partitions that move are revoked, and
the others keep being fetched and returned while the group rebalances (KIP-429). Before
each rebalance and on close, auto-commit commits what was consumed. Without a group,
:meth:`~Rebalancing.assign` picks the partitions.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from kproto._loop import run_in_caller
from kproto.consumer.assignors import ASSIGNORS, Assignor, RebalanceProtocol
from kproto.consumer.membership import MemberState
from kproto.consumer.protocol import Assignment
from kproto.consumer.state import ConsumerState
from kproto.consumer.subscription import SubscriptionType
from kproto.errors import InvalidGroupIdError, KafkaError
from kproto.structs import TopicPartition, check_topic

__all__ = ["RebalanceCallback", "Rebalancing", "assignors", "topics_or_pattern"]

log = logging.getLogger("kproto.consumer")

#: ``on_assign(consumer, partitions)``, ``on_revoke``, ``on_lost``: plain or async functions.
RebalanceCallback = Callable[[Any, list[TopicPartition]], Any]


def assignors(names: Iterable[Any]) -> list[Assignor]:
    """``partition.assignment.strategy``: names, or :class:`Assignor` instances as they are."""
    return [ASSIGNORS[n]() if isinstance(n, str) else n for n in names]


def topics_or_pattern(topics: Iterable[str] | str | re.Pattern[str]) -> list[str] | re.Pattern[str]:
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


class Rebalancing(ConsumerState):
    """Subscription, assignment and rebalances; :class:`~kproto.consumer.AIOConsumer`
    holds the state (``_membership``, ``_group``, the running ``_join``, ``_callbacks``)."""

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
        topics = topics_or_pattern(topics)
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

    def _group_idle(self) -> bool:
        """:meth:`_step_group` has nothing to do now: no failure to raise, no finished join to
        apply, no lost partitions to hand over and no join to start."""
        group, membership = self._group, self._membership
        if group is None or membership is None or not self._subscriptions.auto_assigned:
            return True
        if group.failure is not None:
            return False
        join = self._join
        if join is not None:
            return not join.done()
        return not membership.lost and membership.rejoin_reason is None

    async def _step_group(self) -> None:
        """Apply a finished join, hand over lost partitions, and start a join when one is due."""
        group, membership = self._group, self._membership
        if group is None or membership is None or self._group_idle():
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
            self._metrics.joining()  # observability: rebalance-latency starts
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
        self._metrics.rebalanced()  # observability: rebalance-total, rebalance-latency
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

    async def _stop_joining(self) -> None:
        join, self._join = self._join, None
        if join is not None:
            join.cancel()
            await asyncio.gather(join, return_exceptions=True)

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
