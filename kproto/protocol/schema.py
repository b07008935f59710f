"""The one generic codec: compiles the schema table into message classes and fast codecs.

Theory of operation
-------------------
The table (:mod:`kproto.protocol.messages`, written with :mod:`kproto.protocol.spec`) says,
per message, which fields exist in which versions. Walking that tree for every message
would cost a dict lookup and a version test per field per message, so instead each
``(message, version, direction)`` is compiled once, on first use, into a specialised
Python function: the generator (:mod:`kproto.protocol._codegen`) walks the table for that
version only and emits straight-line source (fixed-width runs packed by one
:class:`struct.Struct`, nested loops for arrays, inline one-byte varints), which is
``exec``-ed and cached on the :class:`MessageCodec`. The source is registered with :mod:`linecache`, so tracebacks
through generated code show the generated lines, and ``codec.encoder(v).source`` shows
them on demand. Only versions actually used get compiled; likewise each class's keyword
``__init__`` is generated on its first instantiation.

Message objects
---------------
Every struct of a message becomes a class: the top level is a :class:`Message`
(``ProduceRequest``), or a :class:`DataMessage` for Kafka's data messages
(``OffsetCommitValue``, whose bytes carry their version as an int16 prefix), nested structs
are :class:`Struct` s reachable as attributes of it (``ProduceRequest.TopicProduceData``). One class serves every version: its slots are the
union of the fields of all versions, each defaulting to the table's default, and a field
that a version lacks decodes to its default. Constructors are keyword-only and do not
validate (they run on hot paths); the encoder reports bad values instead. Instances are
mutable (clients and the broker fill them in step by step), compare by value, and carry
``unknown_tagged_fields``: ``None``, or ``{tag: bytes}`` for tagged fields this table does
not know, kept on decode and written back on encode (KIP-482 forward compatibility).

Values: integers are ``int``, ``bool`` is ``bool``, ``float64`` is ``float``, strings are
``str`` (decoded leniently, see :mod:`kproto.protocol.types`), ``bytes`` fields decode to
``bytes``, ``records`` to a zero-copy ``memoryview`` of the decoded buffer, ``uuid`` to
:class:`uuid.UUID`, arrays to ``list``. Any bytes-like value with one-byte items (``bytes``,
``bytearray``, a plain ``memoryview``) encodes as bytes or records.

Fields absent from the encoded version
--------------------------------------
Kafka's Java generator rule, followed here: if a field does not exist in the version
being encoded and holds a non-default value, the field is dropped silently when the table
marks it ``ignorable``, and otherwise encoding raises :class:`UnsupportedFieldError` (Java
throws ``UnsupportedVersionException``). Tagged fields equal to their default are not
written at all, as in Java.

Errors
------
Encoding our own objects raises :class:`EncodeError` (a ``ValueError``) naming the message,
version and cause. Decoding a peer's bytes raises only
:class:`~kproto.errors.ProtocolError`: generated code checks every length against the
buffer, and the boundary in :meth:`MessageCodec.decode_from` converts anything else the
decoder trips on (``struct.error``, ``IndexError``, a corrupt varint) into it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, ClassVar, Self

from kproto.errors import CorruptRecordError, KafkaError, ProtocolError
from kproto.protocol._codegen import Generator, default_expr, exec_source
from kproto.protocol.spec import DEFAULT_STRUCT, EMPTY_ARRAY, Field, MessageSpec, Versions

__all__ = [
    "Struct",
    "Message",
    "DataMessage",
    "MessageCodec",
    "EncodeError",
    "UnsupportedFieldError",
    "build_message",
    "build_data_message",
    "join_parts",
    "read_version",
]


class EncodeError(KafkaError, ValueError):
    """A message object cannot be encoded: a wrong type, an out-of-range value, a null
    in a non-nullable field. Our misuse, raised before anything is sent."""


class UnsupportedFieldError(EncodeError):
    """A field holds a non-default value in a version that lacks it and is not ignorable.

    Attributes:
        path: the field's dotted path, e.g. ``"ProduceRequest.transactional_id"``.
        version: the version being encoded.
    """

    def __init__(self, path: str, version: int) -> None:
        super().__init__(f"{path} has a non-default value but does not exist in version {version}")
        self.path = path
        self.version = version

    def __reduce__(self) -> tuple[Any, ...]:  # keep the fields across pickling
        return (type(self), (self.path, self.version))


# Exceptions a compiled decoder can raise on garbage; all become ProtocolError.
_DECODE_ERRORS = (struct.error, IndexError, ValueError, CorruptRecordError, OverflowError, MemoryError)
# Exceptions a compiled encoder raises on bad values; all become EncodeError.
_ENCODE_ERRORS = (struct.error, AttributeError, TypeError, ValueError, OverflowError)


def _short_repr(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value) > 32:
        return f"<{type(value).__name__} of {len(value)} bytes>"
    return repr(value)


class Struct:
    """Base of every generated struct class: value equality, a readable repr, ``to_dict``."""

    __slots__ = ("unknown_tagged_fields",)
    #: ``{tag: bytes}`` of the tagged fields the table does not know (KIP-482), or None.
    unknown_tagged_fields: dict[int, bytes] | None
    #: The struct's field names, in table order.
    _fields: ClassVar[tuple[str, ...]] = ()

    # Mutable, so not hashable.
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for name in self._fields:
            if getattr(self, name) != getattr(other, name):
                return False
        return (self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        parts = [f"{n}={_short_repr(getattr(self, n))}" for n in self._fields]
        if self.unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")
        return f"{type(self).__qualname__}({', '.join(parts)})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle by value (Spark ships messages to executors); zero-copy record views
        # become bytes, since a memoryview cannot be pickled.
        values = tuple(_detach(getattr(self, n)) for n in self._fields)
        return (_rebuild, (type(self), values, self.unknown_tagged_fields))

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a dict, nested structs as dicts (for logs and tests)."""

        def conv(v: Any) -> Any:
            if isinstance(v, Struct):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, memoryview):
                return bytes(v)
            return v

        return {n: conv(getattr(self, n)) for n in self._fields}


def _detach(value: Any) -> Any:
    return bytes(value) if isinstance(value, memoryview) else value


def _rebuild(cls: type, values: tuple[Any, ...], unknown: dict[int, bytes] | None) -> Struct:
    obj = object.__new__(cls)
    for name, value in zip(cls._fields, values, strict=True):  # type: ignore[attr-defined]
        setattr(obj, name, value)
    obj.unknown_tagged_fields = unknown
    return obj


class _Body(Struct):
    """What request, response and data bodies share: versions and the body's codec."""

    __slots__ = ()
    #: The versions the table covers.
    VERSIONS: ClassVar[Versions]
    #: The flexible (KIP-482) versions.
    FLEXIBLE: ClassVar[Versions]
    _codec: ClassVar[MessageCodec]

    def encode(self, version: int) -> bytes:
        """Encode the body alone (no header, size or version prefix) at ``version``.

        Raises:
            EncodeError: a value cannot be encoded at this version.
            ValueError: the table has no such version.
        """
        return self._codec.encode(self, version)

    @classmethod
    def decode(cls, data: Any, version: int) -> Self:
        """Decode a whole body (no header, size or version prefix) at ``version``.

        Raises:
            ProtocolError: the bytes are not exactly one valid body of this version.
        """
        return cls._codec.decode(data, version)


class Message(_Body):
    """Base of request and response body classes (``ProduceRequest`` ...)."""

    __slots__ = ()
    #: Kafka's API key, e.g. 0 for Produce.
    API_KEY: ClassVar[int]
    #: Kafka's API name, e.g. ``"Produce"``.
    API_NAME: ClassVar[str]
    #: True for requests, False for responses.
    IS_REQUEST: ClassVar[bool]


_VERSION_PREFIX = struct.Struct(">h")


