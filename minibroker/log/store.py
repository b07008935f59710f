"""Where a segment's ``.log`` bytes live: a file, or memory; and the slices reads return.

:class:`FileStore` writes a segment's ``.log`` with ``os.pwrite`` (no user-space buffer:
once an append returns, the bytes are in the OS page cache and survive the death of this
process) and reads it with ``os.pread``; :class:`MemoryStore` keeps the same bytes in a
``bytearray`` for a broker without a data directory. Both have one interface, so
:class:`~minibroker.log.segment.LogSegment` has one code path for both modes.

Reads for ``os.sendfile`` are :class:`LogSlice` objects holding the store's
:class:`SegmentFile`: the descriptor stays open as long as a slice refers to it, so a
segment deleted by retention or replaced by compaction meanwhile is still read whole.
Fetch answers with :class:`RecordSlices`, a stand-in for the records bytes that the
protocol encoder measures without reading (Kafka's ``FileRecords`` plays this part).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

__all__ = ["FileStore", "LogSlice", "MemoryStore", "RecordSlices", "SegmentFile"]


class SegmentFile:
    """An open ``.log`` file descriptor, closed when closed or no longer referenced.

    :class:`LogSlice` objects keep a reference, so that a segment deleted while a read of it
    is in flight (``os.sendfile`` on another thread, say) keeps its bytes until the read
    ends: POSIX keeps an unlinked file while a descriptor is open, and a descriptor number
    is never reused while this object lives.
    """

    __slots__ = ("path", "_fd")

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd: int | None = fd

    def fileno(self) -> int:
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"SegmentFile({str(self.path)!r}, fd={self._fd})"


class LogSlice(NamedTuple):
    """A run of whole batches: ``length`` bytes at ``position`` of ``source``.

    ``source`` is a :class:`SegmentFile` for a log on disk (``os.sendfile(out,
    source.fileno(), position, length)``) or ``bytes`` for a log in memory (then
    ``position`` is 0 and ``length`` is ``len(source)``).
    """

    source: SegmentFile | bytes
    position: int
    length: int

    def tobytes(self) -> bytes:
        if isinstance(self.source, bytes):
            return self.source[self.position : self.position + self.length]
        return _pread_exact(self.source.fileno(), self.length, self.position)


class RecordSlices:
    """A records field's value made of log slices, not read yet.

    ``len()`` is the size of the bytes the slices hold, which is all the protocol encoder
    asks of a records value (:func:`kproto.protocol.frames.encode_response_parts` keeps the
    object in place), so a broker can send the slices from disk with ``os.sendfile``;
    :meth:`tobytes` reads them for any other use.
    """

    __slots__ = ("slices", "_size")

    def __init__(self, slices: Iterable[LogSlice]) -> None:
        self.slices = tuple(slices)
        self._size = sum(s.length for s in self.slices)

    def __len__(self) -> int:
        return self._size

    def tobytes(self) -> bytes:
        return b"".join(s.tobytes() for s in self.slices)

    def __repr__(self) -> str:
        return f"RecordSlices({len(self.slices)} slices, {self._size} bytes)"


def _pread_exact(fd: int, length: int, position: int) -> bytes:
    data = os.pread(fd, length, position)
    if len(data) == length:
        return data
    # Short reads happen only at end of file for regular files; loop for the rest.
    parts = [data]
    got = len(data)
    while got < length:
        more = os.pread(fd, length - got, position + got)
        if not more:
            raise OSError(f"file ended {length - got} bytes early at position {position + got}")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class FileStore:
    """A segment's ``.log`` on disk."""

    def __init__(self, path: Path, *, create: bool):
        # O_EXCL: a new segment never silently reuses (and truncates) a file of that name.
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o644)
        self.file = SegmentFile(path, fd)
        self.size = os.fstat(fd).st_size

    @property
    def path(self) -> Path:
        return self.file.path

    def append(self, *parts: bytes | bytearray | memoryview) -> int:
        """Write ``parts`` one after the other at the end; returns where the first starts."""
        position = self.size
        fd = self.file.fileno()
        at = position
        for part in parts:
            view = memoryview(part)
            while view:
                written = os.pwrite(fd, view, at)
                view = view[written:]
                at += written
        self.size = at
        return position

    def pread(self, position: int, length: int) -> bytes:
        return os.pread(self.file.fileno(), length, position)

    def slice(self, position: int, length: int) -> LogSlice:
        return LogSlice(self.file, position, length)

    def truncate(self, size: int) -> None:
        os.ftruncate(self.file.fileno(), size)
        self.size = size

    def flush(self) -> None:
        os.fsync(self.file.fileno())

    def mtime_ms(self) -> int:
        return int(os.stat(self.path).st_mtime * 1000)

    def close(self) -> None:
        self.file.close()

    def rename(self, path: Path) -> None:
        os.replace(self.file.path, path)
        self.file.path = path

    def unlink(self) -> None:
        # The descriptor is not closed here: a LogSlice may still be reading it. It closes
        # when the last reference to the SegmentFile goes.
        try:
            os.unlink(self.file.path)
        except FileNotFoundError:
            pass


class MemoryStore:
    """A segment's bytes in memory."""

    def __init__(self, created_ms: int):
        self._buf = bytearray()
        self._created_ms = created_ms

    @property
    def size(self) -> int:
        return len(self._buf)

    def append(self, *parts: bytes | bytearray | memoryview) -> int:
        position = len(self._buf)
        for part in parts:
            self._buf += part
        return position

    def pread(self, position: int, length: int) -> bytes:
        # One copy (slicing the bytearray itself would copy twice: a bytearray, then bytes);
        # the view is released at once, so that appends may resize the buffer again.
        with memoryview(self._buf) as view:
            return bytes(view[position : position + length])

    def slice(self, position: int, length: int) -> LogSlice:
        return LogSlice(self.pread(position, length), 0, length)

    def truncate(self, size: int) -> None:
        del self._buf[size:]

    def flush(self) -> None:
        pass

    def mtime_ms(self) -> int:
        return self._created_ms

    def close(self) -> None:
        pass

    def unlink(self) -> None:
        self._buf = bytearray()
