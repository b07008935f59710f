"""kafka-python's calls and kproto's, row by row (docs/migration/kafka_python.rst).

Each block is one row of the table, run against minibroker:
``python docs/examples/migration_kafka_python.py``.
"""

from kproto import AdminClient, Consumer, ConsumerRecord, Producer
from kproto.serialization import string_deserializer, string_serializer
from kproto.structs import TopicPartition
from minibroker import MiniBroker

with MiniBroker(config={"num.partitions": 1}) as broker:
    servers = broker.bootstrap_servers

    # Row: KafkaAdminClient(...).create_topics([NewTopic("t", -1, -1)]) -> create_topics(["t"])
    with AdminClient(bootstrap_servers=servers) as admin:
        admin.create_topics(["events"])  # broker's default partitions and replication

    # Row: KafkaProducer(value_serializer=...); send(t, value=..., key=...).get(timeout=10)
    producer = Producer(bootstrap_servers=servers, value_serializer=string_serializer())
    metadata = producer.send("events", value="hello", key=b"k").result(timeout=10)  # a concurrent Future
    assert metadata.offset == 0
    # Row: producer.flush(); producer.close()
    producer.flush()
    producer.close()

    # Row: KafkaConsumer("t", group_id="g", auto_offset_reset="earliest", ...)
    consumer = Consumer("events", bootstrap_servers=servers, group_id="readers", auto_offset_reset="earliest",
                        value_deserializer=string_deserializer())
    # Row: consumer.poll(timeout_ms=1000) -> {tp: [records]} / kproto: a list of records
    records: list[ConsumerRecord] = []
    while not records:
        records = consumer.poll(timeout_ms=1000)
    assert records[0].value == "hello"
    # Row: for message in consumer: (consumer_timeout_ms ends it) -> for record in consumer: (break)
    # Row: consumer.commit(); consumer.committed(tp) -> committed([tp]) gives {tp: OffsetAndMetadata}
    consumer.commit()
    tp = TopicPartition("events", 0)
    committed = consumer.committed([tp])[tp]  # None where nothing is committed
    assert committed is not None and committed.offset == 1
    # Row: consumer.end_offsets([tp])
    assert consumer.end_offsets([tp])[tp] == 1
    consumer.close()
    print("kafka-python rows: ok")