def read_version(data: Any) -> int:
    """The version of a data message: the int16 its bytes start with.

    Raises:
        ProtocolError: fewer than two bytes.
    """
    if len(data) < _VERSION_PREFIX.size:
        raise ProtocolError(f"{len(data)} bytes hold no int16 version")
    return _VERSION_PREFIX.unpack_from(data)[0]


class DataMessage(_Body):
    """Base of data message classes (``ConsumerProtocolSubscription``, ``OffsetCommitValue``...).

    Kafka's ``"type": "data"`` messages have no API key and travel inside other bytes (a
    JoinGroup's member metadata, a record's key or value), each preceded by its version
    as an int16: :meth:`encode_versioned` and :meth:`decode_versioned` write and read that
    prefix (Java's ``MessageUtil.toVersionPrefixedBytes`` and the readers of
    ``ConsumerProtocol`` and ``GroupMetadataManager``); :meth:`encode` and :meth:`decode`
    handle the body alone.
    """

    __slots__ = ()
    #: Kafka's message name, e.g. ``"OffsetCommitValue"``.
    NAME: ClassVar[str]

    def encode_versioned(self, version: int) -> bytes:
        """The int16 ``version`` followed by the body at ``version``.

        Raises:
            EncodeError: a value cannot be encoded at this version.
            ValueError: the table has no such version.
        """
        parts: list[Any] = [_VERSION_PREFIX.pack(version)]
        self._codec.encode_into(self, version, parts.append)
        return join_parts(parts)

    @classmethod
    def decode_versioned(cls, data: Any, *, newer_as_newest: bool = False) -> tuple[int, DataMessage]:
        """Read the int16 version, then the body at that version; return both.

        Bytes after the body are ignored, as Java's generated readers ignore them (they
        read their fields and stop). With ``newer_as_newest``, a version above the newest
        the table knows is read as the newest: Kafka's rule for messages whose later
        versions may only append fields (``ConsumerProtocol.checkSubscriptionVersion``).
        The version returned is the one written.

        Raises:
            ProtocolError: no version, a version the table does not cover, or a body that
                is not valid at it.
        """
        b = data if type(data) is bytes else bytes(data)
        version = read_version(b)
        at = version
        if newer_as_newest and version > cls.VERSIONS.hi:
            at = cls.VERSIONS.hi
        if at not in cls.VERSIONS:
            raise ProtocolError(f"{cls.NAME} version {version} is not supported (the table has v{cls.VERSIONS})")
        obj, _ = cls._codec.decode_from(b, _VERSION_PREFIX.size, at)
        return version, obj


# ---------------------------------------------------------------------------
# Class generation
# ---------------------------------------------------------------------------


def _type_doc(f: Field) -> str:
    bits = [f.type, f"v{f.versions}"]
    if f.nullable:
        bits.append(f"nullable v{f.nullable}")
    if f.tag is not None:
        bits.append(f"tag {f.tag}")
    if f.default not in (EMPTY_ARRAY, DEFAULT_STRUCT):
        bits.append(f"default {f.default!r}")
    if f.ignorable:
        bits.append("ignorable")
    return ", ".join(bits)


