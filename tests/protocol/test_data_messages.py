"""The schema table's data messages (issue 12): Kafka's ``"type": "data"`` structures, with
their int16 version prefix, round-trip at every version and lay out bytes as Kafka does."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kproto.protocol as protocol
from kproto.errors import ProtocolError
from kproto.protocol import messages as m
from kproto.protocol.schema import DataMessage, build_data_message, read_version
from kproto.protocol.spec import data
from tests.support.table_strategies import message_strategy, populated

CASES = [(d.name, v) for d in m.DATA for v in d.versions]


def _ids(case: tuple[str, int]) -> str:
    return f"{case[0]}-v{case[1]}"


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text.encode())) + text.encode()


def _roundtrip(obj: DataMessage, version: int) -> None:
    cls = type(obj)
    data = obj.encode_versioned(version)
    assert data[:2] == struct.pack(">h", version)
    assert data[2:] == obj.encode(version)
    assert cls.decode_versioned(data) == (version, obj)
    assert cls.decode(data[2:], version) == obj


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_populated_data_message_round_trips_with_its_version(case: tuple[str, int]) -> None:
    name, version = case
    cls = m.data_class(name)
    _roundtrip(populated(cls, version), version)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_default_data_message_round_trips(case: tuple[str, int]) -> None:
    name, version = case
    _roundtrip(m.data_class(name)(), version)


@pytest.mark.parametrize("name", [d.name for d in m.DATA])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hypothesis_data_message_round_trip(name: str, data: st.DataObject) -> None:
    cls = m.data_class(name)
    version = data.draw(st.sampled_from(list(cls.VERSIONS)), label="version")
    _roundtrip(data.draw(message_strategy(cls, version)), version)


def test_the_table_names_and_exports_every_data_message() -> None:
    names = [d.name for d in m.DATA]
    assert names == sorted(names) and len(set(names)) == len(names)
    assert set(names) >= {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment", "OffsetCommitKey",
                          "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue"}
    for d in m.DATA:
        cls = getattr(m, d.name)
        assert cls is m.DATA_CLASSES[d.name] is m.data_class(d.name) is protocol.data_class(d.name)
        assert d.name in m.__all__ and issubclass(cls, DataMessage) and not issubclass(cls, protocol.Message)
        assert cls.NAME == d.name and cls.VERSIONS == d.versions and cls.FLEXIBLE == d.flexible
        assert d.notes.strip() and d.message.is_data and d.message.api_key == -1
    assert protocol.DATA is m.DATA


def test_offset_commit_records_have_kafkas_layout() -> None:
    """GroupMetadataManager's formats: key v1, value v3 (what Kafka writes without expiry),
    value v1 with expire_timestamp, and v4 flexible (compact string, tag buffers)."""
    key = m.OffsetCommitKey(group="grp", topic="topic", partition=7)
    assert key.encode_versioned(1) == struct.pack(">h", 1) + _string("grp") + _string("topic") + struct.pack(">i", 7)
    value = m.OffsetCommitValue(offset=42, leader_epoch=3, metadata="m", commit_timestamp=1700)
    assert value.encode_versioned(3) == struct.pack(">hqi", 3, 42, 3) + _string("m") + struct.pack(">q", 1700)
    expiring = m.OffsetCommitValue(offset=42, metadata="m", commit_timestamp=1700, expire_timestamp=99)
    assert expiring.encode_versioned(1) == struct.pack(">hq", 1, 42) + _string("m") + struct.pack(">qq", 1700, 99)
    assert value.encode_versioned(4) == struct.pack(">hqi", 4, 42, 3) + b"\x02m" + struct.pack(">q", 1700) + b"\x00"
    group = m.GroupMetadataKey(group="grp")
    assert group.encode_versioned(2) == struct.pack(">h", 2) + _string("grp")


def test_group_metadata_value_has_kafkas_layout() -> None:
    member = m.GroupMetadataValue.MemberMetadata(
        member_id="m1", group_instance_id="i1", client_id="c", client_host="/h", rebalance_timeout=30,
        session_timeout=10, subscription=b"S", assignment=b"")
    value = m.GroupMetadataValue(protocol_type="consumer", generation=5, protocol=None, leader="m1",
                                 current_state_timestamp=123, members=[member])
    assert value.encode_versioned(3) == (
        struct.pack(">h", 3) + _string("consumer") + struct.pack(">i", 5) + b"\xff\xff" + _string("m1")
        + struct.pack(">qi", 123, 1) + _string("m1") + _string("i1") + _string("c") + _string("/h")
        + struct.pack(">iii", 30, 10, 1) + b"S" + struct.pack(">i", 0))


def test_a_version_the_table_lacks_is_a_protocol_error_unless_read_as_the_newest() -> None:
    body = m.OffsetCommitValue(offset=1, commit_timestamp=2).encode(3)
    for version in (5, -1):
        with pytest.raises(ProtocolError, match=f"OffsetCommitValue version {version} is not supported"):
            m.OffsetCommitValue.decode_versioned(struct.pack(">h", version) + body)
    with pytest.raises(ProtocolError, match="not supported"):
        m.GroupMetadataKey.decode_versioned(struct.pack(">h", 1) + _string("g"))
    # Kafka's rule for the consumer protocol: a newer version is read as the newest known,
    # the fields it appended are ignored.
    sub = m.ConsumerProtocolSubscription(topics=["t"], generation_id=4, rack_id="r")
    newer = struct.pack(">h", 9) + sub.encode(3) + b"appended by version 9"
    assert m.ConsumerProtocolSubscription.decode_versioned(newer, newer_as_newest=True) == (9, sub)
    with pytest.raises(ProtocolError, match="version 9 is not supported"):
        m.ConsumerProtocolSubscription.decode_versioned(newer)
    with pytest.raises(ProtocolError, match="version -2 is not supported"):
        m.ConsumerProtocolSubscription.decode_versioned(b"\xff\xfe" + sub.encode(3), newer_as_newest=True)


def test_bytes_after_the_body_are_ignored_and_short_bytes_are_protocol_errors() -> None:
    """Java's generated readers read their fields and stop; kproto reads the same way."""
    key = m.OffsetCommitKey(group="g", topic="t", partition=1)
    assert m.OffsetCommitKey.decode_versioned(key.encode_versioned(0) + b"more") == (0, key)
    assert m.OffsetCommitKey.decode_versioned(memoryview(key.encode_versioned(1))) == (1, key)
    for short in (b"", b"\x00", key.encode_versioned(1)[:-1]):
        with pytest.raises(ProtocolError):
            m.OffsetCommitKey.decode_versioned(short)
    assert read_version(b"\x00\x02rest") == 2
    with pytest.raises(ProtocolError, match="no int16 version"):
        read_version(b"\x01")


def test_a_new_data_message_needs_only_its_table_entry() -> None:
    """The mechanism the ``__transaction_state`` records will use (issue 14): a flexible
    data message with a tagged field and a struct array, declared and built."""
    entry = data("TxnLikeValue", "0-1", flexible="1+", notes="v1: flexible", fields="""
        producer_id   int64
        partitions    []Partition  v1+
          topic       string       v1+
          indexes     []int32      v1+
        note          string       v1+  null  tag=0  default=null
    """)
    cls = build_data_message(entry.message)
    assert issubclass(cls, DataMessage) and cls.NAME == "TxnLikeValue"
    value = cls(producer_id=7, partitions=[cls.Partition(topic="t", indexes=[1, 2])], note="n")
    wire = value.encode_versioned(1)
    assert wire == (struct.pack(">hq", 1, 7) + b"\x02\x02t\x03" + struct.pack(">ii", 1, 2) + b"\x00"
                    + b"\x01\x00\x02\x02n")
    assert cls.decode_versioned(wire) == (1, value)
    assert cls.decode_versioned(cls(producer_id=7).encode_versioned(0)) == (0, cls(producer_id=7))
