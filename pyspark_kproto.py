"""Makes ``spark.read.format("kproto")`` work with no register call.

PySpark registers, at the first use of a Python data source, every top-level module
named ``pyspark_*`` that exposes ``DefaultSource``; this is kproto's Kafka source and sink
(:class:`kproto.spark.KprotoDataSource`).
"""

from kproto.spark.source import KprotoDataSource as DefaultSource

__all__ = ["DefaultSource"]
