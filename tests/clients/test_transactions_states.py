"""The transactional producer's state machine without a network (issue 14, step 1, item 1):
every move of Java's ``TransactionManager`` states driven by the calls and answers that make
it, and what each broker error means in each request (KIP-691: retried inside, abortable,
or fatal). Each test feeds hand-made answers to :class:`Idempotence` and reads the state."""

import pytest

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
    InvalidTxnStateError,
    KafkaConnectionError,
    KafkaError,
    MessageTooLargeError,
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
    UnsupportedVersionError,
)
from kproto.producer.idempotence import (
    TRANSITIONS,
    ErrorAction,
    Idempotence,
    ProducerState,
    TxnStep,
)
from kproto.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from kproto.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

S = ProducerState
R = AddPartitionsToTxnResponse
T = TxnOffsetCommitResponse
GROUP = ConsumerGroupMetadata(group_id="g", generation_id=4, member_id="m-1", group_instance_id="i-1")


# -- helpers: answers and producers in a given state -----------------------------------------

def init_answer(code=0, producer_id=7, epoch=0):
    return InitProducerIdResponse(error_code=code, producer_id=-1 if code else producer_id,
                                  producer_epoch=-1 if code else epoch)


def add_answer(codes):
    """AddPartitionsToTxn's v0-v3 answer: ``{(topic, partition): code}``."""
    topics = {}
    for (t, p), code in codes.items():
        topics.setdefault(t, []).append(R.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=code))
    return R(results_by_topic_v3_and_below=[R.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps)
                                            for t, ps in topics.items()])


def commit_answer(codes):
    topics = {}
    for (t, p), code in codes.items():
        topics.setdefault(t, []).append(T.TxnOffsetCommitResponsePartition(partition_index=p, error_code=code))
    return T(topics=[T.TxnOffsetCommitResponseTopic(name=t, partitions=ps) for t, ps in topics.items()])


def ready(epoch=0):
    """A transactional producer after init_transactions()."""
    idem = Idempotence("txn-1", 30000)
    idem.init_transactions()
    assert idem.on_init_producer_id(init_answer(epoch=epoch)) is TxnStep.DONE
    return idem


def in_txn(*partitions):
    """IN_TRANSACTION with ``partitions`` added."""
    idem = ready()
    idem.begin_transaction()
    for tp in partitions:
        idem.add_partition(tp)
    if partitions:
        idem.add_partitions_request()
        assert idem.on_add_partitions(add_answer(dict.fromkeys(partitions, 0))) is TxnStep.DONE
    return idem


def abortable(error=None):
    idem = in_txn(("t", 0))
    idem.next_sequence("t", 0, 3)
    idem.on_batch_failed(True, error or MessageTooLargeError("x"))
    assert idem.state is S.ABORTABLE_ERROR
    return idem


# -- the moves ----------------------------------------------------------------------------------

def test_init_transactions_moves_uninitialized_initializing_ready_with_the_transactional_id():
    idem = Idempotence("txn-1", 30000)
    assert idem.state is S.UNINITIALIZED and not idem.needs_init  # the application inits, not the sender
    request = idem.init_transactions()
    assert (request.transactional_id, request.transaction_timeout_ms) == ("txn-1", 30000)
    assert (request.producer_id, request.producer_epoch) == (-1, -1)
    assert idem.state is S.INITIALIZING
    assert idem.on_init_producer_id(init_answer(producer_id=9, epoch=2)) is TxnStep.DONE
    assert idem.state is S.READY and idem.stamp == (9, 2)


def test_ready_in_transaction_committing_ready():
    idem = in_txn(("t", 0))
    assert idem.state is S.IN_TRANSACTION
    idem.begin_commit()
    assert idem.state is S.COMMITTING_TRANSACTION
    request = idem.end_txn_request()
    assert isinstance(request, EndTxnRequest) and request.committed and request.transactional_id == "txn-1"
    assert idem.on_end_txn(EndTxnResponse(error_code=0)) is TxnStep.DONE
    assert idem.state is S.READY and not idem.partitions and not idem.started


def test_in_transaction_aborting_ready():
    idem = in_txn(("t", 0))
    idem.begin_abort()
    assert idem.state is S.ABORTING_TRANSACTION
    request = idem.end_txn_request()
    assert not request.committed
    idem.on_end_txn(EndTxnResponse(error_code=0))
    assert idem.state is S.READY and idem.stamp == (7, 0)  # nothing failed: no epoch bump


