"""Topic configs: Kafka's names, types, defaults, validators and broker synonyms.

One table, :data:`TOPIC_CONFIGS`, holds every topic config Kafka 4.0 and 4.1 define
(Kafka's ``LogConfig``; the docs page renders it). Every path that takes a config value
goes through its :meth:`ConfigKey.check`: CreateTopics, AlterConfigs,
IncrementalAlterConfigs, the broker's own settings (a topic config's broker synonym,
``segment.bytes`` -> ``log.segment.bytes``, has the same type and validator), dynamic
broker configs, and configs read back from disk. A value that does not pass changes
nothing: the request gets INVALID_CONFIG (topics) or INVALID_REQUEST (broker configs, as
Kafka answers them, KAFKA-13609), a broker started with it refuses to start, and one read
back from disk is logged and dropped (see :func:`sanitize`).

Facts, from Kafka's ``ConfigDef`` and ``LogConfig``:

- INT is a Java int and LONG a Java long: ``segment.bytes=3000000000`` is "not a number
  of type INT"; numbers may have surrounding blanks, nothing else;
- BOOLEAN is ``true`` or ``false``, in any case;
- a LIST is comma-separated, each item trimmed; an empty string is the empty list;
- ranges are inclusive, ``[14,...]`` is "at least 14";
- ``min.compaction.lag.ms`` may not exceed ``max.compaction.lag.ms`` (``LogConfig.validateValues``).

``segment.bytes``: Kafka 4.0 takes any int from 14 (``LegacyRecord.RECORD_OVERHEAD_V0``);
Kafka 4.1 raised the floor to 1 MiB and added an internal ``internal.segment.bytes`` for
tests. minibroker keeps 4.0's floor, since tests here roll segments every few hundred
bytes.

``enforced``: whether minibroker acts on a config. The others are validated, stored and
described, so tools see them, and take effect as the features behind them land (no
throttled replication, tiered storage, broker-side recompression or preallocation yet).

In a :class:`~minibroker.MiniCluster` a topic's configs are the controller's: CreateTopics,
AlterConfigs and IncrementalAlterConfigs are checked with the same rules
(:func:`validate_all`, :func:`apply_ops`) and committed as ConfigRecords to the metadata
log, which every broker applies (see :mod:`minibroker.cluster.controller`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TOPIC_CONFIGS",
    "BROKER_SYNONYMS",
    "ConfigKey",
    "ConfigType",
    "ConfigSource",
    "validate",
    "validate_all",
    "sanitize",
    "effective",
    "SET",
    "DELETE",
    "APPEND",
    "SUBTRACT",
    "apply_ops",
    "default_of",
    "as_text",
    "is_list",
]

log = logging.getLogger("minibroker")


class ConfigType:
    """DescribeConfigs' config_type codes (KIP-569)."""

    BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7


class ConfigSource:
    """DescribeConfigs' config_source codes (KIP-226), highest precedence first."""

    TOPIC_CONFIG = 1  # Kafka's DYNAMIC_TOPIC_CONFIG
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


_TYPE_NAMES = {ConfigType.BOOLEAN: "BOOLEAN", ConfigType.STRING: "STRING", ConfigType.INT: "INT",
               ConfigType.LONG: "LONG", ConfigType.DOUBLE: "DOUBLE", ConfigType.LIST: "LIST"}
