"""The producer under faults injected between it and minibroker (tests/clients/proxy.py):
lost acknowledgements, a broker that forgot the producer id, leader changes, and errors
that cannot be retried. Idempotence must deliver every record once, in order."""

import pytest

from kproto import Producer
from kproto.codec import read_batches
from kproto.errors import (
    NotLeaderOrFollowerError,
    TopicAuthorizationFailedError,
    UnknownProducerIdError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import ProduceResponse
from tests.clients.proxy import FORWARD, LOSE_ACK, FaultProxy

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


def epochs_written(proxy):
    log = proxy.broker._server.state.topics["faults"].partitions[0]
    return [b.producer_epoch for b in read_batches(log.read(0, 1 << 24))]


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
        offsets = [f.result(0).offset for f in futures]
        assert offsets == list(range(RECORDS))
        assert stored_values(proxy) == [b"%04d" % i for i in range(RECORDS)]
        if fault == "unknown producer id":
            assert proxy.counts[ApiKey.INIT_PRODUCER_ID] == 1  # the producer bumped its epoch itself
            epochs = epochs_written(proxy)
            assert epochs[0] == 0 and epochs[-1] == 1 and epochs == sorted(epochs)
        if fault == "not leader":
            assert proxy.counts[ApiKey.METADATA] >= 2  # the leader was looked up again


def test_an_error_that_cannot_be_retried_fails_only_its_records():
    with FaultProxy(fail_produce(1, TopicAuthorizationFailedError.code)) as proxy:
        futures = produce_all(proxy.bootstrap_servers, max_in_flight_requests_per_connection=1)
        failed = [f for f in futures if f.exception() is not None]
        assert failed and all(isinstance(f.exception(), TopicAuthorizationFailedError) for f in failed)
        delivered = [f.result().offset for f in futures if f.exception() is None]
        assert len(failed) + len(delivered) == RECORDS
        assert delivered == list(range(len(delivered)))  # the rest went on, under the next epoch
        assert len(stored_values(proxy)) == len(delivered)
