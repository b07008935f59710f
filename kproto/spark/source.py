"""``spark.read.format("kproto")`` and ``spark.readStream.format("kproto")``: Kafka topics.

(Writing, ``df.write.format("kproto")``, is :mod:`kproto.spark.sink`; one format name
serves both directions, as "kafka" does in Spark.)

The schema, options and defaults are Spark's Kafka connector's (see
:mod:`kproto.spark.planning` for the option list), so a job moves between the two by
changing the format name ("kafka" itself is reserved by Spark and cannot be taken)::

    df = (spark.read.format("kproto")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events")
          .option("startingOffsets", '{"events":{"0":100,"1":-2}}')
          .option("endingOffsets", "latest")
          .option("includeHeaders", "true")
          .load())

Planning runs on the driver (:class:`~kproto.spark.planning.Planner`), fetching and
decoding on the executors (:func:`~kproto.spark.fetch.read_range`).

Streaming (pyspark 4.2+, which gives Python sources read limits): offsets are Spark's
JSON form ``{"topic":{"0":n}}``; ``startingOffsets`` defaults to latest; partitions that
appear during the query start at earliest; ``maxOffsetsPerTrigger`` caps each
micro-batch, shared among partitions in proportion to their backlog exactly as Spark
does; ``Trigger.AvailableNow`` reads up to the offsets of the query's start, in as many
micro-batches as that cap makes. Offsets live in Spark's checkpoint only: nothing is
committed to Kafka (as in Spark's connector).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kproto.spark.fetch import WORKER_CLIENTS, read_range
from kproto.spark.options import check_schema, flag
from kproto.spark.planning import OffsetRange, Planner, SourceOptions
from kproto.spark.schema import kafka_schema
from kproto.spark.sink import KafkaArrowWriter, KafkaStreamArrowWriter, sink_options
from kproto.structs import TopicPartition

__all__ = ["KafkaBatchReader", "KafkaStreamReader", "KprotoDataSource", "rate_limit"]

Offsets = dict[TopicPartition, int]


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Spark's JSON offsets: ``{"topic": {"0": 12}}``."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_json(offsets: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {TopicPartition(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()}


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> Offsets:
    """End offsets reading at most about ``limit`` records past ``start`` (Spark's ``rateLimit``).

    Each partition gets a share of ``limit`` in proportion to its backlog; a share
    below one record is rounded up so that no partition starves.
    """
    sizes = {tp: end - start[tp] for tp, end in latest.items() if end - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        if tp not in sizes:
            out[tp] = end
            continue
        share = limit * (sizes[tp] / total)
        out[tp] = min(end, start[tp] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out


class KafkaBatchReader(DataSourceReader):
    """A batch query: one plan of offset ranges, made when Spark asks for the partitions."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[OffsetRange]:
        planner = Planner(self.options)
        try:
            tps = planner.topic_partitions()
            start = planner.resolve(self.options.starting, tps, starting=True)
            end = planner.resolve(self.options.ending, tps, starting=False)
            return planner.ranges(start, end)
        finally:
            planner.close()

    def read(self, partition: OffsetRange) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


def _read(options: SourceOptions, partition: OffsetRange) -> Iterator[pa.RecordBatch]:
    # When partitions() finds nothing to read, Spark still runs one task, with InputPartition(None).
    # A task runs in a PySpark worker, which keeps its clients for its next tasks.
    return read_range(options, partition, WORKER_CLIENTS) if isinstance(partition, OffsetRange) else iter(())


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming query. Spark keeps one instance on the driver for the planning calls and
    pickles copies to the executors for :meth:`read` (the admin client is not pickled)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.planner = Planner(options)
        self.cap: Offsets | None = None  # Trigger.AvailableNow: the latest offsets when the query started
        self.latest: Offsets | None = None  # from the last latestOffset, reported as progress

    def initialOffset(self) -> dict:
        tps = self.planner.topic_partitions()
        return to_json(self.planner.resolve(self.options.starting, tps, starting=True))

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def _latest(self) -> Offsets:
        tps = self.planner.topic_partitions()
        return self.planner.list_offsets(dict.fromkeys(tps, "latest"))

    def _with_new_partitions(self, start: Offsets, known: Offsets) -> Offsets:
        """``start`` plus every partition of ``known`` it lacks, at earliest (new partitions)."""
        new = [tp for tp in known if tp not in start]
        return {**start, **self.planner.list_offsets(dict.fromkeys(new, "earliest"))}

    def prepareForTriggerAvailableNow(self) -> None:
        self.cap = self._latest()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        latest = self._latest() if self.cap is None else self.cap
        self.latest = latest
        begin = self._with_new_partitions(from_json(start), latest)
        # A partition behind its start (data loss) stays put here; partitions() reports it.
        end = {tp: max(latest.get(tp, offset), offset) for tp, offset in begin.items()}
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        return to_json(end)

    def reportLatestOffset(self) -> dict | None:
        return None if self.latest is None else to_json(self.latest)

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        finish = from_json(end)
        return self.planner.ranges(self._with_new_partitions(from_json(start), finish), finish)

    def read(self, partition: OffsetRange) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets are in Spark's checkpoint, and Kafka keeps the records."""

    def stop(self) -> None:
        self.planner.close()


class KprotoDataSource(DataSource):
    """The ``kproto`` format: Kafka topics read (and written) through kproto's clients."""

    @classmethod
    def name(cls) -> str:
        return "kproto"

    def schema(self) -> StructType:
        return kafka_schema(flag(self.options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        check_schema(schema, self.schema(), "kproto")
        return KafkaBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        check_schema(schema, self.schema(), "kproto")
        return KafkaStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return KafkaArrowWriter(sink_options(self.options, schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaStreamArrowWriter(sink_options(self.options, schema, overwrite))
