"""The transactional request flow under a coordinator's errors and delays (issue 14, step 1,
item 2): what neither minibroker nor Tansu can be made to do on demand, so
:class:`FakeCoordinator`, a rule of the fault proxy (tests/support/proxy.py), answers the
transaction coordinator's requests on the wire (FindCoordinator of a transactional id,
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) as Kafka's
does, with the errors and delays a test asks for; minibroker behind it stores the records.
"""

import threading
import time

import pytest

from kproto import Producer, TopicPartition
from kproto.codec import read_batch_header
from kproto.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    IllegalGenerationError,
    InvalidTimestampError,
    KafkaTimeoutError,
    NotCoordinatorError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
    TransactionStateError,
)
from kproto.protocol import APIS, ApiKey
from kproto.protocol import messages as m
from kproto.structs import ConsumerGroupMetadata
from tests.support.proxy import FORWARD, Edit, FaultProxy, Later

DEADLINE = 20
_COORDINATOR_APIS = {ApiKey.ADD_PARTITIONS_TO_TXN: 3, ApiKey.ADD_OFFSETS_TO_TXN: 3, ApiKey.END_TXN: 4,
                     ApiKey.TXN_OFFSET_COMMIT: 3}


class FakeCoordinator:
    """A transaction coordinator answering in the proxy; see the module docstring.

    ``errors[api_key]``: error codes for the next answers of that API, one per answer
    (then success). ``delays[api_key]``: seconds to hold the next answer. ``seen``: the
    coordinator requests in order, as ``(api name, body)``.
    """

    def __init__(self) -> None:
        self.port = 0
        self.producer_id, self.epoch = 4000, -1
        self.errors: dict[int, list[int]] = {}
        self.delays: dict[int, float] = {}
        self.seen: list[tuple[str, object]] = []
        self.batches: list[tuple[bool, int, int, int]] = []  # Produce's: (transactional, producer id, epoch, sequence)
        self.lock = threading.Lock()

    def names(self):
        with self.lock:
            return [name for name, _ in self.seen]

    def _error(self, key):
        codes = self.errors.get(key)
        return codes.pop(0) if codes else 0

    def _answer(self, key, body):
        delay = self.delays.pop(key, 0)
        return Later(delay, body) if delay else body

    def __call__(self, key, version, body, n):
        if key == ApiKey.API_VERSIONS:
            return Edit(self._advertise)
        if key == ApiKey.FIND_COORDINATOR and body.key_type == 1:
            with self.lock:
                self.seen.append(("FindCoordinator", body))
            if version >= 4:
                return m.FindCoordinatorResponse(coordinators=[m.FindCoordinatorResponse.Coordinator(
                    key=body.coordinator_keys[0], node_id=0, host="127.0.0.1", port=self.port, error_code=0)])
            return m.FindCoordinatorResponse(error_code=0, node_id=0, host="127.0.0.1", port=self.port)
        if key not in (ApiKey.INIT_PRODUCER_ID, ApiKey.PRODUCE, *_COORDINATOR_APIS):
            return FORWARD
        if key == ApiKey.INIT_PRODUCER_ID and body.transactional_id is None:
            return FORWARD  # an idempotent producer's: minibroker's own
        if key == ApiKey.PRODUCE:
            with self.lock:
                for t in body.topic_data:
                    for p in t.partition_data:
                        h = read_batch_header(p.records)
                        self.batches.append((h.is_transactional, h.producer_id, h.producer_epoch, h.base_sequence))
            code = self._error(key)
            if not code:
                return FORWARD
            return m.ProduceResponse(responses=[m.ProduceResponse.TopicProduceResponse(name=t.name, partition_responses=[
                m.ProduceResponse.PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1)
                for p in t.partition_data]) for t in body.topic_data])
        with self.lock:
            self.seen.append((APIS[key].name, body))
        code = self._error(key)
        if key == ApiKey.INIT_PRODUCER_ID:
            if not code:
                self.epoch = body.producer_epoch + 1 if body.producer_id >= 0 else self.epoch + 1
            return self._answer(key, m.InitProducerIdResponse(error_code=code, producer_id=-1 if code else self.producer_id,
                                                             producer_epoch=-1 if code else self.epoch))
        if key == ApiKey.ADD_PARTITIONS_TO_TXN:
            R = m.AddPartitionsToTxnResponse
            return self._answer(key, R(results_by_topic_v3_and_below=[R.AddPartitionsToTxnTopicResult(
                name=t.name, results_by_partition=[R.AddPartitionsToTxnPartitionResult(
                    partition_index=p, partition_error_code=code) for p in t.partitions])
                for t in body.v3_and_below_topics]))
        if key == ApiKey.TXN_OFFSET_COMMIT:
            R = m.TxnOffsetCommitResponse
            return self._answer(key, R(topics=[R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
                R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                for p in t.partitions]) for t in body.topics]))
        if key == ApiKey.ADD_OFFSETS_TO_TXN:
            return self._answer(key, m.AddOffsetsToTxnResponse(error_code=code))
        return self._answer(key, m.EndTxnResponse(error_code=code))

    @staticmethod
    def _advertise(response):
        have = {k.api_key for k in response.api_keys}
        response.api_keys.extend(m.ApiVersionsResponse.ApiVersion(api_key=k, min_version=0, max_version=v)
                                 for k, v in _COORDINATOR_APIS.items() if k not in have)
        return response


