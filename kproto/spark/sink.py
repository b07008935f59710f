"""``df.write.format("kproto")`` and ``writeStream.format("kproto")``: rows to Kafka records.

The columns are those of Spark's Kafka sink: ``value`` (string or binary, required),
``key`` (string or binary), ``topic`` (string; required unless the ``topic`` option is
set, which then wins over the column), ``partition`` (int; null lets the partitioner
choose) and ``headers`` (``array<struct<key:string, value:binary>>``); other columns are
ignored. Options: ``kafka.bootstrap.servers`` and any other ``kafka.*`` producer
setting, and ``topic``.

Each task sends its rows through its own :class:`~kproto.producer.Producer`: acks=all
and idempotence by default (Kafka's defaults, so a retried batch is not written twice
by the broker), murmur2 partitioning of keys as the Java client does (the same key
lands in the same partition whoever writes it), sticky partitions for null keys. The
task ends when every record is acknowledged, and fails with the first delivery error.

Semantics are at-least-once, as with Spark's Kafka sink: a task or micro-batch that
Spark retries sends its rows again, and :meth:`abort` cannot take back what a failed
job already wrote.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, DataType, IntegerType, StringType, StructType

from kproto.config import ClientConfig
from kproto.producer import Producer
from kproto.spark.options import get, kafka_options
from kproto.spark.schema import HEADERS_TYPE

__all__ = ["KafkaArrowWriter", "KafkaStreamArrowWriter", "SinkOptions", "WriteReport", "sink_options", "write_batches"]

# Spark refuses these kafka.* sink options: the sink owns serialization.
_REFUSED = {
    "key.serializer": "keys are written as bytes (strings as UTF-8)",
    "value.serializer": "values are written as bytes (strings as UTF-8)",
    "transactional.id": "the sink is not transactional",
}


@dataclass(frozen=True)
class SinkOptions:
    """The sink's options, checked on the driver against the DataFrame's schema."""

    kafka: dict[str, str]
    topic: str | None
    columns: frozenset[str]

    @classmethod
    def parse(cls, options: Mapping[str, str], schema: StructType) -> SinkOptions:
        """Check the options and the DataFrame's columns as Spark's Kafka sink does.

        Raises:
            ValueError: a missing or refused option, or a column of the wrong type.
            ConfigError: a ``kafka.*`` option that kproto's producer does not take.
        """
        kafka = kafka_options(options, _REFUSED)
        ClientConfig("producer", kafka)  # raises ConfigError on an unknown key
        topic = get(options, "topic")
        types = {f.name: f.dataType for f in schema.fields}
        _check_column(types, "value", (StringType(), BinaryType()), required=True)
        _check_column(types, "key", (StringType(), BinaryType()))
        _check_column(types, "topic", (StringType(),), required=topic is None,
                      hint="set the topic option or give a topic column")
        _check_column(types, "partition", (IntegerType(),))
        _check_column(types, "headers", (HEADERS_TYPE,))
        return cls(kafka, topic, frozenset(types) & {"key", "value", "topic", "partition", "headers"})


def _check_column(types: dict[str, DataType], name: str, allowed: tuple[DataType, ...], required: bool = False,
                  hint: str = "") -> None:
    if name not in types:
        if required:
            raise ValueError(f"the kproto sink needs a {name!r} column" + (f": {hint}" if hint else ""))
        return
    if types[name] not in allowed:
        raise ValueError(f"column {name!r} must be {' or '.join(t.simpleString() for t in allowed)}, "
                         f"not {types[name].simpleString()}")


@dataclass
class WriteReport(WriterCommitMessage):
    """What one task wrote: records per ``(topic, partition)``."""

    counts: dict[tuple[str, int], int] = field(default_factory=dict)


def _as_bytes(column: pa.Array) -> list[bytes | None]:
    """Python bytes per row; strings become their UTF-8 bytes (a cast of the Arrow type, no copy)."""
    if pa.types.is_string(column.type):
        column = pc.cast(column, pa.binary())
    return column.to_pylist()


def write_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> WriteReport:
    """Send every row of ``batches``; return when all are acknowledged.

    Raises:
        ValueError: a row with a null topic and no topic option.
        KafkaError: the first delivery failure (the other records may have been written).
    """
    counts: Counter[tuple[str, int]] = Counter()
    with Producer(options.kafka) as producer:
        pending = []
        for batch in batches:
            n = batch.num_rows
            cols = options.columns
            values = _as_bytes(batch.column("value"))
            keys = _as_bytes(batch.column("key")) if "key" in cols else [None] * n
            partitions = batch.column("partition").to_pylist() if "partition" in cols else [None] * n
            headers = batch.column("headers").to_pylist() if "headers" in cols else [None] * n
            topics = [options.topic] * n if options.topic is not None else batch.column("topic").to_pylist()
            send = producer.send
            for topic, key, value, partition, header in zip(topics, keys, values, partitions, headers):
                if topic is None:
                    raise ValueError("a row has a null topic: give every row a topic, or set the topic option")
                pending.append(send(topic, value, key, partition=partition,
                                    headers=None if header is None else [(h["key"], h["value"]) for h in header]))
        producer.flush()
        for future in pending:
            meta = future.result()  # raises the record's delivery error
            counts[(meta.topic, meta.partition)] += 1
    return WriteReport(dict(counts))


class KafkaArrowWriter(DataSourceArrowWriter):
    """``df.write.format("kproto")``: each task produces its rows (see the module docstring)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        return write_batches(self.options, iterator)

    def commit(self, messages: list[WriteReport | None]) -> None:
        """Nothing to do: each task's records were acknowledged before it returned."""

    def abort(self, messages: list[WriteReport | None]) -> None:
        """Nothing can be done: Kafka has no way to take back acknowledged records."""


class KafkaStreamArrowWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("kproto")``: each micro-batch's tasks produce their rows."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        return write_batches(self.options, iterator)

    def commit(self, messages: list[WriteReport | None], batchId: int) -> None:
        """Nothing to do: each task's records were acknowledged before it returned."""

    def abort(self, messages: list[WriteReport | None], batchId: int) -> None:
        """Nothing can be done: a retried micro-batch writes its rows again (at-least-once)."""


def sink_options(options: Mapping[str, str], schema: StructType, overwrite: bool) -> SinkOptions:
    """:meth:`SinkOptions.parse`, refusing overwrite: a topic can only be appended to."""
    if overwrite:
        raise ValueError("the kproto sink appends to topics; it cannot overwrite them (use mode append)")
    return SinkOptions.parse(options, schema)

