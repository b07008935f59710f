"""The Cython codec and its pure-Python twin must agree: same bytes, same records, same errors.

Both backends run on the same hypothesis inputs in one process; any difference is a bug
in one of them. Skipped (with a reason) only when the extension is not built.
"""


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import _codec_py as py
from tests.support.codec_strategies import batch_specs, build

pytestmark = pytest.mark.codec

cy = pytest.importorskip("kproto._codec", reason="the Cython extension is not built")

BATCH_FIELDS = (
    "base_offset", "last_offset", "next_offset", "size", "magic", "crc", "attributes", "compression",
    "timestamp_type", "is_transactional", "is_control", "has_delete_horizon", "partition_leader_epoch",
    "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
    "base_sequence", "records_count",
)
COLUMN_FIELDS = py.Columns.__slots__


def rec_tuple(r):
    return (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)


def outcome(fn, *args):
    """What a call gives: its value, or the type of exception (and offsets) it raises."""
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # noqa: BLE001 - the type is the result under comparison
        return ("raise", type(exc).__name__, getattr(exc, "first_offset", None), getattr(exc, "last_offset", None))


def decoded(backend, buf, fetch_offset=0):
    def run():
        batches = [(tuple(getattr(b, f) for f in BATCH_FIELDS), [rec_tuple(r) for r in b.records()]) for b in backend.read_batches(buf)]
        records, next_offset, whole = backend.decode_record_set(buf, fetch_offset)
        cols = backend.decode_columnar(buf, fetch_offset)
        return batches, [rec_tuple(r) for r in records], next_offset, whole, {f: getattr(cols, f) for f in COLUMN_FIELDS}
    return outcome(run)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_specs())
def test_same_bytes_and_same_records(spec):
    kwargs, records = spec
    raw_py = build(py, kwargs, records)
    raw_cy = build(cy, kwargs, records)
    assert raw_py == raw_cy
    assert decoded(py, raw_py) == decoded(cy, raw_py)


@settings(max_examples=200, deadline=None)
@given(st.lists(batch_specs(), min_size=1, max_size=4), st.data())
def test_record_sets_with_fetch_offset_and_partial_tail(specs, data):
    raw = b"".join(build(py, k, r) for k, r in specs)
    cut = data.draw(st.integers(0, len(raw)))
    fetch_offset = data.draw(st.integers(0, 1 << 40))
    assert decoded(py, raw[:cut], fetch_offset) == decoded(cy, raw[:cut], fetch_offset)


@settings(max_examples=400, deadline=None)
@given(batch_specs(), st.data())
def test_mutated_batches_fail_alike(spec, data):
    raw = bytearray(build(py, *spec))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    for check_crc in (True, False):
        a = outcome(lambda b=bytes(raw), c=check_crc: [rec_tuple(r) for x in py.read_batches(b, c) for r in x.records()])
        b = outcome(lambda b=bytes(raw), c=check_crc: [rec_tuple(r) for x in cy.read_batches(b, c) for r in x.records()])
        assert a == b


def validation(backend, buf, check_crc):
    """Per batch: records() (as which keys are null), validate() and validate(require_keys=True)."""
    def run():
        return [
            (outcome(lambda b=b: [r.key is None for r in b.records()]), outcome(b.validate), outcome(b.validate, True))
            for b in backend.read_batches(buf, check_crc)
        ]
    return outcome(run)


def assert_validate_fails_exactly_where_records_fails(verdicts):
    for records, plain, keyed in verdicts:
        if records[0] == "ok":
            assert plain == ("ok", None)
            assert keyed == (("raise", "InvalidRecordError", None, None) if any(records[1]) else ("ok", None))
        else:
            assert plain == keyed == records  # same type and offsets: a parse error comes first


@settings(max_examples=300, deadline=None)
@given(batch_specs(), st.data())
def test_validate_fails_exactly_where_records_fails(spec, data):
    """Batch.validate() raises iff Batch.records() raises, the same error, on both backends:
    valid batches (some with null keys) and the same with a few bytes changed."""
    raw = bytearray(build(py, *spec))
    # Mostly past a v2 header (61 bytes), where the record parser is what can fail.
    first = data.draw(st.sampled_from([0, 61, 61]))
    for _ in range(data.draw(st.integers(0, 4)) if len(raw) > first else 0):
        raw[data.draw(st.integers(first, len(raw) - 1))] = data.draw(st.integers(0, 255))
    for check_crc in (True, False):
        verdicts = validation(py, bytes(raw), check_crc)
        assert verdicts == validation(cy, bytes(raw), check_crc)
        if verdicts[0] == "ok":
            assert_validate_fails_exactly_where_records_fails(verdicts[1])