@pytest.fixture
def coordinator():
    fake = FakeCoordinator()
    # The fake plays a Kafka 3.x coordinator in front of the broker: the broker behind has no
    # transaction of its own to verify a batch against (KIP-890 part 1 off) and finalizes no
    # transaction version 2 (issue 14 step 2).
    with FaultProxy(fake, **{"transaction.partition.verification.enable": False, "transaction.version": 0}) as proxy:
        fake.port = proxy.port
        fake.bootstrap_servers = proxy.bootstrap_servers
        with Producer(bootstrap_servers=proxy.bootstrap_servers) as plain:  # creates the topic
            plain.send("t", b"warm-up", partition=0).result(DEADLINE)
        yield fake


def producer_of(fake, **config):
    return Producer(bootstrap_servers=fake.bootstrap_servers, transactional_id="txn-faults", **config)


def wait_for(done):
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_an_abort_while_partitions_are_being_added_still_ends_the_transaction(coordinator):
    """The coordinator has the partition once AddPartitionsToTxn is answered, even after
    the abort began: the abort waits for that answer and sends EndTxn, instead of finding
    nothing added and leaving the coordinator's transaction open until it times out."""
    coordinator.delays[ApiKey.ADD_PARTITIONS_TO_TXN] = 0.5
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        record = producer.send("t", b"x", partition=0)
        wait_for(lambda: "AddPartitionsToTxn" in coordinator.names())
        producer.abort_transaction()
        assert record.exception() is not None  # never sent: its partition was not added yet
    assert coordinator.names() == ["FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "EndTxn"]
    assert coordinator.seen[-1][1].committed is False


def test_retriable_coordinator_errors_are_retried_inside(coordinator):
    coordinator.errors[ApiKey.INIT_PRODUCER_ID] = [CoordinatorLoadInProgressError.code] * 2
    coordinator.errors[ApiKey.ADD_PARTITIONS_TO_TXN] = [ConcurrentTransactionsError.code]
    coordinator.errors[ApiKey.END_TXN] = [NotCoordinatorError.code]
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        with producer.transaction():
            record = producer.send("t", b"x", partition=0)
        assert record.result().offset > 0
    assert coordinator.names() == ["FindCoordinator", "InitProducerId", "InitProducerId", "InitProducerId",
                                   "AddPartitionsToTxn", "AddPartitionsToTxn", "EndTxn",
                                   "FindCoordinator", "EndTxn"]  # NOT_COORDINATOR: looked up again


def test_a_failed_batch_fails_the_commit_and_the_abort_bumps_the_epoch(coordinator):
    """Java's commitTransaction raises the first send error (abortable); the abort ends the
    transaction and bumps the epoch with InitProducerId(producer id, epoch) (KIP-360), so
    the next transaction's sequences start at 0 under the new epoch."""
    coordinator.errors[ApiKey.PRODUCE] = [InvalidTimestampError.code]
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        failed = producer.send("t", b"x", partition=0)
        with pytest.raises(InvalidTimestampError) as raised:
            producer.commit_transaction()
        assert raised.value.txn_requires_abort and not raised.value.fatal
        assert isinstance(failed.exception(), InvalidTimestampError)
        with pytest.raises(InvalidTimestampError, match="abort"):
            producer.send("t", b"y", partition=0)  # every call says so until the abort
        producer.abort_transaction()
        with producer.transaction():
            ok = producer.send("t", b"z", partition=0)
        assert ok.result().offset > 0
    bump = [body for name, body in coordinator.seen if name == "InitProducerId"][-1]
    assert (bump.producer_id, bump.producer_epoch) == (4000, 0) and coordinator.epoch == 1
    # Transactional batches; the failed one at epoch 0, the next under the new epoch from sequence 0.
    assert coordinator.batches[-2:] == [(True, 4000, 0, 0), (True, 4000, 1, 0)]
    ends = [body.committed for name, body in coordinator.seen if name == "EndTxn"]
    assert ends == [False, True]


def test_a_fatal_init_error_is_raised_and_stays(coordinator):
    coordinator.errors[ApiKey.INIT_PRODUCER_ID] = [TransactionalIdAuthorizationFailedError.code]
    with producer_of(coordinator) as producer:
        with pytest.raises(TransactionalIdAuthorizationFailedError) as raised:
            producer.init_transactions()
        assert raised.value.fatal
        with pytest.raises(TransactionalIdAuthorizationFailedError, match="close it"):
            producer.begin_transaction()


def test_fenced_on_end_txn_is_fatal(coordinator):
    coordinator.errors[ApiKey.END_TXN] = [ProducerFencedError.code]
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("t", b"x", partition=0)
        with pytest.raises(ProducerFencedError) as raised:
            producer.commit_transaction()
        assert raised.value.fatal


def test_a_commit_that_times_out_goes_on_and_is_waited_for_by_the_next_call(coordinator):
    """Java's handleCachedTransactionRequestResult: the same call again waits for the
    same work; one EndTxn is sent."""
    coordinator.delays[ApiKey.END_TXN] = 1.0
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("t", b"x", partition=0)
        with pytest.raises(KafkaTimeoutError, match="call commit_transaction again"):
            producer.commit_transaction(timeout=0.2)
        producer.commit_transaction()
        producer.begin_transaction()  # READY again
        producer.abort_transaction()
    assert coordinator.names().count("EndTxn") == 1


def test_offsets_carry_the_group_s_generation_and_a_fenced_generation_is_abortable(coordinator):
    """KIP-447: TxnOffsetCommit v3+ carries generation, member id and instance id; the group
    coordinator's ILLEGAL_GENERATION aborts the transaction, not the producer."""
    coordinator.errors[ApiKey.TXN_OFFSET_COMMIT] = [IllegalGenerationError.code]
    group = ConsumerGroupMetadata(group_id="g", generation_id=3, member_id="m-1", group_instance_id="i-1")
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        with pytest.raises(IllegalGenerationError) as raised:
            producer.send_offsets_to_transaction({TopicPartition("t", 0): 7}, group)
        assert raised.value.txn_requires_abort
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send_offsets_to_transaction({TopicPartition("t", 0): 7}, group)
        producer.commit_transaction()
    commits = [body for name, body in coordinator.seen if name == "TxnOffsetCommit"]
    assert [(c.group_id, c.generation_id, c.member_id, c.group_instance_id) for c in commits] == \
        [("g", 3, "m-1", "i-1")] * 2
    assert commits[-1].topics[0].partitions[0].committed_offset == 7
    assert coordinator.names() == ["FindCoordinator", "InitProducerId", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn",
                                   "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"]
    assert [body.committed for name, body in coordinator.seen if name == "EndTxn"] == [False, True]


def test_after_a_timed_out_commit_that_ended_the_next_transaction_commits_anew(coordinator):
    """A commit that timed out and then ended is not what the next transaction's commit
    gets: begin_transaction() starts afresh, and its commit sends its own EndTxn."""
    coordinator.delays[ApiKey.END_TXN] = 0.5
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("t", b"first", partition=0)
        with pytest.raises(KafkaTimeoutError):
            producer.commit_transaction(timeout=0.1)
        wait_for(lambda: producer._core._idempotence.state.name == "READY")  # the commit ended meanwhile
        producer.begin_transaction()
        second = producer.send("t", b"second", partition=0)
        producer.commit_transaction()
        assert second.result().offset > 0
    assert [body.committed for name, body in coordinator.seen if name == "EndTxn"] == [True, True]


def test_send_offsets_with_other_offsets_while_one_still_runs_is_refused(coordinator):
    coordinator.delays[ApiKey.ADD_OFFSETS_TO_TXN] = 0.5
    group = ConsumerGroupMetadata(group_id="g")
    with producer_of(coordinator) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        with pytest.raises(KafkaTimeoutError):
            producer.send_offsets_to_transaction({TopicPartition("t", 0): 1}, group, timeout=0.1)
        with pytest.raises(TransactionStateError, match="still running"):
            producer.send_offsets_to_transaction({TopicPartition("t", 0): 2}, group)
        producer.send_offsets_to_transaction({TopicPartition("t", 0): 1}, group)  # the same: waits for it
        producer.commit_transaction()
    assert coordinator.names().count("TxnOffsetCommit") == 1
