"""A follower's replication: fetching its partitions from their leaders over Kafka's protocol.

Theory of operation (Kafka's ``ReplicaFetcherManager`` / ``AbstractFetcherThread`` /
``ReplicaFetcherThread``). A follower is a Kafka client of its leader: it speaks the real
protocol over loopback TCP with kproto's :class:`~kproto.io.connection.Connection` (which is
why this module, unlike the cluster's core, imports ``kproto.io``).

- :class:`FetcherManager` keeps one :class:`ReplicaFetcher` task per source (leader)
  broker, as Kafka's per-source fetcher threads with ``num.replica.fetchers`` = 1. A
  fetcher left without partitions stops and closes its connection.
- A :class:`ReplicaFetcher` owns one connection to its leader's registered endpoint
  (``client_id`` ``broker-<id>-fetcher``) and the :class:`FetchTarget` s it replicates,
  with the inter-broker listener's TLS and SASL (:attr:`FetcherManager.connection`).
- **Truncation first** (KIP-101, KIP-279): a new target (or one whose leader or leader
  epoch changed) asks the leader OffsetForLeaderEpoch v4 about its latest epoch and
  applies :meth:`~minibroker.cluster.partition.Partition.truncation_offset`: an offset
  (truncate there, fetch from there) or an :class:`~minibroker.cluster.partition.EpochQuery`
  (ask again about an older epoch). A replica without epochs truncates to its high
  watermark without asking (Kafka's fallback).
- **Fetch v15** (at most; the leader's highest if lower): ``replica_state`` with the own
  id and broker epoch (KIP-903), topics by id (v13+), ``current_leader_epoch``
  (KIP-320), ``last_fetched_epoch`` (KIP-595 divergence check), ``fetch_offset`` = own LEO,
  sizes and wait from ``replica.fetch.*``, ``session_id`` 0 (no fetch sessions, KIP-227).
- **Answers**, per partition: records → ``append_as_follower``, then the high watermark
  and log start from the answer; ``diverging_epoch`` → truncate as above;
  FENCED_LEADER_EPOCH → the target is parked until the replica manager gives it again
  with newer metadata (Kafka's ``onPartitionFenced``); NOT_LEADER_OR_FOLLOWER,
  UNKNOWN_LEADER_EPOCH, an unknown topic → retried after ``replica.fetch.backoff.ms``
  (Kafka's ``partitionsWithError``: the leader may not have applied the metadata yet,
  e.g. a restarted broker that has bound its port but not replayed the metadata log); OFFSET_OUT_OF_RANGE → ListOffsets
  with ``replica_id`` and Kafka's rule (``AbstractFetcherThread.fetchOffsetAndTruncate``):
  own LEO above the leader's → truncate to the leader's LEO; own LEO below the leader's
  log start → ``truncate_fully_and_start_at`` that log start. An empty log whose first
  fetched batch begins before its start (the leader's log start is inside that batch)
  starts again at the batch's base offset, as Kafka's ``Partition`` does.
- **Connection failures** close the connection and wait ``replica.fetch.backoff.ms``
  (:class:`kproto.io.retry.Backoff`, fixed as Kafka's fetcher backoff) before reconnecting;
  the targets stay and are not re-truncated (the leader epoch did not change).
- **Faults** (:mod:`minibroker.faults`, set by the node as :attr:`FetcherManager.faults`):
  while the broker is isolated from the other brokers its fetchers send nothing, and an
  answer that arrives meanwhile is taken only at heal (as TCP would deliver it late;
  by then it is usually stale and skipped); a slow disk delays each follower append.
- Truncations are logged at INFO with the records removed and counted in
  ``Partition.truncated_records`` (by :meth:`Partition.truncate_to`).

Not implemented: fetch sessions (KIP-227), throttled replicas, several fetchers per source
(``num.replica.fetchers``), KIP-392 follower fetching from a follower.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kproto._loop import wait_for
from kproto.errors import (
    FencedLeaderEpochError,
    KafkaError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
)
from kproto.io.connection import Connection
from kproto.io.retry import Backoff
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)
from minibroker.cluster.partition import EpochQuery, Partition, ReplicaRole
from minibroker.config import BrokerConfig
from minibroker.faults import BrokerFaults, fetcher_client_id
from minibroker.log import PartitionLog

__all__ = ["FetchTarget", "FetcherManager", "ReplicaFetcher"]

log = logging.getLogger("minibroker.cluster")

FETCH_VERSION = 15  # replica_state (KIP-903), topic ids, diverging epoch
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP = -1, -2  # ListOffsets' special timestamps
# Kafka's AbstractFetcherThread: a fenced epoch waits for new metadata (onPartitionFenced);
# NOT_LEADER_OR_FOLLOWER and the rest are retried after the backoff (partitionsWithError).
_PARK = (FencedLeaderEpochError.code,)


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchTarget:
    """A partition this broker follows: whom to fetch it from, at which leader epoch."""

    topic: str
    topic_id: uuid.UUID
    index: int
    leader: int
    leader_epoch: int

    @property
    def key(self) -> tuple[uuid.UUID, int]:
        return self.topic_id, self.index


@dataclass(slots=True)
class _Fetching:
    """One target's progress: truncating (with the epoch to ask about), fetching, parked."""

    target: FetchTarget
    ask_epoch: int | None = None  # not None: truncate first, asking about this epoch (-1: the latest)
    parked: bool = False
    not_before: float = 0.0  # time.monotonic() before which it is not fetched (a retriable error)


