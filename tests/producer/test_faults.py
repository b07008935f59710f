"""The producer under faults injected between it and minibroker (tests/support/proxy.py):
lost acknowledgements, a broker that forgot the producer id, leader changes, sequence
gaps, errors that cannot be retried or keep coming, and a broker that stops answering.
Idempotence must deliver every record once, in order."""

import asyncio
import contextlib
import threading
import time

import pytest

from kproto import Producer
from kproto.codec import read_batches
from kproto.errors import (
    ClusterAuthorizationFailedError,
    InvalidProducerEpochError,
    KafkaTimeoutError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownProducerIdError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import InitProducerIdResponse, ProduceResponse
from minibroker import MiniBroker
from tests.support.proxy import FORWARD, LOSE_ACK, Edit, FaultProxy, Later

kafka = pytest.importorskip("kafka")

RECORDS = 300


def error_response(request, code):
    """A Produce response failing every partition of ``request`` with ``code``."""
    return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name=t.name, partition_responses=[
        ProduceResponse.PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1)
        for p in t.partition_data]) for t in request.topic_data])


def produce_all(bootstrap, **config):
    with Producer(bootstrap_servers=bootstrap, batch_size=1000, linger_ms=0, retry_backoff_ms=10,
                  reconnect_backoff_ms=10, **config) as producer:
        futures = [producer.send("faults", b"%04d" % i, partition=0) for i in range(RECORDS)]
        producer.flush(20)
        return futures


