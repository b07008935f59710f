"""The idempotent and transactional producer's state, sans-I/O: its producer id and epoch,
each partition's next sequence, the transaction's partitions, and what each answer of a
broker means for them.

Theory of operation (Java's ``TransactionManager``; KIP-98, KIP-360, KIP-447, KIP-588,
KIP-691). The :class:`~kproto.producer.sender.Sender` and, for transactions,
:class:`~kproto.producer.transactions.Transactions` perform the I/O and ask this object
what to do.

Idempotence (no ``transactional.id``):

- :attr:`Idempotence.needs_init`: the producer has no usable producer id and epoch (none
  yet, or its sequences must start over). Once nothing is in flight under the old ones,
  the sender calls :meth:`Idempotence.begin_init`: it either moves to the next epoch of the
  producer id itself (KIP-360: a broker takes a newer epoch of a known producer id
  starting at sequence 0; no request) or returns the InitProducerId request to send, whose
  answer goes to :meth:`Idempotence.on_init_producer_id`. A new producer id is asked for
  when there is none, when the epoch is exhausted (int16), or when the epoch this object
  bumped itself was not acknowledged by any batch before the next reset: a broker that
  does not take epochs from clients then ends the cycle instead of every batch repeating it.
- :meth:`Idempotence.next_sequence` stamps a batch when it is first sent (and again when
  sent after a change of producer id or epoch): ``(producer id, epoch, base sequence)``,
  sequences wrapping at ``2**31`` as the broker's do.
- :meth:`Idempotence.on_error` says what a Produce error means (an :class:`ErrorAction`):

  ====================================================  ==================================
  the broker answered                                   action
  ====================================================  ==================================
  UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH           reset (new epoch), ``RETRY``
  OUT_OF_ORDER_SEQUENCE_NUMBER, an earlier batch of      ``RETRY`` (a retry in waiting: it
  the same epoch waits for its retry                    goes again after that one)
  OUT_OF_ORDER_SEQUENCE_NUMBER, nothing earlier waits   reset (new epoch), ``RETRY``
  PRODUCER_FENCED, CLUSTER_AUTHORIZATION_FAILED,        ``FATAL``
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  UNSUPPORTED_VERSION
  anything else                                         ``AS_USUAL`` (retriable errors
                                                        retry, others fail the batch)
  any error in FATAL_ERROR                              ``FATAL``
  ====================================================  ==================================

  The fatal ones are Java's (``TransactionManager.maybeTransitionToErrorState``): no
  retry or new epoch can succeed, so every record fails with the error. A batch that
  fails for good after it was sent leaves a gap in its partition's sequences that later
  batches would wait behind forever: :meth:`Idempotence.on_batch_failed` resets too
  (Java's idempotent producer bumps the epoch there: ``handleFailedBatch``).
- :meth:`Idempotence.on_acknowledged`: a batch was written (or was a duplicate of one
  written): the epoch in use is confirmed.

Transactions (``transactional.id`` set). The application moves the state with
:meth:`~Idempotence.init_transactions`, :meth:`~Idempotence.begin_transaction`,
:meth:`~Idempotence.begin_commit` and :meth:`~Idempotence.begin_abort`; each request to a
coordinator is built here and its answer applied here (``*_request`` / ``on_*``), which
returns a :class:`TxnStep` or raises. The sender asks :meth:`~Idempotence.send_allowed`
before sending a batch: only partitions AddPartitionsToTxn added to the transaction take
batches (:meth:`~Idempotence.add_partition` collects new ones; one request adds them all,
as Java batches them). With transaction version 2 (KIP-890 part 2,
:attr:`~Idempotence.transaction_v2`: the coordinator finalizes ``transaction.version`` 2)
a partition is in the transaction as soon as it has a batch: its leader adds it when the
Produce (v12) arrives, and EndTxn (v5) answers the producer id and epoch of the next
transaction, bumped by the coordinator at every commit and abort, which restarts every
sequence (and replaces the InitProducerId bump after a failed batch). A transactional producer never resets its own sequences: a Produce
error that fails a batch makes the transaction abortable instead, and the abort then bumps
the epoch (InitProducerId with the producer id and epoch, v3+, KIP-360), which restarts
every sequence.

What an answer means (KIP-691's three kinds; Java's ``TxnRequestHandler`` subclasses):
a retriable error is retried inside (:attr:`TxnStep.RETRY`, or
:attr:`TxnStep.FIND_COORDINATOR` when the coordinator moved); an abortable one moves to
ABORTABLE_ERROR and is raised (the application aborts, then may start again); a fatal one
moves to FATAL_ERROR and is raised (the application closes the producer). Each raised
error carries ``txn_requires_abort`` or ``fatal`` (:class:`~kproto.errors.KafkaError`).
:data:`TXN_ERRORS` holds the table, one row per request; the error classification of the
producer guide is generated from it.

States are Java's ``TransactionManager.State``; :data:`TRANSITIONS` lists the legal moves
and an illegal one raises :class:`~kproto.errors.IllegalTransitionError`. An idempotent
producer uses UNINITIALIZED (no usable producer id: not asked yet, or a reset made its
sequences unusable), INITIALIZING (a producer id or epoch is being got), READY and
FATAL_ERROR; a transactional one all eight.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping

from kproto.errors import (
    ClusterAuthorizationFailedError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    IllegalGenerationError,
    IllegalTransitionError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    KafkaCodeError,
    KafkaError,
    NotCoordinatorError,
    OperationNotAttemptedError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    TransactionalIdAuthorizationFailedError,
    TransactionStateError,
    UnknownMemberIdError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    UnsupportedForMessageFormatError,
    UnsupportedVersionError,
    for_code,
)
from kproto.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kproto.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition, by_topic

__all__ = ["MAX_EPOCH", "TRANSITIONS", "TXN_ERRORS", "ErrorAction", "Idempotence", "ProducerState", "TxnStep"]

log = logging.getLogger("kproto.producer")

#: Epochs are int16: past this one a producer needs a new producer id.
MAX_EPOCH = 32767
_SEQUENCE_LIMIT = 1 << 31  # sequences are int32 and wrap to 0 (Java's DefaultRecordBatch.incrementSequence)

# Java's TransactionManager.maybeTransitionToErrorState: nothing a retry or a new epoch repairs.
_FATAL = (ProducerFencedError, ClusterAuthorizationFailedError, TransactionalIdAuthorizationFailedError,
          UnsupportedVersionError)
# The broker lost (UNKNOWN_PRODUCER_ID) or refuses (INVALID_PRODUCER_EPOCH) this producer's
# state: only new sequences under a newer epoch repair it (KIP-360).
_NEW_SEQUENCES = (UnknownProducerIdError, InvalidProducerEpochError)


class ProducerState(enum.Enum):
    """Java's ``TransactionManager.State``."""

    UNINITIALIZED = "UNINITIALIZED"  # no usable producer id and epoch: none yet, or sequences to restart
    INITIALIZING = "INITIALIZING"  # InitProducerId asked (again after a failure) or an epoch being bumped
    READY = "READY"  # idempotent: batches are stamped; transactional: between transactions
    IN_TRANSACTION = "IN_TRANSACTION"  # begin_transaction() was called: sends are taken
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"  # flushing, then EndTxn(commit)
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"  # unsent batches dropped, then EndTxn(abort)
    ABORTABLE_ERROR = "ABORTABLE_ERROR"  # the transaction failed: only an abort is allowed
    FATAL_ERROR = "FATAL_ERROR"  # the producer cannot go on: every record fails, close it