@given(st.binary(max_size=12), st.integers(0, 12))
def test_varint_decoders_agree(buf, pos):
    for name in ("decode_varint", "decode_varlong", "decode_uvarint"):
        assert outcome(getattr(py, name), buf, pos) == outcome(getattr(cy, name), buf, pos)


@given(st.integers(-(1 << 70), 1 << 70))
def test_varint_encoders_agree(value):
    for name in ("encode_varint", "encode_varlong", "encode_uvarint", "size_of_varint", "size_of_varlong"):
        assert outcome(getattr(py, name), value) == outcome(getattr(cy, name), value)


@given(st.binary(max_size=40), st.integers(1, 1000))
def test_murmur2_agrees(key, n):
    assert py.murmur2(key) == cy.murmur2(key)
    assert py.murmur2_partition(key, n) == cy.murmur2_partition(key, n)


@pytest.mark.parametrize("fetch_offset", [1 << 63, 1 << 64, -(1 << 63) - 1, (1 << 63) - 1, -(1 << 63)])
def test_fetch_offset_outside_64_bits_fails_alike(fetch_offset):
    """issue 16, review: a fetch_offset outside 64 signed bits is an OverflowError in both
    backends (Cython's int64_t argument), not an empty result in the twin."""
    from kproto.consumer.structs import ConsumerRecord

    raw = build(py, {"magic": 2, "compression": 0}, [(0, None, b"v", None)])
    assert decoded(py, raw, fetch_offset) == decoded(cy, raw, fetch_offset)
    for call in (lambda b: {f: getattr(b.decode_columnar(raw, fetch_offset), f) for f in COLUMN_FIELDS},
                 lambda b: b.record_tuples(next(iter(b.read_batches(raw))), ConsumerRecord, "t", 0, fetch_offset)):
        assert outcome(call, py) == outcome(call, cy)
        if not -(1 << 63) <= fetch_offset < 1 << 63:
            assert outcome(call, py)[:2] == ("raise", "OverflowError")


def test_same_public_names():
    assert set(py.__all__) == set(cy.__all__)
    for name in py.__all__:
        assert hasattr(cy, name), name



# --- one batch header: read, rewrite, empty, validate (issue 12) -------------------------

HEADER_FIELDS = tuple(f for f in BATCH_FIELDS if f not in ("last_offset", "next_offset"))


def header_of(backend, buf, pos=0):
    def run():
        header = backend.read_batch_header(buf, pos)
        return None if header is None else tuple(getattr(header, f) for f in BATCH_FIELDS)
    return outcome(run)


def damaged(data, raw, first=0):
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(0, 4)) if len(raw) > first else 0):
        raw[data.draw(st.integers(first, len(raw) - 1))] = data.draw(st.integers(0, 255))
    return bytes(raw)


@settings(max_examples=300, deadline=None)
@given(batch_specs(), st.data())
def test_read_batch_header_agrees_and_matches_read_batches(spec, data):
    """issue 12: the one header reader gives the same fields on both backends, from the
    header's bytes alone, as read_batches gives for a v2 batch or an uncompressed legacy
    message; on damaged or cut bytes both give the same error or None."""
    raw = build(py, *spec)
    for backend in (py, cy):
        head = backend.read_batch_header(raw[: py.BATCH_HEADER_SIZE])
        whole = next(iter(backend.read_batches(raw)))
        assert isinstance(whole, backend.BatchHeader)
        assert head.size == whole.size
        if head.magic == 2 or head.compression == 0:
            assert tuple(getattr(head, f) for f in BATCH_FIELDS) == tuple(getattr(whole, f) for f in BATCH_FIELDS)
        else:  # a compressed legacy wrapper: its header knows its last offset only
            assert (head.base_offset, head.last_offset, head.records_count) == (whole.last_offset, whole.last_offset, -1)
    bad = damaged(data, raw)[: data.draw(st.integers(0, len(raw)))]
    assert header_of(py, bad) == header_of(cy, bad)
    assert header_of(py, b"x" + bad, 1) == header_of(cy, b"x" + bad, 1)


@given(st.binary(max_size=70))
def test_read_batch_header_of_garbage_agrees(buf):
    assert header_of(py, buf) == header_of(cy, buf)


int_or_none = st.one_of(st.none(), st.integers(-(1 << 64), 1 << 64))


