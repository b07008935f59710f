"""The broker's state and its storage: names, internal topics, producer ids, log directory
locks, topic deletion across crashes, request bounds (issue 10)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from kproto.errors import (
    InvalidTopicError,
    KafkaStorageError,
    PolicyViolationError,
    TopicAlreadyExistsError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    ApiVersionsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    InitProducerIdRequest,
    MetadataRequest,
    ProduceRequest,
)
from kproto.records import BatchBuilder
from minibroker import MiniBroker
from minibroker.config import BrokerConfig
from minibroker.coordinator.producer_state import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager
from minibroker.state import BrokerState
from minibroker.storage import LogDirInUseError, kafka_uuid
from tests.support.process import start_minibroker
from tests.support.raw_client import RawClient

kafka = pytest.importorskip("kafka")
ck = pytest.importorskip("confluent_kafka")
import confluent_kafka.admin  # noqa: E402,F401  (ck.admin)


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
    return start_minibroker("--port", "0", "--data-dir", str(data_dir), *extra, stderr=subprocess.PIPE)


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


# -- item 3: producer ids are never handed out twice ------------------------------------


def _ready(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    assert line.startswith("minibroker listening on "), (line, proc.stderr.read() if proc.poll() is not None else "")
    return line.split()[-1]


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    proc.stdout.close()
    proc.stderr.close()


def _init_producer_id(client) -> int:
    response = client.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=1000))
    assert response.error_code == 0
    return response.producer_id


def _produce(client, topic, producer_id, seq, value):
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=seq)
    builder.append(int(time.time() * 1000), None, value)
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    p = client.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def _values(bootstrap, topic):
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False,
                            "auto.offset.reset": "earliest"})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        values, deadline = [], time.monotonic() + 10
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                if values:
                    break
                continue
            assert message.error() is None, message.error()
            values.append((message.offset(), message.value()))
        return values
    finally:
        consumer.close()


def test_a_producer_id_given_out_before_a_crash_is_not_given_again(tmp_path):
    """Issue 10, item 3: the id counter restarted at the highest id in the logs, so an id
    handed out but not yet used (producer B) went to a new producer C after a restart; C
    wrote sequence 0, and B's first batch was then answered as a duplicate with C's
    offset: acknowledged, never stored. Ids now come in blocks recorded durably before
    use (Kafka's ProducerIdManager), so a SIGKILL loses none."""
    first = _start_cli(tmp_path)
    try:
        bootstrap = _ready(first)
        c = RawClient(int(bootstrap.rsplit(":", 1)[1]))
        try:
            assert create(c, "t").error_code == 0
            producer_b = _init_producer_id(c)
        finally:
            c.close()
    finally:
        _kill(first)
    second = _start_cli(tmp_path)
    try:
        bootstrap = _ready(second)
        producer_c = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
        producer_c.produce("t", b"from C", partition=0)
        assert producer_c.flush(10) == 0
        del producer_c  # librdkafka's threads go with it, before the broker does
        c = RawClient(int(bootstrap.rsplit(":", 1)[1]))
        try:
            assert _init_producer_id(c) != producer_b
            assert _produce(c, "t", producer_b, 0, b"from B") == (0, 1)
        finally:
            c.close()
        assert _values(bootstrap, "t") == [(0, b"from C"), (1, b"from B")]
    finally:
        _kill(second)


def test_producer_ids_are_taken_in_durable_blocks(tmp_path):
    """Issue 10, item 3: the block is on disk before its first id is handed out."""
    blocks = []
    manager = ProducerIdManager(0, lambda first, last: blocks.append((first, last)))
    ids = [manager.next_id() for _ in range(PRODUCER_ID_BLOCK_SIZE + 1)]
    assert ids == list(range(PRODUCER_ID_BLOCK_SIZE + 1))
    assert blocks == [(0, PRODUCER_ID_BLOCK_SIZE - 1), (PRODUCER_ID_BLOCK_SIZE, 2 * PRODUCER_ID_BLOCK_SIZE - 1)]
    with MiniBroker(data_dir=tmp_path) as broker:
        first = broker._server.state.new_producer_id()
    with MiniBroker(data_dir=tmp_path) as broker:
        assert broker._server.state.new_producer_id() == first + PRODUCER_ID_BLOCK_SIZE


# -- item 6: a deleted topic never comes back inside a new one -------------------------------


def _admin(bootstrap):
    return ck.admin.AdminClient({"bootstrap.servers": bootstrap})


def _create_with_admin(bootstrap, name, partitions=1):
    admin = _admin(bootstrap)  # held until the answer: the futures fail once it is gone
    for future in admin.create_topics([ck.admin.NewTopic(name, partitions, 1)]).values():
        future.result(10)


def _produce_values(bootstrap, topic, values):
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(10) == 0


def _topic_id_on_disk(path: Path) -> str:
    return dict(line.split(": ") for line in (path / "partition.metadata").read_text().splitlines())["topic_id"]


def test_a_topic_deleted_around_a_crash_does_not_come_back_in_a_new_topic(tmp_path):
    """Issue 10, item 6: DeleteTopics rewrote the topics file, then removed the
    directories; a SIGKILL in between left ``t-0`` behind, and a later CreateTopics of
    ``t`` opened it, old records and old ``partition.metadata`` included. The on-disk state
    such a crash leaves is made here exactly: a killed broker, and the topics file without
    the topic. On start the directory is set aside as stray (its records kept for an
    operator), and the new ``t`` starts empty with its own topic id."""
    proc = _start_cli(tmp_path)
    try:
        bootstrap = _ready(proc)
        _create_with_admin(bootstrap, "t")
        _produce_values(bootstrap, "t", [b"old-%d" % i for i in range(5)])
    finally:
        _kill(proc)
    topics_file = tmp_path / "minibroker-topics.json"
    topics = json.loads(topics_file.read_text())
    old_id = topics.pop("t")["topic_id"]
    topics_file.write_text(json.dumps(topics))  # what the first step of DeleteTopics wrote
    assert (tmp_path / "t-0").is_dir()
    proc = _start_cli(tmp_path)
    try:
        bootstrap = _ready(proc)
        _create_with_admin(bootstrap, "t")
        _produce_values(bootstrap, "t", [b"new"])
        assert _values(bootstrap, "t") == [(0, b"new")]
    finally:
        _kill(proc)
    (stray,) = tmp_path.glob("t-0.*-stray")
    assert _topic_id_on_disk(stray) == kafka_uuid(uuid.UUID(old_id))
    assert b"old-4" in (stray / "00000000000000000000.log").read_bytes()
    assert _topic_id_on_disk(tmp_path / "t-0") != _topic_id_on_disk(stray)


def test_a_deletion_cut_short_is_finished_on_start(tmp_path):
    """Issue 10, item 6: a crash after ``t-0`` was renamed ``t-0.<id>-delete`` (Kafka's
    LocalLog.logDeleteDirName) and before its removal: the next start removes it."""
    with MiniBroker(data_dir=tmp_path) as broker:
        _create_with_admin(broker.bootstrap_servers, "t", partitions=2)
        _produce_values(broker.bootstrap_servers, "t", [b"gone"])
        admin = _admin(broker.bootstrap_servers)
        assert admin.delete_topics(["t"])["t"].result(10) is None
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("t-")]  # renamed, then removed
    leftover = tmp_path / f"t-0.{uuid.uuid4().hex}-delete"
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"x" * 100)
    with MiniBroker(data_dir=tmp_path) as broker:
        assert not leftover.exists()
        assert "t" not in broker._server.state.topics


