"""Issue 11, "the first hour": what a new user of kproto hit, with the habits of
confluent-kafka, kafka-python and aiokafka users, each replayed as that user did it."""

import asyncio
import gc
import inspect
import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

from kproto.admin import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AdminClient,
    AIOAdminClient,
    ConfigResource,
    ResourcePattern,
)
from kproto.consumer import AIOConsumer, Consumer
from kproto.errors import ClientClosedError, ConfigError, InvalidTopicError, KafkaTimeoutError
from kproto.producer import AIOProducer, Producer
from kproto.structs import ConsumerGroupMetadata, TopicPartition
from minibroker import MiniBroker
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)


@pytest.fixture(scope="module")
def minibroker_config():
    return {"num.partitions": 2}


@pytest.mark.parametrize("topic, error", [
    (None, TypeError), (b"t", TypeError), (5, TypeError), ("", InvalidTopicError),
    (".", InvalidTopicError), ("..", InvalidTopicError), ("a b", InvalidTopicError),
    ("x" * 250, InvalidTopicError), ("ok\n", InvalidTopicError), ("é", InvalidTopicError)])
def test_a_bad_topic_fails_at_once_and_does_not_poison_the_producer(broker, topic, error):
    """Issue 11, "send(None, b'x')": it blocked for max.block.ms or raised a TypeError from
    sorting, and then every send to a new topic failed the same way."""
    with Producer(bootstrap_servers=broker.bootstrap_servers, max_block_ms=5000) as producer:
        with pytest.raises(error, match="topic"):
            producer.send(topic, b"x")
        assert producer.send("fresh-after-bad", b"x").result(10).offset >= 0
        with pytest.raises(error, match="topic"):
            producer.partitions_for(topic)


def test_a_bad_topic_fails_at_once_in_asyncio_too(broker):
    """Issue 11, "send(None, b'x')", the asyncio face."""
    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers, max_block_ms=5000) as producer:
            with pytest.raises(TypeError, match="topic name must be a str"):
                producer.send(None, b"x")
            with pytest.raises(InvalidTopicError):
                producer.send("no/slash", b"x")
            assert (await producer.send("fresh-after-bad-aio", b"x")).offset >= 0
    asyncio.run(main())


# -- a closed client refuses every call -----------------------------------------------------

_ARGS = {  # a plausible value for each required parameter of a public client method
    "topic": "t", "topics": ["t"], "value": b"v", "partitions": [TopicPartition("t", 0)],
    "partition": TopicPartition("t", 0), "offsets": {TopicPartition("t", 0): 1}, "offset": 1,
    "timestamps": {TopicPartition("t", 0): 0}, "counts": {"t": 2}, "resources": [ConfigResource.topic("t")],
    "configs": {ConfigResource.topic("t"): {"retention.ms": "1"}}, "group_ids": ["g"], "group_id": "g",
    "specs": {TopicPartition("t", 0): "latest"}, "before": {TopicPartition("t", 0): 0},
    "changes": {ConfigResource.topic("t"): [("retention.ms", "set", "1")]},
    "group_metadata": ConsumerGroupMetadata(group_id="g"), "transactional_ids": ["x"], "producer_id": 1,
    "producer_epoch": 0, "coordinator_epoch": 0,
    "acls": [AclBinding(ResourcePattern("TOPIC", "t"), AccessControlEntry("User:a"))], "filters": [AclBindingFilter()],
    "alterations": [], "values": [b"v"]}


def _public_calls(cls):
    """Every public method of ``cls`` but close (and stop, its aiokafka name), with arguments."""
    for name, method in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_") or name in ("close", "stop"):  # idempotent, as close
            continue
        args = []
        for p in list(inspect.signature(method).parameters.values())[1:]:
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                assert p.name in _ARGS, f"add a value for {cls.__name__}.{name}({p.name}) to _ARGS"
                args.append(_ARGS[p.name])
        yield name, args


def _clients(bootstrap):
    config = {"bootstrap.servers": bootstrap}
    return {"producer": (Producer, AIOProducer, config), "consumer": (Consumer, AIOConsumer, {**config, "group.id": "g"}),
            "admin": (AdminClient, AIOAdminClient, config)}


