"""``mypy --strict`` over the documentation's examples and over the public API's types.

Issue 11 item C: the docs' own consumer example failed ``mypy --strict`` (``record.value``
was ``object``), and the thread faces' methods and ``await AIOProducer.send()`` were
``Any``, so a typo in their arguments or a misuse of their results went unseen.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the test extra")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "examples").glob("*.py"))
PUBLIC_API = Path(__file__).with_name("public_api.py")


def mypy(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    # Run from the checkout, where mypy reads kproto/ and minibroker/ as sources; their own
    # errors are not what is checked here (the files given are), whether kproto is
    # installed in development mode (its errors silenced as an installed package's) or not.
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--cache-dir", str(cache),
                           "--no-error-summary", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def named_tuples(revealed: str) -> str:
    """mypy spells a NamedTuple ``tuple[str, int, fallback=pkg.Name]``: make that ``pkg.Name``."""
    while (at := revealed.find("fallback=")) >= 0:
        depth, start = 0, at
        while depth >= 0:  # back to the "tuple[" that encloses the fallback
            start -= 1
            depth += {"]": 1, "[": -1}.get(revealed[start], 0)
        end = revealed.index("]", at)
        revealed = revealed[:start - len("tuple")] + revealed[at + len("fallback="):end] + revealed[end + 1:]
    return revealed


def test_the_docs_examples_pass_mypy_strict(tmp_path):
    """Issue 11 item C: every example the docs show type-checks strictly, without casts."""
    done = mypy(*EXAMPLES, cache=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not any("cast(" in (ROOT / e).read_text() for e in EXAMPLES)


def test_the_public_api_is_typed_not_any(tmp_path):
    """Issue 11 item C: what mypy infers for the thread faces and the asyncio producer."""
    done = mypy(str(PUBLIC_API.relative_to(ROOT)), cache=tmp_path)
    revealed = re.findall(r":(\d+): note: Revealed type is \"(.*)\"", done.stdout)
    assert revealed, done.stdout + done.stderr
    lines = PUBLIC_API.read_text().splitlines()
    for lineno, seen in revealed:
        expected = lines[int(lineno) - 1].split("# ", 1)[1]
        seen = re.sub(r"\b(?:[a-z_]+\.)+([A-Z]\w*)", r"\1", named_tuples(seen))
        assert seen == expected, f"line {lineno}: {seen}"