def _compile_init(cls: type, fields: tuple[Field, ...], classes: dict[str, type]) -> Callable[..., None]:
    """Generate the keyword-only ``__init__`` of a struct class (defaults from the table)."""
    ns: dict[str, Any] = {"_EA": EMPTY_ARRAY, "_DS": DEFAULT_STRUCT}
    params, body = [], []
    for f in fields:
        if f.default is EMPTY_ARRAY:
            params.append(f"{f.name}=_EA")
            body.append(f"    self.{f.name} = [] if {f.name} is _EA else {f.name}")
        elif f.default is DEFAULT_STRUCT:
            params.append(f"{f.name}=_DS")
            body.append(f"    self.{f.name} = {default_expr(f, ns, classes)} if {f.name} is _DS else {f.name}")
        else:
            params.append(f"{f.name}={default_expr(f, ns, classes)}")
            body.append(f"    self.{f.name} = {f.name}")
    params.append("unknown_tagged_fields=None")
    body.append("    self.unknown_tagged_fields = unknown_tagged_fields")
    src = f"def __init__(self, *, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec_source(src, ns, f"{cls.__qualname__}.__init__")
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _make_class(name: str, qualname: str, fields: tuple[Field, ...], base: type, classes: dict[str, type], doc: str) -> type:
    # The real __init__ is generated on first instantiation: compiling ~230 of them at
    # import would cost most of the import time, and a program uses a handful of messages.
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        real = _compile_init(cls, fields, classes)
        cls.__init__ = real  # type: ignore[misc]
        real(self, *args, **kwargs)

    lines = [doc, "", "Fields:"] + [f"    {f.name}: {_type_doc(f)}" for f in fields]
    cls = type(
        name,
        (base,),
        {
            "__slots__": tuple(f.name for f in fields),
            "_fields": tuple(f.name for f in fields),
            "__init__": __init__,
            "__qualname__": qualname,
            "__module__": "kproto.protocol.messages",
            "__doc__": "\n".join(lines),
        },
    )
    return cls


def _build(spec: MessageSpec, base: type, doc: str) -> type:
    """Generate the classes of one message (the top one based on ``base``) and its codec."""
    classes: dict[str, type] = {}

    def visit(fields: tuple[Field, ...]) -> None:
        for f in fields:
            sname = f.struct_name
            if sname is not None and sname not in classes:
                visit(f.fields)  # children first: defaults instantiate them
                classes[sname] = _make_class(
                    sname, f"{spec.name}.{sname}", f.fields, Struct, classes, f"A {sname} struct of {spec.name}."
                )

    visit(spec.fields)
    top = _make_class(spec.name, spec.name, spec.fields, base, classes, doc)
    for sname, cls in classes.items():
        setattr(top, sname, cls)
    top.VERSIONS = spec.versions  # type: ignore[attr-defined]
    top.FLEXIBLE = spec.flexible  # type: ignore[attr-defined]
    top._codec = MessageCodec(spec, top, classes)  # type: ignore[attr-defined]
    return top


def build_message(spec: MessageSpec) -> type[Message]:
    """Generate the classes of one request or response and attach its :class:`MessageCodec`.

    Returns:
        The top-level class; nested struct classes are its attributes.
    """
    kind = "request" if spec.is_request else "response"
    top = _build(
        spec, Message,
        f"The {spec.name[: -len(kind)]} {kind} body (API key {spec.api_key}, v{spec.versions}, flexible v{spec.flexible}).",
    )
    top.API_KEY = spec.api_key  # type: ignore[attr-defined]
    top.API_NAME = spec.name[: -len(kind)]  # type: ignore[attr-defined]
    top.IS_REQUEST = spec.is_request  # type: ignore[attr-defined]
    return top  # type: ignore[return-value]


def build_data_message(spec: MessageSpec) -> type[DataMessage]:
    """Generate the classes of one data message (Kafka's ``"type": "data"``) and its codec.

    Returns:
        The top-level class, a :class:`DataMessage`; nested struct classes are its attributes.
    """
    top = _build(
        spec, DataMessage,
        f"Kafka's {spec.name} data message (v{spec.versions}, flexible v{spec.flexible}); on the wire "
        "its version comes first, as an int16 (encode_versioned, decode_versioned).",
    )
    top.NAME = spec.name  # type: ignore[attr-defined]
    return top  # type: ignore[return-value]


def join_parts(parts: list[Any]) -> bytes:
    """``b"".join(parts)``, reporting a non-bytes value in a bytes field as :class:`EncodeError`.

    The encoders pass bytes and records values through untouched (no per-field type test
    on the hot path), so a ``str`` given for a bytes field first fails here.
    """
    try:
        return b"".join(parts)
    except TypeError as exc:
        raise EncodeError(f"a bytes or records field holds a value that is not bytes-like: {exc}") from exc


def _has_records(fields: tuple[Field, ...]) -> bool:
    return any(f.element_type == "records" or _has_records(f.fields) for f in fields)


