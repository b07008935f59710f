"""Record batches and record sets: the format facts and edge cases of the codec checklist.

Every test runs on both backends (the Cython extension and the pure-Python twin).
"""

import struct

import pytest

from kproto import _codec_py
from kproto.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError
from kproto.records import ControlType, TimestampType, build_control_batch, parse_control_record

pytestmark = pytest.mark.codec

try:
    from kproto import _codec as _codec_cy
except ImportError:  # the purepy env, or no compiler
    _codec_cy = None

BACKENDS = [pytest.param(_codec_py, id="python")]
if _codec_cy is not None:
    BACKENDS.append(pytest.param(_codec_cy, id="cython"))


@pytest.fixture(params=BACKENDS)
def codec(request):
    return request.param


def build(codec, records, **kwargs):
    builder = codec.BatchBuilder(kwargs.pop("magic", 2), kwargs.pop("compression", 0), **kwargs)
    for rec in records:
        builder.append(*rec)
    return builder.build()


def patch_v2(raw, **fields):
    """Rewrite v2 header fields and fix the CRC, to make batches a builder would not."""
    positions = {"last_offset_delta": (23, ">i"), "records_count": (57, ">i"), "attributes": (21, ">h"),
                 "base_timestamp": (27, ">q"), "max_timestamp": (35, ">q")}
    out = bytearray(raw)
    for name, value in fields.items():
        pos, fmt = positions[name]
        struct.pack_into(fmt, out, pos, value)
    struct.pack_into(">I", out, 17, _codec_py.crc32c(bytes(out[21:])))
    return bytes(out)


# --- varints ---------------------------------------------------------------------------

@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
    (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f"),
])
def test_varint_known_encodings(codec, value, encoded):
    assert codec.encode_varint(value) == encoded
    assert codec.decode_varint(encoded) == (value, len(encoded))
    assert codec.size_of_varint(value) == len(encoded)


def test_varlong_extremes(codec):
    for value in (2**63 - 1, -(2**63)):
        encoded = codec.encode_varlong(value)
        assert len(encoded) == 10
        assert codec.decode_varlong(encoded) == (value, 10)


@pytest.mark.parametrize("name, buf", [
    ("decode_varint", b""),                          # empty
    ("decode_varint", b"\x80\x80"),                  # truncated
    ("decode_varint", b"\x80\x80\x80\x80\x80\x01"),  # six bytes: overlong
    ("decode_varint", b"\xff\xff\xff\xff\x1f"),      # 33 bits
    ("decode_varlong", b"\xff" * 9 + b"\x02"),       # 65 bits
    ("decode_varlong", b"\x80" * 10 + b"\x01"),      # eleven bytes
    ("decode_uvarint", b"\xff\xff\xff\xff\x10"),     # 33 bits
])
def test_bad_varints_are_corrupt_records(codec, name, buf):
    with pytest.raises(CorruptRecordError):
        getattr(codec, name)(buf)


def test_varint_encoders_refuse_out_of_range(codec):
    for fn, value in ((codec.encode_varint, 2**31), (codec.encode_varlong, 2**63), (codec.encode_uvarint, -1)):
        with pytest.raises(OverflowError):
            fn(value)


# --- v2 batches ------------------------------------------------------------------------

def test_every_batch_and_record_field_round_trips(codec):
    raw = build(codec, [(1_000, b"k", b"v", [("a", b"1"), ("b", None)]), (1_005, None, None, None)],
                base_offset=100, producer_id=7, producer_epoch=3, base_sequence=42,
                is_transactional=True, partition_leader_epoch=9)
    (batch,) = codec.read_batches(raw)
    assert (batch.base_offset, batch.last_offset, batch.next_offset, batch.last_offset_delta) == (100, 101, 102, 1)
    assert (batch.magic, batch.size, batch.records_count) == (2, len(raw), 2)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 3, 42)
    assert batch.is_transactional and not batch.is_control and not batch.has_delete_horizon
    assert (batch.partition_leader_epoch, batch.base_timestamp, batch.max_timestamp) == (9, 1_000, 1_005)
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    r0, r1 = batch.records()
    assert (r0.offset, r0.timestamp, r0.key, r0.value, r0.headers) == (100, 1_000, b"k", b"v", (("a", b"1"), ("b", None)))
    assert (r1.offset, r1.timestamp, r1.key, r1.value, r1.headers) == (101, 1_005, None, None, ())


