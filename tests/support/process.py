"""A real ``python -m minibroker`` process, run from this checkout: the one helper for the
tests and bench/ scripts that need the broker in a process of its own (to SIGKILL it,
SIGSTOP it, restart it on the same data, or test the command itself).

- :func:`minibroker_process`: started, ready, and always stopped on the way out (continued
  first, should the test have stopped it with SIGSTOP; then SIGKILL if still running);
  yields ``(process, bootstrap servers)``.
- :func:`start_minibroker` and :func:`wait_ready`: the two halves, for a test that owns the
  process's life (kills and restarts it) or whose start must fail.
- :func:`child_env`: ``os.environ`` with this checkout first on ``PYTHONPATH`` and
  unbuffered output, so that any child process imports the code under test.

The process prints one line on stdout once it listens, ``minibroker listening on
HOST:PORT`` (its logs go to stderr); ``--port 0`` takes an ephemeral port.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["READY", "ROOT", "TIMEOUT", "child_env", "minibroker_command", "minibroker_process",
           "read_line", "start_minibroker", "stop", "wait_ready"]

ROOT = Path(__file__).resolve().parents[2]
READY = "minibroker listening on "
TIMEOUT = 10.0  # seconds for the process to start or stop


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child that must import this checkout's code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def minibroker_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "minibroker", *args]


def read_line(stream: IO[str], timeout: float) -> str:
    """One line from ``stream``, or "" at EOF; raises TimeoutError after ``timeout`` s, so a
    child that hangs fails the test instead of hanging it."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise TimeoutError(f"no line within {timeout} s") from None


def start_minibroker(*args: str, stdin: Any = None, stderr: Any = subprocess.DEVNULL,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
    """``python -m minibroker ARGS`` started, not waited for; its stdout is a text pipe.

    ``stdin`` and ``stderr`` are as :class:`subprocess.Popen` takes them: stdin inherited
    unless given (``subprocess.PIPE`` for ``--stop-on-stdin-eof``), stderr discarded.
    """
    return subprocess.Popen(minibroker_command(*args), cwd=ROOT, env=env or child_env(), stdin=stdin,
                            stdout=subprocess.PIPE, stderr=stderr, text=True)


def wait_ready(proc: subprocess.Popen, timeout: float = TIMEOUT, log: Path | None = None) -> str:
    """The bootstrap servers from ``proc``'s ready line; RuntimeError if another line or
    none comes within ``timeout`` s (with ``log``'s text, the file its stderr went to)."""
    line = read_line(proc.stdout, timeout)
    if not line.startswith(READY):
        said = f"; its stderr ({log}): {log.read_text()[-3000:]}" if log is not None and log.exists() else ""
        raise RuntimeError(f"minibroker did not start (exit {proc.poll()}): {line!r}{said}")
    return line[len(READY):].strip()


def stop(proc: subprocess.Popen, timeout: float = TIMEOUT) -> None:
    """Continue ``proc`` (it may be stopped), SIGKILL it if it still runs, reap it, close its pipes."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
    proc.wait(timeout=timeout)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


@contextmanager
def minibroker_process(*args: str, stdin: Any = None, log: Path | None = None,
                       env: dict[str, str] | None = None, timeout: float = TIMEOUT,
                       ) -> Iterator[tuple[subprocess.Popen, str]]:
    """A ready ``python -m minibroker ARGS``: yields ``(process, bootstrap servers)`` and
    stops it on the way out, whatever happened. Its stderr goes to the file ``log`` if
    given (and is quoted if the start fails), else nowhere."""
    if log is not None:
        with open(log, "wb") as stderr:
            proc = start_minibroker(*args, stdin=stdin, stderr=stderr, env=env)
    else:
        proc = start_minibroker(*args, stdin=stdin, env=env)
    try:
        yield proc, wait_ready(proc, timeout, log)
    finally:
        stop(proc, timeout)
