"""minibroker with TLS and SASL listeners, for the tests of kproto's clients (issue 15).

:func:`secure_config` is one broker's settings with a listener per case, Kafka's names
(docs/guides/tls_sasl_broker.rst):

- ``PLAINTEXT``; ``SSL`` (server authentication, client certificates requested);
  ``MTLS`` (SSL, client certificates required); ``WRONGHOST`` and ``EXPIRED`` (SSL with a
  certificate for another host, and an expired one);
- ``SASL_PLAINTEXT`` and ``SASL_SSL`` with PLAIN (users :data:`PLAIN_USERS` from the JAAS
  config), SCRAM-SHA-256/512 (users made by AlterUserScramCredentials) and OAUTHBEARER
  (Kafka's default validator of unsecured JWTs); ``LIMITED``: SASL_PLAINTEXT with PLAIN
  and SCRAM-SHA-512 only.

:class:`SaslLog` records, from the broker's side, what each SASL exchange did: it wraps
minibroker's per-connection ``Authenticator`` (SaslHandshake and SaslAuthenticate never
reach ``MiniBroker.requests``' controls: the authenticator answers them) and the
Metadata handler (the principal and listener of each request), with pytest's
``monkeypatch``, so nothing of minibroker changes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import struct
from pathlib import Path
from typing import Any

from kproto.config import ClientConfig
from kproto.io import Cluster
from kproto.protocol import ApiKey, decode_request
from minibroker.handlers import HANDLERS
from minibroker.sasl import Authenticator

__all__ = ["PLAIN_USERS", "SaslLog", "brokers_named", "make_scram_users", "secure_config"]

PLAIN_USERS = {"alice": "alice-secret", "bob": "bob-secret"}
LISTENERS = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "MTLS": "SSL", "WRONGHOST": "SSL", "EXPIRED": "SSL",
             "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL", "LIMITED": "SASL_PLAINTEXT"}


def _keystore(issued: Any, directory: Path) -> str:
    """KIP-651's ssl.keystore.location: one PEM file with the key and the chain."""
    path = directory / f"{issued.common_name}-{issued.cert_path.stem}.keystore.pem"
    path.write_text(issued.key_pem + issued.cert_pem)
    return str(path)


def secure_config(pki: Any, directory: Path, *, expired_at: dt.datetime | None = None,
                  **more: Any) -> dict[str, Any]:
    """The settings of a broker with the listeners of the module docstring; the EXPIRED
    listener's certificate expired at ``expired_at`` (default: two days ago); ``more``
    (Kafka's names, given as a dict's keys) adds to them or overrides them."""
    directory.mkdir(parents=True, exist_ok=True)
    past = expired_at or dt.datetime.now(dt.UTC) - dt.timedelta(days=2)
    # a name no other test's certificate shares up to a dot: certs.py names the files by
    # Path.with_suffix, and "elsewhere" after "elsewhere.example" (both "elsewhere.crt")
    # makes its free-name loop spin forever
    wrong_host = pki.ca.issue("wrong-host", hosts=("kafka.example.com",))
    expired = pki.ca.issue("localhost", hosts=("localhost", "127.0.0.1"), not_before=past - dt.timedelta(days=30),
                           not_after=past)
    users = " ".join(f'user_{name}="{password}"' for name, password in PLAIN_USERS.items())
    config = {
        "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
        "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in LISTENERS.items()),
        "ssl.keystore.location": _keystore(pki.server, directory),
        "ssl.truststore.location": str(pki.ca.cert_path),
        "ssl.client.auth": "requested",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.wronghost.ssl.keystore.location": _keystore(wrong_host, directory),
        "listener.name.expired.ssl.keystore.location": _keystore(expired, directory),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.limited.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "plain.sasl.jaas.config": f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
        "connection.failed.authentication.delay.ms": 10,
    }
    config.update(more)
    return config


