"""What a consumer consumes and where it is: its subscription and each partition's position.

Java's ``SubscriptionState``, sans-I/O. A consumer either subscribes (to topics or to a
pattern, and the group assigns partitions) or assigns partitions itself; the two are
mutually exclusive. A subscription replaces the one before, whichever its form (topics or
pattern; Java refuses a change of form without an unsubscribe, librdkafka does not, and
nothing is gained by refusing: issue 11). Every assigned partition has a :class:`PartitionState`: its position
(the offset of the next record to return), whether it is paused, and, while it has no
position, the reset it waits for (``"earliest"``/``"latest"``, resolved with ListOffsets).

A partition's ``version`` moves whenever its position is set by anything but consuming
(a seek, a reset, a new assignment), so a fetch answered after that is recognised as
stale and dropped rather than returned.

Position validation (KIP-320, Java's ``FetchState.AWAIT_VALIDATION``). A position carries
the leader epoch of the record before it (the last consumed, or the committed offset's)
and the epoch of the leader it was fetched from. When the partition's leader epoch moves
on (:meth:`~SubscriptionState.maybe_validate`), or a seek gives a position with an epoch
(a committed offset, ``seek(OffsetAndMetadata)``), the partition is not fetched until
the fetcher has asked the leader where the position's epoch ends (OffsetForLeaderEpoch)
and :meth:`~SubscriptionState.complete_validation` has judged the answer: the log still
reaches the position (go on), or it was truncated under it (the position moves back to
the first diverging offset, or, with ``auto.offset.reset=none``,
:class:`~kproto.errors.LogTruncationError`).

Preferred read replicas (KIP-392, Java's ``TopicPartitionState.preferredReadReplica``):
a leader may name a follower for a consumer with ``client.rack`` to fetch from; the
partition is fetched there until ``metadata.max.age.ms`` passes or that replica errors
(:meth:`~SubscriptionState.read_replica`).
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from kproto.consumer.errors import NoOffsetForPartitionError
from kproto.errors import LogTruncationError
from kproto.structs import OffsetAndMetadata, TopicPartition

__all__ = ["PartitionState", "SubscriptionState", "SubscriptionType"]

log = logging.getLogger("kproto.consumer")


class SubscriptionType(enum.Enum):
    """How partitions are chosen (Java's ``SubscriptionType``)."""

    NONE = "NONE"
    AUTO_TOPICS = "AUTO_TOPICS"
    AUTO_PATTERN = "AUTO_PATTERN"
    USER_ASSIGNED = "USER_ASSIGNED"


_AUTO = (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)


@dataclass(slots=True)
class PartitionState:
    """One assigned partition.

    Attributes:
        position: offset of the next record to return; None until known.
        leader_epoch: leader epoch of the last record returned (committed with the
            position, KIP-320); -1 when unknown.
        paused: not fetched and not returned while set.
        reset: ``"earliest"`` or ``"latest"`` while the position waits for ListOffsets.
        version: moves when the position is set other than by consuming.
        current_leader_epoch: the leader epoch the position was last fetched or validated
            under; -1 until the first fetch.
        awaiting_validation: not fetched until the position is validated (KIP-320).
        read_replica: the broker the leader prefers this consumer to fetch from (KIP-392),
            -1 for the leader itself; good until ``read_replica_until`` (monotonic).
    """

    position: int | None = None
    leader_epoch: int = -1
    paused: bool = False
    reset: str | None = None
    version: int = 0
    current_leader_epoch: int = -1
    awaiting_validation: bool = False
    read_replica: int = -1
    read_replica_until: float = 0.0


class SubscriptionState:
    """The subscription, the assignment and positions of one consumer.

    Args:
        default_reset: ``auto.offset.reset``: ``"earliest"``, ``"latest"`` or ``"none"``.
        exclude_internal: ``exclude.internal.topics``: patterns never match internal topics.
    """

    def __init__(self, default_reset: str, exclude_internal: bool = True) -> None:
        self.default_reset = default_reset
        self.exclude_internal = exclude_internal
        self.type = SubscriptionType.NONE
        self.pattern: re.Pattern[str] | None = None
        self.topics: frozenset[str] = frozenset()  # subscribed, or matched by the pattern
        self._assignment: dict[TopicPartition, PartitionState] = {}  # insertion order = fetch order

    # -- subscription -----------------------------------------------------------------------

    def _set_type(self, wanted: SubscriptionType) -> None:
        if self.type not in (SubscriptionType.NONE, wanted) and not (self.auto_assigned and wanted in _AUTO):
            first, then = ("assign()", "subscribe()") if wanted in _AUTO else ("subscribe()", "assign()")
            raise RuntimeError(f"{then} after {first}: a consumer either subscribes or assigns partitions "
                               f"itself; call unsubscribe() first")
        self.type = wanted

    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to exactly ``topics`` (replacing an earlier subscription)."""
        self._set_type(SubscriptionType.AUTO_TOPICS)
        self.pattern = None
        self.topics = frozenset(topics)

    def subscribe_pattern(self, pattern: re.Pattern[str]) -> None:
        """Subscribe to every topic ``pattern`` matches whole (Java's ``Pattern.matches``)."""
        self._set_type(SubscriptionType.AUTO_PATTERN)
        self.pattern = pattern
        self.topics = frozenset()

    def match(self, topics: Iterable[tuple[str, bool]]) -> bool:
        """Update a pattern subscription from the cluster's ``(name, is_internal)`` topics.

        Returns:
            True when the matched topics changed.
        """
        if self.pattern is None:
            return False
        matched = frozenset(name for name, internal in topics
                            if self.pattern.fullmatch(name) and not (internal and self.exclude_internal))
        changed = matched != self.topics
        self.topics = matched
        return changed

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Take exactly ``partitions`` (manual assignment); positions of kept ones stay."""
        self._set_type(SubscriptionType.USER_ASSIGNED)
        self.set_assignment(partitions)

    def unsubscribe(self) -> None:
        """Drop the subscription or manual assignment, and every position."""
        self.type = SubscriptionType.NONE
        self.pattern = None
        self.topics = frozenset()
        self._assignment.clear()

    @property
    def auto_assigned(self) -> bool:
        """Partitions come from a group (a topic or pattern subscription)."""
        return self.type in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    # -- assignment ---------------------------------------------------------------------------

    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """Replace the assignment; partitions kept keep their state, new ones have no position."""
        old = self._assignment
        self._assignment = {tp: old.get(tp) or PartitionState() for tp in dict.fromkeys(partitions)}

    def assigned(self) -> list[TopicPartition]:
        return list(self._assignment)

    def get(self, tp: TopicPartition) -> PartitionState | None:
        return self._assignment.get(tp)

    def state(self, tp: TopicPartition) -> PartitionState:
        """The state of an assigned partition.

        Raises:
            ValueError: ``tp`` is not assigned to this consumer.
        """
        state = self._assignment.get(tp)
        if state is None:
            raise ValueError(f"{tp.topic}-{tp.partition} is not assigned to this consumer")
        return state

    def move_to_end(self, tp: TopicPartition) -> None:
        """Put ``tp`` last in fetch order, so partitions take turns being first (KIP-74)."""
        state = self._assignment.pop(tp, None)
        if state is not None:
            self._assignment[tp] = state

    # -- positions ----------------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int = -1, *, validate: bool | None = None) -> None:
        """Set the position of an assigned partition (a stale fetch of it is dropped).

        A position with a ``leader_epoch`` (a committed offset's, a seek to an
        :class:`~kproto.structs.OffsetAndMetadata`) is validated before it is fetched, as
        Java's ``seekUnvalidated``; ``validate=False`` takes it as it is (a position
        ListOffsets found just now, Java's ``seekValidated``).
        """
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        state = self.state(tp)
        state.position, state.leader_epoch, state.reset = offset, leader_epoch, None
        state.awaiting_validation = leader_epoch >= 0 if validate is None else validate and leader_epoch >= 0
        state.current_leader_epoch = -1
        state.version += 1

    def request_reset(self, tp: TopicPartition, strategy: str | None = None) -> None:
        """Forget the position of ``tp`` until a reset (``strategy``, default ``auto.offset.reset``).

        Raises:
            NoOffsetForPartitionError: the strategy is ``none``.
        """
        strategy = strategy or self.default_reset
        if strategy == "none":
            raise NoOffsetForPartitionError([tp])
        state = self.state(tp)
        state.position, state.reset, state.awaiting_validation = None, strategy, False
        state.version += 1

    def missing_positions(self) -> list[TopicPartition]:
        """Assigned partitions with neither a position nor a reset pending."""
        return [tp for tp, s in self._assignment.items() if s.position is None and s.reset is None]

    def awaiting_reset(self) -> dict[TopicPartition, str]:
        return {tp: s.reset for tp, s in self._assignment.items() if s.reset is not None}

    def all_consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """What a commit of consumed positions sends: every partition with a position."""
        return {tp: OffsetAndMetadata(s.position, "", s.leader_epoch)
                for tp, s in self._assignment.items() if s.position is not None}

    def fetchable(self) -> list[TopicPartition]:
        """Partitions to fetch: assigned, with a validated position, not paused (in fetch order)."""
        return [tp for tp, s in self._assignment.items()
                if s.position is not None and not s.paused and not s.awaiting_validation]

    # -- validation (KIP-320) -------------------------------------------------------------

    def maybe_validate(self, tp: TopicPartition, leader_epoch: int) -> bool:
        """Note the partition's leader epoch now (from metadata); a position fetched under
        another epoch must be validated first (Java's ``maybeValidatePositionForCurrentLeader``).
        A position without an epoch (an old broker's records, a plain seek) cannot be
        validated and is taken as it is.

        Returns:
            True when the partition waits for validation.
        """
        state = self._assignment.get(tp)
        if state is None or state.position is None or leader_epoch < 0:
            return state is not None and state.awaiting_validation
        if state.current_leader_epoch != leader_epoch:
            if state.current_leader_epoch >= 0 and state.leader_epoch >= 0:
                state.awaiting_validation = True
            elif not state.awaiting_validation:
                state.current_leader_epoch = leader_epoch  # the first fetch: nothing to validate against
        return state.awaiting_validation

    def awaiting_validation(self) -> list[TopicPartition]:
        """Partitions whose position waits for validation (not paused)."""
        return [tp for tp, s in self._assignment.items() if s.awaiting_validation and s.position is not None
                and not s.paused]

    def complete_validation(self, tp: TopicPartition, version: int, current_leader_epoch: int,
                            epoch: int, end_offset: int) -> LogTruncationError | None:
        """Judge the leader's answer for a position's epoch: ``epoch`` (the largest at or
        below it that the leader has) ends at ``end_offset`` (-1, -1: none). Java's
        ``SubscriptionState.maybeCompleteValidation``:

        * the log reaches the position: it is valid under ``current_leader_epoch``;
        * the log ends before it (truncated under the consumer): with a reset policy the
          position moves back to ``end_offset`` (the first offset known to diverge), or
          to a reset when the leader knows no such epoch; with ``auto.offset.reset=none``
          the error is returned and the partition keeps waiting (a seek ends that).

        An answer for a position that moved since it was asked (``version``) is ignored.
        """
        state = self._assignment.get(tp)
        if state is None or state.version != version or not state.awaiting_validation or state.position is None:
            return None
        position = state.position
        if epoch < 0 or end_offset < 0:
            if self.default_reset != "none":
                log.info("%s-%d: the leader knows no epoch %d of position %d; resetting to %s",
                         tp.topic, tp.partition, state.leader_epoch, position, self.default_reset)
                self.request_reset(tp)
                return None
            return LogTruncationError(f"{tp.topic}-{tp.partition}: log truncated under position {position} "
                                      f"(the leader knows no epoch {state.leader_epoch})", {tp: position}, {tp: None})
        if end_offset < position:
            if self.default_reset != "none":
                log.info("%s-%d: log truncated under position %d (epoch %d ends at %d); going back to %d",
                         tp.topic, tp.partition, position, epoch, end_offset, end_offset)
                self.seek(tp, end_offset, epoch, validate=False)
                return None
            return LogTruncationError(
                f"{tp.topic}-{tp.partition}: log truncated under position {position}: epoch {epoch} ends at "
                f"{end_offset}", {tp: position}, {tp: OffsetAndMetadata(end_offset, "", epoch)})
        state.awaiting_validation = False
        state.current_leader_epoch = current_leader_epoch
        return None

    def diverged(self, tp: TopicPartition, version: int, epoch: int, end_offset: int) -> LogTruncationError | None:
        """A Fetch v12+ answer's ``diverging_epoch`` for a position (KIP-595/KIP-320):
        judged as a validation answer is."""
        state = self._assignment.get(tp)
        if state is None or state.version != version:
            return None
        state.awaiting_validation = True
        return self.complete_validation(tp, version, state.current_leader_epoch, epoch, end_offset)

    # -- preferred read replica (KIP-392) ---------------------------------------------------

    def read_replica(self, tp: TopicPartition, now: float) -> int:
        """The broker to fetch ``tp`` from instead of its leader, -1 for none (or expired)."""
        state = self._assignment.get(tp)
        if state is None or state.read_replica < 0:
            return -1
        if now >= state.read_replica_until:
            state.read_replica = -1
        return state.read_replica

    def set_read_replica(self, tp: TopicPartition, node: int, until: float) -> None:
        """Fetch ``tp`` from ``node`` until ``until`` (monotonic), as its leader prefers."""
        state = self._assignment.get(tp)
        if state is not None:
            state.read_replica, state.read_replica_until = node, until

    def clear_read_replica(self, tp: TopicPartition) -> bool:
        """Fetch ``tp`` from its leader again; True when it had a read replica."""
        state = self._assignment.get(tp)
        if state is None or state.read_replica < 0:
            return False
        state.read_replica = -1
        return True

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = True

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = False

    def paused(self) -> list[TopicPartition]:
        return [tp for tp, s in self._assignment.items() if s.paused]
