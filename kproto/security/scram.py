"""SCRAM-SHA-256 and SCRAM-SHA-512 without I/O: the client's and the server's conversation.

RFC 5802 (SCRAM) with the hashes of RFC 7677, as Kafka speaks it (KIP-84): Kafka's
``ScramSaslClient``, ``ScramSaslServer``, ``ScramFormatter``, ``ScramMessages`` and
``ScramCredential``. Four messages, no channel binding (``c=biws`` is ``n,,`` in base64)::

    client-first   n,,n=<saslname>,r=<client nonce>[,tokenauth=true]
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>       (or e=<error>, RFC 5802)

Keys (RFC 5802 section 3): SaltedPassword = PBKDF2-HMAC(password, salt, i);
ClientKey = HMAC(SaltedPassword, "Client Key"); StoredKey = H(ClientKey);
ServerKey = HMAC(SaltedPassword, "Server Key"); AuthMessage = client-first-bare + "," +
server-first + "," + client-final-without-proof; ClientProof = ClientKey XOR
HMAC(StoredKey, AuthMessage); ServerSignature = HMAC(ServerKey, AuthMessage). The server
keeps only :class:`ScramCredential` (salt, StoredKey, ServerKey, iterations).

Kafka's rules kept here: 4096 iterations at least for both mechanisms (``ScramMechanism``'s
``minIterations``), refused by the client and by the server; user names travel as RFC 5802
saslnames (``,`` as ``=2C``, ``=`` as ``=3D``, ``ScramFormatter.saslName``); the
``tokenauth`` extension (delegation tokens, KIP-48) is parsed and reported, not acted on.
Kafka's server never sends ``e=``: it fails the SaslAuthenticate with
SASL_AUTHENTICATION_FAILED (58) and a message, so :class:`ScramServer` raises
:class:`~kproto.security.SaslServerError` with ScramSaslServer's text; Kafka shows the client
that text only for an authzid that is not the user, a generic message otherwise. The client
raises :class:`~kproto.errors.SaslAuthenticationFailedError` (ScramSaslClient's texts), also
for an ``e=`` from other servers. A message out of turn is
:class:`~kproto.errors.IllegalSaslStateError`.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kproto.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from kproto.security import SaslServerError

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MECHANISM_CODES",
    "MECHANISM_NAMES",
    "MIN_ITERATIONS",
    "ScramClient",
    "ScramCredential",
    "ScramServer",
    "ScramState",
    "credential",
    "credential_of_salted_password",
    "salted_password",
    "sasl_name",
    "username_of",
]

# mechanism -> hashlib name (Kafka's ScramMechanism: hashAlgorithm, macAlgorithm)
MECHANISMS: Mapping[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: The mechanisms' wire codes (Java's ``org.apache.kafka.clients.admin.ScramMechanism.type()``,
#: 0 is UNKNOWN): DescribeUserScramCredentials, AlterUserScramCredentials, and
#: ``UserScramCredentialRecord``.
MECHANISM_CODES: Mapping[str, int] = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
#: The mechanism of each wire code of :data:`MECHANISM_CODES`.
MECHANISM_NAMES: Mapping[int, str] = {code: name for name, code in MECHANISM_CODES.items()}
# ScramMechanism.minIterations: 4096 for both
MIN_ITERATIONS = 4096
#: The most iterations a broker accepts for a credential (ScramControlManager.MAX_ITERATIONS).
MAX_ITERATIONS = 16384

_GS2_HEADER = b"n,,"
_CHANNEL_BINDING = base64.b64encode(_GS2_HEADER)  # "biws"


class ScramState(enum.Enum):
    """Kafka's ScramSaslClient/ScramSaslServer states."""

    SEND_CLIENT_FIRST_MESSAGE = "SEND_CLIENT_FIRST_MESSAGE"
    RECEIVE_SERVER_FIRST_MESSAGE = "RECEIVE_SERVER_FIRST_MESSAGE"
    RECEIVE_SERVER_FINAL_MESSAGE = "RECEIVE_SERVER_FINAL_MESSAGE"
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(frozen=True)
class ScramCredential:
    """What the server stores for a user (Kafka's ScramCredential)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hash_name(mechanism: str) -> str:
    try:
        return MECHANISMS[mechanism]
    except KeyError:
        raise ValueError(
            f"unknown SCRAM mechanism {mechanism!r}: one of {', '.join(MECHANISMS)}"
        ) from None


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's SaltedPassword, ``Hi(password, salt, iterations)`` (Kafka's
    ``ScramFormatter.hi``): what a client proves knowledge of, and what AlterUserScramCredentials
    sends instead of the password (KIP-554).

    Raises:
        ValueError: an unknown mechanism.
    """
    # Hi() is PBKDF2 with HMAC as the PRF and one block of the hash's length
    return hashlib.pbkdf2_hmac(_hash_name(mechanism), password.encode("utf-8"), salt, iterations)


