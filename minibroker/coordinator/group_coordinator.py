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

In a MiniCluster (Kafka's ``GroupCoordinator.onElection`` / ``onResignation`` and
``GroupMetadataManager.loadGroupsForPartition`` / ``removeGroupsForPartition``) a broker
holds only the groups of the ``__consumer_offsets`` partitions it leads. The broker calls
:meth:`GroupCoordinator.begin_load` when it becomes a partition's leader; until
:meth:`GroupCoordinator.finish_load` has replayed the partition's commits, its groups are
COORDINATOR_LOAD_IN_PROGRESS (:meth:`GroupCoordinator.status`). :meth:`GroupCoordinator.unload`
(the broker resigned) answers the groups' held JoinGroup and SyncGroup requests with
NOT_COORDINATOR and forgets them and their offsets. A commit is then written with
acks=all (the ``replicated_journal``): it counts, in memory, only once every ISR member
has it, as Kafka applies a commit when its append completes (``storeOffsets``'
``putCacheCallback``); a failure is answered as above, a timeout
(``offsets.commit.timeout.ms``) as COORDINATOR_NOT_AVAILABLE. Deletions and expiry
tombstones do not wait, as Kafka's classic ``cleanupGroupMetadata`` appends them with
acks=0.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from kproto.errors import (
    CoordinatorLoadInProgressError,
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
    RequestTimedOutError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from minibroker.config import DEFAULTS
from minibroker.coordinator.groups import Group, GroupConfig, GroupState, JoinResult, SyncResult
from minibroker.coordinator.offsets import CommittedOffset, Journal, OffsetEntry, OffsetStore
from minibroker.coordinator.offsets_log import partition_for

__all__ = ["GroupCoordinator", "PartitionLoad", "ReplicatedJournal", "TxnJournal"]

log = logging.getLogger("minibroker.groups")


#: A cluster's journal of commits: appends a group's entries to its partition of
#: ``__consumer_offsets`` and waits for acks=all; returns 0 or the append's error code
#: (or raises the error of an append that could not be made).
ReplicatedJournal = Callable[[str, "list[OffsetEntry]"], Awaitable[int]]
#: The journal of transactional commits (TxnOffsetCommit): ``(group, entries, producer id,
#: producer epoch)`` appended as the producer's transactional batch (acks=all in a
#: cluster); returns 0 or the append's error code, or raises as :data:`ReplicatedJournal`.
TxnJournal = Callable[[str, "list[OffsetEntry]", int, int], Awaitable[int]]

# Kafka's GroupMetadataManager.storeOffsets: the error of the append to __consumer_offsets
# -> what the coordinator answers (any other code is answered as it is). REQUEST_TIMED_OUT
# (acks=all not reached within offsets.commit.timeout.ms) is COORDINATOR_NOT_AVAILABLE as
# in KIP-848's coordinator runtime (GroupCoordinatorService.handleOperationException) and
# the transaction coordinator: a retriable error, so the client retries the commit.
_APPEND_ERRORS = {
    UnknownTopicOrPartitionError.code: CoordinatorNotAvailableError.code,
    RequestTimedOutError.code: CoordinatorNotAvailableError.code,
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


class PartitionLoad:
    """One ``__consumer_offsets`` partition whose groups this broker holds (cluster mode)."""

    __slots__ = ("done", "partition")

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.done = False


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
        replicated_journal: a cluster broker's: commits go there instead of ``journal`` and
            count once it returns 0 (acks=all). With it, only the groups of the
            partitions loaded here are held (see the module docstring).
    """

    def __init__(self, config: Mapping[str, Any] | Any, *, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], int] = _wall_clock_ms, journal: Journal | None = None,
                 replicated_journal: ReplicatedJournal | None = None, txn_journal: TxnJournal | None = None):
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
        self._replicated = replicated_journal
        self._txn_journal = txn_journal
        # Cluster mode: the offsets partitions led here, loading or loaded (Kafka's
        # ownedPartitions and loadingPartitions), and how many the topic has.
        self._owned: dict[int, PartitionLoad] = {}
        self._offsets_partitions = 0

    def get(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def load_offsets(self, entries: Iterable[OffsetEntry],
                     pending: Mapping[int, list[OffsetEntry]] | None = None) -> None:
        """Offsets read back on start; their groups come back Empty, as in Kafka.
        ``pending``: the transactional commits of transactions still open (producer id ->
        entries), held until their marker (:meth:`complete_txn`)."""
        self.offsets.replay(entries)
        for producer_id, held in (pending or {}).items():
            self.offsets.stage_txn(producer_id, held)
        for group_id in [*self.offsets.groups(), *self.offsets.pending_groups()]:
            if group_id not in self.groups:
                self._create(group_id)

    # -- ownership (cluster mode) ----------------------------------------------------------

    def status(self, group_id: str) -> int:
        """0 when this coordinator holds the group; COORDINATOR_LOAD_IN_PROGRESS while its
        partition of ``__consumer_offsets`` loads; NOT_COORDINATOR when that partition is
        not led here. A single broker holds every group."""
        if self._replicated is None:
            return 0
        load = self._owned.get(self._partition_of(group_id)) if self._offsets_partitions else None
        if load is None:
            return NotCoordinatorError.code
        return 0 if load.done else CoordinatorLoadInProgressError.code

    def loading(self) -> bool:
        """Whether some partition's groups are being loaded (ListGroups says so)."""
        return any(not load.done for load in self._owned.values())

    def _partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self._offsets_partitions)

    def begin_load(self, partition: int, partitions: int) -> PartitionLoad | None:
        """This broker leads ``partition`` of ``__consumer_offsets`` (of ``partitions``):
        its groups are COORDINATOR_LOAD_IN_PROGRESS until :meth:`finish_load` with the
        returned handle. None when the partition is held already (a re-elected leader
        keeps its groups: its log is still the truth)."""
        self._offsets_partitions = partitions
        if partition in self._owned:
            return None
        load = self._owned[partition] = PartitionLoad(partition)
        log.info("offsets partition %d: loading its groups", partition)
        return load

    def finish_load(self, load: PartitionLoad, entries: Iterable[OffsetEntry],
                    pending: Mapping[int, list[OffsetEntry]] | None = None) -> bool:
        """Replay the partition's commits read from its log (:meth:`load_offsets`); its
        groups are answered from now on. False (nothing done) when the partition was
        unloaded, or loaded again, meanwhile."""
        if self._owned.get(load.partition) is not load:
            return False
        self.load_offsets(entries, pending)
        load.done = True
        log.info("offsets partition %d: loaded %d group(s)", load.partition,
                 sum(1 for g in self.groups if self._partition_of(g) == load.partition))
        return True

    def unload(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its groups' held JoinGroup and SyncGroup
        are answered NOT_COORDINATOR, the groups and their offsets forgotten (Kafka's
        ``removeGroupsForPartition``). The log keeps them for the next leader."""
        if self._owned.pop(partition, None) is None:
            return
        gone = {g for g in (*self.groups, *self.offsets.groups()) if self._partition_of(g) == partition}
        for group_id in gone:
            group = self.groups.get(group_id)
            if group is not None:
                group.abandon(NotCoordinatorError.code)
                self._forget(group)
            self.offsets.forget(group_id)
        log.info("offsets partition %d: unloaded %d group(s)", partition, len(gone))

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
                       offsets: Iterable[tuple[str, int, CommittedOffset]]) -> int | Awaitable[int]:
        """Validate an OffsetCommit and apply it; returns 0 or the error for every partition,
        or, with a ``replicated_journal`` (a cluster) and a valid commit, an awaitable of
        it: the offsets count once it completes with 0.

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
        if code != 0:
            return code
        if self._replicated is not None:
            return self._commit_replicated(group_id, [(group_id, t, p, c) for t, p, c in offsets])
        return self._write(group_id, "commit", self.offsets.commit, group_id, offsets)

    async def txn_commit_offsets(self, group_id: str, *, producer_id: int, producer_epoch: int, member_id: str,
                                 group_instance_id: str | None, generation_id: int,
                                 offsets: Iterable[tuple[str, int, CommittedOffset]]) -> int:
        """TxnOffsetCommit (Kafka's ``handleTxnCommitOffsets``): validate, write the commits
        as the producer's transactional batch, then hold them until its transaction ends
        (:meth:`complete_txn`); 0 or the error for every partition.

        An unknown group is created Empty. Without a member id, generation or instance id
        (clients before KIP-447) the commit is accepted in any state of the group, as
        Kafka's ``validateOffsetCommit`` does for transactional commits; with them, it
        must come from a current member of the current generation.
        """
        group = self.groups.get(group_id)
        if group is None:
            group = self._create(group_id)
        if group.state is GroupState.Dead:
            return CoordinatorNotAvailableError.code
        if generation_id >= 0 or member_id or group_instance_id is not None:
            code = group.validate_commit(member_id=member_id, group_instance_id=group_instance_id,
                                         generation_id=generation_id, now=self.clock())
            self._rearm(group)
            if code != 0:
                return code
        if self._txn_journal is None:
            raise RuntimeError("transactional commits need a txn_journal")
        entries = [(group_id, t, p, c) for t, p, c in offsets]
        error: object
        try:
            error = await self._txn_journal(group_id, entries, producer_id, producer_epoch)
            code = _APPEND_ERRORS.get(error, error)
        except (KafkaError, OSError) as exc:
            code, error = _write_error_code(exc), exc
        if code == 0 and self.status(group_id) != 0:
            code = NotCoordinatorError.code
        if code == 0:
            self.offsets.stage_txn(producer_id, entries)
        else:
            log.warning("group %r: could not write the transactional commit of producer %d (answered error %d): %s",
                        group_id, producer_id, code, error)
        return code

    def complete_txn(self, producer_id: int, commit: bool, partition: int, partitions: int) -> int:
        """The transaction of ``producer_id`` ended with a marker on ``partition`` of
        ``__consumer_offsets`` (of ``partitions``): the held commits of that partition's
        groups are committed or dropped (Kafka's ``handleTxnCompletion``); returns how many."""
        decided = self.offsets.complete_txn(producer_id, commit,
                                            lambda g: partition_for(g, partitions) == partition)
        if decided:
            log.info("producer %d: %d transactional commit(s) %s", producer_id, decided,
                     "committed" if commit else "aborted")
        return decided

    async def _commit_replicated(self, group_id: str, entries: list[OffsetEntry]) -> int:
        """A cluster's commit: written with acks=all, applied once acknowledged (Kafka's
        ``storeOffsets``: the cache is updated in the append's completion callback)."""
        assert self._replicated is not None
        error: object
        try:
            error = await self._replicated(group_id, entries)
            code = _APPEND_ERRORS.get(error, error)
        except (KafkaError, OSError) as exc:
            code, error = _write_error_code(exc), exc
        if code == 0 and self.status(group_id) != 0:
            code = error = NotCoordinatorError.code  # unloaded while it waited: the next leader reads it
        if code == 0:
            self.offsets.replay(entries)
        else:
            log.warning("group %r: could not write its commit (answered error %d): %s", group_id, code, error)
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
        self._forget(group)

    def _forget(self, group: Group) -> None:
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
                    and not self.offsets.has_offsets(group_id)
                    and group_id not in self.offsets.pending_groups()):  # Kafka's hasPendingOffsetCommits
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
