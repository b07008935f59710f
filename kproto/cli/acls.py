"""``kproto acls``: add, remove and list ACLs (``kafka-acls.sh``), with Kafka's flag names.

The resources are ``--topic``, ``--group``, ``--transactional-id`` (each repeatable) and
``--cluster``; ``--resource-pattern-type`` is LITERAL by default (PREFIXED for a prefix;
``list`` and ``remove`` also take ANY and MATCH, as Kafka's filters do). Who and what:
``--allow-principal`` / ``--deny-principal`` (repeatable, ``User:alice``, ``User:*``),
``--allow-host`` / ``--deny-host`` (default ``*`` for a principal given), ``--operation``
(repeatable, Kafka's spellings: ``Read``, ``IdempotentWrite`` or ``IDEMPOTENT_WRITE``;
``add``'s default ``All``). ``--producer`` and ``--consumer`` are Kafka's shortcuts:
WRITE, DESCRIBE and CREATE on the topics (and WRITE and DESCRIBE on the transactional ids;
with ``--idempotent``, IDEMPOTENT_WRITE on the cluster), or READ and DESCRIBE on the
topics and READ on the groups.

As in ``AclCommand``: ``add`` makes one ACL per resource, principal, host and operation;
``remove`` without a principal or an operation removes every ACL of the resources given
(one resource at least); ``list`` without a resource lists every ACL, ``--principal``
keeps those of one principal. Kafka's tool asks before removing; kproto's does not ask
(``--force``, Kafka's "do not prompt", is accepted and changes nothing).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from kproto.admin import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    ResourcePattern,
    ResourcePatternFilter,
)
from kproto.cli.options import UsageError, add_command, add_connection_options, admin_client
from kproto.cli.output import add_json_option, emit

__all__ = ["register"]

_CLUSTER = "kafka-cluster"  # the one CLUSTER resource's name (Kafka's Resource.CLUSTER_NAME)
_COLUMNS = ("resource_type", "name", "pattern_type", "principal", "host", "operation", "permission_type")


def _operation(text: str) -> str:
    """argparse type of ``--operation``: Kafka's tool writes ``IdempotentWrite``
    (``SecurityUtils.operation``), the enum ``IDEMPOTENT_WRITE``; both are taken."""
    name = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", text.strip()).replace("-", "_").upper()
    if name not in AclOperation.__members__ or name in ("ANY", "UNKNOWN"):
        valid = ", ".join(op.name for op in AclOperation if op.name not in ("ANY", "UNKNOWN"))
        raise argparse.ArgumentTypeError(f"unknown operation {text!r} (one of {valid})")
    return name


def _pattern_type(text: str) -> str:
    name = text.strip().upper()
    if name not in ("LITERAL", "PREFIXED", "ANY", "MATCH"):
        raise argparse.ArgumentTypeError(f"unknown resource pattern type {text!r} (LITERAL, PREFIXED, ANY or MATCH)")
    return name


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "acls", help="add, remove and list ACLs",
                         examples=["kproto acls add --allow-principal User:alice --operation Read --operation Write "
                                   "--topic orders- --resource-pattern-type PREFIXED",
                                   "kproto acls add --allow-principal User:alice --consumer --topic orders --group billing",
                                   "kproto acls remove --allow-principal User:alice --operation Write --topic orders",
                                   "kproto acls list --topic orders",
                                   "kproto acls list --principal User:alice --command-config admin.properties"])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = add_command(actions, "add", help="add ACLs",
                      examples=["kproto acls add --allow-principal User:alice --allow-host 10.0.0.1 --operation Read "
                                "--topic orders",
                                "kproto acls add --deny-principal User:bob --operation Write --topic audit",
                                "kproto acls add --allow-principal User:app --producer --topic orders --idempotent"])
    remove = add_command(actions, "remove", help="remove the ACLs that match",
                         examples=["kproto acls remove --topic orders",
                                   "kproto acls remove --deny-principal User:bob --operation Write --topic audit"])
    listing = add_command(actions, "list", help="list ACLs",
                          examples=["kproto acls list", "kproto acls list --topic orders-eu --resource-pattern-type MATCH",
                                    "kproto acls list --principal User:alice --json"])
    for action in (add, remove, listing):
        resources = action.add_argument_group("resources")
        resources.add_argument("--topic", action="append", default=[], metavar="TOPIC", help="a topic (repeatable)")
        resources.add_argument("--group", action="append", default=[], metavar="GROUP",
                               help="a consumer group (repeatable)")
        resources.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                               help="a transactional id (repeatable)")
        resources.add_argument("--cluster", action="store_true", help="the cluster")
        resources.add_argument("--resource-pattern-type", type=_pattern_type, default="LITERAL", metavar="TYPE",
                               help="LITERAL (default) or PREFIXED" + ("" if action is add else "; ANY or MATCH"))
        add_connection_options(action)
    for action in (add, remove):
        entries = action.add_argument_group("entries")
        entries.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                             help="Type:name to allow (repeatable): User:alice, User:*")
        entries.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                             help="Type:name to deny (repeatable)")
        entries.add_argument("--allow-host", action="append", default=[], metavar="IP",
                             help="an IP address the allowed principals may come from (default: *)")
        entries.add_argument("--deny-host", action="append", default=[], metavar="IP",
                             help="an IP address the denied principals are denied from (default: *)")
        entries.add_argument("--operation", action="append", default=[], type=_operation, metavar="OPERATION",
                             help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                                  "AlterConfigs, IdempotentWrite, All (repeatable" +
                                  ("; default All)" if action is add else ")"))
        entries.add_argument("--producer", action="store_true",
                             help="the operations a producer needs on the topics and transactional ids")
        entries.add_argument("--consumer", action="store_true",
                             help="the operations a consumer needs on the topics and groups")
        entries.add_argument("--idempotent", action="store_true",
                             help="with --producer: IDEMPOTENT_WRITE on the cluster too")
        entries.add_argument("--force", action="store_true", help="accepted for kafka-acls.sh; kproto never prompts")
    listing.add_argument("--principal", metavar="PRINCIPAL", help="only the ACLs of this principal")
    add_json_option(listing)
    add.set_defaults(run=_add)
    remove.set_defaults(run=_remove)
    listing.set_defaults(run=_list)


def _resources(args: argparse.Namespace) -> list[tuple[str, str]]:
    return ([("TOPIC", t) for t in args.topic] + [("GROUP", g) for g in args.group]
            + [("TRANSACTIONAL_ID", i) for i in args.transactional_id] + ([("CLUSTER", _CLUSTER)] if args.cluster else []))


def _operations(args: argparse.Namespace, resource_type: str, default: list[str]) -> list[str]:
    """The operations to apply to one resource: ``--operation``'s, or Kafka's
    ``--producer`` / ``--consumer`` sets (``AclCommand.getProducerResourceFilterToAcls``,
    ``getConsumerResourceFilterToAcls``)."""
    if not (args.producer or args.consumer):
        return args.operation or default
    ops: list[str] = []
    if args.producer:
        ops += {"TOPIC": ["WRITE", "DESCRIBE", "CREATE"], "TRANSACTIONAL_ID": ["WRITE", "DESCRIBE"],
                "CLUSTER": ["IDEMPOTENT_WRITE"] if args.idempotent else []}.get(resource_type, [])
    if args.consumer:
        ops += {"TOPIC": ["READ", "DESCRIBE"], "GROUP": ["READ"]}.get(resource_type, [])
    return list(dict.fromkeys(ops))


def _entries(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(principal, host, permission) of every principal given, each with its hosts."""
    return ([(p, h, "ALLOW") for p in args.allow_principal for h in args.allow_host or ["*"]]
            + [(p, h, "DENY") for p in args.deny_principal for h in args.deny_host or ["*"]])


