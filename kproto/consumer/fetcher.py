"""Fetching: pipelined Fetch requests, records decoded by the codec as poll drains them,
and the ListOffsets lookups behind resets, ``end_offsets`` and ``offsets_for_times``.

Theory of operation. One background task plans fetches. A partition is fetchable when it
is assigned, has a position, is not paused, is not in a fetch already and has fewer than
two undrained responses buffered; each broker leading fetchable partitions gets one
Fetch for all of them, and at most one at a time (Java's rule). A broker's next Fetch is
written as soon as its response is handled, in the same turn of the loop, before poll
decodes any of it, so the broker serves the next response while the application decodes
this one (issue 16); unless the responses held reach half of ``fetch.max.bytes``: poll
(``poll_arrow`` decodes everything buffered at once) then decodes before the next Fetch
goes out, so that a response arriving meanwhile does not come on top of two responses'
worth of decoded columns (the memory bound below). A response is kept as
it came, per partition: a :class:`_Chunk` holding the record set's batch headers (read
when the response arrives; their CRCs checked, as Java's are, when poll first drains the
chunk: after the next Fetch is written) whose records are decoded one batch at a
time, by one codec call per batch that makes them ConsumerRecords
(:func:`~kproto.codec.record_tuples`), only when :meth:`Fetcher.drain` needs them. So poll
decodes about ``max.poll.records`` records, and while the application works on them the
next Fetch for the same partitions is already on the wire: with one chunk being drained
and one buffered, the consumer reads ahead by one response per partition. In bytes, the
read-ahead is bounded too: no Fetch is sent while the responses that buffered chunks keep
alive (a chunk is a view into its response) reach ``fetch.max.bytes``, so a slow
application reading many partitions of one broker holds under ``2 x fetch.max.bytes``
(one more ``fetch.max.bytes`` per other broker with a Fetch in flight; issue 16).

The next fetch of a partition starts where its last buffered chunk ends (after its last
whole batch), or at its position when nothing is buffered. Partitions that got records
go to the back of the fetch order, so with KIP-74's "first partition gets at least one
batch" each partition takes its turn at the front. A fetch answered after the position
moved (a seek, a reset, a rebalance) carries an old :attr:`PartitionState.version` and
is dropped.

Positions while draining: records below the position are skipped (a broker returns whole
batches), control batches and (read_committed) aborted batches are skipped, and a
partition's position moves past every batch drained, so it ends past compaction gaps and
transaction markers, as Java's does.

The request, the per-partition error actions and the read_committed filter (Java's
``CompletedFetch``) are :mod:`kproto.io.fetch`'s, shared with the Spark source.

Leader changes (KIP-320). Each Fetch carries the leader epoch the metadata knows and the
epoch of the record before the fetch offset (:mod:`kproto.io.fetch`). When a partition's
leader epoch moves on, its position is validated before it is fetched again: what was
buffered from the old leader is dropped, and the new leader is asked with
OffsetForLeaderEpoch (:mod:`kproto.io.leader_epochs`) where the position's epoch ends;
:meth:`~kproto.consumer.subscription.SubscriptionState.complete_validation` judges the
answer (go on; go back to where the log diverges; or, with ``auto.offset.reset=none``,
raise :class:`~kproto.errors.LogTruncationError` from poll). A Fetch answered with a
``diverging_epoch`` is judged the same way. FENCED_LEADER_EPOCH refreshes metadata and
UNKNOWN_LEADER_EPOCH waits a backoff; neither reaches the application.

Preferred read replicas (KIP-392). With ``client.rack`` set, the leader may answer a
``preferred_read_replica``: the partition is then fetched from that broker until
``metadata.max.age.ms`` passes, the broker leaves the metadata (or is an offline
replica), or a fetch from it fails or errors; then from the leader again (Java's
``AbstractFetch.selectReadReplica``). Validation always asks the leader.

Errors per partition: leadership changes (NOT_LEADER_OR_FOLLOWER and friends) refresh
metadata (or take the answer's KIP-951 leader hint) and retry after a backoff (``retry.backoff.ms`` doubling up to
``retry.backoff.max.ms`` per broker while fetches keep failing, with KIP-580's jitter:
:class:`~kproto.io.retry.Backoff`); OFFSET_OUT_OF_RANGE resets the position
per ``auto.offset.reset``, or, with ``none``, raises :class:`~kproto.errors.OffsetOutOfRangeError`
from poll; a corrupt batch or a failing deserializer raises from poll with the position
left at the bad record, so that each later poll raises again until the application
seeks past it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kproto.codec import record_tuples
from kproto.consumer.errors import RecordDeserializationError, offsets_text
from kproto.consumer.structs import ConsumerRecord, OffsetAndTimestamp
from kproto.consumer.subscription import SubscriptionState
from kproto.errors import (
    ClientClosedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
    for_code,
)
from kproto.io import Cluster
from kproto.io.fetch import Action, BatchFilter, FetchSettings, fetch, partition_action
from kproto.io.leader_epochs import offsets_for_leader_epoch, supported
from kproto.io.list_offsets import list_offsets, timestamp_of
from kproto.io.retry import Backoff
from kproto.metrics import ConsumerMetrics
from kproto.records import Batch, Columns, decode_columnar, read_batches
from kproto.structs import TopicPartition

__all__ = ["Fetcher"]

log = logging.getLogger("kproto.consumer")

_new_record = tuple.__new__


class _Chunk:
    """One partition's share of one Fetch response, decoded a batch at a time."""

    __slots__ = ("tp", "version", "position", "end", "end_epoch", "epoch", "batches", "records", "index", "batch_end",
                 "error", "filter", "key_deserializer", "value_deserializer", "columns", "columns_from", "columns_end",
                 "unchecked")

    def __init__(self, tp: TopicPartition, version: int, fetch_offset: int, data: Any, *, check_crcs: bool,
                 aborted: Iterable[Any] | None, deserializers: tuple[Callable | None, Callable | None]) -> None:
        self.tp = tp
        self.version = version
        self.position = fetch_offset  # where draining stands
        self.epoch = -1  # leader epoch of the last record drained
        self.records: list[ConsumerRecord] = []  # the batch being drained
        self.index = 0
        self.batch_end = fetch_offset  # where the position goes once those records are drained
        self.error: BaseException | None = None  # raised once the records before it are drained
        # poll_arrow's decoded records not all taken yet: from columns_from on, then the
        # position goes to columns_end (take_columns)
        self.columns: Columns | None = None
        self.columns_from = 0
        self.columns_end = fetch_offset
        self.batches: deque[Batch] = deque()
        # The batch headers now, for the next fetch's offset; the CRCs (check.crcs) when the
        # chunk is first drained (_check), after that fetch is on the wire (issue 16).
        self.unchecked = data if check_crcs else None
        try:
            self.batches.extend(read_batches(data, False))
        except KafkaError as exc:  # the batches before the bad one are still good
            self.error = exc
        self._set_end(fetch_offset)
        if self.error is None and not self.batches and data and len(data):
            log.debug("%s-%d: no whole batch at offset %d in %d bytes", tp.topic, tp.partition, fetch_offset, len(data))
        self.filter = BatchFilter(aborted)  # skips control batches, and aborted ones under read_committed
        self.key_deserializer, self.value_deserializer = deserializers

    def _set_end(self, fetch_offset: int) -> None:
        self.end = max(fetch_offset, self.batches[-1].next_offset) if self.batches else fetch_offset
        # The leader epoch of the record before end: the next fetch's last_fetched_epoch (KIP-320).
        self.end_epoch = self.batches[-1].partition_leader_epoch if self.batches else -1

    def _check(self) -> None:
        """Check the CRCs of the chunk's batches, before any of its records is handed out.

        Java's consumer checks a batch's CRC as poll reaches it (``CompletedFetch``'s
        ``maybeEnsureValid``), not as the response arrives: here the whole chunk at its
        first drain, which comes after the next Fetch was written (issue 16: the check no
        longer delays that Fetch). What the user sees is what a check on arrival gave: the
        records of the batches before a bad one, then its error (:attr:`error`), the position
        left at it; and the next fetch of the partition starts at it again.
        """
        data, self.unchecked = self.unchecked, None
        try:
            _walk(read_batches(data, True))  # one call: headers and CRCs, no record decoded
            return
        except KafkaError:
            pass
        good = 0  # a bad batch (rare): find it, walking again one batch at a time
        batches = read_batches(data, True)
        try:
            for _ in batches:
                good += 1
        except KafkaError as exc:
            self.error = exc
        while len(self.batches) > good:
            self.batches.pop()
        self._set_end(self.position)

    @property
    def exhausted(self) -> bool:
        """Nothing left to return: done, or stuck at :attr:`error`."""
        return self.index >= len(self.records) and not self.batches

    def take(self, out: list[ConsumerRecord], limit: int) -> None:
        """Move up to ``limit`` records to ``out``, advancing :attr:`position`."""
        if self.unchecked is not None:
            self._check()
        self.columns = None  # decoded again from the position if take_columns comes back
        while limit > 0:
            if self.index >= len(self.records) and not self._next_batch():
                return
            records, i = self.records, self.index
            part = records[i:i + limit] if i or len(records) > limit else records
            out += part
            self.index = i + len(part)
            limit -= len(part)
            last = part[-1]
            self.epoch = last.leader_epoch
            if self.index < len(records):
                self.position = last.offset + 1
            else:  # past the whole batch, whatever gaps compaction left at its end
                self.position = max(self.position, self.batch_end)

    def _next_batch(self) -> bool:
        """Decode the next batch with records to return into :attr:`records`."""
        while self.batches:
            batch = self.batches[0]
            try:
                records = self._decode(batch) if not self.filter.skip(batch) else []
            except KafkaError as exc:
                self.error, self.batches = exc, deque()  # the position stays at this batch
                return False
            self.batches.popleft()
            if self.error is not None:  # a deserializer failed part way: nothing after it
                self.batches.clear()
            if records:
                self.records, self.index = records, 0
                # A deserializer failure cut the batch short: stop right after the last good record.
                self.batch_end = batch.next_offset if self.error is None else records[-1].offset + 1
                return True
            self.position = max(self.position, batch.next_offset)
        return False

    def _decode(self, batch: Batch) -> list[ConsumerRecord]:
        # The records at or after the position (the batch holding the fetch offset comes
        # whole), made as ConsumerRecords by the codec in one call per batch.
        records = record_tuples(batch, ConsumerRecord, self.tp.topic, self.tp.partition, self.position)
        if self.key_deserializer is None and self.value_deserializer is None:
            return records
        return self._deserialized(records)

    def _deserialized(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        kd = self.key_deserializer or _identity
        vd = self.value_deserializer or _identity
        out = []
        for r in records:
            try:
                key = None if r.key is None else kd(r.key)
                value = None if r.value is None else vd(r.value)
            except Exception as exc:
                error = RecordDeserializationError(self.tp, r.offset, exc)
                error.__cause__ = exc
                if not out:
                    raise error from exc
                self.error = error  # raised after the good records before it
                break
            out.append(_new_record(ConsumerRecord, (r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type,
                                                    key, value, r.headers, r.leader_epoch)))
        return out

    # -- the columnar path (issue 16: poll_arrow, kproto.consumer.columnar) --------------------

    def take_columns(self, limit: int) -> tuple[Columns, int, int] | None:
        """Up to ``limit`` records as Arrow-layout columns, advancing :attr:`position`.

        The batches to return are decoded in one codec call (their bytes are one slice of
        the response when no skipped batch lies between them). Returns the columns, the
        index of the first record taken and how many are taken, or None when nothing is
        left. When ``limit`` cuts the decoded records, the columns are kept and the next
        calls take their rest (no batch is decoded twice, so draining a large batch
        ``limit`` records at a time stays linear). Must not be called while :meth:`take` has
        a batch part way (``index < len(records)``).
        """
        if self.unchecked is not None:
            self._check()
        cols = self.columns if self.columns is not None else self._decode_columns(limit)
        if cols is None:
            return None
        start = self.columns_from
        taken = min(cols.count - start, limit)
        if start + taken < cols.count:
            end = start + taken
            self.position = int.from_bytes(cols.offsets[8 * end - 8:8 * end], "little", signed=True) + 1
            self.columns_from = end
        else:
            self.position = max(self.position, self.columns_end)
            self.columns = None
        last = None  # the batch of the last record taken: its leader epoch is the position's
        while self.batches and self.batches[0].next_offset <= self.position:
            last = self.batches.popleft()
        if self.batches and self.batches[0].base_offset < self.position:  # cut inside it
            last = self.batches[0]
        if last is not None:
            self.epoch = last.partition_leader_epoch
        return (cols, start, taken) if taken else None

    def _decode_columns(self, limit: int) -> Columns | None:
        """Decode the next batches holding about ``limit`` records at or after the position
        into :attr:`columns` (and return them); None when nothing is left (or a batch is
        refused first)."""
        kept: list[Batch] = []
        estimate = 0
        batches, i = self.batches, 0
        while i < len(batches) and estimate < limit:  # peek: take_columns removes what it returns
            batch = batches[i]
            if not self.filter.skip(batch):
                kept.append(batch)
                # At most this many records at or past the position (an upper bound, so that
                # what is decoded covers the limit when the batches hold that many).
                below = max(self.position - batch.base_offset, 0)
                count = batch.next_offset - batch.base_offset if batch.records_count < 0 else batch.records_count
                estimate += min(count, batch.next_offset - batch.base_offset - below)
            elif not kept:  # skipped before anything to return: step past it now
                batches.popleft()
                self.position = max(self.position, batch.next_offset)
                continue
            else:
                # A skipped batch after ones to return: look no further. The filter is a walk
                # in offset order (an ABORT marker ends its producer's aborting), so a batch
                # left in the deque must not be judged after a later one: this one is judged
                # again first next time, which gives the same answer.
                break
            i += 1
        while kept:
            try:
                cols = decode_columnar(_joined(kept), self.position, False)  # CRCs: checked by _check
                break
            except (KafkaError, ValueError) as exc:  # ValueError: a header key that is not UTF-8
                bad = _first_bad(kept, self.position)
                if bad == 0:  # the position stays at this batch; raised once nothing is returned
                    self.error, self.batches = exc, deque()
                    return None
                del kept[bad:]
        else:
            return None
        self.columns, self.columns_from, self.columns_end = cols, 0, kept[-1].next_offset
        return cols


def _joined(batches: list[Batch]) -> Any:
    """The bytes of ``batches``: a view of the response when they lie end to end in it."""
    first, last = batches[0], batches[-1]
    if first._buf is last._buf and last._start - first._start + last.size == sum(b.size for b in batches):
        return memoryview(first._buf)[first._start:last._start + last.size]
    return b"".join(memoryview(b._buf)[b._start:b._start + b.size] for b in batches)


def _first_bad(batches: list[Batch], position: int) -> int:
    """The index of the first of ``batches`` the codec refuses (len when none)."""
    for i, batch in enumerate(batches):
        try:
            decode_columnar(_joined([batch]), position, False)
        except (KafkaError, ValueError):
            return i
    return len(batches)


def _walk(items: Iterable[Any]) -> None:
    """Run through ``items`` at C speed, keeping nothing."""
    deque(items, maxlen=0)


def _identity(data: bytes) -> bytes:
    return data


class Fetcher:
    """Fetches records for a consumer's assigned partitions in the background.

    Args:
        cluster: the consumer's metadata and connections.
        config: the consumer's settings.
        subscriptions: its assignment and positions.
        on_data: called (on the loop) when records or errors arrive for poll.
        on_stale_metadata: called when a partition's leader must be looked up again.
    """

    def __init__(self, cluster: Cluster, config: Mapping[str, Any], subscriptions: SubscriptionState, *,
                 on_data: Callable[[], None], on_stale_metadata: Callable[[], None],
                 metrics: ConsumerMetrics | None = None) -> None:
        self._cluster = cluster
        self._metrics = metrics  # observability: kproto.metrics records per fetch response
        self._subscriptions = subscriptions
        self._on_data = on_data
        self._on_stale_metadata = on_stale_metadata
        self._settings = FetchSettings.from_config(config)
        self._metadata_max_age = config["metadata.max.age.ms"] / 1000  # how long a preferred read replica holds
        self._read_committed = self._settings.read_committed
        self._check_crcs = config["check.crcs"]
        self._deserializers = (config["key.deserializer"], config["value.deserializer"])
        self._backoff = Backoff.retry(config)
        self._buffered: dict[TopicPartition, deque[_Chunk]] = {}
        self._errors: dict[TopicPartition, KafkaError] = {}  # raised by the next poll
        self._failure: Exception | None = None  # unexpected: raised by every poll
        self._in_flight: set[TopicPartition] = set()
        self._validating: set[TopicPartition] = set()  # an OffsetForLeaderEpoch is out for these
        self._busy_nodes: set[int] = set()
        self._resting: dict[int, float] = {}  # node -> monotonic time its backoff ends
        self._failures: dict[int, int] = {}  # node -> fetches in a row that ended in a backoff
        self._wake = asyncio.Event()
        self._gated = False  # the last plan sent nothing for the memory bound (_held_bytes)
        self._task: asyncio.Task | None = None
        self._requests: set[asyncio.Task] = set()

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="kproto-fetcher")

    def wakeup(self) -> None:
        """Plan again: the assignment, a position, a pause or the metadata changed."""
        self._wake.set()

    async def close(self) -> None:
        tasks = [t for t in (self._task, *self._requests) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        self._buffered.clear()

    # -- planning -------------------------------------------------------------------------------

    async def _run(self) -> None:
        while self._failure is None:
            self._wake.clear()
            self._start(self._plan())
            await self._wake.wait()

    def _start(self, plan: dict[int, dict[TopicPartition, int]], asking: int | None = None
               ) -> dict[TopicPartition, int] | None:
        """Mark the fetches of ``plan`` in flight and start a task for each node's; the
        partitions planned for ``asking`` (a node whose task has just handled a response)
        are returned to that task, which sends them itself."""
        mine = None
        for node, partitions in plan.items():
            self._busy_nodes.add(node)
            self._in_flight.update(partitions)
            if node == asking:
                mine = partitions
                continue
            task = asyncio.get_running_loop().create_task(self._fetch(node, partitions))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)
        return mine

    def _plan(self) -> dict[int, dict[TopicPartition, int]]:
        """``{node: {partition: fetch offset}}`` of the fetches to send now (and the
        validations to start)."""
        plan: dict[int, dict[TopicPartition, int]] = {}
        now = time.monotonic()
        stale = False
        subscriptions = self._subscriptions
        self._plan_validations(now)
        self._gated = self._held_bytes() >= self._settings.max_bytes
        if self._gated:
            return plan  # memory: see _held_bytes; a drain wakes the planner again
        for tp in subscriptions.fetchable():
            chunks = self._buffered.get(tp)
            if tp in self._in_flight or tp in self._errors or (chunks and len(chunks) >= 2):
                continue
            node = self._read_replica(tp, now)
            if node < 0:
                stale = True
                continue
            if node in self._busy_nodes or self._resting.get(node, 0) > now:
                continue
            state = subscriptions.get(tp)
            plan.setdefault(node, {})[tp] = chunks[-1].end if chunks else state.position
        if stale:
            self._on_stale_metadata()
        return plan

    # -- memory bound (issue 16: RSS under 2 x fetch.max.bytes + a constant) -------------------

    def _held_bytes(self) -> int:
        """Bytes of the Fetch responses that buffered chunks keep alive.

        A chunk's record set is a view into its whole response (zero copy), so a response
        lives while any of its partitions' chunks is undrained. :meth:`_plan` sends no
        Fetch while these reach ``fetch.max.bytes``: with one response of at most
        ``fetch.max.bytes`` arriving (KIP-74 aside: a first batch larger than that), the
        responses held stay under ``2 x fetch.max.bytes``, however many partitions are
        read ahead (up to two chunks each) and however slowly the application drains them,
        plus what paused partitions keep (up to two chunks each), which is not counted.
        That is per broker fetched from at once: each has at most one Fetch in flight, as in
        Java, so with B leaders the bound is ``(1 + B) x fetch.max.bytes``.
        """
        frames: dict[int, int] = {}
        subscriptions = self._subscriptions
        for tp, chunks in self._buffered.items():
            state = subscriptions.get(tp)
            if state is None or state.paused:
                # Not counted: what a paused partition keeps until it is resumed must not stop
                # the others' fetching (Java keeps it and fetches the others too).
                continue
            for chunk in chunks:
                if chunk.batches:
                    buf = chunk.batches[0]._buf  # the view of the response the batches were read from
                    frame = buf.obj if isinstance(buf, memoryview) else buf
                    frames[id(frame)] = len(frame)
        return sum(frames.values())

    def _read_replica(self, tp: TopicPartition, now: float) -> int:
        """The broker to fetch ``tp`` from: its preferred read replica while that holds
        and is online in the metadata, else its leader (Java's ``selectReadReplica``)."""
        subscriptions, cluster = self._subscriptions, self._cluster
        node = subscriptions.read_replica(tp, now)
        if node >= 0:
            info = cluster.topics.get(tp.topic)
            p = info.partitions.get(tp.partition) if info is not None else None
            if node in cluster.brokers and p is not None and node not in p.offline_replicas:
                return node
            subscriptions.clear_read_replica(tp)
        return cluster.leader(tp.topic, tp.partition)

    def _plan_validations(self, now: float) -> None:
        """Mark the positions whose leader epoch moved on, and send OffsetForLeaderEpoch to
        the leaders of those waiting (KIP-320); what was buffered for them is dropped."""
        subscriptions, cluster = self._subscriptions, self._cluster
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in subscriptions.assigned():
            if not subscriptions.maybe_validate(tp, cluster.leader_epoch(tp.topic, tp.partition)):
                continue
            if self._buffered.pop(tp, None):
                log.debug("%s-%d: leader epoch changed; dropping what was fetched before", tp.topic, tp.partition)
            state = subscriptions.get(tp)
            if tp in self._validating or tp in self._errors or state.paused:
                continue
            leader = cluster.leader(tp.topic, tp.partition)
            if leader < 0:
                self._on_stale_metadata()
            elif self._resting.get(leader, 0) <= now:
                by_leader.setdefault(leader, []).append(tp)
        for leader, tps in by_leader.items():
            self._validating.update(tps)
            task = asyncio.get_running_loop().create_task(self._validate(leader, tps))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)

    async def _validate(self, leader: int, partitions: list[TopicPartition]) -> None:
        """Validate the positions of ``partitions`` with their ``leader`` (KIP-320)."""
        subscriptions, cluster = self._subscriptions, self._cluster
        asked = {}
        for tp in partitions:
            state = subscriptions.get(tp)
            if state is not None and state.awaiting_validation and state.position is not None:
                asked[tp] = (state.version, state.leader_epoch, cluster.leader_epoch(tp.topic, tp.partition))
        try:
            if not asked:
                return
            if not await supported(cluster, leader):  # Java validates nothing against such a broker
                for tp, (version, _, current) in asked.items():
                    state = subscriptions.get(tp)
                    if state is not None and state.version == version:
                        state.awaiting_validation, state.current_leader_epoch = False, current
                return
            answers = await offsets_for_leader_epoch(cluster, leader, {tp: a[1] for tp, a in asked.items()})
            for tp, answer in answers.items():
                if tp not in asked:
                    continue
                version, _, current = asked[tp]
                action = partition_action(answer.error_code)
                if action is Action.RECORDS:
                    error = subscriptions.complete_validation(tp, version, current, answer.leader_epoch,
                                                              answer.end_offset)
                    if error is not None:
                        self._errors[tp] = error
                        self._on_data()
                elif action is Action.REFRESH or action is Action.RETRY:
                    if action is Action.REFRESH:
                        self._on_stale_metadata()
                    self._rest(leader)
                else:
                    self._errors[tp] = for_code(answer.error_code)(f"validating the position of {tp.topic}-{tp.partition}")
                    self._on_data()
        except ClientClosedError:
            return
        except KafkaError as exc:
            log.debug("validating positions with broker %d failed: %s", leader, exc)
            self._rest(leader)
            self._on_stale_metadata()
        except Exception as exc:  # a bug: stop fetching and let poll raise it
            self._failure = exc
            self._on_data()
        finally:
            self._validating.difference_update(partitions)
            self._wake.set()

    def _rest(self, node: int) -> None:
        """No fetch to ``node`` for a backoff (longer after each failed fetch in a row); then
        plan again. Several partitions of one answer asking for it count once."""
        now = time.monotonic()
        if self._resting.get(node, 0) > now:
            return
        failures = self._failures[node] = self._failures.get(node, 0) + 1
        wait = self._backoff.delay(failures)
        self._resting[node] = now + wait
        asyncio.get_running_loop().call_later(wait, self._wake.set)

    # -- one fetch ------------------------------------------------------------------------------

    def _last_fetched_epoch(self, tp: TopicPartition) -> int:
        """The leader epoch of the record before ``tp``'s next fetch offset (-1: unknown)."""
        chunks = self._buffered.get(tp)
        if chunks:
            return chunks[-1].end_epoch
        state = self._subscriptions.get(tp)
        return state.leader_epoch if state is not None else -1

    async def _fetch(self, node: int, offsets: dict[TopicPartition, int] | None) -> None:
        """Fetch from ``node`` while it has partitions to fetch, one Fetch at a time.

        As soon as a response is handled (its chunks buffered), the node's next Fetch is
        planned and written in the same step of the loop, before poll gets its turn to
        decode what arrived: the broker reads the next response while the application
        decodes this one (issue 16). Still at most one Fetch in flight per node (Java's
        ``Fetcher``), each starting where the buffered chunks end. Not while the responses
        held reach half of ``fetch.max.bytes``: then the planner sends it on its next turn,
        after poll's, as before.
        """
        while offsets is not None:
            if not await self._fetch_once(node, offsets) or 2 * self._held_bytes() >= self._settings.max_bytes:
                # Large responses held: the planner's next turn, after poll's (see the module
                # docstring: memory); wake was set when the fetch ended.
                return
            offsets = self._start(self._plan(), asking=node)

    async def _fetch_once(self, node: int, offsets: dict[TopicPartition, int]) -> bool:
        """One Fetch from ``node``, its answers handled; False when fetching must stop
        (the client closed, or a bug that poll raises)."""
        versions = {tp: self._subscriptions.get(tp).version for tp in offsets}
        epochs = {tp: self._last_fetched_epoch(tp) for tp in offsets}
        try:
            sent = time.monotonic()
            answers = await fetch(self._cluster, node, self._settings, offsets, epochs)
            if self._metrics is not None:  # observability (kproto.metrics)
                self._metrics.fetched(time.monotonic() - sent, offsets, answers)
            for tp, p in answers.items():
                if tp in versions:
                    self._handle(tp, versions[tp], offsets[tp], p, node)
            if self._resting.get(node, 0) <= time.monotonic():
                self._failures.pop(node, None)  # it answered and asked for no backoff
        except ClientClosedError:
            return False
        except KafkaError as exc:
            log.debug("fetch from broker %d failed: %s", node, exc)
            for tp in offsets:  # a read replica that cannot be reached: back to the leader (KIP-392)
                self._subscriptions.clear_read_replica(tp)
            self._rest(node)  # so the plan that follows leaves this node out until the backoff ends
            self._on_stale_metadata()
        except Exception as exc:  # a bug: stop fetching and let poll raise it
            self._failure = exc
            self._on_data()
            return False
        finally:
            self._busy_nodes.discard(node)
            self._in_flight.difference_update(offsets)
            self._wake.set()
        return self._failure is None

    def _handle(self, tp: TopicPartition, version: int, offset: int, p: Any, node: int) -> None:
        state = self._subscriptions.get(tp)
        if state is None or state.version != version or state.awaiting_validation:
            return  # unassigned or moved while in flight, or its leader changed (validated first)
        code = p.error_code
        action = partition_action(code)
        if action is not Action.RECORDS and self._subscriptions.clear_read_replica(tp):
            # Java's Fetcher: any error from a read replica sends the partition back to its
            # leader, which decides again (an out-of-range there is not a reset yet).
            log.debug("%s-%d: fetch from read replica %d failed (%s); back to the leader", tp.topic, tp.partition,
                      node, for_code(code).name)
            return
        if action is Action.RECORDS:
            if p.preferred_read_replica >= 0 and p.preferred_read_replica != node:
                log.debug("%s-%d: the leader prefers replica %d (client.rack)", tp.topic, tp.partition,
                          p.preferred_read_replica)
                self._subscriptions.set_read_replica(tp, p.preferred_read_replica,
                                                     time.monotonic() + self._metadata_max_age)
            diverging = p.diverging_epoch
            if diverging is not None and diverging.epoch >= 0:
                # KIP-320 through Fetch v12+: the log diverged before the fetch offset. At the
                # position, that is the validation's answer; past it (a fetch ahead of what
                # poll returned), the position itself is validated first.
                if state.position == offset and not self._buffered.get(tp):
                    error = self._subscriptions.diverged(tp, version, diverging.epoch, diverging.end_offset)
                    if error is not None:
                        self._errors[tp] = error
                else:
                    self._buffered.pop(tp, None)
                    state.awaiting_validation = True
                self._on_data()
                return
            if not p.records:
                return
            chunk = _Chunk(tp, version, offset, p.records, check_crcs=self._check_crcs,
                           aborted=(p.aborted_transactions or ()) if self._read_committed else None,
                           deserializers=self._deserializers)
            if chunk.end > offset or chunk.error is not None:
                self._buffered.setdefault(tp, deque()).append(chunk)
                self._subscriptions.move_to_end(tp)
                self._on_data()
        elif action is Action.OUT_OF_RANGE:
            if state.position != offset or self._buffered.get(tp):
                return  # only the offset poll would return next counts
            if self._subscriptions.default_reset == "none":
                error = OffsetOutOfRangeError(f"fetch offset out of range: {offsets_text({tp: offset})} "
                                              f"(log start {p.log_start_offset}, end {p.high_watermark})")
                error.partitions = {tp: offset}
                self._errors[tp] = error
                self._on_data()
            else:
                log.info("%s-%d: offset %d out of range; resetting to %s", tp.topic, tp.partition, offset,
                         self._subscriptions.default_reset)
                self._subscriptions.request_reset(tp)
                self._on_data()  # poll looks the new position up
        elif action is Action.REFRESH or action is Action.RETRY:
            hint = p.current_leader
            taken = hint is not None and hint.leader_id >= 0 and self._cluster.leader(tp.topic, tp.partition) == \
                hint.leader_id and self._cluster.leader_epoch(tp.topic, tp.partition) == hint.leader_epoch
            if action is Action.REFRESH and not taken:  # KIP-951: a hint taken by fetch() needs no refresh
                self._on_stale_metadata()
            node = self._cluster.leader(tp.topic, tp.partition)
            if node >= 0:
                self._rest(node)
        else:
            self._errors[tp] = for_code(code)(f"fetching {tp.topic}-{tp.partition} at offset {offset}")
            self._on_data()

    # -- draining -------------------------------------------------------------------------------

    def drain(self, max_records: int) -> list[ConsumerRecord]:
        """Take up to ``max_records`` buffered records, moving positions past them.

        Raises:
            KafkaError: a partition's fetch error, a corrupt batch or a failing
                deserializer, when no record could be returned instead (a partition
                stuck at a bad record raises on every call until it is sought past).
        """
        out: list[ConsumerRecord] = []

        def take(tp: TopicPartition, chunk: _Chunk, room: int) -> int:
            before = len(out)
            chunk.take(out, room)
            return len(out) - before

        self._drain(max_records, take, columns=False)
        return out

    # -- draining into columns (issue 16: poll_arrow, kproto.consumer.columnar) ---------------

    def drain_columns(self, max_records: int) -> list[tuple[TopicPartition, Columns, int, int]]:
        """:meth:`drain`'s columnar form: up to ``max_records`` buffered records as
        ``(partition, columns, first record taken, records taken)``, one entry per take, moving
        positions past them. Deserializers are not applied.

        A chunk that :meth:`drain` left part way through a batch is dropped, to be fetched
        again from the position (mixing both drains costs a fetch, not a record).

        Raises:
            KafkaError: as :meth:`drain`.
        """
        out: list[tuple[TopicPartition, Columns, int, int]] = []

        def take(tp: TopicPartition, chunk: _Chunk, room: int) -> int:
            taken = chunk.take_columns(room)
            if taken is None:
                return 0
            out.append((tp, *taken))
            return taken[2]

        self._drain(max_records, take, columns=True)
        return out

    def _drain(self, max_records: int, take: Callable[[TopicPartition, _Chunk, int], int], *, columns: bool) -> None:
        """The walk both drains make: the partitions' buffered chunks in order, ``take``
        moving up to the room left from one chunk (returning how many), positions and
        leader epochs following; then the fetcher woken for what was let go, and, when
        nothing was taken, a pending error raised."""
        if self._failure is not None:
            raise self._failure
        subscriptions = self._subscriptions
        total = 0
        stuck: BaseException | None = None
        drained = False
        for tp in list(self._buffered):
            if total >= max_records:
                break
            state = subscriptions.get(tp)
            chunks = self._buffered[tp]
            if state is None:
                del self._buffered[tp]
                continue
            while chunks and total < max_records and not state.paused:
                chunk = chunks[0]
                if columns and chunk.index < len(chunk.records):  # drain() is inside a decoded batch
                    chunks.clear()
                    drained = True
                    break
                if chunk.version != state.version or chunk.position != state.position:
                    chunks.popleft()  # the position moved since it was fetched
                    drained = True
                    continue
                total += take(tp, chunk, max_records - total)
                state.position = chunk.position
                if chunk.epoch >= 0:
                    state.leader_epoch = chunk.epoch
                if not chunk.exhausted:
                    continue
                if chunk.error is not None:
                    stuck = stuck or chunk.error
                    break
                chunks.popleft()
                drained = True
            if not chunks:
                del self._buffered[tp]
        if drained or (self._gated and total):
            # Room for the next fetch of these partitions; or, with fetching held by the
            # memory bound, decoding may have let a response go (a chunk's last batch decoded).
            self._wake.set()
        if not total:
            self._raise_pending(stuck)

    def _raise_pending(self, stuck: BaseException | None) -> None:
        """Raise a partition's fetch error, else ``stuck`` (a corrupt batch), if any."""
        if self._errors:
            tp, error = next(iter(self._errors.items()))
            del self._errors[tp]
            self._wake.set()
            raise error
        if stuck is not None:
            raise stuck

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Drop what is buffered for ``partitions`` (revoked, or sought elsewhere)."""
        for tp in partitions:
            self._buffered.pop(tp, None)
            self._errors.pop(tp, None)
        self._wake.set()

    # -- offsets --------------------------------------------------------------------------------

    async def list_offsets(self, timestamps: Mapping[TopicPartition, int], deadline: float
                           ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """ListOffsets for each partition (an :class:`~kproto.protocol.timestamps.OffsetTimestamp`,
        or a timestamp in ms).

        Offsets honour ``isolation.level`` (latest is the last stable offset under
        read_committed). A timestamp after every record gives offset -1. Retries
        leadership errors until ``deadline`` (monotonic).

        Raises:
            KafkaTimeoutError: not every partition answered by ``deadline``.
            KafkaCodeError: a partition's non-retriable error.
        """
        pending = dict(timestamps)
        found: dict[TopicPartition, OffsetAndTimestamp] = {}
        refresh = any(self._cluster.leader(tp.topic, tp.partition) < 0 for tp in pending)
        failures = 0
        while True:
            retry: KafkaError | None = None
            try:
                if refresh:
                    await self._cluster.refresh({tp.topic for tp in pending})
                by_leader: dict[int, list[TopicPartition]] = {}
                for tp in pending:
                    by_leader.setdefault(self._cluster.leader(tp.topic, tp.partition), []).append(tp)
                for leader, tps in by_leader.items():
                    if leader < 0:
                        retry = KafkaError(f"no leader known for {tps[0].topic}-{tps[0].partition}")
                    else:
                        retry = await self._list_offsets_at(leader, {tp: pending[tp] for tp in tps}, found) or retry
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                retry = exc
            for tp in found:
                pending.pop(tp, None)
            if not pending:
                return found
            failures += 1
            wait = self._backoff.delay(failures)
            if time.monotonic() + wait > deadline:
                raise KafkaTimeoutError(f"no offsets for {len(pending)} partition(s) before the timeout: {retry}")
            await asyncio.sleep(wait)
            refresh = True  # a leader may have moved

    async def _list_offsets_at(self, leader: int, timestamps: dict[TopicPartition, int],
                               found: dict[TopicPartition, OffsetAndTimestamp]) -> KafkaError | None:
        answers = await list_offsets(self._cluster, leader, timestamps, read_committed=self._read_committed)
        retry = None
        for tp, p in answers.items():
            if p.error_code == 0:
                found[tp] = OffsetAndTimestamp(p.offset, p.timestamp, p.leader_epoch)
                continue
            error = for_code(p.error_code)(f"ListOffsets for {tp.topic}-{tp.partition}")
            if not error.retriable:
                raise error
            retry = error
        return retry

    async def reset_positions(self, deadline: float) -> None:
        """Look up and set the position of every partition waiting for a reset."""
        awaiting = self._subscriptions.awaiting_reset()
        if not awaiting:
            return
        versions = {tp: self._subscriptions.state(tp).version for tp in awaiting}
        offsets = await self.list_offsets({tp: timestamp_of(s) for tp, s in awaiting.items()}, deadline)
        for tp, found in offsets.items():
            state = self._subscriptions.get(tp)
            if state is not None and state.version == versions[tp] and state.reset is not None:
                self._subscriptions.seek(tp, max(found.offset, 0), found.leader_epoch, validate=False)
        self.wakeup()
