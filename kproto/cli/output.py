"""How ``kproto`` commands print: aligned tables for people, JSON lines for programs.

A command builds its rows once, as dicts, and :func:`emit` renders them either way
(``--json`` picks). Everything goes to ``sys.stdout`` as it is at the time of the call,
so that tests capturing it see it; the caller of :func:`~kproto.cli.main.main` handles a
reader that went away (``BrokenPipeError``).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["TIMESTAMP_TYPES", "add_json_option", "emit", "json_bytes", "table"]

#: A record's or batch's timestamp type as Java's ``TimestampType`` prints it.
TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON lines (one object per row) instead of a table")


def json_bytes(data: bytes | None) -> str | dict[str, str] | None:
    """Bytes for JSON, without loss: UTF-8 text as a string, anything else as ``{"base64": ...}``."""
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """``rows`` as text columns, headed by the keys in Kafka's style (``LOG-END-OFFSET``)."""
    cells = [[c.upper().replace("_", "-") for c in columns]]
    cells += [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in cells)


def emit(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], as_json: bool) -> None:
    """Print ``rows``: a table of ``columns``, or every field of each row as a JSON line."""
    out = sys.stdout
    if as_json:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    elif rows:
        out.write(table(rows, columns) + "\n")
    out.flush()
