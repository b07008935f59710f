"""The classic consumer group state machine (JoinGroup/SyncGroup/Heartbeat/LeaveGroup).

One :class:`Group` per group id holds its members, generation, protocol and leader, and
decides everything the coordinator answers. No I/O and no clock here: every method takes
``now`` (seconds, monotonic) and answers held requests through the ``reply`` callables it
was given, so a test drives a group with plain calls and lists. The asyncio driver is
:class:`minibroker.coordinator.GroupCoordinator`.

Theory of operation (Kafka's ``GroupCoordinator`` / ``GroupMetadata``, classic protocol):

- A group starts Empty. The first JoinGroup moves it to PreparingRebalance. The
  rebalance completes when every known member has rejoined and no KIP-394 pending member
  id is outstanding, or when the rebalance timeout (the largest ``rebalance_timeout_ms``
  of the members) expires; members that did not rejoin are then removed. Completing
  bumps the generation, picks the protocol and the leader and answers every held
  JoinGroup: the leader gets every member's metadata, followers an empty list. The
  group is then CompletingRebalance, or Empty if no member is left.
- A new group's first rebalance waits ``group.initial.rebalance.delay.ms`` and is
  extended by that delay while new members keep arriving, up to the rebalance timeout
  (Kafka's ``InitialDelayedJoin``).
- SyncGroup from the leader stores the assignments (missing members get empty bytes),
  moves the group to Stable and answers every held SyncGroup. Members that have not
  sent SyncGroup within the rebalance timeout are removed and the group rebalances.
- Heartbeats renew a member's session; a member whose session expires is removed and
  the group rebalances. Members waiting in JoinGroup or SyncGroup do not expire (their
  own deadline governs them).
- Static members (KIP-345) are keyed by ``group_instance_id``. A known instance joining
  with an empty member id replaces the old member id (the old one is fenced:
  FENCED_INSTANCE_ID). In Stable, if the member's protocols are unchanged and the
  group's protocol would stay the same, there is no rebalance: the new id inherits the
  assignment, which SyncGroup returns.

Facts from Kafka's ``GroupMetadata``: the protocol is chosen among those every member
supports, each member voting for its first preference among these candidates, and the
one with most votes wins (Kafka breaks ties arbitrarily; here the earlier vote wins).
The leader is the first member to join, kept as long as it stays in the group.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kproto.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    IllegalTransitionError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    ProtocolError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from kproto.protocol.messages import ConsumerProtocolSubscription

__all__ = [
    "TRANSITIONS",
    "Group",
    "GroupConfig",
    "GroupState",
    "IllegalTransitionError",
    "JoinResult",
    "Member",
    "MemberInfo",
    "SyncResult",
    "parse_subscription_topics",
]


class GroupState(enum.Enum):
    """Kafka's classic group states, under Kafka's names (what DescribeGroups reports)."""

    Empty = "Empty"
    PreparingRebalance = "PreparingRebalance"
    CompletingRebalance = "CompletingRebalance"
    Stable = "Stable"
    Dead = "Dead"


S = GroupState

#: state -> the states it may move to (Kafka's ``validPreviousStates``, turned around).
TRANSITIONS: dict[GroupState, frozenset[GroupState]] = {
    S.Empty: frozenset({S.PreparingRebalance, S.Dead}),
    S.PreparingRebalance: frozenset({S.CompletingRebalance, S.Empty, S.Dead}),
    S.CompletingRebalance: frozenset({S.PreparingRebalance, S.Stable, S.Dead}),
    S.Stable: frozenset({S.PreparingRebalance, S.Dead}),
    S.Dead: frozenset({S.Dead}),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfig:
    """The broker settings a group obeys (``group.*`` broker configs, in ms)."""

    initial_rebalance_delay_ms: int = 0
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberInfo:
    """One member as the leader sees it in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinResult:
    """What a JoinGroup is answered with. ``members`` is filled for the leader only."""

    error_code: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[MemberInfo, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncResult:
    """What a SyncGroup is answered with; ``assignment`` is always bytes, maybe empty."""

    error_code: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


Reply = Callable[[object], None]


@dataclass(slots=True, kw_only=True)
class Member:
    """A group member. ``join_reply``/``sync_reply`` are set while its request is held."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    heartbeat_deadline: float = 0.0
    join_reply: Reply | None = field(default=None, repr=False)
    sync_reply: Reply | None = field(default=None, repr=False)

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        """This member's first preference among ``candidates``."""
        return next(name for name, _ in self.protocols if name in candidates)

    def renew(self, now: float) -> None:
        self.heartbeat_deadline = now + self.session_timeout_ms / 1000


def _new_member_id(prefix: str | None) -> str:
    """Kafka's form: the client id (or instance id), a dash and a random UUID."""
    return f"{prefix or ''}-{uuid.uuid4()}"


def parse_subscription_topics(metadata: bytes) -> list[str] | None:
    """Topics of a ``consumer`` protocol Subscription (any version), or None if unreadable.

    The bytes are the table's :class:`~kproto.protocol.messages.ConsumerProtocolSubscription`
    with its version prefix, read as Kafka's ``ConsumerProtocol.deserializeSubscription``
    reads them for ``ClassicGroup.computeSubscribedTopics``: a newer version as the newest
    known; an unsupported version or malformed bytes mean the topics are unknown.
    """
    try:
        _, subscription = ConsumerProtocolSubscription.decode_versioned(metadata, newer_as_newest=True)
    except ProtocolError:
        return None
    return subscription.topics


class Group:
    """One classic group and its decisions. See the module docstring.

    Every public method takes ``now`` in seconds; held requests are answered later through
    the ``reply`` callable passed in, with a :class:`JoinResult` or :class:`SyncResult`.
    After any call, :meth:`next_deadline` says when :meth:`expire` must run next.
    """

    def __init__(self, group_id: str, config: GroupConfig | None = None):
        self.group_id = group_id
        self.config = config or GroupConfig()
        self.state = GroupState.Empty
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}  # in join order: the first is the next leader
        self.static_members: dict[str, str] = {}  # group_instance_id -> member_id
        self.pending_members: dict[str, float] = {}  # KIP-394 ids handed out -> expiry
        self.pending_sync: set[str] = set()  # members yet to SyncGroup this generation
        self.sync_deadline: float | None = None
        self.join_deadline: float | None = None
        self._initial_join = False  # the join is an InitialDelayedJoin
        self._initial_remaining_ms = 0
        self._new_member_added = False

    # -- the state machine ----------------------------------------------------------------

    def transition(self, to: GroupState) -> None:
        """Move to ``to``; raises :exc:`IllegalTransitionError` for a move Kafka forbids."""
        if to not in TRANSITIONS[self.state]:
            raise IllegalTransitionError(f"group {self.group_id!r}: {self.state.name} -> {to.name} is not a legal move")
        self.state = to

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- JoinGroup ------------------------------------------------------------------------

    def join(self, *, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
             session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
             protocols: Iterable[tuple[str, bytes]], require_known_member_id: bool, now: float,
             reply: Reply) -> None:
        """Handle one JoinGroup; ``reply`` gets a :class:`JoinResult`, now or when the rebalance completes."""
        protocols = tuple((name, bytes(metadata)) for name, metadata in protocols)

        def fail(code: int) -> None:
            reply(JoinResult(error_code=code, member_id=member_id))

        if self.state is S.Dead:
            return fail(CoordinatorNotAvailableError.code)
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            return fail(InvalidSessionTimeoutError.code)
        if not self._supports(protocol_type, protocols):
            return fail(InconsistentGroupProtocolError.code)
        args = dict(client_id=client_id, client_host=client_host, session_timeout_ms=session_timeout_ms,
                    rebalance_timeout_ms=rebalance_timeout_ms, protocol_type=protocol_type, protocols=protocols)
        if not member_id:
            if group_instance_id is not None:
                if group_instance_id in self.static_members:
                    return self._replace_static_member(group_instance_id, args, now, reply)
                return self._add_member(_new_member_id(group_instance_id), group_instance_id, args, now, reply)
            new_id = _new_member_id(client_id)
            if require_known_member_id:  # KIP-394: hand out an id, expect the member back with it
                self.pending_members[new_id] = now + session_timeout_ms / 1000
                return reply(JoinResult(error_code=MemberIdRequiredError.code, member_id=new_id))
            return self._add_member(new_id, None, args, now, reply)
        if member_id in self.pending_members and group_instance_id is None:
            del self.pending_members[member_id]
            return self._add_member(member_id, None, args, now, reply)
        error = self._validate_member(member_id, group_instance_id)
        if error:
            return fail(error)
        member = self.members[member_id]
        if self.state is S.PreparingRebalance:
            return self._update_member_and_rebalance(member, args, now, reply)
        if self.state is S.CompletingRebalance:
            if member.protocols == protocols:  # a retry of a join already answered
                member.renew(now)
                return reply(self._join_result(member))
            return self._update_member_and_rebalance(member, args, now, reply)
        if self.state is S.Stable:
            if member_id == self.leader_id or member.protocols != protocols:
                return self._update_member_and_rebalance(member, args, now, reply)
            member.renew(now)  # a follower rejoining unchanged: nothing to redo
            return reply(self._join_result(member))
        return fail(UnknownMemberIdError.code)  # Empty: cannot hold members

    def _supports(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Kafka's ``supportsProtocols``: may a member with these protocols join?"""
        names = {name for name, _ in protocols}
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self._candidates())

    def _candidates(self) -> set[str]:
        """Protocols every member supports."""
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its first preference among the common protocols; most votes wins."""
        candidates = self._candidates()
        votes: dict[str, int] = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        return max(votes, key=lambda name: votes[name])  # max keeps the first of equals

    def _add_member(self, member_id: str, group_instance_id: str | None, args: dict, now: float, reply: Reply) -> None:
        member = Member(member_id=member_id, group_instance_id=group_instance_id, **args)
        member.renew(now)
        member.join_reply = reply
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member_id] = member
        if group_instance_id is not None:
            self.static_members[group_instance_id] = member_id
        if self.leader_id is None:
            self.leader_id = member_id
        if self._initial_join:
            self._new_member_added = True
        self._maybe_prepare_rebalance(now)
        self._try_complete_join(now)

    def _update_member_and_rebalance(self, member: Member, args: dict, now: float, reply: Reply) -> None:
        if member.join_reply is not None:  # the same member joined again before an answer
            self._answer_join(member, JoinResult(error_code=RebalanceInProgressError.code, member_id=member.member_id))
        member.protocols = args["protocols"]
        member.session_timeout_ms = args["session_timeout_ms"]
        member.rebalance_timeout_ms = args["rebalance_timeout_ms"]
        member.renew(now)
        member.join_reply = reply
        self._maybe_prepare_rebalance(now)
        self._try_complete_join(now)

    def _replace_static_member(self, instance_id: str, args: dict, now: float, reply: Reply) -> None:
        """KIP-345: a known instance id with an empty member id takes over under a new id."""
        old_id = self.static_members[instance_id]
        old = self.members[old_id]
        new_id = _new_member_id(instance_id)
        leader_before = self.leader_id or ""
        fenced = JoinResult(error_code=FencedInstanceIdError.code, member_id=old_id)
        self._answer_join(old, fenced)
        self._answer_sync(old, SyncResult(error_code=FencedInstanceIdError.code))
        unchanged = old.protocols == args["protocols"]
        member = Member(member_id=new_id, group_instance_id=instance_id, assignment=old.assignment, **args)
        member.renew(now)
        self.members = {(new_id if k == old_id else k): (member if k == old_id else m) for k, m in self.members.items()}
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        if self.state is S.Stable and unchanged and self.select_protocol() == self.protocol_name:
            # No rebalance: the leader field names the old leader id, so even a replaced leader
            # acts as a follower and gets its inherited assignment from SyncGroup.
            return reply(JoinResult(error_code=0, member_id=new_id, generation_id=self.generation_id,
                                    protocol_type=self.protocol_type, protocol_name=self.protocol_name,
                                    leader_id=leader_before))
        member.join_reply = reply
        self._maybe_prepare_rebalance(now)
        self._try_complete_join(now)

    def _join_result(self, member: Member) -> JoinResult:
        leader = member.member_id == self.leader_id
        return JoinResult(
            error_code=0, member_id=member.member_id, generation_id=self.generation_id,
            protocol_type=self.protocol_type, protocol_name=self.protocol_name, leader_id=self.leader_id or "",
            members=tuple(
                MemberInfo(member_id=m.member_id, group_instance_id=m.group_instance_id,
                           metadata=m.metadata(self.protocol_name))
                for m in self.members.values()
            ) if leader else (),
        )

    # -- rebalancing ----------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, now: float) -> None:
        if S.PreparingRebalance in TRANSITIONS[self.state] and self.state is not S.PreparingRebalance:
            self._prepare_rebalance(now)

    def _prepare_rebalance(self, now: float) -> None:
        if self.state is S.CompletingRebalance:  # the assignment being handed out is void
            for member in self.members.values():
                member.assignment = b""
                self._answer_sync(member, SyncResult(error_code=RebalanceInProgressError.code))
        self.pending_sync.clear()
        self.sync_deadline = None
        timeout = self.rebalance_timeout_ms
        delay = self.config.initial_rebalance_delay_ms
        if self.state is S.Empty and delay > 0:
            self._initial_join = True
            self._new_member_added = False
            self._initial_remaining_ms = max(timeout - delay, 0)
            self.join_deadline = now + delay / 1000
        else:
            self._initial_join = False
            self.join_deadline = now + timeout / 1000
        self.transition(S.PreparingRebalance)

    def _all_joined(self) -> bool:
        return not self.pending_members and all(m.join_reply is not None for m in self.members.values())

    def _try_complete_join(self, now: float) -> None:
        if self.state is S.PreparingRebalance and not self._initial_join and self._all_joined():
            self.complete_join(now)

    def complete_join(self, now: float) -> None:
        """End the join phase: drop members that did not rejoin, start the next generation."""
        for member in [m for m in self.members.values() if m.join_reply is None]:
            self._remove(member)
        self._initial_join = False
        self.join_deadline = None
        self.generation_id += 1
        if not self.members:
            self.protocol_name = None
            self.transition(S.Empty)
            return
        self.protocol_name = self.select_protocol()
        self.transition(S.CompletingRebalance)
        for member in self.members.values():
            member.renew(now)
            self._answer_join(member, self._join_result(member))
        self.pending_sync = set(self.members)
        self.sync_deadline = now + self.rebalance_timeout_ms / 1000

    # -- SyncGroup ------------------------------------------------------------------------

    def sync(self, *, member_id: str, group_instance_id: str | None, generation_id: int,
             protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
             now: float, reply: Reply) -> None:
        """Handle one SyncGroup; ``reply`` gets a :class:`SyncResult`, now or once the leader's arrives."""
        def fail(code: int) -> None:
            reply(SyncResult(error_code=code))

        if self.state is S.Dead:
            return fail(CoordinatorNotAvailableError.code)
        error = self._validate_member(member_id, group_instance_id)
        if error:
            return fail(error)
        if generation_id != self.generation_id:
            return fail(IllegalGenerationError.code)
        if (protocol_type is not None and protocol_type != self.protocol_type) or (
                protocol_name is not None and protocol_name != self.protocol_name):
            return fail(InconsistentGroupProtocolError.code)
        if self.state is S.Empty:
            return fail(UnknownMemberIdError.code)
        if self.state is S.PreparingRebalance:
            return fail(RebalanceInProgressError.code)
        member = self.members[member_id]
        member.renew(now)
        self._synced(member_id)
        if self.state is S.Stable:
            return reply(self._sync_result(member))
        # CompletingRebalance
        if member.sync_reply is not None:
            self._answer_sync(member, SyncResult(error_code=RebalanceInProgressError.code))
        member.sync_reply = reply
        if member_id == self.leader_id:
            for m in self.members.values():
                m.assignment = bytes(assignments.get(m.member_id, b""))
            self.transition(S.Stable)
            for m in self.members.values():
                self._answer_sync(m, self._sync_result(m))

    def _synced(self, member_id: str) -> None:
        self.pending_sync.discard(member_id)
        if not self.pending_sync:
            self.sync_deadline = None

    def _sync_result(self, member: Member) -> SyncResult:
        return SyncResult(error_code=0, assignment=member.assignment,
                          protocol_type=self.protocol_type, protocol_name=self.protocol_name)

    # -- Heartbeat, LeaveGroup, commits ---------------------------------------------------

    def heartbeat(self, *, member_id: str, group_instance_id: str | None, generation_id: int, now: float) -> int:
        """Renew a member's session; returns the error code (0, or REBALANCE_IN_PROGRESS...)."""
        if self.state is S.Dead:
            return CoordinatorNotAvailableError.code
        error = self._validate_member(member_id, group_instance_id)
        if error:
            return error
        if generation_id != self.generation_id:
            return IllegalGenerationError.code
        if self.state is S.Empty:
            return UnknownMemberIdError.code
        self.members[member_id].renew(now)
        return RebalanceInProgressError.code if self.state is S.PreparingRebalance else 0

    def leave(self, *, member_id: str, group_instance_id: str | None, now: float) -> int:
        """Remove one member (by member id, or by instance id for static members); returns the error code."""
        if self.state is S.Dead:
            return CoordinatorNotAvailableError.code
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return UnknownMemberIdError.code
            if member_id and member_id != current:
                return FencedInstanceIdError.code
            self.remove_member(current, now)
            return 0
        if member_id in self.pending_members:
            del self.pending_members[member_id]
            self._try_complete_join(now)
            return 0
        if member_id not in self.members:
            return UnknownMemberIdError.code
        self.remove_member(member_id, now)
        return 0

    def validate_commit(self, *, member_id: str, group_instance_id: str | None, generation_id: int,
                        now: float) -> int:
        """May this OffsetCommit be applied? 0 or the error code (Kafka's ``validateOffsetCommit``).

        Generation -1 with no member id is a simple consumer's commit, allowed only while
        the group has no members. A member's commit counts as a heartbeat.
        """
        if self.state is S.Dead:
            return CoordinatorNotAvailableError.code
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self._validate_member(member_id, group_instance_id)
            if error:
                return error
            if generation_id != self.generation_id:
                return IllegalGenerationError.code
        elif self.state is not S.Empty:
            return UnknownMemberIdError.code
        if self.state is S.CompletingRebalance:
            return RebalanceInProgressError.code
        if member_id in self.members:
            self.members[member_id].renew(now)
        return 0

    def _validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        """Kafka's ``validateCurrentMember``: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID or 0."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return UnknownMemberIdError.code
            return FencedInstanceIdError.code if current != member_id else 0
        return 0 if member_id in self.members else UnknownMemberIdError.code

    def remove_member(self, member_id: str, now: float) -> None:
        """Remove a member (left, expired or fenced) and rebalance what remains."""
        member = self.members[member_id]
        gone = JoinResult(error_code=UnknownMemberIdError.code, member_id=member_id)
        self._answer_join(member, gone)
        self._answer_sync(member, SyncResult(error_code=UnknownMemberIdError.code))
        self._remove(member)
        if self.state in (S.Stable, S.CompletingRebalance):
            self._prepare_rebalance(now)
        self._try_complete_join(now)

    def _remove(self, member: Member) -> None:
        del self.members[member.member_id]
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member.member_id:
            del self.static_members[member.group_instance_id]
        self._synced(member.member_id)
        if self.leader_id == member.member_id:
            self.leader_id = next(iter(self.members), None)

    # -- time -----------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When :meth:`expire` must next run, or None when nothing is timed."""
        deadlines = [d for d in (self.join_deadline, self.sync_deadline) if d is not None]
        deadlines.extend(self.pending_members.values())
        deadlines.extend(m.heartbeat_deadline for m in self.members.values() if self._can_expire(m))
        return min(deadlines, default=None)

    @staticmethod
    def _can_expire(member: Member) -> bool:
        return member.join_reply is None and member.sync_reply is None

    def expire(self, now: float) -> None:
        """Act on every deadline that has passed at ``now``."""
        if self.state is S.PreparingRebalance and self.join_deadline is not None and now >= self.join_deadline:
            if self._initial_join and self._new_member_added and self._initial_remaining_ms > 0:
                delay = min(self.config.initial_rebalance_delay_ms, self._initial_remaining_ms)
                self._initial_remaining_ms -= delay
                self._new_member_added = False
                self.join_deadline = now + delay / 1000
            else:
                self.complete_join(now)
        for member_id, deadline in list(self.pending_members.items()):
            if now >= deadline:
                del self.pending_members[member_id]
                self._try_complete_join(now)
        if self.sync_deadline is not None and now >= self.sync_deadline:
            late = [self.members[m] for m in self.pending_sync if m in self.members]
            self.pending_sync.clear()
            self.sync_deadline = None
            for member in late:
                self._answer_sync(member, SyncResult(error_code=RebalanceInProgressError.code))
                self._remove(member)
            if late and self.state in (S.Stable, S.CompletingRebalance):
                self._prepare_rebalance(now)
                self._try_complete_join(now)
        for member in list(self.members.values()):
            if member.member_id in self.members and self._can_expire(member) and now >= member.heartbeat_deadline:
                self.remove_member(member.member_id, now)

    # -- answering held requests ----------------------------------------------------------

    def abandon(self, error_code: int) -> None:
        """Answer every held JoinGroup and SyncGroup with ``error_code`` (the broker is stopping)."""
        for member in self.members.values():
            self._answer_join(member, JoinResult(error_code=error_code, member_id=member.member_id))
            self._answer_sync(member, SyncResult(error_code=error_code))

    @staticmethod
    def _answer_join(member: Member, result: JoinResult) -> None:
        reply, member.join_reply = member.join_reply, None
        if reply is not None:
            reply(result)

    @staticmethod
    def _answer_sync(member: Member, result: SyncResult) -> None:
        reply, member.sync_reply = member.sync_reply, None
        if reply is not None:
            reply(result)

    # -- describing -----------------------------------------------------------------------

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, or None when unknown (not the ``consumer`` protocol)."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None if self.members else set()
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics
