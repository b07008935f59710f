"""A live progress line on stderr for long commands (``perf``, ``produce``, ``consume``,
``dump-log``, ``groups reset-offsets``, ``pipeline``).

tqdm draws it when it is installed; without it, a plain line redrawn in place does (no
dependency is needed for the CLI). Nothing is drawn when stderr is not a terminal, so
logs and pipes get only the commands' results. A command that writes its results to
stdout as it goes (``consume``, ``dump-log``) draws the line only when stdout is not the
terminal too (its output goes to a file or a pipe), as curl shows its meter only then:
otherwise the line would be redrawn between the results.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Protocol

__all__ = ["Progress", "progress"]

_REDRAW = 0.25  # seconds between redraws of the plain line


class Progress(Protocol):
    """What commands use of a progress bar (tqdm's names)."""

    def update(self, n: int = 1) -> object: ...

    def close(self) -> None: ...


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class _Line:
    """``desc: done/total unit (rate unit/s)``, redrawn at most every :data:`_REDRAW` s."""

    def __init__(self, total: int | None, unit: str, desc: str) -> None:
        self.total, self.unit, self.desc = total, unit, desc
        self.done = 0
        self.start = self.drawn = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.drawn >= _REDRAW:
            self.drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.done / max(now - self.start, 1e-9)
        total = f"/{self.total:,}" if self.total is not None else ""
        sys.stderr.write(f"\r{self.desc}: {self.done:,}{total} {self.unit} ({rate:,.0f} {self.unit}/s)\x1b[K")
        sys.stderr.flush()

    def close(self) -> None:
        self._draw(time.monotonic())
        sys.stderr.write("\n")
        sys.stderr.flush()


def progress(total: int | None, unit: str, desc: str, enabled: bool = True, *,
             streams_stdout: bool = False) -> Progress:
    """A progress display of ``total`` (None: unknown) ``unit``\\ s; close it when done.

    ``streams_stdout``: the command prints its results to stdout as it goes, so the line
    is drawn only when stdout is not a terminal.
    """
    if not enabled or not sys.stderr.isatty() or (streams_stdout and sys.stdout.isatty()):
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:
        return _Line(total, unit, desc)
    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, unit_scale=True, **_size_if_unknown())


def _size_if_unknown() -> dict[str, int]:
    """80x24 for a terminal that says it is 0x0 (a fresh pty, some CI runners), where tqdm
    would draw nothing; nothing to say when the terminal knows its size."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError):
        size = os.terminal_size((0, 0))
    if size.columns > 0 and size.lines > 0:
        return {}
    fallback = shutil.get_terminal_size((80, 24))  # $COLUMNS and $LINES first
    return {"ncols": size.columns or fallback.columns, "nrows": size.lines or fallback.lines}
