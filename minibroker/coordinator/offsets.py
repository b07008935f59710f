"""Committed offsets: per group, topic and partition, with metadata and leader epoch.

The store is a map in memory with an optional journal: every change (commits of one
OffsetCommit, deletions) is handed to the journal first, as a list of entries, then
applied. The broker's journal appends them to ``__consumer_offsets``
(:mod:`minibroker.coordinator.offsets_log`) and :meth:`OffsetStore.replay` reads them
back on start. Journal first: if the write fails, memory still agrees with the log.
A cluster's commits are written by the group coordinator's replicated journal and
replayed here once acknowledged (:mod:`minibroker.coordinator.group_coordinator`).

Transactional commits (TxnOffsetCommit) are held apart, per producer id, once written
(:meth:`OffsetStore.stage_txn`): OffsetFetch does not show them, and they become the
committed offsets when the transaction commits (:meth:`OffsetStore.complete_txn`, on
its marker) or are dropped when it aborts (Kafka's ``GroupMetadata.prepareTxnOffsetCommit``
and ``completePendingTxnOffsetCommit``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["CommittedOffset", "Journal", "OffsetEntry", "OffsetStore"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommittedOffset:
    """One committed position, as OffsetCommit sent it and OffsetFetch returns it."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1  # ms since the epoch, when the broker accepted the commit


# (group, topic, partition, the commit or None for a deletion)
OffsetEntry = tuple[str, str, int, "CommittedOffset | None"]
# Called with a group and its changed entries: one group per call.
Journal = Callable[[str, "list[OffsetEntry]"], None]


class OffsetStore:
    """group -> (topic, partition) -> :class:`CommittedOffset`.

    Args:
        journal: called with every change before it is applied; None keeps nothing.
    """

    def __init__(self, journal: Journal | None = None) -> None:
        self._groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self._journal = journal
        # producer id -> group -> (topic, partition) -> a transactional commit not yet decided
        self._pending: dict[int, dict[str, dict[tuple[str, int], CommittedOffset]]] = {}

    # -- transactional commits (KIP-98) -------------------------------------------------------

    def stage_txn(self, producer_id: int, entries: Iterable[OffsetEntry]) -> None:
        """Hold a transactional producer's commits (already written) until its transaction ends."""
        for group_id, topic, partition, committed in entries:
            if committed is not None:
                self._pending.setdefault(producer_id, {}).setdefault(group_id, {})[(topic, partition)] = committed

    def complete_txn(self, producer_id: int, commit: bool, groups: Callable[[str], bool] = lambda g: True) -> int:
        """The producer's transaction ended (its marker is in ``__consumer_offsets``): its
        held commits of the groups that ``groups`` accepts become committed offsets, or
        are dropped on an abort; returns how many partitions were decided."""
        held = self._pending.get(producer_id, {})
        decided = 0
        for group_id in [g for g in held if groups(g)]:
            offsets = held.pop(group_id)
            decided += len(offsets)
            if commit:
                self.replay((group_id, t, p, c) for (t, p), c in offsets.items())
        if not held:
            self._pending.pop(producer_id, None)
        return decided

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether a transaction holds a commit of this partition (OffsetFetch require_stable)."""
        return any((topic, partition) in by_group.get(group_id, {}) for by_group in self._pending.values())

    def pending_groups(self) -> Iterable[str]:
        return {g for by_group in self._pending.values() for g in by_group}

    def commit(self, group_id: str, offsets: Iterable[tuple[str, int, CommittedOffset]]) -> None:
        """Commit several partitions of one group at once (one journal write)."""
        self._change(group_id, [(group_id, topic, partition, c) for topic, partition, c in offsets])

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._groups.get(group_id, {}).get((topic, partition))

    def committed(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        """Every committed partition of a group (a copy), in commit order."""
        return dict(self._groups.get(group_id, {}))

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._groups.get(group_id))

    def groups(self) -> Iterable[str]:
        return [g for g, offsets in self._groups.items() if offsets]

    def delete_partitions(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> None:
        """Delete several committed partitions of one group at once (one journal write)."""
        offsets = self._groups.get(group_id, {})
        self._change(group_id, [(group_id, t, p, None) for t, p in partitions if (t, p) in offsets])

    def delete_group(self, group_id: str) -> None:
        self._change(group_id, [(group_id, t, p, None) for t, p in self._groups.get(group_id, {})])

    def replay(self, entries: Iterable[OffsetEntry]) -> None:
        """Apply entries that the journal holds already (read back on start or by a new
        coordinator, or written and acknowledged by a cluster), without writing them again."""
        for entry in entries:
            self._apply(entry)

    def forget(self, group_id: str) -> None:
        """Drop a group's offsets from memory without writing anything (another broker
        coordinates it now; the journal keeps them), its held transactional ones too."""
        self._groups.pop(group_id, None)
        for by_group in self._pending.values():
            by_group.pop(group_id, None)

    def _change(self, group_id: str, entries: list[OffsetEntry]) -> None:
        if not entries:
            return
        if self._journal is not None:
            self._journal(group_id, entries)
        for entry in entries:
            self._apply(entry)

    def _apply(self, entry: OffsetEntry) -> None:
        group_id, topic, partition, committed = entry
        if committed is not None:
            self._groups.setdefault(group_id, {})[(topic, partition)] = committed
            return
        offsets = self._groups.get(group_id)
        if offsets is not None:
            offsets.pop((topic, partition), None)
            if not offsets:
                del self._groups[group_id]
