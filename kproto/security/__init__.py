"""Security for the clients and minibroker: SASL's mechanisms without I/O, client and server
side, and the clients' TLS and SASL settings.

Issue 15 (security). What kproto's clients and minibroker's listeners share to authenticate a
connection: one module per SASL mechanism, each the one owner of that mechanism's bytes, and
the parsing of ``sasl.jaas.config``. The mechanism modules open no socket and read no clock:
the caller moves the bytes through SaslHandshake (17) and SaslAuthenticate (36) and passes
time in.

- :mod:`kproto.security.scram`: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's
  ScramSaslClient, ScramSaslServer, ScramFormatter, ScramCredential).
- :mod:`kproto.security.plain`: PLAIN (RFC 4616; Kafka's PlainSaslServer).
- :mod:`kproto.security.jaas`: ``sasl.jaas.config`` as Kafka's JaasConfig parses it.
- :mod:`kproto.security.oauthbearer`: OAUTHBEARER (RFC 7628; Kafka's
  OAuthBearerClientInitialResponse, OAuthBearerSaslClient, OAuthBearerSaslServer) and Kafka's
  unsecured JWTs (OAuthBearerUnsecuredJws and its login and validator callback handlers).
- :mod:`kproto.security.tls`: the clients' ``ssl.SSLContext`` from their ``ssl.*`` settings,
  and the words for a failed handshake.
- :mod:`kproto.security.sasl`: the clients' ``sasl.*`` settings checked together, and each
  mechanism's conversation as a generator that :class:`kproto.io.Connection` drives.
- :mod:`kproto.security.oidc`: OAUTHBEARER tokens from an OAuth 2 token endpoint by the
  client-credentials grant (KIP-768; Kafka's HttpAccessTokenRetriever and its refresh).
- :mod:`kproto.security.jwks`: a broker's check of signed OAUTHBEARER tokens against a JSON
  Web Key Set (KIP-768; Kafka's broker JWT validator), used by minibroker's listeners.

minibroker's side of the wire (listeners, the per-connection SASL state machine, the TLS
server context) is in :mod:`minibroker.listeners`, :mod:`minibroker.sasl` and
:mod:`minibroker.tls`, on top of these modules.

A server side refuses an exchange with :class:`SaslServerError`, which knows what Kafka's
broker would tell the client; a client sees :class:`~kproto.errors.SaslAuthenticationError`.
"""

from __future__ import annotations

from kproto.errors import SaslAuthenticationFailedError

__all__ = ["SaslServerError"]


class SaslServerError(SaslAuthenticationFailedError):
    """A server-side mechanism refused the exchange (SASL_AUTHENTICATION_FAILED, 58).

    ``args[0]`` is the mechanism's own text, for the broker's log. :meth:`client_message` is
    what Kafka's ``SaslServerAuthenticator.handleSaslToken`` puts in the SaslAuthenticate
    response: that text when Kafka's mechanism throws a ``SaslAuthenticationException``
    (``shown``), otherwise (a ``SaslException``) a generic message naming only the phase
    and the mechanism, so that a client learns nothing about which users exist.
    """

    def __init__(self, message: str, mechanism: str, *, shown: bool = False) -> None:
        super().__init__(message)
        self.mechanism = mechanism
        self.shown = shown

    def client_message(self, reauthentication: bool = False) -> str:
        """The error message of the SaslAuthenticate response."""
        if self.shown:
            return str(self.args[0])
        phase = "re-authentication" if reauthentication else "authentication"
        return (
            f"Authentication failed during {phase} due to invalid credentials with SASL "
            f"mechanism {self.mechanism}"
        )
