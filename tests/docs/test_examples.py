"""Every example the documentation shows runs, so the quickstart and guides never rot:
each script in docs/examples/ in its own process, and the pytest example under pytest."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("test_")))
def test_example_script_runs(script):
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], env=ENV, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "an example shows what it did"


def test_the_quickstart_prints_kafkas_quickstart_events():
    done = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py")], env=ENV, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.stdout.splitlines()[:2] == ["0 This is my first event", "1 This is my second event"]


@pytest.mark.parametrize(("example", "tests"), [("test_with_minibroker.py", 2), ("test_minibroker_config.py", 3),
                                               ("test_minibroker_sasl.py", 2)])
def test_the_pytest_examples_pass_under_pytest(example, tests):
    """Issue 11 item E: test_minibroker_config.py configures the fixtures' brokers."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLES / example)],
                          env=ENV, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{tests} passed" in done.stdout


def test_every_pytest_example_is_run():
    assert {p.name for p in EXAMPLES.glob("test_*.py")} == {"test_with_minibroker.py", "test_minibroker_config.py",
                                                            "test_minibroker_sasl.py"}


def test_the_command_line_quickstart_runs(tmp_path):
    from minibroker import MiniBroker

    with MiniBroker() as broker:
        bin_dir = tmp_path / "bin"  # `kproto` on PATH, whether or not the package is installed
        bin_dir.mkdir()
        (bin_dir / "kproto").write_text(f"#!/bin/sh\nexec {sys.executable} -m kproto \"$@\"\n")
        (bin_dir / "kproto").chmod(0o755)
        env = {**ENV, "KPROTO_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
               "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        done = subprocess.run(["bash", str(EXAMPLES / "quickstart_cli.sh")], env=env, capture_output=True, text=True,
                              timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "This is my first event\nThis is my second event\n" in done.stdout
    assert "quickstart-events" in done.stdout and "quickstart" in done.stdout