def stored_values(proxy):
    consumer = kafka.KafkaConsumer(bootstrap_servers=proxy.bootstrap_servers, enable_auto_commit=False,
                                   consumer_timeout_ms=1000)
    try:
        tp = kafka.TopicPartition("faults", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [m.value for m in consumer]
    finally:
        consumer.close()


def batches_written(proxy):
    """The batches of ``faults``-0 as the broker stored them."""
    log = proxy.broker._server.state.topics["faults"].partitions[0].log
    return list(read_batches(log.read(0, 1 << 24)))


def delivered_exactly_once_in_order(proxy, futures):
    return ([f.result(0).offset for f in futures] == list(range(RECORDS))
            and stored_values(proxy) == [b"%04d" % i for i in range(RECORDS)])


def fail_produce(number, code=None, lose_ack=False):
    def rule(api_key, version, request, n):
        if api_key == ApiKey.PRODUCE and n == number:
            return LOSE_ACK if lose_ack else error_response(request, code)
        return FORWARD
    return rule


@pytest.mark.parametrize("fault", ["lost ack", "unknown producer id", "not leader"])
def test_idempotent_delivery_survives_the_fault_exactly_once_in_order(fault):
    rule = {
        "lost ack": fail_produce(2, lose_ack=True),
        "unknown producer id": fail_produce(2, UnknownProducerIdError.code),
        "not leader": fail_produce(2, NotLeaderOrFollowerError.code),
    }[fault]
    with FaultProxy(rule) as proxy:
        futures = produce_all(proxy.bootstrap_servers)
        assert delivered_exactly_once_in_order(proxy, futures)
        if fault == "unknown producer id":
            assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 1  # the producer bumped its epoch itself
            epochs = [b.producer_epoch for b in batches_written(proxy)]
            assert epochs[0] == 0 and epochs[-1] == 1 and epochs == sorted(epochs)
        if fault == "not leader":
            assert proxy.counts[ApiKey.METADATA] >= 2  # the leader was looked up again


def test_a_broker_refusing_client_bumped_epochs_gets_asked_for_a_new_producer_id():
    """After a reset, a broker that refuses the epoch the producer bumped itself (as some
    Kafka-compatible brokers do) must not make every batch bump again until the records
    expire: the next reset asks InitProducerId for a new producer id."""
    def rule(api_key, version, request, n):
        if api_key == ApiKey.PRODUCE:
            if n == 2:
                return error_response(request, UnknownProducerIdError.code)
            batch = next(read_batches(request.topic_data[0].partition_data[0].records))
            if batch.producer_epoch > 0:
                return error_response(request, InvalidProducerEpochError.code)
        return FORWARD

    with FaultProxy(rule) as proxy:
        futures = produce_all(proxy.bootstrap_servers)
        assert delivered_exactly_once_in_order(proxy, futures)
        assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 2
        ids = [b.producer_id for b in batches_written(proxy)]
        assert len(set(ids)) == 2 and ids == sorted(ids)  # the first id, then a new one


def test_batches_made_while_the_connection_opens_reach_the_broker_in_sequence_order():
    """The first requests to a broker wait for its connection: they must still go out in
    the order their sequences were stamped (the broker refuses a gap), however the
    waiting and the new batches interleave."""
    arrivals = []

    def rule(api_key, version, request, n):
        if api_key == ApiKey.API_VERSIONS and n % 2 == 0:
            time.sleep(0.2)  # each producer's connection to the leader opens slowly
        if api_key == ApiKey.PRODUCE:
            for t in request.topic_data:
                for p in t.partition_data:
                    arrivals.append((t.name, p.index, next(read_batches(p.records)).base_sequence))
        return FORWARD

    with FaultProxy(rule, **{"num.partitions": 2}) as proxy:
        for round_ in range(3):
            topic = f"order-{round_}"
            with Producer(bootstrap_servers=proxy.bootstrap_servers, batch_size=200, linger_ms=0) as producer:
                producer.partitions_for(topic)
                futures = []
                for i in range(60):  # records keep coming (and waking the sender) while it connects
                    futures.append(producer.send(topic, b"%030d" % i, partition=i % 2))
                    time.sleep(0.005)
                producer.flush(20)
            assert [f.result(0).offset for f in futures] == [i // 2 for i in range(60)]
        assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 3  # one per producer: no reset was needed
    for key in {(t, p) for t, p, _ in arrivals}:
        sequences = [s for t, p, s in arrivals if (t, p) == key]
        assert sequences == sorted(sequences), (key, sequences)


def test_an_exhausted_epoch_gets_a_new_producer_id_instead_of_overflowing():
    """Epochs are int16: a reset at epoch 32767 asks InitProducerId for a new producer id."""
    def last_epoch(body):
        body.producer_epoch = 32767
        return body

    def rule(api_key, version, request, n):
        if api_key == ApiKey.INIT_PRODUCER_ID and n == 1:
            return Edit(last_epoch)
        if api_key == ApiKey.PRODUCE and n == 2:
            return error_response(request, UnknownProducerIdError.code)
        return FORWARD

    with FaultProxy(rule) as proxy:
        futures = produce_all(proxy.bootstrap_servers)
        assert delivered_exactly_once_in_order(proxy, futures)
        assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 2
        stamps = [(b.producer_id, b.producer_epoch) for b in batches_written(proxy)]
        assert stamps[0][1] == 32767 and stamps[-1][1] == 0 and stamps[-1][0] != stamps[0][0]


def test_an_error_that_cannot_be_retried_fails_only_its_records():
    with FaultProxy(fail_produce(1, TopicAuthorizationFailedError.code)) as proxy:
        futures = produce_all(proxy.bootstrap_servers, max_in_flight_requests_per_connection=1)
        failed = [f for f in futures if f.exception() is not None]
        assert failed and all(isinstance(f.exception(), TopicAuthorizationFailedError) for f in failed)
        delivered = [f.result().offset for f in futures if f.exception() is None]
        assert len(failed) + len(delivered) == RECORDS
        assert delivered == list(range(len(delivered)))  # the rest went on, under the next epoch
        assert len(stored_values(proxy)) == len(delivered)


def test_producer_fenced_is_fatal_every_record_not_acknowledged_fails_with_it():
    """Issue 12, producer idempotence: PRODUCER_FENCED is fatal, as in Java's
    TransactionManager (no new epoch repairs it): the records acknowledged before it stay
    delivered, every other one fails with the error, and so does every later send."""
    with FaultProxy(fail_produce(2, ProducerFencedError.code)) as proxy:
        with Producer(bootstrap_servers=proxy.bootstrap_servers, batch_size=1000, linger_ms=0,
                      retry_backoff_ms=10, max_in_flight_requests_per_connection=1) as producer:
            futures = [producer.send("faults", b"%04d" % i, partition=0) for i in range(RECORDS)]
            producer.flush(20)
            with pytest.raises(ProducerFencedError):
                producer.send("faults", b"later", partition=0).result(10)
        delivered = [f.result(0).offset for f in futures if f.exception(0) is None]
        failed = [f.exception(0) for f in futures if f.exception(0) is not None]
        assert delivered == list(range(len(delivered))) and 0 < len(delivered) < RECORDS
        assert all(isinstance(e, ProducerFencedError) for e in failed) and len(failed) + len(delivered) == RECORDS
        assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 1 and proxy.counts[ApiKey.PRODUCE] == 2
        assert len(stored_values(proxy)) == len(delivered)


def test_cluster_authorization_failed_for_a_producer_id_is_fatal():
    """Issue 12, producer idempotence: InitProducerId answered CLUSTER_AUTHORIZATION_FAILED
    (the producer may not write idempotently) fails the records with that error at once,
    as Java's producer does, instead of asking again until delivery.timeout.ms."""
    def rule(api_key, version, request, n):
        if api_key == ApiKey.INIT_PRODUCER_ID:
            return InitProducerIdResponse(error_code=ClusterAuthorizationFailedError.code, producer_id=-1,
                                          producer_epoch=-1)
        return FORWARD

    with FaultProxy(rule) as proxy:
        with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=0, retry_backoff_ms=10) as producer:
            future = producer.send("faults", b"x", partition=0)
            with pytest.raises(ClusterAuthorizationFailedError):
                future.result(10)
            with pytest.raises(ClusterAuthorizationFailedError):
                producer.send("faults", b"later", partition=0).result(10)
        assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 1 and ApiKey.PRODUCE not in proxy.counts


# -- helpers for the tests below ----------------------------------------------------------

EARLY = 0.05  # timers may fire up to a clock tick early


def base_sequences(request):
    """The base sequence of every batch in a Produce request."""
    return [b.base_sequence for t in request.topic_data for p in t.partition_data for b in read_batches(p.records)]


def never_answer_produce(api_key, version, request, n):
    """A broker that stops answering at the first Produce: its answer (and so, in order,
    every later response on that connection) is held for an hour."""
    if api_key == ApiKey.PRODUCE:
        return Later(3600, error_response(request, RequestTimedOutError.code))
    return FORWARD


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


# -- OUT_OF_ORDER_SEQUENCE_NUMBER and the epoch bump ----------------------------------------

def test_out_of_order_sequence_behind_a_failed_batch_is_retried_in_order_without_a_new_epoch():
    """The sender's docstring: OUT_OF_ORDER_SEQUENCE for a batch after an earlier failed one
    is a retry in waiting. A later batch is failed (slowly, so the ones after it are already
    on the wire), the next one is answered OUT_OF_ORDER_SEQUENCE, the rest get it from the
    broker itself; all are retried in sequence order under the same epoch."""
    seen = {"failed": None, "out_of_order": None}

    def rule(api_key, version, request, n):
        if api_key != ApiKey.PRODUCE:
            return FORWARD
        (seq,) = base_sequences(request)
        if seen["failed"] is None and seq > 0:
            seen["failed"] = seq
            # a slow answer: the next batches are on the wire before it comes
            return Later(0.3, error_response(request, NotEnoughReplicasError.code))
        if seen["failed"] is not None and seen["out_of_order"] is None and seq > seen["failed"]:
            seen["out_of_order"] = seq
            return error_response(request, OutOfOrderSequenceNumberError.code)
        return FORWARD

    with FaultProxy(rule) as proxy:
        futures = produce_all(proxy.bootstrap_servers)
        assert delivered_exactly_once_in_order(proxy, futures)
        assert seen["out_of_order"] is not None  # the fault did happen
        assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 1
        assert {b.producer_epoch for b in batches_written(proxy)} == {0}  # repaired by retrying, not by a new epoch


def test_a_sequence_gap_the_sender_cannot_repair_bumps_the_epoch_and_delivers_exactly_once():
    """OUT_OF_ORDER_SEQUENCE with no earlier batch failed: the broker lost a sequence, so the
    producer moves to the next epoch and restarts at sequence 0 (KIP-360), without asking a
    broker for a new producer id."""
    seen = []

    def rule(api_key, version, request, n):
        if api_key == ApiKey.PRODUCE and not seen:
            (seq,) = base_sequences(request)
            if seq > 0:
                seen.append(seq)
                return error_response(request, OutOfOrderSequenceNumberError.code)
        return FORWARD

    with FaultProxy(rule) as proxy:
        futures = produce_all(proxy.bootstrap_servers)
        assert delivered_exactly_once_in_order(proxy, futures)
        assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 1
        batches = batches_written(proxy)
        assert {b.producer_id for b in batches} == {batches[0].producer_id}
        epochs = [b.producer_epoch for b in batches]
        assert epochs[0] == 0 and epochs[-1] == 1 and epochs == sorted(epochs)
        bumped = [b for b in batches if b.producer_epoch == 1]
        assert bumped[0].base_sequence == 0  # the new epoch starts over


# -- retries and backoff --------------------------------------------------------------------

@pytest.mark.parametrize("retries", [0, 6])
def test_retries_bound_the_attempts_and_the_backoff_doubles_up_to_its_max(retries):
    """retries=N: N + 1 Produce requests, then the broker's typed error; between attempts
    retry.backoff.ms doubles up to retry.backoff.max.ms (lower bounds are firm, upper
    bounds loose: timers fire late on a busy machine, never early)."""
    arrivals = []

    def rule(api_key, version, request, n):
        if api_key == ApiKey.PRODUCE:
            arrivals.append(time.monotonic())
            return error_response(request, NotEnoughReplicasError.code)
        return FORWARD

    with FaultProxy(rule) as proxy:
        with Producer(bootstrap_servers=proxy.bootstrap_servers, retries=retries, retry_backoff_ms=40,
                      retry_backoff_max_ms=160, linger_ms=0) as producer:
            future = producer.send("retries", b"x", partition=0)
            with pytest.raises(NotEnoughReplicasError):
                future.result(10)
    assert len(arrivals) == retries + 1
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    wanted = [min(0.04 * 2 ** i, 0.16) for i in range(retries)]  # 40, 80, 160, 160, ... ms
    assert all(gap >= want - EARLY for gap, want in zip(gaps, wanted)), gaps
    if retries:
        # capped: uncapped doubling would take 0.32 + 0.64 + 1.28 s for the last three
        assert sum(gaps[3:]) < 1.2, gaps


# -- close and flush that cannot finish -----------------------------------------------------

@contextlib.contextmanager
def broker_that(behaves):
    """A broker address and a callable making it ``silent`` (requests on the wire are never
    answered) or ``unreachable`` (stopped: connections are refused), plus its Produce count."""
    if behaves == "silent":
        with FaultProxy(never_answer_produce) as proxy:
            yield proxy.bootstrap_servers, lambda: None, lambda: proxy.counts.get(ApiKey.PRODUCE, 0)
    else:
        broker = MiniBroker()
        broker.start()
        try:
            yield broker.bootstrap_servers, broker.stop, lambda: 0
        finally:
            broker.stop()


@pytest.mark.parametrize("behaves", ["silent", "unreachable"])
def test_close_gives_up_after_its_timeout_and_fails_what_was_not_delivered(behaves):
    """A broker that never answers (a request is on the wire) or cannot be reached (records
    stay queued): flush(timeout) raises KafkaTimeoutError and leaves the records pending;
    close(timeout) returns in about its timeout and fails them with KafkaTimeoutError."""
    with broker_that(behaves) as (bootstrap, fault, produce_requests):
        producer = Producer(bootstrap_servers=bootstrap, linger_ms=0, reconnect_backoff_ms=20,
                            max_in_flight_requests_per_connection=1)
        try:
            producer.partitions_for("stuck")
            fault()
            futures = [producer.send("stuck", b"%d" % i, partition=0) for i in range(3)]
            if behaves == "silent":
                wait_until(produce_requests)  # the first batch is on the wire, the others queued
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match="flush"):
                producer.flush(0.3)
            assert 0.3 - EARLY <= time.monotonic() - started < 1.5
            assert not any(f.done() for f in futures)  # a flush that gives up fails nothing
            started = time.monotonic()
            producer.close(0.4)
            assert time.monotonic() - started < 1.6
        finally:
            producer.close(0)
        for f in futures:
            assert isinstance(f.exception(0), KafkaTimeoutError)


