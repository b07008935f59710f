"""How a MiniCluster broker's own connections to the other brokers authenticate: the TLS
context and SASL client of its ``inter.broker.listener.name`` (issue 15).

Kafka's broker is a client of its own inter-broker listener (its replica fetchers,
WriteTxnMarkers, KIP-890's AddPartitionsToTxn verification): it speaks that listener's
security protocol with settings read from the broker's own config. The same here, built
once per broker by :func:`inter_broker_client` from the listener's settings (each key also
as ``listener.name.<name>.<key>``, Kafka's ``ListenerName.configPrefix``):

- TLS (SSL, SASL_SSL): the other brokers' certificates are checked against
  ``ssl.truststore.*`` (else the system's CAs), their host name too unless
  ``ssl.endpoint.identification.algorithm`` is empty (Kafka's broker default is https);
  the broker's ``ssl.keystore.*`` is its client certificate when the listener asks for one
  (``ssl.client.auth``), so on an SSL listener the brokers' principal is their
  certificate's subject.
- SASL (SASL_PLAINTEXT, SASL_SSL): ``sasl.mechanism.inter.broker.protocol`` (Kafka's
  default GSSAPI is not served; minibroker's default: PLAIN when the listener enables it,
  else its first enabled mechanism), the user name and password from the ``username`` /
  ``password`` options of the listener's ``<mechanism>.sasl.jaas.config`` (Kafka's
  PlainLoginModule / ScramLoginModule ``username="broker" password="..."``). A SCRAM user
  must exist before the brokers connect: Kafka makes it with ``kafka-storage format
  --add-scram``, which minibroker does not have; use PLAIN (the same JAAS entry lists the
  broker as a ``user_broker`` too).

The TLS and SASL clients are kproto's own (:func:`kproto.security.tls.client_context`,
:func:`kproto.security.sasl.client_sasl`), given Kafka's client names through
:class:`kproto.config.ClientConfig`. The brokers' principal must be in ``super.users``
when the authorizer is on, as in Kafka.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from kproto.config import ClientConfig
from kproto.errors import ConfigError
from kproto.security import jaas
from kproto.security.sasl import SaslClient, client_sasl
from kproto.security.tls import client_context
from minibroker.config import BrokerConfig

__all__ = ["InterBrokerClient", "inter_broker_client"]

# The broker's ssl.* keys that are also a client's (kproto.config), copied when set.
_TLS_KEYS = ("ssl.truststore.location", "ssl.truststore.certificates", "ssl.keystore.location",
             "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password")


@dataclass(frozen=True)
class InterBrokerClient:
    """The security of a broker's connections to the other brokers (``Connection``'s
    ``ssl_context`` and ``sasl``); both None on a PLAINTEXT inter-broker listener.

    Attributes:
        protocol: the inter-broker listener's security protocol.
        ssl_context: TLS for SSL and SASL_SSL.
        sasl: the SASL client for SASL_PLAINTEXT and SASL_SSL.
    """

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslClient | None = None

    @property
    def secured(self) -> bool:
        """Whether the brokers authenticate to each other (not PLAINTEXT)."""
        return self.protocol != "PLAINTEXT"

    def connection_settings(self) -> dict[str, Any]:
        """The keyword arguments for :class:`kproto.io.connection.Connection`."""
        return {"ssl_context": self.ssl_context, "sasl": self.sasl}


def _mechanism(config: BrokerConfig, listener: str) -> str:
    enabled = [m.strip().upper() for m in str(config.for_listener(listener, "sasl.enabled.mechanisms")).split(",")
               if m.strip()]
    chosen = str(config["sasl.mechanism.inter.broker.protocol"]).strip().upper()
    if not chosen:
        chosen = "PLAIN" if "PLAIN" in enabled or not enabled else enabled[0]
    if chosen not in enabled:
        # KafkaConfig: "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms"
        raise ValueError(f"sasl.mechanism.inter.broker.protocol {chosen} must be included in "
                         f"sasl.enabled.mechanisms ({','.join(enabled)}) of listener {listener} "
                         "when SASL is used for inter-broker communication")
    if chosen == "OAUTHBEARER":
        raise ValueError("sasl.mechanism.inter.broker.protocol OAUTHBEARER: minibroker's brokers authenticate to "
                         "each other with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
    return chosen


def _credentials(config: BrokerConfig, listener: str, mechanism: str) -> tuple[str, str]:
    key = f"{mechanism.lower()}.sasl.jaas.config"
    text = config.for_listener(listener, key)
    options: dict[str, str] = {}
    try:
        for entry in jaas.parse_entries(text) if text else ():
            options.update(entry.options)
    except ConfigError as exc:
        raise ValueError(f"listener {listener}: {key}: {exc}") from None
    user, password = options.get("username"), options.get("password")
    if user is None or password is None:
        raise ValueError(f"inter-broker listener {listener} uses SASL {mechanism}: the broker's own credentials are "
                         f"the username and password options of listener.name.{listener.lower()}.{key} (e.g. "
                         "PlainLoginModule required username=\"broker\" password=\"...\" user_broker=\"...\")")
    return user, password


def inter_broker_client(config: BrokerConfig) -> InterBrokerClient:
    """The settings of the broker's connections to the other brokers, from its config.

    Raises:
        ValueError: a SASL mechanism that the listener does not enable, no credentials in
            its JAAS config, or TLS settings that kproto's client refuses (naming the key).
    """
    listener = config.inter_broker_listener_name
    protocol = config.security_protocols[listener]
    if protocol == "PLAINTEXT":
        return InterBrokerClient()
    settings: dict[str, Any] = {"bootstrap.servers": "inter-broker", "security.protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        for key in (*_TLS_KEYS, "ssl.enabled.protocols", "ssl.protocol", "ssl.endpoint.identification.algorithm"):
            value = config.for_listener(listener, key)
            if value not in ("", None):
                settings[key] = value
        if "ssl.endpoint.identification.algorithm" not in settings:
            settings["ssl.endpoint.identification.algorithm"] = ""  # set empty: verification off
        # KIP-684 (as the listener reads it): a SASL_SSL listener's ssl.client.auth is its prefixed one only
        client_auth = config.for_listener(listener, "ssl.client.auth", inherit=protocol != "SASL_SSL")
        if str(client_auth).lower() == "none":
            # the listener asks for no client certificate: present none
            for key in ("ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
                        "ssl.key.password"):
                settings.pop(key, None)
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = _mechanism(config, listener)
        user, password = _credentials(config, listener, mechanism)
        settings.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    try:
        client = ClientConfig("admin", settings)
        return InterBrokerClient(protocol, client_context(client), client_sasl(client))
    except ConfigError as exc:
        raise ValueError(f"inter-broker listener {listener}: {exc}") from None
