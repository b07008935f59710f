"""Tests for kproto.compression: round trips, Kafka's framings, peer interop, bomb guard, garbage."""

from __future__ import annotations

import gzip
import os
import time

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import compression
from kproto.compression import (
    DEFAULT_MAX_DECOMPRESSED,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    codec_id,
    codec_name,
    compress,
    decompress,
)
from kproto.errors import CorruptRecordError, UnsupportedCompressionTypeError

pytestmark = pytest.mark.codec

CODECS = (NONE, GZIP, SNAPPY, LZ4, ZSTD)
COMPRESSED = (GZIP, SNAPPY, LZ4, ZSTD)
XERIAL_MAGIC = b"\x82SNAPPY\x00"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _magics(codec: int) -> tuple[int, ...]:
    return (2,) if codec == ZSTD else (0, 1, 2)


def _text(n: int) -> bytes:
    """Compressible, Kafka-ish payload of exactly n bytes."""
    row = b'{"user_id": 12345, "event": "page_view", "path": "/checkout/cart"},'
    return (row * (n // len(row) + 1))[:n]


SAMPLES = {
    "empty": b"",
    "one": b"x",
    "text_1k": _text(1000),
    "text_100k": _text(100_000),  # several 32 KiB snappy blocks, two 64 KiB lz4 blocks
    "random_70k": os.urandom(70_000),  # incompressible: lz4 stores blocks as is
    "zeros_200k": bytes(200_000),
}


# ---------------------------------------------------------------------------
# Codec ids and names
# ---------------------------------------------------------------------------


def test_codec_ids_are_kafkas_attribute_bits():
    assert (NONE, GZIP, SNAPPY, LZ4, ZSTD) == (0, 1, 2, 3, 4)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("none", 0),
        ("uncompressed", 0),
        ("gzip", 1),
        ("snappy", 2),
        ("lz4", 3),
        ("zstd", 4),
        ("GZIP", 1),
        ("Zstd", 4),
        ("UNCOMPRESSED", 0),
        (0, 0),
        (4, 4),
    ],
)
def test_codec_id_accepts_kafka_names_and_ids(name, expected):
    assert codec_id(name) == expected


@pytest.mark.parametrize("bad", ["producer", "lzma", "", " gzip", 5, -1, 7, True, None, 2.0])
def test_codec_id_rejects_others_naming_the_valid_ones(bad):
    with pytest.raises(ValueError) as info:
        codec_id(bad)
    message = str(info.value)
    for name in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert name in message


def test_codec_name():
    assert [codec_name(c) for c in CODECS] == ["none", "gzip", "snappy", "lz4", "zstd"]
    with pytest.raises(UnsupportedCompressionTypeError):
        codec_name(5)


# ---------------------------------------------------------------------------
# Unsupported codecs and zstd before message format v2
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [5, 6, 7, 8, -1, 255])
def test_unknown_codec_ids_are_unsupported_both_ways(codec):
    with pytest.raises(UnsupportedCompressionTypeError):
        compress(codec, b"abc")
    with pytest.raises(UnsupportedCompressionTypeError):
        decompress(codec, b"abc")


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic_2_both_ways(magic):
    with pytest.raises(UnsupportedCompressionTypeError):
        compress(ZSTD, b"abc", magic=magic)
    blob = compress(ZSTD, b"abc")
    with pytest.raises(UnsupportedCompressionTypeError):
        decompress(ZSTD, blob, magic=magic)


def test_unsupported_compression_is_kafka_code_76():
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        decompress(6, b"")
    assert info.value.code == 76


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_round_trip_samples(codec, sample):
    data = SAMPLES[sample]
    for magic in _magics(codec):
        blob = compress(codec, data, magic=magic)
        assert type(blob) is bytes
        out = decompress(codec, blob, magic=magic)
        assert type(out) is bytes
        assert out == data


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    codec=st.sampled_from(CODECS),
    data=st.one_of(
        st.binary(max_size=2000), st.binary(min_size=1, max_size=40).map(lambda b: b * 2000)
    ),
    magic=st.sampled_from([0, 1, 2]),
)
def test_round_trip_random(codec, data, magic):
    if codec == ZSTD:
        magic = 2
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize(
    "codec, levels",
    [(GZIP, [None, -1, 1, 6, 9]), (LZ4, [None, 1, 9, 17]), (ZSTD, [None, -5, 1, 3, 19, 22])],
)
def test_levels_round_trip(codec, levels):
    data = SAMPLES["text_100k"]
    for level in levels:
        for magic in _magics(codec):
            assert decompress(codec, compress(codec, data, level, magic=magic), magic=magic) == data


