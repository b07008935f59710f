"""A segment's aborted-transaction index (``.txnindex``), in Kafka's format.

Facts (Kafka's ``TransactionIndex`` and ``AbortedTxn``, storage/internals/log; the entry
layout is :mod:`kproto.log_files`'):

- One index per segment, holding the aborted transactions whose ABORT marker lies in that
  segment, in marker order (last offsets strictly increase). A transaction may begin in
  an earlier segment.
- Each entry says: producer id, the transaction's first offset, the marker's offset
  (``lastOffset``) and the partition's last stable offset once the marker was written
  (``lastStableOffset``: the first offset of the earliest transaction still open then,
  else the marker's offset + 1; ``ProducerStateManager.lastStableOffset``).
- A read_committed fetch of ``[fetchOffset, upperBoundOffset)`` lists every entry with
  ``lastOffset >= fetchOffset`` and ``firstOffset < upperBoundOffset``, from the segment
  holding the fetch offset onwards, and stops after an entry whose ``lastStableOffset``
  reaches the upper bound: no transaction aborted later can have started in the range
  (``collectAbortedTxns``, ``UnifiedLog.collectAbortedTransactions``).
- The file is created by its first entry (an index of a segment without aborts is no
  file at all), truncated with the log (``truncateTo``: entries whose marker is at or
  past the offset go) and deleted, renamed and flushed with its segment.

Recovery: the broker rebuilds a partition's producer state from its log at every start,
replaying every marker (:meth:`minibroker.state.BrokerState._rebuild_producers`); an
entry missing after the last one the file holds (a crash after the marker was written and
before its entry was) is appended then. At open, the file keeps the longest prefix of
whole, valid entries (version 0, last offsets increasing, inside the segment): a torn or
damaged tail is cut, and what it held comes back by that replay.
"""

from __future__ import annotations

import logging
from pathlib import Path

from kproto.log_files import ABORTED_TXN_ENTRY, AbortedTxn, pack_aborted_txn, unpack_aborted_txns
from minibroker.log.index import _IndexFile

__all__ = ["AbortedTxn", "TransactionIndex"]

log = logging.getLogger(__name__)


class TransactionIndex:
    """The aborted transactions of one segment (see the module docstring).

    Args:
        base_offset: the segment's base offset.
        path: the ``.txnindex`` file (created by the first :meth:`append`), or None to
            keep the entries in memory only.
    """

    def __init__(self, base_offset: int, path: Path | None = None) -> None:
        self.base_offset = base_offset
        self._file = _IndexFile(path)
        self._entries: list[AbortedTxn] = []

    @property
    def path(self) -> Path | None:
        return self._file.path

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[AbortedTxn]:
        """Every entry, in marker order."""
        return list(self._entries)

    @property
    def last_offset(self) -> int:
        """The marker offset of the last entry; -1 when there is none."""
        return self._entries[-1].last_offset if self._entries else -1

    def load(self, *, offset_limit: int) -> None:
        """Read the file back, keeping its longest valid prefix (see the module docstring):
        whole version-0 entries whose last offsets increase within ``[base offset,
        offset_limit)``. A cut tail is logged and truncated from the file."""
        path = self._file.path
        if path is None or not path.exists():
            return
        data = self._file.read_all()
        kept: list[AbortedTxn] = []
        size = len(data) - len(data) % ABORTED_TXN_ENTRY.size
        for start in range(0, size, ABORTED_TXN_ENTRY.size):
            try:
                (entry,) = unpack_aborted_txns(data[start:start + ABORTED_TXN_ENTRY.size])
            except ValueError:
                break
            if not (self.base_offset <= entry.last_offset < offset_limit) or \
                    (kept and entry.last_offset <= kept[-1].last_offset) or entry.first_offset > entry.last_offset:
                break
            kept.append(entry)
        self._entries = kept
        valid = len(kept) * ABORTED_TXN_ENTRY.size
        if valid != len(data):
            log.warning("%s: cut %d bytes of torn or invalid entries after byte %d", path, len(data) - valid, valid)
            self._file.truncate(valid)

    def append(self, txn: AbortedTxn) -> None:
        """Add the entry of an aborted transaction whose marker is after every entry's.

        Raises:
            ValueError: the marker is not after the last entry's (Kafka's rule).
            OSError: the write failed; the entry is not added (the file is cut back).
        """
        if txn.last_offset <= self.last_offset:
            raise ValueError(f"aborted transaction at {txn.last_offset} is not after {self.last_offset}")
        position = len(self._entries) * ABORTED_TXN_ENTRY.size
        try:
            self._file.write_at(position, pack_aborted_txn(txn))
        except OSError:
            self._file.truncate(position)
            raise
        self._entries.append(txn)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """The entries overlapping ``[fetch_offset, upper_bound_offset)`` and whether the
        search is complete (an entry's last stable offset reached the upper bound), as
        Kafka's ``collectAbortedTxns``."""
        found = []
        for txn in self._entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (Kafka's ``truncateTo``)."""
        keep = 0
        while keep < len(self._entries) and self._entries[keep].last_offset < offset:
            keep += 1
        if keep < len(self._entries):
            if self._file.path is not None and self._file.path.exists():
                self._file.truncate(keep * ABORTED_TXN_ENTRY.size)
            del self._entries[keep:]

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def unlink(self) -> None:
        self._file.unlink()

    def rename(self, path: Path) -> None:
        """Give the file a new name (if it exists: it is made lazily)."""
        if self._file.path is not None and self._file.path.exists():
            self._file.rename(path)
        else:
            self._file.path = path