def test_log_append_time_uses_max_timestamp(codec):
    raw = build(codec, [(10, b"a", b"1"), (20, b"b", b"2")], timestamp_type=1)
    raw = patch_v2(raw, max_timestamp=99)
    records, _, _ = codec.decode_record_set(raw)
    assert [(r.timestamp, r.timestamp_type) for r in records] == [(99, 1), (99, 1)]


def test_partial_trailing_batch_stops_quietly(codec):
    one = build(codec, [(1, b"k", b"v")])
    two = build(codec, [(2, b"k", b"w")], base_offset=1)
    for cut in range(len(two)):
        records, next_offset, whole = codec.decode_record_set(one + two[:cut])
        assert [r.offset for r in records] == [0]
        assert (next_offset, whole) == (1, len(one))
    assert [b.base_offset for b in codec.read_batches(one + two + two[:30])] == [0, 1]


def test_empty_compacted_batch_still_advances_next_offset(codec):
    # Compaction can leave a batch with no records that still covers offsets 10..14.
    empty = patch_v2(build(codec, [], base_offset=10), last_offset_delta=4, records_count=0)
    after = build(codec, [(1, b"k", b"v")], base_offset=15)
    records, next_offset, _ = codec.decode_record_set(empty)
    assert (records, next_offset) == ([], 15)
    records, next_offset, _ = codec.decode_record_set(empty + after)
    assert [r.offset for r in records] == [15] and next_offset == 16


def test_offset_gaps_and_fetch_offset(codec):
    builder = codec.BatchBuilder(base_offset=100)
    for delta in (0, 3, 7):
        builder.append(1, b"k%d" % delta, b"v", None, delta)
    raw = builder.build()
    records, next_offset, _ = codec.decode_record_set(raw, 103)
    assert [r.offset for r in records] == [103, 107] and next_offset == 108
    records, next_offset, _ = codec.decode_record_set(raw, 200)
    assert records == [] and next_offset == 200


def test_offset_deltas_must_increase(codec):
    builder = codec.BatchBuilder()
    builder.append(1, None, b"v", None, 5)
    with pytest.raises(ValueError):
        builder.append(1, None, b"v", None, 5)


def test_crc_mismatch_carries_the_offset_range(codec):
    raw = bytearray(build(codec, [(1, b"k", b"v"), (2, b"k", b"v")], base_offset=50))
    raw[-2] ^= 0xFF  # the last value byte (the header count follows it)
    with pytest.raises(CorruptRecordError) as info:
        codec.decode_record_set(bytes(raw))
    assert (info.value.first_offset, info.value.last_offset) == (50, 51)
    records, _, _ = codec.decode_record_set(bytes(raw), 0, False)
    assert records[1].value == b"\x89"  # the flipped byte, read without the check


@pytest.mark.parametrize("magic", [3, 99])
def test_unknown_magic_is_corrupt(codec, magic):
    raw = bytearray(build(codec, [(1, b"k", b"v")], base_offset=8))
    raw[16] = magic
    with pytest.raises(CorruptRecordError) as info:
        list(codec.read_batches(bytes(raw)))
    assert info.value.first_offset == 8


def test_batch_length_below_v2_minimum_is_corrupt(codec):
    raw = bytearray(build(codec, [(1, b"k", b"v")]))
    struct.pack_into(">i", raw, 8, 48)
    with pytest.raises(CorruptRecordError):
        list(codec.read_batches(bytes(raw)))


def test_record_count_larger_than_the_records_is_corrupt(codec):
    raw = patch_v2(build(codec, [(1, b"k", b"v")]), records_count=2)
    with pytest.raises(CorruptRecordError):
        codec.decode_record_set(raw)


def test_bytes_after_the_last_record_are_corrupt(codec):
    raw = build(codec, [(1, b"k", b"v"), (1, b"k", b"v")])
    with pytest.raises(CorruptRecordError):
        codec.decode_record_set(patch_v2(raw, records_count=1))


