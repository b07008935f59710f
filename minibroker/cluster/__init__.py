"""A replicated minibroker cluster (issue 13): brokers, a controller, replication.

Kafka's replication in minibroker (KRaft combined mode, simplified where no client can
tell; see :mod:`~minibroker.cluster.quorum`). The modules, bottom up:

- :mod:`~minibroker.cluster.metadata`: the cluster's metadata as records (KRaft's
  ``RegisterBrokerRecord``, ``TopicRecord``, ``PartitionRecord``...) and the image a
  broker builds from them;
- :mod:`~minibroker.cluster.api`: what brokers ask the controller (KRaft's
  BrokerRegistration, BrokerHeartbeat, AlterPartition... and the requests forwarded to
  it), in-process calls shaped like the wire RPCs, which a broker process sends on the
  wire (:mod:`~minibroker.cluster.remote`) without a caller changing;
- :mod:`~minibroker.cluster.placement`: where a new partition's replicas go (rack-aware,
  leaders spread evenly);
- :mod:`~minibroker.cluster.controller`: the controller: registrations and fencing,
  elections, ISR changes, topics, producer id blocks; it writes the metadata log;
- :mod:`~minibroker.cluster.quorum`: the metadata log's owner in a MiniCluster: which
  broker's controller is active (by lease, with an epoch), and delivery of committed
  records to every broker;
- :mod:`~minibroker.cluster.partition`: one replica of a partition on a broker (leader or
  follower, ISR and high watermark, acks=all waits, KIP-320 fencing, KIP-392 choice);
- :mod:`~minibroker.cluster.fetcher` and :mod:`~minibroker.cluster.replica_manager`: a
  follower's replication over the real Fetch protocol, and a broker applying committed
  metadata (roles, fetch targets, configs, coordinator loads);
- :mod:`~minibroker.cluster.node`: one broker of a cluster (server, state, replica
  manager, registration, heartbeats), with its crash (``kill``) and its controlled stop;
- :mod:`~minibroker.cluster.remote`, :mod:`~minibroker.cluster.controller_server` and
  :mod:`~minibroker.cluster.process`: a broker per process (``processes=True``): the
  controller channel and the metadata on the wire, the quorum's endpoint in the parent,
  the broker process and the parent's handle on it;
- :mod:`~minibroker.cluster.minicluster`: :class:`MiniCluster`, the cluster a test starts.

``MiniCluster`` is imported on first use: the modules above it need the whole broker,
the others only the codec, the config and the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.cluster.minicluster import MiniCluster

__all__ = ["MiniCluster"]


def __getattr__(name: str) -> Any:
    if name == "MiniCluster":
        from minibroker.cluster.minicluster import MiniCluster
        return MiniCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
