"""Committed offsets: per group, topic and partition, with metadata and leader epoch.

In memory for now. Every change goes through :meth:`OffsetStore.commit` or one of the
two deletes, so persisting to a ``__consumer_offsets`` log later means appending one
record there (key: group, topic, partition; value: :class:`CommittedOffset`, or a
tombstone for a delete) and replaying the log into a fresh store on start.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CommittedOffset", "OffsetStore"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommittedOffset:
    """One committed position, as OffsetCommit sent it and OffsetFetch returns it."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp: int = -1  # ms since the epoch, when the broker accepted the commit


class OffsetStore:
    """group -> (topic, partition) -> :class:`CommittedOffset`."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    def commit(self, group_id: str, topic: str, partition: int, committed: CommittedOffset) -> None:
        self._groups.setdefault(group_id, {})[(topic, partition)] = committed

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._groups.get(group_id, {}).get((topic, partition))

    def committed(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        """Every committed partition of a group (a copy), in commit order."""
        return dict(self._groups.get(group_id, {}))

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._groups.get(group_id))

    def groups(self) -> Iterable[str]:
        return [g for g, offsets in self._groups.items() if offsets]

    def delete(self, group_id: str, topic: str, partition: int) -> None:
        offsets = self._groups.get(group_id)
        if offsets is not None:
            offsets.pop((topic, partition), None)

    def delete_group(self, group_id: str) -> None:
        self._groups.pop(group_id, None)
