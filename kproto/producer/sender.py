"""The sender: takes ready batches, sends Produce requests, retries, settles futures.

Theory of operation. One asyncio task loops: it asks the accumulator for ready head
batches, routes each to its partition's leader (refreshing metadata for the ones
without), packs one request per broker (one batch per partition, up to
``max.request.size``, at most ``max.in.flight.requests.per.connection`` requests in flight
per broker, none to a broker that asked to be throttled), and sleeps until a batch
becomes ready, a response frees a slot, or the linger or a retry backoff ends.

Idempotence (on by default, as in Java): the decisions are
:class:`~kproto.producer.idempotence.Idempotence`'s, a sans-I/O state machine; the sender
does what it says. It gets a producer id and epoch (InitProducerId, or the next epoch of
its own id after a reset, KIP-360) once nothing is in flight under the old ones, and
stamps each batch, when first sent, with the partition's next sequence number. Retried
batches keep their sequence and go back to the head of their queue in sequence order, so
the broker sees them in order; after a reset they are restamped as they are sent again.
After a fatal error (PRODUCER_FENCED, CLUSTER_AUTHORIZATION_FAILED, ...) nothing is sent:
every record not yet acknowledged fails with it, and so does every later one, as in Java.

Transactions (``transactional.id``): batches carry the transactional bit and the Produce
request the id. A batch goes out only once its partition is in the transaction: the
partitions of queued batches are handed to the state as they appear, and
:class:`~kproto.producer.transactions.Transactions` adds them all with one
AddPartitionsToTxn (Java adds a partition at ``send``; here the sender notices it at its
next step, which the record's arrival wakes). When the transaction failed
(ABORTABLE_ERROR) or is being aborted, batches not yet sent fail (with the transaction's
error, or :class:`~kproto.errors.TransactionAbortedError`) while those in flight end as
the broker says (Java's ``abortUndrainedBatches``).

Leader changes: NOT_LEADER_OR_FOLLOWER refreshes metadata, unless the answer (v10+) names
a leader of a newer epoch (KIP-951's ``current_leader`` and ``node_endpoints``), which
is taken at once (:meth:`~kproto.io.cluster.Cluster.update_leader`). Batches retried on the
new leader keep their producer id, epoch and sequence, so the new leader, which has the
producer state the old one replicated, accepts them once and in order (a batch it already
has answers DUPLICATE_SEQUENCE_NUMBER, taken as its acknowledgement).

Failures: retriable errors (connection loss, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
NOT_ENOUGH_REPLICAS, ...) retry after ``retry.backoff.ms`` doubling to
``retry.backoff.max.ms`` (with KIP-580's jitter: :class:`~kproto.io.retry.Backoff`), while
``retries`` and ``delivery.timeout.ms`` allow; anything else fails the batch's records
with the broker's typed error. ``delivery.timeout.ms`` bounds a batch also while it is in
flight: a request is given up (as on ``request.timeout.ms``) when its oldest batch's
delivery time is up, so a broker that stops answering or reading cannot hold a record
past it.

A bug (an exception no broker answer explains) in the loop, in a request's task, or while
batches are taken to be sent stops the sender (``_die``): ``failed`` names the cause, and
every batch not settled fails with it (queued, taken, in the request, and those in flight
when they are answered), so that no record, ``flush()`` or send waiting for
``buffer.memory`` waits for ever; ``flush()`` raises it, later sends raise
:class:`~kproto.errors.ClientClosedError` naming it (issue 16).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kproto._loop import wait_for
from kproto.codec import rewrite_batch
from kproto.errors import (
    ClientClosedError,
    DuplicateSequenceNumberError,
    KafkaError,
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
    TransactionAbortedError,
    TransactionStateError,
    UnknownTopicOrPartitionError,
    for_code,
)
from kproto.io import Cluster, Connection
from kproto.io.retry import Backoff
from kproto.io.versions import TRANSACTION_V2_FIRST, TV1_LAST_VERSIONS
from kproto.producer.accumulator import ProducerBatch, RecordAccumulator
from kproto.producer.idempotence import ErrorAction, Idempotence, ProducerState
from kproto.protocol import ApiKey
from kproto.protocol.messages import ProduceRequest

if TYPE_CHECKING:
    from kproto.metrics import ProducerMetrics
    from kproto.producer.transactions import Transactions

__all__ = ["Sender"]

log = logging.getLogger("kproto.producer")

# How long a sync producer's thread waits at most, per hand-off, for the sender to look at
# the accumulator (Sender.hand_off); usually a fraction of a millisecond.
HAND_OFF_TIMEOUT = 0.02

# The partition's leader moved or is not known yet: look it up again (Java's Sender refreshes
# metadata on an InvalidMetadataException; these are the two a Produce answer carries).
_ROUTING_MOVED = (UnknownTopicOrPartitionError, NotLeaderOrFollowerError)


async def _cancel(*tasks: asyncio.Task) -> None:
    """Cancel ``tasks`` and wait until they end. The cancel is repeated: Python 3.11's
    ``asyncio.wait_for`` drops a cancel that arrives as its inner awaitable completes."""
    while pending := [t for t in tasks if not t.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=0.05)


class Sender:
    """Drives one producer's accumulator over one cluster; see the module docstring."""

    def __init__(self, config: Any, cluster: Cluster, accumulator: RecordAccumulator,
                 idempotence: Idempotence | None, transactions: Transactions | None = None,
                 metrics: ProducerMetrics | None = None) -> None:
        self.config = config
        self.metrics = metrics  # observability: kproto.metrics records per request and per batch
        self.cluster = cluster
        self.acc = accumulator
        self.idempotence = idempotence
        self.transactions = transactions  # set with a transactional.id
        self.transactional_id = None if idempotence is None else idempotence.transactional_id
        self.acks = config["acks"]
        self.max_in_flight = config["max.in.flight.requests.per.connection"]
        self.max_request_size = config["max.request.size"]
        self.retries = config["retries"]
        self.retry_backoff = Backoff.retry(config)
        self._step_failures = 0  # failed steps in a row (InitProducerId, say): their backoff grows
        self.request_timeout = config["request.timeout.ms"] / 1000
        self._in_flight: dict[int, int] = {}  # node -> requests in flight
        self._connecting: set[int] = set()  # nodes whose connection is being opened for us
        self._partitions_in_flight: dict[tuple[str, int], int] = {}
        self._requests: set[asyncio.Task] = set()
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._closing = False
        self._stopping = False  # a close gave up waiting: the loop ends even if a cancel is lost
        self._warned: str | None = None  # the step error last logged: each cause is logged once
        self._last_error: BaseException | None = None  # named by a batch that expires unsent
        self._refreshing: asyncio.Task | None = None
        self._taking: Sequence[ProducerBatch] = ()  # the step's batches being taken (see _die)
        self.failed: KafkaError | None = None
        """Set when the sender stopped on an unexpected error: every record fails with it."""
        self._thread = threading.get_ident()  # the loop's
        self._served = threading.Condition()  # hand_off's tickets: asked by threads, served by steps
        self._asked = self._done = 0
        self._sent_to: set[Connection] = set()  # the connections requests went to (_when_written)
        self.task = self._loop.create_task(self._run())

    # -- waking -----------------------------------------------------------------------------

    def wake(self) -> None:
        """Look at the accumulator again soon; callable from any thread."""
        try:
            here = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            here = False
        if here:
            self._event.set()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._event.set)

    def hand_off(self) -> None:
        """Wake the sender and, from a thread other than the loop's, wait (at most
        ``HAND_OFF_TIMEOUT``) until it has looked at the accumulator since: sent what was
        ready, or found it may not send yet.

        Why: a sync producer's thread appending records holds the GIL, and the loop's
        thread gets it back only every ``sys.getswitchinterval()`` (5 ms) after each of its
        system calls, so without this the sender falls far behind and the records pile up
        until ``flush`` (issue 16). Called when the sender is a megabyte behind (the
        producer's ``_full``), the wait costs two thread switches and gives the sender the
        time it needs anyway, while the broker works on what it was sent.

        "Sent" means written to the socket (:meth:`~kproto.io.Connection.when_written`):
        a megabyte request is more than a socket takes at once (``send.buffer.bytes``,
        128 KiB, is 256 KiB of kernel buffer), and what it leaves waits for the loop's
        thread, which a thread appending again would keep from it until its next
        hand-off: the broker would get a quarter of each request per hand-off and wait
        for the rest (issue 16: 300,000 100 B records by send_batch handing off after
        each 1 MB batch, medians of six rounds on an idle machine: 7.7 M rec/s with the
        wait ending at the step, 8.5 M with it ending once written).
        """
        if threading.get_ident() == self._thread:
            self._event.set()
            return
        if self._loop.is_closed() or self.task.done():
            return
        with self._served:
            self._asked += 1
            ticket = self._asked
        self._loop.call_soon_threadsafe(self._event.set)
        with self._served:
            self._served.wait_for(lambda: self._done >= ticket, HAND_OFF_TIMEOUT)

    def _serve(self, asked: int) -> None:
        """The hand-offs asked before a step that ended with nothing more to send are served."""
        if self._done < asked:
            with self._served:
                self._done = asked
                self._served.notify_all()

    def _serve_written(self, asked: int) -> None:
        """As :meth:`_serve`, once every request sent so far is written to its socket."""
        if self._done >= asked:  # no hand-off waits
            return
        # The step's request tasks were made before this call_soon, so they run first and
        # have queued their requests (they write before they first wait) when it looks.
        self._loop.call_soon(self._when_written, asked)

    def _when_written(self, asked: int) -> None:
        # Every connection, not only this step's: a step that sent nothing must not serve a
        # hand-off while an earlier step's request still waits for its socket.
        left = len(self._sent_to) + 1

        def written() -> None:
            nonlocal left
            left -= 1
            if left == 0:
                self._serve(asked)

        for conn in self._sent_to:
            conn.when_written(written)
        written()

    async def close(self, timeout: float | None) -> None:
        """Send what is queued (within ``timeout`` seconds), then stop; the rest fails."""
        self._closing = True
        self.wake()
        try:
            await wait_for(asyncio.shield(self.task), timeout)
        except TimeoutError:
            pass
        finally:
            self._stopping = True
            await _cancel(self.task)
            await _cancel(*self._requests)  # their batches fail as they stop
            if self._refreshing is not None:
                await _cancel(self._refreshing)
            self.fail_queued(KafkaTimeoutError("the producer was closed before the record was sent"))

    # -- the loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._loop_steps()
        except Exception as exc:  # a bug outside a step: as one inside (_die)
            self._die(exc)
        finally:
            self._serve(self._asked)  # nobody waits for a sender that stopped

    async def _loop_steps(self) -> None:
        while not self._stopping and not (self._closing and self.acc.unsettled == 0):
            self._event.clear()
            asked = self._asked
            try:
                wait = await self._step()
                self._warned, self._step_failures = None, 0
            except asyncio.CancelledError:
                raise
            except KafkaError as exc:  # e.g. no broker reachable for InitProducerId: try again later
                if self._taking:  # not while taking batches: those would be lost (a bug, as below)
                    self._die(exc)
                    return
                self._last_error = exc
                if str(exc) != self._warned:  # not every backoff (issue 11)
                    self._warned = str(exc)
                    log.warning("producer: %s (retrying after retry.backoff.ms, doubling)", exc)
                self._step_failures += 1
                wait = self.retry_backoff.delay(self._step_failures)
            except Exception as exc:  # a bug: fail loudly rather than leave every future pending
                self._die(exc)
                return
            if wait != 0.0:
                self._serve_written(asked)
            if self._closing and self.acc.unsettled == 0:
                break
            try:
                await wait_for(self._event.wait(), wait)
            except TimeoutError:
                pass

    async def _step(self) -> float | None:
        """Send what can go now; return how long to sleep at most (None: until woken)."""
        now = time.monotonic()
        for batch in self.acc.expired(now):  # named with the last error seen, as the guide promises
            self._fail(batch, self._expired(batch, batch.last_error or self._last_error))
        if self.idempotence is not None and self.idempotence.needs_init:
            if any(self._partitions_in_flight.values()):
                return None  # a new producer id or epoch waits until nothing is in flight under the old one
            await self._init_producer_id(self.idempotence)
        if self.transactions is not None:
            self._add_partitions()
        ready, soonest = self.acc.ready(now)
        if (refused := self._refusal()) is not None:
            # Java's Sender in FATAL_ERROR: every batch fails with the error, later ones too;
            # in ABORTABLE_ERROR or aborting, those not sent yet (abortUndrainedBatches).
            for batch in ready:
                self.acc.take(batch)
                self._fail(batch, refused)
            if ready:
                return 0.0  # look again: that also tells the appender to wake us for the next record
            return None if soonest is None else max(soonest - time.monotonic(), 0.0)
        by_node: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        missing = set()
        throttled: list[float] = []
        conns: dict[int, Connection | None] = {}  # None: being connected
        for batch in ready:
            tp = (batch.topic, batch.partition)
            if self.idempotence is not None and self._partitions_in_flight.get(tp, 0) >= self.max_in_flight:
                continue
            if batch.attempts and self._partitions_in_flight.get(tp, 0):
                continue  # a retry goes alone, after what is in flight, so order holds
            if self.transactions is not None and not self.idempotence.send_allowed(tp):
                continue  # its partition is being added to the transaction: woken when it is
            node = self.cluster.leader(batch.topic, batch.partition)
            if node < 0:
                missing.add(batch.topic)
                continue
            if self._in_flight.get(node, 0) >= self.max_in_flight:
                continue
            if node not in conns:
                conns[node] = None if node in self._connecting else self.cluster.ready(
                    node, lambda error, node=node: self._connected(node, error))
                if conns[node] is None:
                    self._connecting.add(node)
            conn = conns[node]
            if conn is None:
                continue  # being connected: its batches wait, and keep filling, until it is open
            if (until := conn.throttled_until) > now:
                throttled.append(until)  # its batches stay here and keep filling until the broker is ready
                continue
            size = len(batch.data) if batch.data is not None else batch.builder.size_in_bytes()
            if node in by_node and sizes[node] + size > self.max_request_size:
                continue
            by_node.setdefault(node, []).append(batch)
            sizes[node] = sizes.get(node, 0) + size
        if missing or self.cluster.stale:
            self._refresh(missing)
        for node, batches in by_node.items():
            self._taking = batches  # taken but in no request yet: _die fails them should one raise
            for batch in batches:
                self.acc.take(batch)
                self._prepare(batch)
            self._taking = ()
            self._in_flight[node] = self._in_flight.get(node, 0) + 1
            for b in batches:
                tp = (b.topic, b.partition)
                self._partitions_in_flight[tp] = self._partitions_in_flight.get(tp, 0) + 1
            # Tasks start in the order they are made and write before they first wait, so
            # a broker gets the requests (and each partition its sequences) in this order.
            if conns[node] not in self._sent_to:  # a hand-off waits until it is written (_when_written)
                # (closed ones go as a new one comes: reconnects must not pile them up)
                self._sent_to = {conn for conn in self._sent_to if not conn.closed}
                self._sent_to.add(conns[node])
            task = self._loop.create_task(self._send(conns[node], batches))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)
        if by_node:
            return 0.0  # the next batches of those partitions may be ready already
        wakes = [t for t in (soonest, min(throttled, default=None)) if t is not None]
        if missing:
            wakes.append(now + self.retry_backoff.delay(1))  # look again once the refresh may be back
        return max(min(wakes) - time.monotonic(), 0.0) if wakes else None

    def _add_partitions(self) -> None:
        """Hand the partitions of queued batches to the transaction; AddPartitionsToTxn
        goes out for those new to it."""
        idempotence = self.idempotence
        with self.acc.lock:
            queued = [tp for tp, queue in self.acc.queues.items() if queue and not idempotence.send_allowed(tp)]
        for tp in queued:
            idempotence.add_partition(tp)
        if idempotence.new_partitions:
            self.transactions.add_partitions_soon()

    def _refresh(self, topics: set[str]) -> None:
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = self._loop.create_task(self._refresh_now(topics))

    async def _refresh_now(self, topics: set[str]) -> None:
        try:
            await self.cluster.refresh(topics)
        except KafkaError as exc:
            log.info("producer: metadata refresh failed: %s", exc)
        self._event.set()

    async def _init_producer_id(self, idempotence: Idempotence) -> None:
        """Get a usable producer id and epoch, as ``idempotence`` says: the next epoch of ours
        (no request), or InitProducerId's answer. A failure raises (the step is tried again
        after ``retry.backoff.ms``), a fatal one stops the sender."""
        request = idempotence.begin_init()
        if request is None:
            return
        response = await self.cluster.request(None, request)  # versions: kproto.io.versions
        try:
            idempotence.on_init_producer_id(response)
        except KafkaError as exc:
            if idempotence.fatal_error is None:
                raise
            log.error("producer: %s is fatal: every record fails with it", exc)

    def _prepare(self, batch: ProducerBatch) -> None:
        """Build (first send) or restamp (after a producer id change) a batch's bytes."""
        batch.attempts += 1
        if self.idempotence is None:
            if batch.data is None:
                batch.seal()
            return
        if batch.stamp == self.idempotence.stamp:
            return
        producer_id, epoch, sequence = self.idempotence.next_sequence(batch.topic, batch.partition, batch.record_count)
        batch.stamp, batch.base_sequence = (producer_id, epoch), sequence
        if batch.data is None:
            b = batch.builder
            b.producer_id, b.producer_epoch, b.base_sequence = producer_id, epoch, sequence
            batch.seal()
        else:
            # A built batch sent again: other producer fields (under the CRC, which the codec recomputes).
            batch.data = rewrite_batch(batch.data, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)

    # -- one request ------------------------------------------------------------------------

    def _produce_versions(self) -> dict[str, int]:
        """A transactional producer's Produce: v12+ with transaction version 2 (the leader
        adds the partition, KIP-890 part 2), else at most v11 (Java's ``Sender``:
        ``useTransactionV1Version``); any version otherwise."""
        if self.transactional_id is None or self.idempotence is None:
            return {}
        if self.idempotence.transaction_v2:
            return {"min_version": TRANSACTION_V2_FIRST[ApiKey.PRODUCE]}
        return {"max_version": TV1_LAST_VERSIONS[ApiKey.PRODUCE]}

    def _connected(self, node: int, error: BaseException | None) -> None:
        """A connection attempt ended: look again (a failed one may mean the leader moved)."""
        self._connecting.discard(node)
        self._last_error = error  # None: a broker is reachable again
        if error is not None and not self._stopping:
            log.info("producer: %s", error)
            self._refresh(set())
        self._event.set()

    async def _send(self, conn: Connection, batches: list[ProducerBatch]) -> None:
        """One Produce request's task; a bug in it stops the sender (``_die``) rather than
        leave its batches unsettled, and every flush waiting for them (issue 16)."""
        try:
            await self._request(conn, batches)
        except Exception as exc:
            self._die(exc, batches)

    async def _request(self, conn: Connection, batches: list[ProducerBatch]) -> None:
        node = conn.node_id
        topics: dict[str, list] = {}
        for b in batches:
            topics.setdefault(b.topic, []).append(ProduceRequest.PartitionProduceData(index=b.partition, records=b.data))
        request = ProduceRequest(transactional_id=self.transactional_id, acks=self.acks, timeout_ms=self.config["request.timeout.ms"],
                                 topic_data=[ProduceRequest.TopicProduceData(name=t, partition_data=p)
                                             for t, p in topics.items()])
        # An in-flight batch fails when its delivery.timeout.ms passes, as Java's Sender
        # expires in-flight batches (getExpiredInflightBatches): the request waits no longer
        # than its oldest batch may, then fails as a request timeout does (issue 10, item 14).
        timeout = min(self.request_timeout, min(b.deadline for b in batches) - time.monotonic())
        if self.metrics is not None:  # observability (kproto.metrics)
            self.metrics.request_sent(batches)
        sent = time.monotonic()
        try:
            response = await conn.request(request, expect_response=self.acks != 0,
                                          timeout=timeout, **self._produce_versions())
            if self.metrics is not None:  # observability (kproto.metrics)
                self.metrics.request_done(time.monotonic() - sent)
        except KafkaError as exc:
            self._refresh({b.topic for b in batches})
            for b in batches:
                self._retry_or_fail(b, exc)
            return
        except asyncio.CancelledError:  # a close that gave up: these records' fate is unknown
            for b in batches:
                self.acc.settle(b, -1, error=KafkaTimeoutError(
                    "the producer was closed before the broker acknowledged the record"))
            raise
        finally:
            self._in_flight[node] -= 1
            for b in batches:
                self._partitions_in_flight[(b.topic, b.partition)] -= 1
            self._event.set()
        if response is None:  # acks=0: nothing to learn
            for b in batches:
                self.acc.settle(b, -1)
            return
        by_partition = {(t.name, p.index): p for t in response.responses for p in t.partition_responses}
        endpoints = response.node_endpoints or ()
        for b in batches:
            p = by_partition.get((b.topic, b.partition))
            if p is None:
                self._fail(b, KafkaError(f"the broker did not answer for {b.topic}-{b.partition}"))
            else:
                self._handle(b, p, endpoints)

    def _handle(self, batch: ProducerBatch, p: Any, endpoints: Any = ()) -> None:
        code = p.error_code
        if code == 0 or code == DuplicateSequenceNumberError.code:
            self.acc.settle(batch, p.base_offset if code == 0 else -1, p.log_append_time_ms)
            if self.idempotence is not None:
                self.idempotence.on_acknowledged()
            return
        error = for_code(code)(p.error_message or f"producing to {batch.topic}-{batch.partition}")
        action = ErrorAction.AS_USUAL if self.idempotence is None else self.idempotence.on_error(
            error, earlier_waiting=self._earlier_waiting(batch))
        if action is ErrorAction.FATAL:
            fatal = self._fatal_error()
            if fatal is error:
                log.error("producer: %s is fatal: every record not yet acknowledged fails with it", error)
                self._event.set()  # the queued batches fail now
            self._fail(batch, fatal or error)
        elif action is ErrorAction.RETRY:
            self._retry_or_fail(batch, error, force_retriable=True)
        else:
            if isinstance(error, _ROUTING_MOVED) and not self._take_hint(batch, p, endpoints):
                self._refresh({batch.topic})
            self._retry_or_fail(batch, error)

    def _take_hint(self, batch: ProducerBatch, p: Any, endpoints: Any) -> bool:
        """KIP-951: a Produce v10+ NOT_LEADER_OR_FOLLOWER names the new leader (and its
        endpoint); a newer epoch than ours moves the partition there without a refresh."""
        hint = p.current_leader
        if hint is None or hint.leader_id < 0:
            return False
        taken = self.cluster.update_leader(batch.topic, batch.partition, hint.leader_id, hint.leader_epoch, endpoints)
        if taken:
            self._event.set()
        return taken

    def _earlier_waiting(self, batch: ProducerBatch) -> bool:
        """A batch of ``batch``'s epoch with a lower sequence is queued for its retry."""
        queue = self.acc.queues.get((batch.topic, batch.partition)) or ()
        return any(b.stamp == batch.stamp and b.base_sequence < batch.base_sequence for b in queue)

    def fail_queued(self, error: BaseException) -> None:
        """Fail every batch still queued with ``error``: when closing gave up, or after the
        sender failed (a send racing the failure may have queued one after it)."""
        for batch in self.acc.abort_all():
            self.acc.settle(batch, -1, error=error)

    def _die(self, exc: Exception, batches: Sequence[ProducerBatch] = ()) -> None:
        """An unexpected exception (a bug) in the loop or in a request: stop, and fail loudly
        rather than leave records pending and ``flush()`` or a send waiting for
        ``buffer.memory`` blocked for ever (issue 16). ``failed`` names the cause; every
        batch not settled fails with it: ``batches`` (the request's), those queued, those a
        step had taken, and (``_retry_or_fail``) those in flight when they are answered.
        Later sends raise :class:`~kproto.errors.ClientClosedError` naming it."""
        if self.failed is None:
            log.error("producer: the sender failed; failing every record not yet acknowledged", exc_info=exc)
            self.failed = failed = KafkaError(f"the producer's sender failed: {exc!r}")
            failed.__cause__ = exc
            self.acc.policy.refusal = lambda: ClientClosedError(f"the producer is closed: {failed}")
            self.acc.appender.closed = True  # later sends raise instead of queueing for nobody
            self._stopping = True
            self._event.set()
        self.fail_queued(self.failed)
        for batch in (*batches, *self._taking):
            if not batch.result.done:  # settled directly: the bug may be in the bookkeeping of _fail
                self.acc.settle(batch, -1, error=self.failed)
        self._taking = ()

    def _retry_or_fail(self, batch: ProducerBatch, error: KafkaError, *, force_retriable: bool = False) -> None:
        if (stopped := self.failed or self._refusal()) is not None:  # nobody would send it again
            self._fail(batch, stopped)
            return
        now = time.monotonic()
        retriable = error.retriable or force_retriable
        if retriable and batch.attempts <= self.retries and now < batch.deadline:
            batch.next_attempt = now + self.retry_backoff.delay(batch.attempts)
            if self.metrics is not None:  # observability (kproto.metrics)
                self.metrics.retried(batch)
            self.acc.requeue(batch, error)
            self._event.set()
        elif retriable and now >= batch.deadline:
            self._fail(batch, self._expired(batch, error))
        else:
            self._fail(batch, error)

    def _expired(self, batch: ProducerBatch, cause: BaseException | None = None) -> KafkaTimeoutError:
        error = KafkaTimeoutError(
            f"{batch.record_count} records for {batch.topic}-{batch.partition} expired after "
            f"{self.config['delivery.timeout.ms']} ms (delivery.timeout.ms)" + (f"; last error: {cause}" if cause else ""))
        error.__cause__ = cause
        return error

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        if self.metrics is not None:  # observability (kproto.metrics)
            self.metrics.failed(batch)
        if self.idempotence is not None:
            self.idempotence.on_batch_failed(batch.stamp is not None, error)
        self.acc.settle(batch, -1, error=error)

    def _fatal_error(self) -> KafkaError | None:
        """The error that put the idempotent producer in FATAL_ERROR, if it is there."""
        return None if self.idempotence is None else self.idempotence.fatal_error

    def _refusal(self) -> BaseException | None:
        """What a batch not yet sent fails with now (None: it may be sent): the fatal error;
        for a transactional producer also the transaction's error (ABORTABLE_ERROR),
        TransactionAbortedError (aborting), or the misuse of a batch outside a transaction
        (one that raced the end of its transaction)."""
        idempotence = self.idempotence
        if idempotence is None or idempotence.fatal_error is not None:
            return self._fatal_error()
        if self.transactions is None:
            return None
        state = idempotence.state
        if state in (ProducerState.IN_TRANSACTION, ProducerState.COMMITTING_TRANSACTION):
            return None
        if state is ProducerState.ABORTABLE_ERROR:
            return idempotence.last_error
        if state is ProducerState.ABORTING_TRANSACTION:
            return TransactionAbortedError("the transaction was aborted before the record was sent")
        return TransactionStateError(f"a record sent outside a transaction (the producer is in {state.name})")
