"""One partition's replica on one broker: its role, the ISR, the high watermark, acks=all.

Theory of operation (Kafka's ``kafka.cluster.Partition`` and ``Replica``, with
``ReplicaManager``'s DelayedProduce purgatory). Pure: no sockets, no clock of its own
(every call that needs the time is given ``now_ms``); the log is the local
:class:`~minibroker.log.PartitionLog`, or None when this broker hosts no replica.

- **Role.** :class:`ReplicaRole` is the state; :data:`TRANSITIONS` lists the legal moves
  and an illegal one raises :class:`~kproto.errors.IllegalTransitionError`. The role
  follows the controller's :class:`~minibroker.cluster.metadata.PartitionRegistration`
  (:meth:`Partition.apply_registration`): a replica named leader is LEADER, another
  replica is FOLLOWER (also while the partition has no leader), a broker outside
  ``replicas`` is NONE. A registration older than the one held (leader epoch or
  partition epoch) is ignored, as Kafka's ``makeLeader``/``makeFollower`` do. A single
  MiniBroker's partitions are *solo* (:meth:`Partition.solo`): LEADER with replicas = ISR
  = this broker, so the high watermark is the log end offset and every answer is the
  single broker's.
- **Leader.** LEO is the log's end offset; the high watermark is the smallest LEO over
  the ISR, the leader's own included, and never moves backwards (``maybeIncrementLeaderHW``).
  Each follower's :class:`FollowerState` is updated by its Fetch
  (:meth:`Partition.on_follower_fetch`; a fetch at offset ``o`` says its LEO is ``o``)
  with Kafka's caught-up time rule (``Replica.updateFetchStateOrThrow``): ``o`` at the
  leader's LEO now → caught up now; ``o`` at least the leader's LEO at its previous fetch
  → caught up as of that fetch. :meth:`Partition.isr_change` proposes the next ISR:
  a member whose LEO differs from the leader's and that has not been caught up for
  ``replica.lag.time.max.ms`` leaves (``isFollowerOutOfSync``); a replica joins when its
  LEO reaches the high watermark and the start offset of the leader's current epoch and
  its broker is eligible with the broker epoch it fetches with (``isFollowerInSync``,
  ``isReplicaIsrEligible``, KIP-903). The proposal goes to the controller as an
  AlterPartition; the ISR changes when the committed registration comes back.
- **Becoming leader** (a new leader epoch): ``(epoch, LEO)`` joins the leader epoch
  cache (``maybeAssignEpochStartOffset``), follower states are reset (LEO unknown,
  caught up now for ISR members so that a live follower is not dropped at once:
  ``Replica.resetReplicaState``), the high watermark is re-derived and
  :attr:`Partition.on_become_leader` is called (the broker rebuilds producer state).
- **Purgatory** (``DelayedProduce.tryComplete`` → ``Partition.checkEnoughReplicasReachOffset``):
  :meth:`Partition.wait_for_ack` resolves once the high watermark reaches the offset,
  with 0 when the ISR then has at least ``min.insync.replicas`` members and
  NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) when it shrank below meanwhile; losing leadership
  resolves every waiter with NOT_LEADER_OR_FOLLOWER (6).
- **DeleteRecords purgatory** (Kafka's ``DelayedDeleteRecords``):
  :meth:`Partition.wait_for_low_watermark` resolves once the low watermark, the smallest
  log start offset of the leader and of the followers on live brokers (each follower's
  comes with its fetches), reaches the requested offset; losing leadership resolves it
  with NOT_LEADER_OR_FOLLOWER.
- **Fencing** (KIP-320, ``Partition.checkCurrentLeaderEpoch``): a request's
  ``current_leader_epoch`` of -1 is not checked; older than ours → FENCED_LEADER_EPOCH,
  newer → UNKNOWN_LEADER_EPOCH; checked before the role, as Kafka does.
- **Reads from the closest replica** (KIP-392): :meth:`Partition.preferred_read_replica`
  is the leader's choice for a consumer in a rack (Kafka's ``RackAwareReplicaSelector``
  over ``findPreferredReadReplica``'s candidates: in the ISR, live, holding the offset);
  :meth:`Partition.check_leader` with ``require_leader=False`` lets a follower serve a
  consumer.
- **Last stable offset** (KIP-98, Kafka's ``UnifiedLog.lastStableOffset``):
  :attr:`Partition.last_stable_offset` is the high watermark, or the first unstable offset
  when that is below it (the broker's producer state gives it through
  :attr:`Partition.first_unstable_offset`: the earliest transaction open, or completed
  with its marker not yet below the high watermark), on a leader and on a follower alike.
- **Follower.** Batches are appended as the leader wrote them
  (:meth:`Partition.append_as_follower`; :attr:`Partition.on_follower_append` then gives
  them to the broker, which keeps its producer and transaction state as Kafka's
  ``appendAsFollower`` does, so that a follower made leader has its LSO at once); the high watermark is the leader's, capped by
  the own LEO, and the log start follows the leader's (DeleteRecords and retention reach
  followers). Truncation after a leader change is :meth:`Partition.truncation_offset`
  (KIP-101, KIP-279: a pure rule; the fetcher asks the leader and does the I/O) and
  :meth:`Partition.truncate_to`.

Facts: KIP-101 (leader epochs replace the high watermark for truncation), KIP-279
(OffsetsForLeaderEpoch rounds for fast leader failover), KIP-320 (fencing by
``current_leader_epoch``), KIP-497 (AlterIsr/AlterPartition: the leader proposes, the
controller commits), KIP-392 (fetch from the closest replica), KIP-595 (diverging epoch in
Fetch), KIP-903 (broker epochs in AlterPartition). Not modelled: KIP-497's "maximal ISR" (pending ISR changes are not
counted: metadata delivery is synchronous in a MiniCluster), KIP-841's waiting of the
high watermark for a caught-up replica about to join, KIP-966.
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kproto.errors import (
    FencedLeaderEpochError,
    IllegalTransitionError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)

if TYPE_CHECKING:
    from minibroker.cluster.metadata import PartitionRegistration
    from minibroker.log import PartitionLog

__all__ = [
    "TRANSITIONS",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochQuery",
    "FollowerState",
    "Partition",
    "ReplicaRole",
    "Transition",
]

log = logging.getLogger("minibroker.cluster")

#: OffsetsForLeaderEpochResponse's "no such epoch" answer: ``(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)``.
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class ReplicaRole(enum.Enum):
    """What this broker is for the partition."""

    NONE = "NONE"  # no replica here (not assigned, deleted, reassigned away)
    FOLLOWER = "FOLLOWER"  # a replica fetching from the leader (or waiting for one: leader -1)
    LEADER = "LEADER"


#: The legal moves. A role to itself is a new leader epoch in the same role (a re-elected
#: leader; a follower of a new leader), which resets what that role keeps.
TRANSITIONS: dict[ReplicaRole, frozenset[ReplicaRole]] = {
    ReplicaRole.NONE: frozenset({ReplicaRole.FOLLOWER, ReplicaRole.LEADER}),
    ReplicaRole.FOLLOWER: frozenset({ReplicaRole.FOLLOWER, ReplicaRole.LEADER, ReplicaRole.NONE}),
    ReplicaRole.LEADER: frozenset({ReplicaRole.LEADER, ReplicaRole.FOLLOWER, ReplicaRole.NONE}),
}


class Transition(enum.Enum):
    """What :meth:`Partition.apply_registration` changed, for the replica manager to act on."""

    NONE = "NONE"  # nothing (same or stale registration)
    BECAME_LEADER = "BECAME_LEADER"  # a new leader epoch led by this broker: leave the fetcher
    BECAME_FOLLOWER = "BECAME_FOLLOWER"  # a new leader epoch led by another (or none): (re)truncate, fetch
    ISR_CHANGED = "ISR_CHANGED"  # same leader epoch, new ISR or replicas
    STOPPED = "STOPPED"  # this broker is no longer a replica


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (Kafka's ``ReplicaState``); -1 = unknown."""

    log_end_offset: int = -1
    last_fetch_ms: int = 0
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1  # the leader's LEO at this follower's previous fetch
    broker_epoch: int = -1  # the broker epoch it fetched with (Fetch v15 replica_state)
    log_start_offset: int = -1  # its log start, as its last fetch said (Fetch v5+; DeleteRecords' low
    # watermark, KIP-392's choice); -1: unknown


