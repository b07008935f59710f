"""The producer: partitioner, accumulator, sender and the two faces.

``from kproto import Producer`` (threads) or ``from kproto.aio import AIOProducer``.
"""

from kproto.producer.batches import BatchFuture, BatchMetadata
from kproto.producer.futures import RecordFuture, RecordMetadata
from kproto.producer.producer import AIOProducer, Producer

__all__ = ["AIOProducer", "BatchFuture", "BatchMetadata", "Producer", "RecordFuture", "RecordMetadata"]