def _xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


def _nonce() -> str:
    # printable, without ',' (RFC 5802); Kafka's ScramFormatter.secureRandomString is base 36
    return secrets.token_urlsafe(24)


def credential(
    password: str, mechanism: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """The stored credential of ``password`` (Kafka's ScramFormatter.generateCredential)."""
    _hash_name(mechanism)  # an unknown mechanism is refused before anything else
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS}")
    salt = secrets.token_bytes(32) if salt is None else salt
    return credential_of_salted_password(
        salted_password(mechanism, password, salt, iterations), mechanism, iterations, salt
    )


def credential_of_salted_password(
    salted_password: bytes, mechanism: str, iterations: int, salt: bytes
) -> ScramCredential:
    """The stored credential of a SaltedPassword, as AlterUserScramCredentials (KIP-554)
    sends it (Kafka's ScramFormatter.storedKey(clientKey(...)) and serverKey(...))."""
    hash_name = _hash_name(mechanism)
    client_key = _hmac(hash_name, salted_password, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(hash_name, client_key).digest(),
        server_key=_hmac(hash_name, salted_password, b"Server Key"),
        iterations=iterations,
    )


def sasl_name(username: str) -> str:
    """``username`` as an RFC 5802 saslname (Kafka's ScramFormatter.saslName)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(saslname: str) -> str:
    """The user name of a saslname (Kafka's ScramFormatter.username); a ``=`` not starting
    ``=2C`` or ``=3D`` is invalid (RFC 5802 section 5.1)."""
    rest = saslname.replace("=2C", "").replace("=3D", "")
    if "=" in rest:
        raise ValueError(f"Invalid username: {saslname}")
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: bytes, what: str) -> list[tuple[str, str]]:
    """``a=value`` pairs of a SCRAM message, in order."""
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"Invalid SCRAM {what}: not UTF-8") from None
    pairs = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise ValueError(f"Invalid SCRAM {what}: {text!r}")
        pairs.append((key, value))
    return pairs


def _b64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError(f"Invalid base64 in SCRAM {what}") from None


class ScramClient:
    """The client's conversation (Kafka's ScramSaslClient).

    ``first_message()`` -> send; ``final_message(server_first)`` -> send;
    ``verify(server_final)`` completes it or raises
    :class:`~kproto.errors.SaslAuthenticationFailedError`. ``nonce`` is for tests (RFC
    vectors); ``token_auth`` adds ``tokenauth=true`` for a delegation token.
    """

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        *,
        nonce: str | None = None,
        token_auth: bool = False,
    ) -> None:
        self.mechanism = mechanism
        self._hash = _hash_name(mechanism)
        self.username = username
        self._password = password
        self._nonce = _nonce() if nonce is None else nonce
        self._token_auth = token_auth
        self._client_first_bare = b""
        self._server_signature = b""
        self.state = ScramState.SEND_CLIENT_FIRST_MESSAGE

    def _expect(self, state: ScramState) -> None:
        if self.state is not state:
            raise IllegalSaslStateError(f"Unexpected challenge in Sasl client state {self.state.name}")

    def first_message(self) -> bytes:
        """client-first-message: ``n,,n=<saslname>,r=<nonce>``."""
        self._expect(ScramState.SEND_CLIENT_FIRST_MESSAGE)
        bare = f"n={sasl_name(self.username)},r={self._nonce}"
        if self._token_auth:
            bare += ",tokenauth=true"  # ScramExtensions (KIP-48)
        self._client_first_bare = bare.encode("utf-8")
        self.state = ScramState.RECEIVE_SERVER_FIRST_MESSAGE
        return _GS2_HEADER + self._client_first_bare

    def final_message(self, server_first: bytes) -> bytes:
        """client-final-message with the proof, from the server-first-message."""
        self._expect(ScramState.RECEIVE_SERVER_FIRST_MESSAGE)
        self.state = ScramState.FAILED
        try:
            return self._final_message(server_first)
        except ValueError as exc:  # a malformed message
            raise SaslAuthenticationFailedError(str(exc)) from None

    def _final_message(self, server_first: bytes) -> bytes:
        attrs = dict(_attributes(server_first, "server-first-message"))
        if "e" in attrs:
            raise SaslAuthenticationFailedError(
                f"Sasl authentication using {self.mechanism} failed with error: {attrs['e']}"
            )
        try:
            nonce, salt_b64, iterations_text = attrs["r"], attrs["s"], attrs["i"]
            iterations = int(iterations_text)
        except (KeyError, ValueError):
            raise ValueError(
                f"Invalid SCRAM server-first-message: {server_first!r}"
            ) from None
        if not nonce.startswith(self._nonce):
            raise SaslAuthenticationFailedError("Invalid server nonce: does not start with client nonce")
        # ScramSaslClient: "Requested iterations ... is less than the minimum ..."
        if iterations < MIN_ITERATIONS:
            raise SaslAuthenticationFailedError(
                f"Requested iterations {iterations} is less than the minimum "
                f"{MIN_ITERATIONS} for {self.mechanism}"
            )
        salt = _b64(salt_b64, "server-first-message")
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        self._password = ""
        without_proof = b"c=" + _CHANNEL_BINDING + b",r=" + nonce.encode("utf-8")
        auth_message = self._client_first_bare + b"," + server_first + b"," + without_proof
        client_key = _hmac(self._hash, salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        proof = _xor(client_key, _hmac(self._hash, stored_key, auth_message))
        server_key = _hmac(self._hash, salted, b"Server Key")
        self._server_signature = _hmac(self._hash, server_key, auth_message)
        self.state = ScramState.RECEIVE_SERVER_FINAL_MESSAGE
        return without_proof + b",p=" + base64.b64encode(proof)

    def verify(self, server_final: bytes) -> None:
        """Check the server-final-message: ``v=`` must be the server's signature; ``e=``
        raises with the server's error."""
        self._expect(ScramState.RECEIVE_SERVER_FINAL_MESSAGE)
        self.state = ScramState.FAILED
        try:
            self._verify(server_final)
        except ValueError as exc:  # a malformed message
            raise SaslAuthenticationFailedError(str(exc)) from None
        self.state = ScramState.COMPLETE

    def _verify(self, server_final: bytes) -> None:
        attrs = dict(_attributes(server_final, "server-final-message"))
        if "e" in attrs:
            raise SaslAuthenticationFailedError(
                f"Sasl authentication using {self.mechanism} failed with error: {attrs['e']}"
            )
        if "v" not in attrs:
            raise SaslAuthenticationFailedError(
                f"Invalid SCRAM server-final-message: {server_final!r}"
            )
        if not hmac.compare_digest(_b64(attrs["v"], "server-final-message"), self._server_signature):
            raise SaslAuthenticationFailedError("Invalid server signature in server final message")