def test_a_partition_directory_of_another_topic_id_is_never_opened(tmp_path):
    """Issue 10, item 6: a ``t-0`` whose ``partition.metadata`` names another topic id than
    the topics file's ``t`` is not ``t``'s log: it is set aside as stray, and ``t-1`` (which
    the topic does not have) too."""
    with MiniBroker(data_dir=tmp_path) as broker:
        _create_with_admin(broker.bootstrap_servers, "t")
        _produce_values(broker.bootstrap_servers, "t", [b"mine"])
        topic_id = broker._server.state.topics["t"].topic_id
    other = tmp_path / "elsewhere"
    (tmp_path / "t-0").rename(other)
    (other / "partition.metadata").write_text(f"version: 0\ntopic_id: {kafka_uuid(uuid.uuid4())}\n")
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-1").mkdir()
    for name in ("t-0", "t-1"):
        (tmp_path / name / "partition.metadata").write_text((other / "partition.metadata").read_text())
        (tmp_path / name / "00000000000000000000.log").write_bytes((other / "00000000000000000000.log").read_bytes())
    with MiniBroker(data_dir=tmp_path) as broker:
        assert broker._server.state.topics["t"].topic_id == topic_id
        assert broker._server.state.topics["t"].partitions[0].log.log_end_offset == 0
        assert _topic_id_on_disk(tmp_path / "t-0") == kafka_uuid(topic_id)
        assert not (tmp_path / "t-1").exists()
        assert len(list(tmp_path.glob("t-*-stray"))) == 2


