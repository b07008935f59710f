"""The settings of one partition log, under Kafka's names.

:class:`LogConfig` is what :class:`~minibroker.log.partition.PartitionLog` reads: segment
rolling (size, age with its jitter, full indexes), retention, the delay before deleted
files go, flushing (by records and by time), index density and the cleanup policy. Each
attribute is a Kafka config with the dots turned to underscores; the broker-level name
(``log.*``) and the topic-level name both map onto it, and :meth:`LogConfig.from_configs` accepts either, so the
broker can build one from its own settings overlaid with a topic's (DescribeConfigs /
CreateTopics names).

Defaults are Kafka's. ``segment_bytes`` may be set far below Kafka's 1 MiB floor (Kafka
4.0 has ``internal.segment.bytes`` for tests); tests here roll segments every few hundred
bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

__all__ = ["LogConfig", "LONG_MAX", "INT32_MAX"]

LONG_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1

_POLICIES = frozenset({"delete", "compact"})

# Kafka name -> attribute. Broker-level names first, then the topic-level ones that
# override them per topic (Kafka's LogConfig / ServerLogConfigs).
_NAMES: dict[str, str] = {
    "log.segment.bytes": "segment_bytes",
    "segment.bytes": "segment_bytes",
    "log.roll.ms": "segment_ms",
    "segment.ms": "segment_ms",
    "log.retention.ms": "retention_ms",
    "retention.ms": "retention_ms",
    "log.retention.bytes": "retention_bytes",
    "retention.bytes": "retention_bytes",
    "log.flush.interval.messages": "flush_interval_messages",
    "flush.messages": "flush_interval_messages",
    "log.index.interval.bytes": "index_interval_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "log.cleanup.policy": "cleanup_policy",
    "cleanup.policy": "cleanup_policy",
    "log.cleaner.delete.retention.ms": "delete_retention_ms",
    "delete.retention.ms": "delete_retention_ms",
    "log.index.size.max.bytes": "segment_index_bytes",
    "segment.index.bytes": "segment_index_bytes",
    "log.roll.jitter.ms": "segment_jitter_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "log.segment.delete.delay.ms": "file_delete_delay_ms",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "log.flush.interval.ms": "flush_ms",
    "flush.ms": "flush_ms",
    "log.cleaner.min.cleanable.ratio": "min_cleanable_dirty_ratio",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "log.cleaner.min.compaction.lag.ms": "min_compaction_lag_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "log.cleaner.max.compaction.lag.ms": "max_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
}
# Kafka's coarser spellings, used only when the ms form is absent.
_HOURS = {"log.roll.hours": "segment_ms", "log.retention.hours": "retention_ms"}
_MINUTES = {"log.retention.minutes": "retention_ms"}


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """One partition log's settings (Kafka's defaults).

    Attributes:
        segment_bytes: ``log.segment.bytes``: roll the active segment before it would grow
            past this many bytes (a batch larger than this still goes into an empty one).
        segment_ms: ``log.roll.ms``: roll once the segment spans this long, measured as
            Kafka does: from its first batch's timestamp to the new batch's, or by the
            clock since creation when the first batch has no timestamp.
        retention_ms: ``log.retention.ms``: delete segments whose newest timestamp is older
            than this; -1 keeps them forever.
        retention_bytes: ``log.retention.bytes``: delete the oldest segments while the log
            is larger than this; -1 means no limit.
        flush_interval_messages: ``log.flush.interval.messages``: fsync after this many
            appended records; the default (Long.MAX) leaves flushing to the OS and to
            segment rolls, as Kafka does.
        index_interval_bytes: ``log.index.interval.bytes``: log bytes between offset and
            time index entries.
        cleanup_policy: ``cleanup.policy``: ``"delete"``, ``"compact"``, both
            (``"compact,delete"``) or neither (``""``: kept forever, never compacted).
        delete_retention_ms: ``delete.retention.ms``: how long a compacted topic keeps
            tombstones.
        segment_index_bytes: ``segment.index.bytes`` (``log.index.size.max.bytes``): the
            largest index of a segment; it holds this // 8 offset index entries and this
            // 12 time index entries (one kept for the roll), and the segment rolls when
            either is full (Kafka preallocates the files to this size, minibroker does not).
        segment_jitter_ms: ``segment.jitter.ms`` (``log.roll.jitter.ms``): each segment
            rolls by time up to this much earlier than ``segment_ms``, a random amount
            chosen when the segment is made, so that partitions do not all roll at once.
        file_delete_delay_ms: ``file.delete.delay.ms`` (``log.segment.delete.delay.ms``):
            a deleted segment's files are renamed ``*.deleted`` and removed this long
            after.
        flush_ms: ``flush.ms`` (``log.flush.interval.ms``): fsync once this long has passed
            since the last flush; the default (Long.MAX) never does.
        min_cleanable_dirty_ratio: ``min.cleanable.dirty.ratio``: a log is compacted once
            its dirty (not yet cleaned) bytes are more than this share of its cleanable
            bytes (see :mod:`minibroker.log.cleaner`).
        min_compaction_lag_ms: ``min.compaction.lag.ms``: records stay uncompacted at
            least this long (the cleanable range stops at the first segment holding a
            newer record).
        max_compaction_lag_ms: ``max.compaction.lag.ms``: a log whose dirty part holds a
            record older than this is compacted whatever its dirty ratio.
    """

    segment_bytes: int = 1073741824
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    flush_interval_messages: int = LONG_MAX
    index_interval_bytes: int = 4096
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000
    segment_index_bytes: int = 10485760
    segment_jitter_ms: int = 0
    file_delete_delay_ms: int = 60000
    flush_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX

    def __post_init__(self) -> None:
        # Positions in the offset index are i32, so a segment can never pass 2 GiB.
        if not 1 <= self.segment_bytes <= INT32_MAX:
            raise ValueError(f"segment_bytes must be in [1, {INT32_MAX}], not {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ValueError(f"segment_ms must be positive, not {self.segment_ms}")
        if self.retention_ms < -1 or self.retention_bytes < -1:
            raise ValueError("retention_ms and retention_bytes must be >= -1 (-1: no limit)")
        if self.flush_interval_messages < 1:
            raise ValueError(f"flush_interval_messages must be positive, not {self.flush_interval_messages}")
        if self.index_interval_bytes < 0:
            raise ValueError(f"index_interval_bytes must be >= 0, not {self.index_interval_bytes}")
        if self.delete_retention_ms < 0:
            raise ValueError(f"delete_retention_ms must be >= 0, not {self.delete_retention_ms}")
        if self.segment_index_bytes < 4:  # Kafka's atLeast(4)
            raise ValueError(f"segment_index_bytes must be >= 4, not {self.segment_index_bytes}")
        if min(self.segment_jitter_ms, self.file_delete_delay_ms, self.flush_ms) < 0:
            raise ValueError("segment_jitter_ms, file_delete_delay_ms and flush_ms must be >= 0")
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise ValueError(f"min_cleanable_dirty_ratio must be in [0, 1], not {self.min_cleanable_dirty_ratio}")
        if self.min_compaction_lag_ms < 0 or self.max_compaction_lag_ms < 1:
            raise ValueError("min_compaction_lag_ms must be >= 0 and max_compaction_lag_ms >= 1")
        # Empty (neither) is valid: Kafka's ValidList takes the empty list.
        if not self.policies <= _POLICIES:
            raise ValueError(f"cleanup_policy must be 'delete', 'compact', both or neither, not {self.cleanup_policy!r}")

    @property
    def policies(self) -> frozenset[str]:
        """The cleanup policies, parsed from ``cleanup_policy``."""
        return frozenset(p.strip() for p in self.cleanup_policy.split(",") if p.strip())

    @property
    def compact(self) -> bool:
        return "compact" in self.policies

    @property
    def delete(self) -> bool:
        return "delete" in self.policies

    @classmethod
    def from_configs(cls, configs: Mapping[str, Any], *, base: LogConfig | None = None) -> LogConfig:
        """Build one from Kafka-named settings; keys that are not log settings are ignored.

        Args:
            configs: e.g. broker settings then a topic's, merged by the caller; values may
                be strings (as CreateTopics sends them).
            base: the config to start from (default: Kafka's defaults).
        """
        changes: dict[str, Any] = {}
        # Hours, then minutes, then ms: the finer spelling wins, as in Kafka.
        for table, scale in ((_HOURS, 3_600_000), (_MINUTES, 60_000), (_NAMES, 1)):
            for name, attr in table.items():
                if name in configs and configs[name] is not None:
                    value = configs[name]
                    if attr == "cleanup_policy":
                        changes[attr] = value if isinstance(value, str) else ",".join(value)
                    elif attr == "min_cleanable_dirty_ratio":  # Kafka's only DOUBLE log config
                        changes[attr] = float(value)
                    else:
                        number = int(value)
                        changes[attr] = -1 if number < 0 else number * scale
        kinds = {f.name for f in fields(cls)}
        assert set(changes) <= kinds
        return replace(base or cls(), **changes)
