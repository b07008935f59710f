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


def test_same_public_names():
    assert set(py.__all__) == set(cy.__all__)
    for name in py.__all__:
        assert hasattr(cy, name), name

