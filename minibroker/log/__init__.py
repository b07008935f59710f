"""Partition logs: where minibroker keeps record batches."""

from minibroker.log.partition import PartitionLog

__all__ = ["PartitionLog"]
