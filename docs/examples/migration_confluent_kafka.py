"""confluent-kafka's calls and kproto's, row by row (docs/migration/confluent_kafka.rst).

Each block is one row of the table, run against minibroker:
``python docs/examples/migration_confluent_kafka.py``.
"""

from kproto import AdminClient, Consumer, ConsumerRecord, Producer, RecordMetadata
from kproto.admin import NewTopic
from kproto.structs import TopicPartition
from minibroker import MiniBroker

with MiniBroker(config={"num.partitions": 1}) as broker:
    conf = {"bootstrap.servers": broker.bootstrap_servers}  # the same dict of Kafka's settings

    # Row: AdminClient(conf).create_topics([NewTopic("t", 1, 1)]) -> futures per topic
    with AdminClient(conf) as admin:
        admin.create_topics([NewTopic("orders", 1, 1)])  # returns when done; raises on failure
        # Row: admin.list_topics().topics -> a sorted list of names
        assert "orders" in admin.list_topics()

    # Row: p.produce(topic, value, key, callback=cb); p.poll(0); p.flush()
    delivered: list[tuple[BaseException | None, RecordMetadata | None]] = []
    with Producer(conf) as producer:
        producer.send("orders", b"order-1", b"k1", on_delivery=lambda err, md: delivered.append((err, md)))
        producer.flush()  # callbacks run by themselves: no poll() needed
    error, metadata = delivered[0]
    assert error is None and metadata is not None and metadata.offset == 0

    # Row: Consumer({... "group.id": "g", "auto.offset.reset": "earliest"}); subscribe([t])
    with Consumer({**conf, "group.id": "billing", "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe(["orders"])
        # Row: msg = c.poll(1.0); msg.error(); msg.value() -> records = c.poll(1.0) (a list)
        records: list[ConsumerRecord] = []
        while not records:
            records = consumer.poll(1.0)  # seconds, as confluent-kafka's; a list of records
        record = records[0]
        assert (record.key, record.value) == (b"k1", b"order-1")  # attributes, not methods
        # Row: c.commit(asynchronous=False) -> commit()
        consumer.commit()
        # Row: c.get_watermark_offsets(tp) -> beginning_offsets / end_offsets
        tp = TopicPartition("orders", 0)
        assert consumer.beginning_offsets([tp])[tp] == 0 and consumer.end_offsets([tp])[tp] == 1
    print("confluent-kafka rows: ok")
