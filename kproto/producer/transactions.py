"""The transactional request flow: the I/O that drives a transactional producer's state.

Theory of operation (Java's ``TransactionManager`` requests, driven by its ``Sender``;
KIP-98, KIP-447). :class:`~kproto.producer.idempotence.Idempotence` decides (it builds
each request and reads each answer); :class:`Transactions` sends and waits:

- the transaction coordinator is found with FindCoordinator key type 1 (the
  ``transactional.id``), a group's coordinator with key type 0, and each is looked up
  again when an answer says it moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) or the
  connection to it is lost;
- one transactional request is in flight at a time (Java's ``inFlightRequestCorrelationId``):
  AddPartitionsToTxn, AddOffsetsToTxn and TxnOffsetCommit, EndTxn and InitProducerId go
  out in the order they are asked for;
- a retriable answer (COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, a lost
  connection...) is sent again after ``retry.backoff.ms`` doubling up to
  ``retry.backoff.max.ms`` (CONCURRENT_TRANSACTIONS for the first AddPartitionsToTxn of a
  transaction after 20 ms: the previous transaction is still being ended, Java's
  ``ADD_PARTITIONS_RETRY_BACKOFF_MS``); abortable and fatal errors are raised;
- the application's calls (:meth:`Transactions.run`) run as tasks and wait for them up to
  ``max.block.ms`` (or their ``timeout``): a call that times out raises
  :class:`~kproto.errors.KafkaTimeoutError` and the work goes on; calling it again waits
  for the same work (Java's ``handleCachedTransactionRequestResult``);
- the sender asks :meth:`Transactions.add_partitions_soon` when batches of partitions not
  in the transaction are queued: one AddPartitionsToTxn adds all that are known then, and
  the sender is woken when they may take batches.

Versions are the table's, narrowed in :mod:`kproto.io.versions` (AddPartitionsToTxn
v0-v3, the client's form) and by the broker's ApiVersions. KIP-890 part 2 (Java's
``TransactionManager.isTransactionV2Enabled``): when the coordinator's ApiVersions, read at
InitProducerId, finalizes ``transaction.version`` 2 and offers EndTxn v5 and Produce v12,
the producer sends no AddPartitionsToTxn (its Produce v12 makes the leader add the
partition), and its EndTxn is v5, whose answer carries the next epoch; otherwise EndTxn
stays at v4 and Produce at v11 (``TV1_LAST_VERSIONS``), the KIP-98 protocol. Offsets still
go through AddOffsetsToTxn then TxnOffsetCommit (at most v4) in both: Java's TV2 skips
AddOffsetsToTxn and sends TxnOffsetCommit v5, which kproto does not yet.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kproto.errors import (
    ConcurrentTransactionsError,
    KafkaError,
    KafkaTimeoutError,
    TransactionStateError,
)
from kproto.io import Cluster
from kproto.io.retry import Backoff
from kproto.io.versions import TRANSACTION_V2_FIRST, TV1_LAST_VERSIONS
from kproto.producer.idempotence import Idempotence, ProducerState, TxnStep
from kproto.protocol import ApiKey
from kproto.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

__all__ = ["Transactions"]

log = logging.getLogger("kproto.producer")

_TXN, _GROUP = 1, 0  # FindCoordinator key types (KIP-98)
_ADD_PARTITIONS_RETRY_BACKOFF = 0.02  # Java's ADD_PARTITIONS_RETRY_BACKOFF_MS


class Transactions:
    """One transactional producer's requests to its coordinators; see the module docstring.

    Args:
        idempotence: the producer's state (with a ``transactional.id``).
        cluster: the producer's cluster.
        config: the producer's settings (``retry.backoff.ms``, ``max.block.ms``).
        flush: awaits every queued record settled (the producer's flush).
        wake: wakes the sender (partitions were added, or the transaction failed).
    """

    def __init__(self, idempotence: Idempotence, cluster: Cluster, config: Mapping[str, Any],
                 flush: Callable[[], Awaitable[None]], wake: Callable[[], None]) -> None:
        self.idem = idempotence
        self.cluster = cluster
        self.backoff = Backoff.retry(config)
        self.max_block = config["max.block.ms"] / 1000
        self._flush = flush
        self._wake = wake
        self._coordinators: dict[tuple[int, str], int] = {}  # (key type, key) -> node id
        self._lock = asyncio.Lock()  # one transactional request in flight
        # The application's call (name, arguments, work) until it sees its end.
        self._operation: tuple[str, Any, asyncio.Task] | None = None
        self._adding: asyncio.Task | None = None
        self._last_error: BaseException | str | None = None  # why the last attempt is retried, for a timeout

    # -- the application's calls --------------------------------------------------------------

    async def run(self, name: str, start: Callable[[], Callable[[], Awaitable[None]]], timeout: float | None,
                  args: Any = None) -> None:
        """Run the application's call ``name`` (with ``args``): ``start()`` checks the state
        (raising at once when the call is not allowed) and returns the work, run as a task
        that outlives a timeout. The same call with the same ``args`` waits for the same work
        while it runs, or gets its end if nobody saw it yet and no transaction began since.

        Raises:
            KafkaTimeoutError: ``timeout`` seconds (None: ``max.block.ms``) passed; the work
                goes on, and calling again waits for it.
            TransactionStateError: another call's work is still running.
            KafkaError: the work's error (abortable or fatal, with its flag set).
        """
        operation = self._operation
        if operation is not None and operation[:2] == (name, args):
            task = operation[2]
        else:
            if operation is not None:
                if not operation[2].done():
                    raise TransactionStateError(f"{name} while {operation[0]} is still running: call "
                                                f"{operation[0]} again (with the same arguments) to wait for it")
                self.forget_finished()
            work = start()
            self._last_error = None
            task = asyncio.get_running_loop().create_task(work())
            self._operation = (name, args, task)
        wait = self.max_block if timeout is None else timeout
        done, _ = await asyncio.wait((task,), timeout=wait)
        if not done:
            last = f"; last error: {self._last_error}" if self._last_error is not None else ""
            raise KafkaTimeoutError(f"{name} did not finish within {wait:g} s (max.block.ms, or the timeout given); "
                                    f"it goes on: call {name} again to wait for it{last}")
        if self._operation is not None and self._operation[2] is task:
            self._operation = None
        task.result()

    def forget_finished(self) -> None:
        """A new transaction begins (or another call): the end of a call that timed out,
        if it came meanwhile and nobody saw it, is no longer what a call gets."""
        operation = self._operation
        if operation is not None and operation[2].done():
            if not operation[2].cancelled():
                operation[2].exception()  # retrieved: its end is superseded
            self._operation = None

    def init_transactions(self) -> Callable[[], Awaitable[None]]:
        self.idem.init_transactions()
        return self._init

    async def _init(self) -> None:
        await self._call("InitProducerId", self.idem.init_request, self.idem.on_init_producer_id)

    def send_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                     group: ConsumerGroupMetadata) -> Callable[[], Awaitable[None]]:
        if not isinstance(group, ConsumerGroupMetadata):
            raise TypeError(f"group_metadata must be a ConsumerGroupMetadata (consumer.group_metadata()), "
                            f"not {type(group).__name__}")
        request = self.idem.add_offsets_request(group.group_id)  # checks the state now
        offsets = dict(offsets)

        async def work() -> None:
            if not offsets:
                return  # Java's sendOffsetsToTransaction sends nothing for no offsets
            await self._call("AddOffsetsToTxn", lambda: request, self.idem.on_add_offsets)
            self.idem.txn_offset_commit_request(offsets, group)  # the offsets to commit; retries send the rest
            # KIP-447: the group's generation and member go with the offsets from v3.
            member = bool(group.member_id) or group.generation_id >= 0 or group.group_instance_id is not None
            await self._call("TxnOffsetCommit", lambda: self.idem.txn_offset_commit_request({}, group),
                             self.idem.on_txn_offset_commit, coordinator=(_GROUP, group.group_id),
                             min_version=3 if member else 0)
        return work

    def commit(self) -> Callable[[], Awaitable[None]]:
        self.idem.begin_commit()
        return self._commit

    async def _commit(self) -> None:
        await self._flush()  # Java: the EndTxn waits for every batch
        await self._added()
        self.idem.raise_if_failed()  # a batch failed: the first send error, abortable
        request = self.idem.end_txn_request()
        if request is not None:
            await self._call("EndTxn", lambda: request, self.idem.on_end_txn, **self._end_txn_versions())

    def _end_txn_versions(self) -> dict[str, int]:
        """EndTxn v5+ with transaction version 2, else at most v4 (a v5 there is TV1's anyway)."""
        if self.idem.transaction_v2:
            return {"min_version": TRANSACTION_V2_FIRST[ApiKey.END_TXN]}
        return {"max_version": TV1_LAST_VERSIONS[ApiKey.END_TXN]}

    def abort(self) -> Callable[[], Awaitable[None]]:
        self.idem.begin_abort()
        self._wake()  # the sender fails what was not sent
        return self._abort

    async def _abort(self) -> None:
        await self._flush()  # batches in flight end first; unsent ones fail with TransactionAbortedError
        await self._added()
        request = self.idem.end_txn_request()
        if request is not None:
            await self._call("EndTxn", lambda: request, self.idem.on_end_txn, **self._end_txn_versions())
        if self.idem.state is ProducerState.INITIALIZING:  # a batch failed after it was sent: a new epoch
            await self._init()

    async def close(self) -> None:
        """Stop what is running (the producer is closing)."""
        tasks = [t for t in (self._adding, self._operation[2] if self._operation else None) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- the sender's call --------------------------------------------------------------------

    def add_partitions_soon(self) -> None:
        """Send AddPartitionsToTxn for the partitions the state collected, unless one is
        being sent (the partitions collected meanwhile go with the next)."""
        if self._adding is None or self._adding.done():
            self._adding = asyncio.get_running_loop().create_task(self._add_partitions())

    async def _added(self) -> None:
        """Wait for an AddPartitionsToTxn in flight: whether the coordinator has partitions
        of the transaction (and so needs an EndTxn) is known only then."""
        if self._adding is not None and not self._adding.done():
            await asyncio.wait((self._adding,))

    async def _add_partitions(self) -> None:
        try:
            while (request := self.idem.add_partitions_request()) is not None:
                await self._call("AddPartitionsToTxn", lambda request=request: request, self.idem.on_add_partitions)
        except KafkaError as exc:  # the transaction failed (the state says so): its batches fail
            log.info("producer: adding partitions to the transaction failed: %s", exc)
        finally:
            self._wake()

    # -- one request ----------------------------------------------------------------------------

    async def _call(self, name: str, build: Callable[[], Any], apply: Callable[[Any], TxnStep],
                    coordinator: tuple[int, str] | None = None, **versions: Any) -> None:
        """Send ``build()`` to its coordinator until ``apply(answer)`` says DONE; retriable
        outcomes back off and go again, the others raise (from ``apply``)."""
        key = coordinator or (_TXN, self.idem.transactional_id)
        failures = 0
        while True:
            response = None
            async with self._lock:
                try:
                    node = await self._coordinator(*key)
                except KafkaError as exc:
                    self._last_error = exc
                    step = self.idem.on_txn_error("FindCoordinator", exc)
                else:
                    try:
                        conn = await self.cluster.connection(node)
                        response = await conn.request(build(), **versions)
                    except KafkaError as exc:  # no answer (a lost connection, a timeout), or no version
                        self._last_error = exc
                        step = self.idem.on_txn_error(name, exc)
                    else:
                        if name == "InitProducerId":
                            # Java's handleCoordinatorReady: the abort after a failed batch
                            # bumps the epoch with InitProducerId v3+ (KIP-360).
                            offered = conn.api_versions.get(ApiKey.INIT_PRODUCER_ID)
                            self.idem.can_bump_epoch = offered is not None and offered[1] >= 3
                            if self.idem.state is ProducerState.INITIALIZING:  # not between a batch and its end
                                self.idem.transaction_v2 = _transaction_v2(conn)
                        step = apply(response)
            if step is TxnStep.DONE:
                return
            if response is not None:
                self._last_error = f"{name} answered {step.name}"
            if step is TxnStep.FIND_COORDINATOR:
                self._coordinators.pop(key, None)
            failures += 1
            delay = self.backoff.delay(failures)
            if name == "AddPartitionsToTxn" and not self.idem.partitions and _concurrent(response):
                delay = min(delay, _ADD_PARTITIONS_RETRY_BACKOFF)
            log.debug("producer: %s: %s, again in %.3f s", name, step.name, delay)
            await asyncio.sleep(delay)

    async def _coordinator(self, key_type: int, key: str) -> int:
        node = self._coordinators.get((key_type, key))
        if node is None:
            node = await self.cluster.find_coordinator(key, key_type)
            self._coordinators[(key_type, key)] = node
        return node


def _transaction_v2(conn: Any) -> bool:
    """The coordinator finalizes ``transaction.version`` 2 (Java's ``isTransactionV2Enabled``)
    and offers the versions it needs (EndTxn v5, Produce v12)."""
    if conn.finalized_features.get("transaction.version", 0) < 2:
        return False
    return all((offered := conn.api_versions.get(key)) is not None and offered[1] >= first
               for key, first in TRANSACTION_V2_FIRST.items())


def _concurrent(response: Any) -> bool:
    """An AddPartitionsToTxn answer of CONCURRENT_TRANSACTIONS."""
    if response is None:
        return False
    return any(p.partition_error_code == ConcurrentTransactionsError.code
               for t in response.results_by_topic_v3_and_below for p in t.results_by_partition)