def test_an_empty_transaction_ends_without_end_txn():
    """Java's nextRequest: nothing was added, so the coordinator has nothing to end."""
    for end in ("begin_commit", "begin_abort"):
        idem = in_txn()
        getattr(idem, end)()
        assert idem.end_txn_request() is None
        assert idem.state is S.READY


def test_a_failed_batch_makes_the_transaction_abortable_and_its_abort_bumps_the_epoch():
    """IN_TRANSACTION -> ABORTABLE_ERROR -> ABORTING_TRANSACTION -> INITIALIZING -> READY:
    a batch that was sent and failed leaves a gap in its sequences; the abort ends with
    InitProducerId carrying the producer id and epoch (KIP-360), which restarts them."""
    idem = abortable()
    assert idem.last_error.txn_requires_abort and not idem.last_error.fatal
    idem.begin_abort()
    idem.on_end_txn(EndTxnResponse(error_code=0))
    assert idem.state is S.INITIALIZING
    request = idem.init_request()
    assert (request.transactional_id, request.producer_id, request.producer_epoch) == ("txn-1", 7, 0)
    idem.on_init_producer_id(init_answer(epoch=1))
    assert idem.state is S.READY and idem.stamp == (7, 1)
    idem.begin_transaction()
    assert idem.next_sequence("t", 0, 1) == (7, 1, 0)  # sequences start over


def test_a_batch_that_failed_unsent_needs_no_epoch_bump():
    idem = in_txn(("t", 0))
    idem.on_batch_failed(False, KafkaError("expired in the queue"))
    assert idem.state is S.ABORTABLE_ERROR and not idem.epoch_bump_required
    idem.begin_abort()
    idem.on_end_txn(EndTxnResponse(error_code=0))
    assert idem.state is S.READY


def test_committing_to_abortable_error_when_a_batch_fails_during_the_flush():
    idem = in_txn(("t", 0))
    idem.begin_commit()
    idem.next_sequence("t", 0, 1)
    error = MessageTooLargeError("too big")
    idem.on_batch_failed(True, error)
    assert idem.state is S.ABORTABLE_ERROR and idem.last_error is error
    with pytest.raises(MessageTooLargeError, match="abort it") as raised:
        idem.raise_if_failed()
    assert raised.value.txn_requires_abort and raised.value.__cause__ is error


def test_the_first_error_of_a_transaction_is_kept():
    idem = abortable(MessageTooLargeError("first"))
    idem.on_batch_failed(True, RequestTimedOutError("second"))
    assert str(idem.last_error) == "[MESSAGE_TOO_LARGE] first"


def test_a_fatal_produce_error_moves_to_fatal_error_from_a_transaction():
    idem = in_txn(("t", 0))
    assert idem.on_error(ProducerFencedError("x"), earlier_waiting=False) is ErrorAction.FATAL
    assert idem.state is S.FATAL_ERROR and idem.fatal_error.fatal
    for call in (idem.begin_transaction, idem.begin_commit, idem.begin_abort, lambda: idem.add_offsets_request("g")):
        with pytest.raises(ProducerFencedError, match="close it"):
            call()


@pytest.mark.parametrize("error", [UnknownProducerIdError, InvalidProducerEpochError, OutOfOrderSequenceNumberError])
def test_a_transactional_producer_never_resets_its_sequences_itself(error):
    """Java's resetIdempotentProducerId refuses a transactional producer: these fail the
    batch (AS_USUAL, not retriable), the transaction becomes abortable, and the abort
    bumps the epoch (KIP-588: INVALID_PRODUCER_EPOCH from Produce is abortable)."""
    idem = in_txn(("t", 0))
    idem.next_sequence("t", 0, 1)
    assert idem.on_error(error("x"), earlier_waiting=False) is ErrorAction.AS_USUAL
    assert idem.state is S.IN_TRANSACTION
    idem.on_batch_failed(True, error("x"))
    assert idem.state is S.ABORTABLE_ERROR and idem.epoch_bump_required