def test_unsupported_codec_ids(codec):
    raw = patch_v2(build(codec, [(1, b"k", b"v")]), attributes=5)
    with pytest.raises(UnsupportedCompressionTypeError):
        list(codec.read_batches(raw))
    with pytest.raises(UnsupportedCompressionTypeError):
        codec.BatchBuilder(2, 6)
    with pytest.raises(UnsupportedCompressionTypeError):
        codec.BatchBuilder(1, 4)  # zstd needs magic 2


@pytest.mark.parametrize("compression", [1, 2, 3, 4])
def test_compression_round_trips_and_falls_back_when_it_does_not_shrink(codec, compression):
    many = [(i, b"key-%d" % i, b"value " * 20, [("h", b"x")]) for i in range(50)]
    raw = build(codec, many, compression=compression)
    (batch,) = codec.read_batches(raw)
    assert batch.compression == compression
    assert [r.key for r in batch.records()] == [r[1] for r in many]
    tiny = build(codec, [(1, None, b"x")], compression=compression)
    assert next(iter(codec.read_batches(tiny))).compression == 0


def test_max_bytes_refuses_a_record_that_does_not_fit(codec):
    builder = codec.BatchBuilder(max_bytes=200)
    assert builder.append(1, None, b"x" * 150) == 0  # the first record always goes in
    assert builder.append(1, None, b"x" * 150) == -1
    assert builder.record_count == 1


def test_builder_type_errors(codec):
    builder = codec.BatchBuilder()
    for bad in ("str", 1, ["b"]):
        with pytest.raises(TypeError):
            builder.append(1, bad, None)
    with pytest.raises(TypeError):
        builder.append(1, None, None, [(b"bytes-key", b"v")])
    assert builder.record_count == 0


def test_bytearray_and_memoryview_keys(codec):
    raw = build(codec, [(1, bytearray(b"k"), memoryview(b"v"), [("h", bytearray(b"x"))])])
    (rec,) = codec.decode_record_set(raw)[0]
    assert (rec.key, rec.value, rec.headers) == (b"k", b"v", (("h", b"x"),))


def test_header_key_must_be_utf8(codec):
    raw = build(codec, [(1, None, b"v", [("\u00e9", b"x")])])
    bad = raw.replace("\u00e9".encode(), b"\xff\xfe")
    struct.pack_into(">I", bad := bytearray(bad), 17, _codec_py.crc32c(bytes(bad[21:])))
    with pytest.raises(CorruptRecordError):
        codec.decode_record_set(bytes(bad))
    with pytest.raises(CorruptRecordError):
        codec.decode_columnar(bytes(bad))


# --- validation without decoding ------------------------------------------------------

def _only_batch(codec, raw, check_crc=True):
    (batch,) = codec.read_batches(raw, check_crc)
    return batch


def test_records_returns_every_record_even_below_offset_minus_one(codec):
    """Batch.records() once decoded from fetch offset -1 and so dropped the records of a
    batch with a negative base offset, which the key check of Produce then never saw."""
    batch = _only_batch(codec, build(codec, [(1, None, b"v")] * 4, base_offset=-3))
    assert [r.offset for r in batch.records()] == [-3, -2, -1, 0]
    with pytest.raises(InvalidRecordError, match="offset -3 has no key"):
        batch.validate(require_keys=True)


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])
def test_validate_accepts_what_records_decodes(codec, compression):
    recs = [(1_000 + i, b"k%d" % i, b"v" * i, [("h", b"x"), ("\u00e9", None)] if i % 2 else None) for i in range(20)]
    batch = _only_batch(codec, build(codec, recs, compression=compression, base_offset=9))
    assert batch.validate() is None
    assert batch.validate(require_keys=True) is None
    assert len(batch.records()) == batch.records_count == 20


@pytest.mark.parametrize("records_count", [0, 1, 3])
def test_validate_checks_the_record_count_against_the_records(codec, records_count):
    raw = patch_v2(build(codec, [(1, b"k", b"v"), (2, b"k", b"v")], base_offset=70), records_count=records_count)
    batch = _only_batch(codec, raw)
    for check in (batch.validate, batch.records):
        with pytest.raises(CorruptRecordError) as info:
            check()
        assert (info.value.first_offset, info.value.last_offset) == (70, 71)


