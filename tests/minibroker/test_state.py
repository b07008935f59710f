"""The broker's state and its storage: names, internal topics, producer ids, log directory
locks, topic deletion across crashes, request bounds (issue 10)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kproto.errors import InvalidTopicError
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    MetadataRequest,
)
from minibroker import MiniBroker
from minibroker.storage import LogDirInUseError
from tests.minibroker.conftest import RawClient

kafka = pytest.importorskip("kafka")

ROOT = Path(__file__).resolve().parents[2]


def create(client, name, partitions=1, version=5):
    request = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])], timeout_ms=10000)
    return client.request(ApiKey.CREATE_TOPICS, version, request).topics[0]


def delete_records(client, topic, partitions, offset=-1):
    request = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[
        DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=offset) for p in partitions])],
        timeout_ms=5000)
    return client.request(ApiKey.DELETE_RECORDS, 1, request).topics[0].partitions


# -- item 10: names are matched whole ----------------------------------------------------


@pytest.mark.parametrize("name", ["trailing\n", "new\nline", "\n"])
def test_a_topic_name_with_a_newline_is_refused(broker, name):
    """Issue 10, item 10: "t\\n" passed ``re.match(r"^...$")``, and the log start offset
    checkpoint of such a topic could not be read back, so deleted records came back."""
    c = RawClient(broker.port)
    try:
        assert create(c, name).error_code == InvalidTopicError.code
        metadata = c.request(ApiKey.METADATA, 9, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=True))
        assert metadata.topics[0].error_code == InvalidTopicError.code
        assert broker._server.state.topics == {}
    finally:
        c.close()


# -- item 5: DeleteRecords on internal topics ----------------------------------------------


def test_delete_records_on_the_offsets_topic_is_refused_and_commits_survive(tmp_path):
    """Issue 10, item 5: DeleteRecords on ``__consumer_offsets`` was accepted, and the
    committed offsets were gone after the next restart. Kafka refuses it on internal
    topics (ReplicaManager.deleteRecordsOnLocalLog: INVALID_TOPIC_EXCEPTION)."""
    tp = kafka.TopicPartition("data", 0)
    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        c = RawClient(port)
        assert create(c, "data").error_code == 0
        consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="g",
                                       enable_auto_commit=False)
        try:
            consumer.assign([tp])
            consumer.commit({tp: kafka.OffsetAndMetadata(42, None, -1)})
        finally:
            consumer.close()
        try:
            partitions = range(len(broker._server.state.topics["__consumer_offsets"].partitions))
            results = delete_records(c, "__consumer_offsets", partitions)
        finally:
            c.close()
        assert {(r.error_code, r.low_watermark) for r in results} == {(InvalidTopicError.code, -1)}
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="g",
                                       enable_auto_commit=False)
        try:
            assert consumer.committed(tp) == 42
        finally:
            consumer.close()


# -- item 4: one broker per log directory ---------------------------------------------


def _start_cli(data_dir: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "minibroker", "--port", "0", "--data-dir", str(data_dir), *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_second_broker_process_on_the_same_data_dir_fails_to_start(tmp_path):
    """Issue 10, item 4: two brokers could open one data directory and overwrite each
    other's acknowledged records. Kafka's ``.lock`` (LogManager.LockFileName) now keeps the
    second one out, with a message naming the directory; the first one goes on serving."""
    with MiniBroker(data_dir=tmp_path) as broker:
        c = RawClient(broker.port)
        try:
            assert create(c, "kept").error_code == 0
        finally:
            c.close()
        second = _start_cli(tmp_path)
        try:
            out, err = second.communicate(timeout=20)
        finally:
            if second.poll() is None:
                second.kill()
                second.wait(10)
        assert second.returncode == 1, (out, err)
        assert "listening" not in out
        assert str(tmp_path) in err and "in use by another broker" in err
        with pytest.raises(LogDirInUseError, match=str(tmp_path)):
            MiniBroker(data_dir=tmp_path).start()  # a second broker in this process too
        assert "kept" in broker._server.state.topics
    with MiniBroker(data_dir=tmp_path) as broker:  # released on stop
        assert "kept" in broker._server.state.topics


def test_the_lock_is_taken_in_every_log_dir(tmp_path):
    """Issue 10, item 4: with several ``log.dirs``, any one shared is refused."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    with MiniBroker(config={"log.dirs": f"{a},{b}"}):
        assert (a / ".lock").exists() and (b / ".lock").exists()
        with pytest.raises(LogDirInUseError, match=str(b)):
            MiniBroker(config={"log.dirs": f"{c},{b}"}).start()
        with MiniBroker(data_dir=c):  # c was not left locked by the broker that failed
            pass
