# ruff: noqa: F821  (reveal_type is mypy's, known to it without an import)
"""What a type checker sees of kproto's public API: each ``reveal_type`` below is checked by
``tests/typing/test_mypy.py`` against the comment after it. Not run, only type-checked."""

from kproto import AdminClient, Consumer, Producer, TopicPartition
from kproto.aio import AIOAdminClient, AIOConsumer, AIOProducer


async def asyncio_faces(producer: AIOProducer, consumer: AIOConsumer, admin: AIOAdminClient) -> None:
    reveal_type(await producer.send("t", b"v"))  # RecordMetadata
    reveal_type(await (await producer.send_batch("t", [b"v"])))  # list[BatchMetadata]
    reveal_type(await consumer.poll(1.0))  # list[ConsumerRecord]
    reveal_type(await admin.list_topics())  # list[str]
    reveal_type(consumer.group_metadata())  # ConsumerGroupMetadata
    reveal_type(await producer.commit_transaction())  # None
    reveal_type(await admin.list_transactions(states=["Ongoing"]))  # list[TransactionListing]
    reveal_type(await admin.abort_transaction("t", 0, 7, 0, 0))  # None
    reveal_type(await admin.describe_client_quotas())  # dict[ClientQuotaEntity, dict[str, float]]
    reveal_type(producer.metrics())  # dict[MetricName, float]
    reveal_type(consumer.metrics())  # dict[MetricName, float]
    reveal_type(admin.metrics())  # dict[MetricName, float]
    async with producer.transaction() as p:
        reveal_type(p)  # AIOProducer


def thread_faces(producer: Producer, consumer: Consumer, admin: AdminClient) -> None:
    reveal_type(producer.send("t", b"v").result())  # RecordMetadata
    reveal_type(producer.send_batch("t", [b"v"]).result())  # list[BatchMetadata]
    reveal_type(consumer.poll(1.0))  # list[ConsumerRecord]
    reveal_type(consumer.assignment())  # set[TopicPartition]
    reveal_type(consumer.position)  # def (partition: TopicPartition, timeout: float | None =) -> int
    reveal_type(admin.list_topics())  # list[str]
    reveal_type(admin.describe_topics(["t"]))  # dict[str, TopicDescription]
    reveal_type(consumer.group_metadata())  # ConsumerGroupMetadata
    reveal_type(admin.describe_transactions(["x"]))  # dict[str, TransactionDescription]
    reveal_type(admin.describe_producers([TopicPartition("t", 0)]))  # dict[TopicPartition, list[ProducerState]]
    reveal_type(admin.list_transactions())  # list[TransactionListing]
    reveal_type(admin.alter_client_quotas([]))  # dict[ClientQuotaEntity, None]
    reveal_type(producer.init_transactions)  # def (timeout: float | None =)
    reveal_type(producer.metrics())  # dict[MetricName, float]
    reveal_type(consumer.metrics())  # dict[MetricName, float]
    reveal_type(admin.metrics())  # dict[MetricName, float]
    with producer.transaction() as p:
        reveal_type(p)  # Producer
