"""The testing guide (docs/guides/testing.rst) says what is true: the logger names in use,
quiet libraries until the application configures logging (issue 11 item E)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "guides" / "testing.rst").read_text()


def loggers_in_the_code() -> set[str]:
    names = set()
    for package in ("kproto", "minibroker"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text()
            names.update(re.findall(r'getLogger\("([\w.]+)"\)', text))
            if re.search(r"getLogger\(__name__\)", text):
                names.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return names


def test_the_guide_names_every_logger():
    """Issue 11 item E: the guide lists the logger names, so users can turn each up or down."""
    names = loggers_in_the_code()
    assert {"kproto.producer", "minibroker"} <= names
    assert [n for n in sorted(names) if f"``{n}``" not in GUIDE] == []


def test_the_libraries_print_nothing_until_logging_is_configured():
    """Issue 11 item E: a warning from kproto or minibroker in an application that has not
    configured logging goes nowhere (a NullHandler on each package logger), as the logging
    HOWTO asks of libraries, instead of to stderr through logging's last-resort handler."""
    code = ("import logging, kproto, minibroker\n"
            "logging.getLogger('kproto.producer').warning('from kproto')\n"
            "logging.getLogger('minibroker.groups').warning('from minibroker')\n"
            "print([type(h).__name__ for h in logging.getLogger('kproto').handlers],"
            " [type(h).__name__ for h in logging.getLogger('minibroker').handlers])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['NullHandler'] ['NullHandler']"
    assert "from kproto" not in done.stderr and "from minibroker" not in done.stderr


def test_the_guide_lists_every_fixture_of_the_plugin():
    """Issue 13: the guide's fixture list names every fixture minibroker's plugin exports
    (``kafka_cluster`` and its companions included)."""
    from minibroker import pytest_plugin

    assert {"kafka_cluster", "kafka_cluster_bootstrap_servers", "minicluster_config"} <= set(pytest_plugin.__all__)
    fixtures = GUIDE.split("\npytest fixtures\n", 1)[1].split(".. literalinclude::", 1)[0]
    assert [name for name in pytest_plugin.__all__ if f"``{name}``" not in fixtures] == []
