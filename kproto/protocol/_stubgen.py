"""Type stubs for the generated message classes: table in, ``.pyi`` source out.

The message classes (``MetadataRequest``, ``MetadataRequest.MetadataRequestTopic`` ...) are
built from the schema table at import (:func:`kproto.protocol.schema.build_message`), so
mypy and IDEs see only ``type[Message]``: no fields, no constructor arguments, no nested
classes. This module writes, next to every module of :mod:`kproto.protocol.messages` that
binds generated classes, a ``.pyi`` stub that declares them statically: each class with its
fields and their Python types, its keyword-only constructor with the table's defaults,
its nested struct classes and its class attributes. A stub replaces its module for type
checkers, so the module's other public names go in it too, typed from the module's own
annotations and signatures (an unannotated name whose type cannot be told is an error
here, naming it).

The stubs are checked in; after changing the table, regenerate them::

    python -m kproto.protocol._stubgen          # write the stubs
    python -m kproto.protocol._stubgen --check  # exit 1 if a stub differs (what CI runs)

``tests/protocol/test_stubs.py`` fails when a checked-in stub differs from what the table
generates. Python types of the table's types: integers ``int``, ``float64`` ``float``,
``bool`` ``bool``, ``string`` ``str``, ``bytes`` ``bytes``, ``records`` any bytes-like
(decoded as a zero-copy ``memoryview``), ``uuid`` :class:`uuid.UUID`, ``[]T`` ``list[T]``,
a struct its nested class; ``| None`` when the field is nullable in some version or
defaults to null.
"""

from __future__ import annotations

import argparse
import ast
import enum
import importlib
import inspect
import json
import pkgutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kproto.protocol.schema import Struct
from kproto.protocol.spec import DEFAULT_STRUCT, EMPTY_ARRAY, Field

__all__ = ["PACKAGE", "COMMAND", "StubError", "is_generated", "modules", "stub_source", "stubs", "write_stubs",
           "stale_stubs", "main"]

#: The package whose modules bind generated classes.
PACKAGE = "kproto.protocol.messages"
#: The command that regenerates the stubs.
COMMAND = "python -m kproto.protocol._stubgen"

_HEADER = f'''"""Type stubs for {{module}}, generated from the schema table: do not edit.

Regenerate with ``{COMMAND}`` after changing the table
(tests/protocol/test_stubs.py checks that this file is current).
"""
'''

_PRIMITIVES = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int", "uint32": "int",
    "float64": "float", "bool": "bool", "string": "str", "bytes": "bytes", "uuid": "UUID",
    # encoded from any bytes-like value, decoded as a zero-copy view of the response
    "records": "bytes | bytearray | memoryview",
}
# What the stubs may use besides the module's own imports: (module, name) pairs.
_STUB_IMPORTS = {("uuid", "UUID"), ("typing", "ClassVar"), ("typing", "Literal"), ("typing", "Any")}


class StubError(Exception):
    """A module of :data:`PACKAGE` holds a public name the stub cannot describe."""


def is_generated(value: Any) -> bool:
    """True for a class built from the table (not the bases :class:`Struct`, ``Message``)."""
    return isinstance(value, type) and issubclass(value, Struct) and hasattr(value, "_codec")


# ---------------------------------------------------------------------------
# One generated class
# ---------------------------------------------------------------------------


def _python_type(f: Field, owner: str) -> str:
    elem = f"{owner}.{f.struct_name}" if f.is_struct else _PRIMITIVES[f.element_type]
    typ = f"list[{elem}]" if f.is_array else elem
    if f.nullable or f.default is None:
        typ += " | None"
    return typ


