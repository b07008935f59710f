"""kproto: a Kafka toolkit for Python with a Cython codec at its core.

The clients for threads are here (``from kproto import Producer, Consumer,
AdminClient``); their asyncio twins are in :mod:`kproto.aio`. The public API fits on this screen; see the
documentation for each name.
"""

import logging

from kproto.admin import AdminClient
from kproto.codec import codec_backend
from kproto.consumer import Consumer, ConsumerRecord
from kproto.producer import Producer, RecordMetadata
from kproto.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

__all__ = [
    "AdminClient",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "Producer",
    "RecordMetadata",
    "TopicPartition",
    "codec_backend",
    "__version__",
]

__version__ = "0.1.0.dev0"

# A library logs and leaves output to the application (the logging HOWTO, "Configuring
# Logging for a Library"): without this, warnings would reach stderr through logging's
# last-resort handler in an application that has not configured logging.
logging.getLogger("kproto").addHandler(logging.NullHandler())
