"""Kafka's compression codecs (gzip, snappy, lz4, zstd) over cramjam (zstd decompression
over the zstandard package when it is installed).

The record codec calls :func:`compress` and :func:`decompress` once per batch with the
codec id from the batch attributes (bits 0-2). Both take any bytes-like object and
return ``bytes``. Peer garbage never escapes as a cramjam or struct error: every
decompression failure is :class:`~kproto.errors.CorruptRecordError` (the caller adds
the batch's offsets), and an unknown codec id, or zstd in a magic 0/1 message, is
:class:`~kproto.errors.UnsupportedCompressionTypeError`.

Facts (Kafka docs "Message Format", KIP-57, KIP-110, KIP-390, Java's
``org.apache.kafka.common.compress``):

- Codec ids: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7 are unused.
- gzip: one plain gzip member (RFC 1952), written by java.util.zip at Deflater's default
  level (6). Readers accept several concatenated members.
- snappy: Java writes snappy-java's "xerial" stream: the 8-byte magic
  ``\\x82SNAPPY\\x00``, version i32 = 1 and compat i32 = 1, then blocks of
  [i32 big-endian length + raw snappy block], each block holding at most 32 KiB of
  input. librdkafka writes one raw snappy block. Readers tell them apart by the 8-byte
  magic alone (Redpanda writes version/compat little-endian, kafka-python #2414).
  cramjam's ``snappy.compress`` is Google's *framing* format, which Kafka never uses.
- lz4: an LZ4 frame with independent blocks (KIP-57). Java writes FLG 0x60 (version 1,
  independent blocks, no checksums, no content size), BD 0x40 (64 KiB blocks), stores a
  block uncompressed when compression does not shrink it, and uses lz4's fast compressor
  at the default level, LZ4HC at an explicit level (``Lz4BlockOutputStream``). Kafka
  0.8/0.9 computed the header checksum HC over the magic number too; magic 0 messages
  keep that broken HC (KAFKA-3160), so we write it for magic 0 and repair it before
  decoding magic 0 data (Java skips the check for magic 0).
- zstd: only in magic 2 batches (Produce v7+, Fetch v10+), else
  UNSUPPORTED_COMPRESSION_TYPE. Streaming writers (zstd-jni's ZstdOutputStream, used by
  the Java producer) omit the frame content size, and a payload may hold several frames.
  Kafka's default level is 3.

Theory of operation (bounded decompression): ``max_size`` caps the output, so a small
compressed batch cannot make us allocate gigabytes. Snappy declares its output length
up front, so we check it before decoding. For gzip, lz4 and zstd we decompress with
cramjam's ``*_into`` functions into a ``bytearray`` of a guessed size: they stream into
that fixed buffer and stop with an error as soon as it is full (checked on a 1 GiB zstd
bomb: peak memory stays at the buffer size). On "full" we retry with a buffer four times
larger, up to ``max_size``. The guess is the size the format declares when it does (zstd
frame content size, lz4 content size, the gzip ISIZE trailer), for zstd frames without a
content size (Java's) an upper bound read from their block headers, otherwise four times
the input. So memory stays within ``max_size`` (plus the input and one final copy to
``bytes``), and a valid payload costs one decompression when its size is declared or
bounded, and otherwise up to three attempts (a failed one stops at its buffer's size, but
each starts over, with a new decoder).

zstd decompression has a faster path when the optional ``zstandard`` package is
installed (``pip install kproto[zstd]``; see :func:`zstd_decompressor`): one reused
decompression context per thread (a context is not thread-safe) instead of cramjam's new
decoder per call, about 15% faster on a 33 KB batch (issue 16). It is taken only where one
call is known to be right and bounded: a single frame that declares a non-zero content
size within ``max_size``, or a single frame without one whose block-header bound is
within ``max_size``. Every other payload, and any error, goes to the cramjam path above,
so both accept and reject the same payloads with the same errors. ``KPROTO_ZSTD=cramjam``
in the environment at import keeps cramjam.
"""

from __future__ import annotations

import operator
import os
import threading

