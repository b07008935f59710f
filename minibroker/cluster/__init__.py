"""A replicated minibroker cluster (issue 13): brokers, a controller, replication.

Work in progress, landed in steps. The modules, bottom up:

- :mod:`~minibroker.cluster.metadata`: the cluster's metadata as records (KRaft's
  ``RegisterBrokerRecord``, ``TopicRecord``, ``PartitionRecord``...) and the image a
  broker builds from them;
- :mod:`~minibroker.cluster.api`: what brokers ask the controller (KRaft's
  BrokerRegistration, BrokerHeartbeat, AlterPartition... as in-process calls shaped like
  the wire RPCs, so that they can go on the wire later without changing their callers).
"""
