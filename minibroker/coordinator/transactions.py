"""The transaction coordinator's state machine, sans-I/O: one transactional id's metadata.

Kafka's ``TransactionMetadata`` (``kafka.coordinator.transaction``, 3.x, before KIP-890
part 2): a transactional id has a producer id and epoch, a timeout, the partitions of its
ongoing transaction and a state. Every change is made in two steps, as Kafka's:

1. a ``prepare_*`` method checks the move, sets :attr:`TransactionMetadata.pending_state`
   and returns a :class:`TxnTransit`, the new metadata to write to ``__transaction_state``;
2. once the write succeeded, :meth:`TransactionMetadata.complete_transition` applies it;
   if it failed, :meth:`TransactionMetadata.abort_transition` clears the pending state.

While a transition is pending, requests get CONCURRENT_TRANSACTIONS (Kafka's
``pendingTransitionInProgress``). The request decisions of Kafka's
``TransactionCoordinator`` (``prepareInitProducerIdTransit``, ``handleAddPartitionsToTransaction``,
``endTransaction``, ``sendTxnMarkersCallback``) are the functions :func:`prepare_init_producer_id`,
:func:`prepare_add_partitions`, :func:`prepare_end_txn` and :func:`prepare_complete`: each
answers an error code (0 included: answer without writing) or a transit to write. No clock
is read here: the caller passes ``now`` (wall milliseconds).

States and moves (Kafka's ``TransactionState.validPreviousStates``, turned around)::

    Empty ----------> Ongoing -----------> PrepareCommit --> CompleteCommit
      ^  \\            |   \\                                     |
      |   Dead         |    PrepareEpochFence --> PrepareAbort --> CompleteAbort
      |                +-------------------------^                 |
      +------------ (InitProducerId, AddPartitions: a new one) ----+

The complete states go back to Empty (InitProducerId), to Ongoing (the next transaction's
first AddPartitions) or to Dead (the id expired). PrepareEpochFence is never written: it
is the in-memory step of an abort with a bumped epoch (a new producer's InitProducerId
or the coordinator's timeout abort fence the ongoing transaction's producer).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from kproto.errors import (
    ConcurrentTransactionsError,
    IllegalTransitionError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    ProducerFencedError,
    TransactionAbortableError,
)

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TRANSITIONS",
    "TransactionMetadata",
    "TxnState",
    "TxnTransit",
    "end_needs_new_producer_id",
    "epoch_exhausted",
    "needs_new_producer_id",
    "prepare_add_partitions",
    "prepare_complete",
    "prepare_end_txn",
    "prepare_init_producer_id",
    "verify_partitions",
]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
_MAX_EPOCH = 0x7FFF  # Short.MaxValue

TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    """Kafka's transaction states under Kafka's names; the value is the state's id in
    ``__transaction_state`` (``TransactionLogValue.transaction_status``)."""

    Empty = 0
    Ongoing = 1
    PrepareCommit = 2
    PrepareAbort = 3
    CompleteCommit = 4
    CompleteAbort = 5
    Dead = 6
    PrepareEpochFence = 7


S = TxnState

#: state -> the states it may move to (Kafka's ``TransactionState.validPreviousStates``,
#: turned around). A move to the same state is legal where Kafka lists it (Empty, Ongoing).
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.Empty: frozenset({S.Empty, S.Ongoing, S.Dead, S.PrepareAbort}),  # PrepareAbort: TV2's abort of nothing
    S.Ongoing: frozenset({S.Ongoing, S.PrepareCommit, S.PrepareAbort, S.PrepareEpochFence}),
    S.PrepareCommit: frozenset({S.CompleteCommit}),
    S.PrepareAbort: frozenset({S.CompleteAbort}),
    S.CompleteCommit: frozenset({S.Empty, S.Ongoing, S.Dead, S.PrepareAbort}),
    S.CompleteAbort: frozenset({S.Empty, S.Ongoing, S.Dead, S.PrepareAbort}),
    S.Dead: frozenset(),
    S.PrepareEpochFence: frozenset({S.PrepareAbort}),
}


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: the last epoch before the maximum
    is the last one handed out, so that a fencing bump still has room."""
    return epoch >= _MAX_EPOCH - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnTransit:
    """A transactional id's metadata as it will be once written (Kafka's ``TxnTransitMetadata``):
    what a ``__transaction_state`` record holds, plus the previous producer id and epoch."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    #: KIP-890 part 2: the producer id a TV2 end moves to once its epoch is exhausted.
    next_producer_id: int = NO_PRODUCER_ID
    #: The transaction version of the client's last request (Kafka's ``clientTransactionVersion``).
    client_transaction_version: int = 0


@dataclass(slots=True, kw_only=True)
class TransactionMetadata:
    """One transactional id's state (Kafka's ``TransactionMetadata``)."""

    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int
    state: TxnState = TxnState.Empty
    partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int
    #: The state being written to the log, if any (Kafka's ``pendingState``).
    pending_state: TxnState | None = None
    #: An epoch fence whose write failed: the next fence does not bump again.
    has_failed_epoch_fence: bool = False
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0

    @classmethod
    def from_transit(cls, transactional_id: str, transit: TxnTransit) -> TransactionMetadata:
        """The metadata a replayed record describes (``TransactionStateManager`` loading)."""
        return cls(transactional_id=transactional_id, producer_id=transit.producer_id,
                   last_producer_id=transit.last_producer_id, producer_epoch=transit.producer_epoch,
                   last_producer_epoch=transit.last_producer_epoch, txn_timeout_ms=transit.txn_timeout_ms,
                   state=transit.state, partitions=set(transit.partitions),
                   txn_start_timestamp=transit.txn_start_timestamp,
                   txn_last_update_timestamp=transit.txn_last_update_timestamp,
                   next_producer_id=transit.next_producer_id,
                   client_transaction_version=transit.client_transaction_version)

    @property
    def pending(self) -> bool:
        """Kafka's ``pendingTransitionInProgress``."""
        return self.pending_state is not None

    @property
    def epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    def snapshot(self) -> TxnTransit:
        """The metadata as it is now, as a transit (what a record of it would hold)."""
        return TxnTransit(producer_id=self.producer_id, last_producer_id=self.last_producer_id,
                          producer_epoch=self.producer_epoch, last_producer_epoch=self.last_producer_epoch,
                          txn_timeout_ms=self.txn_timeout_ms, state=self.state,
                          partitions=frozenset(self.partitions), txn_start_timestamp=self.txn_start_timestamp,
                          txn_last_update_timestamp=self.txn_last_update_timestamp,
                          next_producer_id=self.next_producer_id,
                          client_transaction_version=self.client_transaction_version)

    # -- the two steps of every change --------------------------------------------------------

    def _prepare(self, transit: TxnTransit) -> TxnTransit:
        """Kafka's ``prepareTransitionTo``: check the move and mark it pending.

        Raises:
            IllegalTransitionError: a move Kafka forbids, or another one already pending.
        """
        if self.pending_state is not None:
            raise IllegalTransitionError(f"transactional id {self.transactional_id!r}: a move to "
                                         f"{self.pending_state.name} is already pending")
        if transit.state not in TRANSITIONS[self.state]:
            raise IllegalTransitionError(f"transactional id {self.transactional_id!r}: "
                                         f"{self.state.name} -> {transit.state.name} is not a legal move")
        if transit.producer_epoch < 0 and transit.state is not TxnState.Dead:
            raise IllegalTransitionError(f"transactional id {self.transactional_id!r}: epoch {transit.producer_epoch}")
        self.pending_state = transit.state
        return transit

    def complete_transition(self, transit: TxnTransit) -> None:
        """Apply a transit once written (Kafka's ``completeTransitionTo``).

        Raises:
            IllegalTransitionError: it is not the pending move.
        """
        if self.pending_state is not transit.state:
            raise IllegalTransitionError(f"transactional id {self.transactional_id!r}: completing "
                                         f"{transit.state.name}, but {self.pending_state} is pending")
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.next_producer_id = transit.next_producer_id
        self.client_transaction_version = transit.client_transaction_version
        self.pending_state = None

    def abort_transition(self) -> None:
        """The write failed: nothing changes but the pending state (Kafka's ``pendingState = None``)."""
        self.pending_state = None

    def _transit(self, state: TxnState, **changes: object) -> TxnTransit:
        return replace(self.snapshot(), state=state, **changes)  # type: ignore[arg-type]

    # -- Kafka's prepare* methods ------------------------------------------------------------

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Kafka's ``prepareFenceProducerEpoch``: the ongoing transaction is to be aborted
        under the next epoch, which fences its producer. The state PrepareEpochFence stays
        in memory: the abort that follows writes PrepareAbort with the bumped epoch."""
        if self.producer_epoch >= _MAX_EPOCH:
            raise IllegalTransitionError(f"transactional id {self.transactional_id!r}: no epoch left to fence with")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(self._transit(TxnState.PrepareEpochFence, producer_epoch=bumped,
                                           last_producer_epoch=NO_PRODUCER_EPOCH))

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now: int) -> TxnTransit | int:
        """Kafka's ``prepareIncrementProducerEpoch``: the next epoch for InitProducerId, or
        PRODUCER_FENCED for a KIP-360 caller whose epoch is neither the current nor the last."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:  # a new producer, or one without KIP-360
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)  # the producer resumes after an error
        elif expected_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)  # a retry of a bump it did not hear of
        else:
            return ProducerFencedError.code
        return self._prepare(self._transit(TxnState.Empty, producer_epoch=epochs[0], last_producer_epoch=epochs[1],
                                           txn_timeout_ms=timeout_ms, partitions=frozenset(),
                                           txn_start_timestamp=-1, txn_last_update_timestamp=now))

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now: int,
                                     record_last_epoch: bool) -> TxnTransit:
        """Kafka's ``prepareProducerIdRotation``: the epochs of the producer id are used up,
        so the transactional id moves on to a new producer id at epoch 0."""
        return self._prepare(self._transit(
            TxnState.Empty, producer_id=new_producer_id, last_producer_id=self.producer_id, producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            txn_timeout_ms=timeout_ms, partitions=frozenset(), txn_start_timestamp=-1, txn_last_update_timestamp=now))

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now: int,
                               client_transaction_version: int = 0) -> TxnTransit:
        """Kafka's ``prepareAddPartitions``: Ongoing with more partitions; the transaction
        starts now if none was ongoing."""
        start = now if self.state in (TxnState.Empty, TxnState.CompleteAbort, TxnState.CompleteCommit) \
            else self.txn_start_timestamp
        return self._prepare(self._transit(TxnState.Ongoing, partitions=frozenset(self.partitions | added),
                                           txn_start_timestamp=start, txn_last_update_timestamp=now,
                                           client_transaction_version=client_transaction_version))

    def prepare_abort_or_commit(self, state: TxnState, now: int, client_transaction_version: int = 0,
                                next_producer_id: int = NO_PRODUCER_ID, no_partition_added: bool = False) -> TxnTransit:
        """Kafka's ``prepareAbortOrCommit``: PrepareCommit or PrepareAbort, same partitions.
        Transaction version 2 (KIP-890 part 2, ``TransactionVersion.supportsEpochBump``)
        bumps the epoch here, so that the markers carry the new one, and names the producer
        id to move to if the epoch is exhausted; an abort of no transaction starts now."""
        changes: dict[str, object] = {"client_transaction_version": client_transaction_version}
        if client_transaction_version >= 2:
            changes.update(producer_epoch=self.producer_epoch + 1, last_producer_epoch=self.producer_epoch,
                           next_producer_id=next_producer_id)
        if no_partition_added:
            changes["txn_start_timestamp"] = now
        return self._prepare(self._transit(state, txn_last_update_timestamp=now, **changes))

    def prepare_complete(self, now: int) -> TxnTransit:
        """Kafka's ``prepareComplete``: every marker is written; the transaction is over. A
        TV2 end with a next producer id moves to it at epoch 0 (the epoch overflowed)."""
        state = TxnState.CompleteCommit if self.state is TxnState.PrepareCommit else TxnState.CompleteAbort
        self.has_failed_epoch_fence = False
        changes: dict[str, object] = {"next_producer_id": NO_PRODUCER_ID}
        if self.client_transaction_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            changes.update(producer_id=self.next_producer_id, last_producer_id=self.producer_id, producer_epoch=0)
        return self._prepare(self._transit(state, partitions=frozenset(), txn_last_update_timestamp=now, **changes))

    def prepare_dead(self) -> TxnTransit:
        """Kafka's ``prepareDead``: the transactional id expired (a tombstone is written)."""
        return self._prepare(self._transit(TxnState.Dead, partitions=frozenset()))


