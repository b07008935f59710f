"""The consumer protocol: what members of a classic group put in JoinGroup and SyncGroup.

A classic group's coordinator treats member metadata and assignments as opaque bytes;
consumers agree among themselves on their content, Kafka's "consumer protocol" (protocol
type ``"consumer"``). Each member's JoinGroup carries, per assignor it supports, a
*subscription*; the leader answers in SyncGroup with one *assignment* per member. Both
are an int16 version followed by a body, defined in Kafka's
``ConsumerProtocolSubscription.json`` and ``ConsumerProtocolAssignment.json``.

Facts, from those files and Java's ``ConsumerProtocol``:

- Subscription v0: topics, user_data. v1: owned_partitions (KIP-429). v2: generation_id.
  v3: rack_id (KIP-881). Assignment v0-v3 all hold assigned_partitions and user_data
  (its version moves with the subscription's).
- "When it encounters a newer version, it parses it using the current format": later
  versions may only append fields, so a reader decodes a newer version as its newest
  one and ignores the bytes after.
- An empty assignment (what a coordinator sends a member the leader left out) means
  no partitions.

The bodies are declared once, in the schema table's data messages
(:class:`~kproto.protocol.messages.ConsumerProtocolSubscription` and
:class:`~kproto.protocol.messages.ConsumerProtocolAssignment`, which minibroker's coordinator
reads too), and encoded with their version prefix by the same generic codec as every
request; this module only converts to and from :class:`Subscription` and :class:`Assignment`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kproto.protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kproto.structs import TopicPartition

__all__ = [
    "PROTOCOL_TYPE",
    "Assignment",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

#: The protocol type every consumer group member declares in JoinGroup.
PROTOCOL_TYPE = "consumer"

#: The newest version of each body known here (both are 3 in Kafka 4.x).
SUBSCRIPTION_VERSION: int = ConsumerProtocolSubscription.VERSIONS.hi
ASSIGNMENT_VERSION: int = ConsumerProtocolAssignment.VERSIONS.hi

@dataclass(frozen=True, slots=True)
class Subscription:
    """A member's subscription, as the group leader sees it.

    Attributes:
        topics: the topics the member wants.
        user_data: assignor-specific bytes (cooperative-sticky puts the generation here).
        owned_partitions: what the member holds now (v1+; KIP-429 cooperative rebalancing).
        generation_id: the generation its ``owned_partitions`` are from (v2+; -1 unknown).
        rack_id: the member's rack (v3+), for rack-aware assignors.
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    """What the leader gave one member: its partitions and assignor-specific bytes."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


def _grouped(partitions: Iterable[TopicPartition], cls: type) -> list[Any]:
    """Partitions as the wire's ``[{topic, [partition]}]``, in topic then partition order."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [cls(topic=t, partitions=ps) for t, ps in by_topic.items()]


def _flat(groups: Iterable[Any]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(g.topic, p) for g in groups for p in g.partitions)


def encode_subscription(subscription: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """Serialize ``subscription`` at ``version`` (fields a version lacks are left out)."""
    cls = ConsumerProtocolSubscription
    body = cls(
        topics=list(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=_grouped(subscription.owned_partitions, cls.TopicPartition) if version >= 1 else [],
        generation_id=subscription.generation_id if version >= 2 else -1,
        rack_id=subscription.rack_id if version >= 3 else None,
    )
    return body.encode_versioned(version)


def decode_subscription(data: bytes) -> Subscription:
    """Parse a member's subscription, of any version (newer ones as the newest known).

    Raises:
        ProtocolError: the bytes are not a subscription.
    """
    _, body = ConsumerProtocolSubscription.decode_versioned(data, newer_as_newest=True)
    return Subscription(tuple(body.topics), body.user_data, _flat(body.owned_partitions), body.generation_id,
                        body.rack_id)


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    """Serialize ``assignment`` at ``version``."""
    cls = ConsumerProtocolAssignment
    body = cls(assigned_partitions=_grouped(assignment.partitions, cls.TopicPartition), user_data=assignment.user_data)
    return body.encode_versioned(version)


def decode_assignment(data: bytes) -> Assignment:
    """Parse an assignment; empty bytes are an empty assignment.

    Raises:
        ProtocolError: the bytes are not an assignment.
    """
    if not data:
        return Assignment(())
    _, body = ConsumerProtocolAssignment.decode_versioned(data, newer_as_newest=True)
    return Assignment(_flat(body.assigned_partitions), body.user_data)
