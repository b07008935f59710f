"""Partition assignors: which member of a consumer group reads which partitions.

The group leader runs one of these on every member's :class:`~kproto.consumer.protocol.Subscription`
and the partition counts of the subscribed topics. They are pure functions (no I/O, no
clock), deterministic, and give the same results as Java's assignors of the same name:

- ``range`` (Java's ``RangeAssignor``): per topic, the members subscribed to it in order
  take consecutive ranges of partitions; the first ``partitions % members`` get one more.
- ``roundrobin`` (``RoundRobinAssignor``): every subscribed partition, sorted by topic then
  partition, is dealt to the next member in order that subscribes to its topic.
- ``cooperative-sticky`` (``CooperativeStickyAssignor``, KIP-429): balanced, keeps every
  member's owned partitions where balance allows, and never hands a partition to a new
  member while another still owns it: such a partition is left out of this round, its
  owner revokes it and rejoins, and the next round assigns it (incremental rebalancing).

Member order, where it matters, is Java's ``MemberInfo`` order: static members
(``group.instance.id``) first, by instance id, then dynamic members by member id.

Theory of operation of cooperative-sticky (Java's ``AbstractStickyAssignor``):

1. Ownership. A member's owned partitions count only if its generation is the highest
   any member reports (older claims are stale: that member missed a rebalance), the
   topic is still subscribed and the partition exists. A partition claimed by two members
   of the same generation belongs to neither.
2. When every member subscribes to the same topics (the usual case), Java's constrained
   algorithm: with ``P`` partitions and ``M`` members each gets ``floor(P/M)`` or
   ``ceil(P/M)``, exactly ``P % M`` of them the larger count. Members keep owned
   partitions up to their quota; the rest are dealt round-robin to the members below
   quota, in member order. Java walks members in ``HashMap`` order at one step (who
   keeps a ``ceil`` quota when several could); here it is member order, so that step may
   pick a different member than Java would, with the same balance and stickiness.
3. Otherwise (subscriptions differ): owned partitions are kept, each unowned partition
   goes to the least loaded member subscribed to its topic (partitions with fewer
   candidates first), then partitions move from a member to one subscribed to their topic
   holding at least two fewer until none can. This is a simpler search than Java's
   general path; it reaches the same balance whenever a single move can improve it.
4. Partitions going to a member other than their valid owner are then removed from this
   round (step 4 is what makes it cooperative).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kproto.consumer.protocol import Subscription
from kproto.structs import TopicPartition

__all__ = [
    "ASSIGNORS",
    "Assignor",
    "CooperativeStickyAssignor",
    "GroupMember",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "rebalance_protocol",
]

Assignments = dict[str, list[TopicPartition]]


class RebalanceProtocol(enum.Enum):
    """How a member gives up partitions in a rebalance (Java's ``RebalanceProtocol``)."""

    EAGER = "EAGER"  # revoke everything before joining
    COOPERATIVE = "COOPERATIVE"  # keep what stays yours; revoke only what moves (KIP-429)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member as the leader sees it in the JoinGroup response."""

    member_id: str
    subscription: Subscription
    group_instance_id: str | None = None


def _member_order(member: GroupMember) -> tuple[int, str]:
    """Java's ``MemberInfo.compareTo``: static members by instance id, then dynamic by id."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id)
    return (1, member.member_id)


def _sorted_members(members: Iterable[GroupMember]) -> list[GroupMember]:
    return sorted(members, key=_member_order)


def _subscribed(members: Iterable[GroupMember], partitions_per_topic: Mapping[str, int]) -> list[str]:
    """Every topic some member wants and the cluster has, sorted."""
    return sorted({t for m in members for t in m.subscription.topics if t in partitions_per_topic})


class Assignor:
    """Base of the assignors: a name, the rebalance protocols it supports, and ``assign``."""

    name: str = ""
    protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    def user_data(self, generation_id: int) -> bytes | None:
        """Bytes to put in this member's subscription (none by default)."""
        return None

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]) -> Assignments:
        """Assign partitions to ``members``.

        Args:
            partitions_per_topic: partition counts of the topics the cluster has; topics
                a member subscribes to that are missing here are skipped.
            members: the group's members and their subscriptions.

        Returns:
            Every member's partitions, sorted by topic then partition.
        """
        raise NotImplementedError