# -- the coordinator's decisions (Kafka's TransactionCoordinator) -----------------------------


def prepare_init_producer_id(md: TransactionMetadata, timeout_ms: int, expected: tuple[int, int] | None,
                             new_producer_id: int | None, now: int) -> TxnTransit | int:
    """Kafka's ``prepareInitProducerIdTransit`` for an existing (or just created) id.

    Args:
        md: the metadata (a new id's has producer epoch -1, state Empty).
        timeout_ms: the producer's ``transaction.timeout.ms`` (already checked).
        expected: (producer id, epoch) a KIP-360 producer (v3+) gives, or None.
        new_producer_id: an unused producer id, needed when the epoch is exhausted (see
            :func:`needs_new_producer_id`); None otherwise.
        now: wall milliseconds.

    Returns:
        A transit to write (Empty with the next epoch or a new producer id;
        PrepareEpochFence: abort the ongoing transaction first, then answer
        CONCURRENT_TRANSACTIONS), or an error code: CONCURRENT_TRANSACTIONS (a transition or
        an end is in progress), PRODUCER_FENCED (the given producer id or epoch is stale).
    """
    if md.pending:
        return ConcurrentTransactionsError.code
    if expected is not None and not (
            md.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == md.producer_id
            or (expected[0] == md.last_producer_id and epoch_exhausted(expected[1]))):
        return ProducerFencedError.code
    if md.state in (TxnState.PrepareAbort, TxnState.PrepareCommit):
        return ConcurrentTransactionsError.code
    if md.state in (TxnState.CompleteAbort, TxnState.CompleteCommit, TxnState.Empty):
        if md.epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
            if new_producer_id is None:
                raise ValueError("the epoch is exhausted: a new producer id is needed")
            return md.prepare_producer_id_rotation(new_producer_id, timeout_ms, now, expected is not None)
        return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
    if md.state is TxnState.Ongoing:
        # Abort the ongoing transaction under a bumped epoch (never returned to anyone); the
        # producer retries and gets the epoch bumped once more (or a new id if exhausted).
        return md.prepare_fence_producer_epoch()
    raise IllegalTransitionError(f"transactional id {md.transactional_id!r} found in state {md.state.name}")


