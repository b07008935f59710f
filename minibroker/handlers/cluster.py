"""DescribeCluster v0-1 and OffsetForLeaderEpoch v0-4.

Behaviour: one broker, which is also the controller, listed at its advertised address
(``advertised.listeners``), as in Metadata. Every partition has had one leader
epoch (the topic's, 0), so OffsetForLeaderEpoch answers the log end offset for that
epoch and for any older one (-1 offsets for an epoch from the future, as Kafka does).
A ``current_leader_epoch`` (v2+) other than ours is fenced: FENCED_LEADER_EPOCH when
older, UNKNOWN_LEADER_EPOCH when newer.
Authorized operations (KIP-430): when asked, every operation of the cluster, as a Kafka
broker without an authorizer answers (:mod:`minibroker.authorizer`).
Not implemented: endpoint types other than brokers (v1 endpoint_type 1).
"""

from kproto.errors import (
    FencedLeaderEpochError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import DescribeClusterResponse, OffsetForLeaderEpochResponse
from minibroker.authorizer import ResourceType, authorized_operations
from minibroker.handlers import handles


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 1)
async def describe_cluster(state, header, request):
    return DescribeClusterResponse(
        error_code=0, cluster_id=state.config["cluster.id"], controller_id=state.node_id,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(broker_id=state.node_id, host=state.host, port=state.port)],
        cluster_authorized_operations=authorized_operations(
            ResourceType.CLUSTER, request.include_cluster_authorized_operations),
    )


def _end_offset(topic, p):
    if topic is None or not 0 <= p.partition < len(topic.partitions):
        return UnknownTopicOrPartitionError.code, -1, -1
    current = topic.leader_epoch
    if p.current_leader_epoch >= 0 and p.current_leader_epoch != current:
        return (FencedLeaderEpochError.code if p.current_leader_epoch < current else UnknownLeaderEpochError.code), -1, -1
    if p.leader_epoch > current:
        return 0, -1, -1
    return 0, current, topic.partitions[p.partition].log_end_offset


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4)
async def offset_for_leader_epoch(state, header, request):
    topics = []
    for asked in request.topics:
        topic = state.topics.get(asked.topic)
        partitions = []
        for p in asked.partitions:
            code, epoch, end = _end_offset(topic, p)
            partitions.append(OffsetForLeaderEpochResponse.EpochEndOffset(
                error_code=code, partition=p.partition, leader_epoch=epoch, end_offset=end))
        topics.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=asked.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(topics=topics)
