"""minibroker: an embedded Kafka-compatible broker for tests and local work.

It speaks the real wire protocol through kproto's own protocol layer, so any Kafka
client can use it. See :class:`MiniBroker`, and :class:`MiniCluster` for several brokers
that replicate, with a controller and failover. Faults for tests of a client (request
controls: :class:`Delay`, :class:`Fail`, :class:`Drop`, :class:`Hold`) are in
:mod:`minibroker.faults`.
"""

import logging
from typing import TYPE_CHECKING, Any

from minibroker.broker import MiniBroker
from minibroker.faults import Delay, Drop, Fail, Hold, RequestControl, RequestControls

if TYPE_CHECKING:
    from minibroker.cluster.minicluster import MiniCluster

__all__ = ["Delay", "Drop", "Fail", "Hold", "MiniBroker", "MiniCluster", "RequestControl", "RequestControls"]


def __getattr__(name: str) -> Any:
    # Imported on first use: a single broker's users do not load the cluster's replication.
    if name == "MiniCluster":
        from minibroker.cluster.minicluster import MiniCluster
        return MiniCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# As kproto's: the application decides where log records go (see kproto/__init__.py).
logging.getLogger("minibroker").addHandler(logging.NullHandler())
