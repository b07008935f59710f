"""Durability on the file system, shared by the log, its cleaner and the broker's state files.

A file that is created, renamed or deleted survives a power cut only once the directory
that names it is fsynced too (fsync(2): "Calling fsync() does not necessarily ensure that
the entry in the directory containing the file has also reached disk"); Kafka does the
same with ``Utils.flushDir`` after its renames.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_dir"]


def fsync_dir(directory: Path) -> None:
    """Make the entries of ``directory`` (new, renamed and deleted files) durable.

    Raises:
        OSError: the directory cannot be opened or synced.
    """
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