_S = ProducerState
# Where a transactional producer's batches go out: in a transaction, and while its commit flushes.
_STAMPING_TXN = (_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION)
# A transaction is open: begun, and not ended yet.
_TXN_OPEN = (*_STAMPING_TXN, _S.ABORTABLE_ERROR, _S.ABORTING_TRANSACTION)

#: The legal moves (Java's ``State.isTransitionValid``). FATAL_ERROR is reachable from every
#: state and leads nowhere. Java also allows ABORTABLE_ERROR -> ABORTABLE_ERROR to replace
#: the error; here the first error of a transaction is kept, so that move is never made.
TRANSITIONS: dict[ProducerState, frozenset[ProducerState]] = {
    _S.UNINITIALIZED: frozenset({_S.INITIALIZING, _S.FATAL_ERROR}),
    # A failed InitProducerId stays INITIALIZING and is asked again.
    _S.INITIALIZING: frozenset({_S.READY, _S.FATAL_ERROR}),
    # READY -> UNINITIALIZED: an idempotent producer's reset (Java's resetIdempotentProducerId).
    _S.READY: frozenset({_S.UNINITIALIZED, _S.IN_TRANSACTION, _S.FATAL_ERROR}),
    _S.IN_TRANSACTION: frozenset({_S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION, _S.ABORTABLE_ERROR,
                                  _S.FATAL_ERROR}),
    # A batch that fails while the commit flushes makes the transaction abortable.
    _S.COMMITTING_TRANSACTION: frozenset({_S.READY, _S.ABORTABLE_ERROR, _S.FATAL_ERROR}),
    # -> INITIALIZING: the epoch is bumped after the abort (KIP-360), which restarts sequences.
    _S.ABORTING_TRANSACTION: frozenset({_S.READY, _S.INITIALIZING, _S.FATAL_ERROR}),
    _S.ABORTABLE_ERROR: frozenset({_S.ABORTING_TRANSACTION, _S.FATAL_ERROR}),
    _S.FATAL_ERROR: frozenset(),
}


class ErrorAction(enum.Enum):
    """What the sender does with a batch the broker answered with an error."""

    RETRY = "RETRY"  # send it again in sequence order (restamped if the epoch moved), even if
    # the error is not retriable in general; ``retries`` and ``delivery.timeout.ms`` still bound it
    AS_USUAL = "AS_USUAL"  # not idempotence's matter: a retriable error retries, another fails the batch
    FATAL = "FATAL"  # the producer is in FATAL_ERROR: every record fails with the error


