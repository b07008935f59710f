"""``kproto consume``: where it starts, what it prints, when it stops, and how it behaves in
a pipe; records written by kafka-python, so the codec is checked against a peer."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import time

import pytest

from kproto import AdminClient, TopicPartition
from kproto.admin import NewTopic
from tests.cli.helpers import ROOT, TIMEOUT, command, process_env

kafka = pytest.importorskip("kafka")


def produce(bootstrap: str, topic: str, records: list[dict]) -> None:
    """Send ``records`` (kafka-python ``send`` arguments) and wait for all of them."""
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for record in records:
            producer.send(topic, **record)
        producer.flush(10)
    finally:
        producer.close(5)


@pytest.fixture(scope="module")
def numbers(broker):
    """Topic ``co-numbers``: 2 partitions, 5 records each ("p0-0".."p1-4"), keyed "k"."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("co-numbers", 2)])
    produce(broker.bootstrap_servers, "co-numbers",
            [{"value": b"p%d-%d" % (p, i), "key": b"k", "partition": p} for p in (0, 1) for i in range(5)])
    return "co-numbers"


def test_jsonl_has_every_field(cli, broker):
    produce(broker.bootstrap_servers, "co-json", [
        {"value": b"hello", "key": b"key-1", "headers": [("h1", b"x"), ("h1", b"y"), ("empty", b"")],
         "timestamp_ms": 1_700_000_000_123},
        {"value": b"\xff\x00binary", "key": None, "timestamp_ms": 1_700_000_000_456},
        {"value": None, "key": b"tombstone", "timestamp_ms": 1_700_000_000_789},
    ])
    result = cli("consume", "co-json", "--from-beginning", "--format", "jsonl", "--max-messages", "3")
    assert result.code == 0 and result.err == "Processed a total of 3 messages\n"
    first, second, third = (json.loads(line) for line in result.lines)
    assert first == {"topic": "co-json", "partition": 0, "offset": 0, "timestamp": 1_700_000_000_123,
                     "timestamp_type": "CreateTime", "key": "key-1", "value": "hello",
                     "headers": [["h1", "x"], ["h1", "y"], ["empty", ""]], "leader_epoch": 0}
    assert second["key"] is None and base64.b64decode(second["value"]["base64"]) == b"\xff\x00binary"
    assert third["offset"] == 2 and third["value"] is None and third["key"] == "tombstone"


def test_value_and_key_value_formats(cli, broker):
    produce(broker.bootstrap_servers, "co-kv", [{"value": b"v1", "key": b"k1"}, {"value": b"v2"}])
    values = cli("consume", "co-kv", "--from-beginning", "--max-messages", "2")
    assert values.out == "v1\nv2\n"
    pairs = cli("consume", "co-kv", "--from-beginning", "--max-messages", "2", "--format", "key-value",
                "--separator", " => ")
    assert pairs.out == "k1 => v1\nnull => v2\n"


def test_partition_and_offset(cli, numbers):
    assert cli("consume", numbers, "--partition", "1", "--offset", "3", "--timeout-ms", "500").lines == ["p1-3", "p1-4"]
    assert cli("consume", numbers, "--partition", "0", "--offset", "earliest", "--max-messages", "2").lines == ["p0-0", "p0-1"]
    assert cli("consume", numbers, "--partition", "0", "--from-beginning", "--max-messages", "1").lines == ["p0-0"]
    assert cli("consume", numbers, "--partition", "0", "--offset", "latest", "--timeout-ms", "300").out == ""
    missing = cli("consume", numbers, "--partition", "7")
    assert missing.code == 2 and "has no partition 7" in missing.err


def test_every_partition_from_the_beginning_or_the_end(cli, numbers):
    everything = cli("consume", numbers, "--from-beginning", "--timeout-ms", "500")
    assert everything.code == 0 and sorted(everything.lines) == sorted(f"p{p}-{i}" for p in (0, 1) for i in range(5))
    assert everything.err == "Processed a total of 10 messages\n"
    started = time.monotonic()
    new_only = cli("consume", numbers, "--timeout-ms", "300")
    assert new_only.out == "" and new_only.err == "Processed a total of 0 messages\n"
    assert time.monotonic() - started < 5


def test_group_commits_what_it_printed_and_resumes_there(cli, broker, numbers):
    first = cli("consume", numbers, "--group", "co-group", "--from-beginning", "--max-messages", "3")
    assert first.code == 0 and len(first.lines) == 3
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        committed = admin.list_group_offsets("co-group")
    assert sum(o.offset for o in committed.values()) == 3
    rest = cli("consume", numbers, "--group", "co-group", "--timeout-ms", "1000")
    assert sorted(first.lines + rest.lines) == sorted(f"p{p}-{i}" for p in (0, 1) for i in range(5))


def test_a_missing_topic_is_a_kafka_error(cli):
    result = cli("consume", "co-missing", "--timeout-ms", "100")
    assert result.code == 1 and result.err.startswith("kproto: error: [UNKNOWN_TOPIC_OR_PARTITION]")


def _start_consuming(broker, topic: str) -> subprocess.Popen:
    return subprocess.Popen(command("consume", topic, "--from-beginning", "--bootstrap-servers", broker.bootstrap_servers),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=process_env())


def test_a_reader_that_goes_away_ends_it_quietly(broker):
    """``kproto consume t | head -1``: the closed pipe ends the command, exit 0, no traceback."""
    produce(broker.bootstrap_servers, "co-pipe", [{"value": b"x" * 100} for _ in range(20000)])
    proc = _start_consuming(broker, "co-pipe")
    try:
        assert proc.stdout.readline() == b"x" * 100 + b"\n"
        proc.stdout.close()  # as head does after its line
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0 and b"Traceback" not in err, err


def test_ctrl_c_ends_it_with_130_and_the_count(broker, numbers):
    proc = _start_consuming(broker, numbers)
    try:
        for _ in range(10):
            proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 130 and out == b"", err
    assert err.decode().splitlines()[-1] == "Processed a total of 10 messages" and b"Traceback" not in err


def test_record_timestamps_of_log_append_time_topics(cli, broker):
    cli("topics", "create", "co-append", "--config", "message.timestamp.type=LogAppendTime")
    produce(broker.bootstrap_servers, "co-append", [{"value": b"v", "timestamp_ms": 5}])
    record = json.loads(cli("consume", "co-append", "--from-beginning", "--max-messages", "1", "--format", "jsonl").out)
    assert record["timestamp_type"] == "LogAppendTime" and record["timestamp"] > 5
    assert TopicPartition(record["topic"], record["partition"]) == TopicPartition("co-append", 0)
