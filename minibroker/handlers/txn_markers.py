"""WriteTxnMarkers v0-1.

Behaviour: each marker's COMMIT (``transaction_result`` true) or ABORT control batch is
written to each of its partitions by :meth:`~minibroker.state.BrokerState.write_txn_markers`
(the one entry point for markers: acks=all within ``request.timeout.ms``), all markers
of the request at once; every partition gets its own error code (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest``): UNKNOWN_TOPIC_OR_PARTITION for a partition
this broker does not know, NOT_LEADER_OR_FOLLOWER for one it does not lead,
INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED from the partition's producer
state (:mod:`minibroker.coordinator.producer_state`), KAFKA_STORAGE_ERROR,
NOT_ENOUGH_REPLICAS(_AFTER_APPEND) and REQUEST_TIMED_OUT as Produce. Internal topics
take markers (``__consumer_offsets`` holds transactional offset commits).
Version notes: v1+ flexible (KIP-482).
Authorization: CLUSTER_ACTION on the cluster (a transaction coordinator's request), else
every partition CLUSTER_AUTHORIZATION_FAILED.
"""

import asyncio

from kproto.errors import ClusterAuthorizationFailedError
from kproto.protocol import ApiKey
from kproto.protocol.messages import WriteTxnMarkersResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles

Result = WriteTxnMarkersResponse.WritableTxnMarkerResult
TopicResult = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
PartitionResult = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult


async def _write(state, marker) -> Result:
    partitions = [(t.name, index) for t in marker.topics for index in t.partition_indexes]
    codes = await state.write_txn_markers(
        producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
        coordinator_epoch=marker.coordinator_epoch, commit=marker.transaction_result, partitions=partitions)
    return Result(producer_id=marker.producer_id, topics=[
        TopicResult(name=t.name, partitions=[PartitionResult(partition_index=index, error_code=codes[(t.name, index)])
                                             for index in t.partition_indexes])
        for t in marker.topics])


@handles(ApiKey.WRITE_TXN_MARKERS, 0, 1)
async def handle(state, header, request):
    if not state.authorizer.allows(header, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER):
        return WriteTxnMarkersResponse(markers=[Result(producer_id=m.producer_id, topics=[
            TopicResult(name=t.name, partitions=[PartitionResult(
                partition_index=index, error_code=ClusterAuthorizationFailedError.code) for index in t.partition_indexes])
            for t in m.topics]) for m in request.markers])
    results = await asyncio.gather(*(_write(state, marker) for marker in request.markers))
    return WriteTxnMarkersResponse(markers=list(results))