_BOUNDS = {ConfigType.INT: (-(2**31), 2**31 - 1), ConfigType.LONG: (-(2**63), 2**63 - 1)}
_INTEGER = re.compile(r"[+-]?[0-9]+")
# ThrottledReplicaListValidator: "*", or partition:broker pairs.
_REPLICA = re.compile(r"[0-9]+:[0-9]+")
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class ConfigKey:
    """One topic config, as Kafka's ``ConfigDef`` defines it.

    Attributes:
        name: the topic-level name.
        type: a :class:`ConfigType` code.
        default: Kafka's default, as DescribeConfigs shows it.
        doc: what it does, and what minibroker makes of it.
        minimum, maximum: the inclusive range of a number (None: unbounded).
        choices: the valid strings of a STRING, or the valid items of a LIST.
        also: values valid outside the range (``compression.gzip.level`` -1).
        synonym: the broker config that gives its default (Kafka's
            ``ServerTopicConfigSynonyms``), if any.
        enforced: whether minibroker acts on it (else stored and described only).
    """

    name: str
    type: int
    default: str
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    also: tuple[int, ...] = ()
    synonym: str | None = None
    enforced: bool = False

    def check(self, value: Any, name: str | None = None) -> Any:
        """``value`` (a string, or already typed) as this config's Python value:
        int (INT, LONG), float (DOUBLE), bool (BOOLEAN), str (STRING; a LIST as its
        comma-joined, trimmed items).

        Args:
            name: the name to give in errors (a broker synonym's), default :attr:`name`.

        Raises:
            ValueError: the value is not valid, in Kafka's words: "Invalid value 3000000000
                for configuration segment.bytes: Not a number of type INT".
        """
        name = name or self.name

        def invalid(why: str) -> ValueError:
            return ValueError(f"Invalid value {value} for configuration {name}: {why}")

        if value is None:
            raise ValueError(f"Null value not supported for: {name}")
        if self.type == ConfigType.BOOLEAN:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text not in ("true", "false"):
                raise invalid("Expected value to be either true or false")
            return text == "true"
        if self.type == ConfigType.LIST and isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        if self.type in (ConfigType.STRING, ConfigType.LIST):
            if not isinstance(value, str):
                raise invalid(f"Expected value to be a string, not {type(value).__name__}")
            if self.type == ConfigType.STRING:
                if self.choices and value not in self.choices:
                    raise invalid(f"String must be one of: {', '.join(self.choices)}")
                return value
            items = [item.strip() for item in value.split(",")] if value.strip() else []
            for item in items:
                if self.name.endswith(".throttled.replicas"):
                    if item != "*" and not _REPLICA.fullmatch(item) or (item == "*" and len(items) > 1):
                        raise invalid("must be the wildcard (*) or a list of partitionId:brokerId")
                elif item not in self.choices:
                    raise invalid(f"String must be one of: {', '.join(self.choices)}")
            return ",".join(items)
        if isinstance(value, bool):
            raise invalid(f"Not a number of type {_TYPE_NAMES[self.type]}")
        if self.type == ConfigType.DOUBLE:
            try:
                number: float = float(value)
            except ValueError:
                raise invalid("Not a number of type DOUBLE") from None
            if number != number:
                raise invalid("Not a number of type DOUBLE")
        else:
            if isinstance(value, str):
                if not _INTEGER.fullmatch(value.strip()):
                    raise invalid(f"Not a number of type {_TYPE_NAMES[self.type]}")
                value = value.strip()
            if not isinstance(value, (int, str)):
                raise invalid(f"Not a number of type {_TYPE_NAMES[self.type]}")
            number = int(value)
            low, high = _BOUNDS[self.type]
            if not low <= number <= high:
                raise invalid(f"Not a number of type {_TYPE_NAMES[self.type]}")
        if number in self.also:
            return number
        if self.minimum is not None and number < self.minimum:
            if self.maximum is not None:
                raise invalid(f"Value must be between {self.minimum:g} and {self.maximum:g}"
                              + "".join(f" or {v}" for v in self.also))
            raise invalid(f"Value must be at least {self.minimum:g}")
        if self.maximum is not None and number > self.maximum:
            raise invalid(f"Value must be no more than {self.maximum:g}")
        return number

    @property
    def valid_values(self) -> str:
        """The valid values as Kafka's docs write them (``[14,...]``), for the docs page."""
        if self.choices:
            return f"[{', '.join(self.choices)}]"
        if self.name.endswith(".throttled.replicas"):
            return "* or [partitionId]:[brokerId],..."
        if self.minimum is None and self.maximum is None:
            return ""
        low = "" if self.minimum is None else f"{self.minimum:g}"
        high = "..." if self.maximum is None else f"...,{self.maximum:g}"
        return f"[{low},{high}]" + "".join(f" or {v}" for v in self.also)