def _literal(value: Any) -> str:
    """``value`` as Python source, strings in double quotes."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def _default(f: Field) -> str:
    d = f.default
    if d is EMPTY_ARRAY or d is DEFAULT_STRUCT or not isinstance(d, (type(None), bool, int, float, str, bytes)):
        return "..."  # a fresh list, a struct, a UUID: the stub says only that there is one
    return _literal(d)


def _docstring(text: str, indent: str) -> list[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.splitlines() or [""]
    out = [f'{indent}"""{lines[0]}']
    out += [f"{indent}{line}" if line else "" for line in lines[1:]]
    if len(lines) > 1:
        out.append(f'{indent}"""')
    else:
        out[-1] += '"""'
    return out


def _struct_classes(top: type, fields: tuple[Field, ...]) -> Iterator[tuple[type, tuple[Field, ...]]]:
    """The nested struct classes of ``top`` in table order, each once, with their fields."""
    seen: set[str] = set()

    def visit(fields: tuple[Field, ...]) -> Iterator[tuple[type, tuple[Field, ...]]]:
        for f in fields:
            name = f.struct_name
            if name is not None and name not in seen:
                seen.add(name)
                yield getattr(top, name), f.fields  # bound as the top class's attribute
                yield from visit(f.fields)

    return visit(fields)


def _members(cls: type, fields: tuple[Field, ...], owner: str, indent: str) -> list[str]:
    """The attributes and ``__init__`` of one generated class."""
    names = tuple(f.name for f in fields)
    if names != cls._fields:  # type: ignore[attr-defined]
        raise StubError(f"{cls.__qualname__} has fields {cls._fields} but the table says {names}")  # type: ignore[attr-defined]
    out = [f"{indent}{f.name}: {_python_type(f, owner)}" for f in fields]
    out += [f"{indent}def __init__(", f"{indent}    self,", f"{indent}    *,"]
    out += [f"{indent}    {f.name}: {_python_type(f, owner)} = {_default(f)}," for f in fields]
    out += [f"{indent}    unknown_tagged_fields: dict[int, bytes] | None = None,", f"{indent}) -> None: ..."]
    return out


def _message_class(name: str, cls: type) -> tuple[list[str], set[type]]:
    """The stub of one top-level generated class bound as ``name``, nested classes inside,
    and the base classes it names."""
    spec = cls._codec.spec  # type: ignore[attr-defined]
    base = cls.__bases__[0]
    bases = {base}
    out = [f"class {name}({base.__name__}):", *_docstring(cls.__doc__ or "", "    ")]
    # Kafka's API key and name, and the direction, as literals (the base says int, str, bool)
    out += [f"    {attr}: ClassVar[Literal[{_literal(vars(cls)[attr])}]]"
            for attr in ("API_KEY", "API_NAME", "IS_REQUEST") if attr in vars(cls)]
    out += _members(cls, spec.fields, name, "    ")
    decode = getattr(base, "decode", None)
    if decode is not None:
        # Message.decode returns a Message; each class's returns an instance of it.
        sig = inspect.signature(decode)
        params = ", ".join(["cls", *(_param(p) for p in sig.parameters.values())])
        out += ["    @classmethod", f"    def decode({params}) -> {name}: ..."]
    for sub, fields in _struct_classes(cls, spec.fields):
        bases.add(sub.__bases__[0])
        out.append(f"    class {sub.__name__}({sub.__bases__[0].__name__}):")
        out += _docstring(sub.__doc__ or "", "        ")
        out += _members(sub, fields, name, "        ")
    return out, bases


def _param(p: inspect.Parameter) -> str:
    text = p.name if p.annotation is p.empty else f"{p.name}: {p.annotation}"
    return text if p.default is p.empty else f"{text} = ..."


# ---------------------------------------------------------------------------
# One module
# ---------------------------------------------------------------------------


def _imports(tree: ast.Module) -> tuple[set[tuple[str, str | None]], set[str]]:
    """The module's top-level imports as (module, name) pairs, and the names they bind."""
    pairs: set[tuple[str, str | None]] = set()
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                pairs.add((alias.name, None))
                bound.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            bound.update(alias.name for alias in node.names)  # `annotations` is a module global
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise StubError(f"relative import of {node.module} at line {node.lineno}: spell the package")
            for alias in node.names:
                if alias.asname:
                    raise StubError(f"import ... as {alias.asname} at line {node.lineno}: not supported")
                pairs.add((node.module or "", alias.name))
                bound.add(alias.name)
    return pairs, bound


