"""A broker's listeners at run time: what each one binds, advertises and asks of a connection.

:func:`listener_securities` turns the checked config (:class:`~minibroker.config.BrokerConfig`:
``listeners``, ``advertised.listeners``, ``listener.security.protocol.map`` and the
per-listener ``ssl.*`` / ``sasl.*`` keys) into one :class:`ListenerSecurity` per listener,
building each TLS context and SASL setting once, so that a bad certificate or JAAS config
stops the broker when it is made, not at the first connection. Each connection then has a
:class:`Channel`: its listener, its TLS principal and its SASL authenticator; the server
asks it for the principal of every request (Kafka's ``KafkaChannel``).
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass
from typing import Any

from minibroker.config import BrokerConfig, Listener
from minibroker.handlers import ANONYMOUS
from minibroker.sasl import Authenticator, SaslSettings
from minibroker.tls import PrincipalMapper, server_context, subject_dn

__all__ = ["Channel", "ListenerSecurity", "listener_securities"]


@dataclass(frozen=True)
class ListenerSecurity:
    """One listener: its name, security protocol, addresses, TLS context and SASL settings.

    Attributes:
        bind: where to listen (port 0: a free one).
        advertised: what Metadata tells the clients of this listener (port 0 or None: the
            bound port; host "": this machine's name).
        ssl_context: for SSL and SASL_SSL, else None.
        principal_mapper: ``ssl.principal.mapping.rules`` of an SSL listener.
        sasl: for SASL_PLAINTEXT and SASL_SSL, else None.
    """

    name: str
    protocol: str
    bind: Listener
    advertised: Listener
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: PrincipalMapper | None = None
    sasl: SaslSettings | None = None


def listener_securities(config: BrokerConfig) -> list[ListenerSecurity]:
    """Every listener of ``config``, in order.

    Raises:
        ValueError: a TLS or SASL setting that is missing, unsupported or unreadable,
            naming the listener and the key.
    """
    out = []
    for bind in config.listeners:
        name = bind.name
        protocol = config.security_protocols[name]
        context = mapper = sasl = None
        if protocol in ("SSL", "SASL_SSL"):
            context = server_context(functools.partial(_ssl_setting, config, name, protocol), name)
        if protocol == "SSL":
            mapper = PrincipalMapper(str(config.for_listener(name, "ssl.principal.mapping.rules")))
        if protocol.startswith("SASL_"):
            sasl = SaslSettings.of(config, name)
        out.append(ListenerSecurity(name, protocol, bind, config.advertised_listeners[name], context, mapper, sasl))
    return out


def _ssl_setting(config: BrokerConfig, listener: str, protocol: str, key: str) -> Any:
    # KIP-684: a SASL_SSL listener takes ssl.client.auth only with its listener prefix
    return config.for_listener(listener, key, inherit=not (protocol == "SASL_SSL" and key == "ssl.client.auth"))


class Channel:
    """One connection's security state (Kafka's ``KafkaChannel``): its listener, the
    principal of its client certificate, and its SASL authenticator."""

    def __init__(self, listener: ListenerSecurity, scram_credentials: Any = None) -> None:
        self.listener = listener
        self.tls_principal = ANONYMOUS
        self.authenticator = (Authenticator(listener.sasl, scram_credentials) if listener.sasl is not None else None)

    @property
    def listener_name(self) -> str:
        return self.listener.name

    @property
    def principal(self) -> str:
        """Kafka's DefaultKafkaPrincipalBuilder: the SASL user on a SASL listener, the
        client certificate's mapped subject on an SSL one, else ANONYMOUS."""
        if self.authenticator is not None:
            return self.authenticator.principal or ANONYMOUS
        return self.tls_principal

    def tls_established(self, ssl_object: ssl.SSLObject | None) -> None:
        """Take the client certificate's principal (SSL listeners only).

        Raises:
            ValueError: no ``ssl.principal.mapping.rules`` rule applies to the subject.
        """
        if self.listener.principal_mapper is None or ssl_object is None:
            return
        cert = ssl_object.getpeercert()
        if cert:  # {} or None: no certificate, or one not verified (ssl.client.auth=none)
            self.tls_principal = f"User:{self.listener.principal_mapper.name(subject_dn(cert))}"