# -- item 9: requests for absurd numbers of partitions ---------------------------------------


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _api_versions_answered(port: int) -> bool:
    c = RawClient(port, timeout=10)
    try:
        return c.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
            client_software_name="t", client_software_version="1")).error_code == 0
    finally:
        c.close()


def test_a_huge_partition_count_is_refused_at_once_and_the_broker_stays_responsive(tmp_path):
    """Issue 10, item 9: CreateTopics or CreatePartitions with 2**31 - 1 partitions froze
    the broker (no answers on other connections, RSS growing, SIGTERM ignored). A request
    may add at most 10000 partitions (Kafka's MAX_PARTITIONS_PER_BATCH): POLICY_VIOLATION."""
    proc = _start_cli(tmp_path)
    try:
        port = int(_ready(proc).rsplit(":", 1)[1])
        rss_before = _rss_kib(proc.pid)
        big = RawClient(port, timeout=10)
        try:
            assert create(big, "small").error_code == 0
            big.send(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="huge", num_partitions=2**31 - 1, replication_factor=1, assignments=[], configs=[])],
                timeout_ms=10000))
            assert _api_versions_answered(port)
            _, answer = big.receive(ApiKey.CREATE_TOPICS, 5)
            assert answer.topics[0].error_code == PolicyViolationError.code
            assert "10000" in answer.topics[0].error_message
            big.send(ApiKey.CREATE_PARTITIONS, 1, CreatePartitionsRequest(topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(name="small", count=2**31 - 1, assignments=None)],
                timeout_ms=10000, validate_only=False))
            assert _api_versions_answered(port)
            _, answer = big.receive(ApiKey.CREATE_PARTITIONS, 1)
            assert answer.results[0].error_code == PolicyViolationError.code
            # Kafka counts -1 as num.partitions and adds up the topics of one request.
            answer = big.request(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[
                CreateTopicsRequest.CreatableTopic(name=f"t{i}", num_partitions=5001, replication_factor=1,
                                                   assignments=[], configs=[]) for i in range(2)], timeout_ms=10000))
            assert {t.error_code for t in answer.topics} == {PolicyViolationError.code}
        finally:
            big.close()
        assert _rss_kib(proc.pid) < rss_before + 50_000  # KiB: nothing was allocated per partition
        assert not list(tmp_path.glob("huge-*")) and not list(tmp_path.glob("t0-*"))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        _kill(proc)


def test_the_event_loop_runs_between_the_partitions_being_made(tmp_path):
    """Issue 10, item 9: making a partition on disk costs fsyncs (milliseconds); the event
    loop, which serves every connection, runs between partitions instead of after the
    whole request. Counted deterministically: another task's turns while they are made."""

    async def main():
        state = BrokerState(BrokerConfig({"log.dirs": str(tmp_path)}), "127.0.0.1", 9092)
        turns = 0

        async def other_connection():
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(other_connection())
        await asyncio.sleep(0)
        try:
            topic = state.new_topic("wide")
            before = turns
            await state.grow_topic(topic, 100)
            return turns - before, state
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            state.close()

    turns, state = asyncio.run(main())
    assert turns >= 99
    assert len(state.topics["wide"].partitions) == 100 and len(list(tmp_path.glob("wide-*"))) == 100
    with MiniBroker(data_dir=tmp_path) as broker:
        assert len(broker._server.state.topics["wide"].partitions) == 100


