"""The executors' half of the ``kproto`` source: fetch one offset range into Arrow batches.

One Spark task reads one :class:`~kproto.spark.planning.OffsetRange` with its own
:class:`~kproto.io.Cluster` (a task is a short-lived Python worker: nothing is shared
between tasks) and an event loop it drives itself, so the generator Spark iterates
needs no thread. Each Fetch response's records go through
:func:`~kproto.records.decode_columnar` straight into Arrow; records outside the
range are sliced off (a fetch returns whole batches, so the first may start before the
range and the last may run past it).

Theory of operation, per Fetch (v4-v12, topic names):

- The position starts at the range's start and moves to the ``next_offset`` of the
  decoded batches, so gaps left by compaction and the offsets of transaction markers
  are stepped over, as a Java consumer does.
- ``isolation.level=read_committed``: the broker answers up to the last stable offset
  and lists the aborted transactions; batches of those are dropped here before
  decoding (Java's ``Fetcher`` does the same walk over batch headers).
- Retriable partition errors (leader moved, metadata stale) refresh the metadata and
  retry. OFFSET_OUT_OF_RANGE, or a partition that ends before the range does, is data
  loss: an error under ``failOnDataLoss=true``, otherwise the task skips to what is
  still there (or stops).
- A response that brings no progress while the range is not done is retried until
  ``kafkaConsumer.pollTimeoutMs``, then fails the task (Spark's connector does too).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from kproto.codec import decode_columnar
from kproto.config import ClientConfig
from kproto.errors import KafkaError, KafkaTimeoutError, OffsetOutOfRangeError, for_code
from kproto.io import Cluster
from kproto.protocol.messages import FetchRequest
from kproto.records import ControlType, parse_control_record, read_batches
from kproto.spark.arrow import record_batch
from kproto.spark.planning import DataLossError, OffsetRange, SourceOptions
from kproto.spark.schema import arrow_schema

__all__ = ["drop_aborted", "read_range"]

_FETCH_MAX_VERSION = 12  # v13+ names topics by id; names keep one request shape for every broker


def drop_aborted(records: Any, aborted: list[tuple[int, int]], check_crc: bool) -> bytes:
    """``records`` without the batches of aborted transactions (read_committed).

    Args:
        records: a Fetch response's record set.
        aborted: ``(producer_id, first_offset)`` of each aborted transaction it overlaps.

    The walk is Java's: a transaction becomes current at its first offset, its data
    batches are dropped while it is current, and its ABORT marker ends it.
    """
    pending = sorted(aborted, key=lambda a: a[1])
    current: set[int] = set()
    kept = []
    view = memoryview(records)
    pos = 0
    for batch in read_batches(view, check_crc):
        start, pos = pos, pos + batch.size
        while pending and pending[0][1] <= batch.last_offset:
            current.add(pending.pop(0)[0])
        if batch.is_control:
            if batch.producer_id in current and any(
                    parse_control_record(r)[1] == ControlType.ABORT for r in batch.records()):
                current.discard(batch.producer_id)
            continue  # markers are never data
        if batch.is_transactional and batch.producer_id in current:
            continue
        kept.append(view[start:pos])
    return b"".join(kept)


class _RangeReader:
    """The state of one task's fetch loop (see the module docstring)."""

    def __init__(self, options: SourceOptions, task: OffsetRange) -> None:
        self.options = options
        self.task = task
        self.config = ClientConfig("consumer", options.kafka)
        self.cluster = Cluster(self.config)
        self.position = task.start
        self.read_committed = self.config["isolation.level"] == "read_committed"
        self.schema = arrow_schema(options.include_headers)
        self.last_error: KafkaError | None = None  # of the retries, for the timeout's message

    def _request(self) -> FetchRequest:
        c = self.config
        return FetchRequest(
            replica_id=-1, max_wait_ms=c["fetch.max.wait.ms"], min_bytes=c["fetch.min.bytes"],
            max_bytes=c["fetch.max.bytes"], isolation_level=1 if self.read_committed else 0,
            session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id=c["client.rack"],
            topics=[FetchRequest.FetchTopic(topic=self.task.topic, partitions=[FetchRequest.FetchPartition(
                partition=self.task.partition, fetch_offset=self.position, current_leader_epoch=-1,
                last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=c["max.partition.fetch.bytes"])])])

    async def _leader(self) -> int:
        t = self.task
        if self.cluster.leader(t.topic, t.partition) < 0 or self.cluster.stale:
            await self.cluster.refresh([t.topic])
        leader = self.cluster.leader(t.topic, t.partition)
        if leader < 0:
            raise for_code(5)(f"{t.topic}-{t.partition} has no leader")  # LEADER_NOT_AVAILABLE: retriable
        return leader

    async def fetch(self) -> Any:
        """One Fetch; returns the partition's data, or None after a retriable error."""
        try:
            leader = await self._leader()
            response = await self.cluster.request(leader, self._request(), min_version=4,
                                                  max_version=_FETCH_MAX_VERSION)
        except KafkaError as exc:
            if not exc.retriable:
                raise
            await self._retry_later(exc)
            return None
        data = response.responses[0].partitions[0]
        if data.error_code == OffsetOutOfRangeError.code:
            return data
        if data.error_code:
            error = for_code(data.error_code)(f"fetching {self.task.topic}-{self.task.partition} at {self.position}")
            if not error.retriable:
                raise error
            await self._retry_later(error)
            return None
        return data

    async def _retry_later(self, error: KafkaError) -> None:
        self.last_error = error
        self.cluster.topics.pop(self.task.topic, None)  # forces a metadata refresh
        await asyncio.sleep(self.config["retry.backoff.ms"] / 1000)

    def lost(self, what: str) -> None:
        if self.options.fail_on_data_loss:
            raise DataLossError(f"{self.task.topic}-{self.task.partition}: {what}. "
                                "Set failOnDataLoss=false to skip what is gone.")

    def take(self, data: Any) -> pa.RecordBatch | None:
        """Advance past ``data`` (a partition's Fetch answer); its records in the range, if any."""
        t = self.task
        if data.error_code == OffsetOutOfRangeError.code:
            if self.position < data.log_start_offset:
                self.lost(f"offsets {self.position}-{data.log_start_offset - 1} are gone (the log starts at "
                          f"{data.log_start_offset})")
                self.position = data.log_start_offset
            else:
                self.lost(f"the log ends at {data.high_watermark}, before offset {t.end} that was planned")
                self.position = t.end
            return None
        records = data.records
        if records is None or len(records) == 0:
            end_of_log = data.last_stable_offset if self.read_committed and data.last_stable_offset >= 0 \
                else data.high_watermark
            if end_of_log <= self.position and end_of_log < t.end:
                self.lost(f"the log ends at {end_of_log}, before offset {t.end} that was planned")
                self.position = t.end
            return None
        check_crc = self.config["check.crcs"]
        if self.read_committed and data.aborted_transactions:
            records = drop_aborted(records, [(a.producer_id, a.first_offset) for a in data.aborted_transactions],
                                   check_crc)
        cols = decode_columnar(records, self.position, check_crc)
        self.position = max(self.position, cols.next_offset)
        if cols.count == 0:
            return None
        batch = record_batch(cols, t.topic, t.partition, self.schema)
        offsets = np.frombuffer(cols.offsets, np.int64, cols.count)
        keep = int(np.searchsorted(offsets, t.end))  # offsets increase within a partition
        return batch if keep == cols.count else batch.slice(0, keep)

    def batches(self, loop: asyncio.AbstractEventLoop) -> Iterator[pa.RecordBatch]:
        timeout = self.options.poll_timeout_ms / 1000
        last_progress = time.monotonic()
        while self.position < self.task.end:
            before = self.position
            data = loop.run_until_complete(self.fetch())
            batch = None if data is None else self.take(data)
            if batch is not None and batch.num_rows:
                yield batch
            if self.position > before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > timeout:
                raise KafkaTimeoutError(
                    f"no records of {self.task.topic}-{self.task.partition} from offset {self.position} in "
                    f"{timeout:g} s (kafkaConsumer.pollTimeoutMs); {self.task.end} was planned"
                    + (f"; last error: {self.last_error}" if self.last_error else "")) from self.last_error


def read_range(options: SourceOptions, task: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Fetch ``task``'s offsets and yield them as Arrow batches of the source's schema.

    Raises:
        DataLossError: offsets of the range are gone and ``failOnDataLoss`` is set.
        KafkaTimeoutError: no progress for ``kafkaConsumer.pollTimeoutMs``.
        KafkaError: a non-retriable error from the broker.
    """
    loop = asyncio.new_event_loop()
    reader = _RangeReader(options, task)
    try:
        yield from reader.batches(loop)
    finally:
        loop.run_until_complete(reader.cluster.close())
        loop.close()