_B, _S, _I, _L, _D, _LIST = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST
_DAY, _WEEK = str(24 * 3600 * 1000), str(7 * 24 * 3600 * 1000)
_THROTTLED = "replicas whose replication is throttled: * or partitionId:brokerId pairs (no throttling in minibroker: stored only)"
_REMOTE = "(tiered storage: not in minibroker, stored only)"

# Kafka 4.0/4.1 LogConfig, name order. Defaults, types, ranges and synonyms are Kafka's.
TOPIC_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in (
    ConfigKey("cleanup.policy", _LIST, "delete", "delete (retention), compact (keep the last record per key), both, or neither (empty)",
              choices=("compact", "delete"), synonym="log.cleanup.policy", enforced=True),
    ConfigKey("compression.gzip.level", _I, "-1", "gzip level when compression.type is gzip (broker-side recompression: stored only)",
              minimum=1, maximum=9, also=(-1,), synonym="compression.gzip.level"),
    ConfigKey("compression.lz4.level", _I, "9", "lz4 level when compression.type is lz4 (stored only)",
              minimum=1, maximum=17, synonym="compression.lz4.level"),
    ConfigKey("compression.type", _S, "producer", "codec the broker keeps batches in; minibroker keeps the producer's (stored only)",
              choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), synonym="compression.type"),
    ConfigKey("compression.zstd.level", _I, "3", "zstd level when compression.type is zstd (stored only)",
              minimum=-131072, maximum=22, synonym="compression.zstd.level"),
    ConfigKey("delete.retention.ms", _L, _DAY, "how long a compacted topic keeps tombstones",
              minimum=0, synonym="log.cleaner.delete.retention.ms", enforced=True),
    ConfigKey("file.delete.delay.ms", _L, "60000", "wait before a deleted segment's files go: they are renamed *.deleted "
              "and removed at the first log.retention.check.interval.ms pass after this delay (at once for 0)",
              minimum=0, synonym="log.segment.delete.delay.ms", enforced=True),
    ConfigKey("flush.messages", _L, str(LONG_MAX), "fsync after this many records", minimum=1,
              synonym="log.flush.interval.messages", enforced=True),
    ConfigKey("flush.ms", _L, str(LONG_MAX), "fsync once this long has passed since the last flush, checked at each append "
              "and each log.retention.check.interval.ms pass (Kafka: each log.flush.scheduler.interval.ms)", minimum=0,
              synonym="log.flush.interval.ms", enforced=True),
    ConfigKey("follower.replication.throttled.replicas", _LIST, "", _THROTTLED),
    ConfigKey("index.interval.bytes", _I, "4096", "log bytes between offset index entries", minimum=0,
              synonym="log.index.interval.bytes", enforced=True),
    ConfigKey("leader.replication.throttled.replicas", _LIST, "", _THROTTLED),
    ConfigKey("local.retention.bytes", _L, "-2", f"local share of retention.bytes (-2: all of it) {_REMOTE}", minimum=-2,
              synonym="log.local.retention.bytes"),
    ConfigKey("local.retention.ms", _L, "-2", f"local share of retention.ms (-2: all of it) {_REMOTE}", minimum=-2,
              synonym="log.local.retention.ms"),
    ConfigKey("max.compaction.lag.ms", _L, str(LONG_MAX), "a log with a dirty record older than this is compacted whatever its ratio",
              minimum=1, synonym="log.cleaner.max.compaction.lag.ms", enforced=True),
    ConfigKey("max.message.bytes", _I, "1048588", "largest record batch the topic accepts (MESSAGE_TOO_LARGE above)", minimum=0,
              synonym="message.max.bytes", enforced=True),
    ConfigKey("message.timestamp.after.max.ms", _L, "3600000", "how far ahead of the broker's clock a CreateTime "
              "timestamp may be (INVALID_TIMESTAMP beyond)", minimum=0, synonym="log.message.timestamp.after.max.ms", enforced=True),
    ConfigKey("message.timestamp.before.max.ms", _L, str(LONG_MAX), "how far behind the broker's clock a CreateTime "
              "timestamp may be (INVALID_TIMESTAMP beyond)", minimum=0, synonym="log.message.timestamp.before.max.ms", enforced=True),
    ConfigKey("message.timestamp.type", _S, "CreateTime", "CreateTime (the producer's) or LogAppendTime (the broker's clock)",
              choices=("CreateTime", "LogAppendTime"), synonym="log.message.timestamp.type", enforced=True),
    ConfigKey("min.cleanable.dirty.ratio", _D, "0.5", "a log is compacted once its dirty share of the cleanable bytes exceeds this",
              minimum=0, maximum=1, synonym="log.cleaner.min.cleanable.ratio", enforced=True),
    ConfigKey("min.compaction.lag.ms", _L, "0", "shortest a record stays uncompacted (its segment is not cleaned before)",
              minimum=0, synonym="log.cleaner.min.compaction.lag.ms", enforced=True),
    ConfigKey("min.insync.replicas", _I, "1", "in-sync replicas an acks=all produce needs (NOT_ENOUGH_REPLICAS with a "
              "smaller ISR; a single broker is an ISR of one)",
              minimum=1, synonym="min.insync.replicas", enforced=True),
    ConfigKey("preallocate", _B, "false", "preallocate new segment files (minibroker never preallocates: stored only)",
              synonym="log.preallocate"),
    ConfigKey("remote.log.copy.disable", _B, "false", f"stop copying to remote storage {_REMOTE}"),
    ConfigKey("remote.log.delete.on.disable", _B, "false", f"delete remote data when remote.storage.enable goes false {_REMOTE}"),
    ConfigKey("remote.storage.enable", _B, "false", f"keep segments in remote storage {_REMOTE}"),
    ConfigKey("retention.bytes", _L, "-1", "largest partition size before the oldest segments go (-1: no limit)",
              synonym="log.retention.bytes", enforced=True),
    ConfigKey("retention.ms", _L, _WEEK, "how long segments are kept (-1: forever)", minimum=-1,
              synonym="log.retention.ms", enforced=True),
    ConfigKey("segment.bytes", _I, "1073741824", "size at which a segment is rolled (Kafka 4.0's floor, 14)", minimum=14,
              synonym="log.segment.bytes", enforced=True),
    ConfigKey("segment.index.bytes", _I, "10485760", "largest offset and time index of a segment (entries of 8 and 12 "
              "bytes); the segment rolls when either is full (minibroker does not preallocate the files)", minimum=4,
              synonym="log.index.size.max.bytes", enforced=True),
    ConfigKey("segment.jitter.ms", _L, "0", "largest random time taken off segment.ms, drawn for each segment", minimum=0,
              synonym="log.roll.jitter.ms", enforced=True),
    ConfigKey("segment.ms", _L, _WEEK, "age at which a segment is rolled", minimum=1, synonym="log.roll.ms", enforced=True),
    ConfigKey("unclean.leader.election.enable", _B, "false", "elect an out-of-sync replica as a last resort, losing what "
              "only the ISR had (a MiniCluster's controller; a single broker has no one else to elect)",
              synonym="unclean.leader.election.enable", enforced=True),
)}

