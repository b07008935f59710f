"""ListOffsets' special timestamps: the negative values that ask for an offset by what it
is rather than by time, named once for the clients and the broker.

Java names them in ``ListOffsetsRequest``: ``LATEST_TIMESTAMP`` (-1),
``EARLIEST_TIMESTAMP`` (-2), ``MAX_TIMESTAMP`` (-3, KIP-734, ListOffsets v7+). Kafka
also has -4 (the local log start, KIP-405, v8+) and -5 (the last tiered offset,
KIP-1005, v9+), which only tiered storage gives a meaning; kproto asks neither.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = ["OffsetTimestamp", "list_offsets_min_version"]


class OffsetTimestamp(enum.IntEnum):
    """A ListOffsets timestamp that names an offset instead of a time."""

    #: The high watermark (read_uncommitted) or the last stable offset (read_committed).
    LATEST = -1
    #: The log start offset.
    EARLIEST = -2
    #: The offset of the record with the largest timestamp (KIP-734).
    MAX_TIMESTAMP = -3

    @property
    def min_version(self) -> int:
        """The first ListOffsets version a broker understands this timestamp in."""
        return 7 if self is OffsetTimestamp.MAX_TIMESTAMP else 0


def list_offsets_min_version(timestamps: Iterable[int]) -> int:
    """The lowest ListOffsets version that can ask for all of ``timestamps``."""
    special = set(OffsetTimestamp._value2member_map_)
    return max((OffsetTimestamp(t).min_version for t in set(timestamps) if t in special), default=0)
