"""The transaction coordinator: every transactional id this broker coordinates, and its timers.

The thin asyncio driver over :mod:`minibroker.coordinator.transactions`, which makes every
decision (Kafka's ``TransactionCoordinator``, ``TransactionStateManager`` and
``TransactionMarkerChannelManager`` in one). It knows the broker only through callables
(:class:`TxnBackend`): the ``__transaction_state`` appends, the markers, producer ids.

Theory of operation (Kafka 3.x; KIP-890 part 2's transaction version 2, an epoch bump at
every EndTxn v5, is :meth:`TransactionCoordinator.end_txn` with ``tv2``):

- every change of an id's metadata is written to its partition of ``__transaction_state``
  (:func:`~minibroker.coordinator.txn_log.partition_for`) before it counts, with acks=all
  in a cluster; while the write is under way other requests for the id get
  CONCURRENT_TRANSACTIONS. A failed write is answered as Kafka's
  ``appendTransactionToLog`` maps it: UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND)
  and REQUEST_TIMED_OUT are COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER and
  KAFKA_STORAGE_ERROR NOT_COORDINATOR, MESSAGE_TOO_LARGE and RECORD_LIST_TOO_LARGE
  UNKNOWN_SERVER_ERROR;
- EndTxn writes PrepareCommit or PrepareAbort, answers, then writes the markers to every
  partition of the transaction in a task (Kafka's marker channel): a partition whose
  leader is moving, or whose append fails retriably, is tried again every 100 ms until it
  succeeds or the partition is gone; then CompleteCommit or CompleteAbort is written;
- InitProducerId of an id with an ongoing transaction fences it: the transaction is
  aborted under epoch + 1 and the producer answered CONCURRENT_TRANSACTIONS; its retry
  bumps the epoch again (Kafka's ``handleInitProducerId``);
- every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` an Ongoing
  transaction older than its ``transaction.timeout.ms`` is aborted the same way (Kafka's
  ``abortTimedOutTransactions``), and every
  ``transaction.remove.expired.transaction.cleanup.interval.ms`` an id idle (Empty or
  complete) for ``transactional.id.expiration.ms`` is removed with a tombstone (Kafka's
  ``removeExpiredTransactionalIds``);
- loading (Kafka's ``loadTransactionsForTxnTopicPartition``): the ids of a partition are
  replayed from its records; a transaction found in PrepareCommit or PrepareAbort has its
  markers written again and completes. A single broker loads every partition on start;
  a cluster broker the partitions it leads (:meth:`TransactionCoordinator.begin_load`,
  :meth:`~TransactionCoordinator.finish_load`), answering COORDINATOR_LOAD_IN_PROGRESS
  meanwhile and NOT_COORDINATOR for the ids of partitions it does not lead. The
  coordinator epoch, written in every marker, is the partition's leader epoch (0 for a
  single broker).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kproto.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    KafkaCodeError,
    KafkaStorageError,
    MessageTooLargeError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RecordListTooLargeError,
    RequestTimedOutError,
    TransactionalIdNotFoundError,
    TransactionCoordinatorFencedError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedForMessageFormatError,
    UnsupportedVersionError,
)
from kproto.records import BatchBuilder
from minibroker.coordinator.transactions import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TxnState,
    TxnTransit,
    end_needs_new_producer_id,
    needs_new_producer_id,
    prepare_add_partitions,
    prepare_complete,
    prepare_end_txn,
    prepare_init_producer_id,
    verify_partitions,
)
from minibroker.coordinator.txn_log import TxnLogEntry, partition_for, txn_batch

__all__ = ["TransactionCoordinator", "TxnBackend", "TxnListing"]

log = logging.getLogger("minibroker.transactions")

TopicPartition = tuple[str, int]

#: How long the marker channel waits before writing a failed marker again.
MARKER_RETRY_BACKOFF_S = 0.1

# Kafka's TransactionStateManager.appendTransactionToLog: the append's error -> the answer.
_APPEND_ERRORS = {
    UnknownTopicOrPartitionError.code: CoordinatorNotAvailableError.code,
    NotEnoughReplicasError.code: CoordinatorNotAvailableError.code,
    NotEnoughReplicasAfterAppendError.code: CoordinatorNotAvailableError.code,
    RequestTimedOutError.code: CoordinatorNotAvailableError.code,
    NotLeaderOrFollowerError.code: NotCoordinatorError.code,
    KafkaStorageError.code: NotCoordinatorError.code,
    MessageTooLargeError.code: UnknownServerError.code,
    RecordListTooLargeError.code: UnknownServerError.code,
}

# Kafka's TransactionMarkerRequestCompletionHandler: a marker answered with one of these
# is not written again (the partition cannot take markers), with these the sending stops
# (a newer coordinator or producer epoch took over); any other error is retried.
_MARKER_SKIPPED = frozenset({UnsupportedForMessageFormatError.code, UnsupportedVersionError.code})
_MARKER_FENCED = frozenset({InvalidProducerEpochError.code, TransactionCoordinatorFencedError.code})


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnBackend:
    """What the coordinator needs of its broker.

    Attributes:
        partition_count: the partitions of ``__transaction_state``, made on first use by a
            single broker; raises a :class:`~kproto.errors.KafkaCodeError` (or OSError) when
            it cannot be had.
        append: ``append(partition, batch)`` writes a batch to that partition of
            ``__transaction_state`` (acks=all in a cluster) and returns 0 or the append's
            error code; it may raise the error of an append that could not be made.
        write_markers: ``write_markers(producer_id, producer_epoch, coordinator_epoch,
            commit, partitions)`` writes one transaction's markers to those partitions
            wherever they are led; returns each partition's error code.
        partition_exists: whether a topic partition exists (markers to a deleted one are
            dropped, as Kafka's marker channel does).
        new_producer_id: a producer id never handed out before.
    """

    partition_count: Callable[[], int]
    append: Callable[[int, BatchBuilder], Awaitable[int]]
    write_markers: Callable[[int, int, int, bool, list[TopicPartition]], Awaitable[Mapping[TopicPartition, int]]]
    partition_exists: Callable[[TopicPartition], bool]
    new_producer_id: Callable[[], Awaitable[int]]


@dataclass(frozen=True, slots=True)
class TxnListing:
    """One row of ListTransactions."""

    transactional_id: str
    producer_id: int
    state: TxnState


@dataclass(slots=True)
class _Owned:
    """A ``__transaction_state`` partition led here: its coordinator epoch, whether its ids
    are loaded, and the marker tasks of its transactions (cancelled when it is unloaded)."""

    epoch: int
    loaded: bool = False
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionCoordinator:
    """Every transactional id of this broker's ``__transaction_state`` partitions.

    Args:
        config: broker settings; reads ``transaction.max.timeout.ms``,
            ``transactional.id.expiration.ms`` and the two cleanup intervals.
        backend: the broker (see :class:`TxnBackend`).
        solo: a single broker: it owns every partition, at coordinator epoch 0.
        wall_clock: milliseconds since the epoch; injectable for tests.
    """

    def __init__(self, config: Mapping[str, Any] | Any, backend: TxnBackend, *, solo: bool,
                 wall_clock: Callable[[], int] = _wall_clock_ms) -> None:
        self.config = config
        self.backend = backend
        self.solo = solo
        self.wall_clock = wall_clock
        self.txns: dict[str, TransactionMetadata] = {}
        self._owned: dict[int, _Owned] = {}
        self._partitions = 0  # of __transaction_state, once known
        self._upkeep: list[asyncio.Task[None]] = []
        self._resume: list[tuple[str, TxnTransit]] = []  # replayed Prepare* ids, until a loop runs

    @property
    def transaction_version(self) -> int:
        """The finalized ``transaction.version`` feature (0 when the config has none)."""
        try:
            return int(self.config["transaction.version"])
        except KeyError:
            return 0

    # -- ownership ---------------------------------------------------------------------------

    def _partition_of(self, transactional_id: str) -> int:
        if not self._partitions:
            self._partitions = self.backend.partition_count()
        return partition_for(transactional_id, self._partitions)

    def _request_status(self, transactional_id: str) -> int:
        """What a request naming ``transactional_id`` meets first: INVALID_REQUEST for an
        empty id, else :meth:`status`."""
        return InvalidRequestError.code if not transactional_id else self.status(transactional_id)

    def status(self, transactional_id: str) -> int:
        """0 when this coordinator holds the id; COORDINATOR_LOAD_IN_PROGRESS while its
        partition loads; NOT_COORDINATOR when the partition is not led here (Kafka's
        ``getTransactionState``). A single broker makes ``__transaction_state`` here
        (COORDINATOR_NOT_AVAILABLE if it cannot)."""
        try:
            partition = self._partition_of(transactional_id)
        except (KafkaCodeError, OSError):
            return CoordinatorNotAvailableError.code if self.solo else NotCoordinatorError.code
        if self.solo:
            self._owned.setdefault(partition, _Owned(0, loaded=True))
            self.ensure_started()
            return 0
        owned = self._owned.get(partition)
        if owned is None:
            return NotCoordinatorError.code
        return 0 if owned.loaded else CoordinatorLoadInProgressError.code

    def loading(self) -> bool:
        return any(not owned.loaded for owned in self._owned.values())

    def load(self, entries: Iterable[TxnLogEntry], partitions: int) -> None:
        """A single broker's start: replay every record of ``__transaction_state``; the
        transactions found in PrepareCommit or PrepareAbort complete once a loop runs."""
        self._partitions = partitions
        for index in range(partitions):
            self._owned[index] = _Owned(0, loaded=True)
        self._replay(entries)
        self.ensure_started()

    def begin_load(self, partition: int, partitions: int, epoch: int) -> bool:
        """This broker leads ``partition`` at ``epoch`` (cluster mode): its ids are
        COORDINATOR_LOAD_IN_PROGRESS until :meth:`finish_load`. False when it is held at
        that epoch already."""
        self._partitions = partitions
        owned = self._owned.get(partition)
        if owned is not None and owned.epoch == epoch:
            return False
        self.unload(partition)
        self._owned[partition] = _Owned(epoch)
        log.info("%s partition %d: loading at coordinator epoch %d", "__transaction_state", partition, epoch)
        return True

    def finish_load(self, partition: int, epoch: int, entries: Iterable[TxnLogEntry]) -> bool:
        """Replay the partition's records; its ids are answered from now on. False when the
        partition was unloaded or loaded again meanwhile."""
        owned = self._owned.get(partition)
        if owned is None or owned.epoch != epoch or owned.loaded:
            return False
        self._replay(entries)
        owned.loaded = True
        self.ensure_started()
        return True

    def unload(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its ids are forgotten and their marker
        sending stops (Kafka's ``removeTransactionsForTxnTopicPartition`` and
        ``removeMarkersForTxnTopicPartition``); the log keeps them for the next leader."""
        owned = self._owned.pop(partition, None)
        if owned is None:
            return
        for task in owned.tasks:
            task.cancel()
        gone = [t for t in self.txns if self._partition_of(t) == partition]
        for transactional_id in gone:
            del self.txns[transactional_id]
        log.info("__transaction_state partition %d: unloaded %d transactional id(s)", partition, len(gone))

    def _replay(self, entries: Iterable[TxnLogEntry]) -> None:
        latest: dict[str, TxnTransit | None] = {}
        for transactional_id, transit in entries:
            latest[transactional_id] = transit
        for transactional_id, transit in latest.items():
            if transit is None or transit.state is TxnState.Dead:
                self.txns.pop(transactional_id, None)
                continue
            self.txns[transactional_id] = TransactionMetadata.from_transit(transactional_id, transit)
            if transit.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
                self._resume.append((transactional_id, transit))

    def _coordinator_epoch(self, transactional_id: str) -> int | None:
        owned = self._owned.get(self._partition_of(transactional_id))
        return None if owned is None or not owned.loaded else owned.epoch

    # -- tasks -------------------------------------------------------------------------------

    def ensure_started(self) -> None:
        """Start the timers and resume replayed transactions, once a loop runs."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        if not self._upkeep:
            self._upkeep = [
                asyncio.create_task(self._every("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                                                self.abort_timed_out)),
                asyncio.create_task(self._every("transaction.remove.expired.transaction.cleanup.interval.ms",
                                                self.expire_transactional_ids)),
            ]
        resume, self._resume = self._resume, []
        for transactional_id, transit in resume:
            md = self.txns.get(transactional_id)
            epoch = self._coordinator_epoch(transactional_id)
            if md is None or epoch is None or md.state is not transit.state or md.pending:
                continue
            commit = md.state is TxnState.PrepareCommit
            complete = prepare_complete(md, md.producer_id, md.producer_epoch, commit, self.wall_clock())
            assert isinstance(complete, TxnTransit)
            log.info("transactional id %r: resuming the markers of %s", transactional_id, transit.state.name)
            self._spawn_markers(transactional_id, md, complete, epoch)

    async def _every(self, key: str, job: Callable[[], object]) -> None:
        interval = self.config[key] / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                job()
            except Exception:
                log.exception("transaction coordinator: %s failed", key)

    def close(self) -> None:
        """Cancel the timers and every marker task (the broker stops)."""
        for task in self._upkeep:
            task.cancel()
        self._upkeep = []
        for owned in self._owned.values():
            for task in owned.tasks:
                task.cancel()

    def _spawn(self, transactional_id: str, coro: Coroutine[Any, Any, None]) -> None:
        owned = self._owned.get(self._partition_of(transactional_id))
        task = asyncio.get_running_loop().create_task(coro)
        if owned is None:
            task.cancel()
            return
        owned.tasks.add(task)
        task.add_done_callback(owned.tasks.discard)

    # -- the log -----------------------------------------------------------------------------

    async def _write(self, transactional_id: str, md: TransactionMetadata, transit: TxnTransit,
                     epoch: int) -> int:
        """Write ``transit`` (pending on ``md``), then apply it; 0 or the error answered."""
        try:
            code = await self.backend.append(self._partition_of(transactional_id),
                                             txn_batch([(transactional_id, transit)], self.wall_clock(),
                                                       self.transaction_version))
        except KafkaCodeError as exc:
            code = exc.code
        except OSError:
            code = KafkaStorageError.code
        code = _APPEND_ERRORS.get(code, code)
        if self.txns.get(transactional_id) is not md or self._coordinator_epoch(transactional_id) != epoch:
            return NotCoordinatorError.code  # unloaded (or loaded again) meanwhile
        if code:
            md.abort_transition()
            log.info("transactional id %r: writing %s failed with error %d", transactional_id,
                     transit.state.name, code)
            return code
        md.complete_transition(transit)
        if transit.state is TxnState.Dead:
            del self.txns[transactional_id]
        return 0

    # -- requests ----------------------------------------------------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> tuple[int, int, int]:
        """InitProducerId with a transactional id (Kafka's ``handleInitProducerId``):
        (error code, producer id, producer epoch)."""
        if not transactional_id:
            return InvalidRequestError.code, -1, -1
        if not 0 < timeout_ms <= self.config["transaction.max.timeout.ms"]:
            return InvalidTransactionTimeoutError.code, -1, -1
        code = self.status(transactional_id)
        if code:
            return code, -1, -1
        epoch = self._coordinator_epoch(transactional_id)
        assert epoch is not None
        md = self.txns.get(transactional_id)
        new_id = None
        if needs_new_producer_id(md, expected):
            try:
                new_id = await self.backend.new_producer_id()
            except (KafkaCodeError, OSError):
                return CoordinatorLoadInProgressError.code, -1, -1  # as the non-transactional path
            if self._coordinator_epoch(transactional_id) != epoch:
                return NotCoordinatorError.code, -1, -1
            md = self.txns.get(transactional_id)
            if md is None:
                md = self.txns[transactional_id] = TransactionMetadata(
                    transactional_id=transactional_id, producer_id=new_id, producer_epoch=NO_PRODUCER_EPOCH,
                    txn_timeout_ms=timeout_ms, txn_last_update_timestamp=self.wall_clock())
        assert md is not None
        result = prepare_init_producer_id(md, timeout_ms, expected, new_id, self.wall_clock())
        if isinstance(result, int):
            return result, -1, -1
        if result.state is TxnState.PrepareEpochFence:
            code = await self._end_transaction(transactional_id, result.producer_id, result.producer_epoch,
                                               commit=False, from_client=False)
            return code or ConcurrentTransactionsError.code, -1, -1
        code = await self._write(transactional_id, md, result, epoch)
        if code:
            return code, -1, -1
        log.info("transactional id %r: producer id %d, epoch %d", transactional_id, md.producer_id,
                 md.producer_epoch)
        return 0, md.producer_id, md.producer_epoch

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Iterable[TopicPartition], client_transaction_version: int = 0) -> int:
        """AddPartitionsToTxn / AddOffsetsToTxn (Kafka's ``handleAddPartitionsToTransaction``)."""
        code = self._request_status(transactional_id)
        if code:
            return code
        epoch = self._coordinator_epoch(transactional_id)
        md = self.txns.get(transactional_id)
        result = prepare_add_partitions(md, producer_id, producer_epoch, frozenset(partitions), self.wall_clock(),
                                        client_transaction_version)
        if isinstance(result, int):
            return result
        assert md is not None and epoch is not None
        return await self._write(transactional_id, md, result, epoch)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ with ``verify_only`` (KIP-890 part 1, Kafka's
        ``handleVerifyPartitionsInTransaction``): each partition's error code, 0 when it is
        in the id's ongoing transaction (see :func:`~minibroker.coordinator.transactions.verify_partitions`)."""
        asked = frozenset(partitions)
        code = InvalidRequestError.code if not transactional_id else self.status(transactional_id)
        if not code:
            result = verify_partitions(self.txns.get(transactional_id), producer_id, producer_epoch, asked)
            if isinstance(result, dict):
                return result
            code = result
        return dict.fromkeys(asked, code)

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> int:
        """EndTxn v0-4, or v5+ without transaction version 2 (Kafka's ``handleEndTransaction``, TV1)."""
        return await self._end_transaction(transactional_id, producer_id, producer_epoch, commit=commit,
                                           from_client=True)

    async def end_txn_v2(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         commit: bool) -> tuple[int, int, int]:
        """EndTxn v5+ with transaction version 2 finalized (KIP-890 part 2): (error code,
        producer id, producer epoch). The epoch is bumped at every end, the markers carry
        the bumped one, and the answer names the producer id and epoch of the next
        transaction (a new producer id at epoch 0 once the epochs of the old one are used
        up); see :func:`~minibroker.coordinator.transactions.prepare_end_txn`."""
        next_id = NO_PRODUCER_ID
        if transactional_id and not self.status(transactional_id):
            epoch = self._coordinator_epoch(transactional_id)
            if end_needs_new_producer_id(self.txns.get(transactional_id), True):
                try:
                    next_id = await self.backend.new_producer_id()
                except (KafkaCodeError, OSError):
                    return CoordinatorLoadInProgressError.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
                if self._coordinator_epoch(transactional_id) != epoch:
                    return NotCoordinatorError.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        prepared = self._prepare_end(transactional_id, producer_id, producer_epoch, commit=commit, from_client=True,
                                     tv2=True, next_producer_id=next_id)
        if isinstance(prepared, int):
            md = self.txns.get(transactional_id) if transactional_id else None
            if prepared == 0 and md is not None:  # a retry of an end already complete: the current id and epoch
                return 0, md.producer_id, md.producer_epoch
            return prepared, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        transit = prepared[1]
        answer = ((transit.next_producer_id, 0) if transit.next_producer_id != NO_PRODUCER_ID
                  else (transit.producer_id, transit.producer_epoch))
        code = await self._finish_end(transactional_id, producer_id, producer_epoch, commit, *prepared)
        if code:
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        log.info("transactional id %r: ended (TV2), next producer id %d epoch %d", transactional_id, *answer)
        return 0, *answer

    async def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, *,
                               commit: bool, from_client: bool) -> int:
        """Kafka's ``endTransaction``: write PrepareCommit/PrepareAbort, answer, and send
        the markers in a task."""
        prepared = self._prepare_end(transactional_id, producer_id, producer_epoch, commit=commit,
                                     from_client=from_client)
        if isinstance(prepared, int):
            return prepared
        return await self._finish_end(transactional_id, producer_id, producer_epoch, commit, *prepared)

    def _prepare_end(self, transactional_id: str, producer_id: int, producer_epoch: int, *, commit: bool,
                     from_client: bool, tv2: bool = False,
                     next_producer_id: int = NO_PRODUCER_ID) -> int | tuple[TransactionMetadata, TxnTransit, int, bool]:
        """The checks of ``endTransaction`` and the pending PrepareCommit/PrepareAbort, at
        once (no await): an error code, or (metadata, transit, coordinator epoch, fencing)."""
        code = self._request_status(transactional_id)
        if code:
            return code
        epoch = self._coordinator_epoch(transactional_id)
        md = self.txns.get(transactional_id)
        fencing = md is not None and md.pending_state is TxnState.PrepareEpochFence
        result = prepare_end_txn(md, producer_id, producer_epoch, commit, self.wall_clock(), from_client=from_client,
                                 tv2=tv2, next_producer_id=next_producer_id)
        if isinstance(result, int):
            return result
        assert md is not None and epoch is not None
        return md, result, epoch, fencing

    async def _finish_end(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                          md: TransactionMetadata, transit: TxnTransit, epoch: int, fencing: bool) -> int:
        """Write the prepared end, then start the markers (``sendTxnMarkersCallback``)."""
        code = await self._write(transactional_id, md, transit, epoch)
        if code:
            if fencing and self.txns.get(transactional_id) is md:
                md.has_failed_epoch_fence = True  # the bumped epoch was never handed out
            return code
        complete = prepare_complete(md, producer_id, producer_epoch, commit, self.wall_clock())
        if isinstance(complete, int):
            return complete
        self._spawn_markers(transactional_id, md, complete, epoch)
        return 0

    def _spawn_markers(self, transactional_id: str, md: TransactionMetadata, complete: TxnTransit,
                       epoch: int) -> None:
        self._spawn(transactional_id, self._send_markers(transactional_id, md, complete, epoch))

    async def _send_markers(self, transactional_id: str, md: TransactionMetadata, complete: TxnTransit,
                            epoch: int) -> None:
        """Kafka's ``TransactionMarkerChannelManager``: the markers of ``md``'s transaction
        on every partition, retried until written or the partition is gone, then the
        complete state written (``completeSendMarkersForTxnId``, retried while the log
        answers COORDINATOR_NOT_AVAILABLE)."""
        commit = complete.state is TxnState.CompleteCommit
        remaining = set(md.partitions)
        while True:
            remaining = {tp for tp in remaining if self.backend.partition_exists(tp)}
            if not remaining:
                break
            codes = await self.backend.write_markers(md.producer_id, md.producer_epoch, epoch, commit,
                                                     sorted(remaining))
            if self.txns.get(transactional_id) is not md or self._coordinator_epoch(transactional_id) != epoch:
                return
            for tp, code in codes.items():
                if code == 0 or code in _MARKER_SKIPPED:
                    remaining.discard(tp)
                elif code in _MARKER_FENCED:
                    log.info("transactional id %r: markers fenced (error %d)", transactional_id, code)
                    md.abort_transition()
                    return
            if remaining:
                log.debug("transactional id %r: markers to retry on %s", transactional_id, sorted(remaining))
                await asyncio.sleep(MARKER_RETRY_BACKOFF_S)
        while True:
            code = await self._write(transactional_id, md, complete, epoch)
            if code != CoordinatorNotAvailableError.code:
                break
            md.pending_state = complete.state  # written again: still pending
            await asyncio.sleep(MARKER_RETRY_BACKOFF_S)
        if code:
            log.info("transactional id %r: %s not written (error %d)", transactional_id, complete.state.name, code)

    # -- upkeep ------------------------------------------------------------------------------

    def abort_timed_out(self) -> int:
        """Abort every Ongoing transaction older than its timeout, fencing its producer
        (Kafka's ``abortTimedOutTransactions``); returns how many."""
        now = self.wall_clock()
        count = 0
        for transactional_id, md in list(self.txns.items()):
            if (md.state is not TxnState.Ongoing or md.pending
                    or md.txn_start_timestamp + md.txn_timeout_ms >= now
                    or self._coordinator_epoch(transactional_id) is None):
                continue
            if md.producer_epoch >= 0x7FFF:  # Kafka's prepareFenceProducerEpoch refuses too
                log.error("transactional id %r: timed out, but no epoch is left to fence it with", transactional_id)
                continue
            fence = md.prepare_fence_producer_epoch()
            log.info("transactional id %r: transaction timed out after %d ms: aborting it",
                     transactional_id, md.txn_timeout_ms)
            # PrepareAbort is made pending now, in the same step as the fence (Kafka does both
            # under the metadata's lock): a request arriving before the write sees it.
            prepared = self._prepare_end(transactional_id, fence.producer_id, fence.producer_epoch, commit=False,
                                         from_client=False)
            if isinstance(prepared, int):
                log.info("transactional id %r: the timeout abort ended with error %d", transactional_id, prepared)
                continue
            self._spawn(transactional_id, self._abort(transactional_id, fence, prepared))
            count += 1
        return count

    async def _abort(self, transactional_id: str, fence: TxnTransit,
                     prepared: tuple[TransactionMetadata, TxnTransit, int, bool]) -> None:
        code = await self._finish_end(transactional_id, fence.producer_id, fence.producer_epoch, False, *prepared)
        if code:
            log.info("transactional id %r: the timeout abort ended with error %d", transactional_id, code)

    def expire_transactional_ids(self) -> int:
        """Remove the ids unused for ``transactional.id.expiration.ms`` (Kafka's
        ``removeExpiredTransactionalIds``): a tombstone each; returns how many go."""
        limit = self.wall_clock() - self.config["transactional.id.expiration.ms"]
        count = 0
        for transactional_id, md in list(self.txns.items()):
            epoch = self._coordinator_epoch(transactional_id)
            if (md.state not in (TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort)
                    or md.pending or md.txn_last_update_timestamp > limit or epoch is None):
                continue
            self._spawn(transactional_id, self._expire(transactional_id, md, md.prepare_dead(), epoch))
            count += 1
        return count

    async def _expire(self, transactional_id: str, md: TransactionMetadata, dead: TxnTransit, epoch: int) -> None:
        code = await self._write(transactional_id, md, dead, epoch)
        log.info("transactional id %r: expired%s", transactional_id, f" (not written: error {code})" if code else "")

    # -- admin -------------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        """DescribeTransactions of one id (Kafka's ``handleDescribeTransactions``)."""
        code = self._request_status(transactional_id)
        if code:
            return code, None
        md = self.txns.get(transactional_id)
        if md is None or md.state is TxnState.Dead:
            return TransactionalIdNotFoundError.code, None
        return 0, md

    def list(self, states: Iterable[str], producer_ids: Iterable[int],
             duration_ms: int = -1) -> tuple[int, list[str], list[TxnListing]]:
        """ListTransactions (Kafka's ``TransactionStateManager.listTransactionStates``):
        (error code, unknown state filters, rows). COORDINATOR_LOAD_IN_PROGRESS while a
        partition loads. ``duration_ms`` >= 0 keeps the transactions started longer ago
        (KIP-994)."""
        if self.loading():
            return CoordinatorLoadInProgressError.code, [], []
        known = {s.name: s for s in TxnState}
        wanted_states = set(states)
        unknown = sorted(s for s in wanted_states if s not in known)
        wanted_ids = set(producer_ids)
        now = self.wall_clock()
        rows = []
        for transactional_id, md in self.txns.items():
            if self._coordinator_epoch(transactional_id) is None or md.state is TxnState.Dead:
                continue
            if wanted_states and md.state.name not in wanted_states:
                continue
            if wanted_ids and md.producer_id not in wanted_ids:
                continue
            if duration_ms >= 0 and now - md.txn_start_timestamp <= duration_ms:
                continue
            rows.append(TxnListing(transactional_id, md.producer_id, md.state))
        return 0, unknown, rows
