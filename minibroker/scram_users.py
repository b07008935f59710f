"""SCRAM users' rules: what an AlterUserScramCredentials request changes, checked as Kafka's
``ScramControlManager`` checks it (KIP-554).

One owner for the single broker (:mod:`minibroker.handlers.scram`, which applies the
changes to its :class:`~minibroker.scram_credentials.ScramCredentials`) and a MiniCluster's
controller (:mod:`minibroker.cluster.controller`, which commits them as
``UserScramCredentialRecord`` s): no I/O, no state of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kproto.errors import (
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from kproto.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    ScramCredential,
    credential_of_salted_password,
)

__all__ = ["ScramChanges", "plan_alter"]


#: What an AlterUserScramCredentials request changes: deletions, upsertions, and one
#: ``(user, error code, message)`` per user named (see :func:`plan_alter`).
ScramChanges = tuple[list[tuple[str, str]], dict[tuple[str, str], ScramCredential], list[tuple[str, int, str | None]]]


def _check(name: str, mechanism: int) -> tuple[int, str | None]:
    """(error_code, message) of ScramControlManager.validateScramUsernameAndMechanism."""
    if not name:
        return UnacceptableCredentialError.code, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return UnsupportedSaslMechanismError.code, "Unknown SCRAM mechanism"
    return 0, None


def plan_alter(exists: Callable[[tuple[str, str]], bool], request: Any) -> ScramChanges:
    """The changes of an AlterUserScramCredentials ``request`` (its wire form), checked as
    Kafka's ``ScramControlManager`` does against the credentials ``exists`` tells of: a user
    named twice in one request is DUPLICATE_RESOURCE for all its changes, an empty name
    UNACCEPTABLE_CREDENTIAL, a mechanism other than SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2)
    UNSUPPORTED_SASL_MECHANISM, iterations below 4096 or above 16384
    UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist RESOURCE_NOT_FOUND.
    The credential of an upsertion is derived from the salted password it sends; the single
    broker and a MiniCluster's controller both plan with this."""
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    errors: dict[str, tuple[int, str | None]] = {}
    duplicate = DuplicateResourceError.code, "A user credential cannot be altered twice in the same request"
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = duplicate
            continue
        code, message = _check(d.name, d.mechanism)
        if not code and not exists((d.name, MECHANISM_NAMES[d.mechanism])):
            code, message = ResourceNotFoundError.code, "Attempt to delete a user credential that does not exist"
        if code:
            errors[d.name] = code, message
        else:
            deletions[d.name] = d
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = duplicate
            continue
        code, message = _check(u.name, u.mechanism)
        if not code and u.iterations < MIN_ITERATIONS:
            code, message = UnacceptableCredentialError.code, "Too few iterations"
        elif not code and u.iterations > MAX_ITERATIONS:
            code, message = UnacceptableCredentialError.code, "Too many iterations"
        if code:
            errors[u.name] = code, message
        else:
            upsertions[u.name] = u
    results: list[tuple[str, int, str | None]] = [(name, 0, None) for name in [*deletions, *upsertions]]
    results += [(name, code, message) for name, (code, message) in errors.items()]
    return ([(d.name, MECHANISM_NAMES[d.mechanism]) for d in deletions.values()],
            {(u.name, MECHANISM_NAMES[u.mechanism]): credential_of_salted_password(
                u.salted_password, MECHANISM_NAMES[u.mechanism], u.iterations, u.salt) for u in upsertions.values()},
            results)