@pytest.mark.parametrize("kind", ["producer", "consumer", "admin"])
def test_every_method_of_a_closed_sync_client_raises_client_closed(broker, kind, recwarn):
    """Issue 11, "after close()": flush(), partitions_for(), list_topics() raised "Event loop
    is closed" with a never-awaited warning; every public method is tried, by introspection."""
    sync, _, config = _clients(broker.bootstrap_servers)[kind]
    client = sync(config)
    client.close()
    calls = list(_public_calls(sync))
    assert len(calls) >= 3
    for name, args in calls:
        with pytest.raises(ClientClosedError):
            getattr(client, name)(*args)
    client.close()  # idempotent
    if kind == "consumer":
        with pytest.raises(ClientClosedError):
            next(iter(client))
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


@pytest.mark.parametrize("kind", ["producer", "consumer", "admin"])
def test_every_method_of_a_closed_asyncio_client_raises_client_closed(broker, kind, recwarn):
    """Issue 11, "after close()", the asyncio faces: each call (awaited when it is a
    coroutine) raises ClientClosedError; ``async for`` over a closed consumer too."""
    _, aio, config = _clients(broker.bootstrap_servers)[kind]

    async def main():
        client = aio(config)
        if kind == "producer":
            await client.start()
        await client.close()
        calls = list(_public_calls(aio))
        assert len(calls) >= 3
        for name, args in calls:
            with pytest.raises(ClientClosedError):
                result = getattr(client, name)(*args)
                if inspect.isawaitable(result):
                    await result
        await client.close()
        if kind == "consumer":
            with pytest.raises(ClientClosedError):
                async for _ in client:
                    pass
    asyncio.run(main())
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


# -- an asyncio client used from a second event loop -------------------------------------------

def test_an_aio_producer_used_from_a_second_loop_raises_at_once(broker):
    """Issue 11, "a second event loop": an AIOProducer used by two ``asyncio.run`` calls hung
    forever in ``await send()``, past max.block.ms and delivery.timeout.ms."""
    producer = AIOProducer(bootstrap_servers=broker.bootstrap_servers, max_block_ms=2000, delivery_timeout_ms=3000,
                           request_timeout_ms=2000)

    async def first():
        return await producer.send("two-loops", b"1")

    async def second():
        for call in (lambda: producer.send("two-loops", b"2"), lambda: producer.send("two-loops-new", b"3"),
                     producer.flush, lambda: producer.partitions_for("two-loops")):
            with pytest.raises(RuntimeError, match="started on another event loop .* Producer"):
                await asyncio.wait_for(call(), 10)  # the wait_for only keeps a regression from hanging
        await asyncio.wait_for(producer.close(), 10)

    assert asyncio.run(first()).offset == 0
    asyncio.run(second())
    with pytest.raises(ClientClosedError):
        producer.send("two-loops", b"4")
    producer = None
    gc.collect()  # its first loop ended without closing its sockets: they go with it


def test_an_aio_consumer_used_from_a_second_loop_raises_at_once(broker):
    """Issue 11, "a second event loop": AIOConsumer failed with an internal "bound to a
    different event loop" (or hung in close)."""
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send("two-loops-c", b"1").result(10)
    consumer = AIOConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="two-loops", auto_offset_reset="earliest")

    async def first():
        consumer.subscribe(["two-loops-c"])
        return await consumer.poll(10)

    async def second():
        with pytest.raises(RuntimeError, match="started on another event loop .* Consumer"):
            await asyncio.wait_for(consumer.poll(1), 10)
        await asyncio.wait_for(consumer.close(), 10)

    assert [r.value for r in asyncio.run(first())] == [b"1"]
    asyncio.run(second())
    consumer = None
    gc.collect()


def test_an_aio_admin_client_used_from_a_second_loop_raises_at_once(broker):
    """Issue 11, "a second event loop", for the admin client."""
    admin = AIOAdminClient(bootstrap_servers=broker.bootstrap_servers)
    asyncio.run(admin.list_topics())

    async def second():
        with pytest.raises(RuntimeError, match="started on another event loop .* AdminClient"):
            await asyncio.wait_for(admin.list_topics(), 10)
        await asyncio.wait_for(admin.close(), 10)

    asyncio.run(second())
    admin = None
    gc.collect()


# -- constructors need no broker ----------------------------------------------------------------

