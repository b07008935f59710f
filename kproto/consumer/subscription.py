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
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from kproto.consumer.errors import NoOffsetForPartitionError
from kproto.structs import OffsetAndMetadata, TopicPartition

__all__ = ["PartitionState", "SubscriptionState", "SubscriptionType"]


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
    """

    position: int | None = None
    leader_epoch: int = -1
    paused: bool = False
    reset: str | None = None
    version: int = 0


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

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int = -1) -> None:
        """Set the position of an assigned partition (a stale fetch of it is dropped)."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        state = self.state(tp)
        state.position, state.leader_epoch, state.reset = offset, leader_epoch, None
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
        state.position, state.reset = None, strategy
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
        """Partitions to fetch: assigned, with a position, not paused (in fetch order)."""
        return [tp for tp, s in self._assignment.items() if s.position is not None and not s.paused]

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = True

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = False

    def paused(self) -> list[TopicPartition]:
        return [tp for tp, s in self._assignment.items() if s.paused]
