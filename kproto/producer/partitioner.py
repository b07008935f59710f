"""Which partition a record goes to: Java's rules, byte for byte.

- A record with a key goes to ``(murmur2(key) & 0x7fffffff) % partitions`` — the Java
  client's default, and librdkafka's ``murmur2_random`` — so kproto and Java producers
  put the same key in the same partition.
- A record without a key (or every record, with ``partitioner.ignore.keys``) goes to the
  topic's *sticky* partition, which changes only when a new batch would be opened for it
  (KIP-480): batches fill up instead of spreading one record per partition.

Those two rules run per record in the codec (:class:`kproto.codec.Appender`, Cython),
together with the append into the partition's batch. The alternatives live here, in
Python: ``partitioner.class="round_robin"`` cycles through the partitions record by
record, and a callable ``f(key_bytes, num_partitions, topic) -> int`` decides for itself
(``num_partitions``: the partition count; the result is in ``range(num_partitions)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["make_partitioner"]

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


def make_partitioner(setting: Any) -> Chooser | None:
    """For ``partitioner.class``: None keeps Java's default (done by the codec's Appender),
    ``"round_robin"`` or a callable give a ``(topic, key, partitions) -> partition`` chooser."""
    if setting is None:
        return None
    if setting == "round_robin":
        return _round_robin()
    return _user(setting)
