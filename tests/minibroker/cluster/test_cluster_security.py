"""Security in a MiniCluster (issue 15, broker item B): several listeners per broker,
registered with the controller and answered per listener; the brokers' own traffic on the
inter-broker listener; SCRAM users cluster-wide through the controller's metadata log
(UserScramCredentialRecord).

Three brokers, each with a PLAINTEXT listener (the brokers' own, Kafka's default
``security.inter.broker.protocol``) and a SASL_SSL one for the clients. confluent-kafka is
the oracle: it makes a SCRAM user through one broker, then produces with acks=all to a
replicated topic and consumes over SASL_SSL from every broker's bootstrap, across a
leader's crash, a restart and ``processes=True``.
"""

from __future__ import annotations

import time
import uuid

import pytest

from tests.minibroker.cluster.conftest import _nothing_left

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)


def secure_config(keystore) -> dict:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.location": str(keystore),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "connection.failed.authentication.delay.ms": 10,
        "min.insync.replicas": 2,
    }


@pytest.fixture(scope="module")
def keystore(pki, tmp_path_factory):
    path = tmp_path_factory.mktemp("cluster-keystore") / "server.pem"
    path.write_text(pki.server.key_pem + pki.server.cert_pem)
    return path


def ck_sasl(pki, password="alice-secret", mechanism="SCRAM-SHA-256") -> dict:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "ssl.ca.location": str(pki.ca.cert_path),
            "sasl.username": "alice", "sasl.password": password}


def make_user(bootstrap: str, mechanisms=(ScramMechanism.SCRAM_SHA_256,)) -> None:
    """alice, through the one broker of ``bootstrap`` (AlterUserScramCredentials, forwarded
    by it to the controller)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for mechanism in mechanisms:  # one request per mechanism: Kafka refuses a user altered twice in one
        upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(mechanism, 4096), b"alice-secret")
        admin.alter_user_scram_credentials([upsert])["alice"].result(10)


def produce(bootstrap: str, conf: dict, topic: str, values: list[bytes]) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, **conf})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(20) == 0


def consume(bootstrap: str, conf: dict, topic: str, count: int) -> list[bytes]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                            "enable.auto.commit": False, **conf})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        return poll_values(consumer, count)
    finally:
        consumer.close()


def poll_values(consumer, count: int, timeout: float = 20) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    return got


def per_broker(cluster, listener: str) -> list[str]:
    return cluster.bootstrap_servers_for(listener).split(",")


def test_a_scram_user_made_through_one_broker_logs_in_on_every_broker(pki, keystore, tmp_path):
    """Issue 15, broker item B: a SCRAM user made through broker 0 (its PLAINTEXT listener)
    is committed by the controller and logs in over SASL_SSL on every broker, each bootstrap
    alone: acks=all to a topic replicated three times, then consumed."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config=secure_config(keystore)) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=3)
        make_user(per_broker(cluster, "PLAINTEXT")[0])
        for i, bootstrap in enumerate(per_broker(cluster, "SASL_SSL")):
            produce(bootstrap, ck_sasl(pki), "t", [f"via-{i}".encode()])
        assert len(cluster.wait_for_isr("t", 0, 3)) == 3
        for bootstrap in per_broker(cluster, "SASL_SSL"):
            assert consume(bootstrap, ck_sasl(pki), "t", 3) == [b"via-0", b"via-1", b"via-2"]
        # every broker describes the user (DescribeUserScramCredentials reads its metadata image)
        for bootstrap in per_broker(cluster, "PLAINTEXT"):
            admin = AdminClient({"bootstrap.servers": bootstrap})
            [info] = admin.describe_user_scram_credentials(["alice"])["alice"].result(10).scram_credential_infos
            assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_256, 4096)
        # a wrong password is refused on every broker, with Kafka's text
        from tests.minibroker.test_security_peers import ck_error
        error = ck_error(per_broker(cluster, "SASL_SSL")[2], ck_sasl(pki, password="wrong"))
        assert ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                "SCRAM-SHA-256") in error


