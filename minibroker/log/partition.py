"""One partition's log, in memory: record batches kept as the bytes producers sent.

Theory of operation: a Produce batch is validated by the handler, then appended here
with its base offset and partition leader epoch written into the header. Both fields lie
outside the CRC-32C (which covers attributes to the end), so the checksum stays valid
and nothing is re-encoded. Fetch hands back slices of the same bytes.

Only the in-memory form exists so far: on-disk segments in Kafka's layout (``.log``,
``.index``, ``.timeindex``), retention, compaction and recovery are later steps.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from kproto.records import decode_record_set

__all__ = ["PartitionLog", "StoredBatch"]

_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_AT = 12


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """A batch in the log: its offsets, largest timestamp and bytes."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


class PartitionLog:
    """The batches of one partition, with Kafka's offsets bookkeeping.

    With one replica the high watermark is the log end offset: a batch is committed
    as soon as it is appended.
    """

    def __init__(self) -> None:
        self._batches: list[StoredBatch] = []
        self._last_offsets: list[int] = []  # for bisect: last offset of each batch
        self.log_start_offset = 0
        self.log_end_offset = 0

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    def append(self, batch: bytes, *, last_offset_delta: int, max_timestamp: int, leader_epoch: int) -> int:
        """Append one validated v2 batch; returns the base offset it was given."""
        base = self.log_end_offset
        data = bytearray(batch)
        _BASE_OFFSET.pack_into(data, 0, base)
        _LEADER_EPOCH.pack_into(data, _LEADER_EPOCH_AT, leader_epoch)
        stored = StoredBatch(base, base + last_offset_delta, max_timestamp, bytes(data))
        self._batches.append(stored)
        self._last_offsets.append(stored.last_offset)
        self.log_end_offset = stored.last_offset + 1
        return base

    def read(self, offset: int, max_bytes: int, *, at_least_one: bool = True) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``.

        With ``at_least_one`` the first batch comes even when it is larger than
        ``max_bytes`` (KIP-74). Clients drop the records before ``offset``.
        """
        i = bisect.bisect_left(self._last_offsets, offset)
        out: list[bytes] = []
        size = 0
        for stored in self._batches[i:]:
            if (out or not at_least_one) and size + len(stored.data) > max_bytes:
                break
            out.append(stored.data)
            size += len(stored.data)
        return b"".join(out)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """The first record whose timestamp is >= ``timestamp``: ``(offset, timestamp)``."""
        for stored in self._batches:
            if stored.max_timestamp < timestamp:
                continue
            for record in decode_record_set(stored.data)[0]:
                if record.timestamp >= timestamp:
                    return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """The record with the largest timestamp (ListOffsets -3, KIP-734)."""
        best = None
        for stored in self._batches:
            if best is None or stored.max_timestamp > best.max_timestamp:
                best = stored
        if best is None:
            return None
        for record in decode_record_set(best.data)[0]:
            if record.timestamp == best.max_timestamp:
                return record.offset, record.timestamp
        return best.last_offset, best.max_timestamp
