"""``kproto quotas``: alter and describe client quotas (``kafka-configs.sh`` with
``--entity-type users`` / ``clients`` and quota keys, KIP-55).

The entity is named as ``kafka-configs.sh``'s shortcuts name it: ``--user NAME`` or
``--user-defaults`` (``/users/<default>``), ``--client CLIENT_ID`` or
``--client-defaults``, or a user and a client together (``/users/alice/clients/app``).
A TLS user is the certificate's whole subject (``--user 'CN=app,O=example'``).
``alter`` takes ``--add-config`` as Kafka's tool does (``'producer_byte_rate=1048576,
consumer_byte_rate=2097152'``; repeatable) and ``--delete-config KEY`` (repeatable):
the keys ``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
``controller_mutation_rate``. ``describe`` lists the quotas of the entities that match
(every entity without a name; ``--json`` for programs).
"""

from __future__ import annotations

import argparse
from typing import Any

from kproto.admin import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
)
from kproto.cli.options import UsageError, add_command, add_connection_options, admin_client
from kproto.cli.output import add_json_option, emit

__all__ = ["parse_config_list", "register"]

_COLUMNS = ("user", "client_id", "quotas")
_DEFAULT = "<default>"  # how Kafka's tools show a default entity


def parse_config_list(texts: list[str]) -> dict[str, str]:
    """``--add-config`` values as ``kafka-configs.sh`` reads them: ``key=value`` pairs
    separated by commas, a value in square brackets keeping its commas
    (``SCRAM-SHA-256=[iterations=8192,password=secret]`` gives the bracketed text without
    its brackets). Several options are joined.

    Raises:
        UsageError: a pair without ``=``, or an unclosed bracket.
    """
    pairs: dict[str, str] = {}
    for text in texts:
        depth, start, parts = 0, 0, []
        for i, char in enumerate(text):
            depth += {"[": 1, "]": -1}.get(char, 0)
            if char == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        if depth != 0:
            raise UsageError(f"unbalanced brackets in --add-config {text!r}")
        parts.append(text[start:])
        for part in filter(None, (p.strip() for p in parts)):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"--add-config takes key=value pairs, not {part!r}")
            value = value.strip()
            pairs[key.strip()] = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    return pairs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "quotas", help="alter and describe client quotas of users and client ids",
                         examples=["kproto quotas alter --user alice --add-config producer_byte_rate=1048576",
                                   "kproto quotas alter --user alice --client app --add-config consumer_byte_rate=2097152",
                                   "kproto quotas alter --user-defaults --add-config request_percentage=50",
                                   "kproto quotas alter --client-defaults --delete-config producer_byte_rate",
                                   "kproto quotas describe --user alice"])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    alter = add_command(actions, "alter", help="set and delete quota keys of one entity",
                        examples=["kproto quotas alter --user alice --add-config 'producer_byte_rate=1024,"
                                  "consumer_byte_rate=2048'",
                                  "kproto quotas alter --user 'CN=app,O=example' --add-config producer_byte_rate=1024",
                                  "kproto quotas alter --user alice --delete-config producer_byte_rate"])
    describe = add_command(actions, "describe", help="the quotas of the entities that match (all without a name)",
                           examples=["kproto quotas describe", "kproto quotas describe --user-defaults",
                                     "kproto quotas describe --client app --json"])
    for action in (alter, describe):
        entity = action.add_argument_group("entity")
        users = entity.add_mutually_exclusive_group()
        users.add_argument("--user", metavar="NAME", help="a user (the SASL user, or a certificate's subject)")
        users.add_argument("--user-defaults", action="store_true", help="the default user, /users/<default>")
        clients = entity.add_mutually_exclusive_group()
        clients.add_argument("--client", metavar="CLIENT_ID", help="a client id")
        clients.add_argument("--client-defaults", action="store_true", help="the default client id")
        add_connection_options(action)
    alter.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V]",
                       help="quota keys to set, kafka-configs.sh's way (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                       help="a quota key to delete (repeatable)")
    add_json_option(describe)
    alter.set_defaults(run=_alter)
    describe.set_defaults(run=_describe)


def _entity(args: argparse.Namespace) -> dict[str, str | None]:
    entity: dict[str, str | None] = {}
    if args.user is not None or args.user_defaults:
        entity[ClientQuotaEntity.USER] = args.user
    if args.client is not None or args.client_defaults:
        entity[ClientQuotaEntity.CLIENT_ID] = args.client
    return entity


def _number(key: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{key} takes a number, not {text!r}") from None


def _alter(args: argparse.Namespace) -> int:
    entity = _entity(args)
    if not entity:
        raise UsageError("name the entity: --user, --user-defaults, --client or --client-defaults")
    added = parse_config_list(args.add_config)
    if not added and not args.delete_config:
        raise UsageError("nothing to alter: give --add-config or --delete-config")
    ops = [ClientQuotaAlteration.Op(k, _number(k, v)) for k, v in added.items()]
    ops += [ClientQuotaAlteration.Op(k, None) for k in args.delete_config]
    with admin_client(args) as admin:
        admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity(entity), tuple(ops))])
    print(f"Completed updating quotas for {_describe_entity(entity)}.")
    return 0


def _describe_entity(entity: dict[str, str | None]) -> str:
    """``user-principal 'alice', client-id 'app'`` as kafka-configs.sh names an entity."""
    names = {ClientQuotaEntity.USER: "user-principal", ClientQuotaEntity.CLIENT_ID: "client-id"}
    return ", ".join(f"the default {names[k]}" if v is None else f"{names[k]} '{v}'" for k, v in entity.items())


def _describe(args: argparse.Namespace) -> int:
    components = [ClientQuotaFilterComponent.of_default_entity(k) if v is None
                  else ClientQuotaFilterComponent.of_entity(k, v) for k, v in _entity(args).items()]
    with admin_client(args) as admin:
        found = admin.describe_client_quotas(ClientQuotaFilter.contains(components))
    rows: list[dict[str, Any]] = []
    for entity, quotas in found.items():
        names = entity.entries
        row: dict[str, Any] = {key: (names[kind] if names[kind] is not None else _DEFAULT) if kind in names else None
                               for key, kind in (("user", ClientQuotaEntity.USER),
                                                 ("client_id", ClientQuotaEntity.CLIENT_ID))}
        if args.json:
            row["quotas"] = quotas
        else:
            row["quotas"] = ",".join(f"{k}={_plain(v)}" for k, v in sorted(quotas.items()))
        rows.append(row)
    rows.sort(key=lambda r: (r["user"] or "", r["client_id"] or ""))
    emit(rows, _COLUMNS, args.json)
    return 0


def _plain(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)