import cramjam

from kproto.errors import CorruptRecordError, UnsupportedCompressionTypeError

__all__ = [
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "DEFAULT_MAX_DECOMPRESSED",
    "codec_id",
    "codec_name",
    "check_level",
    "compress",
    "decompress",
    "decompress_view",
    "zstd_decompressor",
]

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4

#: Default cap on one batch's decompressed size. librdkafka caps at 100 MB
#: (receive.message.max.bytes); Java has no cap. Generous enough for any sane batch.
DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024

_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
_IDS = {name: i for i, name in enumerate(_NAMES)}
_IDS["uncompressed"] = NONE  # Kafka's topic-level compression.type spells none this way

# Default levels and valid ranges, as Java (KIP-390): gzip -1 means Deflater's default (6).
_GZIP_DEFAULT_LEVEL = 6
_ZSTD_DEFAULT_LEVEL = 3
_LEVEL_RANGES = {GZIP: (1, 9), LZ4: (1, 17), ZSTD: (-131072, 22)}

_DecompressionError = cramjam.DecompressionError
# What cramjam's *_into functions say when the output buffer is full (Rust's
# io::ErrorKind::WriteZero); tests/codec/test_compression.py pins this behaviour.
_BUFFER_FULL = "failed to write whole buffer"
_MIN_GUESS = 64 * 1024


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def codec_id(name_or_id: str | int) -> int:
    """Return the codec id for a Kafka ``compression.type`` name or a codec id.

    Args:
        name_or_id: ``"none"``, ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"`` or
            ``"uncompressed"`` (any case), or an int from 0 to 4.

    Returns:
        The codec id, 0 to 4.

    Raises:
        ValueError: for anything else; the message lists the valid values.
    """
    if isinstance(name_or_id, str):
        found = _IDS.get(name_or_id.lower())
        if found is not None:
            return found
    elif not isinstance(name_or_id, bool):
        try:
            value = operator.index(name_or_id)  # ints, numpy ints; not floats
        except TypeError:
            pass
        else:
            if NONE <= value <= ZSTD:
                return value
    raise ValueError(
        f"unknown compression codec {name_or_id!r}: expected one of "
        f"{', '.join(_NAMES)}, uncompressed, or an id from 0 to 4"
    )


def codec_name(codec: int) -> str:
    """Return Kafka's ``compression.type`` name (``"none"``, ``"gzip"``...) of a codec id.

    Raises:
        UnsupportedCompressionTypeError: if ``codec`` is not 0 to 4.
    """
    if isinstance(codec, int) and NONE <= codec <= ZSTD:
        return _NAMES[codec]
    raise _unsupported(codec)


def compress(
    codec: int, data: bytes | bytearray | memoryview, level: int | None = None, *, magic: int = 2
) -> bytes:
    """Compress one batch payload as Kafka's Java client would.

    Args:
        codec: codec id, 0 to 4 (see :func:`codec_id`).
        data: the bytes to compress; any bytes-like object.
        level: codec level, or None for Kafka's default (gzip 6, lz4 fast, zstd 3).
            Valid ranges are Kafka's (KIP-390): gzip 1-9 (or -1 for the default), lz4
            1-17 (LZ4HC), zstd -131072 to 22. Ignored for none and snappy.
        magic: message format version, 0, 1 or 2. Magic 0 makes lz4 write the broken
            header checksum of Kafka 0.8/0.9; zstd needs magic 2.

    Returns:
        The compressed payload (``bytes(data)`` for codec 0).

    Raises:
        UnsupportedCompressionTypeError: codec not 0 to 4, or zstd with magic < 2.
        ValueError: level out of the codec's range.
    """
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        if level is None or level == -1:
            level = _GZIP_DEFAULT_LEVEL
        else:
            check_level(GZIP, level)
        return bytes(cramjam.gzip.compress(data, level=level))
    if codec == SNAPPY:
        return _snappy_compress(data)
    if codec == LZ4:
        if level is not None:
            check_level(LZ4, level)
        return _lz4_compress(data, level, magic)
    if codec == ZSTD:
        if magic < 2:
            raise _zstd_needs_v2(magic)
        if level is None:
            level = _ZSTD_DEFAULT_LEVEL
        else:
            check_level(ZSTD, level)
        return bytes(cramjam.zstd.compress(data, level=level))
    raise _unsupported(codec)


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED,
) -> bytes:
    """Decompress one batch payload written by any Kafka client.

    Accepts both snappy framings, lz4 frames with or without content size and
    checksums (and magic 0's broken header checksum), several gzip members, and zstd
    frames without a content size or several frames in a row.

    Args:
        codec: codec id from the batch attributes.
        data: the compressed bytes; any bytes-like object (a memoryview is not copied).
        magic: message format version of the batch or wrapper message.
        max_size: largest decompressed size accepted (decompression-bomb guard).

    Returns:
        The decompressed bytes.

    Raises:
        CorruptRecordError: the data does not decompress, is truncated, or would
            exceed ``max_size``. No offsets are set; the record codec adds them.
        UnsupportedCompressionTypeError: codec not 0 to 4, or zstd with magic < 2.
    """
    out = decompress_view(codec, data, magic=magic, max_size=max_size)
    return out if type(out) is bytes else bytes(out)


