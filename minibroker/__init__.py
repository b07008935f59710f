"""minibroker: an embedded Kafka-compatible broker for tests and local work.

It speaks the real wire protocol through kproto's own protocol layer, so any Kafka
client can use it. See :class:`MiniBroker`.
"""

from minibroker.broker import MiniBroker

__all__ = ["MiniBroker"]
