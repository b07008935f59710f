"""Idempotent produce: sequences per producer id, epoch and partition (KIP-98)."""

import time

import pytest

from kproto.errors import (
    DuplicateSequenceNumberError,
    InvalidProducerEpochError,
    InvalidRecordError,
    OutOfOrderSequenceNumberError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    FetchRequest,
    InitProducerIdRequest,
    MetadataRequest,
    ProduceRequest,
)
from kproto.records import BatchBuilder, decode_record_set
from minibroker import MiniBroker
from minibroker.config import DEFAULTS as BROKER_DEFAULTS
from minibroker.coordinator.producer_state import ProducerStates
from tests.support.raw_client import RawClient


@pytest.fixture
def client(raw):
    c = raw()
    c.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="idem")]))
    return c


def send(client, pid, epoch, seq, n=1):
    builder = BatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        builder.append(1, None, b"%d-%d-%d" % (epoch, seq, i))
    request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="idem", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    p = client.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def log_values(client):
    request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
        topic="idem", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    records = client.request(ApiKey.FETCH, 12, request).responses[0].partitions[0].records
    return [r.value for r in decode_record_set(records)[0]] if records else []


def test_init_producer_id_hands_out_new_ids(client):
    a = client.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000))
    b = client.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000))
    assert (a.error_code, a.producer_epoch) == (0, 0) and b.producer_id != a.producer_id


def test_a_retried_batch_is_written_once_and_answered_with_its_offset(client):
    assert send(client, 7, 0, 0, n=2) == (0, 0)
    assert send(client, 7, 0, 2) == (0, 2)
    assert send(client, 7, 0, 0, n=2) == (0, 0)  # the retry of the first batch
    assert log_values(client) == [b"0-0-0", b"0-0-1", b"0-2-0"]


def test_a_gap_is_out_of_order(client):
    send(client, 7, 0, 0)
    assert send(client, 7, 0, 5)[0] == OutOfOrderSequenceNumberError.code
    assert send(client, 7, 0, 1) == (0, 1)


def test_old_epochs_are_fenced_and_new_epochs_start_at_zero(client):
    send(client, 7, 1, 0)
    assert send(client, 7, 0, 1)[0] == InvalidProducerEpochError.code
    assert send(client, 7, 2, 3)[0] == OutOfOrderSequenceNumberError.code
    assert send(client, 7, 2, 0) == (0, 1)


def test_a_duplicate_older_than_the_cache(client):
    for seq in range(7):
        send(client, 7, 0, seq)
    assert send(client, 7, 0, 0)[0] == DuplicateSequenceNumberError.code
    assert send(client, 7, 0, 3) == (0, 3)  # still among the last five


def test_first_batch_of_an_unknown_producer_is_accepted_at_any_sequence(client):
    assert send(client, 9, 0, 41) == (0, 0)
    assert send(client, 9, 0, 42) == (0, 1)


def test_sequences_wrap_after_int32_max(client):
    assert send(client, 7, 0, 2**31 - 1, n=2)[0] == 0  # last sequence wraps to 0
    assert send(client, 7, 0, 1) == (0, 2)


def test_idempotent_batch_without_sequence_is_invalid(client):
    assert send(client, 7, 0, -1)[0] == InvalidRecordError.code


def test_a_retry_across_a_restart_is_still_a_duplicate_and_ids_are_not_reused(tmp_path):
    """The producer state is rebuilt from the logs on start (as Kafka does), and new
    producer ids start above every id in them."""
    def init(c):
        return c.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=1000)).producer_id

    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        c = RawClient(port)
        c.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="idem")]))
        pid = init(c)
        assert send(c, pid, 0, 0, n=3) == (0, 0)
        assert send(c, pid, 0, 3, n=2) == (0, 3)
        c.close()
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        c = RawClient(port)
        assert send(c, pid, 0, 3, n=2) == (0, 3)  # the ack was lost, the retry comes after the restart
        assert send(c, pid, 0, 7) == (OutOfOrderSequenceNumberError.code, -1)
        assert send(c, pid, 0, 5) == (0, 5)
        assert log_values(c) == [b"0-0-0", b"0-0-1", b"0-0-2", b"0-3-0", b"0-3-1", b"0-5-0"]
        assert init(c) > pid
        c.close()


def test_producer_state_expires_after_producer_id_expiration_ms():
    """Issue 10, item 13b: producer state never expired. With ``producer.id.expiration.ms``
    (Kafka's KIP-854 config, default one day) a producer that has not written for that long
    is unknown again: its next batch is taken at any sequence, as Kafka does."""
    assert BROKER_DEFAULTS["producer.id.expiration.ms"][0] == 86400000
    assert BROKER_DEFAULTS["transactional.id.expiration.ms"][0] == 604800000
    with MiniBroker(config={"producer.id.expiration.ms": 300}) as broker:
        c = RawClient(broker.port)
        try:
            c.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="idem")]))
            assert send(c, 7, 0, 0) == (0, 0)
            assert send(c, 7, 0, 5)[0] == OutOfOrderSequenceNumberError.code  # still known: a gap
            time.sleep(0.6)
            assert send(c, 7, 0, 5) == (0, 1)  # expired: accepted as a new producer
            assert send(c, 7, 0, 6) == (0, 2)  # and known again from there
            assert send(c, 7, 0, 6) == (0, 2)
        finally:
            c.close()


def test_expiration_counts_from_the_last_write_and_frees_the_memory():
    """Issue 10, item 13b, with a controlled clock: a write renews the producer; the sweep
    (Kafka's removeExpiredProducers) forgets every expired producer at once."""
    now = [0]
    states = ProducerStates(1000, clock=lambda: now[0], check_interval_ms=5000)
    for pid in range(100):
        states.record(("t", 0), pid, 0, 0, 1, pid)
    now[0] = 999
    states.record(("t", 0), 0, 0, 1, 1, 100)  # producer 0 writes again
    assert states.check(("t", 0), 1, 0, 0, 1) == (0, 1)  # producer 1 is still known: a duplicate
    now[0] = 1000
    assert states.check(("t", 0), 1, 0, 0, 1) == (0, -1)  # expired: unknown, so appended
    assert states.check(("t", 0), 0, 0, 1, 1) == (0, 100)  # renewed at 999: still known
    assert len(states) == 99  # producer 1 went when it was looked up
    now[0] = 5000
    states.record(("u", 0), 500, 0, 0, 1, 0)  # the first write after the check interval sweeps
    assert len(states) == 1
    with pytest.raises(ValueError, match="producer.id.expiration.ms"):
        ProducerStates(0)
