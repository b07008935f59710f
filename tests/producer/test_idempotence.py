"""The idempotent producer's state machine without a network (issue 12, "State machines as
data, everywhere": producer idempotence): the transition table, getting a producer id,
KIP-360 epoch bumps and when a new producer id is asked for instead, stamping sequences,
and what every Produce error means. Each test feeds hand-made answers and reads the state."""

import pytest

from kproto.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorLoadInProgressError,
    CorruptMessageError,
    IllegalTransitionError,
    InvalidProducerEpochError,
    KafkaTimeoutError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from kproto.producer.idempotence import (
    MAX_EPOCH,
    TRANSITIONS,
    ErrorAction,
    Idempotence,
    ProducerState,
)
from kproto.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

S = ProducerState
FATAL = [ProducerFencedError, ClusterAuthorizationFailedError, TransactionalIdAuthorizationFailedError,
         UnsupportedVersionError]


def answer(producer_id=7, epoch=0, code=0):
    return InitProducerIdResponse(error_code=code, producer_id=producer_id if not code else -1,
                                  producer_epoch=epoch if not code else -1)


def ready(producer_id=7, epoch=0):
    """An Idempotence that got ``producer_id`` and ``epoch`` from InitProducerId."""
    idem = Idempotence()
    assert isinstance(idem.begin_init(), InitProducerIdRequest)
    idem.on_init_producer_id(answer(producer_id, epoch))
    return idem


# -- the table -------------------------------------------------------------------------------

ALL_MOVES = [(a, b) for a in S for b in S]
# Java's State.isTransitionValid but FATAL_ERROR (legal from everywhere else) and
# ABORTABLE_ERROR -> ABORTABLE_ERROR (kproto keeps the first error). The first three are an
# idempotent producer's; the transactional ones are driven in tests/clients/test_transactions_states.py.
IDEMPOTENT_MOVES = {(S.UNINITIALIZED, S.INITIALIZING), (S.INITIALIZING, S.READY), (S.READY, S.UNINITIALIZED),
                    (S.READY, S.IN_TRANSACTION), (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION),
                    (S.IN_TRANSACTION, S.ABORTING_TRANSACTION), (S.IN_TRANSACTION, S.ABORTABLE_ERROR),
                    (S.COMMITTING_TRANSACTION, S.READY), (S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR),
                    (S.ABORTING_TRANSACTION, S.READY), (S.ABORTING_TRANSACTION, S.INITIALIZING),
                    (S.ABORTABLE_ERROR, S.ABORTING_TRANSACTION)}


@pytest.mark.parametrize(("source", "target"), ALL_MOVES, ids=[f"{a.name}->{b.name}" for a, b in ALL_MOVES])
def test_every_move_is_legal_exactly_when_the_table_says(source, target):
    idem = Idempotence()
    idem.state = source
    legal = (source, target) in IDEMPOTENT_MOVES or (target is S.FATAL_ERROR and source is not S.FATAL_ERROR)
    assert (target in TRANSITIONS[source]) == legal
    if legal:
        idem._move(target)
        assert idem.state is target
    else:
        with pytest.raises(IllegalTransitionError, match=f"{source.name} -> {target.name}"):
            idem._move(target)
        assert idem.state is source


def test_the_table_has_java_s_eight_states():
    assert [s.name for s in S] == ["UNINITIALIZED", "INITIALIZING", "READY", "IN_TRANSACTION",
                                   "COMMITTING_TRANSACTION", "ABORTING_TRANSACTION", "ABORTABLE_ERROR",
                                   "FATAL_ERROR"]
    assert set(TRANSITIONS) == set(S)


# -- getting a producer id -------------------------------------------------------------------

def test_a_new_producer_asks_init_producer_id_and_is_ready_with_its_answer():
    idem = Idempotence()
    assert idem.state is S.UNINITIALIZED and idem.needs_init
    request = idem.begin_init()
    assert isinstance(request, InitProducerIdRequest) and request.transactional_id is None
    assert idem.state is S.INITIALIZING and idem.needs_init
    idem.on_init_producer_id(answer(42, 3))
    assert idem.state is S.READY and not idem.needs_init and idem.stamp == (42, 3)


