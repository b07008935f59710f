"""Fuzz: decoding damaged frames raises ProtocolError or decodes cleanly, and nothing else.

Damaged means truncated, bit-flipped, byte-overwritten or random, starting from valid
frames of every API version in both directions. Bounded: a fixed seed and a fixed number
of mutations per frame, so the run is quick and repeatable; hypothesis adds random frames.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.errors import ProtocolError
from kproto.protocol import decode_request, decode_response, encode_request, encode_response
from kproto.protocol import messages as m
from tests.support.table_strategies import populated

MUTATIONS_PER_FRAME = 12


def _mutations(frame: bytes, rng: random.Random) -> list[bytes]:
    out = [frame[: rng.randrange(len(frame))] for _ in range(MUTATIONS_PER_FRAME // 3)]
    for _ in range(MUTATIONS_PER_FRAME // 3):
        b = bytearray(frame)
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
        out.append(bytes(b))
    for _ in range(MUTATIONS_PER_FRAME // 3):
        b = bytearray(frame)
        i = rng.randrange(len(b))
        b[i] = rng.choice((0x00, 0x7F, 0x80, 0xFF))
        out.append(bytes(b))
    return out


def _only_protocol_errors(decode, data: bytes) -> None:
    try:
        decode(data)
    except ProtocolError:
        pass


@pytest.mark.parametrize("api", m.TABLE, ids=lambda a: a.name)
def test_damaged_frames_raise_only_protocol_error(api) -> None:
    rng = random.Random(api.key)
    for version in api.versions:
        req = encode_request(api.key, version, 1, "c", populated(m.REQUESTS[api.key], version))[4:]
        for bad in _mutations(req, rng):
            _only_protocol_errors(decode_request, bad)
        resp = encode_response(api.key, version, 1, populated(m.RESPONSES[api.key], version))[4:]
        for bad in _mutations(resp, rng):
            _only_protocol_errors(lambda d, v=version: decode_response(api.key, v, d), bad)


_KNOWN = [(a.key, v) for a in m.TABLE for v in a.versions]


@settings(max_examples=300, deadline=None)
@given(key_version=st.sampled_from(_KNOWN), body=st.binary(max_size=64))
def test_random_bodies_raise_only_protocol_error(key_version: tuple[int, int], body: bytes) -> None:
    key, version = key_version
    head = key.to_bytes(2, "big") + version.to_bytes(2, "big") + b"\x00\x00\x00\x01"
    _only_protocol_errors(decode_request, head + body)
    _only_protocol_errors(lambda d: decode_response(key, version, d), b"\x00\x00\x00\x01" + body)


def test_huge_counts_fail_fast() -> None:
    """A count of two billion elements must be refused before anything is allocated."""
    head = b"\x00\x03\x00\x01\x00\x00\x00\x01\xff\xff"  # Metadata v1, no client id
    with pytest.raises(ProtocolError):
        decode_request(head + b"\x7f\xff\xff\xff")
    flexible = b"\x00\x03\x00\x09\x00\x00\x00\x01\xff\xff\x00"  # Metadata v9, header v2
    with pytest.raises(ProtocolError):
        decode_request(flexible + b"\xff\xff\xff\xff\x0f")


@pytest.mark.parametrize("entry", m.DATA, ids=lambda d: d.name)
def test_damaged_data_messages_raise_only_protocol_error(entry) -> None:
    """Issue 12: the broker reads peers' subscriptions and replays record keys and values
    with the data messages' decoders, newer versions included."""
    cls = m.data_class(entry.name)
    rng = random.Random(entry.name)
    for version in entry.versions:
        for bad in _mutations(populated(cls, version).encode_versioned(version), rng):
            _only_protocol_errors(cls.decode_versioned, bad)
            _only_protocol_errors(lambda d: cls.decode_versioned(d, newer_as_newest=True), bad)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from([d.name for d in m.DATA]), data=st.binary(max_size=48))
def test_random_data_messages_raise_only_protocol_error(name: str, data: bytes) -> None:
    _only_protocol_errors(lambda d: m.data_class(name).decode_versioned(d, newer_as_newest=True), data)
