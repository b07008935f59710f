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
The writers are Arrow writers: Spark hands a task ``pyarrow.RecordBatch`` objects, whose
columns become Python lists once per batch on their way into the producer (no ``Row``
per row), and deliveries are checked once per producer batch.

Semantics are at-least-once, as with Spark's Kafka sink: a task or micro-batch that
Spark retries sends its rows again, and :meth:`abort` cannot take back what a failed
job already wrote.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter

import numpy as np
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
from kproto.producer.futures import BatchResult, RecordFuture
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


def _header_lists(column: pa.ListArray) -> list[list[tuple[str, bytes | None]] | None]:
    """Each row's headers as the producer takes them, ``[(key, value), ...]`` (None for a null row).

    The (key, value) pairs are made from the flattened child arrays in one pass, and each
    row's list is a slice of them: no dict per header, as ``to_pylist`` would make.
    """
    entries = column.flatten()  # honours the array's offset and skips null rows' entries
    pairs = list(zip(entries.field("key").to_pylist(), entries.field("value").to_pylist()))
    sizes = pc.fill_null(pc.list_value_length(column), 0).to_numpy()
    starts = np.concatenate(([0], np.cumsum(sizes))).tolist()
    lists: list = [pairs[a:b] for a, b in zip(starts, starts[1:])]
    if column.null_count:
        for i in np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False)).tolist():
            lists[i] = None
    return lists


def _send_batch(send: Callable[..., RecordFuture], options: SinkOptions, batch: pa.RecordBatch) -> list[RecordFuture]:
    """Send one Arrow batch's rows; their futures, in row order.

    The columns become Python lists once per batch (the codec's BatchBuilder takes bytes),
    and the rows go to ``send`` through ``map``, so there is no Python statement per row
    when the batch has no ``partition`` or ``headers`` column. A columnar encode of whole
    Arrow columns into record batches (issue 16, the codec's part) would replace this
    function: the producer's Appender still has to pick each row's partition, then the
    rows of each partition would be encoded straight from the Arrow buffers.
    """
    n = batch.num_rows
    cols = options.columns
    values = _as_bytes(batch.column("value"))
    keys = _as_bytes(batch.column("key")) if "key" in cols else repeat(None, n)
    if options.topic is not None:
        topics: Iterable[str] = repeat(options.topic, n)
    else:
        topic = batch.column("topic")
        if topic.null_count:
            raise ValueError("a row has a null topic: give every row a topic, or set the topic option")
        topics = topic.to_pylist()
    if "partition" not in cols and "headers" not in cols:
        return list(map(send, topics, values, keys))
    partitions = batch.column("partition").to_pylist() if "partition" in cols else repeat(None, n)
    headers = _header_lists(batch.column("headers")) if "headers" in cols else repeat(None, n)
    return [send(t, v, k, partition=p, headers=h) for t, v, k, p, h in zip(topics, values, keys, partitions, headers)]


def write_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> WriteReport:
    """Send every row of ``batches``; return when all are acknowledged.

    Records are settled per producer batch (a batch is written or fails as a whole), so
    the task keeps one future per producer batch, with its record count, not one per row.

    Raises:
        ValueError: a row with a null topic and no topic option.
        KafkaError: the first delivery failure (the other records may have been written).
    """
    # A RecordFuture's _batch is its producer batch's BatchResult (kproto.producer.futures):
    # futures of one batch settle together, so one of them stands for all.
    batch_of = attrgetter("_batch")
    records: Counter[BatchResult] = Counter()
    stand_in: dict[BatchResult, RecordFuture] = {}
    with Producer(options.kafka) as producer:
        for batch in batches:
            futures = _send_batch(producer.send, options, batch)
            records.update(map(batch_of, futures))
            stand_in.update(zip(map(batch_of, futures), futures))
        producer.flush()
        counts: Counter[tuple[str, int]] = Counter()
        for result, n in records.items():
            meta = stand_in[result].result()  # raises the batch's delivery error
            counts[(meta.topic, meta.partition)] += n
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