def _check(args: argparse.Namespace, resources: list[tuple[str, str]]) -> None:
    if args.operation and (args.producer or args.consumer):
        raise UsageError("--operation cannot be given with --producer or --consumer")
    if args.idempotent and not args.producer:
        raise UsageError("--idempotent goes with --producer")
    if args.producer and args.idempotent and not args.cluster:
        resources.append(("CLUSTER", _CLUSTER))
    if args.producer and not (args.topic or args.transactional_id):
        raise UsageError("--producer needs --topic (or --transactional-id)")
    if args.consumer and not (args.topic and args.group):
        raise UsageError("--consumer needs --topic and --group")
    if not resources:
        raise UsageError("give a resource: --topic, --group, --transactional-id or --cluster")


def _add(args: argparse.Namespace) -> int:
    resources = _resources(args)
    _check(args, resources)
    if args.resource_pattern_type not in ("LITERAL", "PREFIXED"):
        raise UsageError(f"an ACL's --resource-pattern-type is LITERAL or PREFIXED, not {args.resource_pattern_type}")
    entries = _entries(args)
    if not entries:
        raise UsageError("give --allow-principal or --deny-principal")
    bindings = [AclBinding(ResourcePattern(rtype, name, args.resource_pattern_type),
                           AccessControlEntry(principal, host, op, permission))
                for rtype, name in resources for op in _operations(args, rtype, ["ALL"])
                for principal, host, permission in entries]
    with admin_client(args) as admin:
        admin.create_acls(bindings)
    emit([_row(b) for b in bindings], _COLUMNS, False)
    return 0


def _remove(args: argparse.Namespace) -> int:
    resources = _resources(args)
    _check(args, resources)
    entries = _entries(args)
    filters = []
    for rtype, name in resources:
        pattern = ResourcePatternFilter(rtype, name, args.resource_pattern_type)
        ops: list[str | None] = list(_operations(args, rtype, [])) or [None]
        if not entries and ops == [None]:  # every ACL of the resource (AclCommand: AccessControlEntryFilter.ANY)
            filters.append(AclBindingFilter(pattern))
            continue
        anyone: list[tuple[str | None, str | None, str]] = [(None, None, "ANY")]
        for principal, host, permission in entries or anyone:
            for op in ops:
                filters.append(AclBindingFilter(pattern, AccessControlEntryFilter(principal, host, op or "ANY",
                                                                                  permission)))
    with admin_client(args) as admin:
        removed = admin.delete_acls(filters)
    gone = list(dict.fromkeys(b for bindings in removed.values() for b in bindings))
    emit([_row(b) for b in gone], _COLUMNS, False)
    if not gone:
        print("No ACL matched.", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    resources = _resources(args)
    filters = [AclBindingFilter(ResourcePatternFilter(rtype, name, args.resource_pattern_type),
                                AccessControlEntryFilter(principal=args.principal))
               for rtype, name in resources] or [AclBindingFilter(entry_filter=AccessControlEntryFilter(
                                                     principal=args.principal))]
    with admin_client(args) as admin:
        found = list(dict.fromkeys(b for f in filters for b in admin.describe_acls(f)))
    emit([_row(b) for b in found], _COLUMNS, args.json)
    return 0


def _row(binding: AclBinding) -> dict[str, Any]:
    p, e = binding.pattern, binding.entry
    return {"resource_type": _name(p.resource_type), "name": p.name, "pattern_type": _name(p.pattern_type),
            "principal": e.principal, "host": e.host, "operation": _name(e.operation),
            "permission_type": _name(e.permission_type)}


def _name(value: Any) -> str:
    return getattr(value, "name", str(value))  # the admin types' enums, by name