class RangeAssignor(Assignor):
    """Java's ``RangeAssignor`` (the default of Java's consumer, first in its list)."""

    name = "range"

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]) -> Assignments:
        out: Assignments = {m.member_id: [] for m in members}
        ordered = _sorted_members(members)
        for topic in _subscribed(members, partitions_per_topic):
            consumers = [m.member_id for m in ordered if topic in m.subscription.topics]
            each, extra = divmod(partitions_per_topic[topic], len(consumers))
            for i, member_id in enumerate(consumers):
                start = each * i + min(i, extra)
                length = each + (1 if i < extra else 0)
                out[member_id] += [TopicPartition(topic, p) for p in range(start, start + length)]
        return {m: sorted(tps) for m, tps in out.items()}


class RoundRobinAssignor(Assignor):
    """Java's ``RoundRobinAssignor``."""

    name = "roundrobin"

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]) -> Assignments:
        out: Assignments = {m.member_id: [] for m in members}
        ordered = _sorted_members(members)
        i = 0
        for topic in _subscribed(members, partitions_per_topic):
            for p in range(partitions_per_topic[topic]):
                while topic not in ordered[i % len(ordered)].subscription.topics:
                    i += 1
                out[ordered[i % len(ordered)].member_id].append(TopicPartition(topic, p))
                i += 1
        return out


_generation = struct.Struct(">i")


def _generation_of(subscription: Subscription) -> int:
    """The generation of a member's owned partitions: the v2+ field, else Java's user data."""
    if subscription.generation_id >= 0:
        return subscription.generation_id
    data = subscription.user_data
    if data is not None and len(data) == _generation.size:
        return _generation.unpack(data)[0]
    return -1


class CooperativeStickyAssignor(Assignor):
    """Java's ``CooperativeStickyAssignor``: sticky, balanced and incremental (KIP-429)."""

    name = "cooperative-sticky"
    protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def user_data(self, generation_id: int) -> bytes | None:
        """The generation, as Java puts it in user data for readers of subscription v0/v1."""
        return _generation.pack(generation_id)

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]) -> Assignments:
        ordered = _sorted_members(members)
        topics = {m.member_id: {t for t in m.subscription.topics if t in partitions_per_topic} for m in ordered}
        owned, contested = _valid_ownership(ordered, topics, partitions_per_topic)
        if len({frozenset(t) for t in topics.values()}) <= 1:
            assignment = _constrained(ordered, owned, partitions_per_topic)
        else:
            assignment = _general(ordered, topics, owned, partitions_per_topic)
        owner = {tp: m for m, tps in owned.items() for tp in tps}
        # Step 4: a partition moving away from a valid owner (or claimed twice) waits for
        # the next round, once its owner has revoked it.
        return {m: sorted(tp for tp in tps if owner.get(tp, m) == m and tp not in contested)
                for m, tps in assignment.items()}


def _valid_ownership(members: Sequence[GroupMember], topics: Mapping[str, set[str]],
                     partitions_per_topic: Mapping[str, int]) -> tuple[Assignments, set[TopicPartition]]:
    """Step 1: each member's owned partitions that still count, and those claimed twice."""
    owned: Assignments = {m.member_id: [] for m in members}
    top = max((_generation_of(m.subscription) for m in members), default=-1)
    claimed: dict[TopicPartition, str] = {}
    contested: set[TopicPartition] = set()
    for m in members:
        if _generation_of(m.subscription) != top:
            continue
        for tp in sorted(set(m.subscription.owned_partitions)):
            if tp.topic not in topics[m.member_id] or not 0 <= tp.partition < partitions_per_topic[tp.topic]:
                continue
            other = claimed.setdefault(tp, m.member_id)
            if other != m.member_id:
                contested.add(tp)
    for tp, m in claimed.items():
        if tp not in contested:
            owned[m].append(tp)
    return owned, contested


