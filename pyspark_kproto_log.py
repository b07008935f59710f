"""Makes ``spark.read.format("kafka-log")`` work with no register call (see
``pyspark_kproto``): Kafka's on-disk log segments (:class:`kproto.spark.KafkaLogDataSource`)."""

from kproto.spark.segments import KafkaLogDataSource as DefaultSource

__all__ = ["DefaultSource"]