def test_a_failed_init_producer_id_stays_initializing_and_is_asked_again():
    idem = Idempotence()
    idem.begin_init()
    with pytest.raises(CoordinatorLoadInProgressError):
        idem.on_init_producer_id(answer(code=CoordinatorLoadInProgressError.code))
    assert idem.state is S.INITIALIZING and idem.needs_init and idem.fatal_error is None
    assert isinstance(idem.begin_init(), InitProducerIdRequest)
    idem.on_init_producer_id(answer(8))
    assert idem.state is S.READY and idem.stamp == (8, 0)


@pytest.mark.parametrize("error", FATAL, ids=lambda e: e.name)
def test_a_fatal_init_producer_id_answer_is_fatal(error):
    idem = Idempotence()
    idem.begin_init()
    with pytest.raises(error):
        idem.on_init_producer_id(answer(code=error.code))
    assert idem.state is S.FATAL_ERROR and isinstance(idem.fatal_error, error)
    with pytest.raises(IllegalTransitionError):
        idem.begin_init()


@pytest.mark.parametrize("state", [S.UNINITIALIZED, S.READY, S.FATAL_ERROR])
def test_an_init_producer_id_answer_is_only_taken_while_initializing(state):
    idem = Idempotence()
    idem.state = state
    with pytest.raises(IllegalTransitionError):
        idem.on_init_producer_id(answer())


@pytest.mark.parametrize("state", [S.READY, S.FATAL_ERROR, S.IN_TRANSACTION])
def test_begin_init_is_only_for_a_producer_that_needs_one(state):
    idem = Idempotence()
    idem.state = state
    with pytest.raises(IllegalTransitionError):
        idem.begin_init()


# -- sequences -------------------------------------------------------------------------------

def test_each_partition_counts_its_own_sequences_from_zero():
    idem = ready(5, 2)
    assert idem.next_sequence("t", 0, 3) == (5, 2, 0)
    assert idem.next_sequence("t", 0, 4) == (5, 2, 3)
    assert idem.next_sequence("t", 1, 1) == (5, 2, 0)
    assert idem.next_sequence("u", 0, 1) == (5, 2, 0)
    assert idem.next_sequence("t", 0, 1) == (5, 2, 7)


def test_sequences_wrap_after_int32_max():
    idem = ready()
    idem._sequences[("t", 0)] = (1 << 31) - 2
    assert idem.next_sequence("t", 0, 5)[2] == (1 << 31) - 2
    assert idem.next_sequence("t", 0, 1)[2] == 3


@pytest.mark.parametrize("state", [S.UNINITIALIZED, S.INITIALIZING, S.FATAL_ERROR])
def test_no_batch_is_stamped_without_a_usable_producer_id(state):
    idem = Idempotence()
    idem.state = state
    with pytest.raises(IllegalTransitionError):
        idem.next_sequence("t", 0, 1)


# -- what a Produce error means ----------------------------------------------------------------

# (error, an earlier batch waits for its retry, the action, the state after)
ERRORS = [
    (UnknownProducerIdError, False, ErrorAction.RETRY, S.UNINITIALIZED),
    (UnknownProducerIdError, True, ErrorAction.RETRY, S.UNINITIALIZED),
    (InvalidProducerEpochError, False, ErrorAction.RETRY, S.UNINITIALIZED),
    (InvalidProducerEpochError, True, ErrorAction.RETRY, S.UNINITIALIZED),
    (OutOfOrderSequenceNumberError, True, ErrorAction.RETRY, S.READY),  # a retry in waiting
    (OutOfOrderSequenceNumberError, False, ErrorAction.RETRY, S.UNINITIALIZED),  # a gap: new epoch
    *[(e, w, ErrorAction.FATAL, S.FATAL_ERROR) for e in FATAL for w in (False, True)],
    *[(e, False, ErrorAction.AS_USUAL, S.READY) for e in (
        NotLeaderOrFollowerError, UnknownTopicOrPartitionError, NotEnoughReplicasError, RequestTimedOutError,
        TopicAuthorizationFailedError, MessageTooLargeError, CorruptMessageError)],
]


@pytest.mark.parametrize(("error", "earlier_waiting", "action", "after"), ERRORS,
                         ids=[f"{e.name}-{'earlier' if w else 'alone'}" for e, w, _, _ in ERRORS])
