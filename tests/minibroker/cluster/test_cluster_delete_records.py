"""DeleteRecords in a MiniCluster (issue 13 step 2, item 5.2): the leader moves its log
start, the followers learn it from their Fetch answers and move theirs, and the answer
waits until every replica on a live broker has (Kafka's ``DelayedDeleteRecords`` and
``Partition.lowWatermarkIfLeader``), bounded by the request's timeout."""

import time

import pytest

from kproto import AdminClient
from kproto.errors import RequestTimedOutError
from kproto.protocol import ApiKey
from kproto.protocol.messages import DeleteRecordsRequest
from kproto.structs import TopicPartition
from minibroker.cluster import MiniCluster
from tests.minibroker.cluster.conftest import produce_raw, replica_log
from tests.support.raw_client import RawClient

TOPIC = "t"


def _log_starts(cluster, topic=TOPIC):
    return {node: replica_log(cluster, node, topic).log_start_offset for node in cluster.describe(topic)[0].replicas}


def _topic_of_ten(cluster):
    """An RF=3 topic holding offsets 0-9 on every replica; its leader."""
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    leader = cluster.leader_of(TOPIC, 0)
    cluster.wait_for_isr(TOPIC, 0, 3)
    assert produce_raw(cluster.brokers[leader].port, TOPIC, [b"%d" % i for i in range(10)]) == (0, 0)
    return leader


def _delete_raw(port, offset, timeout_ms):
    """DeleteRecords v2 of partition 0 to the broker at ``port``: (error code, low watermark)."""
    client = RawClient(port, timeout=timeout_ms / 1000 + 10)
    try:
        answer = client.request(ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(name=TOPIC, partitions=[
                DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=offset)])]))
    finally:
        client.close()
    p = answer.topics[0].partitions[0]
    return p.error_code, p.low_watermark


def test_kproto_delete_records_answers_once_every_replica_moved_its_log_start(cluster3):
    """The answer is the low watermark; by then all three replicas start there, and
    ListOffsets EARLIEST answers it."""
    _topic_of_ten(cluster3)
    tp = TopicPartition(TOPIC, 0)
    with AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}) as admin:
        assert admin.delete_records({tp: 6}) == {tp: 6}
        assert _log_starts(cluster3) == {0: 6, 1: 6, 2: 6}
        assert admin.list_offsets({tp: "earliest"})[tp].offset == 6
        assert admin.delete_records({tp: -1}) == {tp: 10}  # -1: the high watermark
        assert _log_starts(cluster3) == {0: 10, 1: 10, 2: 10}


def test_confluent_kafka_delete_records_answers_the_low_watermark(cluster3):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    _topic_of_ten(cluster3)
    admin = CkAdmin({"bootstrap.servers": cluster3.bootstrap_servers})
    [future] = admin.delete_records([ck.TopicPartition(TOPIC, 0, 4)], operation_timeout=10).values()
    assert future.result(15).low_watermark == 4
    assert _log_starts(cluster3) == {0: 4, 1: 4, 2: 4}


def test_delete_records_times_out_while_a_dead_follower_is_not_fenced(tmp_path):
    """A killed follower counts until the controller fences it: with a session that
    outlasts the request's timeout, the answer is REQUEST_TIMED_OUT with the low watermark
    as it was (the leader's records are gone anyway)."""
    with MiniCluster(brokers=3, data_dir=tmp_path / "cluster", config={"broker.session.timeout.ms": 60000}) as cluster:
        leader = _topic_of_ten(cluster)
        follower = next(r for r in cluster.describe(TOPIC)[0].replicas if r != leader)
        cluster.kill(follower, wait=False)
        assert _delete_raw(cluster.brokers[leader].port, 3, timeout_ms=300) == (RequestTimedOutError.code, 0)
        assert replica_log(cluster, leader, TOPIC).log_start_offset == 3


def test_delete_records_answers_without_a_follower_once_it_is_fenced(cluster3):
    """The low watermark counts the replicas on live brokers only (hasAliveBroker): a
    killed follower holds the answer until its session expires, then the answer leaves."""
    leader = _topic_of_ten(cluster3)
    follower = next(r for r in cluster3.describe(TOPIC)[0].replicas if r != leader)
    cluster3.kill(follower, wait=False)
    assert _delete_raw(cluster3.brokers[leader].port, 5, timeout_ms=20000) == (0, 5)
    assert follower not in cluster3.isr_of(TOPIC, 0)  # fenced (out of the ISR in the same commit)
    others = {node: start for node, start in _log_starts(cluster3).items() if node != follower}
    assert others == {node: 5 for node in others}


def test_a_follower_that_was_down_starts_at_the_new_log_start_after_restart(cluster3):
    """A follower killed before records it never had were deleted comes back with a log
    that ends before the leader's log start: it starts again there (Kafka's
    ``fetchOffsetAndTruncate``) and catches up."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    leader = cluster3.leader_of(TOPIC, 0)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    port = cluster3.brokers[leader].port
    assert produce_raw(port, TOPIC, [b"a", b"b"]) == (0, 0)
    follower = next(r for r in cluster3.describe(TOPIC)[0].replicas if r != leader)
    cluster3.kill(follower)
    assert produce_raw(port, TOPIC, [b"%d" % i for i in range(8)]) == (0, 2)
    tp = TopicPartition(TOPIC, 0)
    with AdminClient({"bootstrap.servers": cluster3.brokers[leader].bootstrap_servers}) as admin:
        assert admin.delete_records({tp: 8}) == {tp: 8}
    dead = replica_log(cluster3, follower, TOPIC)  # the killed broker's files, as it left them
    assert (dead.log_start_offset, dead.log_end_offset) == (0, 2)
    cluster3.restart(follower)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    deadline = time.monotonic() + 10
    while replica_log(cluster3, follower, TOPIC).log_start_offset != 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    log = replica_log(cluster3, follower, TOPIC)
    assert (log.log_start_offset, log.log_end_offset) == (8, 10)
    assert _log_starts(cluster3) == {0: 8, 1: 8, 2: 8}
