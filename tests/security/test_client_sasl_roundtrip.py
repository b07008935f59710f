"""kproto's producer, consumer (in a group) and admin client doing real work over SSL,
mutual TLS, SASL_PLAINTEXT and SASL_SSL against minibroker's own listeners (issue 15,
client side, item 5), sync and asyncio; and KIP-368 re-authentication under the broker's
``connections.max.reauth.ms`` while a producer keeps producing.

One broker for the module (tests/support/secure_broker.py); its SCRAM users are made by
kproto's own admin client. Every connection (bootstrap, leader, coordinator) goes through
the listener the client was given: minibroker advertises the listener a client came in on.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kproto import AdminClient, Consumer, Producer
from kproto.aio import AIOAdminClient, AIOConsumer, AIOProducer
from kproto.security.oauthbearer import unsecured_token
from minibroker import MiniBroker
from minibroker.sasl import SaslState
from tests.support.leaks import nothing_left_behind  # noqa: F401 (autouse)
from tests.support.secure_broker import SaslLog, make_scram_users, secure_config

PLAIN_USERS = {"alice": "alice-secret"}
SCRAM_USERS = {"alice": "alice-scram"}  # another password than PLAIN's: each mechanism checks its own
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="alice";')


@pytest.fixture(scope="module")
def broker(pki, tmp_path_factory):
    with MiniBroker(config=secure_config(pki, tmp_path_factory.mktemp("roundtrip"))) as broker:
        make_scram_users(broker, SCRAM_USERS)
        yield broker


@pytest.fixture
def sasl_log(monkeypatch):
    return SaslLog(monkeypatch)


def _security(broker, pki, listener: str, how: str) -> dict:
    """The client settings for ``listener`` with ``how`` (a SASL mechanism, or for SSL
    listeners ``server-auth`` / ``mTLS``)."""
    settings = {"bootstrap.servers": broker.bootstrap_servers_for(listener), "security.protocol": listener}
    if listener in ("SSL", "MTLS", "SASL_SSL"):
        settings["ssl.ca.location"] = str(pki.ca.cert_path)
    if listener == "MTLS":
        return {**settings, "security.protocol": "SSL", "ssl.certificate.location": str(pki.client.cert_path),
                "ssl.key.location": str(pki.client.key_path)}
    if listener == "SSL":
        return settings
    settings["sasl.mechanism"] = how.removesuffix("-provider")
    if how == "OAUTHBEARER":
        settings["sasl.jaas.config"] = OAUTH_JAAS
    elif how == "OAUTHBEARER-provider":
        settings["sasl.oauthbearer.token.provider"] = lambda: unsecured_token("alice", int(time.time() * 1000))
    else:
        settings.update({"sasl.username": "alice",
                         "sasl.password": (PLAIN_USERS if how == "PLAIN" else SCRAM_USERS)["alice"]})
    return settings


CASES = [("SSL", "server-auth"), ("MTLS", "mTLS"),
         ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
         ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"),
         ("SASL_SSL", "OAUTHBEARER"), ("SASL_SSL", "OAUTHBEARER-provider")]
IDS = [f"{listener}-{how}" for listener, how in CASES]


def _principal(listener: str) -> str:
    return {"SSL": "User:ANONYMOUS", "MTLS": "User:CN=client,O=kproto tests"}.get(listener, "User:alice")


def _check_broker_side(sasl_log, listener: str, how: str) -> None:
    """Every request came in on ``listener`` as the expected principal; a SASL client's
    every connection authenticated with its mechanism."""
    assert {name for name, _ in sasl_log.requests} == {listener}
    assert {p for _, p in sasl_log.requests} == {_principal(listener)}
    if listener.startswith("SASL"):
        assert sasl_log.authentications and set(sasl_log.authentications) == {
            (how.removesuffix("-provider"), "alice")}
        assert sasl_log.failures == 0


@pytest.mark.parametrize("listener, how", CASES, ids=IDS)
def test_admin_producer_and_consumer_round_trip(broker, pki, sasl_log, listener, how):
    """Issue 15 item 5: create a topic, produce, and consume it back with a group and
    commit, every connection over the listener's TLS and/or SASL; the broker sees the
    client's principal (the certificate's subject for mutual TLS)."""
    settings = _security(broker, pki, listener, how)
    topic = f"sync-{listener}-{how}".lower()
    with AdminClient(settings) as admin:
        admin.create_topics([topic])
    with Producer(settings) as producer:
        for i in range(10):
            producer.send(topic, f"v{i}".encode(), key=b"k")
        producer.flush(30)
    with Consumer(settings, group_id=f"g-{topic}", auto_offset_reset="earliest",
                  session_timeout_ms=6000, heartbeat_interval_ms=500) as consumer:
        consumer.subscribe([topic])
        got: list[bytes] = []
        for _ in range(50):
            got += [r.value for r in consumer.poll(1.0)]
            if len(got) >= 10:
                break
        consumer.commit()
    assert got == [f"v{i}".encode() for i in range(10)]
    _check_broker_side(sasl_log, listener, how)


@pytest.mark.parametrize("listener, how", CASES, ids=IDS)
def test_asyncio_clients_round_trip(broker, pki, sasl_log, listener, how):
    """Issue 15 item 5: the asyncio clients with the same settings: admin, producer, and a
    consumer in a group that commits."""
    settings = _security(broker, pki, listener, how)
    topic = f"aio-{listener}-{how}".lower()

    async def run():
        async with AIOAdminClient(settings) as admin:
            await admin.create_topics([topic])
        async with AIOProducer(settings) as producer:
            await producer.send_and_wait(topic, b"hello")
        async with AIOConsumer(settings, group_id=f"g-{topic}", auto_offset_reset="earliest",
                               session_timeout_ms=6000, heartbeat_interval_ms=500) as consumer:
            consumer.subscribe([topic])
            got: list[bytes] = []
            for _ in range(20):
                got += [r.value for r in await consumer.poll(1.0)]
                if got:
                    break
            await consumer.commit()
        return got

    assert asyncio.run(run()) == [b"hello"]
    _check_broker_side(sasl_log, listener, how)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "OAUTHBEARER"])
def test_producer_reauthenticates_over_several_session_lifetimes_on_one_connection(pki, tmp_path, sasl_log,
                                                                                     mechanism):
    """Issue 15 items 3 and 5, KIP-368: under the broker's connections.max.reauth.ms a
    producer keeps producing over several session lifetimes; each connection
    authenticates again before its session ends (the broker would close it otherwise), no
    connection is opened anew for it, and every record is delivered. OAUTHBEARER's
    unsecured login makes a fresh token for each re-authentication. The broker counts the
    re-authentications (minibroker's per-connection authenticator)."""
    # 1.5 s: a client renews at 85-95% of it, so past Kafka's one-second minimum between re-authentications
    config = secure_config(pki, tmp_path, **{"connections.max.reauth.ms": 1500})
    with MiniBroker(config=config) as reauth_broker:
        make_scram_users(reauth_broker, SCRAM_USERS)
        settings = {**_security(reauth_broker, pki, "SASL_SSL", mechanism), "linger.ms": 0}
        first = len(sasl_log.authenticators)  # the admin's PLAINTEXT connections have none
        with Producer(settings) as producer:
            futures = []
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                futures.append(producer.send("reauth", b"v", partition=0))
                time.sleep(0.05)
                if max((a.reauthentications for a in sasl_log.authenticators[first:]), default=0) >= 3:
                    break
            producer.flush(30)
            offsets = [f.result(10).offset for f in futures]
    mine = sasl_log.authenticators[first:]
    # the leader's connection renewed its session 3 times; the bootstrap one, idle, need not
    # (as Java's, a client re-authenticates when it next sends)
    assert max(a.reauthentications for a in mine) >= 3, [a.reauthentications for a in mine]
    assert not [a for a in mine if a.state is SaslState.FAILED]
    assert len(mine) <= 2  # bootstrap and leader at most: no reconnection for a new session
    assert offsets == list(range(len(futures)))
    assert sasl_log.reauthentications == sum(a.reauthentications for a in mine)
