"""DescribeProducers v0.

Behaviour: the active producers of each asked partition hosted here, by its leader or a
follower (a follower keeps the producer state as it appends; Kafka's
``ReplicaManager.activeProducerState`` / ``Partition.activeProducerState``), from the
broker's producer state (:mod:`minibroker.coordinator.producer_state`): producer id and
epoch, last sequence (-1 when only markers were seen), the max timestamp of its last
batch or marker, the coordinator epoch of its last marker (-1: none) and the first offset
of its open transaction (-1: none). Errors per partition, as Kafka's: UNKNOWN_TOPIC_OR_PARTITION
for a partition this broker does not know, NOT_LEADER_OR_FOLLOWER for one it holds no
replica of, KAFKA_STORAGE_ERROR for an offline one.
Authorization: READ on the topic (Kafka's ``handleDescribeProducersRequest``), else
TOPIC_AUTHORIZATION_FAILED for each of its partitions.
"""

from kproto.errors import KafkaCodeError, TopicAuthorizationFailedError
from kproto.protocol import ApiKey
from kproto.protocol.messages import DescribeProducersResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles

TopicResponse = DescribeProducersResponse.TopicResponse
PartitionResponse = DescribeProducersResponse.PartitionResponse
ProducerState = DescribeProducersResponse.ProducerState


@handles(ApiKey.DESCRIBE_PRODUCERS, 0, 0)
async def handle(state, header, request):
    topics = []
    for asked in request.topics:
        topic = state.topics.get(asked.name)
        readable = state.authorizer.allows(header, AclOperation.READ, ResourceType.TOPIC, asked.name)
        partitions = []
        for index in asked.partition_indexes:
            if not readable:  # KafkaApis.handleDescribeProducersRequest: READ on the topic
                partitions.append(PartitionResponse(partition_index=index, error_code=TopicAuthorizationFailedError.code))
                continue
            try:
                # Any replica with a local log answers (Kafka's Partition.activeProducerState):
                # DescribeProducersOptions.brokerId may name a follower.
                partition = state.leader_partition(topic, index, require_leader=False)
            except KafkaCodeError as exc:
                partitions.append(PartitionResponse(partition_index=index, error_code=exc.code, error_message=str(exc)))
                continue
            partitions.append(PartitionResponse(partition_index=index, error_code=0, active_producers=[
                ProducerState(producer_id=p.producer_id, producer_epoch=p.producer_epoch,
                              last_sequence=p.last_sequence, last_timestamp=p.last_timestamp,
                              coordinator_epoch=p.coordinator_epoch,
                              current_txn_start_offset=p.current_txn_start_offset)
                for p in state.active_producers(partition)]))
        topics.append(TopicResponse(name=asked.name, partitions=partitions))
    return DescribeProducersResponse(topics=topics)
