"""The group coordinator: every classic group of this broker, their timers, and offsets.

This is the thin asyncio driver over :class:`~minibroker.coordinator.groups.Group`, which
makes every decision. Held JoinGroup and SyncGroup requests are futures that the group's
``reply`` callbacks settle, so a handler simply awaits its answer (the server answers each
connection in order, so this holds back that connection only). Each group has at most one
timer (``loop.call_later``), re-armed after every call for the group's next deadline.
The clock is injectable; it must agree with the event loop's on how long a second is.

Expiry (Kafka's ``GroupMetadataManager.cleanupGroupMetadata`` and
``GroupMetadata.removeExpiredOffsets``, KIP-211): every
``offsets.retention.check.interval.ms`` the broker calls :meth:`GroupCoordinator.expire`.
A committed offset expires ``offsets.retention.minutes`` after

- the group became Empty, for a group of members that is Empty now (while it has
  members its offsets never expire, however old they are);
- its commit, for a standalone consumer's group (no protocol type: only ever committed
  with generation -1), for a group read back on start (minibroker keeps no record of
  when it became Empty, so, as Kafka without a state timestamp, the commit counts), and,
  in a Stable ``consumer`` group, for topics that no member subscribes to any more
  (KIP-496).

Expired offsets are deleted with tombstones in ``__consumer_offsets``, so they stay gone
after a restart. Then a group that is Empty and holds no offsets is Dead and forgotten:
also a group that was only joined and left, at the first check after it emptied.

A write to ``__consumer_offsets`` that fails (a full disk, an offline partition, the
topic cannot be created) changes nothing in memory (the journal is written first) and
is answered as Kafka's ``GroupMetadataManager.storeOffsets`` maps the append's error:
KAFKA_STORAGE_ERROR and NOT_LEADER_OR_FOLLOWER become NOT_COORDINATOR,
UNKNOWN_TOPIC_OR_PARTITION and NOT_ENOUGH_REPLICAS(_AFTER_APPEND) COORDINATOR_NOT_AVAILABLE,
MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE and INVALID_FETCH_SIZE INVALID_COMMIT_OFFSET_SIZE.
The first two are retriable: a client looks the coordinator up again and retries.
Membership (JoinGroup, SyncGroup) is not written anywhere, so it cannot fail this way.
Expiry tombstones that cannot be written are tried again at the next check.
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
    InvalidCommitOffsetSizeError,
    InvalidFetchSizeError,
    KafkaCodeError,
    KafkaError,
    KafkaStorageError,
    MessageTooLargeError,
    NonEmptyGroupError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RecordListTooLargeError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from minibroker.config import DEFAULTS
from minibroker.coordinator.groups import Group, GroupConfig, GroupState, JoinResult, SyncResult
from minibroker.coordinator.offsets import CommittedOffset, Journal, OffsetEntry, OffsetStore

__all__ = ["GroupCoordinator"]

log = logging.getLogger("minibroker.groups")


# Kafka's GroupMetadataManager.storeOffsets: the error of the append to __consumer_offsets
# -> what the coordinator answers (any other code is answered as it is).
_APPEND_ERRORS = {
    UnknownTopicOrPartitionError.code: CoordinatorNotAvailableError.code,
    NotEnoughReplicasError.code: CoordinatorNotAvailableError.code,
    NotEnoughReplicasAfterAppendError.code: CoordinatorNotAvailableError.code,
    NotLeaderOrFollowerError.code: NotCoordinatorError.code,
    KafkaStorageError.code: NotCoordinatorError.code,
    MessageTooLargeError.code: InvalidCommitOffsetSizeError.code,
    RecordListTooLargeError.code: InvalidCommitOffsetSizeError.code,
    InvalidFetchSizeError.code: InvalidCommitOffsetSizeError.code,
}


def _write_error_code(exc: Exception) -> int:
    """The coordinator's answer to a failed write of ``__consumer_offsets`` (see above)."""
    if isinstance(exc, KafkaCodeError):
        return _APPEND_ERRORS.get(exc.code, exc.code)
    return NotCoordinatorError.code  # an OSError that escaped the log: a storage error


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _setting(config: Mapping[str, Any] | Any, name: str) -> Any:
    try:
        return config[name]
    except KeyError:  # a partial mapping (tests): Kafka's default
        return DEFAULTS[name][0]


def _settle(future: asyncio.Future) -> Callable[[object], None]:
    def reply(result: object) -> None:
        if not future.done():  # the waiting handler may be gone (connection closed)
            future.set_result(result)
    return reply