@dataclass(frozen=True, slots=True)
class EpochQuery:
    """:meth:`Partition.truncation_offset`'s "ask the leader again, about this epoch"
    (KIP-279: the leader answered an epoch this replica never had)."""

    epoch: int


def _ignore(*_args: object) -> None:
    return None


class Partition:
    """One partition's replica on this broker (see the module docstring).

    Args:
        topic, topic_id, index: the partition.
        node_id: this broker.
        log: the local log, or None when no replica is hosted here yet
            (:meth:`attach_log` gives it later).

    Attributes:
        role, leader, leader_epoch, partition_epoch, replicas, isr: the registration this
            replica acts on (-1 and empty before the first).
        truncated_records: records removed by truncation since this object was made (the
            visible cost of an unclean election).
        on_high_watermark: called when the high watermark moves up (the broker wakes
            long-polling fetches: ``BrokerState.data_arrived``).
        on_become_leader: called with this partition after it becomes leader (the broker
            rebuilds its producer state from the log).
        on_truncated: called with this partition after a truncation removed records (the
            broker rebuilds its producer state from the log).
        on_follower_append: called with this partition and the bytes after a follower
            appended the leader's batches (the broker keeps its producer state).
        first_unstable_offset: called with the high watermark; the first unstable offset
            (KIP-98) or None: the broker's producer state answers it.
        is_solo: a single MiniBroker's partition (see :meth:`solo`).
    """

    def __init__(self, *, topic: str, topic_id: uuid.UUID, index: int, node_id: int,
                 log: PartitionLog | None = None) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.index = index
        self.node_id = node_id
        self.log: PartitionLog | None = None
        if log is not None:
            self.attach_log(log)
        self.role = ReplicaRole.NONE
        self.leader = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.truncated_records = 0
        self.is_solo = False
        self.on_high_watermark: Callable[[], None] = _ignore
        self.on_become_leader: Callable[[Partition], object] = _ignore
        self.on_truncated: Callable[[Partition], object] = _ignore
        self.on_follower_append: Callable[[Partition, bytes | memoryview], None] = _ignore
        self.first_unstable_offset: Callable[[int], int | None] = _ignore
        self.followers: dict[int, FollowerState] = {}  # leader only: every other replica
        self._epoch_start_offset = -1  # leader only: LEO when its leader epoch began
        self._waiters: list[tuple[int, int, int, asyncio.Future[int]]] = []  # (offset, seq, min_isr, future)
        # DeleteRecords waiting for the low watermark: (required offset, broker liveness, future)
        self._low_waiters: list[tuple[int, Callable[[int], bool], asyncio.Future[tuple[int, int]]]] = []
        self._seq = itertools.count()

    @classmethod
    def solo(cls, *, topic: str, topic_id: uuid.UUID, index: int, node_id: int, log: PartitionLog) -> Partition:
        """A single MiniBroker's partition: leader at epoch 0, replicas = ISR = this broker,
        so the high watermark is the log end offset; a Fetch from any replica id is served
        read-only (:meth:`on_follower_fetch` records nothing)."""
        p = cls(topic=topic, topic_id=topic_id, index=index, node_id=node_id, log=log)
        p.is_solo = True
        p._become_leader(leader_epoch=0, partition_epoch=0, replicas=(node_id,), isr=(node_id,), now_ms=0)
        return p

    def attach_log(self, log: PartitionLog) -> None:
        """Give the replica its local log (the broker opened it for a new assignment)."""
        if self.log is not None and self.log is not log:
            raise ValueError(f"{self} already has a log")
        self.log = log
        # Compaction stops before an undecided transaction: the log asks this replica.
        log.first_unstable_offset = lambda: self.first_unstable_offset(log.high_watermark)

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.index} on {self.node_id}: {self.role.name}, leader {self.leader}, "
                f"epoch {self.leader_epoch}, isr {list(self.isr)})")

    # -- facts ----------------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        """The log's high watermark; -1 without a local log."""
        return self.log.high_watermark if self.log is not None else -1

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided and its marker below the
        high watermark: min(high watermark, first unstable offset), the latter at least
        the log start offset (Kafka's ``UnifiedLog.lastStableOffset``); -1 without a local
        log."""
        hw = self.high_watermark
        if self.log is None:
            return -1
        first = self.first_unstable_offset(hw)
        # Never below the log start (UnifiedLog.maybeIncrementFirstUnstableOffset): retention
        # or DeleteRecords may have removed an open transaction's first batches.
        return hw if first is None or first >= hw else max(first, self.log.log_start_offset)

    def _local_log(self) -> PartitionLog:
        if self.log is None:
            raise NotLeaderOrFollowerError(f"no replica of {self.topic}-{self.index} on broker {self.node_id}")
        return self.log

    # -- the role state machine -----------------------------------------------------------

    def _move(self, role: ReplicaRole) -> None:
        if role not in TRANSITIONS[self.role]:
            raise IllegalTransitionError(f"{self.topic}-{self.index}: {self.role.name} -> {role.name}")
        self.role = role

    def apply_registration(self, reg: PartitionRegistration, now_ms: int) -> Transition:
        """Act on the controller's committed registration of this partition.

        A registration older than the one held (smaller leader epoch, or smaller partition
        epoch) changes nothing. A new leader epoch makes this replica leader or follower;
        the same leader epoch with a new partition epoch changes the ISR (and replicas).
        A registration that names this broker a replica needs its log attached first
        (:meth:`attach_log`).
        """
        if reg.leader_epoch < self.leader_epoch or reg.partition_epoch < self.partition_epoch or (
                reg.partition_epoch == self.partition_epoch and self.role is not ReplicaRole.NONE):
            return Transition.NONE  # stale or already applied (Kafka: "skipped the become-... state change")
        if self.node_id not in reg.replicas:
            if self.role is ReplicaRole.NONE:
                self._set_registration(reg)
                return Transition.NONE
            self._stop(reg)
            return Transition.STOPPED
        new_epoch = reg.leader_epoch != self.leader_epoch or self.role is ReplicaRole.NONE
        if reg.leader == self.node_id:
            if new_epoch or self.role is not ReplicaRole.LEADER:
                self._become_leader(leader_epoch=reg.leader_epoch, partition_epoch=reg.partition_epoch,
                                    replicas=reg.replicas, isr=reg.isr, now_ms=now_ms)
                return Transition.BECAME_LEADER
            self._update_isr(reg, now_ms)
            return Transition.ISR_CHANGED
        if new_epoch or self.role is not ReplicaRole.FOLLOWER:
            self._become_follower(reg)
            return Transition.BECAME_FOLLOWER
        self._set_registration(reg)
        return Transition.ISR_CHANGED

    def _set_registration(self, reg: PartitionRegistration) -> None:
        self.leader, self.leader_epoch, self.partition_epoch = reg.leader, reg.leader_epoch, reg.partition_epoch
        self.replicas, self.isr = tuple(reg.replicas), tuple(reg.isr)

    def _become_leader(self, *, leader_epoch: int, partition_epoch: int, replicas: tuple[int, ...],
                       isr: tuple[int, ...], now_ms: int) -> None:
        # Kafka's Partition.makeLeader.
        local = self._local_log()
        was_leader = self.role is ReplicaRole.LEADER
        self._move(ReplicaRole.LEADER)
        self.leader, self.leader_epoch, self.partition_epoch = self.node_id, leader_epoch, partition_epoch
        self.replicas, self.isr = tuple(replicas), tuple(isr)
        leo = local.log_end_offset
        # The epoch starts at the LEO (no-op when the cache has it already: a re-opened solo log).
        local.epochs.assign(leader_epoch, leo)
        self._epoch_start_offset = leo
        # Replica.resetReplicaState: ISR members count as caught up now, so that a live
        # follower is not shrunk before its first fetch; a re-elected leader keeps the LEOs.
        old = self.followers
        self.followers = {}
        for r in self.replicas:
            if r == self.node_id:
                continue
            in_sync = r in self.isr
            kept = old.get(r) if was_leader else None
            self.followers[r] = FollowerState(
                log_end_offset=kept.log_end_offset if kept else -1,
                last_fetch_ms=now_ms if (kept and in_sync) else 0,
                last_caught_up_ms=now_ms if in_sync else 0,
                last_fetch_leader_leo=leo if kept else -1,
                broker_epoch=kept.broker_epoch if kept else -1,
                log_start_offset=kept.log_start_offset if kept else -1,
            )
        if not self.is_solo:
            log.info("%s-%d: broker %d leads at epoch %d from offset %d, isr %s",
                     self.topic, self.index, self.node_id, leader_epoch, leo, list(self.isr))
        self.on_become_leader(self)
        self._maybe_increment_high_watermark(local.high_watermark)

    def _update_isr(self, reg: PartitionRegistration, now_ms: int) -> None:
        local = self._local_log()
        before = local.high_watermark
        self.partition_epoch, self.isr = reg.partition_epoch, tuple(reg.isr)
        if tuple(reg.replicas) != self.replicas:
            self.replicas = tuple(reg.replicas)
            self.followers = {r: self.followers.get(r, FollowerState(last_caught_up_ms=now_ms))
                              for r in self.replicas if r != self.node_id}
        # A shrunk ISR may let the high watermark (and waiting acks=all produces) move.
        self._maybe_increment_high_watermark(before)
        self._check_low_waiters()

    def _become_follower(self, reg: PartitionRegistration) -> None:
        # Kafka's Partition.makeFollower: the fetcher truncates and fetches from the new leader.
        self._local_log()
        was_leader = self.role is ReplicaRole.LEADER
        self._move(ReplicaRole.FOLLOWER)
        self._set_registration(reg)
        self.followers = {}
        self._epoch_start_offset = -1
        if was_leader:
            self._fail_waiters()
        log.info("%s-%d: broker %d follows %d at epoch %d", self.topic, self.index, self.node_id,
                 reg.leader, reg.leader_epoch)

    def _stop(self, reg: PartitionRegistration) -> None:
        self._move(ReplicaRole.NONE)
        self._set_registration(reg)
        self.followers = {}
        self._epoch_start_offset = -1
        self._fail_waiters()

    # -- fencing --------------------------------------------------------------------------

    def check_leader(self, current_leader_epoch: int = -1, *, require_leader: bool = True) -> None:
        """Raise unless this broker leads the partition at ``current_leader_epoch``.

        Kafka's ``getLocalLog(currentLeaderEpoch, requireLeader)``: the epoch is checked
        first (-1: not checked; older → FENCED_LEADER_EPOCH, newer → UNKNOWN_LEADER_EPOCH),
        then the role (NOT_LEADER_OR_FOLLOWER). A broker without a replica answers
        NOT_LEADER_OR_FOLLOWER whatever the epoch. ``require_leader`` False lets a follower
        pass too (a consumer's Fetch v11+ may read from a follower, KIP-392).
        """
        if self.role is ReplicaRole.NONE or self.log is None:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} has no replica of {self.topic}-{self.index}")
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise FencedLeaderEpochError(
                    f"{self.topic}-{self.index}: leader epoch {current_leader_epoch} < current {self.leader_epoch}")
            if current_leader_epoch > self.leader_epoch:
                raise UnknownLeaderEpochError(
                    f"{self.topic}-{self.index}: leader epoch {current_leader_epoch} > current {self.leader_epoch}")
        if require_leader and self.role is not ReplicaRole.LEADER:
            raise NotLeaderOrFollowerError(
                f"broker {self.node_id} is not the leader of {self.topic}-{self.index} (leader {self.leader})")

    # -- leader: appends, acks, follower fetches, ISR -------------------------------------

    def append_as_leader(self, records: bytes, *, last_offset_delta: int, max_timestamp: int) -> int:
        """Append a validated producer batch stamped with the current leader epoch;
        returns its base offset. The high watermark moves at once if this broker is the
        whole ISR (a solo partition)."""
        if self.role is not ReplicaRole.LEADER:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} is not the leader of {self.topic}-{self.index}")
        local = self._local_log()
        before = local.high_watermark
        base = local.append(records, last_offset_delta=last_offset_delta, max_timestamp=max_timestamp,
                            leader_epoch=self.leader_epoch)
        self._maybe_increment_high_watermark(before)
        return base

    def _maybe_increment_high_watermark(self, before: int) -> None:
        """HW = min LEO over the ISR, leader included; never backwards (Kafka's
        ``maybeIncrementLeaderHW``). Completes waiters and wakes fetches when it moved."""
        local = self.log
        if local is None or self.role is not ReplicaRole.LEADER:
            return
        candidate = local.log_end_offset
        for r in self.isr:
            if r != self.node_id:
                state = self.followers.get(r)
                candidate = min(candidate, state.log_end_offset if state is not None else -1)
        if candidate > local.high_watermark:
            local.set_high_watermark(candidate)
        if local.high_watermark > before:
            self._complete_waiters()
            self.on_high_watermark()

    async def wait_for_ack(self, required_offset: int, min_isr: int) -> int:
        """acks=all (Kafka's DelayedProduce): wait until the high watermark reaches
        ``required_offset`` (the appended batch's last offset + 1); returns the error code:
        0, NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) when the ISR is then smaller than
        ``min_isr``, NOT_LEADER_OR_FOLLOWER (6) when leadership is lost first. The caller
        bounds the wait (``timeout_ms`` → REQUEST_TIMED_OUT); a cancelled wait is dropped."""
        if self.role is not ReplicaRole.LEADER:
            return NotLeaderOrFollowerError.code
        if self.high_watermark >= required_offset:
            return self._ack_code(min_isr)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (required_offset, next(self._seq), min_isr, future))
        return await future

    def _ack_code(self, min_isr: int) -> int:
        # Partition.checkEnoughReplicasReachOffset: the ISR may have shrunk after the append.
        return 0 if len(self.isr) >= min_isr else NotEnoughReplicasAfterAppendError.code

    def _complete_waiters(self) -> None:
        hw = self.high_watermark
        while self._waiters and self._waiters[0][0] <= hw:
            _, _, min_isr, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(self._ack_code(min_isr))

    def _fail_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for _, _, _, future in waiters:
            if not future.done():
                future.set_result(NotLeaderOrFollowerError.code)
        self._check_low_waiters()  # no longer the leader: they fail too

    @property
    def waiting(self) -> int:
        """acks=all produces waiting here (cancelled ones are dropped when reached)."""
        return sum(not w[3].done() for w in self._waiters)

    def on_follower_fetch(self, replica_id: int, broker_epoch: int, fetch_offset: int, now_ms: int,
                          log_start_offset: int = -1) -> None:
        """A follower fetches at ``fetch_offset``: that is its LEO. Updates its caught-up
        time (Kafka's ``Replica.updateFetchStateOrThrow``) and may move the high watermark;
        its ``log_start_offset`` (Fetch v5+) may complete a waiting DeleteRecords.

        A solo partition records nothing (it serves any replica read-only). An offset
        outside the log is not recorded either: the fetch answers OFFSET_OUT_OF_RANGE.

        Raises:
            NotLeaderOrFollowerError: this broker does not lead, or ``replica_id`` is not
                one of the partition's other replicas.
        """
        if self.role is not ReplicaRole.LEADER:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} is not the leader of {self.topic}-{self.index}")
        if self.is_solo:
            return
        state = self.followers.get(replica_id)
        if state is None:
            raise NotLeaderOrFollowerError(f"broker {replica_id} is not a replica of {self.topic}-{self.index}")
        local = self._local_log()
        leo = local.log_end_offset
        if not local.log_start_offset <= fetch_offset <= leo:
            return
        if fetch_offset >= leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
        elif fetch_offset >= state.last_fetch_leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_leader_leo = max(leo, state.last_fetch_leader_leo)
        state.last_fetch_ms = now_ms
        state.broker_epoch = broker_epoch
        state.log_start_offset = log_start_offset
        self._maybe_increment_high_watermark(local.high_watermark)
        self._check_low_waiters()

    # -- leader: DeleteRecords' low watermark ------------------------------------------------

    def low_watermark(self, alive: Callable[[int], bool]) -> int:
        """The smallest log start offset of the leader's log and of every follower whose
        broker is ``alive`` (Kafka's ``Partition.lowWatermarkIfLeader``, with
        ``metadataCache.hasAliveBroker``: registered and unfenced). A follower that has not
        fetched since this leader epoch began counts with -1 (Kafka's ``UNKNOWN_OFFSET``)."""
        low = self._local_log().log_start_offset
        for broker, state in self.followers.items():
            if alive(broker):
                low = min(low, state.log_start_offset)
        return low

    async def wait_for_low_watermark(self, required_offset: int, alive: Callable[[int], bool]) -> tuple[int, int]:
        """DeleteRecords (Kafka's ``DelayedDeleteRecords.tryComplete``): wait until the low
        watermark (:meth:`low_watermark`) reaches ``required_offset``; returns
        ``(0, low watermark)``, or ``(NOT_LEADER_OR_FOLLOWER, -1)`` when leadership is lost
        first. Checked again at every follower fetch (which carries its log start) and
        registration change; the caller bounds the wait (REQUEST_TIMED_OUT), a cancelled
        wait is dropped."""
        future: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
        self._low_waiters.append((required_offset, alive, future))
        self._check_low_waiters()
        return await future

    def _check_low_waiters(self) -> None:
        if not self._low_waiters:
            return
        waiting, self._low_waiters = self._low_waiters, []
        for required, alive, future in waiting:
            if future.done():
                continue  # cancelled: the request timed out
            if self.role is not ReplicaRole.LEADER or self.log is None:
                future.set_result((NotLeaderOrFollowerError.code, -1))
                continue
            low = self.low_watermark(alive)
            if low >= required:
                future.set_result((0, low))
            else:
                self._low_waiters.append((required, alive, future))

    def isr_change(self, now_ms: int, lag_ms: int, eligible: Callable[[int, int], bool]) -> tuple[int, ...] | None:
        """The ISR this leader should propose (AlterPartition), or None to keep it.

        Leaves: a member whose LEO differs from the leader's and that was last caught up
        more than ``lag_ms`` (``replica.lag.time.max.ms``) ago (``isFollowerOutOfSync``).
        Joins: a replica whose LEO is at least the high watermark and the start offset of
        the current leader epoch (``isFollowerInSync``) and for which
        ``eligible(replica_id, broker_epoch it fetched with)`` holds: unfenced, same broker
        epoch (``isReplicaIsrEligible``, KIP-903). The leader never leaves its own ISR.
        """
        if self.role is not ReplicaRole.LEADER or self.is_solo or self.log is None:
            return None
        leo, hw = self.log.log_end_offset, self.log.high_watermark
        keep = []
        for r in self.isr:
            state = self.followers.get(r)
            if r != self.node_id and state is not None and state.log_end_offset != leo \
                    and now_ms - state.last_caught_up_ms > lag_ms:
                continue
            keep.append(r)
        for r in self.replicas:
            state = self.followers.get(r)
            if r in self.isr or state is None:
                continue
            if state.log_end_offset >= hw and state.log_end_offset >= self._epoch_start_offset \
                    and eligible(r, state.broker_epoch):
                keep.append(r)
        new = tuple(keep)
        return None if new == self.isr else new

    # -- epochs ---------------------------------------------------------------------------

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's answer for ``epoch`` (Kafka's
        ``LeaderEpochFileCache.endOffsetFor``): ``(epoch, end offset)``, ``(-1, -1)`` when
        unknown. The caller checks leadership and fencing first (:meth:`check_leader`)."""
        local = self._local_log()
        return local.epochs.end_offset_for(epoch, local.log_end_offset)

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """Fetch v12+'s divergence check (KIP-595, Kafka's ``Partition.readRecords``): the
        fetcher's last epoch is not ours up to ``fetch_offset`` → ``(epoch, end offset)`` to
        truncate to, else None. ``last_fetched_epoch`` -1 is not checked.

        Raises:
            OffsetOutOfRangeError: an epoch this replica cannot place (its end offset is
                unknown: what OffsetForLeaderEpoch answers ``(-1, -1)``), or ``fetch_offset``
                below the log start, whether or not the epochs diverge; Kafka's rule.
        """
        if last_fetched_epoch < 0:
            return None
        epoch, end = self.end_offset_for_epoch(last_fetched_epoch)
        if epoch == UNDEFINED_EPOCH or end == UNDEFINED_EPOCH_OFFSET:
            raise OffsetOutOfRangeError(f"{self.topic}-{self.index}: could not determine the end offset of the "
                                        f"last fetched epoch {last_fetched_epoch}")
        local = self._local_log()
        if fetch_offset < local.log_start_offset:
            raise OffsetOutOfRangeError(f"{self.topic}-{self.index}: offset {fetch_offset} is below the log "
                                        f"start {local.log_start_offset}")
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    # -- KIP-392: the preferred read replica --------------------------------------------

    def preferred_read_replica(self, client_rack: str, fetch_offset: int, now_ms: int,
                               racks: Mapping[int, str | None]) -> int:
        """The replica a consumer in ``client_rack`` should fetch from, by Kafka's
        ``RackAwareReplicaSelector`` as ``ReplicaManager.findPreferredReadReplica`` asks it;
        -1 for this leader itself (the records are then served here).

        Candidates are the leader and the followers that are in the ISR, live (``racks``
        holds the live brokers and their racks), and hold ``fetch_offset`` (their log start
        at or below it, their LEO at or above it): an out-of-sync follower would keep the
        consumer behind. No client rack, or no candidate in it → the leader; the leader in
        it → the leader; else the most caught-up candidate in it (largest LEO, then most
        recently caught up; replica order breaks ties).
        """
        if self.role is not ReplicaRole.LEADER or self.is_solo or not client_rack:
            return -1
        if racks.get(self.node_id) == client_rack:
            return -1
        best: tuple[int, int, int] | None = None
        for order, r in enumerate(self.replicas):
            state = self.followers.get(r)
            if state is None or r not in self.isr or r not in racks or racks[r] != client_rack:
                continue
            if not (state.log_start_offset <= fetch_offset <= state.log_end_offset):
                continue
            key = (state.log_end_offset, state.last_caught_up_ms - now_ms, -order)  # ReplicaView.comparator
            if best is None or key > best:
                best = key
        return -1 if best is None else self.replicas[-best[2]]

    # -- follower -------------------------------------------------------------------------

    def append_as_follower(self, records: bytes | memoryview) -> int:
        """Append batches fetched from the leader as they are (offsets, leader epochs and
        CRCs untouched; the log adds new epochs to its cache); returns the new LEO."""
        if self.role is not ReplicaRole.FOLLOWER:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} is not a follower of {self.topic}-{self.index}")
        leo = self._local_log().append_replicated(records)
        self.on_follower_append(self, records)
        return leo

    def update_follower_high_watermark(self, leader_hw: int, leader_log_start: int) -> None:
        """After a fetch: HW := min(leader's HW, own LEO) (it may move back: a new leader's
        HW can lag, as Kafka's ``UnifiedLog.updateHighWatermark``); the log start follows
        the leader's up to that HW (``maybeIncrementLogStartOffset``)."""
        local = self._local_log()
        before = local.high_watermark
        local.set_high_watermark(min(leader_hw, local.log_end_offset))
        start = min(leader_log_start, local.high_watermark)
        if start > local.log_start_offset:
            local.delete_records(start)
        if local.high_watermark > before:
            self.on_high_watermark()

    def truncation_offset(self, leader_epoch: int, leader_end_offset: int) -> int | EpochQuery:
        """Where to truncate, given the leader's OffsetForLeaderEpoch answer
        ``(leader_epoch, leader_end_offset)`` to this replica's latest epoch (KIP-101,
        KIP-279; Kafka's ``AbstractFetcherThread.getOffsetTruncationState``):

        - ``(-1, -1)``, or this replica has no epochs → its high watermark;
        - this replica has ``leader_epoch`` → min(leader's end offset, own end of that epoch);
        - its largest epoch at or below ``leader_epoch`` is smaller → :class:`EpochQuery`
          for that epoch: ask the leader again (each round asks about an older epoch, so
          the rounds end);
        - it has no epoch at or below ``leader_epoch`` (its first epoch is newer) → the
          start of its first epoch: nothing is known to be common (the cache's
          ``end_offset_for`` answers so, as Kafka's does);
        - ``leader_epoch`` is above every epoch it has (cannot happen when it asked with
          its latest) → the leader's end offset.

        Never above the own LEO, never below the log start offset.
        """
        local = self._local_log()
        leo = local.log_end_offset
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET or local.epochs.latest_epoch() == UNDEFINED_EPOCH:
            target = local.high_watermark
        else:
            own_epoch, own_end = local.epochs.end_offset_for(leader_epoch, leo)
            if own_end == UNDEFINED_EPOCH_OFFSET:
                target = leader_end_offset
            elif own_epoch != leader_epoch:
                return EpochQuery(own_epoch)
            else:
                target = min(own_end, leader_end_offset)
        return max(min(target, leo), local.log_start_offset)

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is at or above ``offset`` (a mid-batch
        offset removes the whole batch); the log clamps its HW, recovery point and epoch
        cache. Returns the records removed (counted in :attr:`truncated_records`, logged)."""
        local = self._local_log()
        removed = local.truncate_to(offset)
        if removed:
            self.truncated_records += removed
            log.info("%s-%d: broker %d truncated %d record(s) to offset %d", self.topic, self.index,
                     self.node_id, removed, local.log_end_offset)
            self.on_truncated(self)
        return removed
