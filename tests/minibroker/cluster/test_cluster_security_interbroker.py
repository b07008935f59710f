"""A MiniCluster whose brokers reach each other over a secured inter-broker listener
(issue 15, inter-broker TLS/SASL): replica fetches, WriteTxnMarkers and KIP-890's
AddPartitionsToTxn verification go over SASL_SSL (or SSL) as the broker's own user (or
certificate), a super user by ``super.users`` as in Kafka, and the anonymous client-id
stopgap of a PLAINTEXT inter-broker listener is gone.

confluent-kafka is the oracle: alice produces with acks=all to a topic replicated on three
brokers (min.insync.replicas=2: the followers' fetches must work) and commits a transaction
whose partitions are led by other brokers than its coordinator (the markers and the
verification cross the brokers).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kproto.io.connection import Connection
from kproto.protocol.messages import ListOffsetsRequest, MetadataRequest, WriteTxnMarkersRequest
from minibroker.faults import fetcher_client_id, txn_markers_client_id
from tests.minibroker.cluster.conftest import _nothing_left

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
              'password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def keystore(pki, tmp_path_factory):
    path = tmp_path_factory.mktemp("interbroker-keystore") / "server.pem"
    path.write_text(pki.server.key_pem + pki.server.cert_pem)  # for localhost and 127.0.0.1
    return path


def sasl_ssl_config(pki, keystore) -> dict:
    """Clients and brokers on SASL_SSL (PLAIN users broker and alice), anonymous clients on
    PLAINTEXT; the authorizer on, the brokers' user a super user."""
    return {
        "listeners": "SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "SASL_SSL",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.location": str(pki.ca.cert_path),  # the brokers check each other's certificates
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:broker",
        "connection.failed.authentication.delay.ms": 10,
        "min.insync.replicas": 2,
    }


def ck_client(pki, user: str, password: str) -> dict:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "ssl.ca.location": str(pki.ca.cert_path),
            "sasl.username": user, "sasl.password": password}


def ssl_config(pki, broker_cert) -> dict:
    """Clients and brokers on SSL with client certificates required (the principal: the
    certificate's CN by ssl.principal.mapping.rules), anonymous clients on PLAINTEXT."""
    keystore = broker_cert.cert_path.with_suffix(".keystore.pem")
    keystore.write_text(broker_cert.key_pem + broker_cert.cert_pem)
    return {
        "listeners": "SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "SSL",
        "ssl.keystore.location": str(keystore),  # the broker's server and client certificate
        "ssl.truststore.location": str(pki.ca.cert_path),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+).*$/$1/,DEFAULT",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:broker",
        "min.insync.replicas": 2,
    }


def ck_ssl(pki, cert) -> dict:
    return {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca.cert_path),
            "ssl.certificate.location": str(cert.cert_path), "ssl.key.location": str(cert.key_path)}


def allow(bootstrap: str, conf: dict, principal: str = "User:alice") -> None:
    """What ``principal`` needs to produce transactionally (made by the brokers' principal,
    a super user)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    bindings = [AclBinding(kind, "*" if kind != ResourceType.BROKER else "kafka-cluster", ResourcePatternType.LITERAL,
                           principal, "*", AclOperation.ALL, AclPermissionType.ALLOW)
                for kind in (ResourceType.TOPIC, ResourceType.TRANSACTIONAL_ID, ResourceType.BROKER)]
    for future in admin.create_acls(bindings).values():
        future.result(10)


def transactional_produce(bootstrap: str, conf: dict, topic: str, partitions: int) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}",
                            "acks": "all", **conf})
    producer.init_transactions(20)
    producer.begin_transaction()
    for partition in range(partitions):
        producer.produce(topic, value=b"in-tx", partition=partition)
    producer.commit_transaction(20)  # the markers, on every partition's leader
    producer.flush(5)


def read_committed(bootstrap: str, conf: dict, topic: str, partitions: int, count: int) -> list[bytes]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                            "isolation.level": "read_committed", "enable.auto.commit": False, **conf})
    got: list[bytes] = []
    try:
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        for _ in range(60):
            if len(got) >= count:
                break
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


async def as_a_broker_anonymously(host: str, port: int, topic: str) -> tuple[list[str], int, int]:
    """Metadata (topic DESCRIBE), ListOffsets (a follower's: DESCRIBE) and WriteTxnMarkers
    (CLUSTER_ACTION) over PLAINTEXT with a broker's client ids, as User:ANONYMOUS."""
    conn = Connection(host, port, client_id=fetcher_client_id(0))
    markers_conn = Connection(host, port, client_id=txn_markers_client_id(0))
    try:
        await conn.open()
        listed = await conn.request_versioned(MetadataRequest(topics=None), 12)
        offsets = await conn.request_versioned(ListOffsetsRequest(replica_id=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
        await markers_conn.open()
        markers = await markers_conn.request_versioned(WriteTxnMarkersRequest(markers=[
            WriteTxnMarkersRequest.WritableTxnMarker(
                producer_id=1, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
                topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])])]), 1)
    finally:
        await conn.close(timeout=1.0)
        await markers_conn.close(timeout=1.0)
    return ([t.name for t in listed.topics], offsets.topics[0].partitions[0].error_code,
            markers.markers[0].topics[0].partitions[0].error_code)


