"""minibroker with a data directory: restarts, several log dirs, compaction, retention,
DeleteRecords and a SIGKILL under acks=all, seen through real clients."""

import signal
import socket
import time

import pytest

from minibroker import MiniBroker
from tests.support.process import start_minibroker, wait_ready

kafka = pytest.importorskip("kafka")
from kafka.admin import NewTopic  # noqa: E402


def produce(bootstrap, topic, records, **config):
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, **config)
    try:
        futures = [producer.send(topic, key=k, value=v, partition=0) for k, v in records]
        producer.flush(15)
        return [f.get(10).offset for f in futures]
    finally:
        producer.close(5)


def consume_all(bootstrap, topic, partition=0):
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        tp = kafka.TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [(m.offset, m.key, m.value) for m in consumer]
    finally:
        consumer.close()


def admin(bootstrap):
    return kafka.KafkaAdminClient(bootstrap_servers=bootstrap)


def test_restart_finds_topics_ids_configs_and_records(tmp_path):
    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        client = admin(broker.bootstrap_servers)
        client.create_topics([NewTopic("kept", 3, 1, topic_configs={"retention.ms": "86400000"})])
        client.close()
        produce(broker.bootstrap_servers, "kept", [(b"k%d" % i, b"v%d" % i) for i in range(10)])
        topic_id = broker._server.state.topics["kept"].topic_id
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        state = broker._server.state
        assert state.topics["kept"].topic_id == topic_id
        assert len(state.topics["kept"].partitions) == 3
        assert state.topics["kept"].configs == {"retention.ms": "86400000"}
        assert [v for _, _, v in consume_all(broker.bootstrap_servers, "kept")] == [b"v%d" % i for i in range(10)]
        assert produce(broker.bootstrap_servers, "kept", [(b"k", b"after")]) == [10]


def test_partition_directories_in_kafkas_layout(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    with MiniBroker(config={"log.dirs": f"{a},{b}"}) as broker:
        client = admin(broker.bootstrap_servers)
        client.create_topics([NewTopic("spread", 4, 1)])
        client.close()
        produce(broker.bootstrap_servers, "spread", [(None, b"x")])
        topic_id = broker._server.state.topics["spread"].topic_id
    dirs = sorted(p.parent.name + "/" + p.name for p in tmp_path.glob("*/spread-*"))
    assert len(dirs) == 4 and sum(d.startswith("a/") for d in dirs) == 2  # new partitions go where fewest are
    partition0 = next(tmp_path.glob("*/spread-0"))
    assert (partition0 / "00000000000000000000.log").stat().st_size > 0
    metadata = (partition0 / "partition.metadata").read_text().splitlines()
    import base64
    assert metadata[0] == "version: 0"
    assert base64.urlsafe_b64decode(metadata[1].split(": ")[1] + "==") == topic_id.bytes


def test_compaction_is_observable_by_a_consumer(tmp_path):
    config = {"log.retention.check.interval.ms": 100}
    with MiniBroker(data_dir=tmp_path, config=config) as broker:
        client = admin(broker.bootstrap_servers)
        client.create_topics([NewTopic("latest", 1, 1, topic_configs={
            "cleanup.policy": "compact", "segment.bytes": "200", "delete.retention.ms": "0"})])
        client.close()
        updates = [(b"user-%d" % (i % 3), b"v%d" % i) for i in range(30)]
        produce(broker.bootstrap_servers, "latest", updates, linger_ms=0, batch_size=1)
        with pytest.raises(kafka.errors.KafkaError):  # INVALID_RECORD: compacted topics need keys
            produce(broker.bootstrap_servers, "latest", [(None, b"no key")], retries=0)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            seen = consume_all(broker.bootstrap_servers, "latest")
            if len(seen) < 30:
                break
            time.sleep(0.2)
    assert len(seen) < 30, "nothing was compacted"
    latest = {}
    for offset, key, value in seen:
        latest[key] = (offset, value)
    assert {k: v for k, (_, v) in latest.items()} == {b"user-0": b"v27", b"user-1": b"v28", b"user-2": b"v29"}
    offsets = [o for o, _, _ in seen]
    assert offsets == sorted(offsets) and offsets[-1] == 29  # offsets keep their gaps and order


def test_retention_and_delete_records_move_the_log_start(tmp_path):
    with MiniBroker(data_dir=tmp_path, config={"log.retention.check.interval.ms": 100}) as broker:
        client = admin(broker.bootstrap_servers)
        client.create_topics([NewTopic("old", 1, 1, topic_configs={"segment.bytes": "200", "retention.ms": "1000"}),
                              NewTopic("trimmed", 1, 1)])
        produce(broker.bootstrap_servers, "old", [(None, b"ancient")] * 10, linger_ms=0, batch_size=1)
        produce(broker.bootstrap_servers, "trimmed", [(None, b"%d" % i) for i in range(10)])
        tp = kafka.TopicPartition("trimmed", 0)
        client.delete_records({tp: 6})
        client.close()
        assert [v for _, _, v in consume_all(broker.bootstrap_servers, "trimmed")] == [b"6", b"7", b"8", b"9"]
        # Records were written "now" with old timestamps: the one-second retention drops
        # every segment but the active one.
        consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
        try:
            old = kafka.TopicPartition("old", 0)
            produce(broker.bootstrap_servers, "old", [(None, b"x")], linger_ms=0)
            deadline = time.monotonic() + 10
            while consumer.beginning_offsets([old])[old] == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert consumer.beginning_offsets([old])[old] > 0
        finally:
            consumer.close()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(port, data_dir):
    proc = start_minibroker("--port", str(port), "--data-dir", str(data_dir))
    wait_ready(proc)
    return proc


def test_every_acknowledged_record_survives_sigkill(tmp_path):
    """Kill -9 the broker process while an acks=all producer writes, restart it on the
    same data: every record the producer saw acknowledged is there, in order."""
    port = _free_port()
    proc = _start(port, tmp_path)
    acked = []
    try:
        producer = kafka.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all", linger_ms=1,
                                       retries=0, max_block_ms=2000, request_timeout_ms=2000)
        try:
            for i in range(100_000):
                future = producer.send("crash", key=b"%d" % i, value=b"payload-%d" % i, partition=0)
                future.add_callback(lambda md, i=i: acked.append((md.offset, i)))
                if i == 300:
                    time.sleep(0.2)
                    proc.send_signal(signal.SIGKILL)
                    break
            producer.flush(5)
        except kafka.errors.KafkaError:
            pass  # the broker is gone: what was not acknowledged may be lost
        finally:
            producer.close(1)
    finally:
        proc.kill()
        proc.wait(10)
    assert len(acked) > 100
    proc = _start(port, tmp_path)
    try:
        stored = consume_all(f"127.0.0.1:{port}", "crash")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
    by_offset = {offset: value for offset, _, value in stored}
    for offset, i in acked:
        assert by_offset.get(offset) == b"payload-%d" % i
    assert [o for o, _, _ in stored] == list(range(len(stored)))