class GroupCoordinator:
    """Every group this broker coordinates (all of them: one broker), and their offsets.

    Args:
        config: broker settings; reads ``group.initial.rebalance.delay.ms``,
            ``group.min.session.timeout.ms``, ``group.max.session.timeout.ms`` and
            ``offsets.retention.minutes``.
        clock: monotonic seconds; injectable for tests.
        wall_clock: milliseconds since the epoch, the clock of commit timestamps and of
            offset expiry; injectable for tests.
        journal: where committed offsets are written before they count (see
            :class:`~minibroker.coordinator.offsets.OffsetStore`); None keeps them in memory.
    """

    def __init__(self, config: Mapping[str, Any] | Any, *, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], int] = _wall_clock_ms, journal: Journal | None = None):
        self.group_config = GroupConfig(
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
        )
        self.offsets_retention_ms = _setting(config, "offsets.retention.minutes") * 60_000
        self.clock = clock
        self.wall_clock = wall_clock
        self.groups: dict[str, Group] = {}
        self._empty_since: dict[str, int] = {}  # wall ms at which a group last became Empty
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
            return self._write(group_id, "commit", self.offsets.commit, group_id, offsets)
        return code

    def _write(self, group_id: str, what: str, change: Callable[..., None], *args: Any) -> int:
        """Apply one change of the offset store: 0, or the error answered when its write
        to ``__consumer_offsets`` failed (memory is then unchanged, see the module docstring)."""
        try:
            change(*args)
        except (KafkaError, OSError) as exc:
            code = _write_error_code(exc)
            log.warning("group %r: could not write the %s of its offsets (answered error %d): %s",
                        group_id, what, code, exc)
            return code
        return 0

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups for one group: NON_EMPTY_GROUP while it has members."""
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.Dead:
            if self.offsets.has_offsets(group_id):  # offsets without a group object
                return self._write(group_id, "deletion", self.offsets.delete_group, group_id)
            return GroupIdNotFoundError.code
        if group.state is not GroupState.Empty:
            return NonEmptyGroupError.code
        code = self._write(group_id, "deletion", self.offsets.delete_group, group_id)
        if code == 0:
            self._remove(group)
        return code

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> int:
        """OffsetDelete's deletion of some committed partitions of a group: 0 or the error."""
        return self._write(group_id, "deletion", self.offsets.delete_partitions, group_id, partitions)

    def delete_topic(self, topic: str) -> None:
        """Forget a deleted topic's offsets in every group, as Kafka does. A group whose
        tombstones cannot be written keeps them (in memory as in the log), logged."""
        for group_id in list(self.offsets.groups()):
            self._write(group_id, f"deletion for topic {topic!r}",
                        self.offsets.delete_partitions, group_id,
                        [key for key in self.offsets.committed(group_id) if key[0] == topic])

    def _remove(self, group: Group) -> None:
        """An Empty group is Dead and forgotten (its offsets are gone already)."""
        group.transition(GroupState.Dead)
        del self.groups[group.group_id]
        self._seen.pop(group.group_id, None)
        self._empty_since.pop(group.group_id, None)
        timer = self._timers.pop(group.group_id, None)
        if timer is not None:
            timer.cancel()

    # -- expiry ---------------------------------------------------------------------------

    def expire(self) -> int:
        """Delete expired offsets, then forget Empty groups left without offsets (see the
        module docstring); returns how many groups went."""
        now = self.wall_clock()
        removed = 0
        for group_id in [*self.groups, *(g for g in self.offsets.groups() if g not in self.groups)]:
            group = self.groups.get(group_id)
            expired = [key for key, committed in self.offsets.committed(group_id).items()
                       if self._expired(group, key[0], committed, now)]
            if expired:
                if self._write(group_id, "expiry", self.offsets.delete_partitions, group_id, expired):
                    continue  # kept in memory as in the log; the next check tries again
                log.info("group %r: %d committed offsets expired", group_id, len(expired))
            # A KIP-394 member id handed out moments ago is about to join: wait for it
            # (or its expiry) rather than make it start over.
            if (group is not None and group.state is GroupState.Empty and not group.pending_members
                    and not self.offsets.has_offsets(group_id)):
                self._remove(group)
                log.info("group %r: Empty without offsets, removed (Dead)", group_id)
                removed += 1
        return removed

    def _expired(self, group: Group | None, topic: str, committed: CommittedOffset, now: int) -> bool:
        """Kafka's ``GroupMetadata.removeExpiredOffsets`` for one committed partition."""
        if group is None or group.protocol_type is None:  # a standalone consumer's offsets
            since = committed.commit_timestamp
        elif group.state is GroupState.Empty:
            since = self._empty_since.get(group.group_id, committed.commit_timestamp)
        elif group.state is GroupState.Stable and group.protocol_type == "consumer":
            subscribed = group.subscribed_topics()
            if subscribed is None or topic in subscribed:
                return False
            since = committed.commit_timestamp  # KIP-496: a topic no member reads any more
        else:
            return False
        return now - since >= self.offsets_retention_ms

    # -- timers ---------------------------------------------------------------------------

    def _rearm(self, group: Group) -> None:
        if group.state is GroupState.Empty:
            self._empty_since.setdefault(group.group_id, self.wall_clock())
        else:
            self._empty_since.pop(group.group_id, None)
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