def _import_lines(pairs: set[tuple[str, str | None]]) -> list[str]:
    """Import statements in isort's order: standard library, then the project."""
    sections: list[list[str]] = [[], []]
    for first_party in (False, True):
        mods = {m for m, _ in pairs if (m.partition(".")[0] not in sys.stdlib_module_names) is first_party}
        lines = sections[first_party]
        lines += [f"import {m}" for m in sorted(mods) if (m, None) in pairs]
        for m in sorted(mods):
            names = sorted((n for mm, n in pairs if mm == m and n is not None), key=lambda n: (not n.isupper(), not n[0].isupper(), n))
            if names:
                lines.append(f"from {m} import {', '.join(names)}")
    return sections[0] + [""] + sections[1] if sections[0] and sections[1] else sections[0] + sections[1]


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """A ``def`` of the module as a stub: signature kept, defaults and body ``...``."""
    args = node.args
    args.defaults = [ast.Constant(...) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(...) for d in args.kw_defaults]
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    decorators = [f"@{ast.unparse(d)}" for d in node.decorator_list]
    keyword = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return [*decorators, f"{keyword} {node.name}({ast.unparse(args)}){returns}: ..."]


def _enum_class(name: str, cls: type[enum.Enum]) -> tuple[list[str], type]:
    """An enum made by calling ``IntEnum(...)``, as a class statement; and its base."""
    base = next(b for b in cls.__mro__[1:] if b.__module__ == "enum")
    out = [f"class {name}({base.__name__}):"]
    out += [f"    {member} = {_literal(value.value)}" for member, value in cls.__members__.items()]
    return out, base


def _all_fields(module: types.ModuleType, names: list[str]) -> Iterator[Field]:
    def walk(fields: tuple[Field, ...]) -> Iterator[Field]:
        for f in fields:
            yield f
            yield from walk(f.fields)

    for name in names:
        value = getattr(module, name)
        if is_generated(value):
            yield from walk(value._codec.spec.fields)


def _inferred_type(value: Any, where: str) -> tuple[str, set[tuple[str, str | None]]]:
    """The type of an unannotated constant: a scalar, or a tuple/list of one class."""
    if isinstance(value, (bool, int, float, str, bytes)):
        return type(value).__name__, set()
    if isinstance(value, (tuple, list)) and value and len({type(v) for v in value}) == 1:
        elem = type(value[0])
        if elem.__module__ not in ("builtins", "__main__"):
            suffix = ", ..." if isinstance(value, tuple) else ""
            return f"{type(value).__name__}[{elem.__name__}{suffix}]", {(elem.__module__, elem.__name__)}
    raise StubError(f"cannot tell the type of {where}: annotate it")