def needs_new_producer_id(md: TransactionMetadata | None, expected: tuple[int, int] | None) -> bool:
    """Whether :func:`prepare_init_producer_id` may need a new producer id (a new id, or
    an exhausted epoch), so that the caller gets one first."""
    return md is None or (md.epoch_exhausted and (expected is None or expected[1] == md.producer_epoch))


def prepare_add_partitions(md: TransactionMetadata | None, producer_id: int, producer_epoch: int,
                           partitions: frozenset[TopicPartition], now: int,
                           client_transaction_version: int = 0) -> TxnTransit | int:
    """Kafka's ``handleAddPartitionsToTransaction``: a transit to Ongoing, or an error code
    (0: the partitions are already in the ongoing transaction, nothing to write).

    A pending transition is checked first (Kafka's KAFKA-18660): after a TV2 end that
    moved to a new producer id, the next transaction's first add names that id while it
    is only in the pending complete state."""
    if md is not None and md.pending:
        return ConcurrentTransactionsError.code
    if md is None or md.producer_id != producer_id:
        return InvalidProducerIdMappingError.code
    if md.producer_epoch != producer_epoch:
        return ProducerFencedError.code
    if md.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
        return ConcurrentTransactionsError.code
    if md.state is TxnState.Ongoing and partitions <= md.partitions:
        return 0
    return md.prepare_add_partitions(partitions, now, client_transaction_version)


