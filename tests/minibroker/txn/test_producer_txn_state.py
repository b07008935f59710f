"""The transaction bookkeeping of :class:`ProducerStates`, without a broker (issue 14 step 1,
items 1-2): Kafka's ``ProducerStateManager`` rules for open, completed and unreplicated
transactions, and the expiry exemption of a producer with an open transaction."""

from kproto.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)
from minibroker.coordinator.producer_state import CompletedTxn, ProducerStates

P = ("topic-id", 0)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def test_a_completed_transaction_holds_the_lso_until_the_high_watermark_passes_its_marker():
    """firstUnstableOffset counts unreplicatedTxns: a marker above the high watermark."""
    states = ProducerStates()
    states.record(P, 1, 0, 0, 2, 10, is_transactional=True)
    assert states.first_unstable_offset(P, 12) == 10
    assert states.end_txn(P, 1, 0, 0, 12, commit=True) == (CompletedTxn(1, 10, 12, False), 13)
    assert states.first_unstable_offset(P, 12) == 10  # the marker (12) is not below the HW yet
    assert states.first_unstable_offset(P, 13) is None
    assert states.first_unstable_offset(P, 12) is None  # forgotten for good, as Kafka


def test_the_lso_of_an_abort_is_the_earliest_other_open_transaction():
    states = ProducerStates()
    states.record(P, 1, 0, 0, 1, 0, is_transactional=True)
    states.record(P, 2, 0, 0, 1, 1, is_transactional=True)
    states.record(P, 1, 0, 1, 1, 2, is_transactional=True)  # same transaction: still opened at 0
    assert states.end_txn(P, 1, 0, 0, 3, commit=False) == (CompletedTxn(1, 0, 3, True), 1)
    assert states.end_txn(P, 2, 0, 0, 4, commit=False) == (CompletedTxn(2, 1, 4, True), 5)
    assert states.end_txn(P, 3, 0, 0, 5, commit=False) is None  # nothing open: no completed transaction


def test_marker_checks():
    states = ProducerStates()
    states.record(P, 1, 5, 0, 1, 0, is_transactional=True)
    assert states.check_marker(P, 1, 4, 0) == InvalidProducerEpochError.code
    assert states.check_marker(P, 9, 0, 0) == 0  # an unknown producer: nothing to check
    states.end_txn(P, 1, 5, 3, 1, commit=True)
    assert states.check_marker(P, 1, 5, 2) == TransactionCoordinatorFencedError.code
    assert states.check_marker(P, 1, 5, 3) == 0


def test_a_bumped_epoch_from_a_marker_keeps_the_coordinator_epoch_and_restarts_sequences():
    states = ProducerStates()
    states.record(P, 1, 0, 0, 3, 0, is_transactional=True)
    states.end_txn(P, 1, 1, 7, 3, commit=False)
    assert states.check(P, 1, 0, 3, 1) == (InvalidProducerEpochError.code, -1)
    assert states.check(P, 1, 1, 5, 1, is_transactional=True) == (OutOfOrderSequenceNumberError.code, -1)
    assert states.check(P, 1, 1, 0, 1, is_transactional=True) == (0, -1)
    [info] = states.producers(P)
    assert (info.producer_epoch, info.last_sequence, info.coordinator_epoch, info.current_txn_start_offset) == (
        1, -1, 7, -1)


def test_non_transactional_during_a_transaction_is_invalid_txn_state_even_after_an_epoch_bump():
    states = ProducerStates()
    states.record(P, 1, 0, 0, 1, 0, is_transactional=True)
    assert states.check(P, 1, 0, 1, 1) == (InvalidTxnStateError.code, -1)
    assert states.check(P, 1, 1, 0, 1) == (InvalidTxnStateError.code, -1)
    assert states.check(P, 1, 0, 1, 1, is_transactional=True) == (0, -1)
    assert states.check(P, 1, 0, 0, 1) == (0, 0)  # a duplicate is answered first, as Kafka


def test_a_producer_with_an_open_transaction_never_expires():
    """Kafka's isProducerExpired."""
    clock = Clock()
    states = ProducerStates(100, clock=clock)
    states.record(P, 1, 0, 0, 1, 0, is_transactional=True)
    states.record(P, 2, 0, 0, 1, 1)
    clock.now += 1_000
    assert states.remove_expired() == 1
    assert [p.producer_id for p in states.producers(P)] == [1]
    assert states.first_unstable_offset(P, 2) == 0
    states.end_txn(P, 1, 0, 0, 2, commit=True)
    clock.now += 1_000
    assert states.remove_expired() == 1 and len(states) == 0


def test_a_rebuild_replays_markers():
    from kproto.records import ControlType, build_control_batch, read_batches, rewrite_batch
    from tests.minibroker.txn.txn_wire import txn_batch

    data = rewrite_batch(txn_batch(1, 0, 0, [b"a"]), base_offset=0)
    data += rewrite_batch(txn_batch(2, 0, 0, [b"b"]), base_offset=1)
    data += build_control_batch(ControlType.ABORT, producer_id=1, producer_epoch=0, timestamp=1,
                                coordinator_epoch=4, base_offset=2)
    states = ProducerStates()
    completed = []
    assert states.rebuild(P, read_batches(data), lambda txn, lso: completed.append((txn, lso))) == 2
    assert completed == [(CompletedTxn(1, 0, 2, True), 1)]
    assert states.first_unstable_offset(P, 3) == 1
    assert {p.producer_id: p.coordinator_epoch for p in states.producers(P)} == {1: 4, 2: -1}
