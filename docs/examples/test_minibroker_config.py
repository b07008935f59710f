"""Configuring the fixtures' brokers by overriding ``minibroker_config``, and one producer
shared by several threads. Run it: ``python -m pytest docs/examples/test_minibroker_config.py``."""

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kproto import Consumer, Producer
from minibroker import MiniBroker


# In a conftest.py this applies to every test below it; here, to this module's tests.
# Session scope, so that kafka_broker_session starts with it too.
@pytest.fixture(scope="session")
def minibroker_config() -> Mapping[str, Any]:
    return {"num.partitions": 3}  # Kafka's broker settings, by Kafka's names


def test_topics_are_created_with_three_partitions(kafka_broker_session: MiniBroker) -> None:
    with Producer(bootstrap_servers=kafka_broker_session.bootstrap_servers) as producer:
        assert producer.partitions_for("clicks") == [0, 1, 2]  # auto-created on first use


def test_threads_share_one_producer(kafka_bootstrap_servers: str) -> None:
    # A Producer is thread-safe, as Java's KafkaProducer is: share one between threads.
    # Records with the same key keep their order. (A Consumer is for one thread at a time.)
    with Producer(bootstrap_servers=kafka_bootstrap_servers) as producer:
        def send_ten(user: int) -> None:
            for i in range(10):
                producer.send("events", b"%d" % i, key=b"user-%d" % user)

        threads = [threading.Thread(target=send_ten, args=(user,)) for user in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    with Consumer(bootstrap_servers=kafka_bootstrap_servers, group_id="check",
                  auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["events"])
        seen: dict[bytes, list[bytes]] = {}
        while sum(map(len, seen.values())) < 40:
            for record in consumer.poll(1.0):
                seen.setdefault(record.key, []).append(record.value)
    assert all(values == [b"%d" % i for i in range(10)] for values in seen.values())


class TestOnDisk:
    # Narrower scope, narrower reach: this override, which uses tmp_path, gives each test
    # in the class a broker of its own with its logs in that test's directory.
    @pytest.fixture
    def minibroker_config(self, tmp_path: Path) -> Mapping[str, Any]:
        return {"log.dirs": str(tmp_path / "kafka-logs")}

    def test_logs_are_kafkas_files(self, kafka_broker: MiniBroker, tmp_path: Path) -> None:
        with Producer(bootstrap_servers=kafka_broker.bootstrap_servers) as producer:
            producer.send("orders", b"order-1").result(timeout=10)
        assert (tmp_path / "kafka-logs" / "orders-0" / "00000000000000000000.log").stat().st_size > 0