def test_a_bug_in_the_sender_fails_every_record_loudly_instead_of_leaving_them_pending(monkeypatch, caplog):
    """No silent loss: should the sender's loop ever raise something unexpected, every
    record still waiting fails with the cause, and later sends raise."""
    from kproto.errors import ClientClosedError, KafkaError
    from kproto.producer.sender import Sender

    sent = threading.Event()

    async def broken_step(self):
        while not sent.is_set():  # every record is in before the failure, so none is refused at send
            await asyncio.sleep(0.01)
        raise RuntimeError("a bug")

    with MiniBroker() as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=50) as producer:
            producer.partitions_for("bug")
            monkeypatch.setattr(Sender, "_step", broken_step)  # fault injection: the next step fails
            futures = [producer.send("bug", b"%d" % i, partition=0) for i in range(10)]
            sent.set()
            for future in futures:
                with pytest.raises(KafkaError, match="sender failed: RuntimeError"):
                    future.result(5)
            with pytest.raises(ClientClosedError):
                producer.send("bug", b"late", partition=0)
    assert "the sender failed" in caplog.text


def test_records_in_flight_when_the_sender_fails_fail_too_and_flush_does_not_hang(monkeypatch):
    """A request answered (with a retriable error) after the sender stopped is not queued
    again for nobody: its records fail with the sender's failure, and flush says so."""
    from kproto.errors import KafkaError, NotEnoughReplicasError
    from kproto.producer.sender import Sender

    real_step = Sender._step
    in_flight = threading.Event()

    async def step_then_break(self):
        if in_flight.is_set() and self.acc.unsettled >= 2:  # once the second record is queued
            raise RuntimeError("a bug")
        return await real_step(self)

    def rule(api_key, version, request, n):
        if api_key == ApiKey.PRODUCE and n == 1:
            in_flight.set()
            return Later(0.5, error_response(request, NotEnoughReplicasError.code))
        return FORWARD

    monkeypatch.setattr(Sender, "_step", step_then_break)
    with FaultProxy(rule) as proxy:
        with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=0, retry_backoff_ms=10) as producer:
            first = producer.send("faults", b"in flight", partition=0)
            assert in_flight.wait(5)
            second = producer.send("faults", b"queued", partition=0)  # wakes the sender: it breaks
            with pytest.raises(KafkaError, match="sender failed"):
                producer.flush(5)  # says so at once rather than waiting for ever
            with pytest.raises(KafkaError, match="sender failed"):
                second.result(0)
            with pytest.raises(KafkaError, match="sender failed"):
                first.result(5)  # answered later with a retriable error: failed, not queued for nobody


def test_a_retry_in_flight_fails_when_its_delivery_timeout_passes_not_a_request_timeout_later():
    """Issue 10 item 14: delivery.timeout.ms bounds a batch in flight too (Java's Sender
    expires in-flight batches). The first attempt is answered late with a retriable error,
    the retry is never answered: the record fails at its delivery timeout (3 s), not a
    whole request timeout (2.9 s) after the retry went out."""
    def rule(api_key, version, request, n):
        if api_key == ApiKey.PRODUCE:
            if n == 1:
                return Later(2.5, error_response(request, NotEnoughReplicasError.code))
            return Later(3600, error_response(request, RequestTimedOutError.code))
        return FORWARD

    with FaultProxy(rule) as proxy:
        with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=0, retry_backoff_ms=10,
                      request_timeout_ms=2900, delivery_timeout_ms=3000) as producer:
            producer.partitions_for("expiring")
            started = time.monotonic()
            future = producer.send("expiring", b"x", partition=0)
            with pytest.raises(KafkaTimeoutError, match="delivery.timeout.ms"):
                future.result(10)
            assert time.monotonic() - started < 3.0 + 1.5
            assert proxy.counts[ApiKey.PRODUCE] == 2
            producer.close(0)