@settings(max_examples=300, deadline=None)
@given(batch_specs(magics=(2,)), st.data())
def test_rewrite_batch_agrees_and_keeps_the_batch_valid(spec, data):
    """issue 12: rewrite_batch writes the same bytes on both backends (or the same error
    for a value that does not fit), the CRC is right again, the records are untouched."""
    raw = build(py, *spec)
    fields = {name: data.draw(st.one_of(st.none(), st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1), int_or_none))
              for name, bits in (("base_offset", 64), ("partition_leader_epoch", 32), ("attributes", 16),
                                 ("last_offset_delta", 32), ("max_timestamp", 64), ("producer_id", 64),
                                 ("producer_epoch", 16), ("base_sequence", 32))}
    fields = {k: v for k, v in fields.items() if v is not None}
    fields.pop("attributes", None) if fields.get("attributes", 0) & 0x07 else None  # keep the codec as built
    fields.pop("last_offset_delta", None)  # covered by the cleaner test: it must stay >= the records'
    a, b = outcome(lambda: py.rewrite_batch(raw, **fields)), outcome(lambda: cy.rewrite_batch(raw, **fields))
    assert a == b
    if a[0] == "ok":
        out = a[1]
        batch = next(iter(py.read_batches(out)))  # CRC checked
        for name, value in fields.items():
            assert getattr(batch, name) == value
        assert out[61:] == raw[61:]
        original = next(iter(py.read_batches(raw)))
        assert py.rewrite_batch(out, **{k: getattr(original, k) for k in fields}) == raw  # and back
        assert py.rewrite_batch(out) == out  # nothing given: the same bytes


@settings(max_examples=200, deadline=None)
@given(batch_specs(), st.data())
def test_rewrite_batch_refuses_alike_what_is_not_one_whole_v2_batch(spec, data):
    raw = build(py, *spec)
    bad = damaged(data, raw)[: data.draw(st.integers(0, len(raw) + 1))] + data.draw(st.binary(max_size=2))
    a = outcome(lambda: py.rewrite_batch(bad, producer_id=7))
    assert a == outcome(lambda: cy.rewrite_batch(bad, producer_id=7))


@settings(max_examples=200, deadline=None)
@given(batch_specs(), st.data())
def test_empty_batch_agrees_and_keeps_offsets_and_producer_fields(spec, data):
    """issue 12: the cleaner's empty batch, the same bytes on both backends, from a
    header of either reader; a legacy header is refused alike."""
    raw = build(py, *spec)
    for source in (py, cy):
        header = source.read_batch_header(raw)
        a, b = outcome(py.empty_batch, header), outcome(cy.empty_batch, header)
        assert a == b
        if header.magic != 2:
            assert a[0] == "raise"
            continue
        empty = next(iter(py.read_batches(a[1])))
        assert empty.records() == [] and empty.size == py.BATCH_HEADER_SIZE
        for name in ("base_offset", "last_offset", "partition_leader_epoch", "producer_id", "producer_epoch",
                     "base_sequence", "max_timestamp", "timestamp_type", "is_transactional", "is_control"):
            assert getattr(empty, name) == getattr(header, name), name
        assert empty.base_timestamp == header.max_timestamp and empty.compression == 0


def verdict(backend, buf):
    def run():
        batch, keyless = backend.validate_batch(buf)
        return tuple(getattr(batch, f) for f in BATCH_FIELDS), keyless
    return outcome(run)


@settings(max_examples=400, deadline=None)
@given(st.lists(batch_specs(), min_size=1, max_size=2), st.data())
def test_validate_batch_agrees_and_accepts_what_a_broker_accepts(specs, data):
    """issue 12: the Produce path's validate-only pass gives the same verdict on both
    backends, for valid, damaged (header, CRC, records), cut and concatenated batches;
    it accepts exactly one whole v2 data batch whose records parse, and says whether a
    record has a null key, as Batch.records() would."""
    raw = b"".join(build(py, k, r) for k, r in specs)
    bad = damaged(data, raw, data.draw(st.sampled_from([0, 61, 61])))
    bad = bad[: data.draw(st.sampled_from([len(bad), len(bad), data.draw(st.integers(0, len(bad)))]))]
    a = verdict(py, bad)
    assert a == verdict(cy, bad)
    if a[0] == "ok":
        batches = list(py.read_batches(bad))
        assert len(batches) == 1 and batches[0].magic == 2 and not batches[0].is_control
        assert a[1][1] == any(r.key is None for r in batches[0].records())