def test_validate_checks_header_keys_are_utf8(codec):
    raw = build(codec, [(1, b"k", b"v", [("\u00e9", b"x")])])
    bad = bytearray(raw.replace("\u00e9".encode(), b"\xff\xfe"))
    struct.pack_into(">I", bad, 17, _codec_py.crc32c(bytes(bad[21:])))
    with pytest.raises(CorruptRecordError):
        _only_batch(codec, bytes(bad)).validate()


def test_validate_require_keys_names_the_first_keyless_record(codec):
    batch = _only_batch(codec, build(codec, [(1, b"k", b"v"), (2, None, b"v"), (3, None, b"v")], base_offset=40))
    batch.validate()
    with pytest.raises(InvalidRecordError, match="offset 41 has no key"):
        batch.validate(require_keys=True)


def test_validate_reports_corruption_before_a_missing_key(codec):
    """A batch that does not parse is corrupt, whatever its keys: the walk ends first."""
    raw = bytearray(build(codec, [(1, None, b"v"), (2, b"k", b"v")]))
    raw[-1] = 0x02  # the last record's header count: 1, with no header bytes after it
    batch = _only_batch(codec, bytes(raw), check_crc=False)
    with pytest.raises(CorruptRecordError):
        batch.validate(require_keys=True)


@pytest.mark.parametrize("magic, compression", [(0, 0), (1, 0), (1, 2)])
def test_validate_legacy_batches(codec, magic, compression):
    raw = build(codec, [(1, b"k", b"v"), (2, None, b"v")], magic=magic, compression=compression, base_offset=3)
    batch = _only_batch(codec, raw) if compression else list(codec.read_batches(raw))[1]
    batch.validate()
    with pytest.raises(InvalidRecordError, match="offset 4 has no key"):
        batch.validate(require_keys=True)


# --- control batches -------------------------------------------------------------------

def test_control_batches_are_read_but_never_returned_as_data(codec):
    data = build(codec, [(1, b"k", b"v")], base_offset=0, producer_id=5, producer_epoch=0,
                 base_sequence=0, is_transactional=True)
    marker = build_control_batch(ControlType.COMMIT, producer_id=5, producer_epoch=0, timestamp=2,
                                 coordinator_epoch=3, base_offset=1)
    (batch,) = codec.read_batches(marker)
    assert batch.is_control and batch.is_transactional
    (rec,) = batch.records()
    assert parse_control_record(rec) == (0, ControlType.COMMIT)
    records, next_offset, _ = codec.decode_record_set(data + marker)
    assert [r.offset for r in records] == [0] and next_offset == 2
    assert codec.decode_columnar(data + marker).count == 1


def test_control_record_with_short_key_is_corrupt(codec):
    with pytest.raises(CorruptRecordError):
        parse_control_record(codec.Record(0, 0, 0, b"\x00", None))


# --- legacy message sets ---------------------------------------------------------------

@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("compression", [0, 1, 2, 3])
def test_legacy_round_trip(codec, magic, compression):
    raw = build(codec, [(1_000 + i, b"k%d" % i, b"v" * 30) for i in range(5)], magic=magic,
                compression=compression, base_offset=40)
    records, next_offset, whole = codec.decode_record_set(raw)
    assert [r.offset for r in records] == [40, 41, 42, 43, 44]
    assert [r.key for r in records] == [b"k0", b"k1", b"k2", b"k3", b"k4"]
    expected_ts = [1_000 + i for i in range(5)] if magic else [-1] * 5
    assert [r.timestamp for r in records] == expected_ts
    assert {r.timestamp_type for r in records} == ({0} if magic else {-1})
    assert (next_offset, whole) == (45, len(raw))
    assert [r.offset for r in codec.decode_record_set(raw, 43)[0]] == [43, 44]


