"""Client quotas in a MiniCluster (issue 15, client quotas, item 4): AlterClientQuotas goes to
the controller, which checks it by the single broker's rules and commits ClientQuotaRecords
(KRaft's ``ClientQuotaControlManager``); every broker describes and enforces the metadata
image's quotas, after restarts too, with the brokers in this process or each in its own.
"""

import pytest

from kproto.admin import AdminClient, ClientQuotaAlteration, ClientQuotaEntity
from kproto.errors import InvalidRequestError
from kproto.protocol import ApiKey
from kproto.protocol.messages import DescribeClientQuotasRequest
from minibroker.cluster import MiniCluster
from minibroker.cluster.metadata import (
    ClientQuotaRecord,
    MetadataImage,
    decode_record,
    encode_record,
)
from tests.minibroker.cluster.conftest import _nothing_left
from tests.minibroker.cluster.test_controller import World
from tests.support.raw_client import RawClient

P = "producer_byte_rate"
ALICE = (("user", "alice"),)
APP = (("client-id", "app"),)
Op = ClientQuotaAlteration.Op


def test_the_controller_records_only_what_changes():
    """Issue 15, client quotas item 4: one ClientQuotaRecord per key set or removed, none for
    validate_only, a refused entity or an unchanged value; the brokers' image follows."""
    w = World(n=3)

    def alter(entries, validate_only=False):
        end = w.log.end_offset
        results = w.c.alter_client_quotas(entries, validate_only=validate_only)
        return [code for _, code, _ in results], [r for _, r in w.log.read(end)]

    assert alter([(ALICE, [(P, 100.0), ("request_percentage", 5.0)])]) == ([0], [
        ClientQuotaRecord(entity=ALICE, key=P, value=100.0),
        ClientQuotaRecord(entity=ALICE, key="request_percentage", value=5.0)])
    assert alter([(ALICE, [(P, 100.0)])]) == ([0], [])
    assert alter([(APP, [(P, 7.0)])], validate_only=True) == ([0], [])
    assert alter([(APP, [(P, 7.5)]), (ALICE, [("request_percentage", None)])]) == ([42, 0], [
        ClientQuotaRecord(entity=ALICE, key="request_percentage", remove=True)])
    assert w.delivered.client_quotas == {ALICE: {P: 100.0}}
    assert alter([(ALICE, [(P, None)])])[1] == [ClientQuotaRecord(entity=ALICE, key=P, remove=True)]
    assert w.delivered.client_quotas == {} == w.c.image.client_quotas


def test_client_quota_records_go_through_the_log_encoding():
    """Issue 15, client quotas item 4: the process mode's encoding keeps the entity's pairs
    (a default's null name included)."""
    record = ClientQuotaRecord(entity=(("client-id", None), ("user", "u")), key=P, value=5.0)
    assert decode_record(encode_record(record)) == record
    image = MetadataImage()
    delta = image.apply(0, [record, ClientQuotaRecord(entity=APP, key=P, value=1.0),
                            ClientQuotaRecord(entity=APP, key=P, remove=True)])
    assert delta.client_quotas and image.client_quotas == {(("client-id", None), ("user", "u")): {P: 5.0}}


def _described(port):
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, DescribeClientQuotasRequest(components=[], strict=False))
    finally:
        client.close()
    assert answer.error_code == 0
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in answer.entries}


def _throttle_of_produce(port, topic):
    """The throttle_time_ms of a 30 KB Produce (client id raw-test) to the broker at ``port``."""
    from kproto.protocol.messages import ProduceRequest
    from kproto.records import BatchBuilder

    builder = BatchBuilder()
    for _ in range(30):
        builder.append(1000, None, b"q" * 1000)
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.PRODUCE, 9, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=builder.build())])]))
    finally:
        client.close()
    assert answer.responses[0].partition_responses[0].error_code == 0
    return answer.throttle_time_ms


def _check_cluster(cluster, topic="q"):
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity({"client-id": "raw-test"}),
                                                         [Op(P, 10_000)])])
        with pytest.raises(InvalidRequestError, match="Empty client-id not supported"):
            admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity({"client-id": ""}), [Op(P, 1)])])
        expected = {(("client-id", "raw-test"),): {P: 10_000.0}}
        assert admin.describe_client_quotas() == {ClientQuotaEntity({"client-id": "raw-test"}): {P: 10_000.0}}
    for broker in cluster.brokers:  # every broker has them, and enforces them
        assert _described(broker.port) == expected
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    leader = cluster.leader_of(topic, 0)
    assert _throttle_of_produce(cluster.brokers[leader].port, topic) > 0
    return expected


def test_every_broker_of_a_cluster_enforces_the_quotas_and_a_restart_keeps_them(tmp_path):
    """Issue 15, client quotas item 4: set through any broker, committed by the controller,
    described and enforced by every broker; a restarted broker replays them."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config={"quota.window.num": 2}) as cluster:
        expected = _check_cluster(cluster)
        cluster.kill(1)
        cluster.restart(1)
        assert _described(cluster.brokers[1].port) == expected
        assert not list((tmp_path / "cluster").rglob("minibroker-client-quotas.json"))  # the log keeps them


def test_brokers_in_their_own_processes_get_the_quotas_over_the_wire(tmp_path):
    """Issue 15, client quotas item 4: with processes=True the brokers forward
    AlterClientQuotas to the controller endpoint and fetch the records from it."""
    with MiniCluster(brokers=2, processes=True, data_dir=tmp_path / "cluster", config={"quota.window.num": 2}) as cluster:
        _check_cluster(cluster)