@pytest.mark.parametrize("codec, bad", [(GZIP, 0), (GZIP, 10), (LZ4, 0), (LZ4, 18), (ZSTD, 23)])
def test_levels_out_of_kafkas_range_are_rejected(codec, bad):
    with pytest.raises(ValueError):
        compress(codec, b"abc", bad)


def test_gzip_default_level_is_javas():
    data = SAMPLES["text_100k"]
    assert compress(GZIP, data) == compress(GZIP, data, 6) == compress(GZIP, data, -1)


@pytest.mark.parametrize("codec", CODECS)
def test_any_bytes_like_input(codec):
    data = SAMPLES["text_100k"]
    padded = b"\xff" * 7 + data + b"\xee" * 5
    view = memoryview(padded)[7:-5]  # a slice with an offset, as the record codec passes
    for form in (bytearray(data), view):
        blob = compress(codec, form)
        assert decompress(codec, memoryview(blob)) == data
        assert decompress(codec, bytearray(blob)) == data
        assert decompress(codec, memoryview(b"\x00" + blob)[1:]) == data


# ---------------------------------------------------------------------------
# gzip
# ---------------------------------------------------------------------------


def test_gzip_is_plain_gzip_both_ways():
    data = SAMPLES["text_100k"]
    assert gzip.decompress(compress(GZIP, data)) == data
    assert decompress(GZIP, gzip.compress(data, 9)) == data


def test_gzip_reads_concatenated_members():
    parts = [b"first member,", b"", SAMPLES["text_100k"], b"last"]
    blob = b"".join(gzip.compress(p) for p in parts)
    assert decompress(GZIP, blob) == b"".join(parts)


# ---------------------------------------------------------------------------
# snappy: xerial on write, xerial or raw on read
# ---------------------------------------------------------------------------


def _xerial_blocks(blob: bytes) -> list[bytes]:
    pos, blocks = 16, []
    while pos < len(blob):
        length = int.from_bytes(blob[pos : pos + 4], "big")
        blocks.append(blob[pos + 4 : pos + 4 + length])
        pos += 4 + length
    assert pos == len(blob)
    return blocks


def test_snappy_writes_javas_xerial_framing():
    data = SAMPLES["text_100k"]
    blob = compress(SNAPPY, data)
    assert blob[:16] == XERIAL_MAGIC + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01"
    blocks = _xerial_blocks(blob)
    assert len(blocks) == 4  # 100_000 bytes in 32 KiB blocks
    raw = [bytes(cramjam.snappy.decompress_raw(b)) for b in blocks]
    assert [len(r) for r in raw] == [32768, 32768, 32768, 100_000 - 3 * 32768]
    assert b"".join(raw) == data


def test_snappy_empty_is_header_only():
    assert compress(SNAPPY, b"") == XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"
    assert decompress(SNAPPY, compress(SNAPPY, b"")) == b""


