"""Kafka records as Arrow: Spark's Kafka schema in Arrow's spelling, and the codec's
columns wrapped as Arrow arrays without a copy.

The one owner of the Arrow form of a Kafka record, for every reader that returns Arrow:
:meth:`kproto.Consumer.poll_arrow`, the Spark data sources and the decode UDF
(:mod:`kproto.spark` imports it). It imports pyarrow (and numpy) but not pyspark, so a
consumer needs ``pip install kproto[arrow]`` only; ``import kproto`` needs neither.

Theory of operation. :func:`kproto.records.decode_columnar` writes a record set's
records straight into Arrow-layout buffers (int64 offsets and timestamps, binary
offsets + data + validity bitmaps, header lists). :func:`record_arrays` wraps those
buffers with ``pyarrow.Array.from_buffers`` (no copy), in their final types (the codec
writes ``timestampType`` as int32), and makes the one conversion Spark needs: timestamps
from milliseconds to microseconds (:func:`kproto.codec.millis_to_micros`, one pass; out
of range raises Arrow's cast error, as Spark's conversion raises too).

Facts (Spark's Kafka connector, ``KafkaRecordToRowConverter``): the columns are ``key,
value, topic, partition, offset, timestamp, timestampType`` and, with ``includeHeaders``,
``headers array<struct<key:string, value:binary>>``. A Python data source's Arrow
batches must match pyspark's ``to_arrow_schema(schema, timezone="UTC")`` exactly, so
timestamps are microseconds in UTC, ints are ``int32`` and binary is ``binary``, never
``large_binary`` (``tests/spark/test_schema.py`` holds the Spark and Arrow spellings to
each other).
"""

from __future__ import annotations

try:
    import pyarrow as pa
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("kproto's Arrow support needs pyarrow: pip install kproto[arrow]") from exc

from kproto.codec import Columns, millis_to_micros

__all__ = [
    "ARROW_HEADERS",
    "ARROW_RECORD_FIELDS",
    "KAFKA_COLUMNS",
    "arrow_schema",
    "record_arrays",
    "record_batch",
    "record_struct",
]

ARROW_HEADERS = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
"""A record's headers: ``list<struct<key: string, value: binary>>``."""

ARROW_RECORD_FIELDS = {
    "offset": pa.int64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestampType": pa.int32(),
    "key": pa.binary(),
    "value": pa.binary(),
    "headers": ARROW_HEADERS,
}
"""What a record set knows of each record (no topic or partition), name to Arrow type."""

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
"""The columns of Spark's Kafka source, in its order (``headers`` follows when included)."""

_ARROW_COLUMNS = {"topic": pa.string(), "partition": pa.int32(), **ARROW_RECORD_FIELDS}
_HEADER_ENTRY = ARROW_HEADERS.value_type
_SCHEMAS = {
    include: pa.schema([pa.field(name, _ARROW_COLUMNS[name])
                        for name in KAFKA_COLUMNS + (("headers",) if include else ())])
    for include in (False, True)
}


def arrow_schema(include_headers: bool = False) -> pa.Schema:
    """Spark's Kafka source schema in Arrow's spelling, ``headers`` last when ``include_headers``."""
    return _SCHEMAS[bool(include_headers)]


def _binary(type_: pa.DataType, n: int, validity, offsets, data, nulls: int) -> pa.Array:
    buffers = [pa.py_buffer(validity) if nulls else None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(type_, n, buffers, nulls)


def record_arrays(cols: Columns, headers: bool = True) -> dict[str, pa.Array]:
    """The records of ``cols`` as Arrow arrays, named and typed as :data:`ARROW_RECORD_FIELDS`
    (without ``headers`` when ``headers`` is false)."""
    n = cols.count
    try:
        timestamps = pa.Array.from_buffers(ARROW_RECORD_FIELDS["timestamp"], n,
                                           [None, pa.py_buffer(millis_to_micros(memoryview(cols.timestamps)[: 8 * n]))])
    except OverflowError:  # Arrow's cast then raises, naming the value, as it always did here
        timestamps = pa.Array.from_buffers(pa.timestamp("ms", tz="UTC"), n, [None, pa.py_buffer(cols.timestamps)]
                                           ).cast(ARROW_RECORD_FIELDS["timestamp"])
    arrays = {
        "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.offsets)]),
        "timestamp": timestamps,
        "timestampType": pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(cols.timestamp_types)]),
        "key": _binary(pa.binary(), n, cols.key_validity, cols.key_offsets, cols.key_data, cols.key_nulls),
        "value": _binary(pa.binary(), n, cols.value_validity, cols.value_offsets, cols.value_data, cols.value_nulls),
    }
    if not headers:
        return arrays
    entries = pa.StructArray.from_arrays(
        [_binary(pa.string(), cols.header_count, None, cols.header_key_offsets, cols.header_key_data, 0),
         _binary(pa.binary(), cols.header_count, cols.header_value_validity, cols.header_value_offsets,
                 cols.header_value_data, cols.header_value_nulls)],
        fields=list(_HEADER_ENTRY))
    header_offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(cols.header_offsets)])
    arrays["headers"] = pa.ListArray.from_arrays(header_offsets, entries, type=ARROW_HEADERS)
    return arrays


def record_struct(cols: Columns) -> pa.StructArray:
    """The records of ``cols`` as one struct array (the decode UDF's list element)."""
    arrays = record_arrays(cols)
    return pa.StructArray.from_arrays(list(arrays.values()), fields=[pa.field(k, v) for k, v in ARROW_RECORD_FIELDS.items()])


_TOPIC_COLUMNS: dict[str, pa.Array] = {}  # topic -> the longest topic column made (a slice is taken)
_TOPIC_CACHE_BYTES = 1 << 20  # per topic: a column longer than this is made each time
_TOPIC_CACHE_ENTRIES = 16


def _topic_column(topic: str, n: int) -> pa.Array:
    """``topic`` n times, as a string array: a slice of one made before when there is one
    long enough (arrays are immutable, so batches may share its buffers). Making one
    (``pa.repeat``) costs about a microsecond per thousand rows, a tenth of a poll_arrow's
    wrapping (issue 16); the cache holds at most 16 topics of 1 MiB."""
    column = _TOPIC_COLUMNS.get(topic)
    if column is not None and len(column) >= n:
        return column.slice(0, n)
    column = pa.repeat(pa.scalar(topic, pa.string()), n)
    if n * (len(topic.encode()) + 4) <= _TOPIC_CACHE_BYTES:
        if topic not in _TOPIC_COLUMNS and len(_TOPIC_COLUMNS) >= _TOPIC_CACHE_ENTRIES:
            _TOPIC_COLUMNS.clear()  # many topics: start again (they come back a response at a time)
        _TOPIC_COLUMNS[topic] = column
    return column


def record_batch(cols: Columns, topic: str, partition: int, schema: pa.Schema) -> pa.RecordBatch:
    """The records of one partition as a batch of ``schema`` (an :func:`arrow_schema`)."""
    arrays = record_arrays(cols, "headers" in schema.names)
    arrays["topic"] = _topic_column(topic, cols.count)
    # The same int32 n times: bytes repeated are a memset, several times pa.repeat's speed.
    arrays["partition"] = pa.Array.from_buffers(pa.int32(), cols.count,
                                                [None, pa.py_buffer(partition.to_bytes(4, "little", signed=True) * cols.count)])
    return pa.RecordBatch.from_arrays([arrays[name] for name in schema.names], schema=schema)