# --- records from columns: send_batch's codec calls (issue 16, "Produce, batches") --------

import array  # noqa: E402

cells = st.one_of(st.none(), st.binary(max_size=40), st.binary(max_size=8).map(bytearray))
header_lists = st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=6))),
                                             max_size=3))


def binary_array(backend, column, offset, large):
    """``column`` (bytes or None) in Arrow's layout, the first ``offset`` rows padding."""
    rows = [b"pad"] * offset + [None if v is None else bytes(v) for v in column]
    offsets, data, bits = [0], b"", bytearray((len(rows) + 7) // 8)
    for i, v in enumerate(rows):
        if v is not None:
            data += v
            bits[i >> 3] |= 1 << (i & 7)
        offsets.append(len(data))
    return backend.BinaryArray(len(column), array.array("q" if large else "i", offsets), data, bytes(bits), offset, large)


def from_columns(backend, spec, arrow):
    values, keys, headers, timestamps, rows, max_bytes, start, codec, offset, large = spec

    def run():
        vcol = binary_array(backend, values, offset, large) if arrow else values
        kcol = None if keys is None else (binary_array(backend, keys, 0, not large) if arrow else keys)
        largest = backend.largest_record(vcol, kcol, headers)
        out = []
        pos = start
        stop = len(rows) if rows is not None else len(values)
        while pos < stop:
            b = backend.BatchBuilder(2, codec, max_bytes=max_bytes)
            pos = b.append_columns(vcol, kcol, headers, timestamps, 1_600_000_000_000, rows, pos, -1)
            out.append((pos, b.record_count, b.build()))
        grouped = backend.partition_rows(len(values), 3, kcol, None, 1)
        return largest, out, (list(grouped[0]), grouped[1]), [vcol[i] for i in range(len(values))]
    return outcome(run)


@st.composite
def column_specs(draw):
    n = draw(st.integers(0, 12))
    values = draw(st.lists(cells, min_size=n, max_size=n))
    keys = draw(st.one_of(st.none(), st.lists(cells, min_size=n, max_size=n)))
    headers = draw(st.one_of(st.none(), st.lists(header_lists, min_size=n, max_size=n)))
    timestamps = draw(st.one_of(st.none(), st.lists(st.integers(0, 1 << 45), min_size=n, max_size=n).map(
        lambda t: array.array("q", t))))
    rows = draw(st.one_of(st.none(), st.permutations(range(n)).map(lambda r: array.array("q", r))))
    return (values, keys, headers, timestamps, rows, draw(st.sampled_from([0, 80, 200])),
            draw(st.integers(0, n)), draw(st.sampled_from([0, 0, 3, 4])), draw(st.integers(0, 9)),
            draw(st.booleans()))


@settings(max_examples=300, deadline=None)
@given(column_specs(), st.booleans())
def test_append_columns_largest_record_and_partition_rows_agree(spec, arrow):
    """issue 16, send_batch: batches built from columns (lists or Arrow-layout arrays, with
    rows, timestamps, headers, max_bytes), the largest record and the grouping by
    partition are the same on both backends, byte for byte, and so are the errors."""
    assert from_columns(py, spec, arrow) == from_columns(cy, spec, arrow)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=10), st.binary(max_size=10)), max_size=20), st.integers(0, 200))
def test_append_columns_is_a_loop_of_append(pairs, max_bytes):
    """issue 16, send_batch: append_columns writes exactly the batch that appending the same
    records one by one writes, stopping where append would refuse (max_bytes)."""
    for backend in (py, cy):
        one = backend.BatchBuilder(2, 0, max_bytes=max_bytes)
        stop = 0
        for i, (k, v) in enumerate(pairs):
            if one.append(1000 + i, k, v) < 0:
                break
            stop = i + 1
        many = backend.BatchBuilder(2, 0, max_bytes=max_bytes)
        ts = array.array("q", [1000 + i for i in range(len(pairs))])
        assert many.append_columns([v for _, v in pairs], [k for k, _ in pairs], None, ts) == stop
        assert many.build() == one.build()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=300), st.binary(max_size=4).map(bytearray)), max_size=300),
       st.sampled_from([0, 500, 4096, 1 << 20]), st.sampled_from(["list", "tuple", "arrow"]), st.booleans())
