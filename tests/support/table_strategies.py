"""Test helpers generated from the schema table: hypothesis strategies and filled instances.

``message_strategy(cls, version)`` draws valid objects of a message class for one version:
every field the version has gets a value of its type (nulls where the version allows them,
unknown tagged fields in flexible versions); fields the version lacks keep their defaults,
so an encode/decode round trip must give back an equal object.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from hypothesis import strategies as st

from kproto.protocol.schema import Struct
from kproto.protocol.spec import Field, MessageSpec

__all__ = ["message_strategy", "populated", "every_case"]

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1),
    "uint32": (0, (1 << 32) - 1),
}


def _scalar(typ: str) -> st.SearchStrategy[Any]:
    if typ in _INT_RANGES:
        lo, hi = _INT_RANGES[typ]
        return st.integers(lo, hi)
    if typ == "float64":
        return st.floats(allow_nan=False)
    if typ == "bool":
        return st.booleans()
    if typ == "string":
        return st.text(max_size=12)
    if typ in ("bytes", "records"):
        return st.binary(max_size=24)
    if typ == "uuid":
        return st.one_of(st.just(uuid.UUID(int=0)), st.integers(0, (1 << 128) - 1).map(lambda i: uuid.UUID(int=i)))
    raise AssertionError(typ)


def _struct_strategy(top: type, cls: type, fields: tuple[Field, ...], version: int, flexible: bool) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields:
        if version in f.versions:
            kwargs[f.name] = _field_strategy(top, f, version, flexible)
    if flexible:
        known = {f.tag for f in fields if f.tag is not None}
        unknown_tags = st.integers(0, 40).filter(lambda t: t not in known)
        kwargs["unknown_tagged_fields"] = st.one_of(
            st.none(), st.dictionaries(unknown_tags, st.binary(max_size=6), min_size=1, max_size=2)
        )
    return st.builds(cls, **kwargs)


def _field_strategy(top: type, f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if f.is_struct:
        sub = getattr(top, f.struct_name)  # type: ignore[arg-type]
        elem = _struct_strategy(top, sub, f.fields, version, flexible)
    else:
        elem = _scalar(f.element_type)
    value = st.lists(elem, max_size=2) if f.is_array else elem
    if version in f.nullable:
        value = st.one_of(st.none(), value)
    return value


@functools.cache
def message_strategy(cls: type, version: int) -> st.SearchStrategy[Any]:
    """Strategy for valid instances of message class ``cls`` at ``version``."""
    spec: MessageSpec = cls._codec.spec  # type: ignore[attr-defined]
    return _struct_strategy(cls, cls, spec.fields, version, version in spec.flexible)


def _filled(typ: str, salt: int) -> Any:
    if typ in _INT_RANGES:
        lo, hi = _INT_RANGES[typ]
        return max(lo, min(hi, 100 + salt))
    return {
        "float64": 1.5 + salt,
        "bool": True,
        "string": f"s{salt}-é",
        "bytes": bytes([salt % 256]) * 3,
        "records": b"R" * (5 + salt),
        "uuid": uuid.UUID(int=0x1234 + salt),
    }[typ]


def populated(cls: type, version: int, *, unknown_tags: bool = True) -> Struct:
    """A deterministic instance with every field of ``version`` set to a non-default value.

    Arrays get two elements, so every nested field is exercised; in flexible versions each
    struct also carries an unknown tagged field (tag 99) that must survive a round trip.
    """
    spec: MessageSpec = cls._codec.spec  # type: ignore[attr-defined]
    flexible = version in spec.flexible
    top = cls
    counter = [0]

    def build(struct_cls: type, fields: tuple[Field, ...]) -> Any:
        kwargs: dict[str, Any] = {}
        for f in fields:
            if version not in f.versions:
                continue
            counter[0] += 1
            count = 2 if f.is_array else 1
            if f.is_struct:
                sub = getattr(top, f.struct_name)  # type: ignore[arg-type]
                items = [build(sub, f.fields) for _ in range(count)]
            else:
                items = [_filled(f.element_type, counter[0]) for _ in range(count)]
            kwargs[f.name] = items if f.is_array else items[0]
        if flexible and unknown_tags:
            kwargs["unknown_tagged_fields"] = {99: b"\x01\x02"}
        return struct_cls(**kwargs)

    return build(cls, spec.fields)


def every_case() -> list[tuple[str, int, bool]]:
    """``(api name, version, is_request)`` for every version of every API in the table."""
    from kproto.protocol.messages import TABLE

    return [(a.name, v, req) for a in TABLE for v in a.versions for req in (True, False)]
