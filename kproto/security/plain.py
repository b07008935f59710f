"""PLAIN without I/O: the client's one message and the server's check.

RFC 4616: one client message, ``authzid NUL authcid NUL passwd`` in UTF-8, and an empty
server answer on success. Kafka's ``PlainSaslServer`` splits the message into exactly three
tokens, refuses an empty user name or password, checks the password (its
``PlainServerCallbackHandler`` reads ``user_<name>="<password>"`` options of the JAAS
entry), and requires the authzid, when given, to equal the user name. Its failures are
``SaslAuthenticationException`` errors whose text reaches the client in SaslAuthenticate's
error message with SASL_AUTHENTICATION_FAILED (58): here
:class:`~kproto.security.SaslServerError` with the same text, shown to the client.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from kproto.security import SaslServerError

__all__ = ["MECHANISM", "check", "initial_response"]

MECHANISM = "PLAIN"


def _refused(message: str) -> SaslServerError:
    # PlainSaslServer throws SaslAuthenticationException: its text reaches the client
    return SaslServerError(message, MECHANISM, shown=True)


def initial_response(username: str, password: str, authzid: str = "") -> bytes:
    """The client's message (RFC 4616 section 2)."""
    if "\0" in username or "\0" in password or "\0" in authzid:
        raise ValueError("PLAIN user names, passwords and authzids cannot contain NUL")
    return f"{authzid}\0{username}\0{password}".encode()


def check(message: bytes, users: Mapping[str, str]) -> str:
    """The principal (user name) that ``message`` authenticates against ``users`` (name ->
    password), or :class:`~kproto.security.SaslServerError` with Kafka's PlainSaslServer
    text."""
    try:
        tokens = message.decode("utf-8").split("\0")
    except UnicodeDecodeError:
        raise _refused("Invalid SASL/PLAIN response: not UTF-8") from None
    # PlainSaslServer.extractTokens counts up to 4 tokens and wants exactly 3
    if len(tokens) != 3:
        raise _refused(
            f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}"
        )
    authzid, username, password = tokens
    if not username:
        raise _refused("Authentication failed: username not specified")
    if not password:
        raise _refused("Authentication failed: password not specified")
    expected = users.get(username)
    # compare_digest on both branches: the time does not tell whether the user exists
    valid = hmac.compare_digest(password.encode(), (expected or "").encode())
    if expected is None or not valid:
        raise _refused("Authentication failed: Invalid username or password")
    if authzid and authzid != username:
        raise _refused(
            "Authentication failed: Client requested an authorization id that is different from "
            "username"
        )
    return username