def test_an_out_of_order_batch_behind_a_waiting_retry_is_retried():
    idem = in_txn(("t", 0))
    assert idem.on_error(OutOfOrderSequenceNumberError("x"), earlier_waiting=True) is ErrorAction.RETRY


def test_without_epoch_bumps_a_sent_batch_that_failed_is_fatal():
    """A coordinator below InitProducerId v3 cannot bump the epoch after an abort, so the
    gap a sent batch left could never be closed (Java: 'It isn't safe to continue')."""
    idem = in_txn(("t", 0))
    idem.can_bump_epoch = False
    idem.on_batch_failed(True, MessageTooLargeError("x"))
    assert idem.state is S.FATAL_ERROR


# -- illegal calls ------------------------------------------------------------------------------

@pytest.mark.parametrize(("state", "call"), [
    (S.UNINITIALIZED, "begin_transaction"), (S.UNINITIALIZED, "begin_commit"), (S.UNINITIALIZED, "begin_abort"),
    (S.READY, "begin_commit"), (S.READY, "begin_abort"), (S.READY, "init_transactions"),
    (S.IN_TRANSACTION, "begin_transaction"), (S.COMMITTING_TRANSACTION, "begin_abort"),
    (S.COMMITTING_TRANSACTION, "begin_commit"), (S.ABORTING_TRANSACTION, "begin_transaction"),
])
def test_a_call_the_state_does_not_allow_is_a_transaction_state_error(state, call):
    idem = Idempotence("txn-1")
    idem.state = state
    with pytest.raises(TransactionStateError, match=f"{state.name}"):
        getattr(idem, call)()
    assert idem.state is state


def test_sends_offsets_only_in_a_transaction():
    with pytest.raises(TransactionStateError, match="begin_transaction"):
        ready().add_offsets_request("g")


def test_an_idempotent_producer_refuses_transactional_calls():
    with pytest.raises(TransactionStateError, match="transactional.id"):
        Idempotence().init_transactions()


def test_commit_in_abortable_error_raises_the_error_and_abort_is_allowed():
    idem = abortable()
    with pytest.raises(MessageTooLargeError):
        idem.begin_commit()
    idem.begin_abort()
    assert idem.state is S.ABORTING_TRANSACTION


def test_every_transactional_move_is_in_the_table():
    made = {(S.UNINITIALIZED, S.INITIALIZING), (S.INITIALIZING, S.READY), (S.READY, S.IN_TRANSACTION),
            (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION), (S.IN_TRANSACTION, S.ABORTING_TRANSACTION),
            (S.IN_TRANSACTION, S.ABORTABLE_ERROR), (S.COMMITTING_TRANSACTION, S.READY),
            (S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR), (S.ABORTING_TRANSACTION, S.READY),
            (S.ABORTING_TRANSACTION, S.INITIALIZING), (S.ABORTABLE_ERROR, S.ABORTING_TRANSACTION)}
    assert all(b in TRANSITIONS[a] for a, b in made)
    with pytest.raises(IllegalTransitionError):
        Idempotence("t")._move(S.COMMITTING_TRANSACTION)


# -- partitions --------------------------------------------------------------------------------

def test_partitions_are_added_in_one_request_before_their_batches():
    idem = in_txn()
    assert not idem.send_allowed(("a", 0))
    for tp in (("a", 0), ("a", 1), ("b", 0)):
        idem.add_partition(tp)
    request = idem.add_partitions_request()
    assert isinstance(request, AddPartitionsToTxnRequest)
    assert (request.v3_and_below_transactional_id, request.v3_and_below_producer_id) == ("txn-1", 7)
    assert {(t.name, tuple(t.partitions)) for t in request.v3_and_below_topics} == {("a", (0, 1)), ("b", (0,))}
    idem.add_partition(("a", 0))  # pending: not asked twice
    assert not idem.new_partitions
    assert idem.on_add_partitions(add_answer({("a", 0): 0, ("a", 1): 0, ("b", 0): 0})) is TxnStep.DONE
    assert idem.send_allowed(("a", 0)) and idem.started and idem.add_partitions_request() is None


@pytest.mark.parametrize(("error", "step"), [
    (NotCoordinatorError, TxnStep.FIND_COORDINATOR), (CoordinatorNotAvailableError, TxnStep.FIND_COORDINATOR),
    (ConcurrentTransactionsError, TxnStep.RETRY), (CoordinatorLoadInProgressError, TxnStep.RETRY),
    (UnknownTopicOrPartitionError, TxnStep.RETRY)])
