"""The producer's main settings at work: batching, acks, idempotence, partitioning,
delivery callbacks. Run it: ``python docs/examples/producer.py``."""

from kproto import Producer, RecordMetadata
from kproto.serialization import json_serializer, string_serializer
from minibroker import MiniBroker

with MiniBroker(config={"num.partitions": 3}) as broker:
    delivered: list[BaseException | RecordMetadata | None] = []

    def report(error: BaseException | None, metadata: RecordMetadata | None) -> None:
        # Runs on the producer's background thread once the broker answered (or gave up).
        delivered.append(error or metadata)

    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        acks="all",                 # the default: every in-sync replica has the record
        enable_idempotence=True,    # the default: retries never duplicate or reorder
        linger_ms=5,                # wait up to 5 ms to fill batches of up to batch.size bytes
        compression_type="lz4",
        key_serializer=string_serializer(),
        value_serializer=json_serializer(),
    ) as producer:
        # Same key, same partition: Java's murmur2 rule, so Java clients agree.
        futures = [producer.send("page-views", {"page": f"/p{i}"}, key="user-42", on_delivery=report)
                   for i in range(5)]
        first = futures[0].result(timeout=10)  # a concurrent.futures.Future of RecordMetadata
        print(f"user-42 goes to partition {first.partition}; offsets",
              [f.result().offset for f in futures])
        producer.flush()
    assert len(delivered) == 5 and all(isinstance(md, RecordMetadata) and md.partition == first.partition
                                     for md in delivered)
