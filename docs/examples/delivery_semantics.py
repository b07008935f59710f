"""At-most-once and at-least-once consumption, and what each costs when a consumer dies.
Run it: ``python docs/examples/delivery_semantics.py``."""

from kproto import Consumer, ConsumerRecord, Producer
from minibroker import MiniBroker


def process(record: ConsumerRecord) -> None:
    print("processed", record.value.decode())


with MiniBroker() as broker:
    bs = broker.bootstrap_servers
    with Producer(bootstrap_servers=bs) as producer:
        for i in range(6):
            producer.send("orders", b"order-%d" % i)

    # At least once: commit *after* processing. A crash between the two reprocesses the
    # records since the last commit; none is ever skipped.
    with Consumer(bootstrap_servers=bs, group_id="billing", enable_auto_commit=False,
                  auto_offset_reset="earliest", max_poll_records=3) as consumer:
        consumer.subscribe(["orders"])
        done = 0
        while done < 6:
            records = consumer.poll(1.0)
            for record in records:
                process(record)
            if records:
                consumer.commit()  # synchronous: returns once the group coordinator stored it
            done += len(records)

    # At most once: commit *before* processing. A crash after the commit loses the
    # records of that poll; none is ever processed twice.
    with Consumer(bootstrap_servers=bs, group_id="audit", enable_auto_commit=False,
                  auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["orders"])
        records = []
        while not records:
            records = consumer.poll(1.0)
        consumer.commit()
        for record in records:
            process(record)

    # Exactly once needs transactions (a transactional producer that commits the consumed
    # offsets with its output): see exactly_once.py.