def decompress_view(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED,
) -> bytes | bytearray | memoryview:
    """:func:`decompress` without the final copy into ``bytes``: the record codec's path.

    Returns a read-only-by-convention bytes-like object (``bytes``, a ``bytearray`` or
    a cramjam buffer); same arguments, checks and errors as :func:`decompress`.
    """
    if codec == NONE:
        if len(data) > max_size:
            raise _too_large("none", max_size)
        return data
    if codec == GZIP:
        return _gzip_decompress(data, max_size)
    if codec == SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec == LZ4:
        return _lz4_decompress(data, magic, max_size)
    if codec == ZSTD:
        if magic < 2:
            raise _zstd_needs_v2(magic)
        return _zstd_decompress(data, max_size)
    raise _unsupported(codec)


# ---------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------


def _unsupported(codec: object) -> UnsupportedCompressionTypeError:
    return UnsupportedCompressionTypeError(
        f"compression codec id {codec!r} is not one of 0 (none), 1 (gzip), 2 (snappy), "
        "3 (lz4), 4 (zstd)"
    )


def _zstd_needs_v2(magic: int) -> UnsupportedCompressionTypeError:
    return UnsupportedCompressionTypeError(
        f"zstd needs message format v2 (KIP-110), not magic {magic}"
    )


def _too_large(what: str, max_size: int) -> CorruptRecordError:
    return CorruptRecordError(f"{what} data decompresses to more than max_size={max_size} bytes")


def check_level(codec: int, level: int) -> None:
    """Raise ValueError unless ``codec`` (gzip, lz4 or zstd) compresses at ``level``; gzip
    also takes -1, its default (Java's ``Deflater.DEFAULT_COMPRESSION``)."""
    if codec == GZIP and level == -1:
        return
    low, high = _LEVEL_RANGES[codec]
    if not (isinstance(level, int) and low <= level <= high):
        raise ValueError(
            f"{_NAMES[codec]} level must be from {low} to {high}"
            + (" or -1" if codec == GZIP else "")
            + f", not {level!r}"
        )


def _view(data) -> memoryview:
    """A flat unsigned-byte view of ``data`` (no copy), so len and slices count bytes."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def _one_shot(decompress_fn, view: memoryview, what: str):
    """Run cramjam's one-shot decompressor, only where the format bounds the output."""
    try:
        return decompress_fn(view)
    except _DecompressionError as exc:
        raise CorruptRecordError(f"{what} data does not decompress: {exc}") from None


