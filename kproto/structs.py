"""Small value types shared by the clients: what users pass in and get back."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TopicPartition", "OffsetAndMetadata"]


class TopicPartition(NamedTuple):
    """A partition of a topic. Hashable, so it keys dicts of offsets."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset: the next offset to consume, with optional metadata."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1
