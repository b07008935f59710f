"""The schema table's data model, and the small text DSL the table is written in.

An :class:`Api` is one Kafka API key: its valid and flexible versions, where requests
are routed, version notes, and a request and a response :class:`MessageSpec`. A
:class:`Data` is one of Kafka's ``"type": "data"`` messages: a versioned structure with no
API key, written with its version as a leading int16 (the consumer protocol's
subscriptions and assignments, the records of ``__consumer_offsets``). A message
is a tree of :class:`Field` s, each with the versions it exists in, the versions in which
it may be null, an optional tag (KIP-482 tagged fields), a default and nested fields for
struct types. Nothing here encodes bytes: :mod:`kproto.protocol.schema` compiles these
specs into classes, encoders and decoders.

The DSL
-------
Each message is a block of lines, one field per line, children indented two spaces
under their struct or struct-array field::

    name              type              [vRANGE] [null[=vRANGE]] [tag=N] [default=V] [ignorable]

* ``name`` is Kafka's JSON field name in snake_case (``ThrottleTimeMs`` -> ``throttle_time_ms``).
* ``type`` is Kafka's: ``int8 int16 int32 int64 uint16 uint32 float64 bool string bytes
  uuid records``, ``[]T`` for an array of ``T``, or a CamelCase struct name. A struct name
  whose fields were already given in the same message may be used again with no children
  (Kafka's ``commonStructs``).
* ``vRANGE`` is ``v3+`` (3 and later), ``v0-7`` (0 to 7 inclusive) or ``v5`` (only 5);
  omitted means ``v0+``, as in Kafka's JSON (``"versions": "0+"``).
* ``null`` makes the field nullable in every version it exists in; ``null=v1+`` only in some.
* ``tag=N`` makes it a tagged field (KIP-482) in every version it exists in; those must be
  flexible versions.
* ``default=V`` overrides the type's natural default (0, false, "", empty, zero uuid,
  null for records): ``default=-1``, ``default=null``, ``default=true``, ``default=0x7fffffff``.
* ``ignorable`` marks a field that may be silently dropped when encoding a version that
  lacks it (Kafka's ``"ignorable": true``); see :mod:`kproto.protocol.schema` for the rule.
* ``#`` starts a comment.

The DSL is parsed once at import; a malformed table raises :class:`SpecError` naming the
message and line.
"""

from __future__ import annotations

import enum
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_VERSION",
    "PRIMITIVE_TYPES",
    "Versions",
    "Route",
    "Field",
    "MessageSpec",
    "Api",
    "Data",
    "SpecError",
    "api",
    "data",
    "parse_fields",
    "EMPTY_ARRAY",
    "DEFAULT_STRUCT",
]

#: Upper bound standing for "and every later version" (API versions are int16).
MAX_VERSION = 0x7FFF

#: The primitive type names of Kafka's message JSON that a field may have.
PRIMITIVE_TYPES = frozenset(
    {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "string", "bytes", "uuid", "records"}
)


class SpecError(ValueError):
    """The schema table (or a DSL block) is malformed: a bug in the table, found at import."""


