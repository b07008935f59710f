"""Which partition a record goes to: Java's rules, byte for byte. The one owner of that choice.

- A record given a partition goes there (it must be one of the topic's).
- ``partitioner.class="round_robin"`` cycles through the partitions record by record, and
  a callable ``f(key_bytes, num_partitions, topic) -> int`` decides for itself
  (``num_partitions``: the partition count; the result is in ``range(num_partitions)``).
- Otherwise Java's default (``BuiltInPartitioner``): a record with a key goes to
  ``(murmur2(key) & 0x7fffffff) % partitions`` — librdkafka's ``murmur2_random`` too —
  so kproto and Java producers put the same key in the same partition.
- A record without a key (or every record, with ``partitioner.ignore.keys``) goes to the
  topic's *sticky* partition, which changes only when a new batch would be opened for it
  (KIP-480): batches fill up instead of spreading one record per partition.

:class:`Partitioner` holds those decisions and the sticky state. The codec's
:class:`~kproto.codec.Appender` applies them per record without a Python call: it reads
``chooser``, ``hash_keys`` and ``sticky`` once, hashes keys with the codec's murmur2, and
calls back here only for what happens per topic or per batch (:meth:`Partitioner.stick`,
:meth:`Partitioner.next_sticky`) and for a refused partition.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

__all__ = ["Chooser", "Partitioner"]

Chooser = Callable[[str, "bytes | None", int], int]


def _round_robin() -> Chooser:
    counters: dict[str, int] = {}

    def choose(topic: str, key: bytes | None, partitions: int) -> int:
        n = counters.get(topic, 0)
        counters[topic] = n + 1
        return n % partitions
    return choose


def _user(fn: Callable[[bytes | None, int, str], int]) -> Chooser:
    def choose(topic: str, key: bytes | None, partitions: int) -> int:
        p = fn(key, partitions, topic)
        if not isinstance(p, int) or not 0 <= p < partitions:
            raise ValueError(f"partitioner.class returned {p!r} for a topic with {partitions} partitions")
        return p
    return choose


class Partitioner:
    """``partitioner.class`` and ``partitioner.ignore.keys`` of one producer.

    Args:
        setting: ``partitioner.class``: None for Java's default, ``"round_robin"``, or a
            callable ``f(key_bytes, num_partitions, topic) -> int``.
        ignore_keys: ``partitioner.ignore.keys``: keyed records go to the sticky partition too.

    Attributes:
        chooser: ``(topic, key, partitions) -> partition`` for every record without a
            partition, or None for Java's default.
        hash_keys: with the default, keyed records go to murmur2's partition (else: sticky).
        sticky: topic -> its sticky partition (KIP-480); the codec reads it per record.
    """

    __slots__ = ("chooser", "hash_keys", "sticky")

    def __init__(self, setting: Any = None, ignore_keys: bool = False) -> None:
        self.chooser: Chooser | None = (None if setting is None else _round_robin() if setting == "round_robin"
                                        else _user(setting))
        self.hash_keys = not ignore_keys
        self.sticky: dict[str, int] = {}

    def stick(self, topic: str, partitions: int) -> int:
        """``topic``'s sticky partition; one at random when it has none yet, or its partition
        count changed below it (Java's ``BuiltInPartitioner.nextPartition``)."""
        p = self.sticky.get(topic, -1)
        if not 0 <= p < partitions:
            p = self.sticky[topic] = random.randrange(partitions)
        return p

    def next_sticky(self, topic: str, previous: int, partitions: int) -> int:
        """A new sticky partition for ``topic``, another than ``previous`` when there is one:
        its batch there is full, so the next batch goes elsewhere (KIP-480)."""
        p = random.randrange(partitions)
        if partitions > 1 and p == previous:
            p = (p + 1 + random.randrange(partitions - 1)) % partitions
        self.sticky[topic] = p
        return p

    @staticmethod
    def refuse(topic: str, partition: int, partitions: int) -> ValueError:
        """The error for a partition (given with a record, or chosen) that is not the topic's."""
        return ValueError(f"partition {partition} is not in [0, {partitions}) of topic {topic!r}")
