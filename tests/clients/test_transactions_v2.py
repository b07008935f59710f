"""kproto's transactional producer and KIP-890 part 2 (issue 14 step 2, items 3 and 4).

With a coordinator that finalizes ``transaction.version`` 2 (and offers EndTxn v5 and
Produce v12) the producer sends no AddPartitionsToTxn, produces with v12 and ends with
EndTxn v5, taking the next epoch from its answer; with transaction version 0 or 1, or a
broker without features (Tansu), it keeps the KIP-98 protocol (EndTxn <= v4, Produce <= v11).
The requests are seen on the wire through the fault proxy, in front of a MiniBroker at each
transaction version. Peer clients (confluent-kafka, kafka-python, aiokafka) do not know
transaction version 2 and keep working when a broker advertises it."""

import asyncio
import threading
import uuid

import pytest

from kproto import AdminClient, Consumer, Producer
from kproto.admin import NewTopic
from kproto.protocol import APIS, ApiKey
from kproto.records import read_batch_header
from kproto.structs import TopicPartition
from tests.clients.test_transactions import read
from tests.support.proxy import FORWARD, FaultProxy

ck = pytest.importorskip("confluent_kafka")


def fresh(name):
    return f"{name}-{uuid.uuid4().hex[:8]}"


class Wire:
    """A proxy rule that forwards everything and notes (api name, version), and the
    (producer id, epoch, sequence) of every Produce batch."""

    def __init__(self):
        self.seen: list[tuple[str, int]] = []
        self.batches: list[tuple[int, int, int]] = []
        self.lock = threading.Lock()

    def __call__(self, key, version, body, n):
        with self.lock:
            self.seen.append((APIS[key].name, version))
            if key == ApiKey.PRODUCE and body.transactional_id is not None:
                for t in body.topic_data:
                    for p in t.partition_data:
                        h = read_batch_header(p.records)
                        self.batches.append((h.producer_id, h.producer_epoch, h.base_sequence))
        return FORWARD

    def versions(self, name):
        with self.lock:
            return {v for n, v in self.seen if n == name}


def _read_committed(bootstrap, topic, count, partitions=2):
    """``count`` values of both partitions of ``topic``, read_committed by kproto's consumer
    (which closes its connections before it returns, unlike librdkafka's, whose late
    reconnects to the fault proxy outlive a test)."""
    got = []
    with Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed", fetch_max_wait_ms=100) as c:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        for _ in range(100):
            got += [r.value for r in c.poll(0.1)]
            if len(got) >= count:
                break
        got += [r.value for r in c.poll(0.2)]  # nothing more (an aborted record would show here)
    return sorted(got)


def _two_transactions(bootstrap, topic):
    """A committed transaction on both partitions, then an aborted one, then a committed one."""
    with Producer(bootstrap_servers=bootstrap, transactional_id=fresh("tv")) as producer:
        producer.init_transactions()
        with producer.transaction():
            producer.send(topic, b"c0", partition=0)
            producer.send(topic, b"c1", partition=1)
        producer.begin_transaction()
        producer.send(topic, b"aborted", partition=0).result(20)
        producer.abort_transaction()
        with producer.transaction():
            producer.send(topic, b"last0", partition=0)
            producer.send(topic, b"last1", partition=1)
        return producer._core._idempotence.transaction_v2


@pytest.mark.parametrize("level", [2, 1, 0])
def test_the_producer_uses_transaction_version_2_only_where_finalized(level):
    """issue 14 step 2, item 3: TV2: no AddPartitionsToTxn, Produce v12, EndTxn v5, each
    transaction one epoch up from sequence 0; below: AddPartitionsToTxn, Produce <= v11,
    EndTxn <= v4, one epoch. Either way read_committed sees the commits only."""
    wire = Wire()
    with FaultProxy(wire, **{"transaction.version": level, "num.partitions": 2}) as proxy:
        topic = fresh("tv")
        with AdminClient(bootstrap_servers=proxy.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(topic, 2, 1)])
        assert _two_transactions(proxy.bootstrap_servers, topic) is (level == 2)
        assert _read_committed(proxy.bootstrap_servers, topic, 4) == [b"c0", b"c1", b"last0", b"last1"]
        epochs = sorted({epoch for _, epoch, _ in wire.batches})
        if level == 2:
            assert wire.versions("AddPartitionsToTxn") == set()
            assert wire.versions("Produce") == {12} and wire.versions("EndTxn") == {5}
            assert len(epochs) == 3 and epochs == list(range(epochs[0], epochs[0] + 3))  # one per transaction
            assert all(seq == 0 for _, _, seq in wire.batches)  # every transaction from sequence 0
        else:
            assert wire.versions("AddPartitionsToTxn") and max(wire.versions("Produce")) <= 11
            assert max(wire.versions("EndTxn")) <= 4 and len(epochs) == 1


def test_against_tansu_the_producer_keeps_the_kip98_protocol(tansu_broker):
    """issue 14 step 2, item 3: Tansu finalizes no features: transaction version 1's
    protocol (AddPartitionsToTxn first), and the transactions still commit and abort."""
    bootstrap = tansu_broker.bootstrap_servers
    topic = fresh("tansu-tv")
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
    assert _two_transactions(bootstrap, topic) is False
    # Every commit is there (whether Tansu's read_committed hides the abort is not this test's matter).
    assert {b"c0", b"c1", b"last0", b"last1"} <= set(read(bootstrap, topic, 2, until={b"last0", b"last1"}))


def test_peer_clients_keep_the_kip98_protocol_against_a_tv2_broker():
    """issue 14 step 2, item 4: confluent-kafka (librdkafka), kafka-python and aiokafka do
    not implement KIP-890 part 2: against a broker finalizing transaction.version 2 they
    add their partitions with AddPartitionsToTxn v0-v3, produce below v12 and end with
    EndTxn below v5, and their transactions commit."""
    kafka = pytest.importorskip("kafka")
    aiokafka = pytest.importorskip("aiokafka")
    wire = Wire()
    with FaultProxy(wire, **{"transaction.version": 2}) as proxy:
        bootstrap = proxy.bootstrap_servers
        topic = fresh("peers")
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            admin.create_topics([NewTopic(topic, 1, 1)])

        def confluent():
            p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": fresh("ck")})
            p.init_transactions(20)
            p.begin_transaction()
            p.produce(topic, b"ck", partition=0)
            p.commit_transaction(20)

        def kafka_python():
            p = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=fresh("kp"))
            try:
                p.init_transactions()
                p.begin_transaction()
                p.send(topic, b"kp", partition=0)
                p.commit_transaction()
            finally:
                p.close()

        def aio():
            async def run():
                p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=fresh("aio"))
                await p.start()
                try:
                    async with p.transaction():
                        await p.send_and_wait(topic, b"aio", partition=0)
                finally:
                    await p.stop()
            asyncio.run(run())

        for client in (confluent, kafka_python, aio):
            before = len(wire.seen)
            client()
            with wire.lock:
                theirs = wire.seen[before:]
            used = {name: {v for n, v in theirs if n == name} for name in ("AddPartitionsToTxn", "Produce", "EndTxn")}
            assert used["AddPartitionsToTxn"] and max(used["AddPartitionsToTxn"]) <= 3, (client.__name__, used)
            assert max(used["Produce"]) <= 11 and max(used["EndTxn"]) <= 4, (client.__name__, used)
        assert _read_committed(bootstrap, topic, 3, partitions=1) == [b"aio", b"ck", b"kp"]