def _local(partition: Partition) -> PartitionLog:
    """A followed replica's log (:meth:`ReplicaFetcher._partition` parks those without one)."""
    if partition.log is None:
        raise NotLeaderOrFollowerError(f"no replica of {partition.topic}-{partition.index} here")
    return partition.log


class ReplicaFetcher:
    """Fetches every target led by broker ``source`` over one connection (a task)."""

    def __init__(self, manager: FetcherManager, source: int) -> None:
        self._manager = manager
        self.source = source
        self.targets: dict[tuple[uuid.UUID, int], _Fetching] = {}
        self._wake = asyncio.Event()
        self._stopped = False
        self.connection: Connection | None = None
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"fetcher-{manager.node_id}-from-{source}")

    def stop(self) -> asyncio.Task[None]:
        """End the task; returns it, to await. The loop checks ``_stopped`` too: Python 3.11's
        ``asyncio.wait_for`` drops a cancel that meets the end of what it awaits (CPython
        gh-86296), e.g. the wake-up that removing the last partition sets."""
        self._stopped = True
        self.task.cancel()
        return self.task

    def __repr__(self) -> str:
        return f"ReplicaFetcher(broker {self._manager.node_id} from {self.source}, {len(self.targets)} partition(s))"

    def put(self, target: FetchTarget) -> None:
        held = self.targets.get(target.key)
        if held is not None and held.target == target:
            return  # the same metadata again: keep the progress (and a park stays a park)
        # New, or a new leader epoch: truncate first (Kafka's addPartitions → Truncating).
        self.targets[target.key] = _Fetching(target=target, ask_epoch=-1)
        self._wake.set()

    def drop(self, key: tuple[uuid.UUID, int]) -> None:
        self.targets.pop(key, None)
        self._wake.set()

    # -- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        try:
            while not self._stopped:
                now = time.monotonic()
                ready = [f for f in self.targets.values() if not f.parked and f.not_before <= now]
                if not ready:
                    waits = [f.not_before - now for f in self.targets.values() if not f.parked]
                    self._wake.clear()
                    try:
                        await wait_for(self._wake.wait(), min(waits) if waits else None)
                    except TimeoutError:
                        pass
                    continue
                try:
                    await self._manager.reachable()  # isolated from the brokers: nothing goes out
                    conn = await self._connect()
                    await self._truncate(conn, [f for f in ready if f.ask_epoch is not None])
                    await self._fetch(conn, [f for f in ready if f.ask_epoch is None])
                    failures = 0
                except Exception as exc:  # noqa: BLE001 - a fetcher must outlive any one failure
                    # The leader went away (or answered garbage): back off, reconnect, keep the targets.
                    failures += 1
                    delay = self._manager.backoff.delay(failures)
                    log.log(logging.INFO if isinstance(exc, (KafkaError, OSError)) else logging.ERROR,
                            "broker %d: fetching from broker %d failed (%r); retrying in %.0f ms",
                            self._manager.node_id, self.source, exc, delay * 1000,
                            exc_info=not isinstance(exc, (KafkaError, OSError)))
                    await self._disconnect()
                    await asyncio.sleep(delay)
        finally:
            await self._disconnect()

    async def _connect(self) -> Connection:
        if self.connection is not None and not self.connection.closed:
            return self.connection
        await self._disconnect()
        endpoint = self._manager.endpoint(self.source)
        if endpoint is None:
            raise KafkaError(f"broker {self.source} has no registered endpoint")
        conn = Connection(endpoint[0], endpoint[1], client_id=fetcher_client_id(self._manager.node_id),
                          node_id=self.source, **self._manager.connection)
        self.connection = conn
        await conn.open()
        return conn

    async def _disconnect(self) -> None:
        conn, self.connection = self.connection, None
        if conn is not None:
            await conn.close(timeout=1.0)

    async def _request(self, conn: Connection, request: Any, version: int, timeout: float | None = None) -> Any:
        """One request to the leader; its answer is taken once this broker is not isolated."""
        await self._manager.reachable()
        response = await conn.request_versioned(request, version, timeout=timeout)
        await self._manager.reachable()
        return response

    def _partition(self, fetching: _Fetching) -> Partition | None:
        """The local follower replica of a target, or None (then the target is parked)."""
        t = fetching.target
        partition = self._manager.partitions(t.topic_id, t.index)
        if partition is None or partition.role is not ReplicaRole.FOLLOWER or partition.log is None \
                or partition.leader_epoch != t.leader_epoch:
            log.info("broker %d: %s-%d is no longer followed at epoch %d here; parked", self._manager.node_id,
                     t.topic, t.index, t.leader_epoch)
            fetching.parked = True
            return None
        return partition

    def _retry_later(self, fetching: _Fetching, why: str) -> None:
        t = fetching.target
        log.debug("broker %d: %s-%d from broker %d: %s; retrying", self._manager.node_id, t.topic, t.index,
                  self.source, why)
        fetching.not_before = time.monotonic() + self._manager.config["replica.fetch.backoff.ms"] / 1000

    def _answer_error(self, fetching: _Fetching, code: int) -> None:
        if code in _PARK:
            t = fetching.target
            log.info("broker %d: %s-%d: broker %d answered error %d at epoch %d; parked until new metadata",
                     self._manager.node_id, t.topic, t.index, self.source, code, t.leader_epoch)
            fetching.parked = True
        else:  # NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH (the leader is behind on metadata), unknown topic...
            self._retry_later(fetching, f"error {code}")

    # -- truncation (KIP-101 / KIP-279) ---------------------------------------------------

    async def _truncate(self, conn: Connection, pending: list[_Fetching]) -> None:
        """Rounds of OffsetForLeaderEpoch until every pending target knows where to truncate."""
        while pending:
            asking: dict[tuple[str, int], tuple[_Fetching, Partition, int]] = {}
            for fetching in pending:
                partition = self._partition(fetching)
                if partition is None:
                    continue
                epoch = fetching.ask_epoch if fetching.ask_epoch is not None and fetching.ask_epoch >= 0 \
                    else _local(partition).epochs.latest_epoch()
                if epoch < 0:  # no epochs at all: nothing to compare, the high watermark is safe
                    partition.truncate_to(partition.high_watermark)
                    fetching.ask_epoch = None
                    continue
                fetching.ask_epoch = epoch
                asking[(fetching.target.topic, fetching.target.index)] = (fetching, partition, epoch)
            if not asking:
                return
            by_topic: dict[str, list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]] = {}
            for (topic, index), (fetching, _, epoch) in asking.items():
                by_topic.setdefault(topic, []).append(OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                    partition=index, current_leader_epoch=fetching.target.leader_epoch, leader_epoch=epoch))
            request = OffsetForLeaderEpochRequest(
                replica_id=self._manager.node_id,
                topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=t, partitions=ps)
                        for t, ps in by_topic.items()])
            response = await self._request(conn, request, OFFSET_FOR_LEADER_EPOCH_VERSION)
            pending = []
            for topic in response.topics:
                for answer in topic.partitions:
                    entry = asking.pop((topic.topic, answer.partition), None)
                    if entry is None:
                        continue
                    fetching, partition, _ = entry
                    if fetching is not self.targets.get(fetching.target.key):
                        continue  # removed or re-targeted while the question was out
                    if answer.error_code:
                        self._answer_error(fetching, answer.error_code)
                        continue
                    where = partition.truncation_offset(answer.leader_epoch, answer.end_offset)
                    if isinstance(where, EpochQuery):
                        fetching.ask_epoch = where.epoch
                        pending.append(fetching)
                    else:
                        partition.truncate_to(where)  # logs and counts what it removed
                        fetching.ask_epoch = None
            for fetching, _, _ in asking.values():  # not answered: ask again later
                self._retry_later(fetching, "no OffsetForLeaderEpoch answer")

    # -- fetching -------------------------------------------------------------------------

    async def _fetch(self, conn: Connection, ready: list[_Fetching]) -> None:
        config = self._manager.config
        live: dict[tuple[uuid.UUID, int], tuple[_Fetching, Partition]] = {}
        for fetching in ready:
            partition = self._partition(fetching)
            if partition is not None:
                live[fetching.target.key] = (fetching, partition)
        if not live:
            return
        version = min(FETCH_VERSION, conn.api_versions.get(ApiKey.FETCH, (0, -1))[1])
        if version < 12:
            raise KafkaError(f"broker {self.source} offers Fetch up to v{version}; a follower needs v12+")
        by_id = version >= 13
        topics: dict[uuid.UUID, FetchRequest.FetchTopic] = {}
        for fetching, partition in live.values():
            t = fetching.target
            local = _local(partition)
            topic = topics.setdefault(t.topic_id, FetchRequest.FetchTopic(
                topic_id=t.topic_id, partitions=[]) if by_id else FetchRequest.FetchTopic(topic=t.topic, partitions=[]))
            topic.partitions.append(FetchRequest.FetchPartition(
                partition=t.index, current_leader_epoch=t.leader_epoch, fetch_offset=local.log_end_offset,
                last_fetched_epoch=local.epochs.latest_epoch(), log_start_offset=local.log_start_offset,
                partition_max_bytes=config["replica.fetch.max.bytes"]))
        replica = {"replica_state": FetchRequest.ReplicaState(
            replica_id=self._manager.node_id, replica_epoch=self._manager.broker_epoch())} \
            if version >= 15 else {"replica_id": self._manager.node_id}
        request = FetchRequest(
            **replica, max_wait_ms=config["replica.fetch.wait.max.ms"], min_bytes=config["replica.fetch.min.bytes"],
            max_bytes=config["replica.fetch.response.max.bytes"], isolation_level=0, session_id=0,
            session_epoch=-1, topics=list(topics.values()))
        wait = config["replica.fetch.wait.max.ms"] / 1000
        response = await self._request(conn, request, version, timeout=wait + conn.request_timeout)
        if response.error_code:
            raise KafkaError(f"broker {self.source} answered Fetch with error {response.error_code}")
        names = {f.target.topic: f.target.topic_id for f, _ in live.values()}
        for topic in response.responses:
            topic_id = topic.topic_id if by_id else names.get(topic.topic)
            if topic_id is None:
                continue
            for answer in topic.partitions:
                entry = live.get((topic_id, answer.partition_index))
                if entry is not None and entry[0] is self.targets.get(entry[0].target.key):
                    await self._on_answer(conn, *entry, answer)

    async def _on_answer(self, conn: Connection, fetching: _Fetching, partition: Partition,
                         answer: FetchResponse.PartitionData) -> None:
        t = fetching.target
        if answer.error_code == OffsetOutOfRangeError.code:
            await self._out_of_range(conn, fetching, partition)
            return
        if answer.error_code:
            self._answer_error(fetching, answer.error_code)
            return
        diverging = answer.diverging_epoch
        if diverging is not None and (diverging.epoch >= 0 or diverging.end_offset >= 0):
            # KIP-595: the leader's log differs from ours before fetch_offset.
            where = partition.truncation_offset(diverging.epoch, diverging.end_offset)
            if isinstance(where, EpochQuery):
                fetching.ask_epoch = where.epoch
            else:
                partition.truncate_to(where)
            return
        try:
            if answer.records and self._manager.faults is not None and self._manager.faults.disk.delay_ms:
                await self._manager.faults.disk.write()  # a slow disk (a fault)
                if fetching is not self.targets.get(t.key) or partition.leader_epoch != t.leader_epoch:
                    return  # re-targeted while it waited: this answer is stale
            if answer.records:
                self._maybe_restart_at_batch(partition, answer.records)
                partition.append_as_follower(memoryview(answer.records))
            partition.update_follower_high_watermark(answer.high_watermark, answer.log_start_offset)
        except NotLeaderOrFollowerError:
            fetching.parked = True  # the role changed while the fetch was out
        except (ValueError, KafkaError) as exc:
            log.warning("broker %d: %s-%d: cannot append what broker %d sent: %s", self._manager.node_id,
                        t.topic, t.index, self.source, exc)
            self._retry_later(fetching, str(exc))

    def _maybe_restart_at_batch(self, partition: Partition, records: bytes | bytearray | memoryview) -> None:
        """An empty log fetching from a leader whose log start is inside a batch (after a
        DeleteRecords) gets that whole batch, which begins before the log's end: the log
        starts again at the batch's base offset (Kafka's
        ``Partition.doAppendRecordsToFollowerOrFutureReplica`` on UnexpectedAppendOffsetException)."""
        local = _local(partition)
        base = int.from_bytes(bytes(records[0:8]), "big", signed=True) if len(records) >= 8 else -1
        if 0 <= base < local.log_end_offset and local.log_end_offset == local.log_start_offset:
            local.truncate_fully_and_start_at(base)

    async def _list_offset(self, conn: Connection, target: FetchTarget, timestamp: int) -> tuple[int, int]:
        """(error code, offset) of ListOffsets at ``timestamp`` asked as replica (LEO for LATEST)."""
        version = conn.version_for(ApiKey.LIST_OFFSETS, min_version=4)
        request = ListOffsetsRequest(
            replica_id=self._manager.node_id, isolation_level=0,
            topics=[ListOffsetsRequest.ListOffsetsTopic(name=target.topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=target.index,
                                                        current_leader_epoch=target.leader_epoch,
                                                        timestamp=timestamp)])])
        response = await self._request(conn, request, version)
        for topic in response.topics:
            for p in topic.partitions:
                if topic.name == target.topic and p.partition_index == target.index:
                    return p.error_code, p.offset
        return OffsetOutOfRangeError.code, -1

    async def _out_of_range(self, conn: Connection, fetching: _Fetching, partition: Partition) -> None:
        # Kafka's AbstractFetcherThread.fetchOffsetAndTruncate.
        t = fetching.target
        local = _local(partition)
        code, leader_end = await self._list_offset(conn, t, LATEST_TIMESTAMP)
        if code:
            self._answer_error(fetching, code)
            return
        if leader_end < local.log_end_offset:
            log.warning("broker %d: %s-%d: own log end %d is past leader %d's (%d): truncating (unclean)",
                        self._manager.node_id, t.topic, t.index, local.log_end_offset, self.source, leader_end)
            partition.truncate_to(leader_end)
            return
        code, leader_start = await self._list_offset(conn, t, EARLIEST_TIMESTAMP)
        if code:
            self._answer_error(fetching, code)
            return
        if leader_start > local.log_end_offset:
            removed = local.log_end_offset - local.log_start_offset
            local.truncate_fully_and_start_at(leader_start)
            partition.truncated_records += removed
            partition.on_truncated(partition)  # the broker rebuilds the producer state
            log.info("broker %d: %s-%d: log ends before leader %d's log start; emptied (%d record(s)) to start at %d",
                     self._manager.node_id, t.topic, t.index, self.source, removed, leader_start)