def _loaded(blocks: list[list[str]]) -> set[str]:
    """The names that stub source reads (annotations, bases), not the ones it binds."""
    tree = ast.parse("\n".join(line for block in blocks for line in block))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def stub_source(module: types.ModuleType) -> str | None:
    """The stub of ``module``, or None when it binds no generated class.

    Raises:
        StubError: the module has a public name the stub cannot describe.
    """
    path = Path(module.__file__ or "")
    tree = ast.parse(path.read_text(), str(path))
    pairs, imported = _imports(tree)
    defined = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    annotations: dict[str, str] = getattr(module, "__annotations__", {})
    names = [n for n, v in vars(module).items()
             if not n.startswith("_") and n not in imported and not isinstance(v, types.ModuleType)]
    if not any(is_generated(getattr(module, n)) for n in names):
        return None
    pairs |= _STUB_IMPORTS
    body: list[list[str]] = []
    classes: list[str] = []  # the source of the generated classes' stubs
    stubbed: dict[type, str] = {}  # generated class -> the name its stub class has here
    for name in names:
        value = getattr(module, name)
        where = f"{module.__name__}.{name}"
        if is_generated(value) and value in stubbed:
            body.append([f"{name} = {stubbed[value]}"])
        elif is_generated(value):
            stubbed[value] = name
            lines, bases = _message_class(name, value)
            pairs |= {(b.__module__, b.__name__) for b in bases}
            body.append(lines)
            classes += lines
        elif name in annotations:
            body.append([f"{name}: {annotations[name]}"])
        elif isinstance(value, type) and issubclass(value, enum.Enum) and name not in defined:  # IntEnum("N", ...)
            lines, base = _enum_class(name, value)
            pairs.add((base.__module__, base.__name__))
            body.append(lines)
        elif isinstance(node := defined.get(name), (ast.FunctionDef, ast.AsyncFunctionDef)):
            body.append(_function(node))
        elif name in defined:
            raise StubError(f"{where}: a stub is generated for {module.__name__} (it binds generated classes), "
                            "which cannot describe its other classes: move them to a module of their own")
        else:
            typ, more = _inferred_type(value, where)
            pairs |= more
            body.append([f"{name}: {typ}"])
    # the imports the stub reads, and those it re-exports (a name in __all__ is re-exported)
    wanted = _loaded(body) | set(getattr(module, "__all__", ()))
    pairs = {(m, n) for m, n in pairs if (n or m.partition(".")[0]) in wanted}
    # In a class body a field's name hides the module's name for the annotations after it.
    shadowed = {f.name for f in _all_fields(module, names)} & _loaded([classes])
    if shadowed:
        raise StubError(f"{module.__name__}: fields named {sorted(shadowed)} would hide a type the stub names")
    out = [_HEADER.format(module=module.__name__), *_import_lines(pairs)]
    if hasattr(module, "__all__"):
        out += ["", "__all__ = [", *(f"    {_literal(n)}," for n in module.__all__), "]"]
    previous: list[str] = []
    for block in body:
        if len(block) > 1 or len(previous) != 1:  # one blank line around classes and functions
            out.append("")
        out += block
        previous = block
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# The package
# ---------------------------------------------------------------------------


def modules() -> Iterator[types.ModuleType]:
    """:data:`PACKAGE` and its modules (imported)."""
    package = importlib.import_module(PACKAGE)
    yield package
    for info in pkgutil.walk_packages(package.__path__, PACKAGE + "."):
        yield importlib.import_module(info.name)


def stubs() -> dict[Path, str]:
    """Every stub the table calls for: its path (the module's, as ``.pyi``) and source."""
    out: dict[Path, str] = {}
    for module in modules():
        source = stub_source(module)
        if source is not None:
            out[Path(module.__file__ or "").with_suffix(".pyi")] = source
    return out


def _stale(wanted: dict[Path, str]) -> list[Path]:
    root = Path(importlib.import_module(PACKAGE).__file__ or "").parent
    differ = [p for p, src in wanted.items() if not p.is_file() or p.read_text() != src]
    return sorted(differ + [p for p in root.rglob("*.pyi") if p not in wanted])


def stale_stubs() -> list[Path]:
    """The stubs on disk that differ from what the table generates, or that it no longer calls for."""
    return _stale(stubs())


def write_stubs() -> list[Path]:
    """Write the stubs that are stale, delete the ones no longer called for; return their paths."""
    wanted = stubs()
    changed = _stale(wanted)
    for path in changed:
        if path in wanted:
            path.write_text(wanted[path])
        else:
            path.unlink()
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only report stale stubs (exit status 1 if any)")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_stubs()
        for path in stale:
            print(f"stale: {path}")
        if stale:
            print(f"regenerate with: {COMMAND}")
        return 1 if stale else 0
    for path in write_stubs():
        print(f"wrote {path}" if path.exists() else f"deleted {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