def test_a_sasl_ssl_inter_broker_listener_replicates_commits_and_closes_the_stopgap(pki, keystore, tmp_path):
    """Issue 15, inter-broker TLS/SASL: with ``inter.broker.listener.name`` a SASL_SSL
    listener (PLAIN, the broker's credentials from the JAAS config's username/password) and
    the authorizer on with ``super.users=User:broker``: acks=all to a topic of RF 3 with
    min.insync.replicas=2 works (the followers fetch over SASL_SSL as User:broker), a
    transaction over three partitions led by different brokers commits (WriteTxnMarkers and
    AddPartitionsToTxn verification over SASL_SSL), and an anonymous client on the PLAINTEXT
    listener that sends a broker's client ids gets nothing (the stopgap is for a PLAINTEXT
    inter-broker listener only)."""
    with _nothing_left(brokers=3, data_dir=tmp_path, config=sasl_ssl_config(pki, keystore)) as cluster:
        bootstrap = cluster.bootstrap_servers_for("SASL_SSL")
        allow(bootstrap, ck_client(pki, "broker", "broker-secret"))
        replicate_commit_and_refuse(cluster, bootstrap, ck_client(pki, "alice", "alice-secret"))


def test_an_ssl_inter_broker_listener_with_client_certificates(pki, tmp_path):
    """Issue 15, inter-broker TLS/SASL: with an SSL inter-broker listener that requires
    client certificates, the brokers verify each other's certificates (ssl.truststore.*,
    the host name by Kafka's default ssl.endpoint.identification.algorithm=https) and
    present their keystore's certificate, whose subject (mapped to User:broker) is the
    super user: replication with acks=all, a transaction's markers and verification work,
    and the anonymous client-id stopgap is off."""
    broker_cert = pki.ca.issue("broker", hosts=("localhost", "127.0.0.1"), server_and_client=True)
    with _nothing_left(brokers=3, data_dir=tmp_path, config=ssl_config(pki, broker_cert)) as cluster:
        bootstrap = cluster.bootstrap_servers_for("SSL")
        allow(bootstrap, ck_ssl(pki, broker_cert), "User:client")
        replicate_commit_and_refuse(cluster, bootstrap, ck_ssl(pki, pki.client))


def test_a_sasl_plaintext_inter_broker_listener_between_broker_processes(tmp_path):
    """Issue 15, inter-broker TLS/SASL: SASL_PLAINTEXT between brokers that are processes
    (``processes=True``: each builds its inter-broker client from the settings it is
    handed), the same replication, transaction and closed stopgap."""
    config = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
              "security.inter.broker.protocol": "SASL_PLAINTEXT",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
              "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:broker", "min.insync.replicas": 2}
    with _nothing_left(brokers=3, data_dir=tmp_path, config=config, processes=True) as cluster:
        bootstrap = cluster.bootstrap_servers_for("SASL_PLAINTEXT")
        sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
        allow(bootstrap, {**sasl, "sasl.username": "broker", "sasl.password": "broker-secret"})
        replicate_commit_and_refuse(cluster, bootstrap, {**sasl, "sasl.username": "alice",
                                                         "sasl.password": "alice-secret"})