class _Marker:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: Default of an array field that is not ``default=null``: a fresh empty list.
EMPTY_ARRAY: Any = _Marker("EMPTY_ARRAY")
#: Default of a struct field that is not ``default=null``: a fresh instance with its defaults.
DEFAULT_STRUCT: Any = _Marker("DEFAULT_STRUCT")
_UNSET: Any = _Marker("UNSET")  # the DSL line gave no default


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of API versions; empty when ``lo > hi``.

    ``Versions.parse("3+")`` is 3 and later, ``"0-7"`` is 0 to 7, ``"5"`` is only 5 and
    ``"none"`` is empty. A leading ``v`` is accepted (the DSL writes ``v3+``).
    """

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        s = text.strip().removeprefix("v")
        if s == "none":
            return NO_VERSIONS
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", s)
        if m is None:
            raise SpecError(f"bad version range {text!r}")
        lo = int(m.group(1))
        if m.group(2) == "+":
            return cls(lo, MAX_VERSION)
        hi = int(m.group(3)) if m.group(3) is not None else lo
        if hi < lo:
            raise SpecError(f"empty version range {text!r}")
        return cls(lo, hi)

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def __bool__(self) -> bool:
        return self.lo <= self.hi

    def __iter__(self):
        """Iterate the versions (only for bounded ranges)."""
        if self.hi == MAX_VERSION:
            raise ValueError(f"cannot iterate the open range {self}")
        return iter(range(self.lo, self.hi + 1))

    def __and__(self, other: Versions) -> Versions:
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return Versions(lo, hi) if lo <= hi else NO_VERSIONS

    def __str__(self) -> str:
        if not self:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


NO_VERSIONS = Versions(1, 0)
ALL_VERSIONS = Versions(0, MAX_VERSION)


class Route(enum.Enum):
    """Which broker a request must be sent to (franz-go's marker interfaces in kmsg)."""

    ANY = "any broker"
    LEADER = "partition leader"
    CONTROLLER = "controller"
    GROUP_COORDINATOR = "group coordinator"
    TXN_COORDINATOR = "transaction coordinator"
    EACH_BROKER = "a chosen broker (each broker answers for itself)"


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message or struct, as the table declares it.

    Attributes:
        name: Kafka's JSON name in snake_case.
        type: Kafka's type spelling: a primitive, ``[]T`` or a struct name.
        versions: versions in which the field exists.
        nullable: versions in which it may be null (empty if never).
        tag: the KIP-482 tag when the field is tagged (in all versions it exists in).
        default: the default value: an int, float, bool, str, bytes, None,
            :data:`EMPTY_ARRAY` or :data:`DEFAULT_STRUCT`.
        ignorable: encoding a non-default value in a version without the field is
            allowed (the value is dropped) rather than an error.
        fields: the struct's fields, for struct and struct-array types.
    """

    name: str
    type: str
    versions: Versions = ALL_VERSIONS
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    default: Any = None
    ignorable: bool = False
    fields: tuple[Field, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """The element type of an array, or the type itself."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """True for struct and struct-array fields."""
        return self.element_type not in PRIMITIVE_TYPES

    @property
    def struct_name(self) -> str | None:
        return self.element_type if self.is_struct else None


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A request or response body, or a data message: a named top-level struct with version
    metadata. A data message has no API key (``api_key`` is -1, ``is_request`` False)."""

    name: str
    api_key: int
    is_request: bool
    versions: Versions
    flexible: Versions
    fields: tuple[Field, ...]
    is_data: bool = False


@dataclass(frozen=True, slots=True)
class Api:
    """One entry of the schema table: an API key and both of its messages."""

    key: int
    name: str
    versions: Versions
    flexible: Versions
    route: Route
    notes: str
    request: MessageSpec = field(repr=False)
    response: MessageSpec = field(repr=False)

    @property
    def min_version(self) -> int:
        return self.versions.lo

    @property
    def max_version(self) -> int:
        return self.versions.hi


@dataclass(frozen=True, slots=True)
class Data:
    """One data message of the table (Kafka's ``"type": "data"``): versioned, no API key.

    On the wire (in a JoinGroup's metadata, a record's key or value) its body follows its
    version as an int16, the prefix Java's ``MessageUtil.toVersionPrefixedBytes`` writes.
    """

    name: str
    versions: Versions
    flexible: Versions
    notes: str
    message: MessageSpec = field(repr=False)


# ---------------------------------------------------------------------------
# The DSL parser
# ---------------------------------------------------------------------------

_NATURAL_DEFAULTS: dict[str, Any] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0,
    "float64": 0.0, "bool": False, "string": "", "bytes": b"", "records": None,
    "uuid": uuid.UUID(int=0),
}

_LINE = re.compile(r"^(?P<indent> *)(?P<name>[a-z][a-z0-9_]*)\s+(?P<type>(\[\])?[A-Za-z][A-Za-z0-9]*)(?P<rest>.*)$")


def _parse_default(text: str, ftype: str, where: str) -> Any:
    if text == "null":
        return None
    try:
        if ftype in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            return int(text, 0)
        if ftype == "float64":
            return float(text)
    except ValueError:
        raise SpecError(f"{where}: bad {ftype} default {text!r}") from None
    if ftype == "bool":
        if text not in ("true", "false"):
            raise SpecError(f"{where}: bool default must be true or false, not {text!r}")
        return text == "true"
    if ftype == "string" and len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    raise SpecError(f"{where}: unsupported default {text!r} for {ftype}")


def _parse_line(line: str, where: str) -> tuple[int, Field]:
    m = _LINE.match(line)
    if m is None:
        raise SpecError(f"{where}: cannot parse {line.strip()!r}")
    name, ftype = m["name"], m["type"]
    elem = ftype.removeprefix("[]")
    if elem[0].islower() and elem not in PRIMITIVE_TYPES:
        raise SpecError(f"{where}: unknown type {ftype!r}")
    versions = ALL_VERSIONS
    nullable = NO_VERSIONS
    nullable_all = False
    tag = None
    default: Any = _UNSET
    ignorable = False
    for tok in m["rest"].split():
        if tok.startswith("v") and tok[1:2].isdigit():
            versions = Versions.parse(tok)
        elif tok == "null":
            nullable_all = True
        elif tok.startswith("null="):
            nullable = Versions.parse(tok[5:])
        elif tok.startswith("tag="):
            tag = int(tok[4:])
        elif tok.startswith("default="):
            default = _parse_default(tok[8:], elem if not ftype.startswith("[]") else "array", where)
        elif tok == "ignorable":
            ignorable = True
        else:
            raise SpecError(f"{where}: unknown token {tok!r} in {line.strip()!r}")
    if nullable_all:
        nullable = versions
    if default is _UNSET:
        if ftype.startswith("[]"):
            default = EMPTY_ARRAY
        elif elem not in PRIMITIVE_TYPES:
            default = DEFAULT_STRUCT
        else:
            default = _NATURAL_DEFAULTS[elem]
    elif default is None and not nullable:
        raise SpecError(f"{where}: {name} defaults to null but is never nullable")
    return len(m["indent"]), Field(name, ftype, versions, nullable, tag, default, ignorable)


