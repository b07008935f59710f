"""The driver's half of the ``kproto`` source: options to offset ranges.

Options have the names, values and defaults of Spark's Kafka connector
(``structured-streaming-kafka-integration``): exactly one of ``assign``, ``subscribe``,
``subscribePattern``; ``kafka.bootstrap.servers``; ``startingOffsets`` /
``endingOffsets`` (``earliest``, ``latest`` or JSON ``{"topic":{"0":23,"1":-2}}``, -2
meaning earliest and -1 latest); ``startingTimestamp`` /
``startingOffsetsByTimestamp`` / ``endingTimestamp`` / ``endingOffsetsByTimestamp``
(first offset whose timestamp is at or after it, and ``startingOffsetsByTimestampStrategy``
``error`` or ``latest`` when there is none); ``failOnDataLoss``; ``minPartitions``;
``maxRecordsPerPartition``; ``maxOffsetsPerTrigger``; ``includeHeaders``;
``kafkaConsumer.pollTimeoutMs``. Every other ``kafka.*`` option is a Kafka consumer
setting for kproto's client, checked as such (an unknown key is an error naming the
closest one); like Spark, the keys that would let Kafka manage offsets are refused.
``subscribePattern`` is matched with Python's ``re`` as a whole-name match, which covers
the Java regex syntax people use with it (classes, alternation, quantifiers).

:class:`Planner` asks the cluster through :class:`~kproto.admin.AdminClient`
(Metadata, ListOffsets) and cuts :class:`OffsetRange` input partitions, one per
topic-partition, split as Spark's ``KafkaOffsetRangeCalculator`` splits them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import InputPartition

from kproto.admin import AdminClient
from kproto.config import ADMIN, ClientConfig, settings_of_kind
from kproto.errors import KafkaError, UnknownTopicOrPartitionError
from kproto.protocol.timestamps import OffsetTimestamp
from kproto.spark.options import flag, get, kafka_options, number
from kproto.structs import TopicPartition

__all__ = ["OffsetRange", "Planner", "SourceOptions", "DataLossError", "EARLIEST", "LATEST"]

# Spark's JSON offsets for "earliest" and "latest" are Kafka's ListOffsets timestamps.
EARLIEST, LATEST = OffsetTimestamp.EARLIEST, OffsetTimestamp.LATEST

# Spark refuses these kafka.* options: the source, not Kafka, manages offsets and bytes.
_REFUSED = {
    "auto.offset.reset": "set startingOffsets instead",
    "enable.auto.commit": "the source does not commit offsets to Kafka",
    "key.deserializer": "keys are always binary; cast or decode them in Spark",
    "value.deserializer": "values are always binary; cast or decode them in Spark",
    "interceptor.classes": "interceptors are not supported",
    "group.id": "the source does not join a consumer group",
}


class DataLossError(KafkaError):
    """Offsets the query needs are gone (retention, DeleteRecords, a truncated log).

    Raised only with ``failOnDataLoss=true`` (the default); set it to false to skip
    what is gone and carry on, as Spark's Kafka source does.
    """


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Offsets ``[start, end)`` of one partition: what one Spark task fetches."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class OffsetsSpec:
    """A parsed starting or ending position: ``kind`` is earliest, latest, offsets, timestamp or timestamps."""

    kind: str
    value: Any = None


@dataclass(frozen=True)
class SourceOptions:
    """The ``kproto`` source's options, parsed and checked (picklable: it goes to executors)."""

    kafka: dict[str, str]
    assign: dict[str, list[int]] | None
    subscribe: list[str] | None
    pattern: str | None
    starting: OffsetsSpec
    ending: OffsetsSpec
    timestamp_strategy: str
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    poll_timeout_ms: int
    consumer: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str], streaming: bool) -> SourceOptions:
        """Check ``options`` as Spark's Kafka source does.

        Raises:
            ValueError: a missing, unknown, refused or malformed option.
            ConfigError: a ``kafka.*`` option that kproto's consumer does not take.
        """
        kafka = kafka_options(options, _REFUSED)
        consumer = dict(ClientConfig("consumer", kafka))  # raises ConfigError on unknown keys
        chosen = [name for name in ("assign", "subscribe", "subscribePattern") if get(options, name) is not None]
        if len(chosen) != 1:
            raise ValueError("give exactly one of the options assign, subscribe, subscribePattern"
                             + (f", not {' and '.join(chosen)}" if chosen else ""))
        assign = subscribe = pattern = None
        if chosen[0] == "assign":
            assign = _parse_assign(get(options, "assign"))
        elif chosen[0] == "subscribe":
            subscribe = [t.strip() for t in get(options, "subscribe").split(",") if t.strip()]
            if not subscribe:
                raise ValueError("option subscribe names no topic")
        else:
            pattern = get(options, "subscribePattern")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"option subscribePattern is not a valid regular expression: {exc}") from None
        starting = _position(options, "starting", LATEST if streaming else EARLIEST)
        ending = _position(options, "ending", LATEST)
        if streaming and any(get(options, n) is not None for n in
                             ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")):
            raise ValueError("ending offsets are for batch queries only")
        if not streaming:
            if starting.kind == "latest" or (starting.kind == "offsets" and LATEST in starting.value.values()):
                raise ValueError("startingOffsets latest (-1) is for streaming queries only")
            if ending.kind == "earliest" or (ending.kind == "offsets" and EARLIEST in ending.value.values()):
                raise ValueError("endingOffsets earliest (-2) is not allowed")
        for unsupported in ("minOffsetsPerTrigger", "maxTriggerDelay"):
            if get(options, unsupported) is not None:
                raise ValueError(f"option {unsupported} is not supported by the kproto source "
                                 "(a Python source has no composite read limit)")
        strategy = (get(options, "startingOffsetsByTimestampStrategy") or "error").lower()
        if strategy not in ("error", "latest"):
            raise ValueError("startingOffsetsByTimestampStrategy must be error or latest")
        return cls(
            kafka=kafka, assign=assign, subscribe=subscribe, pattern=pattern, starting=starting, ending=ending,
            timestamp_strategy=strategy,
            fail_on_data_loss=flag(options, "failOnDataLoss", True),
            include_headers=flag(options, "includeHeaders", False),
            min_partitions=number(options, "minPartitions", None, 1),
            max_records_per_partition=number(options, "maxRecordsPerPartition", None, 1),
            max_offsets_per_trigger=number(options, "maxOffsetsPerTrigger", None, 1),
            poll_timeout_ms=number(options, "kafkaConsumer.pollTimeoutMs", 120000, 1),
            consumer=consumer,
        )

    @property
    def admin_config(self) -> dict[str, str]:
        """The ``kafka.*`` settings an admin client takes (the consumer-only ones left out)."""
        return settings_of_kind(ADMIN, self.kafka)


def _parse_json(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"option {name} is not valid JSON: {exc}") from None


def _parse_assign(text: str) -> dict[str, list[int]]:
    value = _parse_json(text, "assign")
    if not isinstance(value, dict) or not all(isinstance(p, list) for p in value.values()):
        raise ValueError('option assign must be JSON like {"topicA":[0,1],"topicB":[2,4]}')
    return {topic: [int(p) for p in partitions] for topic, partitions in value.items()}


def _per_partition(text: str, name: str) -> dict[TopicPartition, int]:
    value = _parse_json(text, name)
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError(f'option {name} must be JSON like {{"topicA":{{"0":23,"1":-1}}}}')
    return {TopicPartition(t, int(p)): int(o) for t, parts in value.items() for p, o in parts.items()}


def _position(options: Mapping[str, str], prefix: str, default: int) -> OffsetsSpec:
    """``startingTimestamp`` > ``startingOffsetsByTimestamp`` > ``startingOffsets``, as Spark ranks them."""
    if (ts := get(options, f"{prefix}Timestamp")) is not None:
        return OffsetsSpec("timestamp", int(ts))
    if (by_ts := get(options, f"{prefix}OffsetsByTimestamp")) is not None:
        return OffsetsSpec("timestamps", _per_partition(by_ts, f"{prefix}OffsetsByTimestamp"))
    text = get(options, f"{prefix}Offsets")
    if text is None:
        return OffsetsSpec("earliest" if default == EARLIEST else "latest")
    if text.strip().lower() in ("earliest", "latest"):
        return OffsetsSpec(text.strip().lower())
    offsets = _per_partition(text, f"{prefix}Offsets")
    if any(o < EARLIEST for o in offsets.values()):
        raise ValueError(f"option {prefix}Offsets holds an offset below -2")
    return OffsetsSpec("offsets", offsets)


class Planner:
    """Driver-side questions to the cluster for one query; :meth:`close` when done.

    Picklable: the admin client is opened on first use and never pickled.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._admin: AdminClient | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_admin": None}

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(self.options.admin_config)
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def topic_partitions(self) -> list[TopicPartition]:
        """The partitions the options select, as of now (unknown subscribed topics select none)."""
        o = self.options
        if o.assign is not None:
            return sorted(TopicPartition(t, p) for t, ps in o.assign.items() for p in ps)
        if o.subscribe is not None:
            topics = o.subscribe
        else:
            pattern = re.compile(o.pattern)
            topics = [t for t in self.admin.list_topics() if pattern.fullmatch(t)]
        described = {}
        for topic in topics:
            try:
                described.update(self.admin.describe_topics([topic]))
            except UnknownTopicOrPartitionError:  # not there (yet): selects nothing, as in Spark
                pass
        return sorted(TopicPartition(t, p.partition) for t, d in described.items() for p in d.partitions)

    def list_offsets(self, specs: Mapping[TopicPartition, str | int]) -> dict[TopicPartition, int]:
        """Offsets by spec (earliest, latest or a timestamp); -1 where a timestamp matches none."""
        if not specs:
            return {}
        listed = self.admin.list_offsets(specs, isolation_level=self.options.consumer["isolation.level"])
        return {tp: listed[tp].offset for tp in specs}

    def resolve(self, spec: OffsetsSpec, partitions: list[TopicPartition], *, starting: bool) -> dict[TopicPartition, int]:
        """Offsets of ``partitions`` for a starting or ending position.

        Raises:
            ValueError: JSON offsets that miss partitions, or (starting, strategy
                ``error``) a timestamp after every record of a partition.
        """
        if spec.kind in ("earliest", "latest"):
            return self.list_offsets(dict.fromkeys(partitions, spec.kind))
        if spec.kind == "timestamp":
            wanted: Mapping[TopicPartition, int] = dict.fromkeys(partitions, spec.value)
        else:
            missing = sorted(set(partitions) - set(spec.value))
            if missing:
                name = ("starting" if starting else "ending") + ("Offsets" if spec.kind == "offsets" else "OffsetsByTimestamp")
                raise ValueError(f"option {name} must give every selected partition; it misses "
                                 + ", ".join(f"{tp.topic}-{tp.partition}" for tp in missing))
            wanted = {tp: spec.value[tp] for tp in partitions}
        if spec.kind == "offsets":
            special = {tp: "earliest" if o == EARLIEST else "latest" for tp, o in wanted.items() if o < 0}
            return {**wanted, **self.list_offsets(special)}
        found = self.list_offsets(dict(wanted))
        none = [tp for tp, o in found.items() if o < 0]
        if none and starting and self.options.timestamp_strategy == "error":
            raise ValueError("no offset has a timestamp at or after the starting timestamp in "
                             + ", ".join(f"{tp.topic}-{tp.partition}" for tp in none)
                             + " (startingOffsetsByTimestampStrategy=latest starts those at the end)")
        return {**found, **self.list_offsets(dict.fromkeys(none, "latest"))}

    def ranges(self, start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> list[OffsetRange]:
        """Input partitions for ``[start, end)`` of each partition, checked against what is still there.

        Raises:
            DataLossError: ``failOnDataLoss`` and a start below the partition's log start
                (those records are gone) or an end before the start.
        """
        tps = sorted(tp for tp in start if tp in end)
        earliest = self.list_offsets(dict.fromkeys(tps, "earliest"))
        out = []
        for tp in tps:
            first, last = start[tp], end[tp]
            lost = []
            if first < earliest[tp]:
                lost.append(f"offsets {first}-{earliest[tp] - 1} of {tp.topic}-{tp.partition} are gone "
                            f"(the log starts at {earliest[tp]})")
                first = earliest[tp]
            if last < first:
                lost.append(f"{tp.topic}-{tp.partition} ends at {last}, before the start {first}")
            if lost and self.options.fail_on_data_loss:
                raise DataLossError("; ".join(lost) + ". Set failOnDataLoss=false to skip what is gone.")
            if last > first:
                out.append(OffsetRange(tp.topic, tp.partition, first, last))
        return split_ranges(out, self.options.min_partitions, self.options.max_records_per_partition)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None,
                 max_records: int | None = None) -> list[OffsetRange]:
    """Split ranges as Spark's ``KafkaOffsetRangeCalculator``: into about ``min_partitions``
    pieces in proportion to their sizes (when there are fewer ranges than that), and
    into pieces of at most ``max_records``."""
    ranges = [r for r in ranges if r.size > 0]
    total = sum(r.size for r in ranges)
    out = []
    for r in ranges:
        parts = 1
        if min_partitions is not None and len(ranges) < min_partitions:
            parts = max(round(r.size / total * min_partitions), 1)
        if max_records is not None:
            parts = max(parts, math.ceil(r.size / max_records))
        remaining, begin = r.size, r.start
        for part in range(parts):
            this = remaining // (parts - part)  # the last piece takes the rounding
            remaining -= this
            out.append(OffsetRange(r.topic, r.partition, begin, begin + this))
            begin += this
    return out
