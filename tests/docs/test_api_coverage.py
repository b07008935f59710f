"""The API reference names every public name: each name in the ``__all__`` of kproto's
public modules appears in the docs, or its module is documented with ``:members:``."""

import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PUBLIC = ["kproto", "kproto.aio", "kproto.admin", "kproto.producer", "kproto.consumer", "kproto.config",
          "kproto.serialization", "kproto.structs", "kproto.records", "kproto.compression", "kproto.log_files", "kproto.errors",
          "kproto.io", "kproto.protocol", "kproto.metrics", "kproto.interceptors", "minibroker"]


def documented_text():
    return "\n".join(p.read_text() for p in DOCS.rglob("*.rst"))


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_is_in_the_reference(module):
    text = documented_text()
    with_members = set(re.findall(r"\.\. automodule:: (\S+)\n(?:   :[^\n]*\n)*?   :members:\s*\n", text))
    by_members = {n for m in with_members for n in getattr(importlib.import_module(m), "__all__", [])}
    names = getattr(importlib.import_module(module), "__all__", [])
    missing = [n for n in names if not n.startswith("_") and module not in with_members and n not in by_members
               and not re.search(rf"\b{re.escape(n)}\b", text)]
    assert not missing, f"{module}: not in the docs: {missing}"