def parse_fields(text: str, where: str = "<dsl>") -> tuple[Field, ...]:
    """Parse one DSL block into a tuple of fields.

    Raises:
        SpecError: a line does not parse, the indentation is inconsistent, a struct has
            no fields (and was not defined earlier in the block), or a struct name is
            defined twice with different fields.
    """
    rows: list[tuple[int, Field]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if line.strip():
            rows.append(_parse_line(line, f"{where} line {n}"))
    if not rows:
        return ()
    base = rows[0][0]
    structs: dict[str, tuple[Field, ...]] = {}

    def build(i: int, depth: int) -> tuple[list[Field], int]:
        out: list[Field] = []
        while i < len(rows):
            indent, f = rows[i]
            level, odd = divmod(indent - base, 2)
            if odd or level > depth:
                raise SpecError(f"{where}: bad indentation at field {f.name!r}")
            if level < depth:
                break
            i += 1
            children: list[Field] = []
            if i < len(rows) and rows[i][0] > indent:
                children, i = build(i, depth + 1)
            sname = f.struct_name
            if sname is None:
                if children:
                    raise SpecError(f"{where}: primitive field {f.name!r} has children")
            elif children:
                kids = tuple(children)
                if structs.get(sname, kids) != kids:
                    raise SpecError(f"{where}: struct {sname} defined twice differently")
                structs[sname] = kids
                f = Field(f.name, f.type, f.versions, f.nullable, f.tag, f.default, f.ignorable, kids)
            elif sname in structs:
                f = Field(f.name, f.type, f.versions, f.nullable, f.tag, f.default, f.ignorable, structs[sname])
            else:
                raise SpecError(f"{where}: struct {sname} of {f.name!r} has no fields")
            out.append(f)
        return out, i

    fields, end = build(0, 0)
    if end != len(rows):
        raise SpecError(f"{where}: bad indentation near {rows[end][1].name!r}")
    return tuple(fields)


def _check_message(msg: MessageSpec) -> None:
    def walk(fields: tuple[Field, ...], path: str) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise SpecError(f"{path}: duplicate field names")
        tags: dict[int, Field] = {}
        for f in fields:
            if f.tag is not None:
                if f.versions & msg.versions & msg.flexible != f.versions & msg.versions:
                    raise SpecError(f"{path}.{f.name}: tagged in a non-flexible version")
                other = tags.get(f.tag)
                if other is not None and other.versions & f.versions:
                    raise SpecError(f"{path}.{f.name}: tag {f.tag} used twice")
                tags[f.tag] = f
            if f.fields:
                walk(f.fields, f"{path}.{f.name}")

    walk(msg.fields, msg.name)


def api(
    key: int,
    name: str,
    versions: str,
    *,
    flexible: str,
    route: Route,
    notes: str,
    request: str,
    response: str,
) -> Api:
    """Declare one API: the table's entry constructor.

    Args:
        key: Kafka's API key.
        name: Kafka's API name (``"Produce"``); messages are ``<name>Request`` and
            ``<name>Response``.
        versions: the valid versions, e.g. ``"0-11"``.
        flexible: the first flexible version as ``"9+"``, or ``"none"``.
        route: where requests go.
        notes: version notes with KIP numbers.
        request: the request's fields in the DSL.
        response: the response's fields in the DSL.

    Raises:
        SpecError: the entry is malformed.
    """
    v = Versions.parse(versions)
    flex = Versions.parse(flexible)
    msgs = []
    for kind, text in (("Request", request), ("Response", response)):
        mname = name + kind
        msg = MessageSpec(mname, key, kind == "Request", v, flex, parse_fields(text, mname))
        _check_message(msg)
        msgs.append(msg)
    return Api(key, name, v, flex, route, _dedent(notes), msgs[0], msgs[1])


def _dedent(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines()]
    return "\n".join(lines)


def data(name: str, versions: str, *, flexible: str, notes: str, fields: str) -> Data:
    """Declare one data message: the table's constructor for Kafka's ``"type": "data"``.

    Args:
        name: Kafka's message name (``"OffsetCommitValue"``), also the class's name.
        versions: the valid versions, e.g. ``"0-4"``.
        flexible: the first flexible version as ``"4+"``, or ``"none"``.
        notes: version notes with KIP numbers.
        fields: the fields in the DSL.

    Raises:
        SpecError: the entry is malformed.
    """
    v = Versions.parse(versions)
    flex = Versions.parse(flexible)
    msg = MessageSpec(name, -1, False, v, flex, parse_fields(fields, name), is_data=True)
    _check_message(msg)
    return Data(name, v, flex, _dedent(notes), msg)