def test_long_columns_cut_into_batches_alike(values, max_bytes, kind, keyed):
    """issue 16, send_batch (the C loop of append_columns, and its first allocation sized for
    the batch): long columns, where a row of another type (bytearray) now and then takes the
    general path, are cut into the same batches, byte for byte, on both backends."""
    keys = [None if v is None else bytes(v[:3]) for v in values] if keyed else None
    out = {}
    for backend in (py, cy):
        if kind == "arrow":
            vcol = binary_array(backend, values, 2, False)
            kcol = None if keys is None else binary_array(backend, keys, 0, True)
        else:
            vcol = values if kind == "list" else tuple(values)
            kcol = keys
        batches, pos = [], 0
        while pos < len(values):
            b = backend.BatchBuilder(2, 0, max_bytes=max_bytes)
            pos = b.append_columns(vcol, kcol, None, None, 1_600_000_000_000, None, pos)
            batches.append((pos, b.build()))
        out[backend] = batches
    assert out[py] == out[cy]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=200), st.lists(st.binary(max_size=300), max_size=200),
       st.sampled_from([0, 500, 1 << 20]), st.sampled_from([0, 0, 4]), st.booleans(), st.booleans())
def test_a_batch_written_into_a_spare_is_what_a_fresh_builder_writes(first, second, max_bytes, codec, headers,
                                                                       held):
    """issue 16, send_batch item 2 (memory): a builder that writes into an earlier batch's
    memory (BatchBuilder.reuse: the Cython builder takes a spare that only the list refers
    to, larger or smaller than what it needs; the twin takes none) builds the same bytes as
    a fresh builder on both backends, and a spare held elsewhere is neither taken nor changed."""
    hdrs = [[("h", v[:2])] for v in second] if headers else None
    out = {}
    for backend in (py, cy):
        b = backend.BatchBuilder(2, 0)
        b.append_columns(first)
        spares = [b.build()]
        del b  # its last build is the spare's only other holder
        keep = spares[0] if held else None
        copy = bytearray(spares[0])  # (bytes() of a bytes object is the object itself)
        r = backend.BatchBuilder(2, codec, max_bytes=max_bytes)
        took = r.reuse(spares)
        assert took == (backend is cy and not held)
        assert len(spares) == (0 if took else 1)
        r.append_columns(second, None, hdrs)
        out[backend] = (r.build(), r.record_count)
        if keep is not None:
            assert keep == copy
    assert out[py] == out[cy]
    fresh = cy.BatchBuilder(2, codec, max_bytes=max_bytes)
    fresh.append_columns(second, None, hdrs)
    assert out[cy][0] == fresh.build()


def test_bad_columns_fail_alike():
    """issue 16, send_batch: wrong types, short columns and Arrow buffers too short for
    their length fail with the same exception type on both backends."""
    cases = [
        lambda b: b.largest_record([b"a", "s"]),
        lambda b: b.largest_record([b"a"], [b"k", b"k"]),
        lambda b: b.largest_record([b"a"], None, [[(1, b"x")]]),
        lambda b: b.BatchBuilder().append_columns([b"a", 3]),
        lambda b: b.BatchBuilder().append_columns([b"a", b"b"], [b"k"]),
        lambda b: b.BatchBuilder().append_columns([b"a"], rows=array.array("q", [5])),
        lambda b: b.BinaryArray(3, array.array("i", [0, 1]), b"x"),
        lambda b: b.BinaryArray(3, array.array("i", [0, 1, 2, 3]), b"xyz", b""),
        lambda b: b.BinaryArray(1, array.array("i", [0, 9]), b"xyz")[0],
        lambda b: b.partition_rows(2, 0),
        lambda b: b.partition_rows(2, 3, [b"a", None]),
        lambda b: b.partition_rows(2, 3, None, [0, 7]),
    ]
    for case in cases:
        a, c = outcome(case, py), outcome(case, cy)
        assert a == c and a[0] == "raise", (a, c)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=30), max_size=8), st.lists(st.binary(max_size=30), max_size=8),
       st.sampled_from([0, 3, 4]))
def test_a_builder_used_after_build_gives_what_a_fresh_one_gives(first, second, codec):
    """issue 16, codec: the Cython builder hands its buffer out from build() (no copy); built
    again, or appended to after a build, it still gives the twin's bytes, and the bytes
    handed out before do not change."""
    out = {}
    for backend in (py, cy):
        b = backend.BatchBuilder(2, codec)
        b.append_columns(first)
        one = b.build()
        kept = bytes(one)
        again = b.build()
        b.append_columns(second, timestamp=5)
        out[backend] = (one, again, b.build(), b.size_in_bytes(), b.record_count)
        assert one == kept
    assert out[py] == out[cy]


# broker produce validation (issue 16, "broker produce")