def _decompress_into(into, data, guess: int, max_size: int, what: str) -> bytes:
    """Run a cramjam ``*_into`` decompressor with a growing, bounded output buffer.

    ``guess`` is the first buffer size; see the module docstring for why this bounds
    memory. A buffer that fills exactly is fine: cramjam only fails when output is left.
    """
    size = min(guess, max_size)
    while True:
        out = bytearray(size)
        try:
            written = into(data, out)
        except _DecompressionError as exc:
            if _BUFFER_FULL not in str(exc):
                raise CorruptRecordError(f"{what} data does not decompress: {exc}") from None
            if size >= max_size:
                raise _too_large(what, max_size) from None
            size = min(max(size * 4, _MIN_GUESS), max_size)
            continue
        del out[written:]  # shrinks in place: no copy
        return out


# ---------------------------------------------------------------------------
# gzip
# ---------------------------------------------------------------------------

# 10-byte header + 2-byte empty deflate stream + CRC32 + ISIZE.
_GZIP_MIN_MEMBER = 20
# Deflate cannot expand more than 1032:1, so larger ISIZE hints are lies.
# LZ4 cannot either beyond 255:1 (a match adds at most 255 bytes per input byte).
_LZ4_MAX_RATIO = 255
_DEFLATE_MAX_RATIO = 1032


def _gzip_decompress(data, max_size: int) -> bytes:
    view = _view(data)
    n = len(view)
    # Check the magic first: garbage must not get a large trailer-based buffer.
    if n < _GZIP_MIN_MEMBER or view[0] != 0x1F or view[1] != 0x8B:
        raise CorruptRecordError("gzip data does not start with a gzip member header")
    # ISIZE (input size mod 2**32) of the last member: exact for Kafka's one-member
    # payloads, a low guess for several members (then the buffer grows).
    isize = int.from_bytes(view[n - 4 :], "little")
    if n * _DEFLATE_MAX_RATIO <= max_size:
        # Deflate's worst case cannot exceed the cap: the one-shot decoder is safe, and
        # faster than the bounded path.
        return _one_shot(cramjam.gzip.decompress, view, "gzip")
    guess = max(min(isize, n * _DEFLATE_MAX_RATIO), 1)
    return _decompress_into(cramjam.gzip.decompress_into, view, guess, max_size, "gzip")


# ---------------------------------------------------------------------------
# snappy (xerial framing on write; xerial or raw on read)
# ---------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")
_XERIAL_HEADER_SIZE = len(_XERIAL_HEADER)  # 16
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size, as Kafka's Java producer


def _snappy_compress(data) -> bytes:
    view = _view(data)
    parts: list = [_XERIAL_HEADER]
    compress_raw = cramjam.snappy.compress_raw
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = compress_raw(view[start : start + _XERIAL_BLOCK])
        parts.append(len(block).to_bytes(4, "big"))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data, max_size: int) -> bytes:
    view = _view(data)
    try:
        if view[:8] == _XERIAL_MAGIC:
            return _xerial_decompress(view, max_size)
        # Raw snappy states its decompressed length first: check it before decoding.
        if cramjam.snappy.decompress_raw_len(view) > max_size:
            raise _too_large("snappy", max_size)
        return bytes(cramjam.snappy.decompress_raw(view))
    except _DecompressionError as exc:
        raise CorruptRecordError(f"snappy data does not decompress: {exc}") from None


def _xerial_decompress(view: memoryview, max_size: int) -> bytes:
    n = len(view)
    if n < _XERIAL_HEADER_SIZE:
        raise CorruptRecordError("snappy (xerial) stream shorter than its 16-byte header")
    # First pass: find the blocks and their declared sizes (no decompression yet), so
    # the output is allocated once and max_size is enforced before any work.
    blocks = []
    total = 0
    pos = _XERIAL_HEADER_SIZE
    decompress_raw_len = cramjam.snappy.decompress_raw_len
    while pos < n:
        if pos + 4 > n:
            raise CorruptRecordError("snappy (xerial) stream truncated in a block length")
        # A second xerial header where a length should be: a concatenated stream, as
        # snappy-java can read. Its first byte 0x82 would be a negative length anyway.
        if view[pos : pos + 8] == _XERIAL_MAGIC:
            pos += _XERIAL_HEADER_SIZE
            continue
        length = int.from_bytes(view[pos : pos + 4], "big", signed=True)
        pos += 4
        if length <= 0 or pos + length > n:
            raise CorruptRecordError(
                f"snappy (xerial) block length {length} at byte {pos - 4} does not fit the "
                f"{n}-byte stream"
            )
        block = view[pos : pos + length]
        pos += length
        size = decompress_raw_len(block)
        total += size
        if total > max_size:
            raise _too_large("snappy", max_size)
        blocks.append((block, size))
    if len(blocks) == 1:
        return bytes(cramjam.snappy.decompress_raw(blocks[0][0]))
    out = bytearray(total)
    out_view = memoryview(out)
    decompress_raw_into = cramjam.snappy.decompress_raw_into
    offset = 0
    for block, size in blocks:
        if decompress_raw_into(block, out_view[offset : offset + size]) != size:
            raise CorruptRecordError("snappy (xerial) block shorter than its declared length")
        offset += size
    return bytes(out)