def test_a_topic_deleted_while_its_partitions_are_made_leaves_nothing(tmp_path):
    """Issue 10, item 9: now that other requests run between partitions, a DeleteTopics
    may come in the middle of a CreateTopics; what was made goes, the topics file never
    lists the topic, and its name cannot be taken again until the creation is over."""

    async def main():
        state = BrokerState(BrokerConfig({"log.dirs": str(tmp_path)}), "127.0.0.1", 9092)
        try:
            topic = state.new_topic("brief")
            growing = asyncio.create_task(state.grow_topic(topic, 50))
            for _ in range(10):
                await asyncio.sleep(0)
            assert "brief" in state.growing and list(tmp_path.glob("brief-*"))
            state.delete_topic(topic)
            assert "brief" in state.growing  # a CreateTopics of it is refused meanwhile
            await growing
            assert "brief" not in state.growing and "brief" not in state.topics
        finally:
            state.close()

    asyncio.run(main())
    assert "brief" not in json.loads((tmp_path / "minibroker-topics.json").read_text())
    assert not list(tmp_path.glob("brief-*"))


def test_a_name_being_created_is_refused_by_create_topics(broker):
    """Issue 10, item 9: CreateTopics of a name whose partitions are being made answers
    TOPIC_ALREADY_EXISTS."""
    broker._server.state.growing.add("busy")
    c = RawClient(broker.port)
    try:
        assert create(c, "busy").error_code == TopicAlreadyExistsError.code
    finally:
        c.close()
        broker._server.state.growing.discard("busy")


def test_without_a_topics_file_directories_are_left_alone_until_their_name_is_created(tmp_path):
    """Issue 10, item 6: a data directory minibroker never wrote a topic to (a copy of
    someone's logs) is not tidied away on start; a CreateTopics of a name whose directory
    holds another topic id sets that directory aside instead of opening it."""
    foreign = tmp_path / "t-0"
    foreign.mkdir()
    (foreign / "partition.metadata").write_text(f"version: 0\ntopic_id: {kafka_uuid(uuid.uuid4())}\n")
    (foreign / "00000000000000000000.log").write_bytes(b"not ours")
    with MiniBroker(data_dir=tmp_path) as broker:
        assert (foreign / "00000000000000000000.log").read_bytes() == b"not ours"
        c = RawClient(broker.port)
        try:
            created = create(c, "t", version=7)
        finally:
            c.close()
        assert created.error_code == 0
        assert broker._server.state.topics["t"].partitions[0].log.log_end_offset == 0
    (stray,) = tmp_path.glob("t-0.*-stray")
    assert (stray / "00000000000000000000.log").read_bytes() == b"not ours"
    assert _topic_id_on_disk(tmp_path / "t-0") == kafka_uuid(created.topic_id)


@pytest.fixture
def small_disk(small_disk):
    """The directory of tests/minibroker/conftest.py's small tmpfs."""
    return small_disk.path


def test_a_full_disk_while_partitions_are_made_is_a_storage_error(small_disk):
    """Issue 10, item 9: partitions made one by one may meet a full disk midway; the
    answer is KAFKA_STORAGE_ERROR, nothing of the topic is left, and the broker serves on."""
    with MiniBroker(data_dir=small_disk) as broker:
        c = RawClient(broker.port)
        try:
            answer = create(c, "big", partitions=2000)
            assert answer.error_code == KafkaStorageError.code, answer
            assert "big" not in broker._server.state.topics
            assert not list(small_disk.glob("big-*"))
            assert create(c, "small").error_code == 0
        finally:
            c.close()
