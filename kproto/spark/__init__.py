"""Kafka for PySpark, decoded by kproto's codec straight into Arrow.

- :func:`decode_udf` / :func:`register_udfs`: raw record sets in a binary column to
  ``array<struct<offset, timestamp, timestampType, key, value, headers>>``.
- ``spark.read.format("kproto")`` / ``readStream`` (:class:`KprotoDataSource`): Kafka
  topics with the schema and options of Spark's Kafka connector.
- ``spark.read.format("kafka-log")`` (:class:`KafkaLogDataSource`): Kafka's on-disk
  log segments.

:func:`register` makes every format and SQL function known to a session.

Needs pyspark 4.1+ and pyarrow (``pip install kproto[spark]``).
"""

from kproto.spark.arrow import DecodeMode
from kproto.spark.schema import RECORD_TYPE, RECORDS_TYPE, kafka_schema
from kproto.spark.segments import KafkaLogDataSource
from kproto.spark.session import register
from kproto.spark.source import KprotoDataSource
from kproto.spark.udf import decode_result_type, decode_udf, register_udfs

__all__ = [
    "DecodeMode",
    "KafkaLogDataSource",
    "KprotoDataSource",
    "RECORD_TYPE",
    "RECORDS_TYPE",
    "decode_result_type",
    "decode_udf",
    "kafka_schema",
    "register",
    "register_udfs",
]