def test_snappy_reads_raw_snappy_as_librdkafka_writes():
    data = SAMPLES["text_100k"]
    assert decompress(SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    assert decompress(SNAPPY, bytes(cramjam.snappy.compress_raw(b""))) == b""


def test_snappy_detects_xerial_by_magic_only():
    """Redpanda writes version/compat little-endian (kafka-python #2414): still xerial."""
    data = SAMPLES["text_1k"]
    blob = compress(SNAPPY, data)
    redpanda = XERIAL_MAGIC + b"\x01\x00\x00\x00\x01\x00\x00\x00" + blob[16:]
    assert decompress(SNAPPY, redpanda) == data


def test_snappy_reads_concatenated_xerial_streams():
    a, b = SAMPLES["text_100k"], SAMPLES["random_70k"]
    assert decompress(SNAPPY, compress(SNAPPY, a) + compress(SNAPPY, b)) == a + b


@pytest.mark.parametrize(
    "blob",
    [
        XERIAL_MAGIC + b"\x00\x00\x00\x01",  # header cut short
        XERIAL_MAGIC + bytes(8) + b"\x00\x00",  # block length cut short
        XERIAL_MAGIC + bytes(8) + b"\x00\x00\x00\x10abc",  # block longer than the stream
        XERIAL_MAGIC + bytes(8) + b"\xff\xff\xff\xf0abc",  # negative block length
        XERIAL_MAGIC + bytes(8) + b"\x00\x00\x00\x00",  # empty block
        XERIAL_MAGIC + bytes(8) + b"\x00\x00\x00\x03\x05ab",  # block shorter than it says
    ],
)
def test_snappy_bad_xerial_streams_are_corrupt(blob):
    with pytest.raises(CorruptRecordError):
        decompress(SNAPPY, blob)


# ---------------------------------------------------------------------------
# lz4: frame format, independent blocks, KIP-57's magic 0 header checksum
# ---------------------------------------------------------------------------


def _xxh32_oracle(data: bytes) -> int:
    """xxh32 computed by the lz4 C library: cramjam's default frame ends with it."""
    frame = bytes(cramjam.lz4.compress(data))
    assert frame[4] & 0x04  # content checksum flag
    return int.from_bytes(frame[-4:], "little")


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"", 0x02CC5D05),
        (b"a", 0x550D7456),
        (b"abc", 0x32D153FF),
        (b"Nobody inspects the spammish repetition", 0xE2293B2F),
    ],
)
def test_xxh32_known_vectors(data, expected):
    assert compression._xxh32(data) == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100))
def test_xxh32_matches_lz4s(data):
    assert compression._xxh32(data) == _xxh32_oracle(data)


def test_lz4_writes_javas_frame():
    data = SAMPLES["text_100k"]
    blob = compress(LZ4, data)
    # magic, FLG 0x60 (v1, independent blocks, no checksums, no size), BD 0x40 (64 KiB)
    assert blob[:6] == LZ4_MAGIC + b"\x60\x40"
    assert blob[6] == (_xxh32_oracle(b"\x60\x40") >> 8) & 0xFF == 0x82
    assert blob[-4:] == b"\x00\x00\x00\x00"  # EndMark, no content checksum
    # each block decodes on its own (independent blocks), none holds more than 64 KiB
    pos, out = 7, []
    while True:
        size = int.from_bytes(blob[pos : pos + 4], "little")
        pos += 4
        if size == 0:
            break
        block = blob[pos : pos + (size & 0x7FFFFFFF)]
        pos += size & 0x7FFFFFFF
        if size & 0x80000000:
            out.append(block)
        else:
            buffer = bytearray(65536)
            out.append(bytes(buffer[: cramjam.lz4.decompress_block_into(block, buffer)]))
    assert pos == len(blob)
    assert [len(o) for o in out] == [65536, 100_000 - 65536]
    assert b"".join(out) == data
    assert bytes(cramjam.lz4.decompress(blob)) == data


def test_lz4_stores_incompressible_blocks():
    data = SAMPLES["random_70k"]
    blob = compress(LZ4, data)
    first = int.from_bytes(blob[7:11], "little")
    assert first == 0x80000000 | 65536
    assert blob[11 : 11 + 65536] == data[:65536]
    assert decompress(LZ4, blob) == data


