"""Raw requests for the partition side of transactions (issue 14): transactional batches
built by hand and sent with Produce, markers with WriteTxnMarkers, and the Fetch,
ListOffsets and DescribeProducers answers exactly as the broker gives them. No
transaction coordinator is needed: the tests play its part."""

import time

from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    DescribeProducersRequest,
    FetchRequest,
    ListOffsetsRequest,
    ProduceRequest,
    WriteTxnMarkersRequest,
)
from kproto.records import BatchBuilder
from tests.support.raw_client import RawClient

__all__ = ["describe_producers", "fetch", "list_offset", "produce", "txn_batch", "write_markers"]


def txn_batch(producer_id, epoch, sequence, values, *, transactional=True, key=None):
    """One batch of ``values`` from ``producer_id`` (transactional unless told)."""
    builder = BatchBuilder(2, 0, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                           is_transactional=transactional)
    now = int(time.time() * 1000)
    for value in values:
        builder.append(now, key, value)
    return builder.build()


def produce(port, topic, records, *, partition=0, transactional_id="txn", acks=-1):
    """Produce v9 of one record set; (error code, base offset)."""
    request = ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses[0]
    finally:
        client.close()
    return answer.error_code, answer.base_offset


def write_markers(port, producer_id, epoch, commit, partitions, *, coordinator_epoch=0, version=1):
    """One WriteTxnMarkers request with one marker; {(topic, partition): error code}."""
    topics = {}
    for name, index in partitions:
        topics.setdefault(name, []).append(index)
    request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=n, partition_indexes=i) for n, i in topics.items()])])
    client = RawClient(port)
    try:
        response = client.request(ApiKey.WRITE_TXN_MARKERS, version, request)
    finally:
        client.close()
    [marker] = response.markers
    assert marker.producer_id == producer_id
    return {(t.name, p.partition_index): p.error_code for t in marker.topics for p in t.partitions}


def fetch(port, topic, offset, *, isolation_level, partition=0, max_wait_ms=0, version=11):
    """One Fetch (a consumer's) of one partition; its partition answer."""
    request = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                           isolation_level=isolation_level, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                               FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                           partition_max_bytes=1 << 20)])])
    client = RawClient(port, timeout=max_wait_ms / 1000 + 10)
    try:
        return client.request(ApiKey.FETCH, version, request).responses[0].partitions[0]
    finally:
        client.close()


def list_offset(port, topic, timestamp, *, isolation_level, partition=0, version=7):
    """ListOffsets of one partition; (error code, offset)."""
    request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)])])
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.LIST_OFFSETS, version, request).topics[0].partitions[0]
    finally:
        client.close()
    return answer.error_code, answer.offset


def describe_producers(port, topic, partitions):
    """DescribeProducers v0; its partition answers by index."""
    request = DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=topic, partition_indexes=list(partitions))])
    client = RawClient(port)
    try:
        [answer] = client.request(ApiKey.DESCRIBE_PRODUCERS, 0, request).topics
    finally:
        client.close()
    return {p.partition_index: p for p in answer.partitions}