@pytest.fixture
def late_broker():
    """A broker that starts listening one second after the test began: (bootstrap, thread)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    broker = MiniBroker(port=port, config={"num.partitions": 1})
    starter = threading.Timer(1.0, broker.start)
    starter.start()
    yield f"127.0.0.1:{port}"
    starter.join()
    broker.stop()


def test_clients_made_before_the_broker_starts_work_once_it_does(late_broker, caplog):
    """Issue 11, "Producer(...) raises NoBrokersAvailableError at once when the broker starts a
    second later": constructors connect lazily (as Java and librdkafka), the first call
    waits for the cluster, and the cause is logged once, not at every retry."""
    producer = Producer(bootstrap_servers=late_broker, max_block_ms=20000)
    admin = AdminClient(bootstrap_servers=late_broker)
    consumer = Consumer(bootstrap_servers=late_broker, group_id="late", auto_offset_reset="earliest")
    try:
        assert producer.send("late", b"x").result(20).offset == 0
        assert "late" in admin.list_topics()
        consumer.subscribe(["late"])
        deadline = time.monotonic() + 20
        records = []
        while not records and time.monotonic() < deadline:
            records = consumer.poll(1)
        assert [r.value for r in records] == [b"x"]
    finally:
        producer.close()
        admin.close()
        consumer.close()
    causes = [r.getMessage() for r in caplog.records if "could be reached" in r.getMessage()]
    assert len(causes) == len(set(causes))


def test_an_admin_client_made_before_the_broker_waits_for_it_in_asyncio(late_broker):
    """Issue 11, lazy constructors, the asyncio admin client's first call."""
    async def main():
        async with AIOAdminClient(bootstrap_servers=late_broker) as admin:
            return await admin.list_topics()
    assert asyncio.run(main()) == []


def test_a_send_to_a_missing_topic_with_auto_creation_off_says_so():
    """Issue 11, "a missing topic with auto-create off blocks 60 s, then says 'not in the
    metadata'": the error says the topic does not exist and auto-creation is off."""
    with MiniBroker(config={"auto.create.topics.enable": False}) as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers, max_block_ms=1000) as producer:
            with pytest.raises(KafkaTimeoutError, match="does not exist .*UNKNOWN_TOPIC_OR_PARTITION.*"
                                                        "auto.create.topics.enable=false"):
                producer.send("missing", b"x")
            with pytest.raises(KafkaTimeoutError, match="does not exist"):
                producer.partitions_for("missing")


# -- a script that exits without close() -------------------------------------------------------

_SCRIPT = """
import sys
from kproto.producer import Producer
producer = Producer(bootstrap_servers=sys.argv[1], linger_ms=200)
for i in range(3):
    producer.send(sys.argv[2], b"%d" % i)
"""


def test_a_script_that_exits_without_close_still_delivers_and_warns(broker):
    """Issue 11, "a script that sends with linger.ms=200 and exits without close() loses
    every record, silently": at exit the producer sends them and warns (kafka-python's habit)."""
    done = subprocess.run([sys.executable, "-c", _SCRIPT, broker.bootstrap_servers, "exit-unclosed"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert "Producer was not closed" in done.stderr
    with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("exit-unclosed", p) for p in (0, 1)])
        records, deadline = [], time.monotonic() + 10
        while len(records) < 3 and time.monotonic() < deadline:
            records += consumer.poll(0.5)
    assert sorted(r.value for r in records) == [b"0", b"1", b"2"]


_AIO_SCRIPT = """
import asyncio, sys
from kproto.producer import AIOProducer
async def main():
    producer = AIOProducer(bootstrap_servers=sys.argv[1], linger_ms=200)
    await producer.partitions_for(sys.argv[2])
    producer.send(sys.argv[2], b"x")
asyncio.run(main())
"""