def test_lz4_magic_0_writes_kafka_08_broken_header_checksum():
    data = SAMPLES["text_1k"]
    for level in (None, 9):
        old = compress(LZ4, data, level, magic=0)
        new = compress(LZ4, data, level, magic=1)
        assert old[:6] == new[:6]
        hc_old = (_xxh32_oracle(old[:6]) >> 8) & 0xFF  # over magic + FLG + BD
        hc_new = (_xxh32_oracle(old[4:6]) >> 8) & 0xFF  # over FLG + BD only
        assert (old[6], new[6]) == (hc_old, hc_new)
        assert hc_old != hc_new
        assert old[7:] == new[7:]
        # a standard lz4 reader rejects the broken HC, and so do we for magic 1 and 2
        with pytest.raises(cramjam.DecompressionError):
            cramjam.lz4.decompress(old)
        for magic in (1, 2):
            with pytest.raises(CorruptRecordError):
                decompress(LZ4, old, magic=magic)
        # magic 0 readers repair it, and also accept a correct HC
        assert decompress(LZ4, old, magic=0) == data
        assert decompress(LZ4, new, magic=0) == data


def _with_content_size(frame: bytes, size: int) -> bytes:
    """Rewrite one of our frames to carry a content size (FLG bit 3), with a fresh HC."""
    descriptor = bytes((frame[4] | 0x08, frame[5])) + size.to_bytes(8, "little")
    hc = (_xxh32_oracle(descriptor) >> 8) & 0xFF
    return frame[:4] + descriptor + bytes((hc,)) + frame[7:]


def test_lz4_reads_frames_with_content_size_and_checksums():
    data = SAMPLES["text_100k"]
    with_size = _with_content_size(compress(LZ4, data), len(data))
    assert bytes(cramjam.lz4.decompress(with_size)) == data  # a valid frame for lz4 itself
    assert decompress(LZ4, with_size) == data
    broken = bytearray(with_size)
    broken[14] = (_xxh32_oracle(broken[:14]) >> 8) & 0xFF  # magic 0 style HC after a size
    assert decompress(LZ4, bytes(broken), magic=0) == data
    # cramjam's default frame: linked blocks, block and content checksums
    assert decompress(LZ4, bytes(cramjam.lz4.compress(data))) == data
    checked = cramjam.lz4.Compressor(content_checksum=True, block_linked=False)
    checked.compress(data)
    assert decompress(LZ4, bytes(checked.finish())) == data


def test_lz4_declared_content_size_over_max_size_is_refused_early():
    data = SAMPLES["text_1k"]
    with_size = _with_content_size(compress(LZ4, data), 10**12)
    with pytest.raises(CorruptRecordError, match="max_size"):
        decompress(LZ4, with_size)


# ---------------------------------------------------------------------------
# zstd: frames without content size, several frames
# ---------------------------------------------------------------------------


def _streamed_zstd(data: bytes, level: int = 3) -> bytes:
    compressor = cramjam.zstd.Compressor(level=level)
    compressor.compress(data)
    return bytes(compressor.finish())


def _has_content_size(frame: bytes) -> bool:
    fhd = frame[4]
    return bool(fhd >> 6 or fhd & 0x20)


def test_zstd_streamed_frame_has_no_content_size_and_decodes():
    data = SAMPLES["text_100k"]
    streamed = _streamed_zstd(data)
    assert streamed[:4] == ZSTD_MAGIC and not _has_content_size(streamed)
    assert compression._zstd_content_size(memoryview(streamed)) is None
    assert decompress(ZSTD, streamed) == data


def test_zstd_one_shot_frame_has_content_size():
    data = SAMPLES["text_100k"]
    blob = compress(ZSTD, data)
    assert _has_content_size(blob)
    assert compression._zstd_content_size(memoryview(blob)) == len(data)


def test_zstd_reads_several_frames():
    a, b, c = SAMPLES["text_100k"], SAMPLES["random_70k"], b"tail"
    blob = compress(ZSTD, a) + _streamed_zstd(b) + compress(ZSTD, b"") + compress(ZSTD, c)
    assert decompress(ZSTD, blob) == a + b + c


def test_cramjam_zstd_decompress_streams_but_unbounded():
    """What cramjam 2.14 does, verified: decompress reads frames without a content size
    and several frames, but grows its output without a cap, hence decompress_into."""
    data = SAMPLES["text_100k"]
    streamed = _streamed_zstd(data)
    assert bytes(cramjam.zstd.decompress(streamed)) == data
    assert bytes(cramjam.zstd.decompress(streamed + compress(ZSTD, data))) == data * 2


