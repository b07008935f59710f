"""Tests of kproto.protocol.schema: every API, every version, both directions round-trip."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto.errors import ProtocolError
from kproto.protocol import messages as m
from kproto.protocol import types as t
from kproto.protocol.schema import EncodeError, Struct, UnsupportedFieldError, build_message
from kproto.protocol.spec import Route, api
from tests.support.table_strategies import every_case, message_strategy, populated

CASES = every_case()


def _cls(name: str, is_request: bool) -> type:
    return getattr(m, name + ("Request" if is_request else "Response"))


def _ids(case: tuple[str, int, bool]) -> str:
    name, version, req = case
    return f"{name}{'Request' if req else 'Response'}-v{version}"


def _roundtrip(cls: type, obj: Struct, version: int) -> None:
    data = obj.encode(version)
    back = cls.decode(data, version)
    assert back == obj
    assert back.encode(version) == data


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_populated_instance_round_trips(case: tuple[str, int, bool]) -> None:
    """Every field of the version set to a non-default value survives encode -> decode."""
    name, version, req = case
    cls = _cls(name, req)
    _roundtrip(cls, populated(cls, version), version)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_default_instance_round_trips(case: tuple[str, int, bool]) -> None:
    name, version, req = case
    cls = _cls(name, req)
    _roundtrip(cls, cls(), version)


MESSAGES = [(a.name, req) for a in m.TABLE for req in (True, False)]


@pytest.mark.parametrize(("name", "req"), MESSAGES, ids=[n + ("Request" if r else "Response") for n, r in MESSAGES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_hypothesis_round_trip(name: str, req: bool, data: st.DataObject) -> None:
    """Objects drawn from the table for one version: decode(encode(x)) == x, re-encode identical."""
    cls = _cls(name, req)
    version = data.draw(st.sampled_from(list(cls.VERSIONS)), label="version")
    _roundtrip(cls, data.draw(message_strategy(cls, version)), version)


def test_unknown_tagged_fields_are_kept() -> None:
    req = m.FetchRequest(max_wait_ms=5, unknown_tagged_fields={7: b"hello", 3: b""})
    data = req.encode(12)
    back = m.FetchRequest.decode(data, 12)
    assert back.unknown_tagged_fields == {3: b"", 7: b"hello"}
    assert back.encode(12) == data


def test_known_tagged_field_only_written_when_not_default() -> None:
    plain = m.FetchRequest(max_wait_ms=5).encode(12)
    with_id = m.FetchRequest(max_wait_ms=5, cluster_id="c").encode(12)
    assert plain.endswith(b"\x00")  # empty tag section
    assert len(with_id) == len(plain) + 4  # tag, size, compact string "c"
    assert m.FetchRequest.decode(with_id, 12).cluster_id == "c"


def test_absent_non_ignorable_field_raises() -> None:
    """Java's rule: a non-default, non-ignorable field the version lacks is an error."""
    req = m.ProduceRequest(transactional_id="txn", acks=-1)
    with pytest.raises(UnsupportedFieldError) as info:
        req.encode(2)
    assert info.value.path == "ProduceRequest.transactional_id" and info.value.version == 2
    assert m.ProduceRequest.decode(req.encode(3), 3) == req


def test_absent_ignorable_field_is_dropped() -> None:
    req = m.FetchRequest(max_wait_ms=1, rack_id="rack-a")  # rack_id: v11+, ignorable
    back = m.FetchRequest.decode(req.encode(10), 10)
    assert back.rack_id == ""
    assert back.max_wait_ms == 1


def test_absent_field_decodes_to_its_default() -> None:
    resp = m.ProduceResponse.decode(m.ProduceResponse(responses=[
        m.ProduceResponse.TopicProduceResponse(name="t", partition_responses=[
            m.ProduceResponse.PartitionProduceResponse(index=0, base_offset=5)])]).encode(0), 0)
    part = resp.responses[0].partition_responses[0]
    assert part.log_append_time_ms == -1 and part.log_start_offset == -1 and part.error_message is None
    assert part.current_leader == m.ProduceResponse.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)


@pytest.mark.parametrize(
    ("obj", "version", "match"),
    [
        (m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name=None)]), 9, "null|NoneType"),
        (m.ProduceRequest(acks=1 << 20), 9, "ProduceRequest v9"),
        (m.ProduceRequest(topic_data=[object()]), 9, "ProduceRequest v9"),
        (m.ProduceRequest(transactional_id=b"not a str"), 9, "ProduceRequest v9"),
        (m.SaslAuthenticateRequest(auth_bytes="not bytes"), 1, "not bytes-like"),
        (m.SaslAuthenticateRequest(auth_bytes=None), 1, "SaslAuthenticateRequest v1"),
    ],
)
def test_bad_values_raise_encode_error(obj: Struct, version: int, match: str) -> None:
    with pytest.raises(EncodeError, match=match):
        obj.encode(version)


def test_wrong_class_and_version_are_refused() -> None:
    with pytest.raises(EncodeError):
        m.ProduceRequest._codec.encode(m.FetchRequest(), 3)
    with pytest.raises(ValueError, match="no version 13"):
        m.ProduceRequest().encode(13)
    with pytest.raises(ValueError, match="no version 13"):
        m.ProduceRequest.decode(b"", 13)