def test_add_partitions_retriable_errors_keep_the_partitions_pending(error, step):
    idem = in_txn()
    idem.add_partition(("a", 0))
    idem.add_partitions_request()
    assert idem.on_add_partitions(add_answer({("a", 0): error.code})) is step
    assert idem.state is S.IN_TRANSACTION and not idem.send_allowed(("a", 0))
    assert idem.add_partitions_request() is not None  # asked again


@pytest.mark.parametrize(("error", "raised", "state"), [
    (TopicAuthorizationFailedError, TopicAuthorizationFailedError, S.ABORTABLE_ERROR),
    (UnknownProducerIdError, UnknownProducerIdError, S.ABORTABLE_ERROR),
    (ProducerFencedError, ProducerFencedError, S.FATAL_ERROR),
    (InvalidProducerEpochError, ProducerFencedError, S.FATAL_ERROR),  # KIP-588: an older coordinator's fencing
    (TransactionalIdAuthorizationFailedError, TransactionalIdAuthorizationFailedError, S.FATAL_ERROR),
    (InvalidTxnStateError, InvalidTxnStateError, S.FATAL_ERROR),
    (TransactionAbortableError, TransactionAbortableError, S.ABORTABLE_ERROR),
])
def test_add_partitions_errors_that_end_the_transaction(error, raised, state):
    idem = in_txn()
    idem.add_partition(("a", 0))
    idem.add_partition(("a", 1))
    idem.add_partitions_request()
    with pytest.raises(raised) as info:
        idem.on_add_partitions(add_answer({("a", 0): error.code, ("a", 1): OperationNotAttemptedError.code}))
    assert idem.state is state
    assert (info.value.fatal, info.value.txn_requires_abort) == (state is S.FATAL_ERROR, state is S.ABORTABLE_ERROR)
    assert not idem.pending_partitions and not idem.send_allowed(("a", 1))


def test_partitions_an_answer_leaves_out_are_asked_again_after_a_backoff():
    idem = in_txn()
    idem.add_partition(("a", 0))
    idem.add_partition(("a", 1))
    idem.add_partitions_request()
    assert idem.on_add_partitions(add_answer({("a", 0): 0})) is TxnStep.RETRY
    assert idem.send_allowed(("a", 0)) and not idem.send_allowed(("a", 1))
    again = idem.add_partitions_request()
    assert [(t.name, list(t.partitions)) for t in again.v3_and_below_topics] == [("a", [1])]


def test_nothing_is_added_once_the_transaction_failed():
    idem = abortable()
    idem.add_partition(("z", 0))
    assert idem.add_partitions_request() is None


# -- offsets (KIP-447) --------------------------------------------------------------------------

def test_offsets_go_to_the_transaction_with_the_group_s_generation_and_member():
    idem = in_txn()
    request = idem.add_offsets_request("g")
    assert (request.transactional_id, request.group_id, request.producer_id) == ("txn-1", "g", 7)
    assert idem.on_add_offsets(AddOffsetsToTxnResponse(error_code=0)) is TxnStep.DONE
    assert idem.started
    commit = idem.txn_offset_commit_request({TopicPartition("in", 0): OffsetAndMetadata(5, "m", 3),
                                            TopicPartition("in", 1): 9}, GROUP)
    assert (commit.group_id, commit.generation_id, commit.member_id, commit.group_instance_id) == ("g", 4, "m-1", "i-1")
    sent = {(t.name, p.partition_index): (p.committed_offset, p.committed_metadata, p.committed_leader_epoch)
            for t in commit.topics for p in t.partitions}
    assert sent == {("in", 0): (5, "m", 3), ("in", 1): (9, "", -1)}
    # One partition taken, one to retry: the retry sends only that one.
    assert idem.on_txn_offset_commit(commit_answer({("in", 0): 0, ("in", 1): CoordinatorLoadInProgressError.code})) \
        is TxnStep.RETRY
    again = idem.txn_offset_commit_request({}, GROUP)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in again.topics] == [("in", [1])]
    assert idem.on_txn_offset_commit(commit_answer({("in", 1): 0})) is TxnStep.DONE


