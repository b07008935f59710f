"""Fetch from the closest replica (KIP-392) in a MiniCluster with racks a, b, c and Kafka's
RackAwareReplicaSelector (issue 13 step 2, item 3): confluent-kafka's consumer with
``client.rack=b`` reads every record from the rack-b replica, which never serves a
record above its own high watermark. Fetches are counted on the broker side, by a
wrapper around the Fetch handler that every broker of the process dispatches to.
"""

import collections
import time

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataRequest
from kproto.records import decode_record_set
from minibroker.config import RACK_AWARE_SELECTOR
from minibroker.handlers import HANDLERS
from tests.minibroker.cluster.conftest import _nothing_left
from tests.support.raw_client import RawClient

TOPIC = "near"
N = 50


@pytest.fixture
def racked(tmp_path):
    with _nothing_left(brokers=3, racks=["a", "b", "c"], data_dir=tmp_path / "cluster",
                       config={"replica.selector.class": RACK_AWARE_SELECTOR}) as cluster:
        yield cluster


@pytest.fixture
def served(monkeypatch):
    """Consumer fetches as each broker answered them: node id -> [(partition, first offset
    served or None, last offset served or None, high watermark answered, preferred read
    replica answered)]."""
    seen = collections.defaultdict(list)
    lo, hi, handle = HANDLERS[ApiKey.FETCH]

    async def counting(state, header, request):
        response = await handle(state, header, request)
        replica = request.replica_state.replica_id if header.api_version >= 15 else request.replica_id
        if replica < 0 and response is not None:
            for topic in response.responses:
                for p in topic.partitions:
                    raw = p.records.tobytes() if hasattr(p.records, "tobytes") else bytes(p.records or b"")
                    offsets = [r.offset for r in decode_record_set(raw)[0]] if raw else []
                    seen[state.node_id].append((p.partition_index, offsets[0] if offsets else None,
                                                offsets[-1] if offsets else None, p.high_watermark,
                                                p.preferred_read_replica))
        return response

    monkeypatch.setitem(HANDLERS, ApiKey.FETCH, (lo, hi, counting))
    return seen


def test_metadata_tells_each_brokers_rack(racked):
    """``racks=`` sets ``broker.rack``, which Metadata's brokers carry (v1+): what a
    KIP-392 client compares its ``client.rack`` with."""
    client = RawClient(racked.brokers[0].port)
    try:
        answer = client.request(ApiKey.METADATA, 12, MetadataRequest(topics=[], allow_auto_topic_creation=False))
    finally:
        client.close()
    assert sorted((b.node_id, b.rack) for b in answer.brokers) == [(0, "a"), (1, "b"), (2, "c")]


def test_a_consumer_in_rack_b_reads_every_record_from_the_rack_b_replica(racked, served):
    ck = pytest.importorskip("confluent_kafka")
    racked.create_topic(TOPIC, partitions=3, replication_factor=3)
    near = next(b.node_id for b in racked.brokers if b.rack == "b")
    partition = next(p for p in range(3) if racked.leader_of(TOPIC, p) != near)
    leader = racked.leader_of(TOPIC, partition)
    racked.wait_for_isr(TOPIC, partition, 3)
    producer = ck.Producer({"bootstrap.servers": racked.bootstrap_servers, "acks": "all"})
    for i in range(N):
        producer.produce(TOPIC, value=b"%d" % i, partition=partition)
    assert producer.flush(20) == 0
    consumer = ck.Consumer({"bootstrap.servers": racked.bootstrap_servers, "group.id": "g",
                            "client.rack": "b", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([ck.TopicPartition(TOPIC, partition, 0)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < N and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.append(message.value())
    finally:
        consumer.close()
    assert got == [b"%d" % i for i in range(N)]
    # The leader named the rack-b replica and served no record; the rack-b replica served them all.
    ours = {node: [a for a in answers if a[0] == partition] for node, answers in served.items()}
    assert any(a[4] == near for a in ours[leader])
    assert all(a[1] is None for a in ours[leader])
    read_from_b = sorted({o for a in ours[near] if a[1] is not None for o in range(a[1], a[2] + 1)})
    assert read_from_b == list(range(N))
    # Never a record at or above the high watermark it answered with: only committed ones.
    assert all(a[2] < a[3] for a in ours[near] if a[2] is not None)
