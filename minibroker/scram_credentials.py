"""The broker's SCRAM users: salted credentials by user and mechanism, kept on disk.

Kafka keeps them as ``UserScramCredentialRecord`` in the cluster metadata (KIP-554,
``ScramControlManager``); a single minibroker keeps them in
``minibroker-scram-credentials.json`` in its first log directory, written atomically
(:func:`minibroker.storage._write_atomically`) at every change, and in memory only when the
broker has no log directory. Only what a SCRAM server needs is stored (salt, StoredKey,
ServerKey, iterations: :class:`~kproto.security.scram.ScramCredential`), never a password.
AlterUserScramCredentials and DescribeUserScramCredentials
(:mod:`minibroker.handlers.scram`) change and read them; SCRAM-SHA-256/512 authentication
(:mod:`minibroker.sasl`) looks them up.

In a MiniCluster the users are the cluster's, as in KRaft: a broker forwards
AlterUserScramCredentials to the controller, which checks it by the same rules
(:func:`minibroker.scram_users.plan_alter`) and commits ``UserScramCredentialRecord`` /
``RemoveUserScramCredentialRecord`` to the metadata log; every broker's store is then its
metadata image's credentials (``ScramCredentials(None, held=image.scram_credentials)``), so
a user made through one broker logs in on every broker, and the metadata log keeps them
across restarts (no file).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

from kproto.security.scram import ScramCredential
from minibroker.storage import _load_json, _parsing, _write_atomically

__all__ = ["SCRAM_CREDENTIALS_FILE", "ScramCredentials"]

SCRAM_CREDENTIALS_FILE = "minibroker-scram-credentials.json"
_REFUSAL = ("the broker does not start rather than lose its SCRAM users; restore the file, or remove it "
            "and create the users again")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class ScramCredentials:
    """SCRAM credentials by (user, mechanism).

    Args:
        directory: the first log directory, or None to keep them in memory.
        held: the dict to read and change (a cluster broker's metadata image's; see the
            module docstring), else a new one.

    Raises:
        minibroker.storage.CorruptStateFileError: the file cannot be read or parsed.
    """

    def __init__(self, directory: Path | None, *, held: dict[tuple[str, str], ScramCredential] | None = None) -> None:
        self._path = directory / SCRAM_CREDENTIALS_FILE if directory is not None else None
        #: held: a MiniCluster broker's metadata image's credentials, read in place
        self._credentials: dict[tuple[str, str], ScramCredential] = held if held is not None else {}
        if self._path is not None and self._path.exists():
            stored = _load_json(self._path, _REFUSAL)
            with _parsing(self._path, _REFUSAL):
                for user, mechanisms in stored.items():
                    for mechanism, c in mechanisms.items():
                        self._credentials[(user, mechanism)] = ScramCredential(
                            base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                            base64.b64decode(c["server_key"]), int(c["iterations"]))

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._credentials

    def users(self) -> list[str]:
        return sorted({user for user, _ in self._credentials})

    def of_user(self, user: str) -> Iterator[tuple[str, ScramCredential]]:
        """``(mechanism, credential)`` of one user, by mechanism name."""
        for (name, mechanism), credential in sorted(self._credentials.items()):
            if name == user:
                yield mechanism, credential

    def apply(self, deletions: list[tuple[str, str]], upsertions: dict[tuple[str, str], ScramCredential]) -> None:
        """Delete and upsert in one step, then write the file once (the request is one change)."""
        for key in deletions:
            self._credentials.pop(key, None)
        self._credentials.update(upsertions)
        if self._path is not None:
            data: dict[str, dict[str, dict[str, object]]] = {}
            for (user, mechanism), c in sorted(self._credentials.items()):
                data.setdefault(user, {})[mechanism] = {
                    "salt": _b64(c.salt), "stored_key": _b64(c.stored_key), "server_key": _b64(c.server_key),
                    "iterations": c.iterations}
            _write_atomically(self._path, json.dumps(data, indent=1, sort_keys=True))

