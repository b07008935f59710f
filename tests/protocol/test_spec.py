"""Tests of kproto.protocol.spec: the table's DSL and version ranges."""

from __future__ import annotations

import uuid

import pytest

from kproto.protocol.spec import (
    DEFAULT_STRUCT,
    EMPTY_ARRAY,
    MAX_VERSION,
    Route,
    SpecError,
    Versions,
    api,
    data,
    parse_fields,
)


def test_versions() -> None:
    assert Versions.parse("3+") == Versions(3, MAX_VERSION)
    assert Versions.parse("v0-7") == Versions(0, 7)
    assert Versions.parse("5") == Versions(5, 5)
    assert not Versions.parse("none")
    assert 4 in Versions.parse("3+") and 2 not in Versions.parse("3+") and "3" not in Versions.parse("3+")
    assert str(Versions.parse("3+")) == "3+" and str(Versions(0, 7)) == "0-7" and str(Versions(5, 5)) == "5"
    assert Versions.parse("0-7") & Versions.parse("5+") == Versions(5, 7)
    assert not (Versions.parse("0-2") & Versions.parse("5+"))
    assert list(Versions.parse("1-3")) == [1, 2, 3]
    with pytest.raises(ValueError):
        list(Versions.parse("1+"))
    for bad in ("x", "3-1", "-1", "1.0"):
        with pytest.raises(SpecError):
            Versions.parse(bad)


def test_parse_fields_reads_every_attribute() -> None:
    fields = parse_fields("""
        a        int32    v3+  default=-1  ignorable   # a comment
        b        string   v1-4  null=v2+  default=null
        c        []Item   tag=2
          x      int8
          y      uuid
        d        Item     v5   null  default=null      # reuses Item's fields
        e        []int64
        f        bool     default=true
        g        string   default="hi"
        h        float64
    """)
    a, b, c, d, e, f, g, h = fields
    assert (a.name, a.type, a.versions, a.default, a.ignorable) == ("a", "int32", Versions(3, MAX_VERSION), -1, True)
    assert (b.versions, b.nullable, b.default) == (Versions(1, 4), Versions(2, MAX_VERSION), None)
    assert c.tag == 2 and c.is_array and c.is_struct and c.struct_name == "Item" and c.default is EMPTY_ARRAY
    assert [x.name for x in c.fields] == ["x", "y"] and c.fields[1].default == uuid.UUID(int=0)
    assert d.fields == c.fields and d.nullable == Versions(5, 5) and d.default is None
    assert e.element_type == "int64" and not e.is_struct
    assert f.default is True and g.default == "hi" and h.default == 0.0
    struct_default = parse_fields("s  S\n  x int8")[0]
    assert struct_default.default is DEFAULT_STRUCT


@pytest.mark.parametrize(
    "text",
    [
        "a int33",
        "a int32 v3+ bogus",
        "a int32 default=x",
        "a int32 default=null",  # null default but never nullable
        "a bool default=1",
        "a []int32 default=3",
        "a Thing",  # struct without fields
        "a int32\n   b int8",  # odd indentation
        "a int32\n    b int8",  # child of a primitive... two levels deep
        "a int32\n  b int8",  # primitive with children
        "a S\n  x int8\nb S\n  y int8",  # S defined twice differently
        "Bad int8",
    ],
)
def test_malformed_dsl_is_refused(text: str) -> None:
    with pytest.raises(SpecError):
        parse_fields(text)


def test_api_checks_tags() -> None:
    kw = dict(route=Route.ANY, notes="", response="")
    with pytest.raises(SpecError, match="non-flexible"):
        api(1, "X", "0-3", flexible="2+", request="a int8 tag=0", **kw)
    with pytest.raises(SpecError, match="tag 0 used twice"):
        api(1, "X", "0-3", flexible="0+", request="a int8 tag=0\nb int8 tag=0", **kw)
    with pytest.raises(SpecError, match="duplicate"):
        api(1, "X", "0-3", flexible="0+", request="a int8\na int8", **kw)
    ok = api(1, "X", "0-3", flexible="2+", request="a int8 v2+ tag=0", notes="  line one\n   line two  ",
             route=Route.LEADER, response="")
    assert ok.notes == "line one\nline two" and ok.min_version == 0 and ok.max_version == 3


def test_data_declares_a_versioned_message_without_an_api_key() -> None:
    """Issue 12: the table's constructor for Kafka's "type": "data" messages, checked as api() is."""
    with pytest.raises(SpecError, match="non-flexible"):
        data("X", "0-1", flexible="none", notes="", fields="a int8 tag=0")
    with pytest.raises(SpecError, match="duplicate"):
        data("X", "0-1", flexible="none", notes="", fields="a int8\na int8")
    entry = data("TransactionLogValue", "0-1", flexible="1+", notes="  v1: flexible  ",
                 fields="producer_id int64\nepoch int16\ntagged int32 v1+ tag=0")
    assert entry.notes == "v1: flexible" and (entry.versions.lo, entry.versions.hi) == (0, 1)
    assert entry.flexible == Versions(1, MAX_VERSION) and entry.message.name == "TransactionLogValue"
    assert entry.message.is_data and entry.message.api_key == -1 and not entry.message.is_request
    assert [f.name for f in entry.message.fields] == ["producer_id", "epoch", "tagged"]