# ---------------------------------------------------------------------------
# max_size: the decompression-bomb guard
# ---------------------------------------------------------------------------


def test_default_max_size():
    assert DEFAULT_MAX_DECOMPRESSED == 256 * 1024 * 1024


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("sample", ["text_100k", "zeros_200k", "one"])
def test_max_size_is_inclusive(codec, sample):
    data = SAMPLES[sample]
    for magic in _magics(codec):
        blob = compress(codec, data, magic=magic)
        assert decompress(codec, blob, magic=magic, max_size=len(data)) == data
        with pytest.raises(CorruptRecordError, match="max_size"):
            decompress(codec, blob, magic=magic, max_size=len(data) - 1)


def test_max_size_with_undeclared_sizes():
    """No declared size: zstd streams, several gzip members, lz4 without content size."""
    data = SAMPLES["text_100k"]
    cases = [
        (ZSTD, _streamed_zstd(data) * 3),
        (GZIP, gzip.compress(data[:10]) + gzip.compress(data) * 2),
        (LZ4, compress(LZ4, data) * 3),
    ]
    for codec, blob in cases:
        total = len(decompress(codec, blob))
        assert decompress(codec, blob, max_size=total) == decompress(codec, blob)
        with pytest.raises(CorruptRecordError, match="max_size"):
            decompress(codec, blob, max_size=total - 1)


def _bomb(codec: int) -> bytes:
    """About 1 GiB of zeros in a few MB at most, without a declared size."""
    chunk = bytes(64 << 20)
    if codec == ZSTD:
        compressor = cramjam.zstd.Compressor(level=1)
    elif codec == LZ4:
        compressor = cramjam.lz4.Compressor(block_linked=False)
    else:
        compressor = cramjam.gzip.Compressor(level=1)
    for _ in range(16):
        compressor.compress(chunk)
    return bytes(compressor.finish())


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_bomb_is_refused_without_inflating_it(codec):
    bomb = _bomb(codec)
    assert len(bomb) < 8 << 20
    if codec == ZSTD:
        assert not _has_content_size(bomb)
    start = time.perf_counter()
    with pytest.raises(CorruptRecordError, match="max_size"):
        decompress(codec, bomb, max_size=1 << 20)
    # Inflating the whole GiB would take seconds; stopping at 1 MiB takes milliseconds.
    assert time.perf_counter() - start < 1.0


def test_snappy_declared_size_over_max_size_is_refused_before_decoding():
    raw = bytes(cramjam.snappy.compress_raw(bytes(100_000)))
    with pytest.raises(CorruptRecordError, match="max_size"):
        decompress(SNAPPY, raw, max_size=99_999)
    xerial = compress(SNAPPY, bytes(100_000))
    with pytest.raises(CorruptRecordError, match="max_size"):
        decompress(SNAPPY, xerial, max_size=99_999)


def test_cramjam_into_reports_a_full_buffer_as_we_expect():
    """The bounded path relies on this message to tell 'buffer full' from 'corrupt'."""
    for module in (cramjam.gzip, cramjam.lz4, cramjam.zstd):
        if module is cramjam.lz4:
            compressor = cramjam.lz4.Compressor(block_linked=False)
            compressor.compress(SAMPLES["text_1k"])
            blob = bytes(compressor.finish())
        else:
            blob = bytes(module.compress(SAMPLES["text_1k"]))
        with pytest.raises(cramjam.DecompressionError, match=compression._BUFFER_FULL):
            module.decompress_into(blob, bytearray(100))
        exact = bytearray(1000)
        assert module.decompress_into(blob, exact) == 1000  # an exact fit is no error
        assert bytes(exact) == SAMPLES["text_1k"]


# ---------------------------------------------------------------------------
# Garbage and truncation: CorruptRecordError, nothing else
# ---------------------------------------------------------------------------


def _decodes_or_corrupt(codec: int, blob, magic: int) -> None:
    try:
        out = decompress(codec, blob, magic=magic, max_size=1 << 20)
    except CorruptRecordError:
        return
    assert type(out) is bytes


