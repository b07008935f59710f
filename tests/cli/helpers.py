"""``python -m kproto`` as a real subprocess, for the command's tests: its argv, and an
environment that imports this checkout and names no broker of its own."""

import sys

from tests.support.process import ROOT, child_env

__all__ = ["ROOT", "TIMEOUT", "command", "process_env"]

TIMEOUT = 20.0  # seconds a subprocess may take before the test fails


def process_env() -> dict[str, str]:
    env = child_env()
    env.pop("KPROTO_BOOTSTRAP_SERVERS", None)
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "kproto", *args]
