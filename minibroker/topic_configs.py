"""Topic-level configs: Kafka's names, defaults and types, and their validation.

One table serves CreateTopics (configs given at creation), AlterConfigs,
IncrementalAlterConfigs and DescribeConfigs (every config, with its default).
``ENFORCED`` lists the ones minibroker acts on today; the others are validated and
stored, so tools see them, and take effect as the features behind them land.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TOPIC_CONFIGS", "ENFORCED", "BROKER_SYNONYMS", "ConfigType", "validate", "effective"]


class ConfigType:
    """DescribeConfigs' config_type codes (KIP-569)."""

    BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7


@dataclass(frozen=True)
class TopicConfig:
    name: str
    default: str
    type: int
    doc: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None


_LONG_MAX = str(2**63 - 1)

TOPIC_CONFIGS: dict[str, TopicConfig] = {c.name: c for c in (
    TopicConfig("cleanup.policy", "delete", ConfigType.LIST, "delete, compact, or both", ("delete", "compact")),
    TopicConfig("compression.type", "producer", ConfigType.STRING, "codec the broker keeps batches in",
                ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    TopicConfig("delete.retention.ms", "86400000", ConfigType.LONG, "how long tombstones are kept on compacted topics", minimum=0),
    TopicConfig("flush.messages", _LONG_MAX, ConfigType.LONG, "fsync after this many messages", minimum=1),
    TopicConfig("flush.ms", _LONG_MAX, ConfigType.LONG, "fsync after this long", minimum=0),
    TopicConfig("index.interval.bytes", "4096", ConfigType.INT, "bytes of log between offset index entries", minimum=0),
    TopicConfig("max.message.bytes", "1048588", ConfigType.INT, "largest record batch the topic accepts", minimum=0),
    TopicConfig("message.timestamp.type", "CreateTime", ConfigType.STRING, "CreateTime or LogAppendTime",
                ("CreateTime", "LogAppendTime")),
    TopicConfig("min.cleanable.dirty.ratio", "0.5", ConfigType.DOUBLE, "dirty share that triggers compaction", minimum=0),
    TopicConfig("min.compaction.lag.ms", "0", ConfigType.LONG, "minimum age before a record may be compacted", minimum=0),
    TopicConfig("min.insync.replicas", "1", ConfigType.INT, "replicas that must acknowledge an acks=all produce", minimum=1),
    TopicConfig("retention.bytes", "-1", ConfigType.LONG, "largest partition size before old segments go (-1: no limit)"),
    TopicConfig("retention.ms", "604800000", ConfigType.LONG, "how long segments are kept (-1: forever)", minimum=-1),
    TopicConfig("segment.bytes", "1073741824", ConfigType.INT, "size at which a segment is rolled", minimum=14),
    TopicConfig("segment.ms", "604800000", ConfigType.LONG, "age at which a segment is rolled", minimum=1),
)}

ENFORCED = frozenset({"max.message.bytes", "message.timestamp.type", "min.insync.replicas"})


def validate(name: str, value: str | None) -> str | None:
    """Why ``name=value`` is not a valid topic config, or None if it is."""
    config = TOPIC_CONFIGS.get(name)
    if config is None:
        return f"unknown topic config {name!r}"
    if value is None:
        return f"{name} needs a value"
    if config.type == ConfigType.LIST:
        parts = [p.strip() for p in value.split(",")]
        bad = [p for p in parts if p not in config.choices]
        return f"{name} must be a list of {', '.join(config.choices)}" if bad or not parts else None
    if config.choices:
        return None if value in config.choices else f"{name} must be one of {', '.join(config.choices)}"
    try:
        number = float(value) if config.type == ConfigType.DOUBLE else int(value)
    except ValueError:
        return f"{name} must be a number, not {value!r}"
    if config.minimum is not None and number < config.minimum:
        return f"{name} must be at least {config.minimum:g}"
    return None


# Topic config -> the broker config that gives its default (Kafka's
# ServerTopicConfigSynonyms), for the broker configs minibroker has.
BROKER_SYNONYMS = {
    "cleanup.policy": "log.cleanup.policy",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "flush.messages": "log.flush.interval.messages",
    "index.interval.bytes": "log.index.interval.bytes",
    "max.message.bytes": "message.max.bytes",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
}


def effective(configs: Mapping[str, str | None], name: str, broker: Any = None) -> str:
    """The value in force for a topic: its own setting, else its broker synonym's value
    (when ``broker``, the broker's config, is given), else Kafka's default."""
    value = configs.get(name)
    if value is not None:
        return value
    if broker is not None and name in BROKER_SYNONYMS:
        value = broker[BROKER_SYNONYMS[name]]
        return str(value).lower() if isinstance(value, bool) else str(value)
    return TOPIC_CONFIGS[name].default
