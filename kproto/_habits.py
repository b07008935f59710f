"""What a confluent-kafka, kafka-python or aiokafka user reaches for, and kproto's name for it.

A client's ``__getattr__`` (:func:`missing`) turns an ``AttributeError`` for a peer's
method into one that names the kproto call to write instead (issue 11), so that the first
hour with kproto is not spent reading the API reference for a renamed method. The table
is the one place these names live; docs/migration/ shows the same calls side by side.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["missing"]

# (client kind, attribute) -> what to write with kproto, and whose habit it is.
_HINTS: dict[tuple[str, str], str] = {
    ("producer", "produce"): "send(topic, value, key, on_delivery=callback) (confluent-kafka's produce())",
    ("producer", "poll"): "nothing: delivery callbacks run by themselves (confluent-kafka's producer poll())",
    ("producer", "send_batch"): "send() per record: records are batched by linger.ms and batch.size",
    ("producer", "create_batch"): "send() per record: records are batched by linger.ms and batch.size "
                                  "(aiokafka's create_batch())",
    ("consumer", "consume"): "poll(timeout, max_records=n), which returns a list of records "
                             "(confluent-kafka's consume())",
    ("consumer", "getone"): "(await consumer.poll(max_records=1))[0], or 'async for record in consumer' "
                            "(aiokafka's getone())",
    ("consumer", "getmany"): "poll(timeout_ms=..., max_records=...), which returns one list of records, "
                             "in offset order per partition (aiokafka's getmany() returns a dict by partition)",
    ("consumer", "store_offsets"): "commit(offsets) (confluent-kafka's store_offsets())",
    ("consumer", "topics"): "an AdminClient's list_topics() (kafka-python's topics())",
    ("consumer", "partitions_for_topic"): "an AdminClient's describe_topics([topic]) "
                                          "(kafka-python's partitions_for_topic())",
    ("consumer", "highwater"): "end_offsets([partition]) (kafka-python's highwater())",
    ("consumer", "get_watermark_offsets"): "beginning_offsets([partition]) and end_offsets([partition]) "
                                           "(confluent-kafka's get_watermark_offsets())",
    ("consumer", "list_topics"): "an AdminClient's list_topics() (confluent-kafka's consumer list_topics())",
    ("consumer", "incremental_assign"): "assign() with the whole new set of partitions",
    ("admin", "create_topic"): "create_topics([NewTopic(name, num_partitions, replication_factor)])",
    ("admin", "describe_topic"): "describe_topics([name])",
}


def missing(self: Any, name: str) -> NoReturn:
    """``__getattr__`` of a client: an AttributeError that names kproto's call for a peer's."""
    kind = getattr(type(self), "_habit_kind", "")
    hint = _HINTS.get((kind, name))
    message = f"{type(self).__name__!r} object has no attribute {name!r}"
    if hint is not None:
        message += f"; with kproto, use {hint}"
    raise AttributeError(message, name=name, obj=self)