# Topic config -> the broker config that gives its default (ServerTopicConfigSynonyms).
BROKER_SYNONYMS: dict[str, str] = {k.name: k.synonym for k in TOPIC_CONFIGS.values() if k.synonym}


def validate(name: str, value: str | None) -> str | None:
    """Why ``name=value`` is not a valid topic config, or None if it is."""
    key = TOPIC_CONFIGS.get(name)
    if key is None:
        return f"Unknown topic config name: {name}"
    try:
        key.check(value)
    except ValueError as exc:
        return str(exc)
    return None


def validate_all(configs: Mapping[str, str | None], broker: Any = None) -> str | None:
    """Why a topic's whole set of configs is not valid, or None: each value, then the
    rules across them (``LogConfig.validateValues``), on the values in force (the topic's,
    else the broker's through ``broker``, else Kafka's defaults)."""
    for name, value in configs.items():
        if why := validate(name, value):
            return why
    low = int(effective(configs, "min.compaction.lag.ms", broker))
    high = int(effective(configs, "max.compaction.lag.ms", broker))
    if low > high:
        return f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
    return None


def sanitize(topic: str, configs: Mapping[str, str | None]) -> dict[str, str | None]:
    """A topic's configs read back from disk, without those that are no longer valid.

    Kafka does not refuse to start over a stored config it cannot apply (it logs it,
    KAFKA-19875, and ``DynamicBrokerConfig`` does the same for broker configs), so a
    value written by an older minibroker, or edited by hand, is logged as an error and
    the topic falls back to its default, which DescribeConfigs then shows.
    """
    kept: dict[str, str | None] = {}
    for name, value in configs.items():
        if value is None:
            continue
        why = validate(name, value)
        if why:
            log.error("topic %s: ignoring the stored config %s=%r, the default applies: %s", topic, name, value, why)
        else:
            kept[name] = value
    if why := validate_all(kept):
        log.error("topic %s: ignoring the stored compaction lags, the defaults apply: %s", topic, why)
        kept.pop("min.compaction.lag.ms", None)
        kept.pop("max.compaction.lag.ms", None)
    return kept


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