@settings(max_examples=300, deadline=None)
@given(batch_specs(magics=(2,)), int_or_none, int_or_none)
def test_stamped_head_is_the_head_of_rewrite_batch(spec, base_offset, leader_epoch):
    """issue 16 (broker produce): the 16-byte head a broker writes before the records as
    received is what rewrite_batch writes there, on both backends, or both refuse alike;
    with the rest of the batch it reads back as a valid batch (the CRC does not cover it)."""
    raw = build(py, *spec)
    base_offset = 0 if base_offset is None else base_offset
    leader_epoch = 0 if leader_epoch is None else leader_epoch
    a = outcome(lambda: py.stamped_head(raw, base_offset, leader_epoch))
    assert a == outcome(lambda: cy.stamped_head(raw, base_offset, leader_epoch))
    whole = outcome(lambda: py.rewrite_batch(raw, base_offset=base_offset, partition_leader_epoch=leader_epoch))
    assert a[0] == whole[0]
    if a[0] == "ok":
        assert len(a[1]) == 16 and a[1] + raw[16:] == whole[1]
        batch = next(iter(cy.read_batches(a[1] + raw[16:])))  # CRC checked
        assert (batch.base_offset, batch.partition_leader_epoch) == (base_offset, leader_epoch)
    else:
        assert a == whole


@settings(max_examples=200, deadline=None)
@given(batch_specs(), st.data())
def test_stamped_head_refuses_alike_what_is_not_one_whole_v2_batch(spec, data):
    raw = build(py, *spec)
    bad = damaged(data, raw)[: data.draw(st.integers(0, len(raw) + 1))] + data.draw(st.binary(max_size=2))
    a = outcome(lambda: py.stamped_head(bad, 7, 0))
    assert a == outcome(lambda: cy.stamped_head(bad, 7, 0))
    assert a[0] == outcome(lambda: py.rewrite_batch(bad, base_offset=7, partition_leader_epoch=0))[0]


def resealed(raw: bytes | bytearray) -> bytes:
    """A v2 batch with its length and CRC-32C made right again over whatever it holds."""
    out = bytearray(raw)
    out[8:12] = (len(out) - 12).to_bytes(4, "big")
    out[17:21] = py.crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def verdict_and_message(backend, buf):
    try:
        batch, keyless = backend.validate_batch(buf)
    except Exception as exc:  # noqa: BLE001 - the error is the result under comparison
        return "raise", type(exc).__name__, str(exc)
    return "ok", tuple(getattr(batch, f) for f in BATCH_FIELDS), keyless


@settings(max_examples=500, deadline=None)
@given(batch_specs(magics=(2,), codecs=(0,)), st.data())
def test_validate_batch_walks_records_of_a_valid_crc_batch_alike(spec, data):
    """issue 16 (broker produce): validate_batch's record walk in C (the Produce path)
    accepts and refuses exactly what the twin does, with the same error and message, for
    uncompressed batches whose records were damaged, cut or grown and the CRC made right
    again, so that only the record walk can tell (Kafka's LogValidator: CORRUPT_MESSAGE)."""
    raw = bytearray(build(py, *spec))
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(61, len(raw) - 1))
        raw[i] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC3, 0x9F, data.draw(st.integers(0, 255))]))
    cut = data.draw(st.sampled_from([None, None, data.draw(st.integers(61, len(raw)))]))
    if cut is not None:
        raw = raw[:cut] + data.draw(st.binary(max_size=3))
    buf = resealed(raw)
    a = verdict_and_message(py, buf)
    assert a == verdict_and_message(cy, buf)
    if a[0] == "ok":
        assert a[2] == any(r.key is None for r in py.read_batches(buf).__iter__().__next__().records())


