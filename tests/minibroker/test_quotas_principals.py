"""Client quotas with real principals (issue 15: quotas and SASL/TLS together).

One broker for the module with a SASL_SSL listener (PLAIN users admin, alice and bob) and
an MTLS listener (client certificates required: the principal is the certificate's
subject), the authorizer on with ``super.users=User:admin`` and
``allow.everyone.if.no.acl.found=true`` (topics and groups open; the cluster, which has an
ACL, closed to all but the admin, so only the admin alters quotas). The admin sets the
quotas with kproto's admin client over SASL_SSL. A quota's user is the principal's name
(Kafka's ``KafkaPrincipal.getName``): ``alice`` for ``User:alice``, the whole subject
``CN=client,O=kproto tests`` for a certificate.

Rates are measured as in test_quotas_wire.py (``quota.window.num`` 2, bounds 0.4x-1.5x for
a throttled client, above 3x for a free one). Which quota applies (KIP-55's precedence) is
seen faster by librdkafka's ``throttle_cb``, the oracle: one burst well over a small quota
is throttled at once, and one under a large quota is not.
"""

from __future__ import annotations

import time

import pytest

from kproto.admin import (
    AccessControlEntry,
    AclBinding,
    AdminClient,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
    ResourcePattern,
)
from kproto.errors import ClusterAuthorizationFailedError
from minibroker import MiniBroker
from tests.minibroker.test_quotas_wire import VALUE, produce_rate
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)

ck = pytest.importorskip("confluent_kafka")

QUOTA = 200_000  # bytes/s, a rate to measure
SMALL, LARGE = 10_000, 500_000_000  # bytes/s: a 60 KB burst is throttled under SMALL, never under LARGE
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
              + " ".join(f'user_{user}="{password}"' for user, password in PASSWORDS.items()) + ";")
DN = "CN=client,O=kproto tests"
USER, CLIENT = ClientQuotaEntity.USER, ClientQuotaEntity.CLIENT_ID


@pytest.fixture(scope="module")
def secured(pki, tmp_path_factory):
    keystore = tmp_path_factory.mktemp("keystore") / "server.pem"
    keystore.write_text(pki.server.key_pem + pki.server.cert_pem)
    config = {
        "listeners": "SASL_SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
        "advertised.listeners": "SASL_SSL://localhost:0,MTLS://localhost:0",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,MTLS:SSL",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.location": str(pki.ca.cert_path),
        "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN",
        "plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "true",
        "quota.window.num": 2,
    }
    with MiniBroker(config=config) as broker:
        with AdminClient(sasl(broker, pki, "admin")) as admin:
            admin.create_acls([AclBinding(ResourcePattern("CLUSTER", "kafka-cluster"),
                                          AccessControlEntry("User:*", "*", "IDEMPOTENT_WRITE", "ALLOW"))])
        yield broker


def sasl(broker: MiniBroker, pki, user: str) -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers_for("SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(pki.ca.cert_path), "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": PASSWORDS[user]}


def mtls(broker: MiniBroker, pki) -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers_for("MTLS"), "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca.cert_path), "ssl.certificate.location": str(pki.client.cert_path),
            "ssl.key.location": str(pki.client.key_path)}


@pytest.fixture
def admin(secured, pki):
    with AdminClient(sasl(secured, pki, "admin")) as client:
        yield client
        # each test starts without quotas
        every = client.describe_client_quotas()
        if every:
            client.alter_client_quotas([ClientQuotaAlteration(entity, [ClientQuotaAlteration.Op(key, None)
                                                                      for key in quotas])
                                        for entity, quotas in every.items()])


def set_quota(admin, entity: dict, key: str, value: float | None) -> None:
    admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity(entity), [ClientQuotaAlteration.Op(key, value)])])


