"""The consumer protocol's subscription and assignment: round trips, kafka-python's encoder
as an oracle, and Kafka's rule for newer versions. The bodies are the schema table's data
messages, checked against Kafka's JSON in tests/protocol/test_table_vs_kafka_json.py."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.consumer.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kproto.errors import ProtocolError
from kproto.structs import TopicPartition

names = st.text(alphabet="abcxyz-._", min_size=1, max_size=6)
partitions = st.lists(st.builds(TopicPartition, names, st.integers(0, 50)), unique=True, max_size=6)
subscriptions = st.builds(
    Subscription,
    st.lists(names, unique=True, max_size=4).map(tuple),
    st.one_of(st.none(), st.binary(max_size=8)),
    partitions.map(lambda tps: tuple(sorted(tps))),
    st.integers(-1, 1000),
    st.one_of(st.none(), names),
)


def _expected_at(subscription: Subscription, version: int) -> Subscription:
    return Subscription(
        subscription.topics, subscription.user_data,
        subscription.owned_partitions if version >= 1 else (),
        subscription.generation_id if version >= 2 else -1,
        subscription.rack_id if version >= 3 else None,
    )


@settings(max_examples=200, deadline=None)
@given(subscriptions, st.integers(0, 3))
def test_subscription_round_trips_at_every_version(subscription, version):
    assert decode_subscription(encode_subscription(subscription, version)) == _expected_at(subscription, version)


@settings(max_examples=100, deadline=None)
@given(partitions, st.one_of(st.none(), st.binary(max_size=8)), st.integers(0, 3))
def test_assignment_round_trips(tps, user_data, version):
    assignment = Assignment(tuple(sorted(tps)), user_data)
    assert decode_assignment(encode_assignment(assignment, version)) == assignment


@settings(max_examples=100, deadline=None)
@given(subscriptions, st.integers(0, 3))
def test_bytes_equal_kafka_pythons(subscription, version):
    metadata = pytest.importorskip("kafka.protocol.consumer.metadata")
    S = metadata.ConsumerProtocolSubscription
    by_topic = {}
    for tp in subscription.owned_partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    theirs = S(version=version, topics=list(subscription.topics), user_data=subscription.user_data,
               owned_partitions=[S.TopicPartition(topic=t, partitions=p) for t, p in by_topic.items()],
               generation_id=subscription.generation_id, rack_id=subscription.rack_id)
    assert encode_subscription(subscription, version) == theirs.encode()


def test_a_newer_version_is_read_as_the_newest_known_and_trailing_bytes_ignored():
    """ConsumerProtocolSubscription.json: new versions may only append fields."""
    subscription = Subscription(("t",), None, (TopicPartition("t", 1),), 7, "rack")
    future = b"\x00\x09" + encode_subscription(subscription)[2:] + b"a field from the future"
    assert decode_subscription(future) == subscription
    assignment = Assignment((TopicPartition("t", 0),), b"u")
    assert decode_assignment(b"\x00\x04" + encode_assignment(assignment)[2:] + b"\x01") == assignment


def test_empty_assignment_is_no_partitions_and_garbage_is_a_protocol_error():
    assert decode_assignment(b"") == Assignment(())
    for garbage in (b"\x00", b"\xff\xff", b"\x00\x00\x00\x00\x00\x05ab"):
        with pytest.raises(ProtocolError):
            decode_subscription(garbage)
    with pytest.raises(ProtocolError):
        decode_assignment(b"\x00\x01\x00\x00\x00\x09")