# -- changes: AlterConfigs / IncrementalAlterConfigs ----------------------------------------

#: IncrementalAlterConfigs' ``config_operation`` codes (KIP-339's OpType).
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


_SYNONYMS = {key.synonym: key for key in TOPIC_CONFIGS.values() if key.synonym}


def is_list(name: str) -> bool:
    """Whether ``name`` (a topic config or its broker synonym) is a LIST, the only type
    APPEND and SUBTRACT apply to."""
    key = TOPIC_CONFIGS.get(name) or _SYNONYMS.get(name)
    return key is not None and key.type == ConfigType.LIST


def default_of(name: str) -> str | None:
    """Kafka's default of a topic config or of its broker synonym, as text (None: neither)."""
    key = TOPIC_CONFIGS.get(name) or _SYNONYMS.get(name)
    return key.default if key is not None else None


def as_text(value: Any) -> str:
    """A config value as Kafka shows it (booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def apply_ops(current: Mapping[str, str | None], ops: Iterable[tuple[str, int, str | None]],
              default: Callable[[str], str | None]) -> tuple[dict[str, str | None], str | None]:
    """A resource's configs after IncrementalAlterConfigs' ``(name, operation, value)`` ops,
    and why they cannot apply (None: they can). The one owner of the ops' rules, for a
    single broker's handler and a cluster's controller alike.

    APPEND and SUBTRACT work on a LIST's items and start from ``default(name)`` when the
    resource does not set it (Kafka's ``ConfigurationControlManager.getParts``); APPEND
    adds only items not there yet. The result is not validated here (:func:`validate_all`).
    """
    configs = dict(current)
    for name, operation, value in ops:
        if operation == SET:
            configs[name] = value
        elif operation == DELETE:
            configs.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            if not is_list(name):
                return configs, f"{name} is not a list config: APPEND and SUBTRACT do not apply"
            was = configs.get(name)
            was = default(name) if was is None else was
            items = [v.strip() for v in str(was).split(",") if v.strip()]
            values = [v.strip() for v in (value or "").split(",") if v.strip()]
            if operation == APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [v for v in items if v not in values]
            configs[name] = ",".join(items)
        else:
            return configs, f"unknown config operation {operation}"
    return configs, None
