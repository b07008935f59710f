"""A segment's offset index (``.index``) and time index (``.timeindex``), in Kafka's format.

Facts (Kafka's ``OffsetIndex`` and ``TimeIndex``, storage/internals/log; the entry layouts
are :mod:`kproto.log_files`'):

- Both are sparse, flat arrays of fixed-size big-endian entries, no header, no checksum
  ("in the event of a crash it is rebuilt").
- ``.index``: 8-byte entries ``relativeOffset: i32, position: i32``. An entry
  ``(offset, position)`` says the batch whose *last* offset is ``offset`` starts at byte
  ``position`` of the ``.log``. ``LogSegment.append`` adds one when more than
  ``index.interval.bytes`` were written since the last entry, so the first batch of a
  segment never has one. A lookup takes the greatest entry at or below the target (or
  ``(baseOffset, 0)``) and scans batches from there.
- ``.timeindex``: 12-byte entries ``timestamp: i64, relativeOffset: i32``. An entry
  ``(T, O)`` says the largest timestamp at or before offset ``O`` is ``T``, i.e. every record
  with a larger timestamp comes after ``O``. Timestamps strictly increase from entry to
  entry. When a segment stops being active Kafka appends its largest timestamp as a final
  entry, which is how a reopened broker knows a segment's age without reading it.
- Relative offsets are ``offset - baseOffset``: a segment cannot span more than 2^31 offsets.

Kafka preallocates index files to ``segment.index.bytes`` (``log.index.size.max.bytes``,
10 MiB) and trims them to the used size when the segment rolls or the broker shuts down.
minibroker does not preallocate: these files are always exactly the size of their entries,
what Kafka's trimmed files look like, so ``kafka-dump-log.sh`` and Kafka itself read them
as they are (Kafka opens an existing index with ``entries = length / entrySize``). The
size limit is honoured all the same: ``is_full`` says when an index holds
``segment.index.bytes // entry size`` entries (the time index keeps its last slot for the
entry written at the roll, as Kafka's ``TimeIndex.isFull``), and the segment then rolls
(Kafka's ``LogSegment.shouldRoll``).

Entries are also kept in memory (``array`` of native ints, bisected), which is what
lookups use; the file is append-only while the segment is active and rewritten whole when
an index is rebuilt. An append whose write fails (disk full) adds no entry in memory, and
the segment undoes it in the file with :meth:`~OffsetIndex.truncate_to_entries` (Kafka's
``truncateToEntries``), so a short write never leaves a partial entry behind.
"""

from __future__ import annotations

import bisect
import os
import sys
from array import array
from collections.abc import Iterable
from pathlib import Path

from kproto.log_files import (
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    pack_offset_entry,
    pack_time_entry,
    unpack_offset_entries,
    unpack_time_entries,
)

__all__ = ["OffsetIndex", "TimeIndex", "IndexCorrupt"]

_BIG_ENDIAN = sys.byteorder == "big"

NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP


class IndexCorrupt(Exception):
    """An index file does not match its log; the caller rebuilds it from the ``.log``."""


def _to_disk(values: array) -> bytes:
    if _BIG_ENDIAN:
        return values.tobytes()
    copy = array(values.typecode, values)
    copy.byteswap()
    return copy.tobytes()


class _IndexFile:
    """The optional file behind an index: opened lazily, written with pwrite."""

    def __init__(self, path: Path | None):
        self.path = path
        self._fd: int | None = None

    def _open(self) -> int:
        if self._fd is None:
            assert self.path is not None
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def read_all(self) -> bytes:
        assert self.path is not None
        with open(self.path, "rb") as f:
            return f.read()

    def write_at(self, position: int, data: bytes) -> None:
        if self.path is None:
            return
        fd = self._open()
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, position)
            view = view[written:]
            position += written

    def create(self) -> None:
        """Make the file exist (empty), as Kafka does for every new segment."""
        if self.path is not None:
            self._open()

    def replace_all(self, data: bytes) -> None:
        if self.path is None:
            return
        fd = self._open()
        os.ftruncate(fd, 0)
        self.write_at(0, data)

    def truncate(self, size: int) -> None:
        if self.path is not None:
            os.ftruncate(self._open(), size)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def rename(self, path: Path) -> None:
        # An open fd follows the inode, so only the name changes.
        assert self.path is not None
        os.replace(self.path, path)
        self.path = path

    def unlink(self) -> None:
        self.close()
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


