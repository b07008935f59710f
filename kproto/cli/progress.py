"""A live progress line on stderr for long commands (``kproto perf``).

tqdm draws it when it is installed; without it, a plain line redrawn in place does (no
dependency is needed for the CLI). Nothing is drawn when stderr is not a terminal, so
logs and pipes get only the commands' results.
"""

from __future__ import annotations

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


def progress(total: int | None, unit: str, desc: str, enabled: bool = True) -> Progress:
    """A progress display of ``total`` (None: unknown) ``unit``\\ s; close it when done."""
    if not enabled or not sys.stderr.isatty():
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:
        return _Line(total, unit, desc)
    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, unit_scale=True)