class FetcherManager:
    """A broker's fetchers: one :class:`ReplicaFetcher` per leader it follows.

    Args:
        node_id: this broker.
        config: its configs (``replica.fetch.*``).
        partitions: the local replica of ``(topic id, index)``, or None.
        endpoint: a broker's registered ``(host, port)``, or None when unknown.
        broker_epoch: this broker's current epoch (sent in Fetch's ``replica_state``).
    """

    def __init__(self, *, node_id: int, config: BrokerConfig,
                 partitions: Callable[[uuid.UUID, int], Partition | None],
                 endpoint: Callable[[int], tuple[str, int] | None], broker_epoch: Callable[[], int]) -> None:
        self.node_id = node_id
        self.config = config
        self.partitions = partitions
        self.endpoint = endpoint
        self.broker_epoch = broker_epoch
        backoff = config["replica.fetch.backoff.ms"] / 1000
        self.backoff = Backoff(backoff, backoff)  # Kafka's fetcher backs off by a fixed replica.fetch.backoff.ms
        self.fetchers: dict[int, ReplicaFetcher] = {}
        #: The broker's faults (isolation, slow disk), set by its node; None: none.
        self.faults: BrokerFaults | None = None
        #: The inter-broker listener's TLS and SASL (``Connection``'s ``ssl_context`` and
        #: ``sasl``), set by its node (:mod:`minibroker.cluster.security`); empty: PLAINTEXT.
        self.connection: dict[str, Any] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        self._closed = False

    def __repr__(self) -> str:
        return f"FetcherManager(broker {self.node_id}, from {sorted(self.fetchers)})"

    async def reachable(self) -> None:
        """Wait while this broker is isolated from the other brokers."""
        faults = self.faults
        if faults is not None:
            await faults.wait_until(lambda: not faults.silent_to_brokers)

    def set_targets(self, targets: Iterable[FetchTarget]) -> None:
        """Fetch these partitions: new ones are added, a partition whose leader changed
        moves to the new leader's fetcher, one whose leader epoch changed truncates again.
        Partitions not named keep what they had (:meth:`remove` drops them)."""
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        for target in targets:
            for source, fetcher in list(self.fetchers.items()):
                if source != target.leader and target.key in fetcher.targets:
                    fetcher.drop(target.key)
                    self._stop_if_idle(source)
            if target.leader not in self.fetchers:
                self.fetchers[target.leader] = ReplicaFetcher(self, target.leader)
            self.fetchers[target.leader].put(target)

    def remove(self, keys: Iterable[tuple[uuid.UUID, int]]) -> None:
        """Stop fetching these ``(topic id, index)`` partitions (this broker leads them now,
        or no longer hosts them)."""
        for key in keys:
            for source, fetcher in list(self.fetchers.items()):
                if key in fetcher.targets:
                    fetcher.drop(key)
                    self._stop_if_idle(source)

    def targets(self) -> dict[tuple[uuid.UUID, int], FetchTarget]:
        """What is being fetched (parked targets included)."""
        return {key: f.target for fetcher in self.fetchers.values() for key, f in fetcher.targets.items()}

    def _stop_if_idle(self, source: int) -> None:
        # Kafka's shutdownIdleFetcherThreads: a fetcher without partitions ends (and closes its connection).
        fetcher = self.fetchers.get(source)
        if fetcher is not None and not fetcher.targets:
            del self.fetchers[source]
            self._stopping.add(fetcher.stop())
            fetcher.task.add_done_callback(self._stopping.discard)

    async def close(self) -> None:
        """Stop every fetcher and close its connection."""
        self._closed = True
        tasks = [f.stop() for f in self.fetchers.values()] + list(self._stopping)
        self.fetchers.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
