"""zstd batches shaped as every producer writes them decode alike on both codec backends.

issue 16, item "decode with zstd": the zstd decode path (kproto.compression's bounded
``decompress_into`` with the frame's declared content size as the first guess, records
decoded straight from that buffer) must read whatever a peer puts in a batch, and both
backends must agree record for record and error for error. Producers differ: kproto and
librdkafka write one frame that declares its content size; Java's producer streams
through zstd-jni's ZstdOutputStream, whose frames declare none; a payload may hold
several frames in a row (RFC 8878 3.1: a zstd stream is a sequence of frames), empty
ones included. A corrupt or truncated payload is a CorruptRecordError carrying the
batch's first and last offsets, the same on both backends.
"""

from __future__ import annotations

import struct

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import _codec_py as py
from kproto import compression
from kproto.errors import CorruptRecordError
from tests.codec.test_compression import _streamed_zstd
from tests.codec.test_differential import decoded, rec_tuple
from tests.codec.test_fuzz import V2_HEADER, seal_v2
from tests.support.codec_strategies import byte_values, headers

pytestmark = [pytest.mark.codec, pytest.mark.usefixtures("zstd_decompressor")]

cy = pytest.importorskip("kproto._codec", reason="the Cython extension is not built")

BACKENDS = (py, cy)
BASE_OFFSET = 5000


def _plain_batch(records) -> bytes:
    builder = py.BatchBuilder(2, 0, base_offset=BASE_OFFSET)
    for ts, key, value, hdrs in records:
        builder.append(ts, key, value, hdrs)
    return bytes(builder.build())


def _zstd_batch(plain: bytes, frames: bytes) -> bytes:
    """``plain``'s header with the zstd codec bits, over ``frames``, length and CRC resealed."""
    header = bytearray(plain[:V2_HEADER])
    (attributes,) = struct.unpack_from(">h", header, 21)
    struct.pack_into(">h", header, 21, (attributes & ~0x07) | compression.ZSTD)
    return seal_v2(bytes(header), frames)


def _frame(data: bytes, declared: bool) -> bytes:
    """One frame: one-shot (declares its content size, as kproto and librdkafka) or
    streamed (no content size, as Java's ZstdOutputStream; an empty stream declares 0)."""
    frame = bytes(cramjam.zstd.compress(data)) if declared else _streamed_zstd(data)
    if data:
        assert (compression._zstd_content_size(memoryview(frame)) is not None) is declared
    return frame


record_lists = st.lists(
    st.tuples(st.integers(0, 1 << 44), byte_values, byte_values, headers), min_size=1, max_size=40
)


@st.composite
def zstd_batches(draw):
    """(plain batch, the same records as a zstd batch of 1-4 frames cut anywhere)."""
    records = draw(record_lists)
    plain = _plain_batch(records)
    payload = plain[V2_HEADER:]
    cuts = sorted(draw(st.lists(st.integers(0, len(payload)), max_size=3)))
    pieces = [payload[a:b] for a, b in zip([0, *cuts], [*cuts, len(payload)])]
    frames = b"".join(_frame(piece, draw(st.booleans())) for piece in pieces)
    return plain, _zstd_batch(plain, frames)


def _records(outcome):
    """The records of ``decoded``'s result, as tuples, from decode_record_set."""
    assert outcome[0] == "ok", outcome
    return outcome[1][1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zstd_batches())
def test_zstd_batches_of_any_frame_shape_decode_to_the_plain_records(case):
    """issue 16: one or several frames, with or without a declared content size: both
    backends decode the records of the uncompressed batch, by every reader alike."""
    plain, batch = case
    expected = _records(decoded(py, plain))
    got = decoded(py, batch)
    assert _records(got) == expected
    assert decoded(cy, batch) == got


@pytest.mark.parametrize("declared", [True, False], ids=["content-size", "streamed"])
def test_large_zstd_batch_decodes_alike(declared):
    """issue 16: a 1000-record batch (bench/codec.py's shape, 120 KB of records) as one
    frame with or without its content size: the streamed one takes the guessed-size path."""
    records = [(1_700_000_000_000 + i, b"k%09d" % i, b'{"id":%d,"v":"%s"}' % (i, b"x" * 80), [])
               for i in range(1000)]
    plain = _plain_batch(records)
    batch = _zstd_batch(plain, _frame(plain[V2_HEADER:], declared))
    expected = _records(decoded(py, plain))
    for backend in BACKENDS:
        assert _records(decoded(backend, batch)) == expected
    assert decoded(py, batch) == decoded(cy, batch)


def _corrupt_outcome(backend, batch):
    with pytest.raises(CorruptRecordError) as info:
        [rec_tuple(r) for b in backend.read_batches(batch) for r in b.records()]
    return str(info.value), info.value.first_offset, info.value.last_offset


@settings(max_examples=150, deadline=None)
@given(zstd_batches(), st.data())
def test_corrupt_zstd_batches_fail_alike(case, data):
    """issue 16: a zstd payload cut short or with bytes overwritten (CRC resealed, so the
    bytes reach the decompressor) decodes alike on both backends, or fails alike: the
    same exception type and offsets from every reader, never a cramjam error."""
    plain, batch = case
    frames = bytearray(batch[V2_HEADER:])
    if data.draw(st.booleans()):
        del frames[data.draw(st.integers(0, len(frames) - 1)):]
    else:
        for _ in range(data.draw(st.integers(1, 4))):
            frames[data.draw(st.integers(0, len(frames) - 1))] = data.draw(st.integers(0, 255))
    bad = _zstd_batch(plain, bytes(frames))
    result = decoded(py, bad)
    assert decoded(cy, bad) == result
    if result[0] == "raise":
        assert result[1] in ("CorruptRecordError", "InvalidRecordError"), result


@pytest.mark.parametrize("cut", [1, 10, 100])
def test_truncated_zstd_batch_is_corrupt_with_the_batch_offsets(cut):
    """issue 16: the error a truncated zstd payload gives today, on both backends: a
    CorruptRecordError saying it cannot decompress the batch, with its offsets."""
    records = [(1, b"k%d" % i, b"v" * 200, []) for i in range(20)]
    plain = _plain_batch(records)
    frames = _frame(plain[V2_HEADER:], True)
    bad = _zstd_batch(plain, frames[:-cut])
    outcomes = {_corrupt_outcome(backend, bad) for backend in BACKENDS}
    assert len(outcomes) == 1
    ((message, first, last),) = outcomes
    assert "cannot decompress batch:" in message and "zstd data does not decompress" in message
    assert (first, last) == (BASE_OFFSET, BASE_OFFSET + len(records) - 1)
