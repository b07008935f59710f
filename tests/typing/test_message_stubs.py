"""``mypy --strict`` sees the generated message classes through their stubs (issue 12,
"Types and tests": the classes built from the table at import were invisible to type
checkers and IDEs, so a misspelt field or a wrong type in a request went unseen).

The stubs themselves are checked against the table in tests/protocol/test_stubs.py.
"""

import re
from pathlib import Path

import pytest

from tests.typing.test_mypy import ROOT, mypy

pytest.importorskip("mypy", reason="mypy is in the test extra")

HERE = Path(__file__).parent
RIGHT = HERE / "messages_right.py"
WRONG = HERE / "messages_wrong.py"
STUB = ROOT / "kproto" / "protocol" / "messages" / "__init__.pyi"


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_stub_itself_passes_mypy_strict(tmp_path):
    """Issue 12: the generated stub is valid and strictly typed (defaults match their types)."""
    done = mypy(rel(STUB), cache=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_messages_used_rightly_pass_and_have_their_types(tmp_path):
    """Issue 12: constructors, fields, nested classes and decode() are typed, not Any."""
    done = mypy(rel(RIGHT), cache=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    revealed = re.findall(r":(\d+): note: Revealed type is \"(.*)\"", done.stdout)
    lines = RIGHT.read_text().splitlines()
    assert len(revealed) == sum("reveal_type(" in line for line in lines), done.stdout
    for lineno, seen in revealed:
        expected = lines[int(lineno) - 1].split("# ", 1)[1]
        assert re.sub(r"\b(?:[a-z_]+\.)+([A-Z]\w*)", r"\1", seen) == expected, f"line {lineno}: {seen}"


def test_a_wrong_field_name_or_type_is_an_error(tmp_path):
    """Issue 12: a misspelt field, a wrong type, a missing nested class, a None where the
    table has no null: each is reported where it is, and nothing else is."""
    done = mypy(rel(WRONG), cache=tmp_path)
    errors: dict[int, list[str]] = {}
    for lineno, message in re.findall(r":(\d+): error: (.*)", done.stdout):
        errors.setdefault(int(lineno), []).append(message)
    expected = {n: line.split("# error: ", 1)[1] for n, line in enumerate(WRONG.read_text().splitlines(), 1)
                if "# error: " in line}
    assert len(expected) >= 9
    for lineno, text in expected.items():
        assert any(text in message for message in errors.get(lineno, [])), f"line {lineno}: {errors.get(lineno)}"
    assert set(errors) == set(expected), done.stdout