@pytest.mark.parametrize(("error", "outcome"), [
    (NotCoordinatorError, TxnStep.FIND_COORDINATOR), (RequestTimedOutError, TxnStep.FIND_COORDINATOR),
    (CoordinatorLoadInProgressError, TxnStep.RETRY), (UnknownTopicOrPartitionError, TxnStep.RETRY),
    (IllegalGenerationError, S.ABORTABLE_ERROR), (UnknownMemberIdError, S.ABORTABLE_ERROR),
    (FencedInstanceIdError, S.ABORTABLE_ERROR), (GroupAuthorizationFailedError, S.ABORTABLE_ERROR),
    (ProducerFencedError, S.FATAL_ERROR), (TransactionalIdAuthorizationFailedError, S.FATAL_ERROR),
    (InvalidProducerEpochError, S.FATAL_ERROR)])
def test_txn_offset_commit_errors(error, outcome):
    """KIP-447: a member fenced since its poll (a new generation, or removed) cannot commit
    offsets in the transaction: abortable, the application aborts and polls again."""
    idem = in_txn()
    idem.add_offsets_request("g")
    idem.on_add_offsets(AddOffsetsToTxnResponse(error_code=0))
    idem.txn_offset_commit_request({TopicPartition("in", 0): 5}, GROUP)
    answer = commit_answer({("in", 0): error.code})
    if isinstance(outcome, TxnStep):
        assert idem.on_txn_offset_commit(answer) is outcome and idem.state is S.IN_TRANSACTION
    else:
        with pytest.raises(KafkaError):
            idem.on_txn_offset_commit(answer)
        assert idem.state is outcome


@pytest.mark.parametrize(("error", "outcome"), [
    (NotCoordinatorError, TxnStep.FIND_COORDINATOR), (ConcurrentTransactionsError, TxnStep.RETRY),
    (GroupAuthorizationFailedError, S.ABORTABLE_ERROR), (UnknownProducerIdError, S.ABORTABLE_ERROR),
    (ProducerFencedError, S.FATAL_ERROR), (ClusterAuthorizationFailedError, S.FATAL_ERROR)])
def test_add_offsets_errors(error, outcome):
    idem = in_txn()
    idem.add_offsets_request("g")
    answer = AddOffsetsToTxnResponse(error_code=error.code)
    if isinstance(outcome, TxnStep):
        assert idem.on_add_offsets(answer) is outcome and not idem.started
    else:
        with pytest.raises(KafkaError):
            idem.on_add_offsets(answer)
        assert idem.state is outcome


# -- InitProducerId and EndTxn errors ------------------------------------------------------------

@pytest.mark.parametrize(("error", "outcome"), [
    (NotCoordinatorError, TxnStep.FIND_COORDINATOR), (CoordinatorNotAvailableError, TxnStep.FIND_COORDINATOR),
    (CoordinatorLoadInProgressError, TxnStep.RETRY), (ConcurrentTransactionsError, TxnStep.RETRY),
    (ProducerFencedError, ProducerFencedError), (InvalidProducerEpochError, ProducerFencedError),
    (TransactionalIdAuthorizationFailedError, TransactionalIdAuthorizationFailedError),
    (ClusterAuthorizationFailedError, ClusterAuthorizationFailedError),
    (UnsupportedVersionError, UnsupportedVersionError)])
def test_init_producer_id_errors(error, outcome):
    idem = Idempotence("txn-1")
    idem.init_transactions()
    if isinstance(outcome, TxnStep):
        assert idem.on_init_producer_id(init_answer(error.code)) is outcome
        assert idem.state is S.INITIALIZING
        assert idem.on_init_producer_id(init_answer()) is TxnStep.DONE  # asked again, then ready
    else:
        with pytest.raises(outcome) as raised:
            idem.on_init_producer_id(init_answer(error.code))
        assert idem.state is S.FATAL_ERROR and raised.value.fatal


@pytest.mark.parametrize(("error", "outcome"), [
    (NotCoordinatorError, TxnStep.FIND_COORDINATOR), (CoordinatorLoadInProgressError, TxnStep.RETRY),
    (ConcurrentTransactionsError, TxnStep.RETRY), (ProducerFencedError, S.FATAL_ERROR),
    (InvalidProducerEpochError, S.FATAL_ERROR), (InvalidTxnStateError, S.FATAL_ERROR),
    (UnknownProducerIdError, S.ABORTABLE_ERROR), (TransactionAbortableError, S.ABORTABLE_ERROR)])
