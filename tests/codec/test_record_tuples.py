"""``record_tuples``: a batch's records made as the consumer's tuples in one codec call
(issue 16, consume). Both backends must give the same tuples, of the class asked for, as
the records ``Batch.records()`` decodes, and fail alike.
"""

import gc
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import _codec_py as py
from kproto.consumer.structs import ConsumerRecord
from tests.support.codec_strategies import batch_specs, build

pytestmark = pytest.mark.codec

cy = pytest.importorskip("kproto._codec", reason="the Cython extension is not built")


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - the type is the result under comparison
        return ("raise", type(exc).__name__, getattr(exc, "first_offset", None), getattr(exc, "last_offset", None))


def tuples(backend, raw, fetch_offset, check_crc=True):
    def run():
        out = []
        for batch in backend.read_batches(raw, check_crc):
            made = backend.record_tuples(batch, ConsumerRecord, "topic", 3, fetch_offset)
            assert all(type(r) is ConsumerRecord for r in made)
            out.append(made)
        return out
    return outcome(run)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(batch_specs(), min_size=1, max_size=3), st.data())
def test_both_backends_make_the_same_records_as_batch_records(specs, data):
    """issue 16 (consume): the tuples are the decoded records, with topic, partition and the
    batch's leader epoch, below ``fetch_offset`` left out; legacy batches too."""
    raw = b"".join(build(py, k, r) for k, r in specs)
    fetch_offset = data.draw(st.one_of(st.just(-(1 << 63)), st.integers(0, 1 << 41)))
    made = tuples(py, raw, fetch_offset)
    assert made == tuples(cy, raw, fetch_offset)
    expected = [[ConsumerRecord("topic", 3, r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers,
                                b.partition_leader_epoch) for r in b.records() if r.offset >= fetch_offset]
                for b in py.read_batches(raw)]
    assert made == ("ok", expected)


@settings(max_examples=300, deadline=None)
@given(batch_specs(), st.data())
def test_damaged_batches_fail_alike(spec, data):
    """issue 16 (consume): a corrupt batch raises the same error, with the same offsets."""
    raw = bytearray(build(py, *spec))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    assert tuples(py, bytes(raw), 0, check_crc=False) == tuples(cy, bytes(raw), 0, check_crc=False)


class WithFields(tuple):
    pass  # no __slots__ = (): instances carry a __dict__


@pytest.mark.parametrize("backend", [py, cy], ids=["python", "cython"])
@pytest.mark.parametrize("cls, topic, partition", [
    (list, "t", 0), (WithFields, "t", 0), ("ConsumerRecord", "t", 0), (ConsumerRecord, b"t", 0),
    (ConsumerRecord, "t", "0"), (time.struct_time, "t", 0), (os.stat_result, "t", 0),
])
def test_refuses_what_cannot_be_a_record(backend, cls, topic, partition):
    """issue 16 (consume): only a tuple class without instance fields, a str topic and an
    int partition are accepted (the tuples are made without calling ``cls``).

    issue 16, review: a struct sequence (``time.struct_time``, ``os.stat_result``) has
    tuple's basic size but instances longer than their visible fields; the Cython codec
    made it with 9 slots and its dealloc freed more (SIGSEGV). Both refuse it alike."""
    raw = build(backend, {"magic": 2, "compression": 0}, [(0, None, b"v", None)])
    batch = next(iter(backend.read_batches(raw)))
    with pytest.raises(TypeError):
        backend.record_tuples(batch, cls, topic, partition)


def test_records_behave_as_named_tuples_and_leave_the_collector_alone():
    """issue 16 (consume): Cython's tuples are ordinary ConsumerRecords (fields, _replace,
    equality, pickling) that the cyclic GC need not walk."""
    import pickle

    raw = build(cy, {"magic": 2, "compression": 0, "partition_leader_epoch": 4},
                [(10, b"k", b"v", [("h", b"x")]), (10, None, None, None)])
    first, second = cy.record_tuples(next(iter(cy.read_batches(raw))), ConsumerRecord, "t", 1)
    assert first == ConsumerRecord("t", 1, 0, 10, 0, b"k", b"v", (("h", b"x"),), 4)
    assert second.headers == () and second.key is None and second.value is None
    assert first._replace(value=b"w").value == b"w"
    assert pickle.loads(pickle.dumps(first)) == first
    assert not gc.is_tracked(first)
