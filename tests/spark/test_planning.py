"""The kproto source's driver and executor logic that needs no Spark: options, splits, limits, aborts."""

from __future__ import annotations

import pytest

from kproto.errors import ConfigError
from kproto.io.fetch import BatchFilter, kept_batches
from kproto.protocol.messages import FetchResponse
from kproto.records import BatchBuilder, ControlType, build_control_batch, decode_record_set
from kproto.spark.fetch import _RangeReader
from kproto.spark.planning import OffsetRange, SourceOptions, split_ranges
from kproto.spark.source import from_json, rate_limit, to_json
from kproto.structs import TopicPartition as TP

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9"}


def test_options_take_sparks_names_in_any_case_and_its_defaults():
    o = SourceOptions.parse({**BASE, "subscribe": "a, b", "startingoffsets": '{"a":{"0":5}}', "INCLUDEHEADERS": "True",
                             "kafka.isolation.level": "read_committed"}, streaming=False)
    assert o.subscribe == ["a", "b"] and o.starting.value == {TP("a", 0): 5} and o.ending.kind == "latest"
    assert o.include_headers and o.fail_on_data_loss and o.consumer["isolation.level"] == "read_committed"
    assert "isolation.level" not in o.admin_config and o.admin_config["bootstrap.servers"] == "127.0.0.1:9"
    assert SourceOptions.parse({**BASE, "assign": '{"a":[0,2]}'}, streaming=True).starting.kind == "latest"
    assert SourceOptions.parse({**BASE, "assign": '{"a":[0,2]}'}, streaming=False).starting.kind == "earliest"


@pytest.mark.parametrize(("extra", "error"), [
    ({}, "exactly one of the options assign, subscribe, subscribePattern"),
    ({"subscribe": "a", "assign": '{"a":[0]}'}, "not assign and subscribe"),
    ({"subscribe": "a", "kafka.group.id": "g"}, "'kafka.group.id' is not supported"),
    ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "set startingOffsets instead"),
    ({"subscribe": "a", "startingOffsets": "latest"}, "streaming queries only"),
    ({"subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, "endingOffsets earliest"),
    ({"subscribe": "a", "maxTriggerDelay": "5m"}, "not supported"),
    ({"subscribe": "a", "minPartitions": "0"}, "minPartitions must be >= 1"),
    ({"subscribe": "a", "failOnDataLoss": "maybe"}, "true or false"),
    ({"assign": "[0, 1]"}, "JSON like"),
    ({"subscribePattern": "orders-(["}, "not a valid regular expression"),
])
def test_bad_options_are_refused_with_a_clear_message(extra, error):
    with pytest.raises(ValueError, match=error):
        SourceOptions.parse({**BASE, **extra}, streaming=False)


def test_kafka_options_are_checked_as_consumer_settings():
    with pytest.raises(ConfigError, match="fetch.max.bytes"):
        SourceOptions.parse({**BASE, "subscribe": "a", "kafka.fetch.max.byte": "5"}, streaming=False)
    with pytest.raises(ValueError, match="bootstrap.servers is required"):
        SourceOptions.parse({"subscribe": "a"}, streaming=False)


def test_ending_offsets_are_batch_only():
    with pytest.raises(ValueError, match="batch queries only"):
        SourceOptions.parse({**BASE, "subscribe": "a", "endingOffsets": "latest"}, streaming=True)


def test_min_partitions_splits_in_proportion_as_spark_does():
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 10, 40), OffsetRange("t", 2, 5, 5)]
    # Spark's KafkaOffsetRangeCalculatorSuite: parts = max(round(size / total * minPartitions), 1)
    assert split_ranges(ranges, 4) == [OffsetRange("t", 0, 0, 33), OffsetRange("t", 0, 33, 66),
                                       OffsetRange("t", 0, 66, 100), OffsetRange("t", 1, 10, 40)]
    assert split_ranges(ranges, 2) == ranges[:2]  # already enough ranges
    assert split_ranges(ranges, None, max_records=40) == [
        OffsetRange("t", 0, 0, 33), OffsetRange("t", 0, 33, 66), OffsetRange("t", 0, 66, 100), ranges[1]]


def test_rate_limit_shares_the_cap_by_backlog_and_starves_no_partition():
    start = {TP("t", 0): 0, TP("t", 1): 100, TP("t", 2): 7}
    latest = {TP("t", 0): 1000, TP("t", 1): 101, TP("t", 2): 7}
    assert rate_limit(start, latest, 100) == {TP("t", 0): 99, TP("t", 1): 101, TP("t", 2): 7}
    assert rate_limit(start, start, 100) == start


def test_offsets_round_trip_through_sparks_json_form():
    offsets = {TP("b", 1): 5, TP("a", 0): 3}
    assert to_json(offsets) == {"a": {"0": 3}, "b": {"1": 5}}
    assert from_json(to_json(offsets)) == offsets


def txn(pid, base, values):
    b = BatchBuilder(2, 0, base_offset=base, producer_id=pid, producer_epoch=0, base_sequence=0,
                     is_transactional=True)
    for v in values:
        b.append(1, None, v)
    return b.build()


def test_read_committed_drops_aborted_transactions_and_markers():
    plain = BatchBuilder(2, 0, base_offset=2)
    plain.append(1, None, b"plain")
    log = (txn(7, 0, [b"aborted-1", b"aborted-2"]) + plain.build() + txn(8, 3, [b"committed"])
           + build_control_batch(ControlType.ABORT, producer_id=7, producer_epoch=0, timestamp=1, base_offset=4)
           + build_control_batch(ControlType.COMMIT, producer_id=8, producer_epoch=0, timestamp=1, base_offset=5)
           + txn(7, 6, [b"after-abort"]))
    kept, end = kept_batches(log, BatchFilter([FetchResponse.AbortedTransaction(producer_id=7, first_offset=0)]),
                             check_crc=True)
    assert [r.value for r in decode_record_set(kept)[0]] == [b"plain", b"committed", b"after-abort"]
    assert end == 7


def test_read_committed_steps_past_an_aborted_transaction_that_ends_the_answer():
    """Issue 12 (one Fetch owner): an answer whose last batches are an aborted transaction
    and its ABORT marker moves the task's position past them, as the consumer's does;
    it stayed at the aborted batch, fetched the same answer again and timed out."""
    options = SourceOptions.parse({**BASE, "subscribe": "t", "kafka.isolation.level": "read_committed"},
                                  streaming=False)
    reader = _RangeReader(options, OffsetRange("t", 0, 0, 10))
    plain = BatchBuilder(2, 0, base_offset=0)
    plain.append(1, None, b"plain")
    log = (plain.build() + txn(7, 1, [b"aborted-1", b"aborted-2"])
           + build_control_batch(ControlType.ABORT, producer_id=7, producer_epoch=0, timestamp=1, base_offset=3))
    data = FetchResponse.PartitionData(
        partition_index=0, error_code=0, high_watermark=10, last_stable_offset=10, records=log,
        aborted_transactions=[FetchResponse.AbortedTransaction(producer_id=7, first_offset=1)])
    batch = reader.take(data)
    assert batch.column("value").to_pylist() == [b"plain"]
    assert reader.position == 4
    data = FetchResponse.PartitionData(
        partition_index=0, error_code=0, high_watermark=10, last_stable_offset=10, records=log[len(plain.build()):],
        aborted_transactions=[FetchResponse.AbortedTransaction(producer_id=7, first_offset=1)])
    reader.position = 1
    assert reader.take(data) is None and reader.position == 4
