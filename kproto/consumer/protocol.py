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

The bodies are described once in the schema DSL and encoded by the same generic codec
as every request (:mod:`kproto.protocol.schema`); this module only adds the version
prefix and converts to and from :class:`Subscription` and :class:`Assignment`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kproto.errors import ProtocolError
from kproto.protocol.schema import Message, build_message
from kproto.protocol.spec import MessageSpec, Versions, parse_fields
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
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3

_version = struct.Struct(">h")


def _data_message(name: str, versions: str, fields: str) -> type[Message]:
    """A message class for one of Kafka's ``"type": "data"`` structures (not an API body)."""
    spec = MessageSpec(name, -1, False, Versions.parse(versions), Versions.parse("none"), parse_fields(fields, name))
    cls = build_message(spec)
    cls.__module__ = __name__
    cls.__doc__ = f"Kafka's {name} (v{versions}), generated from the DSL in {__name__}."
    return cls


SubscriptionBody = _data_message("ConsumerProtocolSubscription", "0-3", """
    topics            []string
    user_data         bytes             null  default=null
    owned_partitions  []TopicPartition  v1+  ignorable
      topic           string            v1+
      partitions      []int32           v1+
    generation_id     int32             v2+  default=-1  ignorable
    rack_id           string            v3+  null  default=null  ignorable
""")

AssignmentBody = _data_message("ConsumerProtocolAssignment", "0-3", """
    assigned_partitions  []TopicPartition
      topic              string
      partitions         []int32
    user_data            bytes             null  default=null
""")


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


def _split(data: bytes, what: str, newest: int) -> tuple[bytes, int]:
    """The body and the version to decode it at (a newer one is read as ``newest``)."""
    data = bytes(data)
    if len(data) < _version.size:
        raise ProtocolError(f"{what} of {len(data)} bytes has no version")
    (version,) = _version.unpack_from(data)
    if version < 0:
        raise ProtocolError(f"{what} has a negative version {version}")
    return data, min(version, newest)


def encode_subscription(subscription: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """Serialize ``subscription`` at ``version`` (fields a version lacks are left out)."""
    body = SubscriptionBody(
        topics=list(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=_grouped(subscription.owned_partitions, SubscriptionBody.TopicPartition) if version >= 1 else [],
        generation_id=subscription.generation_id if version >= 2 else -1,
        rack_id=subscription.rack_id if version >= 3 else None,
    )
    return _version.pack(version) + body.encode(version)


def decode_subscription(data: bytes) -> Subscription:
    """Parse a member's subscription, of any version (newer ones as the newest known).

    Raises:
        ProtocolError: the bytes are not a subscription.
    """
    data, version = _split(data, "subscription", SUBSCRIPTION_VERSION)
    body, _ = SubscriptionBody._codec.decode_from(data, _version.size, version)
    return Subscription(tuple(body.topics), body.user_data, _flat(body.owned_partitions), body.generation_id,
                        body.rack_id)


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    """Serialize ``assignment`` at ``version``."""
    body = AssignmentBody(assigned_partitions=_grouped(assignment.partitions, AssignmentBody.TopicPartition),
                          user_data=assignment.user_data)
    return _version.pack(version) + body.encode(version)


def decode_assignment(data: bytes) -> Assignment:
    """Parse an assignment; empty bytes are an empty assignment.

    Raises:
        ProtocolError: the bytes are not an assignment.
    """
    if not data:
        return Assignment(())
    data, version = _split(data, "assignment", ASSIGNMENT_VERSION)
    body, _ = AssignmentBody._codec.decode_from(data, _version.size, version)
    return Assignment(_flat(body.assigned_partitions), body.user_data)
