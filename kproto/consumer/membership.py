"""A member of a classic consumer group, sans-I/O: the requests it sends and what it makes
of the answers (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).

Theory of operation (Java's ``AbstractCoordinator`` and ``ConsumerCoordinator``):

- :meth:`Membership.join` is a generator that a thin async driver runs: it yields a
  :class:`~kproto.protocol.messages.JoinGroupRequest` or
  :class:`~kproto.protocol.messages.SyncGroupRequest` to send to the coordinator (and
  is sent back the response), or a :class:`NeedPartitions` (and is sent back
  ``{topic: partition count}``); it returns this member's
  :class:`~kproto.consumer.protocol.Assignment`. It rejoins by itself where Kafka says
  to: MEMBER_ID_REQUIRED (KIP-394: join again with the id given), UNKNOWN_MEMBER_ID
  (join again without an id), and REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION from
  SyncGroup (the rebalance moved on). Coordinator errors (NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) are raised for the driver to
  find the coordinator again; anything else is raised as the typed error it is.
- The leader (the member the coordinator names) decodes every member's subscription,
  asks for the partition counts of all their topics and runs the assignor the group
  chose; a follower sends an empty SyncGroup and gets its part.
- Heartbeat answers: REBALANCE_IN_PROGRESS asks for a rejoin; ILLEGAL_GENERATION and
  UNKNOWN_MEMBER_ID mean the group went on without this member: its partitions are
  *lost* (others may own them already, so no commit is possible) and it rejoins
  (without its member id for UNKNOWN_MEMBER_ID).
- Static members (``group.instance.id``, KIP-345) keep their assignment across restarts
  and never send LeaveGroup (their session timeout removes them), as in Java.

States are Java's ``MemberState``; :data:`TRANSITIONS` lists the legal moves and an
illegal one raises.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kproto.consumer.assignors import Assignor, GroupMember, RebalanceProtocol, rebalance_protocol
from kproto.consumer.protocol import (
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kproto.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    IllegalTransitionError,
    InconsistentGroupProtocolError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    for_code,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kproto.structs import TopicPartition

__all__ = ["TRANSITIONS", "IllegalTransitionError", "MemberState", "Membership", "NeedPartitions"]

#: Lowest versions that carry ``group_instance_id`` (static membership, KIP-345).
STATIC_MIN_VERSIONS = {ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3, ApiKey.HEARTBEAT: 3, ApiKey.LEAVE_GROUP: 3,
                       ApiKey.OFFSET_COMMIT: 7}


class MemberState(enum.Enum):
    """Java's ``MemberState``."""

    UNJOINED = "UNJOINED"  # no generation: not joined yet, or left, or fell out
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup sent
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # joined; SyncGroup sent
    STABLE = "STABLE"  # has a generation and an assignment


#: The legal moves (a join may start over: PREPARING_REBALANCE to itself).
TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    MemberState.UNJOINED: frozenset({MemberState.PREPARING_REBALANCE}),
    MemberState.PREPARING_REBALANCE: frozenset({MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE,
                                                MemberState.UNJOINED}),
    MemberState.COMPLETING_REBALANCE: frozenset({MemberState.STABLE, MemberState.PREPARING_REBALANCE,
                                                 MemberState.UNJOINED}),
    MemberState.STABLE: frozenset({MemberState.PREPARING_REBALANCE, MemberState.UNJOINED}),
}


@dataclass(frozen=True, slots=True)
class NeedPartitions:
    """The leader needs ``{topic: partition count}`` of these topics (those that exist)."""

    topics: frozenset[str]


_REJOIN_AFTER_SYNC = (RebalanceInProgressError.code, IllegalGenerationError.code, UnknownMemberIdError.code)