def make_scram_users(broker: Any, users: dict[str, str], listener: str = "PLAINTEXT") -> None:
    """SCRAM-SHA-256 and -512 credentials for ``users`` (name -> password), made with
    kproto's admin client (AlterUserScramCredentials) over ``listener``: one request per
    mechanism (Kafka refuses a user altered twice in one request)."""
    from kproto.admin import AdminClient, ScramCredentialInfo, UserScramCredentialUpsertion

    with AdminClient(bootstrap_servers=broker.bootstrap_servers_for(listener)) as admin:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion(name, ScramCredentialInfo(mechanism, 4096), password)
                for name, password in users.items()])


class SaslLog:
    """What the brokers' SASL side saw while it is installed (see the module docstring).

    Attributes:
        handshakes: SaslHandshake requests, ``[mechanism]``.
        authenticates: SaslAuthenticate requests (each token the client sent).
        authentications: successful exchanges, ``[(mechanism, principal)]``, principal
            without ``User:``; re-authentications too.
        failures: failed exchanges.
        reauthentications: successful re-authentications (KIP-368).
        requests: ``[(listener, principal)]`` of every Metadata request handled.
        events: ``"authenticated"`` and ``"Metadata"`` in the order the broker did them.
        authenticators: every connection's authenticator, in order.
        tokens: the OAUTHBEARER tokens clients sent, in order.
    """

    def __init__(self, monkeypatch: Any) -> None:
        self.handshakes: list[str] = []
        self.authenticates = 0
        self.authentications: list[tuple[str, str]] = []
        self.failures = 0
        self.reauthentications = 0
        self.requests: list[tuple[str, str]] = []
        self.events: list[str] = []
        self.tokens: list[str] = []
        self.authenticators: list[Authenticator] = []
        receive, init = Authenticator.receive, Authenticator.__init__
        log = self

        def recording_init(authenticator: Authenticator, *args: Any, **kwargs: Any) -> None:
            init(authenticator, *args, **kwargs)
            log.authenticators.append(authenticator)

        def recording_receive(authenticator: Authenticator, frame: bytes, now_ms: int) -> Any:
            api_key = struct.unpack_from(">h", frame)[0] if len(frame) >= 2 else -1
            done_before = authenticator.reauthentications
            was_authenticated = authenticator.authenticated
            step = receive(authenticator, frame, now_ms)
            if api_key == ApiKey.SASL_HANDSHAKE:
                log.handshakes.append(decode_request(frame, strict=False)[1].mechanism)
            elif api_key == ApiKey.SASL_AUTHENTICATE:
                log.authenticates += 1
                bearer = re.search(rb"auth=Bearer ([^\x01]+)", decode_request(frame, strict=False)[1].auth_bytes)
                if bearer:
                    log.tokens.append(bearer.group(1).decode())
                if step.failed:
                    log.failures += 1
                elif authenticator.authenticated and (not was_authenticated
                                                      or authenticator.reauthentications > done_before):
                    user = (authenticator.principal or "").partition(":")[2]
                    log.authentications.append((authenticator.mechanism or "?", user))
                    log.events.append("authenticated")
                    log.reauthentications += authenticator.reauthentications - done_before
            return step

        monkeypatch.setattr(Authenticator, "__init__", recording_init)
        monkeypatch.setattr(Authenticator, "receive", recording_receive)
        low, high, handler = HANDLERS[ApiKey.METADATA]

        async def recording_metadata(state: Any, ctx: Any, request: Any) -> Any:
            log.requests.append((ctx.listener_name, ctx.principal))
            log.events.append("Metadata")
            return await handler(state, ctx, request)

        monkeypatch.setitem(HANDLERS, ApiKey.METADATA, (low, high, recording_metadata))


def brokers_named(settings: dict) -> dict:
    """Connect with ``settings`` (an admin client's) and answer the brokers Metadata names:
    what a client's TLS and SASL settings get it, or the error they raise."""
    async def run() -> dict:
        cluster = Cluster(ClientConfig("admin", settings))
        try:
            await cluster.refresh(all_topics=True)
            return dict(cluster.brokers)
        finally:
            await cluster.close()
    return asyncio.run(run())
