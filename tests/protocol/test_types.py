"""Tests of kproto.protocol.types: every primitive round-trips and fails only with ProtocolError."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.errors import ProtocolError
from kproto.protocol import types as t


def _enc(typ: t.WireType, value) -> bytes:
    parts: list[bytes] = []
    typ.write(parts.append, value)
    return b"".join(parts)


def _roundtrip(typ: t.WireType, value) -> None:
    data = _enc(typ, value)
    got, pos = typ.read(data + b"trailing", 0)
    assert pos == len(data)
    assert got == value


INTS = [
    (t.INT8, -(1 << 7), (1 << 7) - 1),
    (t.INT16, -(1 << 15), (1 << 15) - 1),
    (t.INT32, -(1 << 31), (1 << 31) - 1),
    (t.INT64, -(1 << 63), (1 << 63) - 1),
    (t.UINT16, 0, (1 << 16) - 1),
    (t.UINT32, 0, (1 << 32) - 1),
]


@pytest.mark.parametrize(("typ", "lo", "hi"), INTS, ids=lambda x: getattr(x, "name", str(x)))
@settings(max_examples=30)
@given(data=st.data())
def test_fixed_ints(typ: t.Fixed, lo: int, hi: int, data: st.DataObject) -> None:
    _roundtrip(typ, data.draw(st.integers(lo, hi)))
    assert len(_enc(typ, lo)) == typ.size


def test_fixed_wire_forms() -> None:
    assert _enc(t.INT32, 1) == b"\x00\x00\x00\x01"
    assert _enc(t.INT16, -1) == b"\xff\xff"
    assert _enc(t.BOOLEAN, True) == b"\x01"
    assert t.BOOLEAN.read(b"\x02", 0) == (True, 1)
    assert _enc(t.FLOAT64, 1.5) == b"\x3f\xf8" + b"\x00" * 6
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert _enc(t.UUID, u) == u.bytes
    _roundtrip(t.UUID, u)


@settings(max_examples=50)
@given(st.floats(allow_nan=False))
def test_float64(x: float) -> None:
    _roundtrip(t.FLOAT64, x)


@pytest.mark.parametrize(
    ("typ", "value", "wire"),
    [
        (t.STRING, "ab", b"\x00\x02ab"),
        (t.NULLABLE_STRING, None, b"\xff\xff"),
        (t.COMPACT_STRING, "ab", b"\x03ab"),
        (t.COMPACT_NULLABLE_STRING, None, b"\x00"),
        (t.COMPACT_STRING, "", b"\x01"),
        (t.BYTES, b"ab", b"\x00\x00\x00\x02ab"),
        (t.NULLABLE_BYTES, None, b"\xff\xff\xff\xff"),
        (t.COMPACT_BYTES, b"ab", b"\x03ab"),
        (t.COMPACT_NULLABLE_BYTES, None, b"\x00"),
        (t.RECORDS, None, b"\xff\xff\xff\xff"),
        (t.COMPACT_RECORDS, b"r", b"\x02r"),
        (t.Array(t.INT16), [1, 2], b"\x00\x00\x00\x02\x00\x01\x00\x02"),
        (t.Array(t.INT16, compact=True), [1], b"\x02\x00\x01"),
        (t.Array(t.INT16, nullable=True), None, b"\xff\xff\xff\xff"),
        (t.Array(t.INT16, compact=True, nullable=True), None, b"\x00"),
        (t.UNSIGNED_VARINT, 300, b"\xac\x02"),
        (t.VARINT, -1, b"\x01"),
        (t.VARLONG, 1, b"\x02"),
        (t.TAGGED_FIELDS, {1: b"x", 0: b""}, b"\x02\x00\x00\x01\x01x"),
        (t.TAGGED_FIELDS, {}, b"\x00"),
    ],
)
def test_variable_wire_forms(typ: t.WireType, value, wire: bytes) -> None:
    assert _enc(typ, value) == wire
    got, pos = typ.read(wire, 0)
    assert got == value
    assert pos == len(wire)


@settings(max_examples=60)
@given(s=st.text(max_size=300), compact=st.booleans())
def test_strings(s: str, compact: bool) -> None:
    _roundtrip(t.String(compact=compact), s)
    _roundtrip(t.String(compact=compact, nullable=True), s)


@settings(max_examples=60)
@given(b=st.binary(max_size=300), compact=st.booleans())
def test_bytes_and_records(b: bytes, compact: bool) -> None:
    _roundtrip(t.Bytes(compact=compact), b)
    _roundtrip(t.Records(compact=compact), b)
    got, _ = t.Records(compact=compact).read(_enc(t.Records(compact=compact), b), 0)
    assert isinstance(got, memoryview)


@settings(max_examples=60)
@given(v=st.integers(0, (1 << 32) - 1))
def test_unsigned_varint_matches_codec(v: int) -> None:
    _roundtrip(t.UNSIGNED_VARINT, v)
    assert t.read_uvarint(_enc(t.UNSIGNED_VARINT, v), 0) == (v, len(_enc(t.UNSIGNED_VARINT, v)))


@settings(max_examples=40)
@given(items=st.lists(st.text(max_size=5), max_size=10), compact=st.booleans())
def test_arrays(items: list[str], compact: bool) -> None:
    _roundtrip(t.Array(t.String(compact=compact), compact=compact), items)


def test_null_into_non_nullable_is_our_error() -> None:
    for typ in (t.STRING, t.BYTES, t.Array(t.INT8)):
        with pytest.raises(ValueError):
            _enc(typ, None)
    with pytest.raises(ValueError):
        _enc(t.STRING, "x" * 40000)


@pytest.mark.parametrize(
    ("typ", "wire"),
    [
        (t.INT32, b"\x00\x00"),
        (t.UUID, b"\x00" * 15),
        (t.STRING, b"\x00\x05ab"),
        (t.STRING, b"\xff\xff"),  # null in a non-nullable string
        (t.NULLABLE_STRING, b"\xff\xfe"),  # -2
        (t.COMPACT_STRING, b"\x00"),
        (t.COMPACT_STRING, b"\x80"),  # truncated varint
        (t.COMPACT_STRING, b"\xff\xff\xff\xff\xff\x01"),  # varint wider than 32 bits
        (t.BYTES, b"\x00\x00\x00\x09a"),
        (t.RECORDS, b"\x00\x00"),
        (t.Array(t.INT32), b"\x7f\xff\xff\xff"),
        (t.Array(t.INT32), b"\xff\xff\xff\xff"),
        (t.TAGGED_FIELDS, b"\x01\x00\x05ab"),
        (t.TAGGED_FIELDS, b"\x7f"),
        (t.VARLONG, b"\xff" * 11),
        (t.UNSIGNED_VARINT, b""),
    ],
)
def test_malformed_input_raises_protocol_error(typ: t.WireType, wire: bytes) -> None:
    with pytest.raises(ProtocolError):
        typ.read(wire, 0)


def test_strings_decode_invalid_utf8_with_replacement() -> None:
    assert t.STRING.read(b"\x00\x02a\xff", 0) == ("a\ufffd", 4)


def test_write_tagged_fields_rejects_duplicates() -> None:
    with pytest.raises(ValueError):
        t.write_tagged_fields([].append, [(1, b"")], {1: b"x"})
