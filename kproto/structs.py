"""Small value types shared by the clients: what users pass in and get back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["TopicPartition", "OffsetAndMetadata", "by_topic"]


class TopicPartition(NamedTuple):
    """A partition of a topic. Hashable, so it keys dicts of offsets."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset: the next offset to consume, with optional metadata."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partitions grouped by topic, as requests list them: ``{topic: [partition, ...]}``."""
    out: dict[str, list[int]] = {}
    for tp in partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out
