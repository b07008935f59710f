"""ElectLeaders on a single MiniBroker (issue 13 step 2, item 3): every partition's only
replica is its preferred leader, so each partition asked is ELECTION_NOT_NEEDED, as a
one-broker Kafka answers; unknown ones are UNKNOWN_TOPIC_OR_PARTITION; every partition
(null) answers none. Through kproto's and confluent-kafka's admin clients and raw requests."""

import pytest

from kproto.admin import AdminClient
from kproto.errors import ElectionNotNeededError, InvalidRequestError, UnknownTopicOrPartitionError
from kproto.structs import TopicPartition
from tests.support.raw_client import elect_leaders_raw, election_codes


@pytest.fixture
def topic(broker):
    from kproto.admin import NewTopic
    name = "elect-me"
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])
    return name


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_partition_of_a_single_broker_needs_no_election(broker, topic, version):
    response = elect_leaders_raw(broker.port, version, 0, {topic: [0, 1, 5], "no-such-topic": [0]})
    assert response.error_code == 0
    assert election_codes(response) == {(topic, 0): ElectionNotNeededError.code, (topic, 1): ElectionNotNeededError.code,
                                (topic, 5): UnknownTopicOrPartitionError.code,
                                ("no-such-topic", 0): UnknownTopicOrPartitionError.code}
    assert election_codes(elect_leaders_raw(broker.port, version, 0, None)) == {}


def test_unclean_and_unknown_election_types(broker, topic):
    assert election_codes(elect_leaders_raw(broker.port, 2, 1, {topic: [0]})) == {(topic, 0): ElectionNotNeededError.code}
    refused = elect_leaders_raw(broker.port, 2, 3, {topic: [0]})
    assert refused.error_code == InvalidRequestError.code
    assert election_codes(refused) == {(topic, 0): InvalidRequestError.code}


def test_kproto_admin_elect_leaders(broker, topic):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        assert admin.elect_leaders() == {}
        with pytest.raises(ElectionNotNeededError) as caught:
            admin.elect_leaders("preferred", [TopicPartition(topic, 0), TopicPartition(topic, 9)])
        results = caught.value.results
        assert isinstance(results[TopicPartition(topic, 0)], ElectionNotNeededError)
        assert isinstance(results[TopicPartition(topic, 9)], UnknownTopicOrPartitionError)
        with pytest.raises(ValueError, match="election_type"):
            admin.elect_leaders("sideways")


def test_confluent_kafka_elect_leaders(broker, topic):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    admin = CkAdmin({"bootstrap.servers": broker.bootstrap_servers})
    result = admin.elect_leaders(ck.ElectionType.PREFERRED, [ck.TopicPartition(topic, 0)]).result(timeout=10)
    [error] = result.values()
    assert error.code() == ck.KafkaError.ELECTION_NOT_NEEDED
    assert admin.elect_leaders(ck.ElectionType.PREFERRED, None).result(timeout=10) == {}
