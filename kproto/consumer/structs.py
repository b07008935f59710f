"""What the consumer hands back: records, and offsets found by timestamp."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["ConsumerRecord", "OffsetAndTimestamp"]


class ConsumerRecord(NamedTuple):
    """One record as :meth:`~kproto.consumer.AIOConsumer.poll` returns it.

    A tuple, cheap to make: the codec builds a batch's records as ConsumerRecords in one
    call (:func:`kproto.codec.record_tuples`), with no object in between, and ``headers``
    is one shared empty tuple when a record has none. ``key`` and ``value`` are bytes (or
    None), or what ``key.deserializer`` / ``value.deserializer`` made of them. The
    deserializers are settings, which a type checker cannot follow into the records, so
    ``key`` and ``value`` are typed ``Any``: annotate them where you use them (``text: str
    = record.value``). A ``NamedTuple`` cannot be generic on Python 3.10, which kproto
    supports, so ``ConsumerRecord[str, bytes]`` is not offered.

    Attributes:
        topic, partition, offset: where it is.
        timestamp: milliseconds since the epoch (-1 when the format has none).
        timestamp_type: 0 CreateTime, 1 LogAppendTime, -1 none
            (:class:`kproto.records.TimestampType`).
        key, value: as produced (and deserialized).
        headers: ``((key: str, value: bytes | None), ...)`` in produced order.
        leader_epoch: the partition leader epoch the record was written in (-1 unknown).
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int


class OffsetAndTimestamp(NamedTuple):
    """The first offset at or after a timestamp, with that record's timestamp."""

    offset: int
    timestamp: int
    leader_epoch: int = -1
