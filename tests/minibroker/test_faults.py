"""Request controls on a single MiniBroker, with real clients (issue 13 step 2, "Faults").

A control matches requests by API key (and client id) and delays, fails, drops or holds
them, counted; kproto's and confluent-kafka's producers are the clients that must cope.
:func:`~minibroker.faults.error_response` (Kafka's ``getErrorResponse``) is checked on the
requests whose shapes differ most.
"""

import logging
import time
import uuid

import pytest

from kproto.errors import (
    CoordinatorNotAvailableError,
    NotLeaderOrFollowerError,
)
from kproto.protocol import ApiKey, request_class
from minibroker.faults import Delay, Drop, Fail, Hold, error_response

TOPIC = "t"


def _read_all(bootstrap, topic, n, timeout=10):
    """Every record of partition 0, read with kproto's consumer until ``n`` are there (and
    a little after, to see any extra)."""
    from kproto import Consumer
    from kproto.structs import TopicPartition
    got = []
    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        got += [r.value for r in consumer.poll(0.3)]
    return got


def _wait(check, timeout=10):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.01)


def test_kproto_producer_retries_two_failed_produces_and_writes_the_record_once(broker):
    """Fail(NOT_LEADER_OR_FOLLOWER) twice, then success: the client retries, the record is
    written once, and both controls counted what they saw."""
    from kproto import Producer
    failing = broker.requests.control(ApiKey.PRODUCE, Fail(NotLeaderOrFollowerError), times=2)
    counting = broker.requests.control(ApiKey.PRODUCE)
    with Producer(bootstrap_servers=broker.bootstrap_servers, acks="all", enable_idempotence=True,
                  retry_backoff_ms=20) as producer:
        assert producer.send(TOPIC, b"once", partition=0).result(15).offset == 0
    assert failing.count == 2 and not failing.active  # spent
    assert counting.count == 3 and counting.active
    assert _read_all(broker.bootstrap_servers, TOPIC, 1) == [b"once"]


def test_confluent_kafka_retries_two_failed_produces_and_writes_the_record_once(broker):
    ck = pytest.importorskip("confluent_kafka")
    failing = broker.requests.control(ApiKey.PRODUCE, Fail(NotLeaderOrFollowerError.code), times=2)
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                            "retry.backoff.ms": 20})
    delivered = []
    producer.produce(TOPIC, value=b"once", partition=0, on_delivery=lambda err, msg: delivered.append(
        (err, msg.offset())))
    assert producer.flush(15) == 0
    assert delivered == [(None, 0)]
    assert failing.count == 2
    assert _read_all(broker.bootstrap_servers, TOPIC, 1) == [b"once"]


def test_hold_keeps_the_answer_until_release(broker):
    """Hold: the request is handled (the record is written) but its answer waits for
    release(); the client's later requests on that connection wait behind it."""
    from kproto import Producer
    with Producer(bootstrap_servers=broker.bootstrap_servers, acks=1) as producer:
        producer.send(TOPIC, b"first", partition=0).result(10)  # the topic and the connection exist
        held = broker.requests.control(ApiKey.PRODUCE, Hold())
        future = producer.send(TOPIC, b"held", partition=0)
        _wait(lambda: held.held == 1)
        time.sleep(0.2)
        assert not future.done()
        held.release()
        assert future.result(10).offset == 1
        assert producer.send(TOPIC, b"after", partition=0).result(10).offset == 2  # released: no more holding
    assert held.count == 2 and held.held == 0
    held.remove()
    assert not held.active


def test_a_hold_with_times_holds_its_last_request_too_until_release(broker):
    """A Hold spent after ``times`` requests matches no more, but keeps what it holds, the
    request that spent it included, until release()."""
    from kproto import Producer
    with Producer(bootstrap_servers=broker.bootstrap_servers, acks=1) as producer:
        producer.send(TOPIC, b"first", partition=0).result(10)
        held = broker.requests.control(ApiKey.PRODUCE, Hold(), times=1)
        future = producer.send(TOPIC, b"held", partition=0)
        _wait(lambda: held.held == 1)
        assert not held.active  # spent: the next request is not matched
        time.sleep(0.2)
        assert not future.done()
        held.release()
        assert future.result(10).offset == 1


def test_drop_makes_the_client_time_out_and_retry_on_a_new_connection(broker):
    """Drop once: no answer ever comes on that connection; the producer's request times
    out (request.timeout.ms), it reconnects and its retry is written once."""
    from kproto import Producer
    dropped = broker.requests.control(ApiKey.PRODUCE, Drop(), times=1)
    started = time.monotonic()
    with Producer(bootstrap_servers=broker.bootstrap_servers, acks="all", enable_idempotence=True,
                  request_timeout_ms=500, retry_backoff_ms=20) as producer:
        assert producer.send(TOPIC, b"once", partition=0).result(15).offset == 0
    assert time.monotonic() - started >= 0.5  # it waited for its request timeout
    assert dropped.count == 1
    assert _read_all(broker.bootstrap_servers, TOPIC, 1) == [b"once"]


