"""The checked-in ``.pyi`` stubs of the generated message classes match the table (issue 12,
"Types and tests": the classes built from the table at import were invisible to type
checkers and IDEs).

What mypy makes of the stubs is checked in tests/typing/test_message_stubs.py.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

from kproto.protocol import _stubgen, messages
from kproto.protocol.schema import Struct
from tests.support.table_strategies import every_case, populated

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "kproto" / "protocol" / "messages" / "__init__.pyi"


def test_the_checked_in_stubs_are_what_the_table_generates():
    """Issue 12: a table change without regenerating the stubs fails here, saying how."""
    stale = _stubgen.stale_stubs()
    assert not stale, (f"the type stubs {[str(p.relative_to(ROOT)) for p in stale]} do not match the "
                       f"schema table: regenerate them with `{_stubgen.COMMAND}` and commit them")


def _stubbed_modules() -> list[tuple[types.ModuleType, ast.Module]]:
    """Each module of kproto.protocol.messages that has a stub, with the stub's syntax tree."""
    return [(m, ast.parse(stub.read_text())) for m in _stubgen.modules()
            if (stub := Path(m.__file__ or "").with_suffix(".pyi")).is_file()]


def _declared() -> list[tuple[str, ast.ClassDef, type]]:
    """(stub name, stub class, runtime class) of every generated class a stub declares."""
    out = []
    for module, tree in _stubbed_modules():
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        out += [(name, classes[name], value) for name, value in vars(module).items()
                if _stubgen.is_generated(value) and name in classes]
    return out


def _fields(node: ast.ClassDef) -> dict[str, str]:
    """The instance attributes a stub class declares, with their annotations."""
    return {n.target.id: ast.unparse(n.annotation) for n in node.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            and not ast.unparse(n.annotation).startswith("ClassVar")}


def _init_keywords(node: ast.ClassDef) -> list[str]:
    (init,) = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    assert [a.arg for a in init.args.args] == ["self"] and not init.args.vararg and not init.args.kwarg
    return [a.arg for a in init.args.kwonlyargs]