class TxnStep(enum.Enum):
    """What comes after a transactional request's answer (the errors that end a transaction
    are raised instead)."""

    DONE = "DONE"  # the request did its work
    RETRY = "RETRY"  # retriable: send it again after a backoff
    FIND_COORDINATOR = "FIND_COORDINATOR"  # the coordinator moved or is unknown: find it, then retry
    # Errors only, in TXN_ERRORS (never returned):
    ABORTABLE = "ABORTABLE"  # the transaction must be aborted (KIP-691 abortable)
    BUMP = "BUMP"  # abortable when the epoch can be bumped after the abort (KIP-360), else fatal
    FATAL = "FATAL"  # the producer must be closed (KIP-691 fatal)


_FIND, _RETRY, _ABORTABLE, _BUMP, _FATAL_STEP = (TxnStep.FIND_COORDINATOR, TxnStep.RETRY, TxnStep.ABORTABLE,
                                                  TxnStep.BUMP, TxnStep.FATAL)
# What every request to the transaction coordinator shares (Java's handlers). INVALID_PRODUCER_EPOCH
# from a coordinator is an older broker's PRODUCER_FENCED (KIP-588): fatal, raised as fenced.
_TO_TXN_COORDINATOR: dict[type[KafkaError], TxnStep] = {
    NotCoordinatorError: _FIND, CoordinatorNotAvailableError: _FIND,
    CoordinatorLoadInProgressError: _RETRY, ConcurrentTransactionsError: _RETRY,
    ProducerFencedError: _FATAL_STEP, InvalidProducerEpochError: _FATAL_STEP,
    TransactionalIdAuthorizationFailedError: _FATAL_STEP, UnsupportedVersionError: _FATAL_STEP,
    TransactionAbortableError: _ABORTABLE,  # KIP-890: the coordinator says the transaction must end
}

#: ``{request: ({error class: step}, step of any other error)}``: what each error in the answer
#: to each transactional request means (Java's ``TransactionManager`` handlers, KIP-691).
#: ``"Produce"`` is a batch that failed for good while in a transaction.
TXN_ERRORS: dict[str, tuple[dict[type[KafkaError], TxnStep], TxnStep]] = {
    "FindCoordinator": ({CoordinatorNotAvailableError: _RETRY, CoordinatorLoadInProgressError: _RETRY,
                         TransactionalIdAuthorizationFailedError: _FATAL_STEP,
                         GroupAuthorizationFailedError: _ABORTABLE}, _FATAL_STEP),
    "InitProducerId": ({**_TO_TXN_COORDINATOR, ClusterAuthorizationFailedError: _FATAL_STEP}, _FATAL_STEP),
    "AddPartitionsToTxn": ({**_TO_TXN_COORDINATOR, UnknownTopicOrPartitionError: _RETRY,
                            InvalidTxnStateError: _FATAL_STEP, TopicAuthorizationFailedError: _ABORTABLE,
                            OperationNotAttemptedError: _ABORTABLE, UnknownProducerIdError: _BUMP,
                            InvalidProducerIdMappingError: _BUMP}, _ABORTABLE),
    "AddOffsetsToTxn": ({**_TO_TXN_COORDINATOR, UnknownProducerIdError: _BUMP, InvalidProducerIdMappingError: _BUMP,
                         GroupAuthorizationFailedError: _ABORTABLE}, _FATAL_STEP),
    # Sent to the group coordinator: its own coordinator errors, and the group's fencing (KIP-447).
    "TxnOffsetCommit": ({NotCoordinatorError: _FIND, CoordinatorNotAvailableError: _FIND,
                         RequestTimedOutError: _FIND, UnknownTopicOrPartitionError: _RETRY,
                         CoordinatorLoadInProgressError: _RETRY, ConcurrentTransactionsError: _RETRY,
                         GroupAuthorizationFailedError: _ABORTABLE, FencedInstanceIdError: _ABORTABLE,
                         UnknownMemberIdError: _ABORTABLE, IllegalGenerationError: _ABORTABLE,
                         TransactionAbortableError: _ABORTABLE,
                         TransactionalIdAuthorizationFailedError: _FATAL_STEP, ProducerFencedError: _FATAL_STEP,
                         InvalidProducerEpochError: _FATAL_STEP, UnsupportedForMessageFormatError: _FATAL_STEP,
                         UnsupportedVersionError: _FATAL_STEP},
                        _FATAL_STEP),
    "EndTxn": ({**_TO_TXN_COORDINATOR, InvalidTxnStateError: _FATAL_STEP, UnknownProducerIdError: _BUMP,
                InvalidProducerIdMappingError: _BUMP}, _FATAL_STEP),
    "Produce": ({ProducerFencedError: _FATAL_STEP, ClusterAuthorizationFailedError: _FATAL_STEP,
                 TransactionalIdAuthorizationFailedError: _FATAL_STEP, UnsupportedVersionError: _FATAL_STEP},
                _BUMP),
}


def txn_step(request: str, error: BaseException) -> TxnStep:
    """What ``error`` in the answer to ``request`` means (:data:`TXN_ERRORS`); a connection
    loss or timeout (no answer) is retried, after finding the coordinator again."""
    rules, otherwise = TXN_ERRORS[request]
    for cls in type(error).__mro__:
        if cls in rules:
            return rules[cls]
    if request != "Produce" and isinstance(error, KafkaError) and error.retriable \
            and not isinstance(error, KafkaCodeError):
        return _FIND  # KafkaConnectionError, KafkaTimeoutError: the request may not have arrived
    return otherwise


