"""SaslHandshake v0-1 and SaslAuthenticate v0-2, as Kafka's ``KafkaApis`` answers them.

Behaviour: on a SASL listener the connection's authenticator (:mod:`minibroker.sasl`,
Kafka's ``SaslServerAuthenticator``) takes these requests while the connection
authenticates or re-authenticates (KIP-368), so the ones that reach a handler came where no
exchange can happen: on a PLAINTEXT or SSL listener, or after authentication without a
session to renew. Kafka's ``KafkaApis`` answers them ILLEGAL_SASL_STATE, and so do these.
Registering them here also advertises their versions in ApiVersions.
"""

from kproto.errors import IllegalSaslStateError
from kproto.protocol import ApiKey
from kproto.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from minibroker.handlers import handles


@handles(ApiKey.SASL_HANDSHAKE, 0, 1)
async def sasl_handshake(state, header, request):
    return SaslHandshakeResponse(error_code=IllegalSaslStateError.code, mechanisms=[])


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
async def sasl_authenticate(state, header, request):
    return SaslAuthenticateResponse(error_code=IllegalSaslStateError.code,
                                    error_message="SaslAuthenticate request received after successful authentication",
                                    auth_bytes=b"")
