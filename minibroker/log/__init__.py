"""Partition logs: where minibroker keeps record batches, in memory or in Kafka's layout.

- :mod:`~minibroker.log.partition`: :class:`PartitionLog`, one partition's segments, with
  appends, reads, retention, DeleteRecords, flushing and recovery;
- :mod:`~minibroker.log.leader_epochs`: :class:`LeaderEpochCache`, where each leader epoch
  began (``leader-epoch-checkpoint``, KIP-101);
- :mod:`~minibroker.log.segment`: one segment (``.log`` + indexes) and its reads;
- :mod:`~minibroker.log.store`: where a segment's bytes live (a file or memory) and the
  slices a read returns for ``os.sendfile``;
- :mod:`~minibroker.log.index`: the ``.index`` and ``.timeindex`` files;
- :mod:`~minibroker.log.txn_index`: the ``.txnindex`` files (aborted transactions);
- :mod:`~minibroker.log.cleaner`: compaction;
- :mod:`~minibroker.log.config`: :class:`LogConfig`, the settings under Kafka's names.
"""

from minibroker.log.cleaner import CleanerStats
from minibroker.log.config import LogConfig
from minibroker.log.leader_epochs import LeaderEpochCache
from minibroker.log.partition import PartitionLog
from minibroker.log.segment import LogSegment
from minibroker.log.store import LogSlice

__all__ = ["PartitionLog", "LeaderEpochCache", "LogConfig", "LogSegment", "LogSlice", "CleanerStats"]
