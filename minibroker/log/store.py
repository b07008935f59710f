"""Where a segment's ``.log`` bytes live: a file, or memory; and the slices reads return.

:class:`FileStore` writes a segment's ``.log`` with ``os.pwrite`` (no user-space buffer:
once an append returns, the bytes are in the OS page cache and survive the death of this
process) and reads it with ``os.pread``; :class:`MemoryStore` keeps the same bytes in
memory (a ``bytearray``, then maps of 8 MiB) for a broker without a data directory. Both have one interface, so
:class:`~minibroker.log.segment.LogSegment` has one code path for both modes.

Reads for ``os.sendfile`` are :class:`LogSlice` objects holding the store's
:class:`SegmentFile`: the descriptor stays open as long as a slice refers to it, so a
segment deleted by retention or replaced by compaction meanwhile is still read whole.
Fetch answers with :class:`RecordSlices`, a stand-in for the records bytes that the
protocol encoder measures without reading (Kafka's ``FileRecords`` plays this part).
"""

from __future__ import annotations

import mmap
import os
import sys
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
    source.fileno(), position, length)``) or, for a log in memory, ``bytes`` or a read-only
    ``memoryview`` of the bytes that never change (see :meth:`MemoryStore.slices`); then
    ``position`` is 0 and ``length`` is ``len(source)``.
    """

    source: SegmentFile | bytes | memoryview
    position: int
    length: int

    def tobytes(self) -> bytes:
        if isinstance(self.source, SegmentFile):
            return _pread_exact(self.source.fileno(), self.length, self.position)
        return bytes(self.source[self.position : self.position + self.length])


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

    def slices(self, position: int, length: int) -> list[LogSlice]:
        return [LogSlice(self.file, position, length)]

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
    """A segment's bytes in memory: a ``bytearray`` for its first :data:`FIRST_CHUNK`
    bytes, then private anonymous maps of :data:`CHUNK` bytes each.

    Why maps (issue 16): a log in memory takes each Produce's bytes into memory never
    touched before, and each fresh 4 KiB page costs a page fault, its zeroing and its
    accounting as the copy reaches it: under a hypervisor about 0.42 ms per megabyte,
    eight times the copy itself (a ``bytearray`` that grows pays that, and a ``mremap``
    now and then). A map's pages are made present just before a write lands on them,
    with one ``madvise(MADV_POPULATE_WRITE)`` (Linux 5.14) for at least
    :data:`_POPULATE_STEP` bytes: about 0.27 ms per megabyte, and what is resident stays
    what the log holds (give or take one step). Huge pages were measured too: on memory
    the host had not backed yet they cost ten times more, so they are not used. The first
    bytes stay in a ``bytearray``, so that a small partition (most of a test broker's)
    costs what it holds, not a map. Positions are arithmetic: chunk ``k >= 1`` starts at
    ``FIRST_CHUNK + (k - 1) * CHUNK``; a write or a read that crosses a boundary is
    split, and a read returns ``bytes`` (one copy), as before.

    :meth:`slices` lends a read-only view of each map the bytes lie in instead (issue 16: a
    2 MiB Fetch read as ``bytes`` cost a copy and, as glibc grew its heap again for each, a
    fresh page's fault per 4 KiB; the server writes the views to the socket. A read across
    a boundary into the next map, a quarter of the 2 MiB answers of a long partition, was
    still copied whole until it became a view of each). So a map's written bytes never
    change once lent: :meth:`truncate` drops maps without
    closing them (an exported map cannot be closed; it is unmapped when its last view
    goes) and gives the map it cuts into, if lent, a copy of the bytes it keeps, so that
    appends after the cut write into the copy, not under a view.
    """

    def __init__(self, created_ms: int):
        self._first = bytearray()
        self._maps: list[mmap.mmap] = []  # chunk k >= 1 is _maps[k - 1]
        self._present = 0  # bytes of the last map made present (see _populate)
        self._lent: set[int] = set()  # indexes in _maps of the maps slice() lent a view of
        self._size = 0
        self._created_ms = created_ms

    @property
    def size(self) -> int:
        return self._size

    def append(self, *parts: bytes | bytearray | memoryview) -> int:
        position = self._size
        for part in parts:
            self._write(memoryview(part))
        return position

    def _write(self, view: memoryview) -> None:
        at = self._size
        if at < FIRST_CHUNK:
            take = min(len(view), FIRST_CHUNK - at)
            self._first += view[:take]
            view = view[take:]
            at += take
        while view:
            k, offset = divmod(at - FIRST_CHUNK, CHUNK)
            if k == len(self._maps):
                self._maps.append(mmap.mmap(-1, CHUNK, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
                self._present = 0
            take = min(len(view), CHUNK - offset)
            if offset + take > self._present:
                self._populate(self._maps[k], offset + take)
            self._maps[k][offset : offset + take] = view[:take]
            view = view[take:]
            at += take
        self._size = at

    def _populate(self, chunk: mmap.mmap, end: int) -> None:
        """Make the last map's pages present up to ``end`` at least (see the class docstring)."""
        global _populate_write
        start = self._present
        stop = min(CHUNK, (max(end, start + _POPULATE_STEP) + mmap.PAGESIZE - 1) & -mmap.PAGESIZE)
        if _populate_write is not None:
            try:
                chunk.madvise(_populate_write, start, stop - start)
            except OSError:  # a kernel before 5.14 (EINVAL): the copy faults the pages in
                _populate_write = None
        self._present = stop

    def pread(self, position: int, length: int) -> bytes:
        length = min(length, self._size - position)  # short at the end, as a file's pread
        if length <= 0:
            return b""
        end = position + length
        if end <= FIRST_CHUNK:
            # One copy (slicing the bytearray itself would copy twice: a bytearray, then
            # bytes); the view is released at once, so that appends may resize it again.
            with memoryview(self._first) as view:
                return bytes(view[position:end])
        k, offset = divmod(position - FIRST_CHUNK, CHUNK)
        if position >= FIRST_CHUNK and offset + length <= CHUNK:
            return self._maps[k][offset : offset + length]  # bytes: one copy
        parts: list[bytes | memoryview] = []
        at = position
        while at < end:
            if at < FIRST_CHUNK:
                parts.append(self.pread(at, min(end, FIRST_CHUNK) - at))
                at = min(end, FIRST_CHUNK)
                continue
            k, offset = divmod(at - FIRST_CHUNK, CHUNK)
            take = min(end - at, CHUNK - offset)
            parts.append(memoryview(self._maps[k])[offset : offset + take])  # joined: one copy
            at += take
        return b"".join(parts)

    def slices(self, position: int, length: int) -> list[LogSlice]:
        """The bytes at ``position`` (``length`` of them, fewer at the end) in order: what
        lies in the first chunk as ``bytes``, then a read-only view per map (see the class
        docstring)."""
        end = min(position + length, self._size)
        out: list[LogSlice] = []
        at, head = position, min(end, FIRST_CHUNK)
        if at < head:
            out.append(LogSlice(self.pread(at, head - at), 0, head - at))
            at = FIRST_CHUNK
        while at < end:
            k, offset = divmod(at - FIRST_CHUNK, CHUNK)
            take = min(end - at, CHUNK - offset)
            self._lent.add(k)  # see the class docstring: these bytes must never change now
            with memoryview(self._maps[k]) as whole:
                out.append(LogSlice(whole[offset : offset + take].toreadonly(), 0, take))
            at += take
        return out

    def truncate(self, size: int) -> None:
        keep = 0 if size <= FIRST_CHUNK else -(-(size - FIRST_CHUNK) // CHUNK)  # chunks still used
        while len(self._maps) > keep:
            self._maps.pop()  # not closed: a lent view may still use it (see the class docstring)
            self._lent.discard(len(self._maps))
            self._present = CHUNK  # the map now last, if any, was filled (or written over)
        cut = size - FIRST_CHUNK - (keep - 1) * CHUNK  # bytes kept of the last map, if any
        if keep and keep - 1 in self._lent and size < self._size and cut < CHUNK:
            # Appends will write after the cut: into a copy, never under a lent view.
            copy = mmap.mmap(-1, CHUNK, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            self._present = 0
            self._populate(copy, cut)
            copy[:cut] = self._maps[keep - 1][:cut]
            self._maps[keep - 1] = copy
            self._lent.discard(keep - 1)
        if size < len(self._first):
            del self._first[size:]
        self._size = size

    def flush(self) -> None:
        pass

    def mtime_ms(self) -> int:
        return self._created_ms

    def close(self) -> None:
        pass

    def unlink(self) -> None:
        self._first = bytearray()
        self.truncate(0)


#: Bytes of a segment in memory kept in a ``bytearray`` before the maps.
FIRST_CHUNK = 256 << 10
#: Bytes of each private anonymous map after that (address space: only what is written is
#: made present).
CHUNK = 8 << 20
_POPULATE_STEP = 64 << 10  # pages made present at a time, at least
# madvise(MADV_POPULATE_WRITE): Linux 5.14+; 23 in every Linux architecture's mman.h
# (Python 3.11's mmap does not name it). None where it is not known or was refused.
_populate_write: int | None = getattr(mmap, "MADV_POPULATE_WRITE", 23) if sys.platform == "linux" else None