def test_an_aio_script_that_ends_its_loop_without_close_is_told_what_was_lost(broker):
    """Issue 11, exit without close(), asyncio: the loop that would send has ended, so
    nothing can go; the warning says so instead of silence."""
    done = subprocess.run([sys.executable, "-c", _AIO_SCRIPT, broker.bootstrap_servers, "exit-unclosed-aio"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert "AIOProducer was not closed before its event loop ended: 1 batches" in done.stderr


# -- errors that explain themselves ---------------------------------------------------------

@pytest.mark.parametrize("record, setting", [
    ({"value": "text"}, "value.serializer"), ({"value": 5}, "value.serializer"),
    ({"value": b"v", "key": "text"}, "key.serializer"), ({"value": b"v", "key": 5}, "key.serializer"),
    ({"value": b"v", "headers": [("h", "text")]}, "encode them")])
def test_a_record_that_is_not_bytes_names_the_setting_to_set(broker, record, setting):
    """Issue 11, "a str/int key or value with no serializer": the error says which setting
    (key.serializer, value.serializer) turns it into bytes, the same way for header values."""
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.partitions_for("not-bytes")
        with pytest.raises(TypeError, match=f"must be bytes-like or None, not .*: .*{setting}"):
            producer.send("not-bytes", **record)


@pytest.mark.parametrize("value", ["abc", None, 1.5, [200]])
def test_a_setting_of_the_wrong_type_names_the_key_and_the_type_expected(value):
    """Issue 11, ``linger_ms="abc"``: a ConfigError naming the key and the expected type."""
    with pytest.raises(ConfigError, match=r"^linger\.ms=.*: expected an integer .*not " + type(value).__name__):
        Producer(bootstrap_servers="127.0.0.1:9", linger_ms=value)


# -- the consumer as kafka-python and aiokafka users write it -------------------------------

def _produce(bootstrap, topic, values):
    with Producer(bootstrap_servers=bootstrap) as producer:
        for v in values:
            producer.send(topic, v, partition=0)


def _poll_until(consumer, count, seconds=15):
    records, deadline = [], time.monotonic() + seconds
    while len(records) < count and time.monotonic() < deadline:
        records += consumer.poll(0.5)
    return records


def test_resubscribing_with_another_form_replaces_the_subscription(broker):
    """Issue 11, "subscribe(re.compile(...)) after a list said 'subscribe() and assign() are
    mutually exclusive'": a new subscribe() replaces the old one, whatever its form."""
    _produce(broker.bootstrap_servers, "resub-a", [b"a"])
    _produce(broker.bootstrap_servers, "resub-b", [b"b"])
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="resub", auto_offset_reset="earliest") as c:
        c.subscribe(["resub-a"])
        assert [r.value for r in _poll_until(c, 1)] == [b"a"]
        c.subscribe(re.compile(r"resub-b"))
        assert [r.value for r in _poll_until(c, 1)] == [b"b"]
        assert c.subscription() == {"resub-b"}
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="resub-2") as c:
        c.assign([TopicPartition("resub-a", 0)])
        with pytest.raises(RuntimeError, match=r"subscribe\(\) after assign\(\).*unsubscribe\(\)"):
            c.subscribe(["resub-a"])


def test_a_topic_starting_with_a_caret_is_a_pattern(broker):
    """Issue 11, ``subscribe("^orders-.*")`` subscribed to a literal topic of that name: a
    leading ``^`` makes a pattern, as in librdkafka (alone or in a list)."""
    _produce(broker.bootstrap_servers, "caret-1", [b"1"])
    _produce(broker.bootstrap_servers, "caret-2", [b"2"])
    _produce(broker.bootstrap_servers, "plain-3", [b"3"])
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="caret", auto_offset_reset="earliest") as c:
        c.subscribe("^caret-.*")
        assert sorted(r.value for r in _poll_until(c, 2)) == [b"1", b"2"]
        assert c.subscription() == {"caret-1", "caret-2"}
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="caret-list", auto_offset_reset="earliest") as c:
        c.subscribe(["^caret-.*", "plain-3"])
        assert sorted(r.value for r in _poll_until(c, 3)) == [b"1", b"2", b"3"]


def test_a_topic_given_to_the_constructor_is_subscribed_to(broker):
    """Issue 11, ``Consumer("topic", bootstrap_servers=...)`` (kafka-python's and aiokafka's
    habit) failed with an unrelated ValueError: it subscribes, as theirs do; without a
    group it says exactly what to write."""
    _produce(broker.bootstrap_servers, "ctor-topic", [b"x"])
    with Consumer("ctor-topic", bootstrap_servers=broker.bootstrap_servers, group_id="ctor",
                  auto_offset_reset="earliest") as c:
        assert [r.value for r in _poll_until(c, 1)] == [b"x"]

    async def main():
        async with AIOConsumer(["ctor-topic"], bootstrap_servers=broker.bootstrap_servers, group_id="ctor-aio",
                               auto_offset_reset="earliest") as c:
            return await c.poll(10)
    assert [r.value for r in asyncio.run(main())] == [b"x"]
    with pytest.raises(ConfigError, match=r"add group_id=.*assign\(\[TopicPartition\('ctor-topic', 0\)\]\)"):
        Consumer("ctor-topic", bootstrap_servers=broker.bootstrap_servers)