_fuzz = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fuzz
@given(
    codec=st.sampled_from(COMPRESSED),
    blob=st.binary(max_size=300),
    magic=st.sampled_from([0, 1, 2]),
)
def test_garbage_raises_corrupt_record_error_only(codec, blob, magic):
    """Invariant: arbitrary bytes either decode to bytes or raise CorruptRecordError."""
    _decodes_or_corrupt(codec, blob, 2 if codec == ZSTD else magic)


@_fuzz
@given(
    codec=st.sampled_from(COMPRESSED),
    prefix=st.sampled_from([XERIAL_MAGIC, LZ4_MAGIC, ZSTD_MAGIC, b"\x1f\x8b\x08"]),
    tail=st.binary(max_size=200),
    magic=st.sampled_from([0, 1, 2]),
)
def test_garbage_behind_a_valid_magic_raises_corrupt_record_error_only(codec, prefix, tail, magic):
    """Invariant: a right magic number followed by junk decodes or raises CorruptRecordError."""
    _decodes_or_corrupt(codec, prefix + tail, 2 if codec == ZSTD else magic)


@_fuzz
@given(
    codec=st.sampled_from(COMPRESSED),
    sample=st.sampled_from(["text_1k", "text_100k", "random_70k"]),
    cut=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    magic=st.sampled_from([0, 1, 2]),
)
def test_truncated_payloads_raise_corrupt_record_error(codec, sample, cut, magic):
    """Invariant: a payload cut anywhere short of its end raises CorruptRecordError."""
    magic = 2 if codec == ZSTD else magic
    blob = compress(codec, SAMPLES[sample], magic=magic)
    cut_at = int(len(blob) * cut)
    if codec == SNAPPY and cut_at == 16:
        return  # the bare xerial header is a valid empty stream
    with pytest.raises(CorruptRecordError):
        decompress(codec, blob[:cut_at], magic=magic)


@_fuzz
@given(codec=st.sampled_from(COMPRESSED), data=st.data(), magic=st.sampled_from([0, 1, 2]))
def test_flipped_bytes_raise_corrupt_record_error_only(codec, data, magic):
    """Invariant: a valid payload with bytes overwritten decodes or raises CorruptRecordError."""
    magic = 2 if codec == ZSTD else magic
    blob = bytearray(compress(codec, SAMPLES["text_1k"], magic=magic))
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    _decodes_or_corrupt(codec, bytes(blob), magic)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_empty_input_is_corrupt(codec):
    with pytest.raises(CorruptRecordError):
        decompress(codec, b"")


def test_corrupt_record_error_from_decompress_has_no_offsets():
    with pytest.raises(CorruptRecordError) as info:
        decompress(GZIP, b"not gzip at all, certainly")
    assert (info.value.first_offset, info.value.last_offset) == (None, None)
    assert "CORRUPT_MESSAGE" in str(info.value)


# ---------------------------------------------------------------------------
# Interop with the peers' codecs (oracles)
# ---------------------------------------------------------------------------

try:
    import aiokafka.codec as aiokafka_codec
except ImportError:  # pragma: no cover - aiokafka is a test dependency
    aiokafka_codec = None
try:
    import kafka.codec as kafka_codec
except ImportError:  # pragma: no cover - kafka-python is a test dependency
    kafka_codec = None

INTEROP_DATA = [SAMPLES["empty"], SAMPLES["text_100k"], SAMPLES["random_70k"]]


def _need_kafka_python(has: str, module: str):
    if kafka_codec is None:
        pytest.skip("kafka-python is not installed")
    if not getattr(kafka_codec, has)():
        pytest.skip(
            f"kafka-python's {has[4:]} codec needs the optional package {module!r}, not installed"
        )


