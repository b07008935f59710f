"""zstd frames without a declared content size decompress in one pass (issue 16).

Java's producer writes zstd through zstd-jni's streaming ZstdOutputStream, whose frames
declare no content size. kproto's bounded decompression (kproto.compression) used to
guess four times the input for them and, for payloads that compress better than 4:1
(JSON, logs), fail on a full buffer and start over, two or three times. The block
headers (RFC 8878 3.1.1.2) bound the output instead: a raw or RLE block regenerates its
Block_Size, a compressed one at most Block_Maximum_Size = min(Window_Size, 128 KiB).
"""

from __future__ import annotations

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto import compression
from kproto.errors import CorruptRecordError
from tests.codec.test_compression import _streamed_zstd

pytestmark = [pytest.mark.codec, pytest.mark.usefixtures("zstd_decompressor")]

MAX_BLOCK = 128 * 1024


def _skippable(content: bytes, nibble: int = 0) -> bytes:
    return (0x184D2A50 + nibble).to_bytes(4, "little") + len(content).to_bytes(4, "little") + content


def _log_lines(n: int) -> bytes:
    return b"".join(
        b'{"ts":"2026-11-25T15:%02d:%02d","level":"INFO","msg":"order %d accepted"}\n' % (i % 60, i % 60, i)
        for i in range(n)
    )


@pytest.fixture
def into_calls(monkeypatch):
    """Counts the real cramjam.zstd.decompress_into calls (it still does the work)."""
    calls = []
    real = cramjam.zstd.decompress_into

    def counting(data, out):
        calls.append(len(out))
        return real(data, out)

    monkeypatch.setattr(cramjam.zstd, "decompress_into", counting)
    return calls


@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_streamed_frame_compressed_past_4_to_1_decompresses_once(into_calls, size, zstd_decompressor):
    """issue 16: a Java-style frame (no content size) of log lines, ~40:1, used to take
    two or three decompress_into attempts; one now, into a buffer within a block of it.
    zstandard decompresses it in one call, without cramjam."""
    data = _log_lines(size // 60)[:size]
    frame = _streamed_zstd(data)
    assert compression._zstd_content_size(memoryview(frame)) is None
    assert len(data) > 4 * len(frame)
    assert compression.decompress(compression.ZSTD, frame) == data
    if zstd_decompressor == "zstandard":
        assert into_calls == []
        return
    assert len(into_calls) == 1
    assert len(data) <= into_calls[0] <= len(data) + MAX_BLOCK


def test_bound_of_frames_without_content_size_covers_them():
    data = _log_lines(3000)
    frame = _streamed_zstd(data)
    bound = compression._zstd_size_bound(memoryview(frame))
    assert len(data) <= bound <= len(data) + MAX_BLOCK


pieces = st.one_of(
    st.binary(max_size=3000),  # raw blocks where random bytes do not compress
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=3), st.integers(1, 300_000)),  # RLE, long runs
    st.integers(1, 5000).map(_log_lines),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(pieces, st.sampled_from(["one-shot", "streamed", "skippable"])), min_size=1, max_size=4))
def test_bound_covers_any_sequence_of_frames(frames):
    """The bound is never below what the frames decompress to (a lower one would only cost
    a retry, but must not be mistaken for the truth), and exceeds it by less than one
    block per frame. The payload decompresses to the frames' contents, skippables skipped."""
    blob, expected = b"", b""
    for i, (data, kind) in enumerate(frames):
        if kind == "skippable":
            blob += _skippable(data[:100], i)
            continue
        blob += bytes(cramjam.zstd.compress(data)) if kind == "one-shot" else _streamed_zstd(data)
        expected += data
    bound = compression._zstd_size_bound(memoryview(blob))
    assert len(expected) <= bound <= len(expected) + MAX_BLOCK * len(frames)
    assert compression.decompress(compression.ZSTD, blob) == expected


@given(st.binary(max_size=64))
def test_bound_of_garbage_is_none_or_a_number_never_an_error(blob):
    bound = compression._zstd_size_bound(memoryview(blob))
    assert bound is None or bound >= 0


@pytest.mark.parametrize("cut", [1, 3, 100, 2000])
def test_truncated_streamed_frame_has_no_bound_and_stays_corrupt(cut):
    """A frame cut inside its blocks has no bound (its headers do not parse), and the
    decoder reports it as before: CorruptRecordError."""
    frame = _streamed_zstd(_log_lines(3000))
    assert compression._zstd_size_bound(memoryview(frame[:-cut])) is None
    with pytest.raises(CorruptRecordError, match="zstd data does not decompress"):
        compression.decompress(compression.ZSTD, frame[:-cut])


def test_bound_beyond_max_size_falls_back_to_the_growing_buffer(into_calls):
    """A bound past max_size proves nothing (it may overestimate): the buffer starts at
    four times the input, as for unparsable headers, and max_size still holds."""
    data = _log_lines(3000)
    frame = _streamed_zstd(data)
    assert compression._zstd_size_bound(memoryview(frame)) > len(data)  # its last block is not full
    assert compression.decompress(compression.ZSTD, frame, max_size=len(data)) == data
    assert into_calls[0] == 4 * len(frame)
    with pytest.raises(CorruptRecordError, match="max_size"):
        compression.decompress(compression.ZSTD, frame, max_size=len(data) - 1)


def _raw_block_frame(data: bytes) -> bytes:
    """One frame (no content size, 1 KiB window) of one-byte raw blocks, as no encoder
    writes but any decoder reads: a header walk's worst case per input byte."""
    blocks = b"".join(
        ((1 << 3) | (i == len(data) - 1)).to_bytes(3, "little") + data[i : i + 1] for i in range(len(data))
    )
    return compression._ZSTD_MAGIC + b"\x00\x00" + blocks


def test_header_walk_gives_up_after_its_block_limit_and_still_decodes():
    """Hostile input of tiny blocks costs a bounded walk, then the growing buffer."""
    small = bytes(range(256)) * 4
    assert compression._zstd_size_bound(memoryview(_raw_block_frame(small))) == len(small)
    data = bytes(range(256)) * 20  # 5120 blocks, past the walk's limit of 4096
    frame = _raw_block_frame(data)
    assert compression._zstd_size_bound(memoryview(frame)) is None
    assert compression.decompress(compression.ZSTD, frame) == data


def test_skippable_frame_claiming_more_than_is_left_has_no_bound():
    frame = bytes(cramjam.zstd.compress(b"abc"))
    truncated = _skippable(b"0123456789")[:-4]
    assert compression._zstd_size_bound(memoryview(frame + _skippable(b"xyz"))) == 3
    assert compression._zstd_size_bound(memoryview(frame + truncated)) is None
