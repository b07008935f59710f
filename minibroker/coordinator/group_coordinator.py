"""The group coordinator: every classic group of this broker, their timers, and offsets.

This is the thin asyncio driver over :class:`~minibroker.coordinator.groups.Group`, which
makes every decision. Held JoinGroup and SyncGroup requests are futures that the group's
``reply`` callbacks settle, so a handler simply awaits its answer (the server answers each
connection in order, so this holds back that connection only). Each group has at most one
timer (``loop.call_later``), re-armed after every call for the group's next deadline.
The clock is injectable; it must agree with the event loop's on how long a second is.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kproto.errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    NonEmptyGroupError,
    NotCoordinatorError,
    UnknownMemberIdError,
)
from minibroker.coordinator.groups import Group, GroupConfig, GroupState, JoinResult, SyncResult
from minibroker.coordinator.offsets import CommittedOffset, Journal, OffsetEntry, OffsetStore

__all__ = ["GroupCoordinator"]

log = logging.getLogger("minibroker.groups")


def _settle(future: asyncio.Future) -> Callable[[object], None]:
    def reply(result: object) -> None:
        if not future.done():  # the waiting handler may be gone (connection closed)
            future.set_result(result)
    return reply


class GroupCoordinator:
    """Every group this broker coordinates (all of them: one broker), and their offsets.

    Args:
        config: broker settings; reads ``group.initial.rebalance.delay.ms``,
            ``group.min.session.timeout.ms`` and ``group.max.session.timeout.ms``.
        clock: monotonic seconds; injectable for tests.
        journal: where committed offsets are written before they count (see
            :class:`~minibroker.coordinator.offsets.OffsetStore`); None keeps them in memory.
    """

    def __init__(self, config: Mapping[str, Any] | Any, *, clock: Callable[[], float] = time.monotonic,
                 journal: Journal | None = None):
        self.group_config = GroupConfig(
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
        )
        self.clock = clock
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore(journal)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._seen: dict[str, tuple] = {}  # what was last logged of each group

    def get(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def load_offsets(self, entries: Iterable[OffsetEntry]) -> None:
        """Offsets read back on start; their groups come back Empty, as in Kafka."""
        self.offsets.replay(entries)
        for group_id in self.offsets.groups():
            if group_id not in self.groups:
                self._create(group_id)

    def _create(self, group_id: str) -> Group:
        group = self.groups[group_id] = Group(group_id, self.group_config)
        return group

    # -- held requests --------------------------------------------------------------------

    async def join(self, group_id: str, **join: Any) -> JoinResult:
        """JoinGroup; ``join`` holds :meth:`Group.join`'s keyword arguments but ``now`` and ``reply``."""
        group = self.groups.get(group_id)
        if group is None:
            if join["member_id"]:
                return JoinResult(error_code=UnknownMemberIdError.code, member_id=join["member_id"])
            group = self._create(group_id)
        future = asyncio.get_running_loop().create_future()
        group.join(**join, now=self.clock(), reply=_settle(future))
        self._rearm(group)
        return await future

    async def sync(self, group_id: str, **sync: Any) -> SyncResult:
        """SyncGroup; ``sync`` holds :meth:`Group.sync`'s keyword arguments but ``now`` and ``reply``."""
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(error_code=UnknownMemberIdError.code)
        future = asyncio.get_running_loop().create_future()
        group.sync(**sync, now=self.clock(), reply=_settle(future))
        self._rearm(group)
        return await future

    # -- immediate answers ----------------------------------------------------------------

    def heartbeat(self, group_id: str, *, member_id: str, group_instance_id: str | None, generation_id: int) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return UnknownMemberIdError.code
        code = group.heartbeat(member_id=member_id, group_instance_id=group_instance_id,
                               generation_id=generation_id, now=self.clock())
        self._rearm(group)
        return code

    def leave(self, group_id: str, *, member_id: str, group_instance_id: str | None) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return UnknownMemberIdError.code
        code = group.leave(member_id=member_id, group_instance_id=group_instance_id, now=self.clock())
        self._rearm(group)
        return code

    def commit_offsets(self, group_id: str, *, member_id: str, group_instance_id: str | None, generation_id: int,
                       offsets: Iterable[tuple[str, int, CommittedOffset]]) -> int:
        """Validate an OffsetCommit and apply it; returns 0 or the error for every partition.

        A commit to an unknown group creates it, Empty, when it comes from a simple
        consumer (generation < 0), as Kafka does; otherwise it is ILLEGAL_GENERATION.
        """
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return IllegalGenerationError.code
            group = self._create(group_id)
        code = group.validate_commit(member_id=member_id, group_instance_id=group_instance_id,
                                     generation_id=generation_id, now=self.clock())
        self._rearm(group)
        if code == 0:
            try:
                self.offsets.commit(group_id, offsets)
            except OSError:
                # Kafka answers NOT_COORDINATOR when the offsets log cannot be written.
                log.exception("group %r: could not write its offsets", group_id)
                return NotCoordinatorError.code
        return code

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups for one group: NON_EMPTY_GROUP while it has members."""
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.Dead:
            if self.offsets.has_offsets(group_id):  # offsets without a group object
                self.offsets.delete_group(group_id)
                return 0
            return GroupIdNotFoundError.code
        if group.state is not GroupState.Empty:
            return NonEmptyGroupError.code
        group.transition(GroupState.Dead)
        del self.groups[group_id]
        self._seen.pop(group_id, None)
        self.offsets.delete_group(group_id)
        timer = self._timers.pop(group_id, None)
        if timer is not None:
            timer.cancel()
        return 0

    # -- timers ---------------------------------------------------------------------------

    def _rearm(self, group: Group) -> None:
        seen = (group.state, group.generation_id, len(group.members))
        if self._seen.get(group.group_id) != seen:
            self._seen[group.group_id] = seen
            log.info("group %r: %s, generation %d, %d members", group.group_id, seen[0].value, seen[1], seen[2])
        timer = self._timers.pop(group.group_id, None)
        if timer is not None:
            timer.cancel()
        deadline = group.next_deadline()
        if deadline is not None:
            delay = max(deadline - self.clock(), 0.0)
            self._timers[group.group_id] = asyncio.get_running_loop().call_later(delay, self._fire, group.group_id)

    def _fire(self, group_id: str) -> None:
        self._timers.pop(group_id, None)
        group = self.groups.get(group_id)
        if group is not None:
            group.expire(self.clock())
            self._rearm(group)

    def close(self) -> None:
        """Cancel every timer and answer every held request with COORDINATOR_NOT_AVAILABLE."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for group in self.groups.values():
            group.abandon(CoordinatorNotAvailableError.code)