def verify_partitions(md: TransactionMetadata | None, producer_id: int, producer_epoch: int,
                      partitions: frozenset[TopicPartition]) -> dict[TopicPartition, int] | int:
    """KIP-890 part 1, Kafka's ``handleVerifyPartitionsInTransaction`` (AddPartitionsToTxn
    v4+ with ``verify_only``): each partition 0 if it is in the ongoing transaction, else
    TRANSACTION_ABORTABLE; or one error code for all. The pending state is not looked at
    (Kafka: the append is checked again, by the verification guard)."""
    if md is None or md.producer_id != producer_id:
        return InvalidProducerIdMappingError.code
    if md.producer_epoch != producer_epoch:
        return ProducerFencedError.code
    if md.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
        return ConcurrentTransactionsError.code
    return {tp: 0 if tp in md.partitions else TransactionAbortableError.code for tp in partitions}


def prepare_end_txn(md: TransactionMetadata | None, producer_id: int, producer_epoch: int, commit: bool,
                    now: int, *, from_client: bool = True, tv2: bool = False,
                    next_producer_id: int = NO_PRODUCER_ID) -> TxnTransit | int:
    """Kafka's ``endTransaction`` before the write: a transit to PrepareCommit or
    PrepareAbort, or an error code (0: that end is already complete, a retry).

    ``from_client`` False is the coordinator's own abort (a fence: InitProducerId of a new
    producer, or a timeout), which takes the fence's bumped epoch. ``tv2``: the client's
    EndTxn is v5+ (KIP-890 part 2), see :func:`_prepare_end_txn_v2`; ``next_producer_id``
    is needed when the epoch is exhausted (:func:`end_needs_new_producer_id`)."""
    if tv2:
        return _prepare_end_txn_v2(md, producer_id, producer_epoch, commit, now, from_client, next_producer_id)
    if md is None or md.producer_id != producer_id:
        return InvalidProducerIdMappingError.code
    if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
        return ProducerFencedError.code
    if md.pending and md.pending_state is not TxnState.PrepareEpochFence:
        return ConcurrentTransactionsError.code
    state = md.state
    if state is TxnState.Ongoing:
        target = TxnState.PrepareCommit if commit else TxnState.PrepareAbort
        if target is TxnState.PrepareAbort and md.pending_state is TxnState.PrepareEpochFence:
            # The fence's epoch goes into the PrepareAbort written now (Kafka clears the
            # pending fence and takes its epoch).
            md.pending_state = None
            md.producer_epoch = producer_epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        return md.prepare_abort_or_commit(target, now)
    if state is TxnState.CompleteCommit:
        return 0 if commit else InvalidTxnStateError.code
    if state is TxnState.CompleteAbort:
        return InvalidTxnStateError.code if commit else 0
    if state is TxnState.PrepareCommit:
        return ConcurrentTransactionsError.code if commit else InvalidTxnStateError.code
    if state is TxnState.PrepareAbort:
        return InvalidTxnStateError.code if commit else ConcurrentTransactionsError.code
    if state is TxnState.Empty:
        return InvalidTxnStateError.code
    raise IllegalTransitionError(f"transactional id {md.transactional_id!r} found in state {state.name}")