def test_legacy_v1_wrapper_offsets_are_relative_and_log_append_time_overrides(codec):
    raw = build(codec, [(10, None, b"a"), (20, None, b"b")], magic=1, compression=1, base_offset=7,
                timestamp_type=1)
    records, _, _ = codec.decode_record_set(raw)
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in records] == [(7, 20, 1), (8, 20, 1)]


def test_legacy_headers_are_refused(codec):
    with pytest.raises(ValueError):
        codec.BatchBuilder(1).append(1, None, b"v", [("h", b"x")])


def _legacy_message(magic, attributes, offset, key, value, timestamp=0):
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    return struct.pack(">qiI", offset, len(body) + 4, _codec_py.crc32(body)) + body


def test_legacy_wrapper_with_null_value_is_corrupt(codec):
    with pytest.raises(CorruptRecordError):
        codec.decode_record_set(_legacy_message(1, 1, 0, None, None))


def test_legacy_double_compression_is_corrupt(codec):
    from kproto import compression
    inner = _legacy_message(1, 1, 0, None, compression.compress(1, _legacy_message(1, 0, 0, None, b"x")))
    outer = _legacy_message(1, 1, 0, None, compression.compress(1, inner))
    with pytest.raises(CorruptRecordError):
        codec.decode_record_set(outer)


def test_legacy_crc_is_checked(codec):
    raw = bytearray(_legacy_message(1, 0, 3, b"k", b"v"))
    raw[-1] ^= 1
    with pytest.raises(CorruptRecordError) as info:
        codec.decode_record_set(bytes(raw))
    assert info.value.first_offset == 3


# --- columnar --------------------------------------------------------------------------

def test_column_timestamp_types_are_int32_of_each_batch_kind(codec):
    """issue 16, poll_arrow lead 2: ``timestamp_types`` is int32, Spark's ``timestampType``
    type, so that kproto.arrow wraps it without a cast: 0 create time, 1 log append time,
    -1 none (magic 0); both backends alike."""
    create = build(codec, [(7, None, b"a"), (8, None, b"b")])
    log_append = patch_v2(build(codec, [(9, None, b"c")], base_offset=2), attributes=0x08)
    magic0 = build(codec, [(0, None, b"d")], magic=0, base_offset=3)
    raw = create + log_append + magic0
    cols = codec.decode_columnar(raw)
    assert cols.count == 4 and len(cols.timestamp_types) == 4 * 4
    assert struct.unpack("<4i", cols.timestamp_types) == (0, 0, 1, -1)
    for twin in (_codec_py, _codec_cy or _codec_py):
        assert twin.decode_columnar(raw).timestamp_types == cols.timestamp_types


def test_columns_match_the_records(codec):
    recs = [(1, b"k1", b"v1", [("a", b"x"), ("b", None)]), (2, None, b"", None), (3, b"", None, [("c", b"yy")])]
    raw = build(codec, recs, base_offset=5)
    cols = codec.decode_columnar(raw, 6)
    assert (cols.count, cols.next_offset, cols.whole_bytes) == (2, 8, len(raw))
    assert struct.unpack("<2q", cols.offsets) == (6, 7)
    assert struct.unpack("<2q", cols.timestamps) == (2, 3)
    assert struct.unpack("<3i", cols.key_offsets) == (0, 0, 0) and cols.key_validity[0] & 3 == 0b10
    assert struct.unpack("<3i", cols.value_offsets) == (0, 0, 0) and cols.value_validity[0] & 3 == 0b01
    assert (cols.key_nulls, cols.value_nulls) == (1, 1)
    assert struct.unpack("<3i", cols.header_offsets) == (0, 0, 1)
    assert bytes(cols.header_key_data) == b"c" and bytes(cols.header_value_data) == b"yy"


