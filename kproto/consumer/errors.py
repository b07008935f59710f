"""Errors only the consumer raises, with no Kafka error code of their own.

All are :class:`~kproto.errors.KafkaError` subclasses; the others the consumer raises
come from :mod:`kproto.errors` (``OffsetOutOfRangeError`` carries ``.partitions`` when
``auto.offset.reset`` is ``none``; ``RebalanceInProgressError`` from a commit means:
poll, which rejoins, then commit again).
"""

from __future__ import annotations

from collections.abc import Mapping

from kproto.errors import KafkaError
from kproto.structs import TopicPartition

__all__ = ["CommitFailedError", "NoOffsetForPartitionError", "RecordDeserializationError"]


class CommitFailedError(KafkaError):
    """A commit cannot succeed: the group went on without this member.

    Its generation is over (the coordinator answered ILLEGAL_GENERATION or
    UNKNOWN_MEMBER_ID, chained as the cause, or the member already knew it was out),
    so its partitions may be consumed by others now; the next poll rejoins. Java's
    ``CommitFailedException``.
    """


class NoOffsetForPartitionError(KafkaError):
    """``auto.offset.reset`` is ``none`` and partitions have no committed offset.

    Java's ``NoOffsetForPartitionException``. Give the partitions a position with
    :meth:`~kproto.consumer.AIOConsumer.seek` (or commit one) before polling again.

    Attributes:
        partitions: the partitions without a position.
    """

    def __init__(self, partitions: list[TopicPartition]) -> None:
        super().__init__(f"no committed offset and auto.offset.reset=none for {', '.join(f'{t}-{p}' for t, p in partitions)}")
        self.partitions = partitions


class RecordDeserializationError(KafkaError):
    """``key.deserializer`` or ``value.deserializer`` failed on a record (the cause is chained).

    The partition's position stays at the record, so polling raises again; seek past it
    (``offset + 1``) to go on. Java's ``RecordDeserializationException``.

    Attributes:
        partition: where the record is.
        offset: its offset.
    """

    def __init__(self, partition: TopicPartition, offset: int, cause: BaseException) -> None:
        super().__init__(f"cannot deserialize the record at {partition.topic}-{partition.partition} offset {offset}: {cause!r}")
        self.partition = partition
        self.offset = offset


def offsets_text(offsets: Mapping[TopicPartition, int]) -> str:
    """``t-0 at 5, u-1 at 7``: partitions and offsets for error messages."""
    return ", ".join(f"{tp.topic}-{tp.partition} at {offset}" for tp, offset in offsets.items())
