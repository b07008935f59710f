"""Broker configuration: Kafka's broker config names, their defaults, and validation.

Only the keys minibroker implements are accepted; any other key is an error that names
the closest known key, so a typo never silently does nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

__all__ = ["BrokerConfig", "DEFAULTS"]

# name -> (default, type, doc). Defaults are Kafka's unless said otherwise.
DEFAULTS: dict[str, tuple[Any, type, str]] = {
    "broker.id": (0, int, "This broker's node id."),
    "num.partitions": (1, int, "Partitions of an auto-created topic, or of a CreateTopics with -1."),
    "default.replication.factor": (1, int, "Replication factor used when a CreateTopics asks for -1."),
    "auto.create.topics.enable": (True, bool, "Create unknown topics asked for in Metadata."),
    "message.max.bytes": (1048588, int, "Largest record batch a Produce may append (MESSAGE_TOO_LARGE above)."),
    "socket.request.max.bytes": (104857600, int, "Largest request frame; a larger one closes the connection."),
    "cluster.id": ("minibroker-cluster", str, "Cluster id reported in Metadata (minibroker's own default)."),
    "log.dirs": ("", str, "Comma-separated directories for the partition logs; empty keeps everything in memory (minibroker's default)."),
    "log.segment.bytes": (1073741824, int, "Size at which a segment is rolled."),
    "log.roll.ms": (604800000, int, "Age at which a segment is rolled."),
    "log.retention.ms": (604800000, int, "How long segments are kept (-1: forever)."),
    "log.retention.bytes": (-1, int, "Largest partition size before the oldest segments go (-1: no limit)."),
    "log.retention.check.interval.ms": (300000, int, "How often retention and compaction run."),
    "log.flush.interval.messages": (2**63 - 1, int, "fsync after this many records (default: leave it to the OS)."),
    "log.index.interval.bytes": (4096, int, "Log bytes between offset index entries."),
    "log.cleanup.policy": ("delete", str, "Default cleanup.policy of topics: delete, compact or both."),
    "log.cleaner.delete.retention.ms": (86400000, int, "Default delete.retention.ms: how long tombstones are kept."),
    "group.initial.rebalance.delay.ms": (0, int, "How long a new group's first rebalance waits for more members. Kafka's default is 3000; minibroker uses 0 so that tests do not wait 3 s for every new group."),
    "group.min.session.timeout.ms": (6000, int, "Smallest session.timeout.ms a member may ask for (INVALID_SESSION_TIMEOUT below)."),
    "group.max.session.timeout.ms": (1800000, int, "Largest session.timeout.ms a member may ask for (INVALID_SESSION_TIMEOUT above)."),
    "offsets.topic.num.partitions": (50, int, "Partitions of __consumer_offsets, created on the first offset commit; fixed once it exists."),
    "offsets.topic.segment.bytes": (104857600, int, "segment.bytes of __consumer_offsets (compacted, so old commits are cleaned once segments roll)."),
}


def _coerce(name: str, value: Any, kind: type) -> Any:
    if kind is bool and isinstance(value, str):
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError(f"{name} must be true or false, not {value!r}")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {kind.__name__}, not {value!r}") from None


class BrokerConfig:
    """Validated broker settings; read them as ``config["num.partitions"]``."""

    def __init__(self, values: Mapping[str, Any] | None = None):
        self._values = {name: default for name, (default, _, _) in DEFAULTS.items()}
        for name, value in (values or {}).items():
            if name not in DEFAULTS:
                close = difflib.get_close_matches(name, list(DEFAULTS), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"unknown or not yet supported broker config {name!r}{hint}")
            self._values[name] = _coerce(name, value, DEFAULTS[name][1])

    def __getitem__(self, name: str) -> Any:
        return self._values[name]