def _constrained(members: Sequence[GroupMember], owned: Assignments, partitions_per_topic: Mapping[str, int]) -> Assignments:
    """Step 2: Java's ``constrainedAssign`` for members that all subscribe to the same topics."""
    everything = [TopicPartition(t, p) for t in _subscribed(members, partitions_per_topic)
                  for p in range(partitions_per_topic[t])]
    if not members:
        return {}
    min_quota, over = divmod(len(everything), len(members))
    max_quota = min_quota + (1 if over else 0)
    assignment: Assignments = {m.member_id: [] for m in members}
    under_min: list[str] = []  # members below min_quota, filled first
    at_min: list[str] = []  # members at min_quota that may still take one more
    at_max = 0  # members holding max_quota > min_quota
    for m in members:
        mine = owned[m.member_id]
        if len(mine) < min_quota:
            assignment[m.member_id] = list(mine)
            under_min.append(m.member_id)
        elif len(mine) >= max_quota and at_max < over:
            assignment[m.member_id] = mine[:max_quota]
            at_max += 1
        else:
            assignment[m.member_id] = mine[:min_quota]
            if at_max < over:
                at_min.append(m.member_id)
    if at_max == over:
        at_min.clear()
    taken = {tp for tps in assignment.values() for tp in tps}
    i = 0  # Java walks under_min with an iterator, restarting it when it runs out
    for tp in (tp for tp in everything if tp not in taken):
        if i >= len(under_min):
            i = 0
        from_under = bool(under_min)
        member_id = under_min[i] if from_under else at_min.pop(0)
        assignment[member_id].append(tp)
        count = len(assignment[member_id])
        if count == min_quota:
            under_min.pop(i)  # the iterator's remove(): the next member moves to i
            at_min.append(member_id)
            continue
        if count == max_quota:
            at_max += 1
        if from_under:
            i += 1
    return assignment


def _general(members: Sequence[GroupMember], topics: Mapping[str, set[str]], owned: Assignments,
             partitions_per_topic: Mapping[str, int]) -> Assignments:
    """Step 3: sticky and as balanced as single moves allow, for differing subscriptions."""
    order = {m.member_id: i for i, m in enumerate(members)}
    assignment: Assignments = {m.member_id: list(owned[m.member_id]) for m in members}
    taken = {tp for tps in assignment.values() for tp in tps}
    candidates = {t: [m.member_id for m in members if t in topics[m.member_id]] for t in _subscribed(members, partitions_per_topic)}
    pending = sorted((TopicPartition(t, p) for t in candidates for p in range(partitions_per_topic[t])
                      if TopicPartition(t, p) not in taken), key=lambda tp: (len(candidates[tp.topic]), tp))
    for tp in pending:
        member_id = min(candidates[tp.topic], key=lambda m: (len(assignment[m]), order[m]))
        assignment[member_id].append(tp)
    moved = True
    while moved:  # each move lowers the sum of squared loads, so this ends
        moved = False
        for giver in sorted(assignment, key=lambda m: (-len(assignment[m]), order[m])):
            for tp in sorted(assignment[giver], reverse=True):
                taker = min(candidates[tp.topic], key=lambda m: (len(assignment[m]), order[m]))
                if len(assignment[giver]) - len(assignment[taker]) >= 2:
                    assignment[giver].remove(tp)
                    assignment[taker].append(tp)
                    moved = True
                    break
            if moved:
                break
    return assignment


#: Assignors by the names ``partition.assignment.strategy`` takes.
ASSIGNORS: dict[str, type[Assignor]] = {
    cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, CooperativeStickyAssignor)
}


def rebalance_protocol(assignors: Iterable[Assignor]) -> RebalanceProtocol:
    """The protocol a member uses: cooperative only if every assignor it offers supports it.

    Java's ``ConsumerCoordinator`` picks the highest protocol all configured assignors
    share, so the default list (range, cooperative-sticky) still rebalances eagerly.
    """
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(assignor.protocols)
    return RebalanceProtocol.COOPERATIVE if RebalanceProtocol.COOPERATIVE in common else RebalanceProtocol.EAGER
