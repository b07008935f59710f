"""ListOffsets, one owner for the clients: the request for a leader's partitions and what
each partition answered.

The consumer (offset resets, ``beginning_offsets``/``end_offsets``/``offsets_for_times``)
and the admin client (``list_offsets``) both ask through :func:`list_offsets`; each keeps
its own policy for errors (the consumer retries until its deadline, the admin client
reports per partition). Timestamps are Kafka's: a time in ms, or one of
:class:`~kproto.protocol.timestamps.OffsetTimestamp`; the version asked is at least
the one every timestamp of the request needs (``MAX_TIMESTAMP``: v7, KIP-734).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kproto.io.cluster import Cluster
from kproto.protocol.messages import ListOffsetsRequest
from kproto.protocol.timestamps import OffsetTimestamp, list_offsets_min_version
from kproto.structs import TopicPartition

__all__ = ["PartitionOffset", "list_offsets", "timestamp_of"]


class PartitionOffset(NamedTuple):
    """One partition's answer: ``error_code`` 0 and the offset found, or the error."""

    error_code: int
    offset: int
    timestamp: int
    leader_epoch: int


def timestamp_of(spec: str | int) -> int:
    """The ListOffsets timestamp of ``spec``: ``"earliest"``, ``"latest"``,
    ``"max_timestamp"`` (the :class:`OffsetTimestamp` names, any case) or a time in ms.

    Raises:
        KeyError: an unknown name.
    """
    return OffsetTimestamp[spec.upper()] if isinstance(spec, str) else int(spec)


async def list_offsets(cluster: Cluster, leader: int, timestamps: Mapping[TopicPartition, int], *,
                       read_committed: bool) -> dict[TopicPartition, PartitionOffset]:
    """Ask broker ``leader`` for the offset of each partition's timestamp.

    ``read_committed``: latest is the last stable offset rather than the high watermark
    (KIP-98's isolation level). A time after every record finds offset -1. Each partition
    is sent with the leader epoch the cluster's metadata knows (``current_leader_epoch``,
    KIP-320): a leader that moved on answers FENCED_LEADER_EPOCH, one behind
    UNKNOWN_LEADER_EPOCH, both retriable.

    Raises:
        KafkaError: the request failed (connection, timeout, no shared version).
    """
    by_topic: dict[str, list[ListOffsetsRequest.ListOffsetsPartition]] = {}
    for tp, ts in timestamps.items():
        by_topic.setdefault(tp.topic, []).append(
            ListOffsetsRequest.ListOffsetsPartition(partition_index=tp.partition, timestamp=ts,
                                                    current_leader_epoch=cluster.leader_epoch(tp.topic, tp.partition)))
    request = ListOffsetsRequest(
        replica_id=-1, isolation_level=1 if read_committed else 0,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
    response = await cluster.request(leader, request, min_version=list_offsets_min_version(timestamps.values()))
    return {TopicPartition(t.name, p.partition_index): PartitionOffset(p.error_code, p.offset, p.timestamp,
                                                                       p.leader_epoch)
            for t in response.topics for p in t.partitions}
