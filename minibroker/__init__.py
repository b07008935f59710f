"""minibroker: an embedded Kafka-compatible broker for tests and local work.

It speaks the real wire protocol through kproto's own protocol layer, so any Kafka
client can use it. See :class:`MiniBroker`.
"""

import logging

from minibroker.broker import MiniBroker

__all__ = ["MiniBroker"]

# As kproto's: the application decides where log records go (see kproto/__init__.py).
logging.getLogger("minibroker").addHandler(logging.NullHandler())
