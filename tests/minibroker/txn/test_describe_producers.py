"""DescribeProducers (API 61) (issue 14 step 1, item 7): the active producers of each
partition led here, from the producer state, with Kafka's errors for unknown partitions
(a partition not led here is in tests/minibroker/txn/test_txn_cluster.py)."""

from kproto import AdminClient, Producer
from kproto.admin import NewTopic
from kproto.errors import UnknownTopicOrPartitionError
from tests.minibroker.txn.txn_wire import describe_producers, produce, txn_batch, write_markers


def _producers(answer):
    return {p.producer_id: (p.producer_epoch, p.last_sequence, p.coordinator_epoch, p.current_txn_start_offset)
            for p in answer.active_producers}


def test_the_active_producers_of_a_partition(broker):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("t", 2)])
    assert produce(broker.port, "t", txn_batch(5, 2, 0, [b"a", b"b", b"c"], transactional=False)) == (0, 0)
    assert produce(broker.port, "t", txn_batch(7, 0, 0, [b"t1"])) == (0, 3)
    assert produce(broker.port, "t", txn_batch(7, 0, 1, [b"t2"])) == (0, 4)
    answers = describe_producers(broker.port, "t", [0, 1, 9])
    assert answers[0].error_code == 0
    assert _producers(answers[0]) == {5: (2, 2, -1, -1), 7: (0, 1, -1, 3)}
    assert all(p.last_timestamp > 0 for p in answers[0].active_producers)
    assert (answers[1].error_code, answers[1].active_producers) == (0, [])
    assert answers[9].error_code == UnknownTopicOrPartitionError.code
    assert write_markers(broker.port, 7, 0, True, [("t", 0)], coordinator_epoch=4) == {("t", 0): 0}
    assert _producers(describe_producers(broker.port, "t", [0])[0])[7] == (0, 1, 4, -1)
    assert describe_producers(broker.port, "nope", [0])[0].error_code == UnknownTopicOrPartitionError.code


def test_a_deleted_topics_producer_state_goes_with_it(broker):
    """issue 14: the producer state of a deleted topic's partitions is dropped with its logs
    (it stayed in memory for the broker's lifetime)."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("gone", 2)])
        with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
            for index in range(2):
                producer.send("gone", b"v", partition=index).result(10)
        state = broker._server.state
        keys = [(state.topics["gone"].topic_id, index) for index in range(2)]
        assert all(state.producers.producers(key) for key in keys)
        admin.delete_topics(["gone"])
        assert not any(state.producers.producers(key) for key in keys)