def test_each_listener_is_told_its_own_endpoints(pki, keystore, tmp_path):
    """Issue 15, broker item B: every broker registers each listener with the controller;
    Metadata, DescribeCluster and FindCoordinator answer each broker's endpoint of the
    request's listener (Kafka's BrokerRegistration.listeners)."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config=secure_config(keystore)) as cluster:
        make_user(per_broker(cluster, "PLAINTEXT")[1])
        for listener, conf in (("PLAINTEXT", {}), ("SASL_SSL", ck_sasl(pki))):
            expected = set(per_broker(cluster, listener))
            admin = AdminClient({"bootstrap.servers": per_broker(cluster, listener)[0], **conf})
            brokers = admin.list_topics(timeout=10).brokers
            assert {f"{b.host}:{b.port}" for b in brokers.values()} == expected
            described = admin.describe_cluster().result(10)
            assert {f"{n.host}:{n.port}" for n in described.nodes} == expected
            group = f"g-{uuid.uuid4().hex[:6]}"
            coordinator = admin.describe_consumer_groups([group])[group].result(10).coordinator
            assert f"{coordinator.host}:{coordinator.port}" in expected
        assert set(per_broker(cluster, "PLAINTEXT")).isdisjoint(per_broker(cluster, "SASL_SSL"))
        with pytest.raises(KeyError, match="no listener 'SSL'; the listeners are PLAINTEXT, SASL_SSL"):
            cluster.bootstrap_servers_for("SSL")


def test_a_leader_crash_keeps_the_sasl_ssl_clients_working(pki, keystore, tmp_path):
    """Issue 15, broker item B: the leader of a replicated topic is killed; the SASL_SSL
    producer and consumer that were connected go on with the new leader (the followers
    fetched over the PLAINTEXT inter-broker listener); the restarted broker binds the same
    ports and the user logs in there again (its credentials come from the metadata log)."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config=secure_config(keystore)) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=3)
        make_user(per_broker(cluster, "PLAINTEXT")[0], (ScramMechanism.SCRAM_SHA_512,))
        conf = ck_sasl(pki, mechanism="SCRAM-SHA-512")
        bootstrap = cluster.bootstrap_servers_for("SASL_SSL")
        producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, **conf})
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False,
                                **conf})
        try:
            consumer.assign([ck.TopicPartition("t", 0, ck.OFFSET_BEGINNING)])
            producer.produce("t", value=b"before", partition=0)
            assert producer.flush(20) == 0
            assert poll_values(consumer, 1) == [b"before"]
            cluster.wait_for_isr("t", 0, 3)
            leader = cluster.leader_of("t", 0)
            cluster.kill(leader)
            assert cluster.wait_for_leader("t", 0, not_in=[leader]) != leader
            producer.produce("t", value=b"after", partition=0)
            assert producer.flush(20) == 0
            assert poll_values(consumer, 1) == [b"after"]
        finally:
            consumer.close()
        ports = per_broker(cluster, "SASL_SSL")
        cluster.restart(leader)
        assert per_broker(cluster, "SASL_SSL") == ports  # fixed across the restart
        cluster.wait_for_isr("t", 0, 3)
        assert consume(ports[leader], conf, "t", 2) == [b"before", b"after"]


def test_processes_and_a_restarted_cluster_keep_the_users(pki, keystore, tmp_path):
    """Issue 15, broker item B (processes=True): a user made through broker 2's process
    logs in on every broker process, across a SIGKILLed leader; a cluster started again
    on the same data directory (in process) still has the user."""
    data_dir = tmp_path / "cluster"
    with _nothing_left(brokers=3, data_dir=data_dir, config=secure_config(keystore), processes=True) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=3)
        make_user(per_broker(cluster, "PLAINTEXT")[2])
        for i, bootstrap in enumerate(per_broker(cluster, "SASL_SSL")):
            produce(bootstrap, ck_sasl(pki), "t", [f"via-{i}".encode()])
        cluster.wait_for_isr("t", 0, 3)
        leader = cluster.leader_of("t", 0)
        cluster.kill(leader)
        cluster.wait_for_leader("t", 0, not_in=[leader])
        produce(cluster.bootstrap_servers_for("SASL_SSL"), ck_sasl(pki), "t", [b"after"])
    with _nothing_left(brokers=3, data_dir=data_dir, config=secure_config(keystore)) as cluster:
        assert consume(cluster.bootstrap_servers_for("SASL_SSL"), ck_sasl(pki), "t", 4) == [
            b"via-0", b"via-1", b"via-2", b"after"]


