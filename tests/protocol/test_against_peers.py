"""kafka-python's and aiokafka's protocol classes as oracles for ours.

Each side encodes the same logical message at the same version; the bytes must be equal,
and each side must decode what the other wrote. kafka-python 3.x generates its classes
from Kafka's JSON (a newer snapshot than ours), aiokafka writes its schemas by hand, so
agreeing with both is evidence beyond our own table check.
"""

from __future__ import annotations

import uuid

import pytest

from kproto.protocol import ApiKey, decode_request, decode_response, encode_request, encode_response
from kproto.protocol import messages as m
from tests.support.table_strategies import populated

kp = pytest.importorskip("kafka.protocol", reason="kafka-python is not installed")
from kafka.protocol.consumer import FetchRequest as KpFetchRequest  # noqa: E402
from kafka.protocol.consumer import FetchResponse as KpFetchResponse  # noqa: E402
from kafka.protocol.consumer.group import JoinGroupRequest as KpJoinGroupRequest  # noqa: E402
from kafka.protocol.consumer.group import JoinGroupResponse as KpJoinGroupResponse  # noqa: E402
from kafka.protocol.metadata import ApiVersionsRequest as KpApiVersionsRequest  # noqa: E402
from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse  # noqa: E402
from kafka.protocol.metadata import MetadataRequest as KpMetadataRequest  # noqa: E402
from kafka.protocol.metadata import MetadataResponse as KpMetadataResponse  # noqa: E402
from kafka.protocol.producer import ProduceRequest as KpProduceRequest  # noqa: E402
from kafka.protocol.producer import ProduceResponse as KpProduceResponse  # noqa: E402
from kafka.record.memory_records import MemoryRecordsBuilder  # noqa: E402


def _overlap(ours: type, theirs: type) -> list[int]:
    lo, hi = theirs.valid_versions
    return [v for v in ours.VERSIONS if lo <= v <= hi]


def _kp_request(obj, correlation_id: int = 11, client_id: str = "peer") -> bytes:
    obj.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(obj.encode(header=True, framed=True))


def _kp_response(obj, correlation_id: int = 11) -> bytes:
    obj.with_header(correlation_id=correlation_id)
    return bytes(obj.encode(header=True, framed=True))


