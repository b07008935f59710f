"""The code generator behind :mod:`kproto.protocol.schema`: table in, Python source out.

One :class:`Generator` walks one message of the table for one version and emits the
source of an encoder (``encode(o, w)``: ``o`` the object, ``w`` a writer such as
``list.append``) or a decoder (``decode(b, p) -> (obj, p)``: ``b`` immutable ``bytes``,
``p`` the start position). :class:`~kproto.protocol.schema.MessageCodec` runs it once per
version and caches the result; this module holds no state.

What the emitted code does, and why:

* consecutive fixed-width fields are packed and unpacked by one :class:`struct.Struct`
  (fewer calls per message);
* compact lengths and tag counts read their first byte inline and call the codec's
  varint decoder only when it has the continuation bit (nearly every length is < 128);
* every length and count is checked against the bytes left before slicing or allocating,
  so garbage fails fast with :class:`~kproto.errors.ProtocolError`, never with a silently
  short slice or a huge list;
* structs are built with ``object.__new__`` and plain attribute stores, not ``__init__``;
* records are sliced from a memoryview of the frame (zero-copy); other bytes are copied.
"""

from __future__ import annotations

import linecache
import struct
import uuid
from collections.abc import Callable
from typing import Any

from kproto.codec import decode_uvarint, encode_uvarint
from kproto.errors import ProtocolError
from kproto.protocol.spec import DEFAULT_STRUCT, EMPTY_ARRAY, Field, MessageSpec
from kproto.protocol.types import UVARINT_1, ZERO_UUID, read_uvarint, write_tagged_fields

__all__ = ["Generator", "default_expr", "exec_source", "FIXED_FORMATS"]

#: Struct format and width of each fixed-width primitive.
FIXED_FORMATS: dict[str, tuple[str, int]] = {
    "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
    "uint16": ("H", 2), "uint32": ("I", 4), "float64": ("d", 8), "bool": ("?", 1),
}
_FIXED_FMT = FIXED_FORMATS


def default_expr(f: Field, ns: dict[str, Any], classes: dict[str, type]) -> str:
    """Source for a fresh default value of ``f`` (a constant, ``[]`` or ``Cls()``)."""
    d = f.default
    if d is EMPTY_ARRAY:
        return "[]"
    if d is DEFAULT_STRUCT:
        name = f"_C_{f.struct_name}"
        ns[name] = classes[f.struct_name]  # type: ignore[index]
        return f"{name}()"
    if d is None or isinstance(d, (bool, int, float, str, bytes)):
        return repr(d)
    name = f"_z{len(ns)}"
    ns[name] = d
    return name


# ---------------------------------------------------------------------------
# The compiler
# ---------------------------------------------------------------------------


def exec_source(src: str, ns: dict[str, Any], label: str) -> None:
    """Compile and run generated source in ``ns``, keeping it for tracebacks."""
    filename = f"<kproto generated {label}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)  # noqa: S102 - source generated from our own table


def _short(path: str, end: int, size: int) -> ProtocolError:
    return ProtocolError(f"{path} runs past the end of the data (needs byte {end}, have {size})")


def _badlen(path: str, n: int) -> ProtocolError:
    return ProtocolError(f"{path}: invalid length or count {n}")


def _read_unknown_tags(b: bytes, p: int, path: str) -> tuple[dict[int, bytes] | None, int]:
    """Read a tagged-field section none of whose tags the table knows: keep them all."""
    n, p = read_uvarint(b, p)
    if n * 2 > len(b) - p:
        raise _short(path, p + n * 2, len(b))
    out: dict[int, bytes] = {}
    for _ in range(n):
        tag, p = read_uvarint(b, p)
        size, p = read_uvarint(b, p)
        end = p + size
        if end > len(b):
            raise _short(path, end, len(b))
        out[tag] = b[p:end]
        p = end
    return out or None, p


def _uuid_from(raw: bytes) -> uuid.UUID:
    return ZERO_UUID if raw == b"\x00" * 16 else uuid.UUID(bytes=raw)


