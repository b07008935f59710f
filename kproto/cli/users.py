"""``kproto users``: alter and describe SCRAM users (``kafka-configs.sh --entity-type
users`` with ``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` keys, KIP-554).

``alter NAME --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'`` sets
the user's credential for that mechanism (``iterations`` defaults to 4096, Kafka's tool's
default; ``SCRAM-SHA-512=[password=...]`` too, in one option or two); ``--delete-config
SCRAM-SHA-512`` removes one. The password does not travel: the admin client sends the
salted password (see :mod:`kproto.admin.scram`). A password on the command line is seen by
other users of the machine (``ps``), as with Kafka's tool; prefer a script that calls the
admin client where that matters. ``describe`` lists each user's mechanisms and iterations
(every SCRAM user without a name). Quotas of users are ``kproto quotas``'s.
"""

from __future__ import annotations

import argparse

from kproto.admin import (
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kproto.admin.scram import SCRAM_MECHANISM_CODES
from kproto.cli.options import UsageError, add_command, add_connection_options, admin_client
from kproto.cli.output import add_json_option, emit
from kproto.cli.quotas import parse_config_list

__all__ = ["register"]

DEFAULT_ITERATIONS = 4096  # ConfigCommand's default for a SCRAM credential without iterations
_COLUMNS = ("user", "mechanism", "iterations")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "users", help="alter and describe SCRAM users",
                         examples=["kproto users alter alice --add-config "
                                   "'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'",
                                   "kproto users alter alice --delete-config SCRAM-SHA-512",
                                   "kproto users describe alice"])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    alter = add_command(actions, "alter", help="set or delete a user's SCRAM credentials",
                        examples=["kproto users alter alice --add-config "
                                  "'SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
                                  "SCRAM-SHA-512=[password=alice-secret]'",
                                  "kproto users alter bob --delete-config SCRAM-SHA-256"])
    alter.add_argument("user", metavar="USER")
    alter.add_argument("--add-config", action="append", default=[], metavar="MECHANISM=[...]",
                       help="SCRAM-SHA-256=[iterations=N,password=P] or SCRAM-SHA-512=[...] (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="MECHANISM",
                       help="a mechanism whose credential to delete (repeatable)")
    describe = add_command(actions, "describe", help="users' SCRAM mechanisms and iterations",
                           examples=["kproto users describe", "kproto users describe alice bob --json"])
    describe.add_argument("users", nargs="*", metavar="USER", help="users to describe (default: every SCRAM user)")
    add_json_option(describe)
    for action in (alter, describe):
        add_connection_options(action)
    alter.set_defaults(run=_alter)
    describe.set_defaults(run=_describe)


def _mechanism(key: str) -> str:
    mechanism = key.strip().upper()
    if mechanism not in SCRAM_MECHANISM_CODES:
        hint = " (quotas are kproto quotas's)" if "_" in key and key.islower() else ""
        raise UsageError(f"unknown SCRAM mechanism {key!r}: one of {', '.join(SCRAM_MECHANISM_CODES)}{hint}")
    return mechanism


def _upsertion(user: str, key: str, text: str) -> UserScramCredentialUpsertion:
    mechanism = _mechanism(key)
    fields = parse_config_list([text])
    unknown = set(fields) - {"iterations", "password"}
    if unknown or "password" not in fields:
        raise UsageError(f"{mechanism} takes [iterations=N,password=P] (password required), not [{text}]")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise UsageError(f"iterations must be a whole number, not {fields['iterations']!r}") from None
    return UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), fields["password"])


def _alter(args: argparse.Namespace) -> int:
    added = parse_config_list(args.add_config)
    if not added and not args.delete_config:
        raise UsageError("nothing to alter: give --add-config or --delete-config")
    alterations: list[UserScramCredentialUpsertion | UserScramCredentialDeletion] = [
        _upsertion(args.user, key, text) for key, text in added.items()]
    alterations += [UserScramCredentialDeletion(args.user, _mechanism(key)) for key in args.delete_config]
    with admin_client(args) as admin:
        # Kafka refuses one user altered twice in a request (DUPLICATE_RESOURCE): one each
        for alteration in alterations:
            admin.alter_user_scram_credentials([alteration])
    print(f"Completed updating SCRAM credentials for user-principal '{args.user}'.")
    return 0


def _describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        found = admin.describe_user_scram_credentials(args.users or None)
    rows = [{"user": name, "mechanism": info.mechanism, "iterations": info.iterations}
            for name, description in sorted(found.items()) for info in description.credential_infos]
    emit(rows, _COLUMNS, args.json)
    return 0