# ---------------------------------------------------------------------------
# lz4 (frame format, KIP-57)
# ---------------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60  # version 01, independent blocks, no block/content checksum, no size
_LZ4_BD = 0x40  # 64 KiB maximum block size
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000  # high bit of a block size: block stored as is
_LZ4_END_MARK = b"\x00\x00\x00\x00"
_LZ4_FLG_CONTENT_SIZE = 0x08
_LZ4_FLG_DICT_ID = 0x01


def _lz4_compress(data, level: int | None, magic: int) -> bytes:
    if level is not None:
        # Java: LZ4HC at the given level. cramjam's frame Compressor honours levels (its
        # block compressor ignores them); it also sets block checksums, which every
        # reader, Java's included, verifies or skips.
        compressor = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        # Its compress() takes bytes only (cramjam 2.14), where the rest take any buffer.
        compressor.compress(data if isinstance(data, bytes) else bytes(data))
        frame = bytes(compressor.finish())
        return _lz4_break_hc(frame) if magic == 0 else frame
    # Java's default: lz4's fast compressor. We write the frame around cramjam's block
    # compressor (LZ4_compress_default) to get exactly Java's header (no checksums) and,
    # for magic 0, the broken HC without patching.
    view = _view(data)
    compress_block = cramjam.lz4.compress_block
    parts: list = [_LZ4_HEADER_V0 if magic == 0 else _LZ4_HEADER]
    for start in range(0, len(view), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        block = compress_block(chunk, store_size=False)
        if len(block) < len(chunk):
            parts.append(len(block).to_bytes(4, "little"))
            parts.append(block)
        else:  # incompressible: store it, as Java does
            parts.append((len(chunk) | _LZ4_UNCOMPRESSED).to_bytes(4, "little"))
            parts.append(chunk)
    parts.append(_LZ4_END_MARK)
    return b"".join(parts)


def _lz4_hc_offset(flg: int) -> int:
    """Where HC sits: after magic, FLG, BD and the optional content size and dict id."""
    return 6 + (8 if flg & _LZ4_FLG_CONTENT_SIZE else 0) + (4 if flg & _LZ4_FLG_DICT_ID else 0)


def _lz4_break_hc(frame: bytes) -> bytes:
    """Give a well-formed frame Kafka 0.8/0.9's HC, computed over the magic number too."""
    hc_at = _lz4_hc_offset(frame[4])
    return frame[:hc_at] + bytes((_lz4_hc(frame[:hc_at]),)) + frame[hc_at + 1 :]


def _lz4_decompress(data, magic: int, max_size: int) -> bytes:
    view = _view(data)
    if len(view) < 7 or view[:4] != _LZ4_MAGIC:
        raise CorruptRecordError("lz4 data does not start with an LZ4 frame header")
    flg = view[4]
    hc_at = _lz4_hc_offset(flg)
    if len(view) <= hc_at:
        raise CorruptRecordError("lz4 frame truncated in its header")
    if magic == 0:
        hc = _lz4_hc(view[4:hc_at])
        if view[hc_at] != hc:  # Kafka 0.8/0.9's HC: replace it with the right one
            fixed = bytearray(view)
            fixed[hc_at] = hc
            view = memoryview(fixed)
    guess = 4 * len(view)
    if flg & _LZ4_FLG_CONTENT_SIZE:
        content_size = int.from_bytes(view[6:14], "little")
        if content_size > max_size:
            raise _too_large("lz4", max_size)
        guess = content_size
    if len(view) * _LZ4_MAX_RATIO <= max_size:
        # LZ4's worst case cannot exceed the cap: the one-shot decoder is safe and faster.
        return _one_shot(cramjam.lz4.decompress, view, "lz4")
    return _decompress_into(cramjam.lz4.decompress_into, view, guess, max_size, "lz4")


# xxHash32 (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md) in pure
# Python: cramjam does not expose it, and only the 2-14 byte lz4 frame descriptor is
# ever hashed here, so speed does not matter.
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """Return the 32-bit xxHash of ``data``."""
    data = bytes(data)
    n = len(data)
    i = 0
    if n >= 16:
        acc = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            for lane in range(4):
                word = int.from_bytes(data[i : i + 4], "little")
                acc[lane] = (_rotl((acc[lane] + word * _P2) & _M32, 13) * _P1) & _M32
                i += 4
        h = _rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)
    else:
        h = seed + _P5
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[i : i + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _lz4_hc(descriptor) -> int:
    """The LZ4 frame header checksum: the second byte of xxh32 over the descriptor."""
    return (_xxh32(descriptor) >> 8) & 0xFF


_LZ4_DESCRIPTOR = bytes((_LZ4_FLG, _LZ4_BD))
_LZ4_HEADER = _LZ4_MAGIC + _LZ4_DESCRIPTOR + bytes((_lz4_hc(_LZ4_DESCRIPTOR),))
# Kafka 0.8/0.9 hashed the magic number too (KIP-57); magic 0 messages keep that HC.
_LZ4_HEADER_V0 = _LZ4_MAGIC + _LZ4_DESCRIPTOR + bytes((_lz4_hc(_LZ4_MAGIC + _LZ4_DESCRIPTOR),))


# ---------------------------------------------------------------------------
# zstd
# ---------------------------------------------------------------------------

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_MAGIC_NUMBER = 0xFD2FB528
_ZSTD_SKIPPABLE = 0x184D2A50  # 0x184D2A50-0x184D2A5F: skippable frames (RFC 8878 3.1.2)
_ZSTD_DICT_ID_SIZES = (0, 1, 2, 4)
_ZSTD_FCS_SIZES = (0, 2, 4, 8)  # by Frame_Content_Size_flag; 0 means 1 if single-segment
_ZSTD_MAX_BLOCK = 128 * 1024  # Block_Maximum_Size is min(Window_Size, 128 KiB) (3.1.1.2.4)
# Blocks walked for a size bound before giving up (4096 full blocks are 512 MiB, past any
# max_size): hostile input made of tiny blocks costs a bounded walk, then today's guess.
_ZSTD_WALK_LIMIT = 4096


def _zstd_content_size(view: memoryview) -> int | None:
    """The first frame's declared content size (RFC 8878 3.1.1.1), or None if absent."""
    if len(view) < 6 or view[:4] != _ZSTD_MAGIC:
        return None
    fhd = view[4]
    single_segment = (fhd >> 5) & 1
    fcs_size = _ZSTD_FCS_SIZES[fhd >> 6] or single_segment
    if not fcs_size:
        return None
    pos = 5 + (not single_segment) + _ZSTD_DICT_ID_SIZES[fhd & 3]
    if pos + fcs_size > len(view):
        return None  # truncated: let the decoder report it
    size = int.from_bytes(view[pos : pos + fcs_size], "little")
    return size + 256 if fcs_size == 2 else size


def _zstd_size_bound(view: memoryview) -> int | None:
    """An upper bound of what the zstd frames in ``view`` decompress to, or None; see
    :func:`_zstd_walk`."""
    walked = _zstd_walk(view)
    return None if walked is None else walked[0]


def _zstd_walk(view: memoryview) -> tuple[int, int] | None:
    """An upper bound of what the zstd frames in ``view`` decompress to, read from their
    headers alone (RFC 8878 3.1.1), or None if they do not parse (the decoder says why).

    For frames without a declared content size, as Java's producer writes them: each
    block header gives its type and size; a raw or RLE block regenerates ``Block_Size``
    bytes, a compressed one at most ``Block_Maximum_Size``. A streaming compressor fills
    every block but a frame's last, so the bound exceeds the truth by less than one block
    per frame. Skippable frames add nothing. Gives up (None) after _ZSTD_WALK_LIMIT blocks.

    Returns ``(bound, frames)``: ``frames`` counts every frame, skippable ones included.
    """
    n = len(view)
    pos = total = blocks = frames = 0
    while pos < n:
        frames += 1
        if pos + 8 > n:  # a frame is at least magic, descriptor and a block header
            return None
        magic = int.from_bytes(view[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE:
            pos += 8 + int.from_bytes(view[pos + 4 : pos + 8], "little")
            continue
        if magic != _ZSTD_MAGIC_NUMBER:
            return None
        fhd = view[pos + 4]
        single_segment = (fhd >> 5) & 1
        fcs_size = _ZSTD_FCS_SIZES[fhd >> 6] or single_segment
        at = pos + 5
        window = _ZSTD_MAX_BLOCK
        if not single_segment:  # Window_Descriptor: exponent (5 bits), mantissa (3 bits)
            window_log = 10 + (view[at] >> 3)
            window = (1 << window_log) + ((1 << window_log) >> 3) * (view[at] & 7)
            at += 1
        at += _ZSTD_DICT_ID_SIZES[fhd & 3]
        declared = None
        if fcs_size:
            if at + fcs_size > n:
                return None
            declared = int.from_bytes(view[at : at + fcs_size], "little")
            if fcs_size == 2:
                declared += 256
            at += fcs_size
        block_max = min(window, _ZSTD_MAX_BLOCK)
        frame_bound = 0
        last = 0
        while not last:
            if at + 3 > n or blocks >= _ZSTD_WALK_LIMIT:
                return None
            header = view[at] | (view[at + 1] << 8) | (view[at + 2] << 16)
            last, block_type, block_size = header & 1, (header >> 1) & 3, header >> 3
            at += 3
            if block_type == 0:  # raw
                at += block_size
                frame_bound += block_size
            elif block_type == 1:  # RLE: one byte, repeated
                at += 1
                frame_bound += block_size
            elif block_type == 2:  # compressed
                at += block_size
                frame_bound += block_max
            else:  # reserved
                return None
            blocks += 1
        if fhd & 0x04:  # Content_Checksum
            at += 4
        if at > n:
            return None
        total += frame_bound if declared is None else declared
        pos = at
    # A skippable frame may claim more than is left.
    return (total, frames) if pos == n else None


def _zstd_decompress_cramjam(data, max_size: int) -> bytes:
    # cramjam.zstd.decompress already reads frames without a content size and several
    # frames in a row (tests pin it), but it grows its output without limit, so we go
    # through the bounded decompress_into path instead.
    view = _view(data)
    content_size = _zstd_content_size(view)
    if content_size is None:
        # No declared size (Java's frames): size the buffer by the block headers, so that
        # a payload compressed more than 4:1 still decompresses once, not two or three
        # times through a growing buffer (issue 16). Beyond max_size the bound says
        # nothing (it may overestimate): then the buffer starts at 4x and grows.
        bound = _zstd_size_bound(view)
        guess = bound if bound is not None and bound <= max_size else 4 * len(view)
    elif content_size > max_size:
        raise _too_large("zstd", max_size)
    else:
        guess = content_size
    return _decompress_into(cramjam.zstd.decompress_into, view, guess, max_size, "zstd")


def _zstd_decompress_zstandard(data, max_size: int) -> bytes:
    # The zstandard package's one-shot decompress() on this thread's reused context:
    # cramjam opens a new streaming decoder on every call, a fifth of the time of a 33 KB
    # batch (issue 16). Only where one call is known to be right and bounded; everything
    # else (several frames, a first frame declaring 0 bytes, no usable bound, corrupt or
    # truncated input: any ZstdError) goes to the cramjam path, which decides alone what
    # is valid and what error is raised, so both decompressors accept and reject the
    # same payloads (tests/codec/test_zstd_backends.py). Pitfalls of zstandard 0.25 found
    # on the way: decompress() reads only the first frame, and returns b"" for a first
    # frame declaring content size 0 without reading further; allow_extra_data=False
    # catches data after a frame that declares its size but not after one that does not.
    view = _view(data)
    content_size = _zstd_content_size(view)
    if content_size is None:
        # Java's frames: decompress into at most the bound of the block headers, one frame
        # only (the walk counts them; decompress() would drop the next ones silently).
        walked = _zstd_walk(view)
        if walked is None or walked[1] != 1 or walked[0] > max_size:
            return _zstd_decompress_cramjam(view, max_size)
        limit = walked[0]
    elif content_size > max_size:
        raise _too_large("zstd", max_size)
    elif content_size == 0:
        return _zstd_decompress_cramjam(view, max_size)
    else:
        limit = 0  # the declared size: decompress() checks that the frame produces it
    try:
        decompressor = _zstd_local.decompressor
    except AttributeError:  # first call on this thread: a context is not thread-safe
        decompressor = _zstd_local.decompressor = _zstandard.ZstdDecompressor()
    try:
        return decompressor.decompress(view, max_output_size=limit, allow_extra_data=False)
    except _zstandard.ZstdError:
        return _zstd_decompress_cramjam(view, max_size)


_ZSTD_DECOMPRESSORS = {"cramjam": _zstd_decompress_cramjam}
try:
    import zstandard as _zstandard
except ImportError:  # the optional extra kproto[zstd] is not installed
    _zstandard = None  # type: ignore[assignment]
else:
    _zstd_local = threading.local()
    _ZSTD_DECOMPRESSORS["zstandard"] = _zstd_decompress_zstandard

_zstd_decompress = _zstd_decompress_cramjam
_zstd_decompressor_name = "cramjam"


def zstd_decompressor() -> str:
    """Return which library decompresses zstd: ``"zstandard"`` or ``"cramjam"``.

    ``"zstandard"`` when the `zstandard <https://pypi.org/project/zstandard/>`_ package is
    installed (``pip install kproto[zstd]``), which is faster on small batches;
    ``"cramjam"`` otherwise, or when the environment variable ``KPROTO_ZSTD=cramjam`` is
    set at import (any case). Both accept and reject the same payloads with the same errors.
    """
    return _zstd_decompressor_name


def _select_zstd(name: str | None = None) -> str:
    """Decompress zstd with ``name`` ("zstandard" or "cramjam"; None: zstandard when it is
    installed, unless ``KPROTO_ZSTD`` says otherwise). Returns the previous name.
    For tests and benchmarks; applications set ``KPROTO_ZSTD`` instead.

    Raises:
        ValueError: ``name`` (or ``KPROTO_ZSTD``) is not a known decompressor, or is
            "zstandard" and the zstandard package is not installed.
    """
    global _zstd_decompress, _zstd_decompressor_name
    if name is None:
        # Names are matched as a user means them: "CramJam" and " cramjam" are cramjam.
        name = os.environ.get("KPROTO_ZSTD", "").strip().lower() or ("zstandard" if _zstandard else "cramjam")
    if name not in ("zstandard", "cramjam"):
        raise ValueError(f"unknown zstd decompressor {name!r}: expected zstandard or cramjam")
    if name not in _ZSTD_DECOMPRESSORS:
        raise ValueError("zstd decompressor 'zstandard' requested, but the zstandard package "
                         "is not installed (pip install kproto[zstd])")
    previous = _zstd_decompressor_name
    _zstd_decompress = _ZSTD_DECOMPRESSORS[name]
    _zstd_decompressor_name = name
    return previous


_select_zstd()
