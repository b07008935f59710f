"""WriteTxnMarkers (API 27) on the wire (issue 14 step 1, item 6): every marker of a request
written to each of its partitions through ``BrokerState.write_txn_markers``, each
partition answered with its own error code, in v0 and in the flexible v1."""

import pytest

from kproto import AdminClient
from kproto.admin import NewTopic
from kproto.errors import UnknownTopicOrPartitionError
from kproto.protocol import ApiKey
from kproto.protocol.messages import ApiVersionsRequest, WriteTxnMarkersRequest
from kproto.records import ControlType, parse_txn_marker, read_batches
from tests.minibroker.txn.txn_wire import produce, txn_batch

Marker = WriteTxnMarkersRequest.WritableTxnMarker
MarkerTopic = WriteTxnMarkersRequest.WritableTxnMarkerTopic


def _last_batch(broker, topic, index):
    log = broker._server.state.topics[topic].partitions[index].log
    return list(read_batches(log.read(log.log_start_offset, 1 << 20)))[-1]


@pytest.mark.parametrize("version", [0, 1])
def test_every_marker_of_a_request_is_written_and_answered_per_partition(broker, raw, version):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("a", 2), NewTopic("b", 1)])
    produce(broker.port, "a", txn_batch(11, 1, 0, [b"x"]))
    request = WriteTxnMarkersRequest(markers=[
        Marker(producer_id=11, producer_epoch=1, transaction_result=False, coordinator_epoch=7,
               topics=[MarkerTopic(name="a", partition_indexes=[0, 1, 5]), MarkerTopic(name="nope", partition_indexes=[0])]),
        Marker(producer_id=12, producer_epoch=0, transaction_result=True, coordinator_epoch=2,
               topics=[MarkerTopic(name="b", partition_indexes=[0])]),
    ])
    response = raw().request(ApiKey.WRITE_TXN_MARKERS, version, request)
    answers = {(m.producer_id, t.name, p.partition_index): p.error_code
               for m in response.markers for t in m.topics for p in t.partitions}
    unknown = UnknownTopicOrPartitionError.code
    assert answers == {(11, "a", 0): 0, (11, "a", 1): 0, (11, "a", 5): unknown, (11, "nope", 0): unknown,
                       (12, "b", 0): 0}
    for topic, index, producer_id, control, coordinator_epoch in (
            ("a", 0, 11, ControlType.ABORT, 7), ("a", 1, 11, ControlType.ABORT, 7), ("b", 0, 12, ControlType.COMMIT, 2)):
        marker = _last_batch(broker, topic, index)
        assert (marker.is_control, marker.producer_id) == (True, producer_id)
        assert parse_txn_marker(marker.records()[0]) == (control, coordinator_epoch)
    # The abort of producer 11's transaction on a-0 is indexed; a-1 saw no data of it.
    txns = broker._server.state.topics["a"].partitions[0].log.collect_aborted_transactions(0, 10)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in txns] == [(11, 0, 1)]
    assert broker._server.state.topics["a"].partitions[1].log.collect_aborted_transactions(0, 10) == []


def test_api_versions_advertises_write_txn_markers_and_describe_producers(broker, raw):
    response = raw().request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t",
                                                                        client_software_version="1"))
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[ApiKey.WRITE_TXN_MARKERS] == (0, 1)
    assert versions[ApiKey.DESCRIBE_PRODUCERS] == (0, 0)