def _varint_bytes(value: int, width: int) -> bytes:
    """``value`` zigzag-encoded as a varint of at least ``width`` bytes (padded with
    continuation groups, as Kafka's readers accept)."""
    z = (value << 1) ^ (value >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, z = z & 0x7F, z >> 7
        if z or len(out) + 1 < width:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@st.composite
def crafted_records(draw):
    """The records part of a v2 batch written field by field, each varint of a drawn width
    (1 to 5 bytes), some records with bytes their fields do not account for or with
    lengths and counts that lie: the shapes a random byte flip seldom makes."""
    count = draw(st.integers(1, 4))
    payload = b""
    for _ in range(count):
        def v(value):
            return _varint_bytes(value, draw(st.sampled_from([1, 1, 1, 2, 3, 4, 5])))
        key = draw(st.one_of(st.none(), st.binary(max_size=6)))
        value = draw(st.one_of(st.none(), st.binary(max_size=6)))
        headers = draw(st.lists(st.tuples(st.one_of(st.binary(max_size=4), st.sampled_from([b"\xc3\xa9", b"\xff"])),
                                          st.one_of(st.none(), st.binary(max_size=4))), max_size=2))
        body = b"\x00" + v(draw(st.integers(-3, 1 << 22))) + v(draw(st.integers(-2, 3)))
        body += v(-1 if key is None else len(key) + draw(st.sampled_from([0, 0, 0, 1, -1]))) + (key or b"")
        body += v(-1 if value is None else len(value)) + (value or b"")
        body += v(len(headers) + draw(st.sampled_from([0, 0, 0, 1, 5])))
        for hk, hv in headers:
            body += v(len(hk)) + hk + v(-1 if hv is None else len(hv)) + (hv or b"")
        body += draw(st.sampled_from([b"", b"", b"", b"\x00", b"\x01\x02"]))  # unaccounted bytes
        payload += v(len(body) + draw(st.sampled_from([0, 0, 0, 0, 1, -1]))) + body
    return count, payload + draw(st.sampled_from([b"", b"", b"\x00"]))


@settings(max_examples=600, deadline=None)
@given(crafted_records(), st.sampled_from([0, 0x08]))
def test_validate_batch_walks_crafted_records_alike(crafted, timestamp_type):
    """issue 16 (broker produce): as above, for records written field by field (long and
    padded varints, lengths off by one, bytes no field accounts for, header keys in and
    out of UTF-8, a LogAppendTime batch), so that each check of the record walk is
    reached with the CRC right."""
    count, payload = crafted
    builder = py.BatchBuilder(2, 0)
    for _ in range(count):
        builder.append(1_000, b"k", b"v")
    head = bytearray(builder.build()[:61])
    head[22] |= timestamp_type  # attributes' low byte: the timestamp type bit
    buf = resealed(head + payload)
    a = verdict_and_message(py, buf)
    assert a == verdict_and_message(cy, buf)


def columns_of(backend, buf, fetch_offset=0, check_crc=True):
    """decode_columnar's every field, or the error it raises (type, offsets, message)."""
    try:
        cols = backend.decode_columnar(buf, fetch_offset, check_crc)
    except Exception as exc:  # noqa: BLE001 - the error is the result under comparison
        return "raise", type(exc).__name__, getattr(exc, "first_offset", None), str(exc)
    return "ok", {f: getattr(cols, f) for f in COLUMN_FIELDS}


@settings(max_examples=600, deadline=None)
@given(crafted_records(), st.sampled_from([0, 0x08]), st.integers(0, 3))
def test_decode_columnar_of_crafted_records_alike(crafted, timestamp_type, copies):
    """issue 16 (Spark source): the columnar loop reads one- and two-byte varints inline and
    writes through C cursors committed per batch. For records written field by field (padded
    varints of 1 to 5 bytes, lengths that lie, unaccounted bytes), alone and after whole
    batches, decode_columnar gives the twin's columns or its error, message included."""
    count, payload = crafted
    builder = py.BatchBuilder(2, 0)
    for _ in range(count):
        builder.append(1_000, b"k", b"v")
    head = bytearray(builder.build()[:61])
    head[22] |= timestamp_type
    crafted_batch = resealed(head + payload)
    good = build(py, {"magic": 2, "compression": 0, "base_offset": 0}, [(5, b"key", None, [("h", b"1")])] * 9)
    buf = good * copies + crafted_batch
    assert columns_of(py, buf) == columns_of(cy, buf)


# Where a length varint grows (64, 8192), and where the copy of a key or value changes
# (16-byte moves up to 128 bytes when the payload goes on 16 bytes past it, else memcpy).
_BOUNDARY_SIZES = st.sampled_from([0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 8191, 8192, 8193, 70_000])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.one_of(st.none(), _BOUNDARY_SIZES), st.one_of(st.none(), _BOUNDARY_SIZES),
                                   st.integers(0, 2)), min_size=1, max_size=40), min_size=1, max_size=3),
       st.integers(0, 130))