def test_columns_wrap_into_arrow_without_copying(codec):
    pa = pytest.importorskip("pyarrow")
    raw = build(codec, [(i, None if i % 3 == 0 else b"k%d" % i, b"v" * i, [("h", b"%d" % i)] if i % 2 else None) for i in range(20)])
    cols = codec.decode_columnar(raw)
    n = cols.count
    keys = pa.Array.from_buffers(pa.binary(), n, [pa.py_buffer(cols.key_validity), pa.py_buffer(cols.key_offsets), pa.py_buffer(cols.key_data)], cols.key_nulls)
    values = pa.Array.from_buffers(pa.binary(), n, [pa.py_buffer(cols.value_validity), pa.py_buffer(cols.value_offsets), pa.py_buffer(cols.value_data)], cols.value_nulls)
    hkeys = pa.Array.from_buffers(pa.string(), cols.header_count, [None, pa.py_buffer(cols.header_key_offsets), pa.py_buffer(cols.header_key_data)])
    hvals = pa.Array.from_buffers(pa.binary(), cols.header_count, [pa.py_buffer(cols.header_value_validity), pa.py_buffer(cols.header_value_offsets), pa.py_buffer(cols.header_value_data)], cols.header_value_nulls)
    headers = pa.ListArray.from_arrays(pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(cols.header_offsets)]),
                                       pa.StructArray.from_arrays([hkeys, hvals], ["key", "value"]))
    keys.validate(full=True)
    values.validate(full=True)
    headers.validate(full=True)
    records, _, _ = codec.decode_record_set(raw)
    assert keys.to_pylist() == [r.key for r in records]
    assert values.to_pylist() == [r.value for r in records]
    assert headers.to_pylist() == [[{"key": k, "value": v} for k, v in r.headers] for r in records]
    assert pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.offsets)]).to_pylist() == [r.offset for r in records]


def test_murmur2_partition_requires_partitions(codec):
    with pytest.raises(ValueError):
        codec.murmur2_partition(b"k", 0)


@pytest.mark.parametrize("inner_offsets", [(0, 2**31 + 5), (3, 3), (5, 2)])
def test_legacy_inner_offsets_must_increase_within_int32(codec, inner_offsets):
    """Found by the differential test: a mutated v0 wrapper overflowed the extension's
    int32 last_offset_delta while the twin accepted it."""
    from kproto import compression
    inner = b"".join(_legacy_message(0, 0, o, None, b"x") for o in inner_offsets)
    wrapper = _legacy_message(0, 1, 0, None, compression.compress(1, inner, magic=0))
    with pytest.raises(CorruptRecordError):
        codec.decode_record_set(wrapper)


@pytest.mark.parametrize("base_offset", [2**63 - 1, -(2**63)])
def test_batch_offsets_that_overflow_64_bits_are_corrupt(codec, base_offset):
    raw = bytearray(build(codec, [(1, b"k", b"v"), (2, b"k", b"v")]))
    struct.pack_into(">q", raw, 0, base_offset)
    struct.pack_into(">i", raw, 23, 1 if base_offset > 0 else -2)
    struct.pack_into(">I", raw, 17, _codec_py.crc32c(bytes(raw[21:])))
    with pytest.raises(CorruptRecordError):
        codec.decode_record_set(bytes(raw))


@pytest.mark.parametrize("compression_id", [1, 2, 3, 4])
def test_an_empty_batch_asked_to_compress_is_written_uncompressed_and_reads_back(codec, compression_id):
    raw = codec.BatchBuilder(compression=compression_id).build()
    (batch,) = list(codec.read_batches(raw))
    assert batch.compression == 0 and batch.records_count == 0
    records, _, whole = codec.decode_record_set(raw)
    assert records == [] and whole == len(raw)


# --- one batch header: read, rewrite, empty, validate (issue 12) -----------------------

def _fields(header):
    return {f: getattr(header, f) for f in (
        "base_offset", "last_offset", "size", "magic", "crc", "attributes", "partition_leader_epoch",
        "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")}


def test_read_batch_header_reads_a_v2_header_from_its_61_bytes(codec):
    """issue 12: one header reader; a segment walk hands it the header's bytes only."""
    raw = build(codec, [(5, b"k", b"v"), (9, None, b"w")], base_offset=100, producer_id=7, producer_epoch=2,
                base_sequence=30, partition_leader_epoch=4, compression=1)
    head = codec.read_batch_header(raw[: codec.BATCH_HEADER_SIZE])
    assert isinstance(head, codec.BatchHeader) and not isinstance(head, codec.Batch)
    assert _fields(head) == _fields(_only_batch(codec, raw))
    assert codec.read_batch_header(b"\0" * 3 + raw, 3).base_offset == 100
    assert codec.read_batch_header(raw[: codec.BATCH_HEADER_SIZE - 1]) is None  # a torn header
    assert codec.read_batch_header(raw[:16]) is None


