"""DescribeCluster v0-1 and OffsetForLeaderEpoch v0-4.

Behaviour: a single broker is also the controller, listed at its advertised address
(``advertised.listeners``), as in Metadata; a cluster broker lists the unfenced brokers of
its metadata image and the active controller. OffsetForLeaderEpoch answers from the
leader's epoch cache (Kafka's ``LeaderEpochFileCache.endOffsetFor``): the latest epoch
ends at the log end offset, an older one where the next begins, one newer than every
epoch is ``(-1, -1)``; a single broker's partitions have had one epoch, 0. Only the
leader answers (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR for an offline log); a
``current_leader_epoch`` (v2+) other than ours is fenced: FENCED_LEADER_EPOCH when
older, UNKNOWN_LEADER_EPOCH when newer (KIP-320).
Authorized operations (KIP-430): when asked, the operations on the cluster the principal
is allowed (:mod:`minibroker.authorizer`; all of them with the authorizer off).
Authorization: DescribeCluster needs nothing (Kafka's ``handleDescribeCluster``);
OffsetForLeaderEpoch needs CLUSTER_ACTION on the cluster (a follower's) or DESCRIBE on the
topic (a consumer's, KIP-320; ``handleOffsetForLeaderEpochRequest``), else
TOPIC_AUTHORIZATION_FAILED for each of its partitions.
Not implemented: endpoint types other than brokers (v1 endpoint_type 1).
"""

from kproto.errors import KafkaCodeError, TopicAuthorizationFailedError
from kproto.protocol import ApiKey
from kproto.protocol.messages import DescribeClusterResponse, OffsetForLeaderEpochResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 1)
async def describe_cluster(state, header, request):
    if state.cluster is None:
        controller_id = state.node_id
        host, port = state.endpoint(header.listener_name)
        brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=state.node_id, host=host, port=port)]
    else:
        controller_id = state.cluster.channel.active_controller_id
        brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=b.broker_id, host=at[0], port=at[1],
                                                                 rack=b.rack)
                   for b in state.cluster.image.live_brokers()
                   if (at := state.cluster_endpoint(b, header.listener_name)) is not None]
    return DescribeClusterResponse(
        error_code=0, cluster_id=state.config["cluster.id"], controller_id=controller_id, brokers=brokers,
        cluster_authorized_operations=state.authorizer.cluster_operations(
            header, requested=request.include_cluster_authorized_operations),
    )


def _end_offset(state, topic, p, version):
    try:
        partition = state.leader_partition(topic, p.partition, p.current_leader_epoch if version >= 2 else -1)
    except KafkaCodeError as exc:
        return exc.code, -1, -1
    return 0, *partition.end_offset_for_epoch(p.leader_epoch)


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4)
async def offset_for_leader_epoch(state, header, request):
    topics = []
    for asked in request.topics:
        topic = state.topics.get(asked.topic)
        described = (state.authorizer.allows(header, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
                     or state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TOPIC, asked.topic))
        partitions = []
        for p in asked.partitions:
            code, epoch, end = (_end_offset(state, topic, p, header.api_version) if described
                                else (TopicAuthorizationFailedError.code, -1, -1))
            partitions.append(OffsetForLeaderEpochResponse.EpochEndOffset(
                error_code=code, partition=p.partition, leader_epoch=epoch, end_offset=end))
        topics.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=asked.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(topics=topics)
