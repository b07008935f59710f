"""Bad input to a MiniCluster's controller, through the real wire (issue 13 step 2,
item 5.3): a replication factor above the registered brokers, bad manual assignments in
CreateTopics and CreatePartitions, and topics made while a broker is dead, each as Kafka's
``ReplicationControlManager`` and ``StripedReplicaPlacer`` answer them. kproto's admin has
no manual assignments, so those requests are sent with kproto's protocol messages
(:class:`~tests.support.raw_client.RawClient`) and with confluent-kafka's AdminClient."""

import pytest

from kproto import AdminClient
from kproto.admin import NewTopic
from kproto.errors import InvalidReplicaAssignmentError, InvalidReplicationFactorError
from kproto.protocol import ApiKey
from kproto.protocol.messages import CreatePartitionsRequest, CreateTopicsRequest
from tests.minibroker.cluster.conftest import produce_raw
from tests.support.raw_client import RawClient

KAFKAS_RF_MESSAGE = ("Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be "
                     "reached because only 3 broker(s) are registered.")
BAD_ASSIGNMENTS = {  # what is wrong -> one assignment per partition, and the message's words
    "unknown": ([[0, 9]], "includes broker 9, but no such broker is registered"),
    "twice": ([[1, 1]], "includes the broker 1 more than once"),
    "unequal": ([[0, 1], [2]], "all partitions should have the same number of replicas"),
}


def _ck_codes(futures, ck):
    """``{name: (error code, message)}`` of confluent-kafka's admin futures (0 for success)."""
    out = {}
    for name, future in futures.items():
        try:
            future.result(10)
            out[name] = (0, None)
        except ck.KafkaException as exc:
            out[name] = (exc.args[0].code(), exc.args[0].str())
    return out


def _create_raw(port, name, assignments):
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(timeout_ms=10000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=-1, replication_factor=-1, assignments=[
                CreateTopicsRequest.CreatableReplicaAssignment(partition_index=i, broker_ids=brokers)
                for i, brokers in enumerate(assignments)], configs=[])])).topics[0]
    finally:
        client.close()
    return answer.error_code, answer.error_message


def _grow_raw(port, name, count, assignments):
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.CREATE_PARTITIONS, 3, CreatePartitionsRequest(timeout_ms=10000, topics=[
            CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count, assignments=[
                CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=b) for b in assignments])])).results[0]
    finally:
        client.close()
    return answer.error_code, answer.error_message


def test_replication_factor_above_the_brokers_is_kafkas_invalid_replication_factor(cluster3):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    from confluent_kafka.admin import NewTopic as CkTopic
    with AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}) as admin:
        with pytest.raises(InvalidReplicationFactorError) as info:
            admin.create_topics([NewTopic("rf4", 1, 4)])
    assert KAFKAS_RF_MESSAGE in str(info.value)
    admin = CkAdmin({"bootstrap.servers": cluster3.bootstrap_servers})
    assert _ck_codes(admin.create_topics([CkTopic("rf4", num_partitions=1, replication_factor=4)]), ck) == {
        "rf4": (ck.KafkaError.INVALID_REPLICATION_FACTOR, KAFKAS_RF_MESSAGE)}
    with pytest.raises(KeyError):
        cluster3.describe("rf4")


def test_bad_manual_assignments_in_create_topics_are_invalid_replica_assignment(cluster3):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    from confluent_kafka.admin import NewTopic as CkTopic
    admin = CkAdmin({"bootstrap.servers": cluster3.bootstrap_servers})
    codes = _ck_codes(admin.create_topics([CkTopic(name, num_partitions=len(a), replica_assignment=a)
                                           for name, (a, _) in BAD_ASSIGNMENTS.items()]), ck)
    for name, (assignments, words) in BAD_ASSIGNMENTS.items():
        assert codes[name][0] == ck.KafkaError.INVALID_REPLICA_ASSIGNMENT and words in codes[name][1], name
        code, message = _create_raw(cluster3.brokers[1].port, f"raw-{name}", assignments)
        assert code == InvalidReplicaAssignmentError.code and words in message, name
    for name in BAD_ASSIGNMENTS:
        for topic in (name, f"raw-{name}"):
            with pytest.raises(KeyError):
                cluster3.describe(topic)


def test_bad_manual_assignments_in_create_partitions_are_invalid_replica_assignment(cluster3):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    from confluent_kafka.admin import NewPartitions
    cluster3.create_topic("grow", partitions=1, replication_factor=2)
    admin = CkAdmin({"bootstrap.servers": cluster3.bootstrap_servers})
    cases = {  # new total count, assignments of the new partitions, the message's words
        "unknown": (2, [[0, 9]], "includes broker 9, but no such broker is registered"),
        "twice": (2, [[1, 1]], "includes the broker 1 more than once"),
        "size": (2, [[0, 1, 2]], "not the topic's replication factor 2"),
        "count": (3, [[0, 1]], "only 1 assignment(s) were specified"),
    }
    for what, (count, assignments, words) in cases.items():
        [(_, (code, message))] = _ck_codes(admin.create_partitions(
            [NewPartitions("grow", count, replica_assignment=assignments)]), ck).items()
        assert code == ck.KafkaError.INVALID_REPLICA_ASSIGNMENT and words in message, what
        code, message = _grow_raw(cluster3.brokers[2].port, "grow", count, assignments)
        assert code == InvalidReplicaAssignmentError.code and words in message, what
    assert len(cluster3.describe("grow")) == 1
    assert _grow_raw(cluster3.brokers[0].port, "grow", 2, [[2, 0]]) == (0, None)
    assert cluster3.describe("grow")[1].replicas == (2, 0)


def test_topics_made_while_a_broker_is_dead_get_it_as_a_follower_and_it_joins_when_back(cluster3):
    """StripedReplicaPlacer: the factor counts the registered brokers, a dead (fenced) one
    takes a follower replica outside the ISR, never the lead; a manual assignment may name
    it (validateManualPartitionAssignment refuses only when every replica is fenced). The
    broker joins every ISR when it is back."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    from confluent_kafka.admin import NewTopic as CkTopic
    cluster3.kill(2)
    with AdminClient({"bootstrap.servers": cluster3.brokers[0].bootstrap_servers}) as admin:
        admin.create_topics([NewTopic("rf3", 2, 3), NewTopic("rf2", 4, 2)])
        admin.create_partitions({"rf3": 3})
    for registration in cluster3.describe("rf3"):
        assert registration.replicas[-1] == 2 and sorted(registration.isr) == [0, 1]
    assert all(2 not in r.replicas for r in cluster3.describe("rf2"))  # the live brokers suffice
    admin = CkAdmin({"bootstrap.servers": cluster3.brokers[1].bootstrap_servers})
    assert _ck_codes(admin.create_topics([
        CkTopic("manual", num_partitions=1, replica_assignment=[[2, 0]]),
        CkTopic("only-dead", num_partitions=1, replica_assignment=[[2]])]), ck) == {
        "manual": (0, None),
        "only-dead": (ck.KafkaError.INVALID_REPLICA_ASSIGNMENT,
                      "All brokers specified in the manual partition assignment for partition 0 are fenced.")}
    manual = cluster3.describe("manual")[0]
    assert (manual.replicas, manual.isr, manual.leader) == ((2, 0), (0,), 0)
    assert produce_raw(cluster3.brokers[cluster3.leader_of("rf3", 0)].port, "rf3", [b"x"]) == (0, 0)
    cluster3.restart(2)
    for p in range(3):
        cluster3.wait_for_isr("rf3", p, 3)
    cluster3.wait_for_isr("manual", 0, 2)
