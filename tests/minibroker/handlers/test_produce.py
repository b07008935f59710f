"""Produce's per-record errors (KIP-467): which records of a refused batch were bad.

Issue 10, item 16. Kafka's LogValidator checks every record of a batch and names each
one that fails in ``record_errors`` (Produce v8+), by its index in the batch, with a
message; the batch fails with INVALID_RECORD. A client then fails the named records with
INVALID_RECORD and the others of the batch with an error of their own, so that they can
be sent again without the bad ones.
"""

from __future__ import annotations

import pytest

from kproto import compression
from kproto.errors import CorruptMessageError, InvalidRecordError
from kproto.protocol import ApiKey
from kproto.records import BatchBuilder, decode_record_set
from tests.minibroker.test_server import (
    create,
    create_compacted,
    fetch_request,
    keyed_batch,
    produce,
    reseal,
)

KEYLESS = set(range(3, 100, 10))  # 10 of 100 records have no key
MESSAGE = "Compacted topic cannot accept message without key in topic partition compacted-0."


@pytest.mark.parametrize("codec", [0, compression.LZ4])
def test_record_errors_name_every_keyless_record_of_a_compacted_topic(raw, codec):
    client = raw()
    create_compacted(client, "compacted")
    keys = [None if i in KEYLESS else b"k%d" % i for i in range(100)]
    response = produce(client, "compacted", keyed_batch(*keys, codec=codec), version=9)
    assert (response.error_code, response.base_offset) == (InvalidRecordError.code, -1)
    assert [(e.batch_index, e.batch_index_error_message) for e in response.record_errors] == [
        (i, MESSAGE) for i in sorted(KEYLESS)]
    assert response.error_message.startswith("One or more records have been rejected due to 10 record errors in total")
    assert "RecordError(batchIndex=13," in response.error_message and "batchIndex=33" not in response.error_message
    # Before v8 there is no field for them: the same error, the list left out.
    assert produce(client, "compacted", keyed_batch(*keys, codec=codec), version=7).error_code == InvalidRecordError.code
    # Nothing of the batch was appended.
    fetched = client.request(ApiKey.FETCH, 12, fetch_request("compacted", 0)).responses[0].partitions[0]
    assert decode_record_set(fetched.records or b"")[0] == [] and fetched.high_watermark == 0


def test_confluent_kafka_fails_the_keyless_records_as_invalid_and_the_others_apart(broker, raw):
    """A 100-record batch with 10 keyless records to a compacted topic, through librdkafka:
    per-message delivery errors tell the 10 bad records from the 90 that were refused
    only for their company."""
    ck = pytest.importorskip("confluent_kafka")
    create_compacted(raw(), "compacted")
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 500, "retries": 0,
                            "enable.idempotence": False, "batch.num.messages": 1000})
    outcome: dict[int, int] = {}

    def report(err, msg):
        outcome[int(msg.value())] = err.code() if err else 0

    for i in range(100):
        producer.produce("compacted", b"%d" % i, key=None if i in KEYLESS else b"k%d" % i, partition=0, on_delivery=report)
    assert producer.flush(15) == 0
    assert len(outcome) == 100
    assert {i for i, code in outcome.items() if code == ck.KafkaError.INVALID_RECORD} == KEYLESS
    assert {code for i, code in outcome.items() if i not in KEYLESS} == {ck.KafkaError._INVALID_DIFFERENT_RECORD}


def test_the_record_walk_accepts_long_varints_and_utf8_header_keys_and_refuses_bad_utf8(raw):
    """Issue 16 (broker produce): the Produce path walks an uncompressed batch's records in
    C for the common shapes and hands the others to the full walk. Records whose
    timestamp deltas take 6-byte varints and header keys in UTF-8 beyond ASCII are
    accepted and read back as sent; a header key that is not UTF-8, in a batch whose CRC
    is right, is CORRUPT_MESSAGE and nothing is appended (Kafka's LogValidator)."""
    client = raw()
    create(client, "walk")
    builder = BatchBuilder()
    builder.append(1_000, b"k", b"first", [("clé", b"v")])
    builder.append(1_000 + 10**12, b"k", b"a day of years later", [("kk", b"w")])
    good = builder.build()
    assert good.count("clé".encode()) == 1 and good.count(b"kk") == 1
    bad = reseal(good, good[61:].replace(b"kk", b"\xff\xfe"))
    response = produce(client, "walk", bad)
    assert (response.error_code, response.base_offset) == (CorruptMessageError.code, -1)
    assert "header key is not UTF-8" in response.error_message
    assert produce(client, "walk", good).error_code == 0
    fetched = client.request(ApiKey.FETCH, 12, fetch_request("walk", 0)).responses[0].partitions[0]
    records = decode_record_set(fetched.records)[0]
    assert [(r.offset, r.timestamp, r.headers) for r in records] == [
        (0, 1_000, (("clé", b"v"),)), (1, 1_000 + 10**12, (("kk", b"w"),))]