def test_the_stub_declares_every_public_name_and_every_class_as_built():
    """Issue 12: each generated class of kproto.protocol.messages has a stub class with the
    attribute names the runtime class has, in order, its keyword-only constructor, the same
    nested struct classes (``MetadataRequest.MetadataRequestTopic``) and its API key; each
    stub binds every name of its module's ``__all__``."""
    for module, tree in _stubbed_modules():
        bound = {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        bound |= {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        bound |= {a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        assert set(getattr(module, "__all__", ())) <= bound, module.__name__
    declared = _declared()
    assert {c for *_, c in declared} >= {*messages.REQUESTS.values(), *messages.RESPONSES.values()}
    for name, node, cls in declared:
        consts = {ast.unparse(n.target): ast.unparse(n.annotation) for n in node.body
                  if isinstance(n, ast.AnnAssign) and ast.unparse(n.annotation).startswith("ClassVar")}
        if "API_KEY" in vars(cls):
            assert consts["API_KEY"] == f"ClassVar[Literal[{cls.API_KEY}]]"
        nested = {n.name: n for n in node.body if isinstance(n, ast.ClassDef)}
        runtime_nested = {k for k, v in vars(cls).items() if isinstance(v, type) and issubclass(v, Struct)}
        assert set(nested) == runtime_nested, name
        for stub_cls, runtime_cls in [(node, cls)] + [(nested[k], getattr(cls, k)) for k in sorted(nested)]:
            assert list(_fields(stub_cls)) == list(runtime_cls._fields), runtime_cls.__qualname__
            assert _init_keywords(stub_cls) == [*runtime_cls._fields, "unknown_tagged_fields"]


def _annotations() -> dict[type, dict[str, Any]]:
    """Each generated class's stub annotations, evaluated to runtime types."""
    declared = _declared()
    namespace: dict[str, Any] = {"UUID": uuid.UUID, **{name: cls for name, _, cls in declared}}
    out: dict[type, dict[str, Any]] = {}
    for _, node, cls in declared:
        out[cls] = {k: eval(v, namespace) for k, v in _fields(node).items()}  # noqa: S307 - our stub
        for sub in (n for n in node.body if isinstance(n, ast.ClassDef)):
            out[getattr(cls, sub.name)] = {k: eval(v, namespace) for k, v in _fields(sub).items()}  # noqa: S307
    return out


def _mismatches(value: Any, annotations: dict[type, dict[str, Any]], path: str) -> list[str]:
    """Where the fields of ``value`` (a struct, recursively) do not have their annotated types."""
    out: list[str] = []

    def conforms(v: Any, t: Any, where: str) -> bool:
        if isinstance(t, types.UnionType):
            return any(conforms(v, a, where) for a in t.__args__)
        if isinstance(t, types.GenericAlias):  # list[T]
            return isinstance(v, list) and all(conforms(x, t.__args__[0], f"{where}[{i}]") for i, x in enumerate(v))
        if t is None:
            return v is None
        if isinstance(v, t):
            if isinstance(v, Struct):
                out.extend(_mismatches(v, annotations, where))
            return True
        return False

    for name, typ in annotations[type(value)].items():
        if not conforms(getattr(value, name), typ, f"{path}.{name}"):
            out.append(f"{path}.{name} = {getattr(value, name)!r} is not {typ}")
    return out


def test_the_stub_types_hold_the_defaults_and_every_decoded_value():
    """Issue 12: the annotations describe what the classes really hold: every default (a
    None default makes the type ``| None``) and every field decoded at every version
    (records as memoryviews, uuids, nested structs, lists)."""
    annotations = _annotations()
    bad = [m for cls in annotations for m in _mismatches(cls(), annotations, cls.__qualname__)]
    for api_name, version, is_request in every_case():
        cls = getattr(messages, api_name + ("Request" if is_request else "Response"))
        decoded = cls.decode(populated(cls, version).encode(version), version)
        bad += _mismatches(decoded, annotations, f"{cls.__name__} v{version}")
    assert not bad, "\n".join(bad[:20])


def test_a_table_change_fails_the_check_until_the_command_regenerates(tmp_path):
    """Issue 12: in a copy of the package, a field added to the table makes
    ``python -m kproto.protocol._stubgen --check`` fail naming the stub and the command; the
    command rewrites the stub with the new field, and the check passes again."""
    shutil.copytree(ROOT / "kproto", tmp_path / "kproto", ignore=shutil.ignore_patterns("__pycache__", "*.c", "*.html"))
    table = tmp_path / "kproto" / "protocol" / "messages" / "connection.py"
    source = table.read_text()
    assert source.count("        mechanism  string\n") == 1
    table.write_text(source.replace("        mechanism  string\n",
                                    "        mechanism  string\n        hint_ms  int64  v1+  ignorable\n"))

    def stubgen(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kproto.protocol._stubgen", *args], cwd=tmp_path,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
                              capture_output=True, text=True, timeout=120)

    check = stubgen("--check")
    assert check.returncode == 1, check.stdout + check.stderr
    stub = tmp_path / "kproto" / "protocol" / "messages" / "__init__.pyi"
    assert f"stale: {stub}" in check.stdout and _stubgen.COMMAND in check.stdout
    write = stubgen()
    assert write.returncode == 0, write.stderr
    assert f"wrote {stub}" in write.stdout
    assert "\n    hint_ms: int\n" in stub.read_text()
    assert stub.read_text() != STUB.read_text()
    again = stubgen("--check")
    assert again.returncode == 0 and not again.stdout, again.stdout + again.stderr


def test_a_public_name_the_stub_cannot_type_is_an_error_naming_it(tmp_path):
    """Issue 12: a stub replaces its whole module for type checkers, so a public name the
    generator cannot type (here a dict, unannotated) must not be left out silently."""
    module = types.ModuleType("kproto.protocol.messages.example")
    path = tmp_path / "example.py"
    path.write_text("from kproto.protocol.messages import MetadataRequest\n\n"
                    "Alias = MetadataRequest\nBY_NAME = {'m': MetadataRequest}\n")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), vars(module))  # noqa: S102 - our own text
    with pytest.raises(_stubgen.StubError, match=r"kproto\.protocol\.messages\.example\.BY_NAME: annotate it"):
        _stubgen.stub_source(module)