def replicate_commit_and_refuse(cluster, bootstrap: str, user: dict) -> None:
    """acks=all to RF 3 (min.insync.replicas=2), a transaction over three partitions led by
    the three brokers, read back committed; then a broker's client ids on PLAINTEXT get
    nothing."""
    cluster.create_topic("t", partitions=3, replication_factor=3)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, **user})
    for partition in range(3):  # each partition's leader waits for a follower's fetch
        producer.produce("t", value=b"acked", partition=partition)
    assert producer.flush(20) == 0
    transactional_produce(bootstrap, user, "t", 3)
    assert sorted(read_committed(bootstrap, user, "t", 3, 6)) == [b"acked"] * 3 + [b"in-tx"] * 3
    for address in cluster.bootstrap_servers_for("PLAINTEXT").split(","):
        host, port = address.rsplit(":", 1)
        # TOPIC_AUTHORIZATION_FAILED (29), CLUSTER_AUTHORIZATION_FAILED (31)
        assert asyncio.run(as_a_broker_anonymously(host, int(port), "t")) == ([], 29, 31)


def interbroker(settings: dict):
    from minibroker.cluster.security import inter_broker_client
    from minibroker.config import BrokerConfig

    return inter_broker_client(BrokerConfig(settings))


def test_the_brokers_client_settings_follow_kafkas_keys(pki, keystore):
    """Issue 15, inter-broker TLS/SASL: the settings each broker builds once for its
    connections to the others. PLAINTEXT: none. SASL: sasl.mechanism.inter.broker.protocol,
    by default PLAIN if enabled, else the listener's first enabled mechanism, with the JAAS
    config's username/password; OAUTHBEARER is refused. TLS: the host name checked unless
    ssl.endpoint.identification.algorithm is empty (Kafka's broker default https); the
    keystore presented only where the listener asks for client certificates."""
    plain = interbroker({"listeners": "PLAINTEXT://127.0.0.1:0"})
    assert (plain.ssl_context, plain.sasl, plain.secured) == (None, None, False)

    scram_jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
                  'password="s";')
    base = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name": "SASL_PLAINTEXT",
            "plain.sasl.jaas.config": PLAIN_JAAS, "scram-sha-512.sasl.jaas.config": scram_jaas}
    client = interbroker(base)
    assert (client.ssl_context, client.sasl.mechanism, client.sasl.username, client.sasl.password) == (
        None, "PLAIN", "broker", "broker-secret")
    client = interbroker({**base, "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
                          "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"})
    assert (client.sasl.mechanism, client.sasl.password) == ("SCRAM-SHA-512", "s")
    assert interbroker({**base, "sasl.enabled.mechanisms": "SCRAM-SHA-512"}).sasl.mechanism == "SCRAM-SHA-512"
    with pytest.raises(ValueError, match="OAUTHBEARER: minibroker's brokers authenticate"):
        interbroker({**base, "sasl.enabled.mechanisms": "OAUTHBEARER"})

    tls = {"listeners": "SSL://127.0.0.1:0", "inter.broker.listener.name": "SSL",
           "ssl.keystore.location": str(keystore), "ssl.truststore.location": str(pki.ca.cert_path)}
    context = interbroker(tls).ssl_context
    assert context.check_hostname and context.verify_mode.name == "CERT_REQUIRED"
    assert not interbroker({**tls, "listener.name.ssl.ssl.endpoint.identification.algorithm": ""}
                           ).ssl_context.check_hostname
    assert context.get_ca_certs() and interbroker(tls).sasl is None
    with pytest.raises(ValueError, match="inter-broker listener SSL: ssl.truststore.location=.*no such file"):
        interbroker({**tls, "ssl.truststore.location": "/nonexistent/ca.pem"})
    missing_keystore = {**tls, "ssl.keystore.location": "/nonexistent/broker.pem"}
    assert interbroker(missing_keystore).ssl_context is not None  # not asked for: not loaded
    with pytest.raises(ValueError, match="ssl.keystore.location: no such file"):
        interbroker({**missing_keystore, "ssl.client.auth": "required"})
    with pytest.raises(ValueError, match="ssl.keystore.location: no such file"):  # KIP-684: SASL_SSL's own only
        interbroker({**missing_keystore, "listeners": "SASL_SSL://127.0.0.1:0", "inter.broker.listener.name": "SASL_SSL",
                     "plain.sasl.jaas.config": PLAIN_JAAS, "listener.name.sasl_ssl.ssl.client.auth": "requested"})
