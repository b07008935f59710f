"""Fetch, one owner for the clients: the request, the answer per partition, what each
error code asks of the fetcher, and which batches a consumer returns (read_committed).

The consumer's :mod:`~kproto.consumer.fetcher` (records decoded a batch at a time as
poll drains them) and the Spark source's :mod:`~kproto.spark.fetch` (record sets
decoded into Arrow columns) both build their requests with :class:`FetchSettings`,
send them with :func:`fetch`, sort a partition's error with :func:`partition_action`
and filter its batches with :class:`BatchFilter`; they differ only in what they decode
into and in what they do with each action.

Versions: v4-v12 (:mod:`kproto.io.versions`): record batches, the isolation level, the
last stable offset and the aborted transactions need v4 (KIP-98); from v13 topics are
named by id (KIP-516), and the clients fetch by name. No fetch session (KIP-227): each
request is a full one (``session_id`` 0, ``session_epoch`` -1).

Leader epochs (KIP-320): each partition carries the ``current_leader_epoch`` the client's
metadata knows (:meth:`~kproto.io.cluster.Cluster.leader_epoch`), so a leader that moved
on answers FENCED_LEADER_EPOCH (refresh) and one that is behind UNKNOWN_LEADER_EPOCH
(retry); a caller that knows the epoch of the record before its fetch offset sends it as
``last_fetched_epoch`` (v12+), and a leader whose log diverged from it answers with
``diverging_epoch`` instead of records (the consumer validates its position then, KIP-320).
A leadership error's ``current_leader`` hint (v12+, KIP-951) is given to the cluster's
metadata by :func:`fetch` itself (:meth:`~kproto.io.cluster.Cluster.update_leader`).

read_committed (Java's ``CompletedFetch``). The broker returns records up to the last
stable offset and the aborted transactions overlapping them, ``(producer_id,
first_offset)``. Walking the batches in order, each aborted transaction whose first
offset is at or before a batch's last offset marks its producer as aborting; a
transactional batch of an aborting producer is skipped, and that producer's ABORT
marker (a control batch) ends it. Control batches are never returned, whatever the
isolation level.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kproto.errors import (
    FencedLeaderEpochError,
    InconsistentTopicIdError,
    KafkaStorageError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    ReplicaNotAvailableError,
    UnknownLeaderEpochError,
    UnknownServerError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    for_code,
)
from kproto.io.cluster import Cluster
from kproto.protocol.messages import FetchRequest
from kproto.records import Batch, ControlType, parse_control_record, read_batches
from kproto.structs import TopicPartition

__all__ = ["Action", "BatchFilter", "FetchSettings", "fetch", "fetch_answers", "fetch_request", "kept_batches",
           "partition_action"]


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """What every Fetch of a client asks, from its consumer settings."""

    max_wait_ms: int  # fetch.max.wait.ms
    min_bytes: int  # fetch.min.bytes
    max_bytes: int  # fetch.max.bytes
    partition_max_bytes: int  # max.partition.fetch.bytes
    read_committed: bool  # isolation.level
    rack: str  # client.rack (KIP-392)
    timeout: float  # seconds: request.timeout.ms, plus fetch.max.wait.ms the broker may hold it

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FetchSettings:
        return cls(config["fetch.max.wait.ms"], config["fetch.min.bytes"], config["fetch.max.bytes"],
                   config["max.partition.fetch.bytes"], config["isolation.level"] == "read_committed",
                   config["client.rack"], (config["request.timeout.ms"] + config["fetch.max.wait.ms"]) / 1000)

    def request(self, offsets: Mapping[TopicPartition, int], epochs: Mapping[TopicPartition, tuple[int, int]] = {}
                ) -> FetchRequest:
        """A full (sessionless) Fetch of ``{partition: fetch offset}``; ``epochs`` gives a
        partition's ``(current_leader_epoch, last_fetched_epoch)`` (default -1, -1: none)."""
        by_topic: dict[str, list[FetchRequest.FetchPartition]] = {}
        for tp, offset in offsets.items():
            current, last = epochs.get(tp, (-1, -1))
            by_topic.setdefault(tp.topic, []).append(FetchRequest.FetchPartition(
                partition=tp.partition, fetch_offset=offset, partition_max_bytes=self.partition_max_bytes,
                current_leader_epoch=current, last_fetched_epoch=last))
        return FetchRequest(
            replica_id=-1, max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes, max_bytes=self.max_bytes,
            isolation_level=1 if self.read_committed else 0, session_id=0, session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            rack_id=self.rack)


async def fetch(cluster: Cluster, node: int, settings: FetchSettings, offsets: Mapping[TopicPartition, int],
                last_fetched_epochs: Mapping[TopicPartition, int] = {}) -> dict[TopicPartition, Any]:
    """Fetch ``offsets`` from broker ``node``: each partition's answer (the response's
    ``PartitionData``: ``error_code``, ``records``, ``high_watermark``, ``diverging_epoch``,
    ``preferred_read_replica``...), by partition.

    Each partition is sent with the leader epoch the cluster's metadata knows, and with
    its ``last_fetched_epochs`` entry if any (KIP-320). A partition's leadership error with
    a ``current_leader`` hint updates the metadata (KIP-951).

    Raises:
        KafkaError: the request failed, or the broker refused it as a whole.
    """
    response = await cluster.request(node, fetch_request(cluster, settings, offsets, last_fetched_epochs),
                                     timeout=settings.timeout)
    return fetch_answers(cluster, node, response)