def test_the_listener_settings_are_checked(keystore):
    """Issue 15, broker item B: Kafka's rules for the inter-broker listener, and what a
    MiniCluster cannot do (fixed ports); a SASL inter-broker listener without the brokers'
    credentials or with a mechanism it does not enable."""
    from minibroker.cluster import MiniCluster

    base = secure_config(keystore)
    with pytest.raises(ValueError, match="take port 0"):
        MiniCluster(3, config={**base, "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:0"})
    with pytest.raises(ValueError, match="Only one of inter.broker.listener.name and security.inter.broker.protocol"):
        MiniCluster(3, config={**base, "inter.broker.listener.name": "PLAINTEXT",
                               "security.inter.broker.protocol": "PLAINTEXT"})
    with pytest.raises(ValueError, match="must be a listener name defined in advertised.listeners. The valid "
                                         "options based on currently configured listeners are SASL_SSL"):
        MiniCluster(3, config={**base, "listeners": "SASL_SSL://127.0.0.1:0"})
    # issue 15, inter-broker TLS/SASL: the brokers' own credentials and mechanism are checked up front
    with pytest.raises(ValueError, match="the broker's own credentials are the username and password options of "
                                         "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"):
        MiniCluster(3, config={**base, "inter.broker.listener.name": "SASL_SSL"})
    with pytest.raises(ValueError, match="sasl.mechanism.inter.broker.protocol PLAIN must be included in "
                                         "sasl.enabled.mechanisms"):
        MiniCluster(3, config={**base, "inter.broker.listener.name": "SASL_SSL",
                               "sasl.mechanism.inter.broker.protocol": "PLAIN"})
    with pytest.raises(ValueError, match="config 'advertised.listeners' is the cluster's own"):
        MiniCluster(3, config={**base, "advertised.listeners": "PLAINTEXT://localhost:0"})


def test_the_records_survive_the_log_and_the_wire(tmp_path):
    """Issue 15, broker item B: a RegisterBrokerRecord's listeners and a SCRAM user's
    records are written to the metadata log and read back (a restart), and as a metadata
    Fetch's values (processes=True); the image holds the credential, then not."""
    from kproto.security.scram import credential_of_salted_password
    from minibroker.cluster.metadata import (
        MetadataImage,
        MetadataLog,
        RegisterBrokerRecord,
        RemoveUserScramCredentialRecord,
        UserScramCredentialRecord,
        decode_record,
        encode_record,
    )

    c = credential_of_salted_password(b"\x01" * 32, "SCRAM-SHA-256", 4096, b"salt")
    records = [
        RegisterBrokerRecord(broker_id=1, broker_epoch=0, incarnation_id=uuid.uuid4(), host="127.0.0.1", port=1,
                             rack=None, listeners=(("PLAINTEXT", "127.0.0.1", 1, "PLAINTEXT"),
                                                   ("SASL_SSL", "127.0.0.1", 2, "SASL_SSL"))),
        UserScramCredentialRecord(name="alice", mechanism="SCRAM-SHA-256", salt=c.salt, stored_key=c.stored_key,
                                  server_key=c.server_key, iterations=c.iterations),
    ]
    assert [decode_record(encode_record(r)) for r in records] == records
    log = MetadataLog(tmp_path / "metadata.jsonl")
    log.begin_epoch(1)
    log.append(1, records)
    log.close()
    reopened = MetadataLog(tmp_path / "metadata.jsonl")
    assert [r for _, r in reopened.read(0)] == records
    reopened.close()
    image = MetadataImage()
    image.apply(1, records)
    assert image.scram_credentials == {("alice", "SCRAM-SHA-256"): c}
    assert image.brokers[1].endpoint("SASL_SSL") == ("127.0.0.1", 2) and image.brokers[1].endpoint("SSL") is None
    image.apply(2, [RemoveUserScramCredentialRecord(name="alice", mechanism="SCRAM-SHA-256")])
    assert image.scram_credentials == {}