def test_poll_takes_kafka_pythons_timeout_ms_and_warns_of_implausible_seconds(broker):
    """Issue 11, ``poll(1000)`` (kafka-python's milliseconds) waited 1000 s: ``timeout_ms=``
    is accepted, and a positional timeout of 300 s or more warns."""
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="poll-ms") as c:
        c.assign([TopicPartition("poll-ms", 0)])
        started = time.monotonic()
        assert c.poll(timeout_ms=200) == []
        assert time.monotonic() - started < 5
        with pytest.raises(TypeError, match="not both"):
            c.poll(1, timeout_ms=1)
        _produce(broker.bootstrap_servers, "poll-ms", [b"x"])
        with pytest.warns(UserWarning, match=r"poll\(1000\) waits 1000 seconds.*poll\(timeout_ms=1000\)"):
            assert [r.value for r in c.poll(1000)] == [b"x"]  # returns as soon as there are records


def test_create_topics_takes_plain_names(broker):
    """Issue 11, ``create_topics(["name"])`` failed with an AttributeError: a name stands for
    a NewTopic with the broker's defaults (kafka-python's NewTopic defaults -1 too)."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics(["plain-name"])
        admin.create_topics("plain-name-2")
        assert len(admin.describe_topics(["plain-name"])["plain-name"].partitions) == 2  # num.partitions
        assert "plain-name-2" in admin.list_topics()


def test_a_record_that_expires_unsent_names_the_last_error_seen():
    """Issue 11: "the delivery-timeout error names the last error seen, as the producer guide
    promises": a broker that went away leaves queued records to expire, and their error
    says why they could not go."""
    broker = MiniBroker()
    broker.start()
    try:
        with Producer(bootstrap_servers=broker.bootstrap_servers, delivery_timeout_ms=1500, request_timeout_ms=1000,
                      linger_ms=0, reconnect_backoff_ms=20) as producer:
            producer.send("expires", b"first").result(10)
            broker.stop()
            future = producer.send("expires", b"second")
            with pytest.raises(KafkaTimeoutError, match=r"expired after 1500 ms \(delivery.timeout.ms\); last error: \S"):
                future.result(15)
            producer.close(0)
    finally:
        broker.stop()


# -- peers' method names ------------------------------------------------------------------------

@pytest.mark.parametrize("cls, name, hint", [
    (Producer, "produce", r"send\(topic, value, key, on_delivery=callback\)"),
    (Consumer, "consume", r"poll\(timeout, max_records=n\)"),
    (AIOConsumer, "getmany", r"poll\(timeout_ms=\.\.\., max_records=\.\.\.\)"),
    (AIOConsumer, "getone", r"\(await consumer.poll\(max_records=1\)\)\[0\]"),
    (AdminClient, "create_topic", r"create_topics\(\[NewTopic")])
def test_a_peers_method_name_says_what_to_call_instead(broker, cls, name, hint):
    """Issue 11, migration: a peer's habit (getmany, produce, consume...) fails with a
    message naming the kproto call; an unknown name stays a plain AttributeError."""
    client = cls(bootstrap_servers=broker.bootstrap_servers, **({"group_id": "g"} if "Consumer" in cls.__name__ else {}))
    try:
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'; with kproto, use {hint}"):
            getattr(client, name)
        with pytest.raises(AttributeError, match="no attribute 'nonsense'$"):
            _ = client.nonsense
        assert not hasattr(client, name)
    finally:
        close = client.close()
        if inspect.isawaitable(close):
            asyncio.run(close)


def test_aiokafkas_lifecycle_works(broker):
    """Issue 11, migration: aiokafka's ``await start()`` / ``await stop()`` work on both
    asyncio clients."""
    async def main():
        producer = AIOProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        try:
            await producer.send_and_wait("aiokafka-life", b"x", partition=0)
        finally:
            await producer.stop()
        consumer = AIOConsumer("aiokafka-life", bootstrap_servers=broker.bootstrap_servers, group_id="life",
                               auto_offset_reset="earliest")
        await consumer.start()
        try:
            async for record in consumer:
                return record.value
        finally:
            await consumer.stop()
            await consumer.stop()
    assert asyncio.run(main()) == b"x"


def test_a_first_send_with_no_broker_waits_max_block_ms_and_names_the_cause():
    """Issue 11, lazy constructors: with no broker at all, the constructor returns and the
    first send gives up after max.block.ms, naming why."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with Producer(bootstrap_servers=f"127.0.0.1:{port}", max_block_ms=500) as producer:
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match=r"after 500 ms \(max.block.ms\); last error: no broker"):
            producer.send("nobody", b"x")
        assert 0.4 < time.monotonic() - started < 5