def test_read_batch_header_of_legacy_messages(codec):
    """issue 12: magic 0/1 headers too; a compressed wrapper gives its last offset only."""
    plain = build(codec, [(7, b"k", b"v")], magic=1, base_offset=3)
    head = codec.read_batch_header(plain[:26])
    assert (head.magic, head.base_offset, head.last_offset, head.max_timestamp, head.records_count) == (1, 3, 3, 7, 1)
    assert (head.producer_id, head.partition_leader_epoch, head.timestamp_type) == (-1, -1, 0)
    assert codec.read_batch_header(plain[:25]) is None
    wrapper = build(codec, [(7, b"k", b"v"), (8, b"k", b"v")], magic=1, compression=1, base_offset=3)
    head = codec.read_batch_header(wrapper)
    assert (head.base_offset, head.last_offset, head.records_count, head.compression) == (4, 4, -1, 1)
    v0 = codec.read_batch_header(build(codec, [(-1, b"k", b"v")], magic=0))
    assert (v0.magic, v0.max_timestamp, v0.timestamp_type) == (0, -1, -1)


@pytest.mark.parametrize("damage, error", [
    ({8: b"\xff\xff\xff\xff"}, "negative batch length"),
    ({16: b"\x05"}, "unknown magic byte 5"),
    ({8: b"\x00\x00\x00\x30"}, "below the v2 minimum"),
    ({57: b"\xff\xff\xff\xff"}, "negative record count"),
])
def test_read_batch_header_refuses_damaged_headers(codec, damage, error):
    raw = bytearray(build(codec, [(1, b"k", b"v")]))
    for at, data in damage.items():
        raw[at : at + len(data)] = data
    with pytest.raises(CorruptRecordError, match=error):
        codec.read_batch_header(bytes(raw))


def test_rewrite_batch_writes_fields_and_recomputes_the_crc_only_when_it_covers_them(codec):
    """issue 12: the one rewrite (producer stamping, LogAppendTime, offsets, the cleaner's
    lastOffsetDelta) in place of four copies of the header layout."""
    raw = build(codec, [(5, b"k", b"v"), (6, b"k", b"w")], base_offset=0)
    moved = codec.rewrite_batch(raw, base_offset=1000, partition_leader_epoch=3)
    assert moved[17:] == raw[17:]  # outside the CRC: the CRC is left as it was
    stamped = codec.rewrite_batch(moved, producer_id=42, producer_epoch=1, base_sequence=9,
                                  attributes=0x08, max_timestamp=77, last_offset_delta=5)
    batch = _only_batch(codec, stamped)  # the CRC is checked
    assert (batch.base_offset, batch.partition_leader_epoch, batch.producer_id, batch.producer_epoch,
            batch.base_sequence, batch.timestamp_type, batch.max_timestamp, batch.last_offset) == (
            1000, 3, 42, 1, 9, 1, 77, 1005)
    assert [(r.offset, r.timestamp, r.value) for r in batch.records()] == [(1000, 77, b"v"), (1001, 77, b"w")]
    assert isinstance(codec.rewrite_batch(memoryview(bytearray(raw)), producer_id=1), bytes)


@pytest.mark.parametrize("cut", [0, 60, -1])
def test_rewrite_batch_needs_one_whole_v2_batch(codec, cut):
    raw = build(codec, [(5, b"k", b"v")])
    with pytest.raises(CorruptRecordError, match="not one whole v2 record batch"):
        codec.rewrite_batch(raw[:cut], producer_id=1)
    with pytest.raises(CorruptRecordError):
        codec.rewrite_batch(raw + raw, producer_id=1)
    with pytest.raises(CorruptRecordError):
        codec.rewrite_batch(build(codec, [(5, b"k", b"v")], magic=1), producer_id=1)


@pytest.mark.parametrize("field, value", [("producer_epoch", 1 << 15), ("base_sequence", -(1 << 31) - 1),
                                          ("base_offset", 1 << 63), ("attributes", -(1 << 15) - 1)])