def test_confluent_kafka_sees_a_timeout_while_every_produce_is_dropped(broker):
    ck = pytest.importorskip("confluent_kafka")
    admin_producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
    admin_producer.produce(TOPIC, value=b"x", partition=0)
    assert admin_producer.flush(10) == 0  # the topic exists
    dropping = broker.requests.control(ApiKey.PRODUCE, Drop())
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 1500,
                            "request.timeout.ms": 500})
    errors = []
    producer.produce(TOPIC, value=b"lost", partition=0, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert [e.code() for e in errors] == [ck.KafkaError._MSG_TIMED_OUT]
    assert dropping.count >= 1
    dropping.remove()
    assert _read_all(broker.bootstrap_servers, TOPIC, 1) == [b"x"]


def test_delay_answers_later_and_client_id_narrows_the_match(broker, raw):
    """Delay(0.3) for one client id: that client's Metadata takes at least 0.3 s; another
    client's is not matched."""
    from kproto.protocol.messages import MetadataRequest
    slow = broker.requests.control(ApiKey.METADATA, Delay(0.3), client_id="slow-one")
    other = raw()  # the raw client's own client id
    started = time.monotonic()
    other.request(ApiKey.METADATA, 9, MetadataRequest(topics=[]))
    assert slow.count == 0
    from kproto import AdminClient
    with AdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="slow-one") as admin:
        started = time.monotonic()
        admin.list_topics()
        assert time.monotonic() - started >= 0.3
    assert slow.count >= 1


def test_fail_on_an_acks_0_produce_closes_the_connection(broker, raw):
    """acks=0 has no response: Kafka closes the connection on its error (KafkaApis)."""
    from kproto.protocol.messages import ProduceRequest
    from kproto.records import BatchBuilder
    broker.requests.control(ApiKey.PRODUCE, Fail(NotLeaderOrFollowerError))
    builder = BatchBuilder()
    builder.append(0, None, b"v")
    client = raw()
    client.send(ApiKey.PRODUCE, 9, ProduceRequest(acks=0, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=builder.build())])]))
    client.sock.settimeout(5)
    assert client.is_closed_by_peer()


def test_controls_log_on_the_cluster_logger_and_go_when_the_broker_stops(caplog):
    from minibroker import MiniBroker
    caplog.set_level(logging.INFO, logger="minibroker.cluster")
    with MiniBroker() as broker:
        ctl = broker.requests.control(ApiKey.FETCH, Delay(0.1), times=3)
        assert broker.requests.controls == [ctl]
    assert broker.requests.controls == [] and not ctl.active
    lines = [r.getMessage() for r in caplog.records if r.name == "minibroker.cluster"]
    assert len(lines) == 2
    assert "request control added" in lines[0] and "FETCH" in lines[0] and "Delay(0.1 s)" in lines[0]
    assert "request control removed" in lines[1]


def test_control_refuses_bad_arguments(broker):
    with pytest.raises(ValueError):
        broker.requests.control(9999, Drop())
    with pytest.raises(ValueError):
        broker.requests.control(ApiKey.PRODUCE, "drop")
    with pytest.raises(ValueError):
        broker.requests.control(ApiKey.PRODUCE, Drop(), times=0)
    with pytest.raises(ValueError):
        Delay(-1)
    with pytest.raises(ValueError):
        Fail(0)


# -- error_response: Kafka's getErrorResponse, from the table ------------------------------

def test_error_response_of_produce_answers_every_partition_of_the_request():
    P = request_class(ApiKey.PRODUCE)
    request = P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(name="a", partition_data=[
        P.PartitionProduceData(index=3, records=b""), P.PartitionProduceData(index=5, records=b"")])])
    response = error_response(ApiKey.PRODUCE, 9, request, NotLeaderOrFollowerError.code)
    [topic] = response.responses
    assert topic.name == "a"
    assert [(p.index, p.error_code) for p in topic.partition_responses] == [(3, 6), (5, 6)]
    # Kafka's PartitionResponse(error): unknown offsets and times are -1, not 0.
    assert {(p.base_offset, p.log_append_time_ms, p.log_start_offset) for p in topic.partition_responses} == {
        (-1, -1, -1)}


def test_error_response_of_fetch_sets_the_top_level_and_every_partition():
    F = request_class(ApiKey.FETCH)
    topic_id = uuid.uuid4()
    request = F(topics=[F.FetchTopic(topic="a", topic_id=topic_id, partitions=[F.FetchPartition(partition=2)])])
    response = error_response(ApiKey.FETCH, 13, request, NotLeaderOrFollowerError.code)
    assert response.error_code == 6
    [topic] = response.responses
    assert topic.topic_id == topic_id
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [(2, 6)]
    # Kafka's FetchResponse.partitionResponse(error): empty records (librdkafka refuses a
    # whole answer with null records), -1 watermarks and log start.
    [p] = topic.partitions
    assert (bytes(p.records), p.high_watermark, p.last_stable_offset, p.log_start_offset) == (b"", -1, -1, -1)


def test_error_response_answers_one_item_per_name_or_id_of_the_request():
    """FindCoordinator v4's keys and OffsetFetch v8's partition ids are arrays of values."""
    FC = request_class(ApiKey.FIND_COORDINATOR)
    response = error_response(ApiKey.FIND_COORDINATOR, 4, FC(coordinator_keys=["g1", "g2"]),
                              CoordinatorNotAvailableError.code)
    assert [(c.key, c.error_code) for c in response.coordinators] == [("g1", 15), ("g2", 15)]
    assert error_response(ApiKey.FIND_COORDINATOR, 3, FC(key="g"), 15).error_code == 15
    OF = request_class(ApiKey.OFFSET_FETCH)
    request = OF(groups=[OF.OffsetFetchRequestGroup(group_id="g", topics=[
        OF.OffsetFetchRequestTopics(name="t", partition_indexes=[0, 1])])])
    [group] = error_response(ApiKey.OFFSET_FETCH, 8, request, 16).groups
    assert group.group_id == "g" and group.error_code == 16
    assert [(p.partition_index, p.error_code) for p in group.topics[0].partitions] == [(0, 16), (1, 16)]
