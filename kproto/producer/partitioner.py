"""Which partition a record goes to: Java's rules, byte for byte.

- A record with a key goes to ``(murmur2(key) & 0x7fffffff) % partitions`` — the Java
  client's default, and librdkafka's ``murmur2_random`` — so kproto and Java producers
  put the same key in the same partition.
- A record without a key (or every record, with ``partitioner.ignore.keys``) goes to the
  topic's *sticky* partition, which changes only when a new batch would be opened for it
  (KIP-480): batches fill up instead of spreading one record per partition.
- ``partitioner.class="round_robin"`` cycles through the partitions record by record;
  a callable ``f(key_bytes, partitions, topic) -> int`` decides for itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from kproto.codec import murmur2_partition

__all__ = ["Partitioner", "make_partitioner"]


class Partitioner:
    """The default partitioner (murmur2 for keys, sticky for the rest).

    ``partition`` returns -1 for "the sticky partition": the accumulator resolves it,
    since only it knows whether the sticky partition's batch has room (see
    :meth:`sticky` and :meth:`next_sticky`).
    """

    def __init__(self, ignore_keys: bool = False) -> None:
        self.ignore_keys = ignore_keys
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, partitions: int) -> int:
        if key is None or self.ignore_keys:
            return -1
        return murmur2_partition(key, partitions)

    def sticky(self, topic: str, partitions: int) -> int:
        p = self._sticky.get(topic)
        if p is None or p >= partitions:
            p = self._sticky[topic] = random.randrange(partitions)
        return p

    def next_sticky(self, topic: str, partitions: int) -> int:
        """A new sticky partition for ``topic``, another than the last when there is a choice."""
        previous = self._sticky.get(topic)
        p = random.randrange(partitions)
        if partitions > 1 and p == previous:
            p = (p + 1 + random.randrange(partitions - 1)) % partitions
        self._sticky[topic] = p
        return p


class _RoundRobin(Partitioner):
    def __init__(self) -> None:
        super().__init__()
        self._next: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, partitions: int) -> int:
        n = self._next.get(topic, 0)
        self._next[topic] = n + 1
        return n % partitions


class _Callable(Partitioner):
    def __init__(self, fn: Callable[[bytes | None, int, str], int]) -> None:
        super().__init__()
        self._fn = fn

    def partition(self, topic: str, key: bytes | None, partitions: int) -> int:
        p = self._fn(key, partitions, topic)
        if not isinstance(p, int) or not 0 <= p < partitions:
            raise ValueError(f"partitioner.class returned {p!r} for a topic with {partitions} partitions")
        return p


def make_partitioner(setting: Any, ignore_keys: bool = False) -> Partitioner:
    """The partitioner for ``partitioner.class``: None, ``"round_robin"`` or a callable."""
    if setting is None:
        return Partitioner(ignore_keys)
    if setting == "round_robin":
        return _RoundRobin()
    return _Callable(setting)
