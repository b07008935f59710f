"""A replicated minibroker cluster (issue 13): brokers, a controller, replication.

Work in progress, landed in steps. The modules, bottom up:

- :mod:`~minibroker.cluster.metadata`: the cluster's metadata as records (KRaft's
  ``RegisterBrokerRecord``, ``TopicRecord``, ``PartitionRecord``...) and the image a
  broker builds from them;
- :mod:`~minibroker.cluster.api`: what brokers ask the controller (KRaft's
  BrokerRegistration, BrokerHeartbeat, AlterPartition... as in-process calls shaped like
  the wire RPCs, so that they can go on the wire later without changing their callers);
- :mod:`~minibroker.cluster.placement`: where a new partition's replicas go (rack-aware,
  leaders spread evenly);
- :mod:`~minibroker.cluster.controller`: the controller: registrations and fencing,
  elections, ISR changes, topics, producer id blocks; it writes the metadata log;
- :mod:`~minibroker.cluster.quorum`: the metadata log's owner in a MiniCluster: which
  broker's controller is active (by lease, with an epoch), and delivery of committed
  records to every broker.
"""
