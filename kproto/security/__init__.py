"""SASL without I/O: each mechanism's messages and state machines, client and server side.

Issue 15 (security). This package will hold what kproto's clients and minibroker's listeners
share to authenticate a connection: one module per SASL mechanism, each the one owner of that
mechanism's bytes, and the parsing of ``sasl.jaas.config``. Nothing here opens a socket or
reads a clock on its own: the caller moves the bytes through SaslHandshake (17) and
SaslAuthenticate (36) and passes time in.

What exists now:

- :mod:`kproto.security.scram`: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's
  ScramSaslClient, ScramSaslServer, ScramFormatter, ScramCredential).
- :mod:`kproto.security.plain`: PLAIN (RFC 4616; Kafka's PlainSaslServer).
- :mod:`kproto.security.jaas`: ``sasl.jaas.config`` as Kafka's JaasConfig parses it.
- :mod:`kproto.security.oauthbearer`: OAUTHBEARER (RFC 7628; Kafka's
  OAuthBearerClientInitialResponse, OAuthBearerSaslClient, OAuthBearerSaslServer) and Kafka's
  unsecured JWTs (OAuthBearerUnsecuredJws and its login and validator callback handlers).

TLS, ACLs and quotas, and the wiring into the clients and the broker, come later.
"""

__all__: list[str] = []