def fetch_request(cluster: Cluster, settings: FetchSettings, offsets: Mapping[TopicPartition, int],
                  last_fetched_epochs: Mapping[TopicPartition, int] = {}) -> FetchRequest:
    """The request :func:`fetch` sends (for a caller that sends it itself)."""
    epochs = {tp: (cluster.leader_epoch(tp.topic, tp.partition), last_fetched_epochs.get(tp, -1)) for tp in offsets}
    return settings.request(offsets, epochs)


def fetch_answers(cluster: Cluster, node: int, response: Any) -> dict[TopicPartition, Any]:
    """What :func:`fetch` returns, from broker ``node``'s answer to :func:`fetch_request`."""
    if response.error_code:
        raise for_code(response.error_code)(f"Fetch from broker {node}")
    answers = {}
    for t in response.responses:
        for p in t.partitions:
            answers[TopicPartition(t.topic, p.partition_index)] = p
            hint = p.current_leader
            if p.error_code and hint is not None and hint.leader_id >= 0:
                cluster.update_leader(t.topic, p.partition_index, hint.leader_id, hint.leader_epoch,
                                      response.node_endpoints or ())
    return answers


class Action(enum.Enum):
    """What a partition's Fetch error code asks of the fetcher (Java's ``AbstractFetch``)."""

    RECORDS = "records"  # no error: take the records
    OUT_OF_RANGE = "offset out of range"  # the fetch offset is not in the log: reset or report
    REFRESH = "refresh metadata"  # the leader moved or is unknown: look it up, retry after a backoff
    RETRY = "retry"  # transient: retry after a backoff
    RAISE = "raise"  # not retriable by fetching again: report it


# Java's AbstractFetch.handleInitializeErrors: these ask for a metadata update...
_REFRESH = frozenset(e.code for e in (
    NotLeaderOrFollowerError, ReplicaNotAvailableError, KafkaStorageError, FencedLeaderEpochError,
    OffsetNotAvailableError, UnknownTopicOrPartitionError, UnknownTopicIdError, InconsistentTopicIdError,
    LeaderNotAvailableError))
# ... and these are retried as they are (UNKNOWN_SERVER_ERROR: Java logs it and fetches again).
_RETRY = frozenset(e.code for e in (UnknownLeaderEpochError, UnknownServerError))


def partition_action(error_code: int) -> Action:
    """What to do about a partition's Fetch ``error_code``."""
    if error_code == 0:
        return Action.RECORDS
    if error_code == OffsetOutOfRangeError.code:
        return Action.OUT_OF_RANGE
    if error_code in _REFRESH:
        return Action.REFRESH
    if error_code in _RETRY:
        return Action.RETRY
    return Action.RAISE


class BatchFilter:
    """Which batches of one partition's answer hold records to return, walked in order.

    Args:
        aborted: the aborted transactions the answer lists (read_committed): the
            response's ``AbortedTransaction`` s, or anything with their ``producer_id``
            and ``first_offset``; None under read_uncommitted.
    """

    __slots__ = ("_aborted", "_aborting")

    def __init__(self, aborted: Iterable[Any] | None) -> None:
        self._aborted: list[tuple[int, int]] | None = None  # a heap of (first_offset, producer_id)
        if aborted is not None:
            self._aborted = [(a.first_offset, a.producer_id) for a in aborted]
            heapq.heapify(self._aborted)
        self._aborting: set[int] = set()

    @classmethod
    def of(cls, data: Any, read_committed: bool) -> BatchFilter:
        """The filter of a partition's Fetch answer ``data``."""
        return cls((data.aborted_transactions or ()) if read_committed else None)

    def skip(self, batch: Batch) -> bool:
        """Whether ``batch`` holds nothing to return: a control batch, or (read_committed)
        a batch of an aborted transaction. Batches must come in offset order."""
        aborted = self._aborted
        if aborted is not None and batch.producer_id >= 0:
            while aborted and aborted[0][0] <= batch.last_offset:
                self._aborting.add(heapq.heappop(aborted)[1])
            if batch.is_control:
                records = batch.records()
                if records and parse_control_record(records[0])[1] == ControlType.ABORT:
                    self._aborting.discard(batch.producer_id)
                return True
            if batch.is_transactional and batch.producer_id in self._aborting:
                return True
        return batch.is_control


def kept_batches(records: Any, batch_filter: BatchFilter, check_crc: bool) -> tuple[bytes, int]:
    """``records`` (a record set) without the batches ``batch_filter`` skips, and the
    offset after the last whole batch (-1 if none), so a reader can step past the
    skipped batches at the end too.

    Raises:
        CorruptRecordError: a batch is corrupt.
    """
    kept = []
    view = memoryview(records)
    pos = 0
    end = -1
    for batch in read_batches(view, check_crc):
        start, pos = pos, pos + batch.size
        end = batch.next_offset
        if not batch_filter.skip(batch):
            kept.append(view[start:pos])
    return b"".join(kept), end