@pytest.mark.parametrize("data", INTEROP_DATA)
def test_aiokafka_reads_ours_and_we_read_aiokafkas(data):
    if aiokafka_codec is None:
        pytest.skip("aiokafka is not installed")
    ac = aiokafka_codec
    assert decompress(GZIP, ac.gzip_encode(data)) == data
    assert decompress(SNAPPY, ac.snappy_encode(data)) == data  # xerial
    assert decompress(SNAPPY, ac.snappy_encode(data, xerial_compatible=False)) == data  # raw
    assert decompress(LZ4, ac.lz4_encode(data)) == data  # LZ4HC level 9, block checksums
    assert decompress(ZSTD, ac.zstd_encode(data)) == data
    assert ac.gzip_decode(compress(GZIP, data)) == data
    if data:  # aiokafka's xerial detection wants more than the 16-byte header
        assert ac.snappy_decode(compress(SNAPPY, data)) == data
    assert ac.lz4_decode(compress(LZ4, data)) == data
    assert ac.lz4_decode(compress(LZ4, data, 9)) == data
    assert ac.zstd_decode(compress(ZSTD, data)) == data


@pytest.mark.parametrize("data", INTEROP_DATA)
def test_kafka_python_gzip(data):
    _need_kafka_python("has_gzip", "gzip")
    assert decompress(GZIP, kafka_codec.gzip_encode(data)) == data
    assert kafka_codec.gzip_decode(compress(GZIP, data)) == data


@pytest.mark.parametrize("data", INTEROP_DATA)
def test_kafka_python_snappy(data):
    _need_kafka_python("has_snappy", "python-snappy")
    assert decompress(SNAPPY, kafka_codec.snappy_encode(data)) == data
    assert decompress(SNAPPY, kafka_codec.snappy_encode(data, xerial_compatible=False)) == data
    if data:  # kafka-python's xerial detection, too, wants more than the 16-byte header
        assert kafka_codec.snappy_decode(compress(SNAPPY, data)) == data


@pytest.mark.parametrize("data", INTEROP_DATA)
def test_kafka_python_lz4(data):
    _need_kafka_python("has_lz4", "lz4")
    assert decompress(LZ4, kafka_codec.lz4_encode(data)) == data
    assert kafka_codec.lz4_decode(compress(LZ4, data)) == data


@pytest.mark.parametrize("data", INTEROP_DATA)
def test_kafka_python_lz4_old_kafka(data):
    _need_kafka_python("has_lz4", "lz4")
    if kafka_codec.xxhash is None:
        pytest.skip(
            "kafka-python's lz4_encode_old_kafka needs the optional package 'xxhash', not installed"
        )
    assert decompress(LZ4, kafka_codec.lz4_encode_old_kafka(data), magic=0) == data
    assert kafka_codec.lz4_decode_old_kafka(compress(LZ4, data, magic=0)) == data


@pytest.mark.parametrize("data", INTEROP_DATA)
def test_kafka_python_zstd(data):
    _need_kafka_python("has_zstd", "zstandard")
    assert decompress(ZSTD, kafka_codec.zstd_encode(data)) == data
    assert kafka_codec.zstd_decode(compress(ZSTD, data)) == data


@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD])
def test_decompress_view_gives_the_same_bytes_without_the_copy(codec):
    data = b"kafka record payload " * 5000
    packed = compression.compress(codec, data)
    assert bytes(compression.decompress_view(codec, packed)) == data == compression.decompress(codec, packed)
    # Small caps force the bounded path; large ones allow the one-shot decoder for lz4/gzip.
    assert bytes(compression.decompress_view(codec, packed, max_size=len(data))) == data
    with pytest.raises(CorruptRecordError):
        compression.decompress_view(codec, packed[: len(packed) // 2] + b"\x00" * 7)


@pytest.mark.parametrize("codec, level", [(GZIP, None), (GZIP, 5), (SNAPPY, None), (LZ4, None), (LZ4, 5),
                                          (ZSTD, None), (ZSTD, 5)])
def test_compress_takes_a_memoryview_at_every_level(codec, level):
    """issue 16, codec: the builder compresses a view of its buffer (no copy), so every
    codec at every level takes a memoryview (cramjam's lz4 Compressor takes bytes only)."""
    data = b"kafka records " * 500
    assert decompress(codec, compress(codec, memoryview(data), level)) == data
