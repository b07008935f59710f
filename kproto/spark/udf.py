"""Spark UDFs that decode raw Kafka record sets held in a binary column.

A row holds what a Fetch response carries for one partition, what a segment file holds
between two batch boundaries, or a stored blob of batches: zero or more concatenated
record batches (or legacy message sets), any codec. :func:`decode_udf` turns it into
``array<struct<offset, timestamp, timestampType, key, value, headers>>`` (see
:data:`~kproto.spark.schema.RECORDS_TYPE`) with ``arrow_udf`` (pyspark 4.1+), so the
rows cross from the JVM in Arrow batches and come back as Arrow arrays that the codec
filled directly: no Python object per record.

SQL::

    register_udfs(spark)
    spark.sql("SELECT inline(kafka_decode(raw)) FROM blobs")
    spark.sql("SELECT d.error, inline_outer(d.records) FROM "
              "(SELECT kafka_decode_permissive(raw) AS d FROM blobs)")
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import DataType, StringType, StructField, StructType

from kproto.spark.arrow import DecodeMode, decode_record_sets
from kproto.spark.schema import RECORDS_TYPE

__all__ = ["DecodeMode", "decode_udf", "decode_result_type", "register_udfs"]


def decode_result_type(mode: str = DecodeMode.FAILFAST) -> DataType:
    """What :func:`decode_udf` returns: the records, or in PERMISSIVE mode ``struct<records, error>``."""
    if DecodeMode.check(mode) == DecodeMode.PERMISSIVE:
        return StructType([StructField("records", RECORDS_TYPE), StructField("error", StringType())])
    return RECORDS_TYPE


def _decode(raw: pa.Array, mode: str, check_crc: bool, allow_partial: bool) -> pa.Array:
    lists, errors = decode_record_sets(raw, mode, check_crc, allow_partial)
    if errors is None:
        return lists
    return pa.StructArray.from_arrays([lists, errors], ["records", "error"])


def decode_udf(mode: str = DecodeMode.FAILFAST, check_crc: bool = True, allow_partial: bool = False) -> Any:
    """A column function decoding one raw record set per row.

    Args:
        mode: ``"FAILFAST"`` (default): a record set the codec refuses fails the task
            with :exc:`~kproto.errors.CorruptRecordError` naming the row and the offsets.
            ``"PERMISSIVE"``: the result is ``struct<records, error>``; a refused row has
            null records and the error's text, the others a null error.
        check_crc: verify each batch's CRC-32C (Kafka consumers' ``check.crcs``).
        allow_partial: ignore a partial batch at the end of a row (as in a Fetch
            response's records) instead of treating it as corrupt.

    Returns:
        A UDF to call on a binary column: ``df.select(decode_udf()("raw"))``. A null
        row gives null records.

    Raises:
        ValueError: an unknown mode.
        ImportError: pyspark older than 4.1 (no ``arrow_udf``).
    """
    from pyspark.sql.functions import arrow_udf

    mode = DecodeMode.check(mode)

    def kafka_decode(raw: pa.Array) -> pa.Array:  # the hints tell Spark it is a scalar Arrow UDF
        return _decode(raw, mode, check_crc, allow_partial)

    return arrow_udf(kafka_decode, decode_result_type(mode))


def register_udfs(spark: SparkSession, *, check_crc: bool = True) -> None:
    """Register ``kafka_decode`` (FAILFAST) and ``kafka_decode_permissive`` for SQL."""
    spark.udf.register("kafka_decode", decode_udf(DecodeMode.FAILFAST, check_crc))
    spark.udf.register("kafka_decode_permissive", decode_udf(DecodeMode.PERMISSIVE, check_crc))