def test_trailing_bytes_are_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="trailing"):
        m.HeartbeatRequest.decode(m.HeartbeatRequest(group_id="g").encode(0) + b"x", 0)


def test_records_decode_zero_copy() -> None:
    records = b"x" * 1000
    req = m.ProduceRequest(topic_data=[m.ProduceRequest.TopicProduceData(name="t", partition_data=[
        m.ProduceRequest.PartitionProduceData(index=0, records=records)])])
    data = req.encode(9)
    got = m.ProduceRequest.decode(data, 9).topic_data[0].partition_data[0].records
    assert isinstance(got, memoryview) and got.obj is data and got == records


def test_message_classes_behave_like_values() -> None:
    a = m.HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    b = m.HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    assert a == b and a != m.HeartbeatRequest(group_id="g")
    assert "group_id='g'" in repr(a)
    assert a.to_dict() == {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    with pytest.raises(TypeError):
        hash(a)
    with pytest.raises(TypeError):
        m.HeartbeatRequest("g")  # keyword-only
    # fresh mutable defaults per instance
    x, y = m.MetadataRequest(), m.MetadataRequest()
    x.topics.append(1)
    assert y.topics == []


def test_messages_pickle_and_copy_by_value() -> None:
    import copy
    import pickle

    req = m.ProduceRequest(acks=1, topic_data=[m.ProduceRequest.TopicProduceData(name="t", partition_data=[
        m.ProduceRequest.PartitionProduceData(index=0, records=b"abc")])], unknown_tagged_fields={5: b"x"})
    decoded = m.ProduceRequest.decode(req.encode(9), 9)  # records are a memoryview here
    for obj in (req, decoded):
        assert pickle.loads(pickle.dumps(obj)) == req
        assert copy.deepcopy(obj) == req


def test_message_class_metadata() -> None:
    assert m.ProduceRequest.API_KEY == 0 and m.ProduceRequest.API_NAME == "Produce"
    assert m.ProduceRequest.IS_REQUEST and not m.ProduceResponse.IS_REQUEST
    assert str(m.ProduceRequest.VERSIONS) == "0-12" and str(m.ProduceRequest.FLEXIBLE) == "9+"
    assert "transactional_id: string, v3+" in (m.ProduceRequest.__doc__ or "")


# ---------------------------------------------------------------------------
# The compiled path agrees byte for byte with the reference types in types.py
# ---------------------------------------------------------------------------

_PROBE = api(
    32000, "Probe", "0-1", flexible="1+", route=Route.ANY, notes="test only",
    request="""
    i8     int8
    i16    int16
    i32    int32
    i64    int64
    u16    uint16
    u32    uint32
    f64    float64
    flag   bool
    id     uuid
    s      string
    ns     string   null
    raw    bytes
    nraw   bytes    null
    recs   records  null
    ints   []int32
    strs   []string null
    """,
    response="""
    x int8
    """,
)
Probe = build_message(_PROBE.request)


def _reference(obj: Struct, flexible: bool) -> bytes:
    parts: list[bytes] = []
    w = parts.append
    for typ, name in [
        (t.INT8, "i8"), (t.INT16, "i16"), (t.INT32, "i32"), (t.INT64, "i64"), (t.UINT16, "u16"),
        (t.UINT32, "u32"), (t.FLOAT64, "f64"), (t.BOOLEAN, "flag"), (t.UUID, "id"),
        (t.String(flexible), "s"), (t.String(flexible, True), "ns"), (t.Bytes(flexible), "raw"),
        (t.Bytes(flexible, True), "nraw"), (t.Records(flexible), "recs"),
        (t.Array(t.INT32, flexible), "ints"), (t.Array(t.String(flexible), flexible, True), "strs"),
    ]:
        typ.write(w, getattr(obj, name))
    if flexible:
        t.TAGGED_FIELDS.write(w, obj.unknown_tagged_fields)
    return b"".join(parts)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), version=st.sampled_from([0, 1]))
def test_compiled_codec_matches_reference_types(data: st.DataObject, version: int) -> None:
    obj = data.draw(message_strategy(Probe, version))
    assert obj.encode(version) == _reference(obj, version == 1)
    assert Probe.decode(_reference(obj, version == 1), version) == obj


def test_uuid_values() -> None:
    u = uuid.uuid4()
    obj = Probe(id=u)
    assert Probe.decode(obj.encode(1), 1).id == u
    assert Probe.decode(Probe().encode(1), 1).id == uuid.UUID(int=0)


def test_bool_reads_any_nonzero_byte_as_true() -> None:
    data = bytearray(Probe().encode(0))
    data[struct.calcsize(">bhiqHId")] = 7
    assert Probe.decode(bytes(data), 0).flag is True


def test_strings_decode_leniently_like_java() -> None:
    data = m.HeartbeatRequest(group_id="ab").encode(0).replace(b"ab", b"a\xff")
    assert m.HeartbeatRequest.decode(data, 0).group_id == "a\ufffd"
