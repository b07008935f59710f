"""``kproto produce``: lines become records, read back by kafka-python as the oracle."""

from __future__ import annotations

import pytest

kafka = pytest.importorskip("kafka")


def read_back(bootstrap: str, topic: str, count: int) -> list:
    """``count`` records of ``topic`` as kafka-python's consumer sees them, in offset order."""
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                   consumer_timeout_ms=5000)
    try:
        records = []
        for record in consumer:
            records.append(record)
            if len(records) == count:
                break
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def test_keys_and_headers(cli, broker):
    cli("topics", "create", "pr-keys", "--partitions", "3")
    result = cli("produce", "pr-keys", "--key-separator", "::", "--header", "source=cli", "--header", "empty=",
                 "--partition", "2", stdin=b"k1::v1\nk2::v::2\n::no key\n")
    assert result.code == 0 and result.out == result.err == ""
    records = read_back(broker.bootstrap_servers, "pr-keys", 3)
    assert [(r.partition, r.key, r.value) for r in records] == [(2, b"k1", b"v1"), (2, b"k2", b"v::2"), (2, b"", b"no key")]
    assert all(r.headers == [("source", b"cli"), ("empty", b"")] for r in records)


def test_lines_from_a_file_keep_empty_lines_and_lose_their_endings(cli, broker, tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"one\r\n\ntwo\n\xff\xfebinary\nlast without newline")
    result = cli("produce", "pr-file", "--file", str(lines), "--compression", "gzip", "--acks", "1")
    assert result.code == 0
    records = read_back(broker.bootstrap_servers, "pr-file", 5)
    assert [r.value for r in records] == [b"one", b"", b"two", b"\xff\xfebinary", b"last without newline"]
    assert all(r.key is None and r.headers == [] for r in records)


@pytest.mark.parametrize("compression", ["snappy", "lz4", "zstd"])
def test_compression_codecs(cli, broker, compression):
    topic = f"pr-{compression}"
    assert cli("produce", topic, "--compression", compression, stdin=b"a\nb\n").code == 0
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 2)] == [b"a", b"b"]


def test_a_line_without_the_separator_stops_after_sending_the_lines_before(cli, broker):
    result = cli("produce", "pr-nosep", "--key-separator", "=", stdin=b"a=1\nb=2\nno separator\nc=3\n")
    assert result.code == 1
    assert result.err == "kproto: error: line 3 has no key separator '='\n"
    assert [(r.key, r.value) for r in read_back(broker.bootstrap_servers, "pr-nosep", 2)] == [(b"a", b"1"), (b"b", b"2")]


def test_a_partition_the_topic_lacks_is_an_error(cli):
    cli("topics", "create", "pr-one")
    result = cli("produce", "pr-one", "--partition", "5", stdin=b"x\n")
    assert result.code == 1 and result.err.startswith("kproto: error: partition 5 is not in [0, 1)")


def test_empty_input_sends_nothing(cli, broker):
    cli("topics", "create", "pr-empty")
    assert cli("produce", "pr-empty", stdin=b"").code == 0
    assert cli("topics", "describe", "pr-empty", "--json").out.count('"log_end_offset": 0') == 1


def test_as_a_subprocess_from_a_pipe(run_process, broker):
    lines = b"".join(b"%d\n" % i for i in range(1000))
    done = run_process("produce", "pr-pipe", "--bootstrap-servers", broker.bootstrap_servers, input=lines)
    assert done.returncode == 0 and done.stderr == b""
    assert [r.value for r in read_back(broker.bootstrap_servers, "pr-pipe", 1000)] == lines.split()
