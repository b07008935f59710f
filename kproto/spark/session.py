"""Making kproto's formats and SQL functions known to a SparkSession."""

from __future__ import annotations

from pyspark.sql import SparkSession

from kproto.spark.segments import KafkaLogDataSource
from kproto.spark.source import KprotoDataSource
from kproto.spark.udf import register_udfs

__all__ = ["DATA_SOURCES", "register"]

DATA_SOURCES = (KprotoDataSource, KafkaLogDataSource)
"""kproto's Python data sources, by format name: ``kproto`` and ``kafka-log``."""


def register(spark: SparkSession) -> None:
    """Register kproto's data sources and the ``kafka_decode`` SQL functions with ``spark``.

    Registering a format name twice replaces the first registration, so calling this
    again is harmless.
    """
    for source in DATA_SOURCES:
        spark.dataSource.register(source)
    register_udfs(spark)
