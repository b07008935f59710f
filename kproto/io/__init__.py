"""The asyncio side of the clients: connections to brokers and the cluster's metadata.

Everything above this package (producer, consumer, admin) reaches brokers through
:class:`~kproto.io.cluster.Cluster`; nothing below it (codec, protocol) does I/O.
"""

from kproto.io.cluster import BrokerInfo, Cluster, PartitionInfo, TopicInfo, parse_bootstrap_servers
from kproto.io.connection import Connection

__all__ = ["BrokerInfo", "Cluster", "Connection", "PartitionInfo", "TopicInfo", "parse_bootstrap_servers"]
