"""kproto's producer, consumer and admin client doing real work over TLS, mutual TLS and
SASL_SSL (issue 15, client side, item 5), sync and asyncio.

The broker is a minibroker behind the TLS/SASL front of tests/support/secure_broker.py
(``upstream``): the front terminates TLS and authenticates (kproto.security's server
sides), then passes the authenticated connection's requests to minibroker, which
advertises the front's port. The ``secured_broker`` fixture is the place where
minibroker's own TLS/SASL listeners take over after the merge.
"""

from __future__ import annotations

import asyncio

import pytest

from kproto import AdminClient, Consumer, Producer
from kproto.aio import AIOAdminClient, AIOConsumer, AIOProducer
from kproto.structs import TopicPartition
from minibroker import MiniBroker
from tests.support.leaks import nothing_left_behind  # noqa: F401 (autouse)
from tests.support.secure_broker import SecureBroker, server_context

USERS = {"alice": "alice-secret"}


@pytest.fixture(scope="module")
def secured_broker(pki):
    """A minibroker behind a TLS front with PLAIN, SCRAM and OAUTHBEARER, requiring
    client certificates on a second front (mutual TLS); yields ``{"sasl": front, "mtls": front}``."""
    sasl = SecureBroker(ssl_context=server_context(pki.server.cert_path, pki.server.key_path),
                        plain_users=USERS, scram_users=USERS, oauthbearer=True).__enter__()
    mtls = SecureBroker(ssl_context=server_context(pki.server.cert_path, pki.server.key_path,
                                                   client_ca=pki.ca.cert_path)).__enter__()
    try:
        with MiniBroker(advertised_port=sasl.port) as behind_sasl, MiniBroker(advertised_port=mtls.port) as behind_mtls:
            sasl.upstream = ("127.0.0.1", behind_sasl.port)
            mtls.upstream = ("127.0.0.1", behind_mtls.port)
            yield {"sasl": sasl, "mtls": mtls}
    finally:
        sasl.close()
        mtls.close()


def _security(front, pki, how: str) -> dict:
    settings = {"bootstrap.servers": front.bootstrap_servers, "ssl.ca.location": str(pki.ca.cert_path)}
    if how == "mTLS":
        return {**settings, "security.protocol": "SSL", "ssl.certificate.location": str(pki.client.cert_path),
                "ssl.key.location": str(pki.client.key_path)}
    settings.update({"security.protocol": "SASL_SSL", "sasl.mechanism": how})
    if how == "OAUTHBEARER":
        settings["sasl.jaas.config"] = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule '
                                        'required unsecuredLoginStringClaim_sub="alice";')
    else:
        settings.update({"sasl.username": "alice", "sasl.password": "alice-secret"})
    return settings


HOWS = ["mTLS", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]


@pytest.mark.parametrize("how", HOWS)
def test_admin_producer_and_consumer_round_trip(secured_broker, pki, how):
    """Issue 15 item 5: create a topic, produce, and consume it back with a group, every
    connection (bootstrap, leader, coordinator) over TLS and, but for mTLS, SASL."""
    front = secured_broker["mtls" if how == "mTLS" else "sasl"]
    settings = _security(front, pki, how)
    topic = f"secure-{how.lower()}"
    before = len(front.authentications)
    with AdminClient(settings) as admin:
        admin.create_topics([topic])
    with Producer(settings) as producer:
        for i in range(10):
            producer.send(topic, f"v{i}".encode(), key=b"k")
        producer.flush(30)
    with Consumer(settings, group_id=f"g-{how}", auto_offset_reset="earliest",
                  session_timeout_ms=6000, heartbeat_interval_ms=500) as consumer:
        consumer.subscribe([topic])
        got: list[bytes] = []
        for _ in range(50):
            got += [r.value for r in consumer.poll(1.0)]
            if len(got) >= 10:
                break
        consumer.commit()
    assert got == [f"v{i}".encode() for i in range(10)]
    if how != "mTLS":
        assert len(front.authentications) > before
        assert {m for m, _ in front.authentications[before:]} == {how}


def test_asyncio_clients_over_sasl_ssl(secured_broker, pki):
    """Issue 15 item 5: the asyncio faces take the same settings."""
    settings = _security(secured_broker["sasl"], pki, "SCRAM-SHA-512")
    topic = "secure-asyncio"

    async def run():
        async with AIOAdminClient(settings) as admin:
            await admin.create_topics([topic])
        async with AIOProducer(settings) as producer:
            metadata = await producer.send_and_wait(topic, b"hello")
        async with AIOConsumer(settings) as consumer:
            tp = TopicPartition(topic, metadata.partition)
            consumer.assign([tp])
            consumer.seek(tp, metadata.offset)
            records = await consumer.poll(10.0)
        return [r.value for r in records]

    assert asyncio.run(run()) == [b"hello"]