def test_columns_at_varint_boundaries_agree(batches, fetch_offset):
    """issue 16 (Spark source): keys and values of the sizes where a length varint grows
    (1, 2, 3 bytes) or their copy changes, nulls at every bit of the validity bytes, several
    batches in one set (buffers grown between batches, and keys of 70 kB grow theirs within
    a batch) and a fetch offset that drops the first records:
    decode_columnar gives the twin's columns, and both agree with the records decoded one
    by one."""
    raw, offset = b"", 0
    for records in batches:
        spec = [(1_000 + i, None if k is None else b"k" * k, None if v is None else b"v" * v,
                 [(f"h{j}", None if j else b"x" * (v or 0)) for j in range(h)])
                for i, (k, v, h) in enumerate(records)]
        raw += build(py, {"magic": 2, "compression": 0, "base_offset": offset}, spec)
        offset += len(records)
    cy_cols = columns_of(cy, raw, fetch_offset)
    assert columns_of(py, raw, fetch_offset) == cy_cols
    records = cy.decode_record_set(raw, fetch_offset)[0]
    cols = cy_cols[1]
    assert cols["count"] == len(records)
    assert binary_column(cols, "key") == [r.key for r in records]
    assert binary_column(cols, "value") == [r.value for r in records]


def binary_column(cols, name):
    """A binary column of ``cols`` (a dict of Columns fields) read back as Arrow would."""
    count, data, validity = cols["count"], cols[f"{name}_data"], cols[f"{name}_validity"]
    ends = memoryview(cols[f"{name}_offsets"]).cast("i")
    assert len(ends) == count + 1 and ends[0] == 0 and len(validity) == (count + 7) // 8
    return [bytes(data[ends[i]:ends[i + 1]]) if validity[i // 8] >> (i % 8) & 1 else None for i in range(count)]


@pytest.mark.parametrize("with_headers", [False, True], ids=["no-headers", "headers"])
@pytest.mark.parametrize("case", [
    dict(rows=array.array("q", [0, 5])),
    dict(rows=array.array("q", [0, -1])),
    dict(timestamps=array.array("q", [1])),
    dict(rows=array.array("q", [0]), stop=3),
], ids=["row-past-the-columns", "negative-row", "short-timestamps", "stop-past-the-rows"])
def test_append_columns_refuses_rows_outside_its_columns_alike(case, with_headers):
    """issue 16 (send_batch): a row, a position or a timestamp outside what was given is the
    same IndexError, with the same message, from both backends (the twin used to say
    "array index out of range" for the last two) and from both of the extension's loops."""
    errors = []
    for backend in (cy, py):
        with pytest.raises(IndexError) as raised:
            backend.BatchBuilder().append_columns([b"a", b"b", b"c"], None, [[], [], []] if with_headers else None,
                                                  **case)
        errors.append(str(raised.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("size", [0, 1, 4096, 2 << 20])
def test_uninitialized_bytes_are_bytes_of_the_size_asked(size):
    # The content is undefined (the extension's is malloc's, the twin's zeros): only the
    # type and the length are the same. FrameReader fills every byte before handing it out.
    for backend in (py, cy):
        out = backend.uninitialized_bytes(size)
        assert type(out) is bytes and len(out) == size
        with pytest.raises(ValueError, match="negative size"):
            backend.uninitialized_bytes(-1)


INT64 = st.integers(-(2**63), 2**63 - 1)
NEAR_THE_EDGE = st.integers(2**63 // 1000 - 3, 2**63 // 1000 + 3).flatmap(lambda m: st.sampled_from([m, -m]))


@given(st.lists(st.one_of(st.integers(-(10**15), 10**15), NEAR_THE_EDGE, INT64), max_size=40))
def test_millis_to_micros_agrees_with_the_twin_and_with_arrows_cast(values):
    pa = pytest.importorskip("pyarrow")
    buf = array.array("q", values).tobytes()
    results = {name: outcome(backend.millis_to_micros, buf) for name, backend in (("py", py), ("cy", cy))}
    assert results["py"][0] == results["cy"][0]
    try:
        arrow = pa.Array.from_buffers(pa.timestamp("ms"), len(values), [None, pa.py_buffer(buf)]).cast(
            pa.timestamp("us")).cast(pa.int64()).to_pylist()
    except pa.ArrowInvalid:
        assert results["cy"][:2] == ("raise", "OverflowError")
    else:
        assert results["cy"][0] == "ok" and bytes(results["py"][1]) == bytes(results["cy"][1])
        assert array.array("q", bytes(results["cy"][1])).tolist() == arrow


@pytest.mark.parametrize("backend", [py, cy], ids=["py", "cy"])
def test_millis_to_micros_refuses_a_partial_value(backend):
    with pytest.raises(ValueError, match="not int64 values"):
        backend.millis_to_micros(b"\0" * 12)
