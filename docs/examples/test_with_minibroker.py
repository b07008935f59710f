"""A test suite using minibroker's pytest fixtures (installed with kproto, no setup).
Run it: ``python -m pytest docs/examples/test_with_minibroker.py``."""

from kproto import Consumer, Producer
from minibroker import MiniBroker


def test_orders_are_read_back_in_order(kafka_bootstrap_servers: str) -> None:
    # kafka_bootstrap_servers: a fresh broker for this test, "127.0.0.1:<port>".
    with Producer(bootstrap_servers=kafka_bootstrap_servers) as producer:
        for i in range(3):
            producer.send("orders", b"%d" % i, key=b"customer-1")
    with Consumer(bootstrap_servers=kafka_bootstrap_servers, group_id="test",
                  auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["orders"])
        values: list[bytes] = []
        while len(values) < 3:
            values += [r.value for r in consumer.poll(1.0)]
    assert values == [b"0", b"1", b"2"]


def test_the_broker_object_is_there_too(kafka_broker: MiniBroker) -> None:
    # kafka_broker: the MiniBroker itself, e.g. to restart it or to read its config.
    assert kafka_broker.bootstrap_servers.startswith("127.0.0.1:")
