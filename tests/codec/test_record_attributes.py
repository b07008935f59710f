"""The Cython Record's key, value and headers are read-only member descriptors.

issue 16, item "decode zstd, values touched": CPython 3.11 specializes attribute reads
of T_OBJECT_EX member descriptors (as for ``__slots__``) but not of Cython's getset
properties, so kproto/_codec.pyx installs member descriptors for Record's object fields
at import. These tests pin that they are installed and that nothing else changed: the
same values as the twin's Record, read-only as Cython's ``readonly`` (AttributeError),
pickling, copying and equality. Speed itself is measured in bench/codec.py.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from kproto import _codec_py as py

pytestmark = pytest.mark.codec

cy = pytest.importorskip("kproto._codec", reason="the Cython extension is not built")

OBJECT_FIELDS = ("key", "value", "headers")
INT_FIELDS = ("offset", "timestamp", "timestamp_type")


def test_object_fields_are_member_descriptors():
    for name in OBJECT_FIELDS:
        assert type(cy.Record.__dict__[name]).__name__ == "member_descriptor", name
    for name in INT_FIELDS:  # only T_OBJECT_EX members are specialized: ints keep getsets
        assert type(cy.Record.__dict__[name]).__name__ == "getset_descriptor", name


@pytest.mark.parametrize("key, value, headers", [
    (b"k", b"v", (("h", b"x"), ("h2", None))),
    (None, None, ()),
    (b"", b"", (("", b""),)),
])
def test_decoded_records_read_as_the_twins(key, value, headers):
    builder = py.BatchBuilder(2, 4, base_offset=40)
    builder.append(1_700_000_000_000, key, value, list(headers))
    raw = bytes(builder.build())
    (mine,), _, _ = cy.decode_record_set(raw)
    (theirs,), _, _ = py.decode_record_set(raw)
    assert (mine.key, mine.value, mine.headers) == (key, value, headers)
    for name in OBJECT_FIELDS + INT_FIELDS:
        assert getattr(mine, name) == getattr(theirs, name), name
    assert mine == theirs and repr(mine) == repr(theirs)


@pytest.mark.parametrize("name", OBJECT_FIELDS + INT_FIELDS)
def test_fields_stay_read_only(name):
    record = cy.Record(1, 2, 0, b"k", b"v", (("h", b"x"),))
    before = getattr(record, name)
    with pytest.raises(AttributeError):
        setattr(record, name, before)
    with pytest.raises(AttributeError):
        delattr(record, name)
    assert getattr(record, name) is before


def test_pickle_copy_and_equality_unchanged():
    record = cy.Record(3, 4, 1, b"k", None, (("h", b"x"),))
    for twin in (pickle.loads(pickle.dumps(record)), copy.copy(record), copy.deepcopy(record)):
        assert type(twin) is cy.Record and twin == record
        assert (twin.key, twin.value, twin.headers) == (b"k", None, (("h", b"x"),))
    assert record == py.Record(3, 4, 1, b"k", None, (("h", b"x"),))
    assert record != cy.Record(3, 4, 1, b"k", b"", (("h", b"x"),))
