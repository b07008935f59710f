"""The admin client's SCRAM user calls (KIP-554): describe and alter the SCRAM credentials
that brokers check SCRAM-SHA-256 and SCRAM-SHA-512 logins against.

The shapes are Java's ``org.apache.kafka.clients.admin`` ones::

    await admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", ScramCredentialInfo("SCRAM-SHA-256", 8192), "alice-secret"),
        UserScramCredentialDeletion("bob", "SCRAM-SHA-512")])
    await admin.describe_user_scram_credentials(["alice"])
    # {'alice': UserScramCredentialsDescription(name='alice', credential_infos=[
    #     ScramCredentialInfo(mechanism='SCRAM-SHA-256', iterations=8192)])}

The password never travels: as Java's ``KafkaAdminClient.alterUserScramCredentials``, the
client sends the salt and the SaltedPassword (RFC 5802's ``Hi(password, salt, i)``, made
by :mod:`kproto.security.scram`), from which the broker derives the stored credential.
An upsertion without a salt gets a random one (Java's ``UserScramCredentialUpsertion``).

Routing and errors, as Java's: DescribeUserScramCredentials goes to any broker,
AlterUserScramCredentials to the controller the metadata names (a KRaft broker forwards it,
KIP-590). An error of a whole Describe answer raises its typed error; otherwise each user
has its outcome, and one failed user (RESOURCE_NOT_FOUND for a user asked for who has no
credential, UNACCEPTABLE_CREDENTIAL for too few iterations, DUPLICATE_RESOURCE for a user
altered twice for one mechanism...) raises its error with ``.results`` holding every user's
outcome (see :mod:`kproto.admin`). A mechanism kproto does not know is refused before
anything is sent (Java's ``UnsupportedSaslMechanismException``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

from kproto.admin.base import AdminState, item_error, outcome
from kproto.errors import UnsupportedSaslMechanismError, for_code
from kproto.security import scram

__all__ = [
    "SCRAM_MECHANISM_CODES",
    "ScramCredentialInfo",
    "ScramUsers",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
]

#: The wire codes of Java's ``ScramMechanism`` (0 is UNKNOWN): :data:`kproto.security.scram.MECHANISM_CODES`.
SCRAM_MECHANISM_CODES = scram.MECHANISM_CODES
_MECHANISM_OF = scram.MECHANISM_NAMES


def _code(mechanism: str) -> int:
    code = SCRAM_MECHANISM_CODES.get(str(mechanism).upper())
    if code is None:
        raise UnsupportedSaslMechanismError(
            f"unknown SCRAM mechanism {mechanism!r}: one of {', '.join(SCRAM_MECHANISM_CODES)}")
    return code


@dataclass(frozen=True, slots=True)
class ScramCredentialInfo:
    """A mechanism and its iteration count (Java's ``ScramCredentialInfo``)."""

    mechanism: str
    iterations: int


@dataclass(frozen=True, slots=True)
class UserScramCredentialsDescription:
    """A user's SCRAM credentials: which mechanisms, with which iterations (never the
    salts or keys)."""

    name: str
    credential_infos: list[ScramCredentialInfo] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class UserScramCredentialUpsertion:
    """Set ``user``'s credential for ``credential_info``'s mechanism (Java's
    ``UserScramCredentialUpsertion``). ``salt`` None: a random one."""

    user: str
    credential_info: ScramCredentialInfo
    password: str | bytes = field(repr=False)
    salt: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class UserScramCredentialDeletion:
    """Remove ``user``'s credential for ``mechanism`` (Java's ``UserScramCredentialDeletion``)."""

    user: str
    mechanism: str


class ScramUsers(AdminState):
    """The SCRAM user calls of :class:`~kproto.admin.AIOAdminClient`."""

    async def describe_user_scram_credentials(
            self, users: Iterable[str] | None = None) -> dict[str, UserScramCredentialsDescription]:
        """The SCRAM credentials of ``users`` (None: of every user that has one).

        Raises:
            KafkaCodeError: the answer's error (``ClusterAuthorizationFailedError``...), or
                one user's (``ResourceNotFoundError`` for a user without credentials), with
                ``.results`` holding every user's outcome.
        """
        from kproto.protocol.messages import DescribeUserScramCredentialsRequest as Request  # noqa: PLC0415

        names = None if users is None else list(dict.fromkeys(users))  # asked twice: DUPLICATE_RESOURCE
        request = Request(users=None if names is None else [Request.UserName(name=n) for n in names])

        async def attempt():
            response = await self._cluster.request(None, request)
            if response.error_code:
                raise for_code(response.error_code)(response.error_message or "DescribeUserScramCredentials")
            return response

        response = await self._retrying(attempt)
        results: dict[str, object] = {}
        for r in response.results:
            error = item_error(r.error_code, r.error_message, r.user)
            results[r.user] = error or UserScramCredentialsDescription(r.user, [
                ScramCredentialInfo(_MECHANISM_OF.get(c.mechanism, f"UNKNOWN({c.mechanism})"), c.iterations)
                for c in r.credential_infos])
        return outcome(results)  # type: ignore[return-value]

    async def alter_user_scram_credentials(
            self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion]) -> dict[str, None]:
        """Apply upsertions and deletions; ``{user: None}`` when every user's succeeded.

        Raises:
            UnsupportedSaslMechanismError: a mechanism other than SCRAM-SHA-256/512
                (nothing is sent).
            KafkaCodeError: one user's error (``UnacceptableCredentialError``,
                ``ResourceNotFoundError`` for a deletion of nothing,
                ``DuplicateResourceError``...), with ``.results`` holding every user's outcome.
        """
        alterations = list(alterations)
        for a in alterations:  # refused before anything is computed or sent
            if not isinstance(a, (UserScramCredentialUpsertion, UserScramCredentialDeletion)):
                raise TypeError(f"expected UserScramCredentialUpsertion or UserScramCredentialDeletion, not {a!r}")
            _code(a.mechanism if isinstance(a, UserScramCredentialDeletion) else a.credential_info.mechanism)
        from kproto.protocol.messages import AlterUserScramCredentialsRequest as Request  # noqa: PLC0415

        deletions, upsertions = [], []
        for a in alterations:
            if isinstance(a, UserScramCredentialDeletion):
                deletions.append(Request.ScramCredentialDeletion(name=a.user, mechanism=_code(a.mechanism)))
            else:
                upsertions.append(_upsertion(Request, a))
        request = Request(deletions=deletions, upsertions=upsertions)

        async def attempt():
            return await (await self._controller()).request(request)  # type: ignore[attr-defined]

        response = await self._retrying(attempt)
        return outcome({r.user: item_error(r.error_code, r.error_message, r.user) for r in response.results})


def _upsertion(request: type, a: UserScramCredentialUpsertion) -> object:
    """The wire form of an upsertion: the salt and the SaltedPassword, never the password
    (Java's ``KafkaAdminClient.getSaltedPassword``: ``ScramFormatter.hi``)."""
    mechanism = str(a.credential_info.mechanism).upper()
    code = _code(mechanism)
    salt = secrets.token_bytes(32) if a.salt is None else a.salt
    password = a.password.decode("utf-8") if isinstance(a.password, bytes) else a.password
    salted = scram.salted_password(mechanism, password, salt, a.credential_info.iterations)
    return request.ScramCredentialUpsertion(  # type: ignore[attr-defined]
        name=a.user, mechanism=code, iterations=a.credential_info.iterations, salt=salt, salted_password=salted)
