"""The consumer's commits: sync, async and automatic (:class:`Commits`, a part of
:class:`~kproto.consumer.AIOConsumer`).

What is committed by default is what was consumed: the position of every assigned
partition, or, while iterating, the first record not yet yielded. Commits go out in the
order they are made; :meth:`~Commits.commit_async` callbacks run in a later poll, commit
or close (in the caller's thread with :class:`~kproto.consumer.Consumer`), and
auto-commit sends in the background every ``auto.commit.interval.ms`` from poll, and
before each rebalance and on close (Java's ``ConsumerCoordinator``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kproto._loop import run_in_caller
from kproto.consumer.coordinator import GroupCoordinator
from kproto.consumer.membership import MemberState
from kproto.consumer.state import ConsumerState
from kproto.errors import InvalidGroupIdError, KafkaError
from kproto.structs import OffsetAndMetadata, TopicPartition

__all__ = ["CommitCallback", "Commits"]

log = logging.getLogger("kproto.consumer")

#: ``callback(offsets, error)`` of :meth:`AIOConsumer.commit_async` (error None on success).
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], BaseException | None], Any]


def _offsets(offsets: Mapping[TopicPartition, int | OffsetAndMetadata]) -> dict[TopicPartition, OffsetAndMetadata]:
    return {TopicPartition(*tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()}


class Commits(ConsumerState):
    """Commits; :class:`~kproto.consumer.AIOConsumer` holds the state (``_group``, the
    commits in flight ``_commits``, callbacks due ``_commit_results``, the auto-commit clock)."""

    async def committed(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (None where there is none).

        Raises:
            InvalidGroupIdError: there is no ``group.id``.
            KafkaTimeoutError: no answer within ``timeout`` seconds (None: ``default.api.timeout.ms``).
        """
        group = self._require_group()
        return await group.committed([TopicPartition(*tp) for tp in partitions], self._deadline(timeout))

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