class _Index:
    """What both index files share: the segment's base offset and the file's lifecycle."""

    entry_size: int

    def __init__(self, base_offset: int, path: Path | None):
        self.base_offset = base_offset
        self._file = _IndexFile(path)

    @property
    def path(self) -> Path | None:
        return self._file.path

    def create(self) -> None:
        self._file.create()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def rename(self, path: Path) -> None:
        self._file.rename(path)

    def unlink(self) -> None:
        self._file.unlink()

    def _columns(self) -> tuple[array, array]:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._columns()[0])

    def is_full(self, max_index_bytes: int) -> bool:
        """Whether the index holds as many entries as ``max_index_bytes`` (``segment.index.bytes``)
        gives room for (Kafka's ``AbstractIndex.isFull``: ``maxIndexSize`` rounded down to whole
        entries)."""
        return len(self) >= max_index_bytes // self.entry_size

    def truncate_to_entries(self, count: int) -> None:
        """Keep the first ``count`` entries, file included (Kafka's ``truncateToEntries``).

        Undoes appends whose write failed. The file goes first: if that fails too
        (``OSError``), the entries in memory are left as they were.
        """
        self._file.truncate(count * self.entry_size)
        for column in self._columns():
            del column[count:]


class OffsetIndex(_Index):
    """Offset -> file position of one segment (``NNN.index``).

    Args:
        base_offset: the segment's base offset (entries store offsets relative to it).
        path: the index file, or None for a segment kept in memory.
    """

    entry_size = OFFSET_INDEX_ENTRY.size

    def __init__(self, base_offset: int, path: Path | None = None):
        super().__init__(base_offset, path)
        self._relative = array("i")
        self._positions = array("i")

    def _columns(self) -> tuple[array, array]:
        return self._relative, self._positions

    def entries(self) -> list[tuple[int, int]]:
        """Every ``(offset, position)``, in order."""
        return [(self.base_offset + r, p) for r, p in zip(self._relative, self._positions)]

    def last_entry(self) -> tuple[int, int]:
        if not self._relative:
            return self.base_offset, 0
        return self.base_offset + self._relative[-1], self._positions[-1]

    def append(self, offset: int, position: int) -> None:
        """Add ``(offset, position)``; offsets and positions must increase."""
        relative = offset - self.base_offset
        if self._relative and (relative <= self._relative[-1] or position <= self._positions[-1]):
            raise ValueError(f"index entry ({offset}, {position}) does not follow {self.last_entry()}")
        self._file.write_at(len(self._relative) * self.entry_size, pack_offset_entry(relative, position))
        self._relative.append(relative)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The greatest entry at or below ``offset``, or ``(base_offset, 0)``."""
        slot = bisect.bisect_right(self._relative, offset - self.base_offset) - 1
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + self._relative[slot], self._positions[slot]

    def position_at_or_below(self, position: int) -> int:
        """The greatest indexed batch start at or below ``position`` (0 when none).

        Indexed positions are batch boundaries, so a caller that wants whole batches up to
        some byte limit scans only from here (Kafka's ``fetchUpperBoundOffset``).
        """
        slot = bisect.bisect_right(self._positions, position) - 1
        return self._positions[slot] if slot >= 0 else 0

    def load(self, *, log_size: int) -> None:
        """Read the file and check it against a ``.log`` of ``log_size`` bytes.

        Raises:
            IndexCorrupt: the file is missing, has a partial entry, or its entries do not
                increase or point past the log (the caller rebuilds it).
        """
        try:
            data = self._file.read_all()
        except FileNotFoundError:
            raise IndexCorrupt(f"{self.path} is missing") from None
        if len(data) % self.entry_size:
            raise IndexCorrupt(f"{self.path} has {len(data)} bytes, not a multiple of {self.entry_size}")
        relative, positions = array("i"), array("i")
        last_r = last_p = -1
        for r, p in unpack_offset_entries(data):
            if r <= last_r or p <= last_p or p >= log_size:
                raise IndexCorrupt(f"{self.path}: entry ({r}, {p}) out of order or past the log")
            relative.append(r)
            positions.append(p)
            last_r, last_p = r, p
        self._relative, self._positions = relative, positions

    def reset(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        """Replace every entry (an index rebuilt from its log), file included."""
        self._relative, self._positions = array("i"), array("i")
        for offset, position in entries:
            self._relative.append(offset - self.base_offset)
            self._positions.append(position)
        pairs = array("i")
        for r, p in zip(self._relative, self._positions):
            pairs.append(r)
            pairs.append(p)
        self._file.replace_all(_to_disk(pairs))


class TimeIndex(_Index):
    """Timestamp -> offset of one segment (``NNN.timeindex``).

    Args:
        base_offset: the segment's base offset.
        path: the index file, or None for a segment kept in memory.
    """

    entry_size = TIME_INDEX_ENTRY.size

    def __init__(self, base_offset: int, path: Path | None = None):
        super().__init__(base_offset, path)
        self._timestamps = array("q")
        self._relative = array("i")

    def _columns(self) -> tuple[array, array]:
        return self._timestamps, self._relative

    def entries(self) -> list[tuple[int, int]]:
        """Every ``(timestamp, offset)``, in order."""
        return [(t, self.base_offset + r) for t, r in zip(self._timestamps, self._relative)]

    def last_entry(self) -> tuple[int, int]:
        """The last ``(timestamp, offset)``, or ``(-1, base_offset)`` (Kafka's convention)."""
        if not self._timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self.base_offset + self._relative[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add ``(timestamp, offset)`` if the timestamp is larger than the last one's.

        Kafka's ``maybeAppend``: a repeat of the last entry (a segment closed twice) is
        ignored; an offset below the last entry's is a bug.
        """
        last_ts, last_offset = self.last_entry()
        if self._timestamps and offset < last_offset:
            raise ValueError(f"time index offset {offset} is below the last entry's {last_offset}")
        if timestamp <= last_ts:
            return
        relative = offset - self.base_offset
        self._file.write_at(len(self._timestamps) * self.entry_size, pack_time_entry(timestamp, relative))
        self._timestamps.append(timestamp)
        self._relative.append(relative)

    def is_full(self, max_index_bytes: int) -> bool:
        """As for any index, but one slot short: the last is kept for the entry a roll adds
        (Kafka's ``TimeIndex.isFull``)."""
        return len(self) >= max_index_bytes // self.entry_size - 1

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The greatest entry whose timestamp is at or below ``timestamp``, or ``(-1, base)``."""
        slot = bisect.bisect_right(self._timestamps, timestamp) - 1
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[slot], self.base_offset + self._relative[slot]

    def load(self, *, offset_limit: int) -> None:
        """Read the file; every offset must lie in ``[base_offset, offset_limit)``.

        Raises:
            IndexCorrupt: missing, partial entry, timestamps not increasing, offsets
                decreasing or out of the segment.
        """
        try:
            data = self._file.read_all()
        except FileNotFoundError:
            raise IndexCorrupt(f"{self.path} is missing") from None
        if len(data) % self.entry_size:
            raise IndexCorrupt(f"{self.path} has {len(data)} bytes, not a multiple of {self.entry_size}")
        timestamps, relative = array("q"), array("i")
        last_t, last_r = NO_TIMESTAMP, 0
        for t, r in unpack_time_entries(data):
            if t <= last_t or r < last_r or self.base_offset + r >= offset_limit:
                raise IndexCorrupt(f"{self.path}: entry ({t}, {r}) out of order or past the segment")
            timestamps.append(t)
            relative.append(r)
            last_t, last_r = t, r
        self._timestamps, self._relative = timestamps, relative

    def reset(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        """Replace every entry, file included."""
        self._timestamps, self._relative = array("q"), array("i")
        out = bytearray()
        for timestamp, offset in entries:
            self._timestamps.append(timestamp)
            self._relative.append(offset - self.base_offset)
            out += pack_time_entry(timestamp, offset - self.base_offset)
        self._file.replace_all(bytes(out))