class ScramServer:
    """The server's conversation (Kafka's ScramSaslServer) over stored credentials.

    ``credentials(username)`` answers the user's :class:`ScramCredential` for this mechanism
    or ``None``. ``first_message(client_first)`` -> send; ``final_message(client_final)`` ->
    send, and the user is authenticated (``principal``). Failures raise
    :class:`~kproto.security.SaslServerError` with Kafka's text. ``nonce`` is for tests.
    """

    def __init__(
        self,
        mechanism: str,
        credentials: Callable[[str], ScramCredential | None],
        *,
        nonce: str | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._hash = _hash_name(mechanism)
        self._credentials = credentials
        self._server_nonce = _nonce() if nonce is None else nonce
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._username = ""
        self._client_first_bare = b""
        self._server_first = b""
        self.principal: str | None = None
        self.token_auth = False
        self.state = ScramState.RECEIVE_CLIENT_FIRST_MESSAGE

    def _expect(self, state: ScramState) -> None:
        if self.state is not state:
            raise IllegalSaslStateError(f"Unexpected challenge in Sasl server state {self.state.name}")

    def _refuse(self, message: str, *, shown: bool = False) -> SaslServerError:
        self.state = ScramState.FAILED
        return SaslServerError(message, self.mechanism, shown=shown)

    def first_message(self, client_first: bytes) -> bytes:
        """server-first-message for the client-first-message."""
        self._expect(ScramState.RECEIVE_CLIENT_FIRST_MESSAGE)
        try:
            return self._first_message(client_first)
        except ValueError as exc:  # a malformed message: Kafka's SaslException
            raise self._refuse(str(exc)) from None

    def _first_message(self, client_first: bytes) -> bytes:
        # gs2-header: "n" (no channel binding; Kafka refuses "y" and "p"), authzid, ","
        flag, _, rest = client_first.partition(b",")
        authzid_field, _, bare = rest.partition(b",")
        if flag != b"n" or not (authzid_field == b"" or authzid_field.startswith(b"a=")):
            raise self._refuse(
                f"Invalid SCRAM client first message: {client_first!r}"
            )
        attrs = _attributes(bare, "client first message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise self._refuse(
                f"Invalid SCRAM client first message: {client_first!r}"
            )
        username = username_of(attrs[0][1])
        extensions = dict(attrs[2:])
        # ScramExtensions: tokenauth=true means a delegation token; parsed, not supported yet
        self.token_auth = extensions.get("tokenauth", "false").lower() == "true"
        found = self._credentials(username)
        if found is None:
            raise self._refuse("Authentication failed: Invalid user credentials")
        authzid = username_of(authzid_field[2:].decode("utf-8")) if authzid_field else ""
        if authzid and authzid != username:
            raise self._refuse(  # a SaslAuthenticationException: its text reaches the client
                "Authentication failed: Client requested an authorization id that is different "
                "from username",
                shown=True,
            )
        if found.iterations < MIN_ITERATIONS:
            raise self._refuse(
                f"Iterations {found.iterations} is less than the minimum {MIN_ITERATIONS} "
                f"for {self.mechanism}"
            )
        self._credential = found
        self._nonce = attrs[1][1] + self._server_nonce
        self._client_first_bare = bare
        self._server_first = (
            f"r={self._nonce},s={base64.b64encode(found.salt).decode()},i={found.iterations}"
        ).encode()
        self._username = username
        self.state = ScramState.RECEIVE_CLIENT_FINAL_MESSAGE
        return self._server_first

    def final_message(self, client_final: bytes) -> bytes:
        """server-final-message (``v=``) for a client-final-message with a valid proof."""
        self._expect(ScramState.RECEIVE_CLIENT_FINAL_MESSAGE)
        try:
            return self._final_message(client_final)
        except ValueError as exc:  # a malformed message: Kafka's SaslException
            raise self._refuse(str(exc)) from None
        finally:
            self._credential = None  # ScramSaslServer.clearCredentials, on success or failure

    def _final_message(self, client_final: bytes) -> bytes:
        assert self._credential is not None
        without_proof, sep, proof_field = client_final.rpartition(b",p=")
        attrs = dict(_attributes(without_proof, "client final message")) if sep else {}
        if not sep or attrs.get("c") != _CHANNEL_BINDING.decode() or "r" not in attrs:
            raise self._refuse(
                "Authentication failed: Invalid client final message"
            )
        # ScramSaslServer: the nonce must be the one of the server-first-message
        if attrs["r"] != self._nonce:
            raise self._refuse("Invalid client nonce in the final client message.")
        proof = _b64(proof_field.decode("ascii", "replace"), "client final message")
        auth_message = self._client_first_bare + b"," + self._server_first + b"," + without_proof
        signature = _hmac(self._hash, self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise self._refuse("Invalid client credentials")
        client_key = _xor(proof, signature)
        if not hmac.compare_digest(
            hashlib.new(self._hash, client_key).digest(), self._credential.stored_key
        ):
            raise self._refuse("Invalid client credentials")
        server_signature = _hmac(self._hash, self._credential.server_key, auth_message)
        self.principal = self._username
        self.state = ScramState.COMPLETE
        return b"v=" + base64.b64encode(server_signature)