def end_needs_new_producer_id(md: TransactionMetadata | None, tv2: bool) -> bool:
    """Whether a TV2 end of ``md`` moves to a new producer id (Kafka's
    ``generateTxnTransitMetadataForTxnCompletion``: the epoch is exhausted and it is no fence).
    Not while a transition is pending: that end is answered CONCURRENT_TRANSACTIONS
    (an id taken then would be lost)."""
    return tv2 and md is not None and md.epoch_exhausted and md.pending_state is None


def _prepare_end_txn_v2(md: TransactionMetadata | None, producer_id: int, producer_epoch: int, commit: bool,
                        now: int, from_client: bool, next_producer_id: int) -> TxnTransit | int:
    """Kafka's ``TransactionCoordinator.endTransaction`` for transaction version 2: the
    epoch is bumped at every end, so a retry carries the epoch before the bump.

    Kafka's table for the complete states (PF PRODUCER_FENCED, ITS INVALID_TXN_STATE,
    NONE: answered without a write, EB: an end with an epoch bump)::

                        Abort            Commit
                        Retry  Current   Retry  Current
        Empty           PF     EB        PF     ITS
        CompleteAbort   NONE   EB        PF     ITS
        CompleteCommit  ITS    EB        NONE   ITS

    Retry: the request's epoch is the current one - 1 (or, after an overflow, the last
    epoch of the previous producer id, ``Short.MaxValue - 1``, with the new id at 0). A
    commit's "retry" in CompleteAbort is a commit that the coordinator's own abort (a
    timeout) overtook, hence PF (KAFKA-20785).
    Before any of it, a pending transition (the last end's markers being written) is
    CONCURRENT_TRANSACTIONS, whatever the epoch: the next transaction's end already has
    the bumped epoch the last end answered.
    """
    if md is None:
        return InvalidProducerIdMappingError.code
    fencing = md.pending_state is TxnState.PrepareEpochFence
    retry_on_overflow = (not fencing and md.last_producer_id == producer_id and producer_epoch == _MAX_EPOCH - 1
                         and md.producer_epoch == 0)
    retry_on_bump = not fencing and md.producer_epoch == producer_epoch + 1
    if fencing:
        valid_epoch = (not from_client or producer_epoch == md.producer_epoch) and producer_epoch >= md.producer_epoch
    elif md.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
        valid_epoch = retry_on_bump
    elif md.state in (TxnState.CompleteCommit, TxnState.CompleteAbort):
        valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == md.producer_epoch
    else:
        valid_epoch = producer_epoch == md.producer_epoch
    retry = retry_on_bump or retry_on_overflow
    if md.pending and not fencing:
        # Checked first (Kafka's KAFKA-18464, KAFKA-18660): the answer of the last end
        # named the bumped epoch (or a new producer id) while its markers are still being
        # written (CompleteCommit/CompleteAbort pending); the next end carries it, and the
        # epoch check of PrepareCommit/PrepareAbort, which only lets a retry through, would
        # fence the producer. It retries and meets the complete state instead.
        return ConcurrentTransactionsError.code
    if md.producer_id != producer_id and not retry_on_overflow:
        return InvalidProducerIdMappingError.code
    if not valid_epoch:
        return ProducerFencedError.code

    def end(state: TxnState, no_partition_added: bool) -> TxnTransit:
        if state is TxnState.PrepareAbort and fencing:
            # As in TV1: the fence's epoch is the one bumped (no second bump).
            md.pending_state = None
            md.producer_epoch = producer_epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
            return md.prepare_abort_or_commit(state, now, 0, no_partition_added=no_partition_added)
        if md.epoch_exhausted and next_producer_id == NO_PRODUCER_ID:
            raise ValueError("the epoch is exhausted: a new producer id is needed")
        return md.prepare_abort_or_commit(state, now, 2, next_producer_id if md.epoch_exhausted else NO_PRODUCER_ID,
                                          no_partition_added)

    state = md.state
    if state is TxnState.Ongoing:
        return end(TxnState.PrepareCommit if commit else TxnState.PrepareAbort, False)
    if state is TxnState.CompleteCommit:
        if commit:
            return 0 if retry else InvalidTxnStateError.code
        return InvalidTxnStateError.code if retry else end(TxnState.PrepareAbort, True)
    if state is TxnState.CompleteAbort:
        if commit:
            # Only the coordinator's own abort (a timeout, a new instance) meets a commit
            # at the epoch before its bump: the producer is fenced (KAFKA-20785).
            return ProducerFencedError.code if retry else InvalidTxnStateError.code
        return 0 if retry else end(TxnState.PrepareAbort, True)
    if state is TxnState.PrepareCommit:
        return ConcurrentTransactionsError.code if commit else InvalidTxnStateError.code
    if state is TxnState.PrepareAbort:
        return InvalidTxnStateError.code if commit else ConcurrentTransactionsError.code
    if state is TxnState.Empty:
        return InvalidTxnStateError.code if commit else end(TxnState.PrepareAbort, True)
    raise IllegalTransitionError(f"transactional id {md.transactional_id!r} found in state {state.name}")


def prepare_complete(md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                     now: int) -> TxnTransit | int:
    """Kafka's ``sendTxnMarkersCallback`` check after PrepareCommit/PrepareAbort is written:
    a transit to the complete state (to write once the markers are), or an error code."""
    if md.producer_id != producer_id:
        return InvalidProducerIdMappingError.code
    if md.producer_epoch not in (producer_epoch, producer_epoch + 1):
        # TV2 bumped the epoch in PrepareCommit/PrepareAbort (Kafka's endTransaction, TV2 branch);
        # TV1's is the request's (a bump there would have been a fence, not written then).
        return ProducerFencedError.code
    if md.pending:
        return ConcurrentTransactionsError.code
    if md.state is (TxnState.PrepareCommit if commit else TxnState.PrepareAbort):
        return md.prepare_complete(now)
    return InvalidTxnStateError.code