class Membership:
    """One member of a consumer group.

    Args:
        group_id: ``group.id``.
        assignors: the assignors offered, in preference order.
        session_timeout_ms, rebalance_timeout_ms: sent in JoinGroup
            (``session.timeout.ms`` and ``max.poll.interval.ms``).
        group_instance_id: ``group.instance.id`` for static membership.
        rack_id: ``client.rack``, sent in the subscription (empty: none).
    """

    def __init__(self, group_id: str, assignors: Sequence[Assignor], *, session_timeout_ms: int,
                 rebalance_timeout_ms: int, group_instance_id: str | None = None, rack_id: str = "") -> None:
        if not assignors:
            raise ValueError("at least one assignor is needed")
        self.group_id = group_id
        self.assignors = {a.name: a for a in assignors}
        self.protocol = rebalance_protocol(assignors)
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.group_instance_id = group_instance_id
        self.rack_id = rack_id or None
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation_id = -1
        self.leader_id = ""
        self.protocol_name: str | None = None
        self.group_topics: frozenset[str] = frozenset()  # every member's topics (known to the leader)
        self.rejoin_reason: str | None = "not joined yet"  # None while nothing asks for a rejoin
        self.lost = False  # the group went on without us: owned partitions are lost

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    def _move(self, state: MemberState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransitionError(f"{self.state.name} -> {state.name}")
        self.state = state

    def min_version(self, api_key: int) -> int:
        """The lowest version of a group API this member may send (static members need more)."""
        return STATIC_MIN_VERSIONS.get(api_key, 0) if self.group_instance_id is not None else 0

    def request_rejoin(self, reason: str) -> None:
        """Ask for a rejoin at the next opportunity (the first reason given is kept)."""
        self.rejoin_reason = self.rejoin_reason or reason

    def reset(self, *, lost: bool = False, keep_member_id: bool = False) -> None:
        """Forget the generation (and the member id unless kept); ``lost``: partitions are lost."""
        self.generation_id = -1
        self.leader_id = ""
        if not keep_member_id:
            self.member_id = ""
        if self.state is not MemberState.UNJOINED:
            self._move(MemberState.UNJOINED)
        self.lost = self.lost or lost
        self.request_rejoin("the member left the group" if not lost else "the group moved on without this member")

    # -- join and sync ------------------------------------------------------------------------

    def _subscription(self, topics: Collection[str], owned: Collection[TopicPartition], assignor: Assignor) -> bytes:
        return encode_subscription(Subscription(
            tuple(sorted(topics)), assignor.user_data(self.generation_id),
            tuple(sorted(owned)) if self.protocol is RebalanceProtocol.COOPERATIVE else (),
            self.generation_id, self.rack_id))

    def join(self, topics: Collection[str], owned: Collection[TopicPartition]
             ) -> Generator[Any, Any, Assignment]:
        """Join the group (two-step with KIP-394), sync, and return this member's assignment.

        Args:
            topics: this member's subscription.
            owned: the partitions it holds now (sent to cooperative assignors).

        Raises:
            KafkaCodeError: the coordinator's error (a coordinator error is retriable:
                find the coordinator and call again).
        """
        try:
            while True:
                self._move(MemberState.PREPARING_REBALANCE)
                reason, self.rejoin_reason = self.rejoin_reason, None
                joined = yield JoinGroupRequest(
                    group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                    rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
                    group_instance_id=self.group_instance_id, protocol_type=PROTOCOL_TYPE,
                    protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=self._subscription(topics, owned, a))
                               for name, a in self.assignors.items()],
                    reason=reason)
                code = joined.error_code
                if code == MemberIdRequiredError.code:
                    self.member_id = joined.member_id
                    self.request_rejoin("KIP-394: join again with the member id given")
                    continue
                if code == UnknownMemberIdError.code:
                    self.member_id = ""
                    self.request_rejoin("the coordinator did not know this member")
                    continue
                if code:
                    raise for_code(code)(f"JoinGroup of group {self.group_id!r}")
                self.member_id, self.generation_id = joined.member_id, joined.generation_id
                self.leader_id, self.protocol_name = joined.leader, joined.protocol_name
                self._move(MemberState.COMPLETING_REBALANCE)
                assignments = []
                if self.is_leader:
                    assignments = yield from self._assign(joined.members)
                synced = yield SyncGroupRequest(
                    group_id=self.group_id, generation_id=self.generation_id, member_id=self.member_id,
                    group_instance_id=self.group_instance_id, protocol_type=PROTOCOL_TYPE,
                    protocol_name=self.protocol_name, assignments=assignments)
                code = synced.error_code
                if code in _REJOIN_AFTER_SYNC:
                    if code == UnknownMemberIdError.code:
                        self.member_id = ""
                    self.request_rejoin(f"SyncGroup answered {for_code(code).name}")
                    continue
                if code:
                    raise for_code(code)(f"SyncGroup of group {self.group_id!r}")
                self._move(MemberState.STABLE)
                return decode_assignment(synced.assignment)
        finally:
            if self.state is not MemberState.STABLE:  # failed, or abandoned (closing)
                self.generation_id = -1
                self._move(MemberState.UNJOINED)
                self.request_rejoin("the last join did not complete")

    def _assign(self, members: Sequence[Any]) -> Generator[Any, Any, list[Any]]:
        """The leader's part: run the chosen assignor over every member's subscription."""
        assignor = self.assignors.get(self.protocol_name or "")
        if assignor is None:
            raise InconsistentGroupProtocolError(f"the group chose assignor {self.protocol_name!r}, which this member does not offer")
        group = [GroupMember(m.member_id, decode_subscription(m.metadata), m.group_instance_id) for m in members]
        self.group_topics = frozenset(t for m in group for t in m.subscription.topics)
        counts: Mapping[str, int] = yield NeedPartitions(self.group_topics)
        assigned = assignor.assign(counts, group)
        return [SyncGroupRequest.SyncGroupRequestAssignment(
            member_id=m.member_id, assignment=encode_assignment(Assignment(tuple(assigned.get(m.member_id, ())))))
            for m in group]

    # -- heartbeats and leaving ---------------------------------------------------------------

    def heartbeat_request(self) -> HeartbeatRequest:
        return HeartbeatRequest(group_id=self.group_id, generation_id=self.generation_id, member_id=self.member_id,
                                group_instance_id=self.group_instance_id)

    def is_current(self, generation_id: int) -> bool:
        """Whether an answer to a request sent in ``generation_id`` still speaks of this
        member: it is STABLE in that generation (a rebalance may have started since)."""
        return self.state is MemberState.STABLE and self.generation_id == generation_id

    def on_heartbeat(self, error_code: int, generation_id: int) -> None:
        """Apply the answer to a Heartbeat sent in ``generation_id`` (a stale one is ignored).

        Raises:
            FencedInstanceIdError: another member took this ``group.instance.id`` (fatal).
            KafkaCodeError: a coordinator error (find it again) or another error.
        """
        if error_code == 0 or not self.is_current(generation_id):
            return
        if error_code == RebalanceInProgressError.code:
            self.request_rejoin("the group is rebalancing")
        elif error_code == IllegalGenerationError.code:
            self.reset(lost=True, keep_member_id=True)
        elif error_code == UnknownMemberIdError.code:
            self.reset(lost=True)
        elif error_code == FencedInstanceIdError.code:
            raise FencedInstanceIdError(f"group.instance.id {self.group_instance_id!r} was taken by another member")
        else:
            raise for_code(error_code)(f"Heartbeat of group {self.group_id!r}")

    def leave_request(self, version: int, reason: str) -> LeaveGroupRequest | None:
        """The LeaveGroup to send at ``version``, or None when there is nothing to leave
        (not joined) or it must not be sent (static members leave by session timeout)."""
        if not self.member_id or self.group_instance_id is not None:
            return None
        if version >= 3:
            return LeaveGroupRequest(group_id=self.group_id, members=[LeaveGroupRequest.MemberIdentity(
                member_id=self.member_id, reason=reason)])
        return LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id)