class Generator:
    """Emits the source of one encoder or decoder for one message version.

    Args:
        spec: the message.
        version: the version to generate for.
        classes: the message's struct classes by struct name.
        top: the message's top-level class.
        absent: builds the exception raised when a non-ignorable field the version lacks
            holds a non-default value (given the field path and version).
    """

    def __init__(
        self, spec: MessageSpec, version: int, classes: dict[str, type], top: type, absent: Callable[[str, int], Exception]
    ) -> None:
        self.spec = spec
        self.v = version
        self.flex = version in spec.flexible
        self.classes = classes
        self.top = top
        self.lines: list[str] = []
        self.depth = 1
        self.n = 0
        self.ns: dict[str, Any] = {
            "_UV1": UVARINT_1, "_euv": encode_uvarint, "_duv": decode_uvarint,
            "_new": object.__new__, "_short": _short, "_badlen": _badlen, "_absent": absent,
            "_tags": write_tagged_fields, "_pack": struct.pack, "_unpack": struct.unpack_from,
            "_uuid": _uuid_from, "_PE": ProtocolError, "_mv": memoryview, "_rtags": _read_unknown_tags,
        }
        self._consts: dict[Any, str] = {}

    # -- plumbing -------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def tmp(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: Any, prefix: str = "_k", key: Any = None) -> str:
        """Bind ``value`` to a fresh global name of the generated code (deduplicated by key)."""
        if key is None:
            key = (prefix, type(value), value) if isinstance(value, (str, int, bytes)) else (prefix, id(value))
        name = self._consts.get(key)
        if name is None:
            name = f"{prefix}{len(self._consts)}"
            self._consts[key] = name
            self.ns[name] = value
        return name

    def packer(self, fmt: str) -> str:
        prefix = "_P" + fmt.replace("?", "o").replace("16s", "u")
        return self.const(struct.Struct(">" + fmt).pack, prefix, key=("pack", fmt))

    def unpacker(self, fmt: str) -> str:
        prefix = "_U" + fmt.replace("?", "o").replace("16s", "u")
        return self.const(struct.Struct(">" + fmt).unpack_from, prefix, key=("unpack", fmt))

    def cls(self, struct_name: str | None) -> str:
        c = self.top if struct_name is None else self.classes[struct_name]
        return self.const(c, "_C")

    def fixed(self, f: Field) -> tuple[str, int] | None:
        """The struct format of a non-null fixed-width field in this version, else None."""
        if f.type in _FIXED_FMT:
            return _FIXED_FMT[f.type]
        if f.type == "uuid":
            return ("16s", 16)
        return None

    def uv_len(self, n: str, w: str) -> None:
        """Emit writing unsigned varint ``n`` (an expression already evaluated into a name)."""
        self.emit(f"{w}(_UV1[{n}] if {n} < 128 else _euv({n}))")

    def read_uv(self, n: str) -> None:
        self.emit(f"{n} = b[p]")
        self.emit("p += 1")
        self.emit(f"if {n} > 127:")
        self.emit(f"    {n}, p = _duv(b, p - 1)")

    def non_default(self, f: Field, expr: str) -> str:
        """A condition that is true when ``expr`` differs from ``f``'s default (Java's test).

        A struct is default when every field (of every version) is, and it has no unknown
        tagged fields; that test is spelled out inline rather than calling ``__eq__`` on a
        default instance, since Fetch responses run it three times per partition.
        """
        d = f.default
        if d is EMPTY_ARRAY:
            return f"{expr}"  # a non-empty list
        if d is None:
            return f"{expr} is not None"
        if d is DEFAULT_STRUCT:
            parts = [self.non_default(c, f"{expr}.{c.name}") for c in f.fields]
            parts.append(f"{expr}.unknown_tagged_fields")
            return "(" + " or ".join(parts) + ")"
        if isinstance(d, (bool, int, float)):
            return f"{expr} != {d!r}"
        return f"{expr} != {self.const(d, '_d')}"

    def emit_default(self, f: Field, target: str) -> None:
        """Emit ``target = <a fresh default of f>``; default structs are built inline."""
        if f.default is not DEFAULT_STRUCT:
            self.emit(f"{target} = {default_expr(f, self.ns, self.classes)}")
            return
        s = self.tmp("d")
        self.emit(f"{s} = _new({self.cls(f.struct_name)})")
        for c in f.fields:
            self.emit_default(c, f"{s}.{c.name}")
        self.emit(f"{s}.unknown_tagged_fields = None")
        self.emit(f"{target} = {s}")

    def min_size(self, typ: str, nullable: bool, fields: tuple[Field, ...]) -> int:
        """Fewest bytes one value of ``typ`` takes in this version (to bound array counts)."""
        if typ.startswith("[]"):
            return 1 if self.flex else 4
        if typ in _FIXED_FMT:
            return _FIXED_FMT[typ][1]
        if typ == "uuid":
            return 16
        if typ == "string":
            return 1 if self.flex else 2
        if typ in ("bytes", "records"):
            return 1 if self.flex else 4
        if nullable:
            return 1
        total = 1 if self.flex else 0
        for f in fields:
            if self.v in f.versions and f.tag is None:
                total += self.min_size(f.type, self.v in f.nullable, f.fields)
        return total

    def build(self, kind: str, head: str, tail: str) -> Callable[..., Any]:
        src = f"def {kind}({head}):\n" + "\n".join(self.lines) + f"\n    {tail}\n"
        label = f"{self.spec.name} v{self.v} {kind}"
        exec_source(src, self.ns, label)
        fn = self.ns[kind]
        fn.__qualname__ = f"{self.spec.name}_v{self.v}_{kind}"
        fn.source = src
        return fn

    # -- encoding -------------------------------------------------------------

    def enc_struct(self, fields: tuple[Field, ...], o: str, w: str, path: str) -> None:
        run: list[tuple[str, str]] = []
        tagged: list[Field] = []
        for f in fields:
            fpath = f"{path}.{f.name}"
            if self.v not in f.versions:
                if not f.ignorable:
                    self.emit(f"if {self.non_default(f, f'{o}.{f.name}')}:")
                    self.emit(f"    raise _absent({fpath!r}, {self.v})")
                continue
            if f.tag is not None:
                tagged.append(f)
                continue
            fx = self.fixed(f)
            if fx is not None:
                run.append((fx[0], f"{o}.{f.name}.bytes" if f.type == "uuid" else f"{o}.{f.name}"))
                continue
            self.flush_enc(run, w)
            self.enc_value(f, f.type, f"{o}.{f.name}", w, self.v in f.nullable, fpath)
        self.flush_enc(run, w)
        if self.flex:
            self.enc_tags(tagged, o, w, path)

    def flush_enc(self, run: list[tuple[str, str]], w: str) -> None:
        if run:
            fmt = "".join(f for f, _ in run)
            self.emit(f"{w}({self.packer(fmt)}({', '.join(e for _, e in run)}))")
            run.clear()

    def enc_len(self, n_expr: str, w: str, wide: bool) -> None:
        if self.flex:
            n = self.tmp("n")
            self.emit(f"{n} = {n_expr} + 1")
            self.uv_len(n, w)
        else:
            self.emit(f"{w}({self.packer('i' if wide else 'h')}({n_expr}))")

    def enc_null(self, w: str, wide: bool) -> None:
        if self.flex:
            null = b"\x00"  # compact forms: length + 1 == 0
        else:
            null = b"\xff\xff\xff\xff" if wide else b"\xff\xff"  # INT32 / INT16 -1
        self.emit(f"{w}({null!r})")

    def enc_value(self, f: Field, typ: str, expr: str, w: str, nullable: bool, path: str) -> None:
        if typ.startswith("[]"):
            self.enc_array(f, expr, w, nullable, path)
            return
        if typ in _FIXED_FMT:
            self.emit(f"{w}({self.packer(_FIXED_FMT[typ][0])}({expr}))")
            return
        if typ == "uuid":
            self.emit(f"{w}({expr}.bytes)")
            return
        x = self.tmp("x")
        self.emit(f"{x} = {expr}")
        if nullable:
            self.emit(f"if {x} is None:")
            self.depth += 1
            if typ in ("string", "bytes", "records"):
                self.enc_null(w, wide=typ != "string")
            else:
                self.emit(f"{w}(b'\\xff')")  # nullable struct: INT8 -1 (KIP-893)
            self.depth -= 1
            self.emit("else:")
            self.depth += 1
        if typ == "string":
            self.emit(f"{x} = {x}.encode()")
            self.enc_len(f"len({x})", w, wide=False)
            self.emit(f"{w}({x})")
        elif typ in ("bytes", "records"):
            self.enc_len(f"len({x})", w, wide=True)
            self.emit(f"{w}({x})")
        else:
            if nullable:
                self.emit(f"{w}(b'\\x01')")
            self.enc_struct(f.fields, x, w, path)
        if nullable:
            self.depth -= 1

    def enc_array(self, f: Field, expr: str, w: str, nullable: bool, path: str) -> None:
        a = self.tmp("a")
        self.emit(f"{a} = {expr}")
        if nullable:
            self.emit(f"if {a} is None:")
            self.depth += 1
            self.enc_null(w, wide=True)
            self.depth -= 1
            self.emit("else:")
            self.depth += 1
        self.enc_len(f"len({a})", w, wide=True)
        elem = f.element_type
        if elem in _FIXED_FMT:
            fmt = _FIXED_FMT[elem][0]
            self.emit(f"{w}(_pack('>%d{fmt}' % len({a}), *{a}))")
        else:
            e = self.tmp("e")
            self.emit(f"for {e} in {a}:")
            self.depth += 1
            if f.is_struct:
                self.enc_struct(f.fields, e, w, path + "[]")
            else:
                self.enc_value(f, elem, e, w, False, path + "[]")
            self.depth -= 1
        if nullable:
            self.depth -= 1

    def enc_tags(self, tagged: list[Field], o: str, w: str, path: str) -> None:
        if not tagged:
            u = self.tmp("u")
            self.emit(f"{u} = {o}.unknown_tagged_fields")
            self.emit(f"if {u}:")
            self.emit(f"    _tags({w}, None, {u})")
            self.emit("else:")
            self.emit(f"    {w}(b'\\x00')")
            return
        t = self.tmp("t")
        self.emit(f"{t} = []")
        for f in sorted(tagged, key=lambda f: f.tag):  # type: ignore[arg-type,return-value]
            self.emit(f"if {self.non_default(f, f'{o}.{f.name}')}:")
            self.depth += 1
            tb = self.tmp("tb")
            self.emit(f"{tb} = []")
            self.enc_value(f, f.type, f"{o}.{f.name}", f"{tb}.append", self.v in f.nullable, f"{path}.{f.name}")
            self.emit(f"{t}.append(({f.tag}, b''.join({tb})))")
            self.depth -= 1
        self.emit(f"_tags({w}, {t}, {o}.unknown_tagged_fields)")

    # -- decoding -------------------------------------------------------------

    def dec_struct(self, fields: tuple[Field, ...], struct_name: str | None, o: str, path: str) -> None:
        self.emit(f"{o} = _new({self.cls(struct_name)})")
        run: list[tuple[str, str, int]] = []
        tagged: list[Field] = []
        for f in fields:
            if self.v not in f.versions:
                self.emit_default(f, f"{o}.{f.name}")
                continue
            if f.tag is not None:
                tagged.append(f)
                continue
            fx = self.fixed(f)
            if fx is not None and f.type != "uuid":
                run.append((f"{o}.{f.name}", fx[0], fx[1]))
                continue
            self.flush_dec(run)
            self.dec_value(f, f.type, f"{o}.{f.name}", self.v in f.nullable, f"{path}.{f.name}")
        self.flush_dec(run)
        if self.flex:
            self.dec_tags(tagged, o, path)
        else:
            self.emit(f"{o}.unknown_tagged_fields = None")

    def flush_dec(self, run: list[tuple[str, str, int]]) -> None:
        if run:
            fmt = "".join(f for _, f, _ in run)
            targets = ", ".join(t for t, _, _ in run)
            self.emit(f"{targets}, = {self.unpacker(fmt)}(b, p)")
            self.emit(f"p += {sum(s for _, _, s in run)}")
            run.clear()

    def dec_len(self, n: str, wide: bool) -> None:
        """Emit reading a length/count into ``n``; -1 (or compact 0) means null."""
        if self.flex:
            self.read_uv(n)
            self.emit(f"{n} -= 1")
        else:
            self.emit(f"{n}, = {self.unpacker('i' if wide else 'h')}(b, p)")
            self.emit(f"p += {4 if wide else 2}")

    def dec_value(self, f: Field, typ: str, target: str, nullable: bool, path: str) -> None:
        if typ.startswith("[]"):
            self.dec_array(f, target, nullable, path)
            return
        if typ in _FIXED_FMT:
            fmt, size = _FIXED_FMT[typ]
            self.emit(f"{target}, = {self.unpacker(fmt)}(b, p)")
            self.emit(f"p += {size}")
            return
        if typ == "uuid":
            r = self.tmp("r")
            self.emit(f"{r}, = {self.unpacker('16s')}(b, p)")
            self.emit("p += 16")
            self.emit(f"{target} = _uuid({r})")
            return
        if typ in ("string", "bytes", "records"):
            n = self.tmp("n")
            self.dec_len(n, wide=typ != "string")
            self.emit(f"if {n} >= 0:")
            self.depth += 1
            e = self.tmp("e")
            self.emit(f"{e} = p + {n}")
            self.emit(f"if {e} > L:")
            self.emit(f"    raise _short({path!r}, {e}, L)")
            if typ == "string":
                self.emit(f"{target} = b[p:{e}].decode('utf-8', 'replace')")
            elif typ == "bytes":
                self.emit(f"{target} = b[p:{e}]")
            else:
                self.emit(f"{target} = m[p:{e}]")
            self.emit(f"p = {e}")
            self.depth -= 1
            self.null_or_raise(n, target, nullable, path)
            return
        # a struct
        s = self.tmp("s")
        if nullable:
            k = self.tmp("k")
            self.emit(f"{k}, = {self.unpacker('b')}(b, p)")
            self.emit("p += 1")
            self.emit(f"if {k} < 0:")
            self.emit(f"    {target} = None")
            self.emit("else:")
            self.depth += 1
        self.dec_struct(f.fields, f.struct_name, s, path)
        self.emit(f"{target} = {s}")
        if nullable:
            self.depth -= 1

    def null_or_raise(self, n: str, target: str, nullable: bool, path: str) -> None:
        if nullable:
            self.emit(f"elif {n} == -1:")
            self.emit(f"    {target} = None")
        self.emit("else:")
        self.emit(f"    raise _badlen({path!r}, {n})")

    def dec_array(self, f: Field, target: str, nullable: bool, path: str) -> None:
        n = self.tmp("n")
        self.dec_len(n, wide=True)
        self.emit(f"if {n} >= 0:")
        self.depth += 1
        elem = f.element_type
        size = self.min_size(elem, False, f.fields)
        # Bound the count by the bytes left before allocating anything: a garbled count
        # must fail fast, not build a billion-element list.
        self.emit(f"if {n} * {max(size, 1)} > L - p:")
        self.emit(f"    raise _short({path!r}, p + {n} * {max(size, 1)}, L)")
        if elem in _FIXED_FMT:
            fmt, width = _FIXED_FMT[elem]
            self.emit(f"{target} = list(_unpack('>%d{fmt}' % {n}, b, p))")
            self.emit(f"p += {n} * {width}")
        else:
            a = self.tmp("a")
            x = self.tmp("x")
            self.emit(f"{a} = []")
            self.emit(f"for _ in range({n}):")
            self.depth += 1
            if f.is_struct:
                self.dec_struct(f.fields, f.struct_name, x, path + "[]")
            else:
                self.dec_value(f, elem, x, False, path + "[]")
            self.emit(f"{a}.append({x})")
            self.depth -= 1
            self.emit(f"{target} = {a}")
        self.depth -= 1
        self.null_or_raise(n, target, nullable, path)

    def dec_tags(self, tagged: list[Field], o: str, path: str) -> None:
        if not tagged:
            # The common case: no tag this table knows. One byte 0 means none at all.
            self.emit("if b[p] == 0:")
            self.emit("    p += 1")
            self.emit(f"    {o}.unknown_tagged_fields = None")
            self.emit("else:")
            self.emit(f"    {o}.unknown_tagged_fields, p = _rtags(b, p, {path + '<tags>'!r})")
            return
        for f in tagged:
            self.emit_default(f, f"{o}.{f.name}")
        n = self.tmp("n")
        self.read_uv(n)
        self.emit(f"if {n}:")
        self.depth += 1
        self.emit(f"if {n} * 2 > L - p:")
        self.emit(f"    raise _short({path + '<tags>'!r}, p + {n} * 2, L)")
        u, tag, size, end = self.tmp("u"), self.tmp("tag"), self.tmp("z"), self.tmp("e")
        self.emit(f"{u} = None")
        self.emit(f"for _ in range({n}):")
        self.depth += 1
        self.read_uv(tag)
        self.read_uv(size)
        self.emit(f"{end} = p + {size}")
        self.emit(f"if {end} > L:")
        self.emit(f"    raise _short({path + '<tags>'!r}, {end}, L)")
        kw = "if"
        for f in sorted(tagged, key=lambda f: f.tag):  # type: ignore[arg-type,return-value]
            self.emit(f"{kw} {tag} == {f.tag}:")
            self.depth += 1
            self.dec_value(f, f.type, f"{o}.{f.name}", self.v in f.nullable, f"{path}.{f.name}")
            self.emit(f"if p != {end}:")
            self.emit(f"    raise _PE('tagged field {path}.{f.name} does not fill its %d bytes' % {size})")
            self.depth -= 1
            kw = "elif"
        if tagged:
            self.emit("else:")
            self.depth += 1
        # A tag this table does not know: keep its bytes so a re-encode preserves it.
        self.emit(f"if {u} is None:")
        self.emit(f"    {u} = {{}}")
        self.emit(f"{u}[{tag}] = b[p:{end}]")
        self.emit(f"p = {end}")
        if tagged:
            self.depth -= 1
        self.depth -= 1
        self.emit(f"{o}.unknown_tagged_fields = {u}")
        self.depth -= 1
        self.emit("else:")
        self.emit(f"    {o}.unknown_tagged_fields = None")