@pytest.fixture(scope="module")
def record_batch() -> bytes:
    """A record batch v2 written by kafka-python's own record builder."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i in range(3):
        builder.append(timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * 50, headers=[("h", b"x")])
    builder.close()
    return bytes(builder.buffer())


# ---------------------------------------------------------------------------
# Metadata
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", _overlap(m.MetadataRequest, KpMetadataRequest))
def test_metadata_request_bytes_equal_kafka_python(version: int) -> None:
    kw = {"allow_auto_topic_creation": True} if version >= 4 else {}
    theirs = KpMetadataRequest[version](topics=[KpMetadataRequest.MetadataRequestTopic(name="orders")], **kw)
    ours = m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name="orders")])
    wire = _kp_request(theirs)
    assert encode_request(ApiKey.METADATA, version, 11, "peer", ours) == wire
    header, body = decode_request(wire[4:])
    assert (header.api_version, header.correlation_id, header.client_id) == (version, 11, "peer")
    assert body == ours


@pytest.mark.parametrize("version", _overlap(m.MetadataResponse, KpMetadataResponse))
def test_metadata_response_decoded_by_kafka_python(version: int) -> None:
    R = m.MetadataResponse
    ours = R(
        brokers=[R.MetadataResponseBroker(node_id=1, host="localhost", port=9092, rack="r1" if version >= 1 else None)],
        cluster_id="cid" if version >= 2 else None,
        controller_id=1 if version >= 1 else -1,
        topics=[R.MetadataResponseTopic(name="orders", partitions=[
            R.MetadataResponsePartition(partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1])])],
    )
    wire = encode_response(ApiKey.METADATA, version, 5, ours)
    theirs = KpMetadataResponse.decode(wire, version=version, header=True, framed=True)
    assert theirs.header.correlation_id == 5
    assert [(b.node_id, b.host, b.port) for b in theirs.brokers] == [(1, "localhost", 9092)]
    assert theirs.topics[0].name == "orders"
    assert theirs.topics[0].partitions[0].replica_nodes == [1]
    assert _kp_response(theirs, 5) == wire


# ---------------------------------------------------------------------------
# Produce, with a record batch
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", _overlap(m.ProduceRequest, KpProduceRequest))
def test_produce_request_with_records_bytes_equal(version: int, record_batch: bytes) -> None:
    P = KpProduceRequest
    theirs = P[version](transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        P.TopicProduceData(name="orders", partition_data=[
            P.TopicProduceData.PartitionProduceData(index=2, records=record_batch)])])
    ours = m.ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[m.ProduceRequest.TopicProduceData(
        name="orders", partition_data=[m.ProduceRequest.PartitionProduceData(index=2, records=record_batch)])])
    wire = _kp_request(theirs)
    assert encode_request(ApiKey.PRODUCE, version, 11, "peer", ours) == wire
    _, body = decode_request(wire[4:])
    assert body.topic_data[0].partition_data[0].records == record_batch


@pytest.mark.parametrize("version", _overlap(m.ProduceResponse, KpProduceResponse))
def test_produce_response_both_ways(version: int) -> None:
    R = m.ProduceResponse
    ours = R(responses=[R.TopicProduceResponse(name="orders", partition_responses=[
        R.PartitionProduceResponse(index=2, base_offset=42, log_append_time_ms=-1)])], throttle_time_ms=3)
    wire = encode_response(ApiKey.PRODUCE, version, 9, ours)
    theirs = KpProduceResponse.decode(wire, version=version, header=True, framed=True)
    assert theirs.responses[0].partition_responses[0].base_offset == 42
    assert _kp_response(theirs, 9) == wire
    assert decode_response(ApiKey.PRODUCE, version, _kp_response(theirs, 9)[4:]) == (9, ours)


# ---------------------------------------------------------------------------
# Fetch
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", _overlap(m.FetchRequest, KpFetchRequest))
def test_fetch_request_bytes_equal(version: int) -> None:
    F = KpFetchRequest
    tid = uuid.UUID(int=0xABCDEF)
    topic = {"topic": "orders"} if version <= 12 else {"topic_id": tid}
    theirs = F[version](replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1,
                        session_id=0, session_epoch=-1, topics=[F.FetchTopic(**topic, partitions=[
                            F.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=100,
                                                        last_fetched_epoch=-1, log_start_offset=-1,
                                                        partition_max_bytes=1048576)])],
                        forgotten_topics_data=[], rack_id="")
    ours = m.FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1, session_epoch=-1,
                          topics=[m.FetchRequest.FetchTopic(**topic, partitions=[m.FetchRequest.FetchPartition(
                              partition=0, fetch_offset=100, partition_max_bytes=1048576)])])
    wire = _kp_request(theirs)
    assert encode_request(ApiKey.FETCH, version, 11, "peer", ours) == wire
    assert decode_request(wire[4:])[1] == ours


@pytest.mark.parametrize("version", _overlap(m.FetchResponse, KpFetchResponse))
def test_fetch_response_with_records_decoded_by_kafka_python(version: int, record_batch: bytes) -> None:
    R = m.FetchResponse
    topic = {"topic": "orders"} if version <= 12 else {"topic_id": uuid.UUID(int=7)}
    ours = R(responses=[R.FetchableTopicResponse(**topic, partitions=[R.PartitionData(
        partition_index=0, high_watermark=3, last_stable_offset=3, log_start_offset=0 if version >= 5 else -1,
        records=record_batch)])])
    wire = encode_response(ApiKey.FETCH, version, 4, ours)
    theirs = KpFetchResponse.decode(wire, version=version, header=True, framed=True)
    assert bytes(theirs.responses[0].partitions[0].records) == record_batch
    assert _kp_response(theirs, 4) == wire
    corr, back = decode_response(ApiKey.FETCH, version, wire[4:])
    assert corr == 4 and back == ours


# ---------------------------------------------------------------------------
# ApiVersions and JoinGroup
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", _overlap(m.ApiVersionsRequest, KpApiVersionsRequest))
def test_api_versions_both_ways(version: int) -> None:
    kw = {"client_software_name": "kafka-python", "client_software_version": "3.0"} if version >= 3 else {}
    wire = _kp_request(KpApiVersionsRequest[version](**kw))
    assert encode_request(ApiKey.API_VERSIONS, version, 11, "peer", m.ApiVersionsRequest(**kw)) == wire
    assert decode_request(wire[4:])[1] == m.ApiVersionsRequest(**kw)

    R = m.ApiVersionsResponse
    ours = R(api_keys=[R.ApiVersion(api_key=a.key, min_version=a.min_version, max_version=a.max_version)
                       for a in m.TABLE], throttle_time_ms=0)
    answer = encode_response(ApiKey.API_VERSIONS, version, 11, ours)
    theirs = KpApiVersionsResponse.decode(answer, version=version, header=True, framed=True)
    assert [(k.api_key, k.min_version, k.max_version) for k in theirs.api_keys] == [
        (a.key, a.min_version, a.max_version) for a in m.TABLE]
    assert _kp_response(theirs) == answer


@pytest.mark.parametrize("version", _overlap(m.JoinGroupRequest, KpJoinGroupRequest))
def test_join_group_both_ways(version: int) -> None:
    J = KpJoinGroupRequest
    protocols = [J.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01meta")]
    kw = dict(group_id="g", session_timeout_ms=10000, member_id="", protocol_type="consumer", protocols=protocols)
    if version >= 1:
        kw["rebalance_timeout_ms"] = 30000
    if version >= 5:
        kw["group_instance_id"] = None
    if version >= 8:
        kw["reason"] = "joining"
    wire = _kp_request(J[version](**kw))
    ours = m.JoinGroupRequest(**{**kw, "protocols": [m.JoinGroupRequest.JoinGroupRequestProtocol(
        name="range", metadata=b"\x00\x01meta")]})
    assert encode_request(ApiKey.JOIN_GROUP, version, 11, "peer", ours) == wire
    assert decode_request(wire[4:])[1] == ours

    R = m.JoinGroupResponse
    resp = R(generation_id=1, protocol_type="consumer" if version >= 7 else None, protocol_name="range",
             leader="m1", member_id="m1", members=[R.JoinGroupResponseMember(member_id="m1", metadata=b"md")])
    answer = encode_response(ApiKey.JOIN_GROUP, version, 11, resp)
    theirs = KpJoinGroupResponse.decode(answer, version=version, header=True, framed=True)
    assert (theirs.leader, theirs.members[0].member_id, bytes(theirs.members[0].metadata)) == ("m1", "m1", b"md")
    assert _kp_response(theirs) == answer


# ---------------------------------------------------------------------------
# Every API both tables have: kafka-python re-encodes our bytes identically
# ---------------------------------------------------------------------------


def _kafka_python_classes() -> dict[str, type]:
    import importlib
    import pkgutil

    from kafka.protocol.api_message import ApiMessage

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
        if ".old" in info.name or info.name.endswith("generate_stubs"):
            continue
        for value in vars(importlib.import_module(info.name)).values():
            if (isinstance(value, type) and issubclass(value, ApiMessage) and value is not ApiMessage
                    and getattr(value, "_class_version", 1) is None):
                found[value.__name__] = value
    return found


_KP_CLASSES = _kafka_python_classes()
_SHARED = [
    (cls, _KP_CLASSES[cls.__name__], v)
    for cls in list(m.REQUESTS.values()) + list(m.RESPONSES.values())
    if cls.__name__ in _KP_CLASSES
    for v in cls.VERSIONS
    if _KP_CLASSES[cls.__name__].valid_versions[0] <= v <= _KP_CLASSES[cls.__name__].valid_versions[1]
]


@pytest.mark.parametrize(("ours", "theirs", "version"), _SHARED, ids=[f"{c.__name__}-v{v}" for c, _, v in _SHARED])
def test_kafka_python_reencodes_our_bytes_identically(ours: type, theirs: type, version: int) -> None:
    """Every field set (populated instance); kafka-python decodes it and writes the same bytes."""
    obj = populated(ours, version, unknown_tags=False)
    if ours is m.ApiVersionsResponse:
        obj.error_code = 0  # kafka-python parses any error as a v0 body
    data = obj.encode(version)
    parsed = theirs.decode(data, version=version)
    parsed._header = None  # kafka-python's encode(version=) expects the slot set
    assert bytes(parsed.encode(version=version)) == data


# ---------------------------------------------------------------------------
# aiokafka (hand-written schemas)
# ---------------------------------------------------------------------------

aio = pytest.importorskip("aiokafka.protocol.metadata", reason="aiokafka is not installed")


def _aio_request(struct_obj, correlation_id: int = 3, client_id: str = "aiokafka") -> bytes:
    header = struct_obj.build_request_header(correlation_id=correlation_id, client_id=client_id)
    payload = header.encode() + struct_obj.encode()
    return len(payload).to_bytes(4, "big") + payload


@pytest.mark.parametrize("version", range(0, 6))
def test_aiokafka_metadata(version: int) -> None:
    from aiokafka.protocol import metadata as am

    cls = getattr(am, f"MetadataRequest_v{version}")
    args = (["a", "b"], True) if version >= 4 else (["a", "b"],)
    wire = _aio_request(cls(*args))
    ours = m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name=n) for n in "ab"])
    assert encode_request(ApiKey.METADATA, version, 3, "aiokafka", ours) == wire
    assert decode_request(wire[4:])[1] == ours

    R = m.MetadataResponse
    resp = R(brokers=[R.MetadataResponseBroker(node_id=0, host="h", port=1, rack="r" if version >= 1 else None)],
             cluster_id="c" if version >= 2 else None, controller_id=0 if version >= 1 else -1,
             topics=[R.MetadataResponseTopic(name="a", partitions=[R.MetadataResponsePartition(
                 partition_index=0, leader_id=0, replica_nodes=[0], isr_nodes=[0], offline_replicas=[])])])
    body = encode_response(ApiKey.METADATA, version, 3, resp)[8:]  # size and v0 header off
    theirs = getattr(am, f"MetadataResponse_v{version}").decode(body)
    assert theirs.brokers[0][1] == "h" and theirs.topics[0][1] == "a"
    assert theirs.encode() == body


@pytest.mark.parametrize("version", range(3, 9))
def test_aiokafka_produce_with_records(version: int, record_batch: bytes) -> None:
    from aiokafka.protocol import produce as ap

    cls = getattr(ap, f"ProduceRequest_v{version}")
    wire = _aio_request(cls(None, 1, 1000, [("orders", [(0, record_batch)])]))
    ours = m.ProduceRequest(acks=1, timeout_ms=1000, topic_data=[m.ProduceRequest.TopicProduceData(
        name="orders", partition_data=[m.ProduceRequest.PartitionProduceData(index=0, records=record_batch)])])
    assert encode_request(ApiKey.PRODUCE, version, 3, "aiokafka", ours) == wire
    assert decode_request(wire[4:])[1] == ours


@pytest.mark.parametrize("version", range(0, 3))
def test_aiokafka_api_versions_response(version: int) -> None:
    from aiokafka.protocol import admin as aa

    R = m.ApiVersionsResponse
    resp = R(api_keys=[R.ApiVersion(api_key=0, min_version=0, max_version=11)], throttle_time_ms=0)
    body = encode_response(ApiKey.API_VERSIONS, version, 1, resp)[8:]
    theirs = getattr(aa, f"ApiVersionResponse_v{version}").decode(body)
    assert theirs.error_code == 0 and list(theirs.api_versions[0][:3]) == [0, 0, 11]
