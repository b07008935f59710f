"""The layers only import downwards: kproto never imports minibroker (DESIGN, principle 1)."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.codec

KPROTO = Path(__file__).resolve().parents[1] / "kproto"


def imported_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("path", sorted(KPROTO.rglob("*.py")) + sorted(KPROTO.rglob("*.pyx")), ids=lambda p: str(p.relative_to(KPROTO)))
def test_kproto_never_imports_minibroker(path):
    if path.suffix == ".pyx":
        names = [line.split()[1] for line in path.read_text().splitlines() if line.startswith(("import ", "from "))]
    else:
        names = list(imported_modules(path))
    assert not [n for n in names if n == "minibroker" or n.startswith("minibroker.")]
