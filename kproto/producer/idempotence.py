"""The idempotent producer's state, sans-I/O: its producer id and epoch, each partition's
next sequence, and what each answer of a broker means for them.

Theory of operation (Java's ``TransactionManager``, the part an idempotent producer
without ``transactional.id`` uses; KIP-98, KIP-360). The :class:`~kproto.producer.sender.Sender`
performs the I/O and asks this object what to do:

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

States are Java's ``TransactionManager.State``; :data:`TRANSITIONS` lists the legal moves
and an illegal one raises :class:`~kproto.errors.IllegalTransitionError`. An idempotent
producer uses UNINITIALIZED (no usable producer id: not asked yet, or a reset made its
sequences unusable), INITIALIZING (a producer id or epoch is being got), READY and
FATAL_ERROR. The transactional states are declared here for issue 14 (transactions),
which fills in their moves.
"""

from __future__ import annotations

import enum
import logging

from kproto.errors import (
    ClusterAuthorizationFailedError,
    IllegalTransitionError,
    InvalidProducerEpochError,
    KafkaError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
    UnknownProducerIdError,
    UnsupportedVersionError,
    for_code,
)
from kproto.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

__all__ = ["MAX_EPOCH", "TRANSITIONS", "ErrorAction", "Idempotence", "ProducerState"]

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
    READY = "READY"  # batches are stamped with the producer id, epoch and sequences
    # Transactions (issue 14): declared so that the table has its final shape.
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"  # the producer cannot go on: every record fails


_S = ProducerState

#: The legal moves. FATAL_ERROR is reachable from every state and leads nowhere, as in Java.
#: The moves of the transactional states are issue 14's; Java's are noted beside them.
TRANSITIONS: dict[ProducerState, frozenset[ProducerState]] = {
    _S.UNINITIALIZED: frozenset({_S.INITIALIZING, _S.FATAL_ERROR}),
    # A failed InitProducerId stays INITIALIZING and is asked again.
    _S.INITIALIZING: frozenset({_S.READY, _S.FATAL_ERROR}),
    # READY -> UNINITIALIZED: a reset (Java's resetIdempotentProducerId). Issue 14: IN_TRANSACTION.
    _S.READY: frozenset({_S.UNINITIALIZED, _S.FATAL_ERROR}),
    # Issue 14: COMMITTING_TRANSACTION, ABORTING_TRANSACTION, ABORTABLE_ERROR.
    _S.IN_TRANSACTION: frozenset({_S.FATAL_ERROR}),
    # Issue 14: READY, ABORTABLE_ERROR.
    _S.COMMITTING_TRANSACTION: frozenset({_S.FATAL_ERROR}),
    # Issue 14: READY, INITIALIZING (an epoch bump after an abort).
    _S.ABORTING_TRANSACTION: frozenset({_S.FATAL_ERROR}),
    # Issue 14: ABORTING_TRANSACTION, ABORTABLE_ERROR.
    _S.ABORTABLE_ERROR: frozenset({_S.FATAL_ERROR}),
    _S.FATAL_ERROR: frozenset(),
}


class ErrorAction(enum.Enum):
    """What the sender does with a batch the broker answered with an error."""

    RETRY = "RETRY"  # send it again in sequence order (restamped if the epoch moved), even if
    # the error is not retriable in general; ``retries`` and ``delivery.timeout.ms`` still bound it
    AS_USUAL = "AS_USUAL"  # not idempotence's matter: a retriable error retries, another fails the batch
    FATAL = "FATAL"  # the producer is in FATAL_ERROR: every record fails with the error


class Idempotence:
    """One idempotent producer's producer id, epoch and sequences; see the module docstring."""

    def __init__(self) -> None:
        self.state = ProducerState.UNINITIALIZED
        self.producer_id = -1
        self.epoch = -1
        self.reset_cause: BaseException | None = None  # why the sequences restart (None: first init)
        self.fatal_error: KafkaError | None = None  # set in FATAL_ERROR
        self._sequences: dict[tuple[str, int], int] = {}  # next sequence to stamp, per partition
        self._bumped = False  # the epoch was bumped here and no batch of it was acknowledged yet

    def _move(self, state: ProducerState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransitionError(f"{self.state.name} -> {state.name}")
        self.state = state

    @property
    def stamp(self) -> tuple[int, int]:
        """``(producer id, epoch)`` of the batches stamped now."""
        return self.producer_id, self.epoch

    @property
    def needs_init(self) -> bool:
        """No usable producer id and epoch: the sender must call :meth:`begin_init` (once
        nothing is in flight under the old ones) before stamping a batch."""
        return self.state in (ProducerState.UNINITIALIZED, ProducerState.INITIALIZING)

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

    def on_init_producer_id(self, response: InitProducerIdResponse) -> None:
        """Apply InitProducerId's answer.

        Raises:
            KafkaCodeError: the broker's error. A fatal one moves to FATAL_ERROR; after any
                other (e.g. COORDINATOR_LOAD_IN_PROGRESS) the state stays INITIALIZING and
                :meth:`begin_init` asks again.
        """
        if self.state is not ProducerState.INITIALIZING:
            raise IllegalTransitionError(f"an InitProducerId answer in {self.state.name}")
        if response.error_code:
            error = for_code(response.error_code)("InitProducerId")
            if isinstance(error, _FATAL):
                self._fatal(error)
            raise error
        self._ready(response.producer_id, response.producer_epoch, bumped=False)

    def _ready(self, producer_id: int, epoch: int, *, bumped: bool) -> None:
        self.producer_id, self.epoch, self._bumped = producer_id, epoch, bumped
        self._sequences.clear()
        self.reset_cause = None
        self._move(ProducerState.READY)

    # -- stamping batches -----------------------------------------------------------------------

    def next_sequence(self, topic: str, partition: int, record_count: int) -> tuple[int, int, int]:
        """``(producer id, epoch, base sequence)`` for the next batch of ``record_count``
        records to this partition; the partition's sequence moves past them."""
        if self.state is not ProducerState.READY:
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

        Args:
            earlier_waiting: a batch of the same epoch with a lower sequence waits for its
                retry (then OUT_OF_ORDER_SEQUENCE_NUMBER is this batch arriving before it).
        """
        if isinstance(error, _FATAL) or self.state is ProducerState.FATAL_ERROR:
            self._fatal(error)  # in FATAL_ERROR already, the first error is kept
            return ErrorAction.FATAL
        if isinstance(error, _NEW_SEQUENCES):
            self.reset(error)
            return ErrorAction.RETRY
        if isinstance(error, OutOfOrderSequenceNumberError):
            if not earlier_waiting:  # the broker lost sequences of ours: only a new epoch repairs it
                self.reset(error)
            return ErrorAction.RETRY
        return ErrorAction.AS_USUAL

    def on_batch_failed(self, stamped: bool, error: BaseException) -> None:
        """A batch failed for good (its records are settled with an error); ``stamped``: it
        was given a sequence. Its sequence will never be written, so later batches of its
        partition would wait behind the gap forever: the sequences restart."""
        if stamped:
            self.reset(error)

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
            self.fatal_error = error