def burst_throttle_ms(settings: dict, client_id: str, topic: str) -> int:
    """The longest throttle librdkafka reports for one 60 KB burst (0: not throttled)."""
    conf = {k: v for k, v in settings.items() if k != "sasl.mechanism"}
    if "sasl.mechanism" in settings:
        conf["sasl.mechanisms"] = settings["sasl.mechanism"]
    throttles: list[int] = []
    producer = ck.Producer({**conf, "client.id": client_id, "linger.ms": 50, "enable.idempotence": False,
                            "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    for _ in range(60):
        producer.produce(topic, VALUE)
    assert producer.flush(10) == 0
    deadline = time.monotonic() + 0.5  # the throttle is reported with the answer
    while time.monotonic() < deadline and not throttles:
        producer.poll(0.05)
    del producer
    return max(throttles, default=0)


def test_a_user_quota_holds_alice_and_not_bob(secured, admin, pki):
    """Issue 15, quotas with SASL users: a producer_byte_rate on /users/alice holds alice's
    kproto producer (logged in with PLAIN over SASL_SSL) to it, measured; bob, with no
    quota, produces far faster."""
    set_quota(admin, {USER: "alice"}, "producer_byte_rate", QUOTA)
    alice = produce_rate(sasl(secured, pki, "alice"), "rates", 4.0)
    assert 0.4 * QUOTA < alice < 1.5 * QUOTA, alice
    bob = produce_rate(sasl(secured, pki, "bob"), "rates", 1.5)
    assert bob > 3 * QUOTA, bob


def test_kip55_precedence_with_real_users(secured, admin, pki):
    """Issue 15, quotas with SASL users, KIP-55's order: /users/alice/clients/capped over
    /users/alice; /users/alice over /users/<default>; /users/<default> over
    /clients/bob-tool (a user quota ranks above a client-id one); /users/bob/clients/<default>
    over /users/<default>. librdkafka reports the throttles."""
    set_quota(admin, {USER: None}, "producer_byte_rate", SMALL)
    set_quota(admin, {USER: "alice"}, "producer_byte_rate", LARGE)
    set_quota(admin, {USER: "alice", CLIENT: "capped"}, "producer_byte_rate", SMALL)
    set_quota(admin, {CLIENT: "bob-tool"}, "producer_byte_rate", LARGE)
    alice, bob = sasl(secured, pki, "alice"), sasl(secured, pki, "bob")
    assert burst_throttle_ms(alice, "app", "kip55") == 0
    assert burst_throttle_ms(alice, "capped", "kip55") > 0
    assert burst_throttle_ms(bob, "bob-tool", "kip55") > 0
    set_quota(admin, {USER: "bob", CLIENT: None}, "producer_byte_rate", LARGE)
    assert burst_throttle_ms(bob, "bob-tool-2", "kip55") == 0


def test_a_certificate_principals_user_quota_is_its_whole_subject(secured, admin, pki):
    """Issue 15, quotas with an mTLS principal: the user entity of a TLS principal is the
    certificate's whole subject (``CN=client,O=kproto tests``): the user default holds it
    until a quota for that subject, LARGE, takes over; a quota on ``client`` alone (the CN)
    is someone else's."""
    set_quota(admin, {USER: None}, "producer_byte_rate", SMALL)
    set_quota(admin, {USER: "client"}, "producer_byte_rate", LARGE)
    client = mtls(secured, pki)
    assert burst_throttle_ms(client, "cert-app", "dn") > 0
    set_quota(admin, {USER: DN}, "producer_byte_rate", LARGE)
    assert burst_throttle_ms(client, "cert-app-2", "dn") == 0


def test_quotas_are_altered_and_described_by_the_admin_only(secured, admin, pki):
    """Issue 15: kproto's admin client, logged in as the super user over SASL_SSL, alters
    and describes quotas of SASL users and a certificate subject; bob, who may not
    ALTER_CONFIGS / DESCRIBE_CONFIGS the cluster, is refused both."""
    set_quota(admin, {USER: "alice"}, "producer_byte_rate", 1024)
    set_quota(admin, {USER: "alice", CLIENT: "app"}, "consumer_byte_rate", 2048)
    set_quota(admin, {USER: DN}, "request_percentage", 25)
    assert admin.describe_client_quotas() == {
        ClientQuotaEntity({USER: "alice"}): {"producer_byte_rate": 1024.0},
        ClientQuotaEntity({USER: "alice", CLIENT: "app"}): {"consumer_byte_rate": 2048.0},
        ClientQuotaEntity({USER: DN}): {"request_percentage": 25.0}}
    only_dn = ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_entity(USER, DN)])
    assert admin.describe_client_quotas(only_dn) == {ClientQuotaEntity({USER: DN}): {"request_percentage": 25.0}}
    with AdminClient(sasl(secured, pki, "bob")) as bob:
        with pytest.raises(ClusterAuthorizationFailedError):
            set_quota(bob, {USER: "bob"}, "producer_byte_rate", LARGE)
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.describe_client_quotas()