def test_what_each_produce_error_means(error, earlier_waiting, action, after):
    idem = ready()
    exc = error("producing to t-0")
    assert idem.on_error(exc, earlier_waiting=earlier_waiting) is action
    assert idem.state is after
    assert idem.needs_init == (after is S.UNINITIALIZED)
    if after is S.UNINITIALIZED:
        assert idem.reset_cause is exc
    if after is S.FATAL_ERROR:
        assert idem.fatal_error is exc


@pytest.mark.parametrize(("stamped", "after"), [(True, S.UNINITIALIZED), (False, S.READY)])
def test_a_batch_failed_for_good_after_it_got_a_sequence_restarts_the_sequences(stamped, after):
    idem = ready()
    idem.on_batch_failed(stamped, KafkaTimeoutError("expired"))
    assert idem.state is after


# -- KIP-360: a new epoch, or a new producer id -------------------------------------------------

def test_a_reset_moves_to_the_next_epoch_without_a_request_and_restarts_sequences():
    idem = ready(7, 0)
    idem.next_sequence("t", 0, 10)
    idem.reset(UnknownProducerIdError("t-0"))
    assert idem.state is S.UNINITIALIZED and idem.stamp == (7, 0)  # nothing in flight may be restamped yet
    assert idem.begin_init() is None
    assert idem.state is S.READY and idem.stamp == (7, 1) and idem.reset_cause is None
    assert idem.next_sequence("t", 0, 1) == (7, 1, 0)


def test_an_unconfirmed_bump_is_followed_by_a_new_producer_id():
    """A broker that refused the epoch bumped here (no batch of it acknowledged before the
    next reset) is asked for a new producer id instead of yet another epoch."""
    idem = ready(7, 0)
    idem.reset(UnknownProducerIdError("t-0"))
    assert idem.begin_init() is None and idem.stamp == (7, 1)
    idem.on_error(InvalidProducerEpochError("t-0"), earlier_waiting=False)
    assert isinstance(idem.begin_init(), InitProducerIdRequest)
    idem.on_init_producer_id(answer(8, 0))
    assert idem.state is S.READY and idem.stamp == (8, 0)
    idem.reset(UnknownProducerIdError("t-0"))  # an id from a broker is not a bump of ours
    assert idem.begin_init() is None and idem.stamp == (8, 1)


def test_a_confirmed_bump_is_followed_by_another_bump():
    idem = ready(7, 0)
    idem.reset(UnknownProducerIdError("t-0"))
    idem.begin_init()
    idem.on_acknowledged()
    idem.reset(OutOfOrderSequenceNumberError("t-0"))
    assert idem.begin_init() is None and idem.stamp == (7, 2)


def test_an_exhausted_epoch_asks_for_a_new_producer_id():
    idem = ready(7, MAX_EPOCH)
    idem.reset(UnknownProducerIdError("t-0"))
    assert isinstance(idem.begin_init(), InitProducerIdRequest)
    idem.on_init_producer_id(answer(9, 0))
    assert idem.stamp == (9, 0)


def test_a_reset_while_waiting_for_one_keeps_the_latest_cause():
    idem = ready()
    first, second = UnknownProducerIdError("a"), KafkaTimeoutError("b")
    idem.reset(first)
    idem.reset(second)
    assert idem.state is S.UNINITIALIZED and idem.reset_cause is second


# -- FATAL_ERROR ---------------------------------------------------------------------------------

def test_nothing_leaves_fatal_error_and_the_first_error_is_kept():
    idem = ready()
    first = ProducerFencedError("t-0")
    assert idem.on_error(first, earlier_waiting=False) is ErrorAction.FATAL
    assert idem.on_error(ClusterAuthorizationFailedError("t-1"), earlier_waiting=False) is ErrorAction.FATAL
    idem.reset(UnknownProducerIdError("t-0"))
    idem.on_batch_failed(True, KafkaTimeoutError("expired"))
    assert idem.on_error(UnknownProducerIdError("t-2"), earlier_waiting=False) is ErrorAction.FATAL
    assert idem.on_error(NotLeaderOrFollowerError("t-2"), earlier_waiting=False) is ErrorAction.FATAL
    assert idem.state is S.FATAL_ERROR and idem.fatal_error is first and not idem.needs_init