class Idempotence:
    """One producer's producer id, epoch, sequences and transaction; see the module docstring.

    Args:
        transactional_id: ``transactional.id`` (None: idempotent only).
        transaction_timeout_ms: ``transaction.timeout.ms``, sent with InitProducerId.
    """

    def __init__(self, transactional_id: str | None = None, transaction_timeout_ms: int = 60000) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = ProducerState.UNINITIALIZED
        self.producer_id = -1
        self.epoch = -1
        self.reset_cause: BaseException | None = None  # why the sequences restart (None: first init)
        self.fatal_error: KafkaError | None = None  # set in FATAL_ERROR
        self.last_error: KafkaError | None = None  # set in ABORTABLE_ERROR and FATAL_ERROR
        self._sequences: dict[tuple[str, int], int] = {}  # next sequence to stamp, per partition
        self._bumped = False  # the epoch was bumped here and no batch of it was acknowledged yet
        # Transactions (Java's TransactionManager fields of the same meaning):
        self.can_bump_epoch = True  # the coordinator takes InitProducerId v3+ (KIP-360); the driver says
        # KIP-890 part 2: the coordinator finalizes transaction.version 2 (Java's
        # isTransactionV2Enabled); the driver says, at InitProducerId.
        self.transaction_v2 = False
        self.epoch_bump_required = False  # the abort must end with a new epoch (a batch failed, or KIP-360 errors)
        self.partitions: set[tuple[str, int]] = set()  # added to the transaction
        self.pending_partitions: set[tuple[str, int]] = set()  # in an AddPartitionsToTxn in flight
        self.new_partitions: set[tuple[str, int]] = set()  # to add with the next AddPartitionsToTxn
        self.started = False  # a partition or offsets were added: the transaction needs an EndTxn
        self._pending_offsets: dict[tuple[str, int], OffsetAndMetadata] = {}  # TxnOffsetCommit's, unanswered
        self.on_move: Callable[[ProducerState], None] | None = None  # called after each move (the producer's gate)

    @property
    def transactional(self) -> bool:
        return self.transactional_id is not None

    def _move(self, state: ProducerState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransitionError(f"{self.state.name} -> {state.name}")
        self.state = state
        if self.on_move is not None:
            self.on_move(state)

    @property
    def stamp(self) -> tuple[int, int]:
        """``(producer id, epoch)`` of the batches stamped now."""
        return self.producer_id, self.epoch

    @property
    def needs_init(self) -> bool:
        """No usable producer id and epoch: the sender must call :meth:`begin_init` (once
        nothing is in flight under the old ones) before stamping a batch. Never for a
        transactional producer, whose application calls :meth:`init_transactions`."""
        return not self.transactional and self.state in (ProducerState.UNINITIALIZED, ProducerState.INITIALIZING)

    # -- getting a producer id and epoch ------------------------------------------------------

    def begin_init(self) -> InitProducerIdRequest | None:
        """Get a usable producer id and epoch: the InitProducerId request to send (its answer
        goes to :meth:`on_init_producer_id`), or None when the next epoch of ours was taken
        here (READY). Call it only when nothing is in flight: the broker must not see
        batches of the old epoch after the new one."""
        if self.state is ProducerState.UNINITIALIZED:
            self._move(ProducerState.INITIALIZING)
        elif self.state is not ProducerState.INITIALIZING:  # INITIALIZING: asking again
            raise IllegalTransitionError(f"begin_init in {self.state.name}")
        if self.producer_id >= 0 and self.epoch < MAX_EPOCH and not self._bumped:
            # KIP-360: an idempotent producer bumps its own epoch; the broker takes it at sequence 0.
            log.info("producer: sequences reset (%s); producer id %d epoch %d -> %d", self.reset_cause,
                     self.producer_id, self.epoch, self.epoch + 1)
            self._ready(self.producer_id, self.epoch + 1, bumped=True)
            return None
        if self.producer_id >= 0:
            log.info("producer: sequences reset (%s); asking for a new producer id instead of epoch %d of %d",
                     self.reset_cause, self.epoch + 1, self.producer_id)
        return InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)

    def on_init_producer_id(self, response: InitProducerIdResponse) -> TxnStep:
        """Apply InitProducerId's answer.

        Returns:
            TxnStep: DONE (READY with the new producer id and epoch), or for a
            transactional producer RETRY / FIND_COORDINATOR (still INITIALIZING).

        Raises:
            KafkaCodeError: the broker's error. A fatal one moves to FATAL_ERROR (a
                transactional producer's INVALID_PRODUCER_EPOCH is raised as
                :class:`~kproto.errors.ProducerFencedError`); after any other error an
                idempotent producer stays INITIALIZING and :meth:`begin_init` asks again.
        """
        if self.state is not ProducerState.INITIALIZING:
            raise IllegalTransitionError(f"an InitProducerId answer in {self.state.name}")
        if response.error_code:
            error = for_code(response.error_code)("InitProducerId")
            if self.transactional:
                return self.on_txn_error("InitProducerId", error)
            if isinstance(error, _FATAL):
                self._fatal(error)
            raise error
        self._ready(response.producer_id, response.producer_epoch, bumped=False)
        return TxnStep.DONE

    def _ready(self, producer_id: int, epoch: int, *, bumped: bool) -> None:
        self.producer_id, self.epoch, self._bumped = producer_id, epoch, bumped
        self._sequences.clear()
        self.reset_cause = None
        self._move(ProducerState.READY)

    # -- stamping batches -----------------------------------------------------------------------

    def next_sequence(self, topic: str, partition: int, record_count: int) -> tuple[int, int, int]:
        """``(producer id, epoch, base sequence)`` for the next batch of ``record_count``
        records to this partition; the partition's sequence moves past them."""
        stamping = _STAMPING_TXN if self.transactional else (ProducerState.READY,)
        if self.state not in stamping:
            raise IllegalTransitionError(f"a batch stamped in {self.state.name}")
        tp = (topic, partition)
        sequence = self._sequences.get(tp, 0)
        self._sequences[tp] = (sequence + record_count) % _SEQUENCE_LIMIT
        return self.producer_id, self.epoch, sequence

    # -- what the broker's answers mean -----------------------------------------------------------

    def on_acknowledged(self) -> None:
        """A batch was written, or was a duplicate of one written (DUPLICATE_SEQUENCE_NUMBER):
        the broker takes this epoch."""
        self._bumped = False

    def on_error(self, error: KafkaError, *, earlier_waiting: bool) -> ErrorAction:
        """What the Produce error ``error`` for a sent batch means; see the module docstring.

        A transactional producer resets nothing: UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH
        and an OUT_OF_ORDER_SEQUENCE_NUMBER with nothing earlier waiting fail the batch
        (``AS_USUAL``), which makes the transaction abortable (:meth:`on_batch_failed`).

        Args:
            earlier_waiting: a batch of the same epoch with a lower sequence waits for its
                retry (then OUT_OF_ORDER_SEQUENCE_NUMBER is this batch arriving before it).
        """
        if isinstance(error, _FATAL) or self.state is ProducerState.FATAL_ERROR:
            self._fatal(error)  # in FATAL_ERROR already, the first error is kept
            return ErrorAction.FATAL
        if isinstance(error, OutOfOrderSequenceNumberError) and earlier_waiting:
            return ErrorAction.RETRY
        if self.transactional:
            return ErrorAction.AS_USUAL
        if isinstance(error, _NEW_SEQUENCES):
            self.reset(error)
            return ErrorAction.RETRY
        if isinstance(error, OutOfOrderSequenceNumberError):  # the broker lost sequences of ours
            self.reset(error)  # only a new epoch repairs it
            return ErrorAction.RETRY
        return ErrorAction.AS_USUAL

    def on_batch_failed(self, stamped: bool, error: BaseException) -> None:
        """A batch failed for good (its records are settled with an error); ``stamped``: it
        was given a sequence. Its sequence will never be written, so later batches of its
        partition would wait behind the gap forever: an idempotent producer's sequences
        restart; a transactional producer's transaction becomes abortable (Java's
        ``maybeTransitionToErrorState``), its abort bumping the epoch if the batch was sent."""
        if not self.transactional:
            if stamped:
                self.reset(error)
            return
        if self.state in (ProducerState.ABORTING_TRANSACTION, ProducerState.FATAL_ERROR):
            return  # dropped by the abort, or every record fails already
        cause = error if isinstance(error, KafkaError) else KafkaError(str(error))
        if isinstance(error, _FATAL):
            self._fatal(cause)
            return
        if stamped:
            self._need_bump(cause)
        self._abortable(cause)

    def reset(self, cause: BaseException) -> None:
        """Restart every partition's sequences under a new epoch (or producer id) at the
        next :meth:`begin_init`; nothing happens in FATAL_ERROR."""
        if self.state is ProducerState.READY:
            self._move(ProducerState.UNINITIALIZED)
        if self.needs_init:
            self.reset_cause = cause

    def _fatal(self, error: KafkaError) -> None:
        if self.state is not ProducerState.FATAL_ERROR:
            self._move(ProducerState.FATAL_ERROR)
            self.fatal_error = self.last_error = error
            error.fatal = True
            log.info("producer: %s is fatal: the producer cannot go on (close it)", error)

    # -- transactions: the application's calls -------------------------------------------------

    def _ensure_transactional(self, call: str) -> None:
        if not self.transactional:
            raise TransactionStateError(f"{call}() needs transactional.id")

    def raise_if_failed(self) -> None:
        """Raise the error of ABORTABLE_ERROR or FATAL_ERROR again (a new instance, the
        original as its cause: Java's ``maybeFailWithError``)."""
        error = self.last_error
        if error is None or self.state not in (ProducerState.ABORTABLE_ERROR, ProducerState.FATAL_ERROR):
            return
        again = _again(error, "the producer is in FATAL_ERROR; close it" if error.fatal else
                       "the transaction failed; abort it (abort_transaction()) and start again")
        raise again from error

    def init_transactions(self) -> InitProducerIdRequest:
        """UNINITIALIZED -> INITIALIZING; the InitProducerId request (with the
        ``transactional.id``) to send until :meth:`on_init_producer_id` says DONE; its answer
        also ends any transaction a previous producer with this id left open."""
        self._ensure_transactional("init_transactions")
        self.raise_if_failed()
        if self.state is not ProducerState.UNINITIALIZED:
            raise TransactionStateError(f"init_transactions() in {self.state.name}: it is called once, first")
        self._move(ProducerState.INITIALIZING)
        return self.init_request()

    def init_request(self) -> InitProducerIdRequest:
        """The InitProducerId of INITIALIZING: the first, or the epoch bump after an abort
        (with the producer id and epoch, KIP-360: v3+)."""
        return InitProducerIdRequest(transactional_id=self.transactional_id,
                                     transaction_timeout_ms=self.transaction_timeout_ms,
                                     producer_id=self.producer_id, producer_epoch=self.epoch)

    def begin_transaction(self) -> None:
        """READY -> IN_TRANSACTION: sends are taken from now on."""
        self._ensure_transactional("begin_transaction")
        self.raise_if_failed()
        if self.state is not ProducerState.READY:
            raise self.state_error("begin_transaction")
        self._move(ProducerState.IN_TRANSACTION)

    def state_error(self, call: str) -> TransactionStateError:
        """The error of ``call()`` in a state that does not allow it."""
        why = {ProducerState.UNINITIALIZED: "call init_transactions() first",
               ProducerState.INITIALIZING: "init_transactions() has not finished",
               ProducerState.READY: "no transaction is open: call begin_transaction() first",
               ProducerState.IN_TRANSACTION: "a transaction is open already",
               ProducerState.COMMITTING_TRANSACTION: "the transaction is being committed",
               ProducerState.ABORTING_TRANSACTION: "the transaction is being aborted"}
        return TransactionStateError(f"{call}() in {self.state.name}: {why.get(self.state, '')}")

    def begin_commit(self) -> None:
        """IN_TRANSACTION -> COMMITTING_TRANSACTION: no more sends; the driver flushes, then
        sends :meth:`end_txn_request`."""
        self._ensure_transactional("commit_transaction")
        self.raise_if_failed()
        if self.state is not ProducerState.IN_TRANSACTION:
            raise self.state_error("commit_transaction")
        self._move(ProducerState.COMMITTING_TRANSACTION)

    def begin_abort(self) -> None:
        """IN_TRANSACTION or ABORTABLE_ERROR -> ABORTING_TRANSACTION: unsent batches are
        dropped, partitions not added yet are forgotten; the driver waits for what is in
        flight, then sends :meth:`end_txn_request`. In ABORTING_TRANSACTION (an abort that
        failed with an abortable error) the abort is simply tried again."""
        self._ensure_transactional("abort_transaction")
        if self.state is ProducerState.FATAL_ERROR:
            self.raise_if_failed()
        if self.state is ProducerState.ABORTING_TRANSACTION:
            return  # an abort whose EndTxn failed (abortable) is tried again
        if self.state not in (ProducerState.IN_TRANSACTION, ProducerState.ABORTABLE_ERROR):
            raise self.state_error("abort_transaction")
        self._move(ProducerState.ABORTING_TRANSACTION)
        self.new_partitions.clear()

    # -- transactions: partitions ---------------------------------------------------------------

    def send_allowed(self, tp: tuple[str, int]) -> bool:
        """A batch of ``tp`` may be sent now: the partition is in the transaction (Java's
        ``isSendToPartitionAllowed``); always for an idempotent producer."""
        return not self.transactional or tp in self.partitions

    def add_partition(self, tp: tuple[str, int]) -> None:
        """``tp`` has a batch to send: add it to the transaction with the next
        AddPartitionsToTxn, unless it is added or being added (Java's ``maybeAddPartition``)."""
        if self.state in (ProducerState.IN_TRANSACTION, ProducerState.COMMITTING_TRANSACTION) \
                and tp not in self.partitions and tp not in self.pending_partitions:
            if self.transaction_v2:
                # KIP-890 part 2 (Java's maybeAddPartition with transaction V2): the leader adds
                # the partition when its Produce v12 arrives; no AddPartitionsToTxn.
                self.partitions.add(tp)
                self.started = True
            else:
                self.new_partitions.add(tp)

    def add_partitions_request(self) -> AddPartitionsToTxnRequest | None:
        """The AddPartitionsToTxn (v0-v3 form: one transaction) adding every new partition
        and any left pending by a retried attempt, or None when there are none."""
        if not self.new_partitions and not self.pending_partitions:
            return None
        if self.state in (ProducerState.ABORTABLE_ERROR, ProducerState.ABORTING_TRANSACTION,
                          ProducerState.FATAL_ERROR):
            self.new_partitions.clear()
            self.pending_partitions.clear()
            return None
        self.pending_partitions |= self.new_partitions
        self.new_partitions.clear()
        topics = by_topic(TopicPartition(t, p) for t, p in sorted(self.pending_partitions))
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id, v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch, v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=p) for t, p in topics.items()])

    def on_add_partitions(self, response: AddPartitionsToTxnResponse) -> TxnStep:
        """Apply AddPartitionsToTxn's answer: DONE (the partitions take batches), or the
        step to take; abortable and fatal errors are raised (the partitions leave pending)."""
        errors = {(t.name, p.partition_index): p.partition_error_code
                  for t in response.results_by_topic_v3_and_below for p in t.results_by_partition}
        if response.error_code:  # v4+ only; kproto sends v0-v3, but a broker may say it anyway
            errors = dict.fromkeys(self.pending_partitions, response.error_code)
        failed = {tp: for_code(code) for tp, code in errors.items()
                  if code and code != OperationNotAttemptedError.code}
        steps = {tp: txn_step("AddPartitionsToTxn", error(f"adding {tp[0]}-{tp[1]} to the transaction"))
                 for tp, error in failed.items()}
        # Java's order: a retriable error retries the whole request before others count.
        for step in (TxnStep.FIND_COORDINATOR, TxnStep.RETRY):
            if step in steps.values():
                return step
        answered = set(errors)
        self.pending_partitions -= answered
        if failed:
            tp, error = min(failed.items(), key=lambda item: steps[item[0]] is not TxnStep.FATAL)
            return self.on_txn_error("AddPartitionsToTxn", error(f"adding {tp[0]}-{tp[1]} to the transaction"))
        if any(errors.values()):  # only OPERATION_NOT_ATTEMPTED: the broker says nothing else
            return self.on_txn_error("AddPartitionsToTxn", OperationNotAttemptedError("adding partitions"))
        self.partitions |= answered
        self.started = self.started or bool(answered)
        # Partitions the answer left out stay pending: asked again after a backoff.
        return TxnStep.RETRY if self.pending_partitions else TxnStep.DONE

    # -- transactions: consumed offsets (KIP-98, KIP-447) -----------------------------------------

    def add_offsets_request(self, group_id: str) -> AddOffsetsToTxnRequest:
        """The AddOffsetsToTxn that puts ``group_id``'s offsets topic partition in the
        transaction (IN_TRANSACTION only)."""
        self._ensure_transactional("send_offsets_to_transaction")
        self.raise_if_failed()
        if self.state is not ProducerState.IN_TRANSACTION:
            raise self.state_error("send_offsets_to_transaction")
        return AddOffsetsToTxnRequest(transactional_id=self.transactional_id, producer_id=self.producer_id,
                                      producer_epoch=self.epoch, group_id=group_id)

    def on_add_offsets(self, response: AddOffsetsToTxnResponse) -> TxnStep:
        """Apply AddOffsetsToTxn's answer; DONE: send :meth:`txn_offset_commit_request`."""
        if response.error_code:
            return self.on_txn_error("AddOffsetsToTxn", for_code(response.error_code)("AddOffsetsToTxn"))
        self.started = True
        return TxnStep.DONE

    def txn_offset_commit_request(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                  group: ConsumerGroupMetadata) -> TxnOffsetCommitRequest:
        """The TxnOffsetCommit of ``offsets`` for the group coordinator, with the group's
        generation, member id and instance id (v3+, KIP-447: the coordinator refuses the
        commit of a member that was fenced). A retry sends only the partitions not yet
        answered (set by the first call)."""
        if offsets:
            self._pending_offsets = {(tp.topic, tp.partition): o if isinstance(o, OffsetAndMetadata)
                                     else OffsetAndMetadata(o) for tp, o in offsets.items()}
        topics: dict[str, list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]] = {}
        for (topic, partition), o in sorted(self._pending_offsets.items()):
            topics.setdefault(topic, []).append(TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                partition_index=partition, committed_offset=o.offset, committed_leader_epoch=o.leader_epoch,
                committed_metadata=o.metadata))
        return TxnOffsetCommitRequest(
            transactional_id=self.transactional_id, group_id=group.group_id, producer_id=self.producer_id,
            producer_epoch=self.epoch, generation_id=group.generation_id, member_id=group.member_id,
            group_instance_id=group.group_instance_id, topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=p) for t, p in topics.items()])

    def on_txn_offset_commit(self, response: TxnOffsetCommitResponse) -> TxnStep:
        """Apply TxnOffsetCommit's answer: DONE when every partition was taken; a retry
        (:meth:`txn_offset_commit_request` again) sends only the others."""
        step = TxnStep.DONE
        for t in response.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if not p.error_code:
                    self._pending_offsets.pop(tp, None)
                    continue
                error = for_code(p.error_code)(f"committing the offset of {tp[0]}-{tp[1]} in the transaction")
                found = txn_step("TxnOffsetCommit", error)
                if found in (TxnStep.ABORTABLE, TxnStep.BUMP, TxnStep.FATAL):
                    self._pending_offsets.clear()
                    return self.on_txn_error("TxnOffsetCommit", error)
                if step is TxnStep.DONE or found is TxnStep.FIND_COORDINATOR:
                    step = found
        if step is TxnStep.DONE and self._pending_offsets:
            step = TxnStep.RETRY  # a partition the answer left out
        return step

    # -- transactions: the end ----------------------------------------------------------------

    def end_txn_request(self) -> EndTxnRequest | None:
        """The EndTxn of COMMITTING_TRANSACTION or ABORTING_TRANSACTION, or None (after
        which the transaction is over: READY) when nothing was added to the transaction,
        so the coordinator has nothing to end (Java's ``nextRequest``)."""
        committing = self.state is ProducerState.COMMITTING_TRANSACTION
        if not committing and self.state is not ProducerState.ABORTING_TRANSACTION:
            raise IllegalTransitionError(f"EndTxn in {self.state.name}")
        if not self.started:
            self._complete()
            return None
        return EndTxnRequest(transactional_id=self.transactional_id, producer_id=self.producer_id,
                             producer_epoch=self.epoch, committed=committing)

    def on_end_txn(self, response: EndTxnResponse) -> TxnStep:
        """Apply EndTxn's answer: DONE is READY, or INITIALIZING when an abort must bump the
        epoch (then send :meth:`init_request` until :meth:`on_init_producer_id` says DONE)."""
        if response.error_code:
            return self.on_txn_error("EndTxn", for_code(response.error_code)("EndTxn"))
        if self.transaction_v2 and response.producer_id >= 0:
            # EndTxn v5 (KIP-890 part 2): the coordinator bumped the epoch (or moved to a new
            # producer id); the next transaction uses them, its sequences from 0 (Java's
            # EndTxnHandler: setProducerIdAndEpoch, resetSequenceNumbers).
            self.producer_id, self.epoch = response.producer_id, response.producer_epoch
            self._sequences.clear()
        self._complete()
        return TxnStep.DONE

    def _complete(self) -> None:
        # With transaction version 2 the EndTxn itself bumped the epoch: no InitProducerId.
        bump = (self.epoch_bump_required and self.state is ProducerState.ABORTING_TRANSACTION
                and not self.transaction_v2)
        self._move(ProducerState.INITIALIZING if bump else ProducerState.READY)
        self.last_error = None
        self.epoch_bump_required = self.started = False
        self.partitions.clear()
        self.pending_partitions.clear()
        self.new_partitions.clear()
        self._pending_offsets.clear()

    # -- transactions: errors -----------------------------------------------------------------

    def on_txn_error(self, request: str, error: KafkaError) -> TxnStep:
        """What ``error`` (in the answer to ``request``, or instead of one: a lost
        connection) means: the retriable steps are returned; for the others the state moves
        to ABORTABLE_ERROR or FATAL_ERROR and ``error`` is raised (Java's ``abortableError``,
        ``abortableErrorIfPossible``, ``fatalError``). An abortable error while nothing is
        left to abort (INITIALIZING) is fatal; while aborting, the state stays
        ABORTING_TRANSACTION and the abort may be called again (Java's
        ``transitionToAbortableError``).

        Raises:
            KafkaError: ``error`` (or :class:`~kproto.errors.ProducerFencedError` for
                INVALID_PRODUCER_EPOCH from a coordinator), with ``txn_requires_abort`` or
                ``fatal`` set.
        """
        step = txn_step(request, error)
        if step in (TxnStep.RETRY, TxnStep.FIND_COORDINATOR, TxnStep.DONE):
            return step
        if isinstance(error, InvalidProducerEpochError) and request != "Produce":
            error = ProducerFencedError(f"{request}: {error} (an older coordinator's PRODUCER_FENCED)")
        if step is TxnStep.BUMP:
            step = TxnStep.ABORTABLE if self._need_bump(error) else TxnStep.FATAL
        if step is TxnStep.FATAL or self.state in (ProducerState.UNINITIALIZED, ProducerState.INITIALIZING,
                                                   ProducerState.READY):
            self._fatal(error)  # before or between transactions nothing can be aborted
        else:
            self._abortable(error)  # while aborting already, the abort is what it asks for
        raise error

    def _need_bump(self, error: KafkaError) -> bool:
        """The abort must end with a new epoch; False (and FATAL_ERROR) when the coordinator
        cannot bump it (InitProducerId below v3)."""
        if self.can_bump_epoch:
            self.epoch_bump_required = True
            return True
        self._fatal(error)
        return False

    def _abortable(self, error: KafkaError) -> None:
        if self.state not in _TXN_OPEN:
            return  # no transaction to abort (READY: a record that raced the end of one; FATAL_ERROR)
        error.txn_requires_abort = True
        if self.state in _STAMPING_TXN:
            self.last_error = error
            self._move(ProducerState.ABORTABLE_ERROR)
            log.info("producer: the transaction must be aborted: %s", error)


def _again(error: KafkaError, note: str) -> KafkaError:
    """A new instance of ``error``'s class for raising it again, with the same flags."""
    try:
        again = type(error)(f"{note}; the error: {error}")
    except TypeError:  # a class whose constructor takes more than a message
        again = KafkaError(f"{note}; the error: {error}")
    again.fatal, again.txn_requires_abort = error.fatal, error.txn_requires_abort
    return again
