"""Kafka's primitive wire types: fixed-width integers, strings, bytes, arrays, tagged fields.

Each type is an object with ``write(w, value)`` and ``read(buf, pos) -> (value, pos)``:
``w`` is any callable that accepts ``bytes`` (usually ``list.append``, joined once at the
end), ``buf`` is a ``bytes``-like object. These are the readable reference for the wire
forms; :mod:`kproto.protocol.schema` compiles messages into specialised code that inlines
the same forms (a test checks the two agree byte for byte).

Facts (Kafka protocol guide, "Protocol Primitive Types"; KIP-482 for the compact forms):

* Integers are big-endian two's complement; BOOLEAN is one byte, any non-zero is true.
* STRING / BYTES: INT16 / INT32 length then the bytes; NULLABLE_* use length -1 for null.
* COMPACT_STRING / COMPACT_BYTES (flexible versions): UNSIGNED_VARINT of length + 1; 0 is
  null in the nullable forms. ARRAY uses INT32 count (-1 null); COMPACT_ARRAY count + 1.
* UUID is 16 bytes; the zero UUID is Kafka's "no id".
* RECORDS is NULLABLE_BYTES (COMPACT_NULLABLE_BYTES when flexible) holding a record set.
  kproto keeps it opaque: :data:`RECORDS` reads it as a zero-copy :class:`memoryview`
  into the buffer being decoded (so keep or copy it before that buffer changes), and
  writes any bytes-like value. The record codec (:mod:`kproto.codec`) decodes it.
* TAGGED_FIELDS (flexible versions, at the end of every struct): UNSIGNED_VARINT count,
  then for each field in ascending tag order UNSIGNED_VARINT tag, UNSIGNED_VARINT size
  and ``size`` bytes.

Strings are decoded as UTF-8 with invalid bytes replaced by U+FFFD, as Java's
``new String(bytes, UTF_8)`` does: a peer's odd client id is not a protocol violation.

Varints come from :mod:`kproto.codec` (the project's one implementation); their
``CorruptRecordError`` and every other malformation surface here as
:class:`~kproto.errors.ProtocolError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from kproto.codec import (
    decode_uvarint,
    decode_varint,
    decode_varlong,
    encode_uvarint,
    encode_varint,
    encode_varlong,
)
from kproto.errors import CorruptRecordError, ProtocolError

__all__ = [
    "Writer",
    "WireType",
    "Fixed",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT16",
    "UINT32",
    "FLOAT64",
    "BOOLEAN",
    "UUID",
    "ZERO_UUID",
    "UNSIGNED_VARINT",
    "VARINT",
    "VARLONG",
    "STRING",
    "NULLABLE_STRING",
    "COMPACT_STRING",
    "COMPACT_NULLABLE_STRING",
    "BYTES",
    "NULLABLE_BYTES",
    "COMPACT_BYTES",
    "COMPACT_NULLABLE_BYTES",
    "RECORDS",
    "COMPACT_RECORDS",
    "TAGGED_FIELDS",
    "String",
    "Bytes",
    "Records",
    "Array",
    "TaggedFields",
    "write_tagged_fields",
    "UVARINT_1",
    "read_uvarint",
]

#: Anything that takes the next piece of output, e.g. ``parts.append``.
Writer = Callable[[bytes], Any]

ZERO_UUID = uuid.UUID(int=0)

#: ``UVARINT_1[n]`` is the one-byte unsigned varint for ``n < 128``: the common case of
#: every compact length and tag count, worth a table lookup instead of a call.
UVARINT_1: tuple[bytes, ...] = tuple(bytes((i,)) for i in range(128))


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """Read an UNSIGNED_VARINT at ``buf[pos]``, returning ``(value, new position)``.

    Raises:
        ProtocolError: truncated or wider than 32 bits.
    """
    try:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        return decode_uvarint(buf, pos)
    except (IndexError, CorruptRecordError) as exc:
        raise ProtocolError(f"bad unsigned varint at byte {pos}: {exc}") from exc


def _uvarint(n: int) -> bytes:
    return UVARINT_1[n] if n < 128 else encode_uvarint(n)


def _need(buf: Any, end: int, what: str) -> None:
    if end > len(buf):
        raise ProtocolError(f"{what} runs past the end of the buffer ({end} > {len(buf)})")


class WireType:
    """A primitive wire type: ``write(w, value)`` and ``read(buf, pos) -> (value, pos)``."""

    name = "?"

    def write(self, w: Writer, value: Any) -> None:
        raise NotImplementedError

    def read(self, buf: Any, pos: int) -> tuple[Any, int]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


class Fixed(WireType):
    """A fixed-width type read and written with one :mod:`struct` format.

    Attributes:
        fmt: the struct format character(s), without the byte-order prefix.
        size: width in bytes.
    """

    def __init__(self, name: str, fmt: str) -> None:
        self.name = name
        self.fmt = fmt
        self._s = struct.Struct(">" + fmt)
        self.size = self._s.size

    def write(self, w: Writer, value: Any) -> None:
        w(self._s.pack(value))

    def read(self, buf: Any, pos: int) -> tuple[Any, int]:
        try:
            (v,) = self._s.unpack_from(buf, pos)
        except struct.error as exc:
            raise ProtocolError(f"{self.name} at byte {pos}: {exc}") from exc
        return v, pos + self.size


INT8 = Fixed("int8", "b")
INT16 = Fixed("int16", "h")
INT32 = Fixed("int32", "i")
INT64 = Fixed("int64", "q")
UINT16 = Fixed("uint16", "H")
UINT32 = Fixed("uint32", "I")
FLOAT64 = Fixed("float64", "d")
#: One byte; reads any non-zero byte as True (Java: ``readByte() != 0``).
BOOLEAN = Fixed("bool", "?")


class _Uuid(WireType):
    name = "uuid"
    size = 16

    def write(self, w: Writer, value: uuid.UUID) -> None:
        w(value.bytes)

    def read(self, buf: Any, pos: int) -> tuple[uuid.UUID, int]:
        end = pos + 16
        _need(buf, end, "uuid")
        return uuid.UUID(bytes=bytes(buf[pos:end])), end


UUID = _Uuid()


class _Varint(WireType):
    def __init__(self, name: str, enc: Callable[[int], bytes], dec: Callable[[Any, int], tuple[int, int]]):
        self.name = name
        self._enc = enc
        self._dec = dec

    def write(self, w: Writer, value: int) -> None:
        w(self._enc(value))

    def read(self, buf: Any, pos: int) -> tuple[int, int]:
        try:
            return self._dec(buf, pos)
        except CorruptRecordError as exc:
            raise ProtocolError(f"{self.name} at byte {pos}: {exc}") from exc


UNSIGNED_VARINT = _Varint("unsigned varint", encode_uvarint, decode_uvarint)
VARINT = _Varint("varint", encode_varint, decode_varint)
VARLONG = _Varint("varlong", encode_varlong, decode_varlong)

_PACK_H = struct.Struct(">h").pack
_PACK_I = struct.Struct(">i").pack
_UNPACK_H = struct.Struct(">h").unpack_from
_UNPACK_I = struct.Struct(">i").unpack_from


class _Sized(WireType):
    """Shared length-prefix logic of strings, bytes and records."""

    def __init__(self, name: str, compact: bool, nullable: bool, wide: bool) -> None:
        self.name = name
        self.compact = compact
        self.nullable = nullable
        self._wide = wide  # INT32 length (bytes) rather than INT16 (strings)

    def _write_len(self, w: Writer, n: int | None) -> None:
        if self.compact:
            w(b"\x00" if n is None else _uvarint(n + 1))
        elif n is None:
            w(b"\xff\xff\xff\xff" if self._wide else b"\xff\xff")
        else:
            try:
                w(_PACK_I(n) if self._wide else _PACK_H(n))
            except struct.error as exc:
                raise ValueError(f"{self.name} too long: {n} bytes") from exc

    def _read_len(self, buf: Any, pos: int) -> tuple[int | None, int]:
        if self.compact:
            n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            try:
                (n,) = (_UNPACK_I if self._wide else _UNPACK_H)(buf, pos)
            except struct.error as exc:
                raise ProtocolError(f"{self.name} length at byte {pos}: {exc}") from exc
            pos += 4 if self._wide else 2
        if n < 0:
            if n == -1 and self.nullable:
                return None, pos
            raise ProtocolError(f"{self.name}: invalid length {n} at byte {pos}")
        _need(buf, pos + n, self.name)
        return n, pos


class String(_Sized):
    """STRING and its nullable and compact forms (UTF-8)."""

    def __init__(self, compact: bool = False, nullable: bool = False) -> None:
        name = ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + "STRING"
        super().__init__(name, compact, nullable, wide=False)

    def write(self, w: Writer, value: str | None) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError(f"{self.name} cannot be null")
            self._write_len(w, None)
            return
        data = value.encode()
        self._write_len(w, len(data))
        w(data)

    def read(self, buf: Any, pos: int) -> tuple[str | None, int]:
        n, pos = self._read_len(buf, pos)
        if n is None:
            return None, pos
        return bytes(buf[pos : pos + n]).decode("utf-8", "replace"), pos + n


class Bytes(_Sized):
    """BYTES and its nullable and compact forms; reads return ``bytes`` (a copy)."""

    def __init__(self, compact: bool = False, nullable: bool = False) -> None:
        name = ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + "BYTES"
        super().__init__(name, compact, nullable, wide=True)

    def write(self, w: Writer, value: Any) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError(f"{self.name} cannot be null")
            self._write_len(w, None)
            return
        self._write_len(w, len(value))
        w(value)

    def read(self, buf: Any, pos: int) -> tuple[bytes | None, int]:
        n, pos = self._read_len(buf, pos)
        if n is None:
            return None, pos
        return bytes(buf[pos : pos + n]), pos + n


class Records(Bytes):
    """RECORDS: nullable bytes holding a record set, read as a zero-copy memoryview."""

    def __init__(self, compact: bool = False) -> None:
        super().__init__(compact, nullable=True)
        self.name = "COMPACT_RECORDS" if compact else "RECORDS"

    def read(self, buf: Any, pos: int) -> tuple[memoryview | None, int]:  # type: ignore[override]
        n, pos = self._read_len(buf, pos)
        if n is None:
            return None, pos
        return memoryview(buf)[pos : pos + n], pos + n


STRING = String()
NULLABLE_STRING = String(nullable=True)
COMPACT_STRING = String(compact=True)
COMPACT_NULLABLE_STRING = String(compact=True, nullable=True)
BYTES = Bytes()
NULLABLE_BYTES = Bytes(nullable=True)
COMPACT_BYTES = Bytes(compact=True)
COMPACT_NULLABLE_BYTES = Bytes(compact=True, nullable=True)
RECORDS = Records()
COMPACT_RECORDS = Records(compact=True)


class Array(WireType):
    """ARRAY / COMPACT_ARRAY of another wire type, optionally nullable; values are lists."""

    def __init__(self, item: WireType, compact: bool = False, nullable: bool = False) -> None:
        self.item = item
        self.compact = compact
        self.nullable = nullable
        self.name = f"{'COMPACT_' if compact else ''}{'NULLABLE_' if nullable else ''}ARRAY[{item.name}]"

    def write(self, w: Writer, value: list | None) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError(f"{self.name} cannot be null")
            w(b"\x00" if self.compact else b"\xff\xff\xff\xff")
            return
        w(_uvarint(len(value) + 1) if self.compact else _PACK_I(len(value)))
        for item in value:
            self.item.write(w, item)

    def read(self, buf: Any, pos: int) -> tuple[list | None, int]:
        if self.compact:
            n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            n, pos = INT32.read(buf, pos)
        if n < 0:
            if n == -1 and self.nullable:
                return None, pos
            raise ProtocolError(f"{self.name}: invalid count {n} at byte {pos}")
        if n > len(buf) - pos:  # every element takes at least one byte
            raise ProtocolError(f"{self.name}: count {n} exceeds the {len(buf) - pos} bytes left")
        out = []
        for _ in range(n):
            item, pos = self.item.read(buf, pos)
            out.append(item)
        return out, pos


def write_tagged_fields(w: Writer, known: list[tuple[int, bytes]] | None, unknown: dict[int, Any] | None) -> None:
    """Write a TAGGED_FIELDS section from encoded known fields and preserved unknown ones.

    Args:
        w: the writer.
        known: ``(tag, encoded value)`` pairs of the known tagged fields to write.
        unknown: ``{tag: raw bytes}`` kept from a decode (``unknown_tagged_fields``).

    Raises:
        ValueError: a tag appears twice, or is negative.
    """
    fields = list(known or ())
    if unknown:
        fields.extend(unknown.items())
        fields.sort(key=lambda kv: kv[0])
        for i in range(1, len(fields)):
            if fields[i][0] == fields[i - 1][0]:
                raise ValueError(f"tagged field {fields[i][0]} given twice (known and unknown)")
    w(_uvarint(len(fields)))
    for tag, data in fields:
        if tag < 0:
            raise ValueError(f"negative tag {tag}")
        w(_uvarint(tag))
        w(_uvarint(len(data)))
        w(data)


class TaggedFields(WireType):
    """A TAGGED_FIELDS section as a plain ``{tag: bytes}`` dict (values left undecoded)."""

    name = "TAGGED_FIELDS"

    def write(self, w: Writer, value: dict[int, Any] | None) -> None:
        write_tagged_fields(w, None, value)

    def read(self, buf: Any, pos: int) -> tuple[dict[int, bytes], int]:
        n, pos = read_uvarint(buf, pos)
        if n > len(buf) - pos:
            raise ProtocolError(f"tagged field count {n} exceeds the bytes left")
        out: dict[int, bytes] = {}
        for _ in range(n):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            _need(buf, pos + size, f"tagged field {tag}")
            out[tag] = bytes(buf[pos : pos + size])
            pos += size
        return out, pos


TAGGED_FIELDS = TaggedFields()