def test_end_txn_errors_of_a_commit(error, outcome):
    idem = in_txn(("t", 0))
    idem.begin_commit()
    idem.end_txn_request()
    answer = EndTxnResponse(error_code=error.code)
    if isinstance(outcome, TxnStep):
        assert idem.on_end_txn(answer) is outcome and idem.state is S.COMMITTING_TRANSACTION
    else:
        with pytest.raises(KafkaError):
            idem.on_end_txn(answer)
        assert idem.state is outcome


def test_an_abortable_error_while_aborting_keeps_aborting_and_the_abort_goes_again():
    """Java's transitionToAbortableError skips the move while aborting; the application's
    next abort sends EndTxn again, and then bumps the epoch (UNKNOWN_PRODUCER_ID, KIP-360)."""
    idem = in_txn(("t", 0))
    idem.begin_abort()
    idem.end_txn_request()
    with pytest.raises(UnknownProducerIdError) as raised:
        idem.on_end_txn(EndTxnResponse(error_code=UnknownProducerIdError.code))
    assert idem.state is S.ABORTING_TRANSACTION and raised.value.txn_requires_abort and idem.epoch_bump_required
    idem.begin_abort()
    assert idem.end_txn_request() is not None
    idem.on_end_txn(EndTxnResponse(error_code=0))
    assert idem.state is S.INITIALIZING
    idem.on_init_producer_id(init_answer(epoch=1))
    assert idem.state is S.READY and idem.stamp == (7, 1)


def test_an_abortable_error_before_any_transaction_is_fatal():
    idem = Idempotence("txn-1")
    idem.init_transactions()
    with pytest.raises(TransactionAbortableError):
        idem.on_init_producer_id(init_answer(TransactionAbortableError.code))
    assert idem.state is S.FATAL_ERROR


def test_a_lost_connection_to_the_coordinator_is_retried_after_finding_it_again():
    idem = in_txn()
    assert idem.on_txn_error("EndTxn", KafkaConnectionError("reset")) is TxnStep.FIND_COORDINATOR
    assert idem.state is S.IN_TRANSACTION


def test_find_coordinator_errors():
    idem = in_txn()
    assert idem.on_txn_error("FindCoordinator", CoordinatorNotAvailableError("x")) is TxnStep.RETRY
    with pytest.raises(GroupAuthorizationFailedError):
        idem.on_txn_error("FindCoordinator", GroupAuthorizationFailedError("g"))
    assert idem.state is S.ABORTABLE_ERROR
    with pytest.raises(TransactionalIdAuthorizationFailedError):
        in_txn().on_txn_error("FindCoordinator", TransactionalIdAuthorizationFailedError("t"))


def test_the_producer_s_gate_hears_every_move():
    idem = Idempotence("txn-1")
    seen = []
    idem.on_move = seen.append
    idem.init_transactions()
    idem.on_init_producer_id(init_answer())
    idem.begin_transaction()
    idem.begin_commit()
    idem.end_txn_request()
    assert seen == [S.INITIALIZING, S.READY, S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.READY]


# -- settings ----------------------------------------------------------------------------------

def test_a_transactional_id_needs_idempotence_as_in_java():
    """Java's ProducerConfig: transactions are idempotent, so a transactional.id with
    idempotence off, or with a setting idempotence cannot have, is a ConfigError (no broker
    is contacted: it is raised by the constructor)."""
    from kproto import Producer
    from kproto.errors import ConfigError

    base = {"bootstrap_servers": "127.0.0.1:1", "transactional_id": "t"}
    with pytest.raises(ConfigError, match="needs enable.idempotence=true"):
        Producer(**base, enable_idempotence=False)
    for conflict in ({"acks": 1}, {"retries": 0}, {"max_in_flight_requests_per_connection": 6}):
        with pytest.raises(ConfigError, match="needed by transactional.id"):
            Producer(**base, **conflict)
    with pytest.raises(ConfigError, match="transaction.timeout.ms"):
        Producer(**base, transaction_timeout_ms=0)
