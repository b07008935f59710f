"""Issue 11, "the first hour": what a new user of kproto hit, with the habits of
confluent-kafka, kafka-python and aiokafka users, each replayed as that user did it."""

import asyncio

import pytest

from kproto.errors import InvalidTopicError
from kproto.producer import AIOProducer, Producer
from minibroker import MiniBroker


@pytest.fixture(scope="module")
def broker():
    with MiniBroker(config={"num.partitions": 2}) as b:
        yield b


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
