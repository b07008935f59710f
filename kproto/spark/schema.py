"""The column types kproto's Spark pieces produce, in Spark's spelling (Arrow's is
:mod:`kproto.arrow`'s, named here too).

The names and order follow Spark's Kafka connector (``KafkaRecordToRowConverter``):
``key, value, topic, partition, offset, timestamp, timestampType`` and, with
``includeHeaders``, ``headers array<struct<key:string, value:binary>>``. The decode UDF
returns the per-record part of that (no topic or partition: a raw record set does not
know them) as ``array<struct<offset, timestamp, timestampType, key, value, headers>>``.

Facts (pyspark 4.3): a Python data source's Arrow batches must match
``to_arrow_schema(schema, timezone="UTC")`` exactly, so timestamps are microseconds in
UTC (Kafka's are milliseconds: the decoder casts), ints are ``int32`` and binary is
``binary``, never ``large_binary``. ``tests/spark/test_schema.py`` holds the two
spellings to each other.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# The Arrow spelling is kproto.arrow's (pyspark-free, for the consumer too), named here as well.
from kproto.arrow import ARROW_HEADERS, ARROW_RECORD_FIELDS, arrow_schema

__all__ = [
    "HEADERS_TYPE",
    "RECORD_TYPE",
    "RECORDS_TYPE",
    "ARROW_HEADERS",
    "ARROW_RECORD_FIELDS",
    "kafka_schema",
    "arrow_schema",
]

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))

RECORD_TYPE = StructType([
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("headers", HEADERS_TYPE),
])
"""One decoded record, as the decode UDF returns it (inside an array)."""

RECORDS_TYPE = ArrayType(RECORD_TYPE)

_KAFKA_COLUMNS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]


def kafka_schema(include_headers: bool = False) -> StructType:
    """Spark's Kafka source schema, with ``headers`` last when ``include_headers``."""
    fields = list(_KAFKA_COLUMNS)
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)
