"""Where a broker keeps its ACLs: ``minibroker-acls.json`` in the first log directory.

Kafka keeps ACLs in its metadata log (KRaft's ``AccessControlEntryRecord``); a single
minibroker keeps them in this file, rewritten atomically (write, fsync, rename:
:mod:`minibroker.storage`'s helper) before a CreateAcls or DeleteAcls counts, and read
back on start. Without ``log.dirs`` they live in memory only.

The file holds Kafka's names, one object per ACL::

    {"version": 1, "acls": [{"resource_type": "TOPIC", "resource_name": "orders",
      "pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
      "operation": "READ", "permission_type": "ALLOW"}]}

A damaged file stops the broker from starting (:exc:`~minibroker.storage.CorruptStateFileError`),
as the topics file does: starting without its ACLs would silently open what a DENY closed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from minibroker.authorizer import AclBinding, validate_binding
from minibroker.authorizer import AclOperation as Op
from minibroker.authorizer import AclPermissionType as Perm
from minibroker.authorizer import PatternType as Pattern
from minibroker.authorizer import ResourceType as Resource
from minibroker.storage import _load_json, _parsing, _write_atomically

__all__ = ["ACLS_FILE", "AclStore"]

ACLS_FILE = "minibroker-acls.json"

_REFUSAL = ("the broker does not start rather than lose its ACLs (which would open what they closed); "
            "restore the file, or remove it and create the ACLs again")


class AclStore:
    """Reads and writes the ACLs file of one broker.

    Args:
        log_dirs: the broker's log directories; the file goes in the first. None or
            empty: nothing is written (an in-memory broker).
    """

    def __init__(self, log_dirs: Iterable[Path]):
        dirs = list(log_dirs)
        self.path: Path | None = dirs[0] / ACLS_FILE if dirs else None

    def load(self) -> list[AclBinding]:
        """The ACLs saved last (none when there is no file).

        Raises:
            CorruptStateFileError: the file cannot be read, or holds something else.
        """
        if self.path is None or not self.path.exists():
            return []
        data = _load_json(self.path, _REFUSAL)
        with _parsing(self.path, _REFUSAL):
            return [validate_binding(Resource[a["resource_type"]], a["resource_name"], Pattern[a["pattern_type"]],
                                     a["principal"], a["host"], Op[a["operation"]], Perm[a["permission_type"]])
                    for a in data["acls"]]

    def save(self, acls: list[AclBinding]) -> None:
        """Replace the file with ``acls``, durably (an OSError leaves the old file)."""
        if self.path is None:
            return
        data = {"version": 1, "acls": [
            {"resource_type": a.resource_type.name, "resource_name": a.resource_name,
             "pattern_type": a.pattern_type.name, "principal": a.principal, "host": a.host,
             "operation": a.operation.name, "permission_type": a.permission_type.name} for a in acls]}
        _write_atomically(self.path, json.dumps(data, indent=1))
