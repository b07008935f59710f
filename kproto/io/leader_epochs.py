"""OffsetForLeaderEpoch, one owner for the clients: the end offset of a leader epoch in a
partition's log as its leader sees it (KIP-101, KIP-320).

The consumer asks it after a leader change to validate a position (Java's
``OffsetsForLeaderEpochUtils``): is the log still as long as it was under the epoch of
the last record consumed, or was it truncated under the consumer? Requests go at v3+,
the first with ``replica_id`` (-2 for a consumer, Java's
``OffsetsForLeaderEpochRequest.CONSUMER_REPLICA_ID``), with the leader epoch the client's
metadata knows as ``current_leader_epoch`` (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
when the leader disagrees, both retriable). :func:`supported` says whether a broker
offers it (Java validates no position against a broker that does not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kproto.errors import UnsupportedVersionError
from kproto.io.cluster import Cluster
from kproto.protocol import ApiKey
from kproto.protocol.messages import OffsetForLeaderEpochRequest
from kproto.structs import TopicPartition

__all__ = ["EpochEndOffset", "offsets_for_leader_epoch", "supported"]

_CONSUMER_REPLICA_ID = -2
_MIN_VERSION = 3


class EpochEndOffset(NamedTuple):
    """One partition's answer: ``error_code`` 0 with the largest epoch at or below the one
    asked and the offset where it ends (-1, -1: the broker knows no such epoch), or an error."""

    error_code: int
    leader_epoch: int
    end_offset: int


async def supported(cluster: Cluster, node: int) -> bool:
    """Whether broker ``node`` answers OffsetForLeaderEpoch v3+.

    Raises:
        KafkaError: the broker cannot be reached.
    """
    conn = await cluster.connection(node)
    try:
        conn.version_for(ApiKey.OFFSET_FOR_LEADER_EPOCH, _MIN_VERSION)
    except UnsupportedVersionError:
        return False
    return True


async def offsets_for_leader_epoch(cluster: Cluster, leader: int, epochs: Mapping[TopicPartition, int]
                                   ) -> dict[TopicPartition, EpochEndOffset]:
    """Ask broker ``leader`` where each partition's leader epoch (``epochs``) ends.

    Raises:
        KafkaError: the request failed (connection, timeout, no shared version).
    """
    by_topic: dict[str, list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]] = {}
    for tp, epoch in epochs.items():
        by_topic.setdefault(tp.topic, []).append(OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
            partition=tp.partition, leader_epoch=epoch,
            current_leader_epoch=cluster.leader_epoch(tp.topic, tp.partition)))
    request = OffsetForLeaderEpochRequest(
        replica_id=_CONSUMER_REPLICA_ID,
        topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in by_topic.items()])
    response = await cluster.request(leader, request, min_version=_MIN_VERSION)
    return {TopicPartition(t.topic, p.partition): EpochEndOffset(p.error_code, p.leader_epoch, p.end_offset)
            for t in response.topics for p in t.partitions}
