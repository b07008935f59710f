"""Small value types shared by the clients: what users pass in and get back."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from kproto.errors import InvalidTopicError

__all__ = ["TopicPartition", "OffsetAndMetadata", "ConsumerGroupMetadata", "by_topic", "check_topic",
           "validate_topic_name"]

# Kafka's rule (org.apache.kafka.common.internals.Topic.validate): 1 to 249 characters
# of [a-zA-Z0-9._-], and not "." or ".." (they would name the log directory's parents).
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_MAX_NAME = 249


def validate_topic_name(name: Any) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's ``Topic.validate``), or None.

    The one owner of the rule: the clients check a name before asking the broker about
    it, and minibroker checks what clients ask for.
    """
    if not isinstance(name, str):
        return f"a topic name must be a str, not {type(name).__name__}"
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if len(name) > _MAX_NAME:
        return f"topic name is longer than {_MAX_NAME} characters"
    if not _LEGAL.fullmatch(name):
        return "topic name may only contain ASCII letters, digits, '.', '_' and '-'"
    return None


class TopicPartition(NamedTuple):
    """A partition of a topic. Hashable, so it keys dicts of offsets."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset: the next offset to consume, with optional metadata."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadata:
    """Where a consumer stands in its group, for a transactional producer's
    ``send_offsets_to_transaction`` (KIP-447; Java's ``ConsumerGroupMetadata``).

    The producer sends all four with TxnOffsetCommit (v3+), and the group coordinator
    refuses the offsets of a member that was fenced since (ILLEGAL_GENERATION,
    UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID): a zombie that lost its partitions in a
    rebalance cannot commit them. Get it from ``Consumer.group_metadata()`` after the
    poll whose records the transaction holds.

    Attributes:
        group_id: ``group.id``.
        generation_id: the generation of the group the member joined (-1: not a member now).
        member_id: the member id the coordinator gave (``""``: not a member now).
        group_instance_id: ``group.instance.id`` (static membership, KIP-345), or None.
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.group_id, str) or not self.group_id:
            raise ValueError(f"group_id must be a non-empty str, not {self.group_id!r}")
        if not isinstance(self.generation_id, int) or not isinstance(self.member_id, str):
            raise TypeError("generation_id must be an int and member_id a str")


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partitions grouped by topic, as requests list them: ``{topic: [partition, ...]}``."""
    out: dict[str, list[int]] = {}
    for tp in partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def check_topic(name: Any) -> str:
    """``name`` if it is a legal topic name; raised at once otherwise, before any request.

    Raises:
        TypeError: ``name`` is not a str (None, bytes...).
        InvalidTopicError: it breaks Kafka's naming rule (see :func:`validate_topic_name`).
    """
    why = validate_topic_name(name)
    if why is None:
        return name
    if not isinstance(name, str):
        raise TypeError(why)
    raise InvalidTopicError(f"{name!r}: {why}")