def test_rewrite_batch_refuses_a_value_that_does_not_fit(codec, field, value):
    with pytest.raises(ValueError, match=field):
        codec.rewrite_batch(build(codec, [(5, b"k", b"v")]), **{field: value})


def test_rewrite_batch_refuses_offsets_a_reader_would_refuse(codec):
    """issue 12 (found by the differential test): a base offset whose batch would end past
    2**63-1 gives an unreadable batch, so the rewrite refuses it."""
    raw = build(codec, [(5, b"k", b"v"), (9, b"k", b"v")])  # last offset delta 1
    with pytest.raises(ValueError, match="overflows 64 bits"):
        codec.rewrite_batch(raw, base_offset=(1 << 63) - 2)
    assert _only_batch(codec, codec.rewrite_batch(raw, base_offset=(1 << 63) - 3)).last_offset == (1 << 63) - 2


def test_empty_batch_keeps_offsets_and_producer_fields(codec):
    """issue 12: the cleaner's empty batch (Kafka's writeEmptyHeader) is the codec's."""
    raw = build(codec, [(5, b"k", b"v"), (9, b"k", b"v")], base_offset=50, producer_id=3, producer_epoch=4,
                base_sequence=11, is_transactional=True, partition_leader_epoch=2, compression=1, timestamp_type=1)
    batch = _only_batch(codec, raw)
    empty = _only_batch(codec, codec.empty_batch(batch))
    assert empty.records() == [] and empty.size == codec.BATCH_HEADER_SIZE and empty.compression == 0
    same = ("base_offset", "last_offset", "partition_leader_epoch", "producer_id", "producer_epoch",
            "base_sequence", "max_timestamp", "is_transactional", "timestamp_type")
    assert {f: getattr(empty, f) for f in same} == {f: getattr(batch, f) for f in same}
    assert empty.base_timestamp == batch.max_timestamp
    assert codec.empty_batch(codec.read_batch_header(raw)) == codec.empty_batch(batch)
    with pytest.raises(ValueError, match="magic 1"):
        codec.empty_batch(codec.read_batch_header(build(codec, [(5, b"k", b"v")], magic=1)))


def test_validate_batch_accepts_one_v2_batch_and_says_whether_a_key_is_null(codec):
    """issue 12: the Produce path's validate-only pass (no Record built)."""
    raw = build(codec, [(5, b"k", b"v"), (6, b"k", b"w")], base_offset=0, compression=2)
    batch, keyless = codec.validate_batch(raw)
    assert (batch.records_count, batch.last_offset, keyless) == (2, 1, False)
    assert codec.validate_batch(memoryview(build(codec, [(5, b"k", b"v"), (6, None, b"w")])))[1] is True


@pytest.mark.parametrize("make, error, message", [
    (lambda c: build(c, [(1, b"k", b"v")], magic=1), InvalidRecordError, "magic 2 only"),
    (lambda c: build_control_batch(ControlType.COMMIT, producer_id=1, producer_epoch=0, timestamp=1),
     InvalidRecordError, "control batches"),
    (lambda c: patch_v2(build(c, [(1, b"k", b"v")] * 2), last_offset_delta=2), InvalidRecordError, "lastOffsetDelta"),
    (lambda c: patch_v2(build(c, [(1, b"k", b"v")] * 2), records_count=3, last_offset_delta=2),
     CorruptRecordError, "run"),
    (lambda c: build(c, [(1, b"k", b"v")]) * 2, CorruptRecordError, "exactly one whole record batch"),
    (lambda c: build(c, [(1, b"k", b"v")])[:-1], CorruptRecordError, "exactly one whole record batch"),
    (lambda c: build(c, [(1, b"k", b"v")])[:-1] + b"x", CorruptRecordError, "CRC"),
    (lambda c: patch_v2(build(c, [(1, b"k", b"v")]), attributes=6), UnsupportedCompressionTypeError, "codec id 6"),
])
def test_validate_batch_refuses_with_the_produce_handlers_errors(codec, make, error, message):
    with pytest.raises(error, match=message):
        codec.validate_batch(make(codec))
