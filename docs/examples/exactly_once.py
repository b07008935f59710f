"""Exactly-once consume-transform-produce: each poll's records transformed, written and
their offsets committed in one transaction. Run it: ``python docs/examples/exactly_once.py``.

The function is the recipe the producer guide shows; tests/clients/test_transactions.py
runs it against minibroker and Tansu, and tests/eos/ runs it in a process killed with
SIGKILL again and again (the output still holds every input once)."""

from typing import Any

from kproto import Consumer, Producer, TopicPartition
from kproto.errors import KafkaError


def upper_case_exactly_once(bootstrap_servers: str, source: str, sink: str, group_id: str,
                            transactional_id: str, idle_timeout: float = 5.0,
                            **consumer_settings: Any) -> None:
    """Copy ``source`` to ``sink`` upper-cased, each record exactly once."""
    consumer = Consumer(bootstrap_servers=bootstrap_servers, group_id=group_id,
                        enable_auto_commit=False, isolation_level="read_committed",
                        auto_offset_reset="earliest", **consumer_settings)
    producer = Producer(bootstrap_servers=bootstrap_servers, transactional_id=transactional_id)
    with consumer, producer:
        consumer.subscribe([source])
        producer.init_transactions()
        while records := consumer.poll(idle_timeout):
            # The next offset to read, per partition: the last record's + 1.
            positions = {TopicPartition(r.topic, r.partition): r.offset + 1 for r in records}
            producer.begin_transaction()
            try:
                for r in records:
                    producer.send(sink, (r.value or b"").upper(), key=r.key)
                producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                producer.commit_transaction()
            except KafkaError as error:
                if error.fatal:
                    raise  # fenced by a newer instance, or not authorized: stop
                producer.abort_transaction()
                committed = consumer.committed(consumer.assignment())
                for tp, offset in committed.items():  # read the aborted records again
                    if offset is None:
                        consumer.seek_to_beginning([tp])
                    else:
                        consumer.seek(tp, offset)


if __name__ == "__main__":
    from minibroker import MiniBroker

    with MiniBroker(config={"num.partitions": 2}) as broker:
        servers = broker.bootstrap_servers
        with Producer(bootstrap_servers=servers) as producer:
            for i in range(6):
                producer.send("orders", b"order %d" % i, key=b"customer-%d" % (i % 3))
        upper_case_exactly_once(servers, "orders", "orders-upper", "enricher", "enricher-1", idle_timeout=1.0)
        # Readers of the output skip what aborted transactions wrote: read_committed.
        with Consumer(bootstrap_servers=servers, isolation_level="read_committed",
                      auto_offset_reset="earliest") as reader:
            reader.assign([TopicPartition("orders-upper", p) for p in (0, 1)])
            got: list[str] = []
            while len(got) < 6:
                got += [(r.value or b"").decode() for r in reader.poll(1.0)]
        print(sorted(got))