class MessageCodec:
    """Encoders and decoders of one message, compiled per version on first use.

    Attributes:
        spec: the table entry.
        cls: the generated top-level class.
    """

    def __init__(self, spec: MessageSpec, cls: type, classes: dict[str, type]) -> None:
        self.spec = spec
        self.cls = cls
        self._classes = classes
        self._enc: dict[int, Callable[[Any, Callable[[bytes], Any]], None]] = {}
        self._dec: dict[int, Callable[[bytes, int], tuple[Any, int]]] = {}
        self._records = _has_records(spec.fields)

    def _check_version(self, version: int) -> None:
        if version not in self.spec.versions:
            raise ValueError(f"{self.spec.name} has no version {version} (the table has v{self.spec.versions})")

    def encoder(self, version: int) -> Callable[[Any, Callable[[bytes], Any]], None]:
        """Return the compiled ``encode(obj, write)`` of ``version`` (compiling it once)."""
        fn = self._enc.get(version)
        if fn is None:
            self._check_version(version)
            g = Generator(self.spec, version, self._classes, self.cls, UnsupportedFieldError)
            g.enc_struct(self.spec.fields, "o", "w", self.spec.name)
            fn = self._enc[version] = g.build("encode", "o, w", "return None")
        return fn

    def decoder(self, version: int) -> Callable[[bytes, int], tuple[Any, int]]:
        """Return the compiled ``decode(buf, pos) -> (obj, pos)`` of ``version``."""
        fn = self._dec.get(version)
        if fn is None:
            self._check_version(version)
            g = Generator(self.spec, version, self._classes, self.cls, UnsupportedFieldError)
            g.emit("L = len(b)")
            if self._records:
                g.emit("m = _mv(b)")
            g.dec_struct(self.spec.fields, None, "o", self.spec.name)
            fn = self._dec[version] = g.build("decode", "b, p", "return o, p")
        return fn

    def encode_into(self, obj: Any, version: int, write: Callable[[bytes], Any]) -> None:
        """Encode ``obj`` at ``version``, passing the pieces to ``write`` (e.g. ``list.append``).

        Raises:
            EncodeError: a value cannot be encoded (the pieces written so far are garbage).
            ValueError: the table has no such version.
        """
        fn = self._enc.get(version) or self.encoder(version)
        if not isinstance(obj, self.cls):
            raise EncodeError(f"expected a {self.spec.name}, got {type(obj).__name__}")
        try:
            fn(obj, write)
        except EncodeError:
            raise
        except _ENCODE_ERRORS as exc:
            raise EncodeError(f"cannot encode {self.spec.name} v{version}: {exc}") from exc

    def encode(self, obj: Any, version: int) -> bytes:
        """Encode ``obj`` at ``version`` to bytes (body only). See :meth:`encode_into`."""
        parts: list[bytes] = []
        self.encode_into(obj, version, parts.append)
        return join_parts(parts)

    def decode_from(self, data: bytes, pos: int, version: int) -> tuple[Any, int]:
        """Decode one body starting at ``data[pos]``; return it and the position after it.

        ``data`` must be ``bytes`` (records decode as memoryviews into it).

        Raises:
            ProtocolError: the bytes are not a valid body of this version.
            ValueError: the table has no such version.
        """
        fn = self._dec.get(version) or self.decoder(version)
        try:
            return fn(data, pos)
        except ProtocolError:
            raise
        except _DECODE_ERRORS as exc:
            raise ProtocolError(f"malformed {self.spec.name} v{version}: {type(exc).__name__}: {exc}") from exc

    def decode(self, data: Any, version: int) -> Any:
        """Decode a whole body; trailing bytes are an error.

        Raises:
            ProtocolError: the bytes are not exactly one valid body of this version.
            ValueError: the table has no such version.
        """
        b = data if type(data) is bytes else bytes(data)
        obj, pos = self.decode_from(b, 0, version)
        if pos != len(b):
            raise ProtocolError(f"{len(b) - pos} trailing bytes after {self.spec.name} v{version}")
        return obj
