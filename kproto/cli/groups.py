"""``kproto groups``: list, describe, delete consumer groups and reset their offsets
(``kafka-consumer-groups.sh``).

``describe`` shows, per partition a group has a committed offset for or a member holds:
the committed offset, the log end offset, the lag between them, and the member holding
it (decoded from the member's assignment, Kafka's consumer protocol). ``--members`` and
``--state`` show the members and the group instead.

``reset-offsets`` plans new committed offsets and prints the plan; only with
``--execute`` does it commit them (a dry run is the default, as in Kafka). The group must
have no active members, as the broker requires. Targets past a partition's ends are
clamped to its earliest or latest offset, as Kafka's tool does.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Iterable, Mapping

from kproto import AdminClient, TopicPartition
from kproto.admin import GroupDescription
from kproto.cli.options import UsageError, add_command, add_connection_options, admin_client
from kproto.cli.output import add_json_option, emit
from kproto.cli.progress import Progress, progress
from kproto.consumer.protocol import PROTOCOL_TYPE, decode_assignment
from kproto.errors import GroupIdNotFoundError, NonEmptyGroupError

__all__ = ["register"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_INACTIVE = ("Empty", "Dead")  # the states in which a group's offsets may be reset
_OFFSET_COLUMNS = ("group", "topic", "partition", "current_offset", "log_end_offset", "lag",
                   "consumer_id", "host", "client_id")
_MEMBER_COLUMNS = ("group", "consumer_id", "group_instance_id", "host", "client_id", "partitions", "assignment")
_STATE_COLUMNS = ("group", "coordinator", "assignment_strategy", "state", "members")
_RESET_COLUMNS = ("group", "topic", "partition", "current_offset", "new_offset")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "groups", help="list, describe and delete consumer groups, reset their offsets",
                         examples=["kproto groups list",
                                   "kproto groups describe billing",
                                   "kproto groups reset-offsets billing --topic orders --to-earliest --execute",
                                   "kproto groups delete billing"])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = add_command(actions, "list", help="list groups", examples=["kproto groups list --state Empty"])
    listing.add_argument("--state", action="append", metavar="STATE",
                         help="only groups in this state: Stable, Empty, PreparingRebalance... (repeatable)")
    add_json_option(listing)
    listing.set_defaults(run=_list)

    describe = add_command(actions, "describe", help="offsets and lag per partition, or members, or state",
                           examples=["kproto groups describe billing", "kproto groups describe billing --members",
                                     "kproto groups describe billing shipping --state --json"])
    describe.add_argument("groups", nargs="+", metavar="GROUP")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="show the members and their assignments")
    view.add_argument("--state", action="store_true", help="show each group's state, coordinator and strategy")
    add_json_option(describe)
    describe.set_defaults(run=_describe)

    delete = add_command(actions, "delete", help="delete groups without members, with their committed offsets",
                         examples=["kproto groups delete billing shipping"])
    delete.add_argument("groups", nargs="+", metavar="GROUP")
    delete.set_defaults(run=_delete)

    reset = add_command(
        actions, "reset-offsets", help="plan (and with --execute, commit) new offsets for a group",
        description="Plan new committed offsets for a group without active members; print the plan, and with "
                    "--execute commit it.",
        examples=["kproto groups reset-offsets billing --all-topics --to-earliest",
                  "kproto groups reset-offsets billing --topic orders:0,1 --shift-by -100 --execute",
                  "kproto groups reset-offsets billing --topic orders --to-datetime 2024-05-01T00:00:00Z --execute"])
    reset.add_argument("group", metavar="GROUP")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", type=_topic_partitions, metavar="TOPIC[:P,P...]",
                       help="a topic, or some of its partitions (repeatable)")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has an offset for")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="the first offset of each partition")
    target.add_argument("--to-latest", action="store_true", help="the end of each partition")
    target.add_argument("--to-offset", type=int, metavar="OFFSET", help="this offset")
    target.add_argument("--to-datetime", type=_timestamp_ms, metavar="WHEN",
                        help="the first offset at or after WHEN: ISO 8601 (local time unless it names a zone) "
                             "or milliseconds since the epoch")
    target.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (N may be negative)")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the plan")
    add_json_option(reset)
    reset.set_defaults(run=_reset)

    for action in (listing, describe, delete, reset):
        add_connection_options(action)


# -- argument types ------------------------------------------------------------------------

def _topic_partitions(text: str) -> tuple[str, list[int] | None]:
    """``TOPIC`` (every partition) or ``TOPIC:P,P...``."""
    topic, sep, partitions = text.rpartition(":") if ":" in text else (text, "", "")
    if not topic:
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:P,P..., not {text!r}")
    if not sep:
        return topic, None
    try:
        return topic, [int(p) for p in partitions.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"partitions are numbers separated by commas, not {partitions!r}") from None


def _timestamp_ms(text: str) -> int:
    if text.isdigit():
        return int(text)
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 date-time or milliseconds, not {text!r}") from None
    # astimezone takes a naive date-time as local time, as Kafka's tool does; timedelta
    # arithmetic is exact where float seconds would turn .007 into 6 ms.
    return (when.astimezone(datetime.UTC) - _EPOCH) // datetime.timedelta(milliseconds=1)


# -- list, describe, delete ----------------------------------------------------------------

def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        listings = admin.list_groups(states=args.state)
    rows = [{"group": g.group_id, "state": g.state, "protocol_type": g.protocol_type} for g in listings]
    emit(rows, ("group", "state", "protocol_type"), args.json)
    return 0


def _existing(admin: AdminClient, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
    """Descriptions of groups, refusing groups the coordinator does not know.

    A coordinator describes an unknown group as ``Dead`` without an error (as Kafka's
    does); a Dead group without committed offsets is as good as absent.
    """
    descriptions = admin.describe_groups(group_ids)
    for group_id, d in descriptions.items():
        if d.state == "Dead" and not admin.list_group_offsets(group_id):
            raise GroupIdNotFoundError(f"group {group_id!r} does not exist")
    return descriptions


def _holders(description: GroupDescription) -> dict[TopicPartition, Mapping[str, str]]:
    """Which member holds each partition, from the members' consumer-protocol assignments."""
    holders: dict[TopicPartition, Mapping[str, str]] = {}
    if description.protocol_type != PROTOCOL_TYPE:
        return holders  # another protocol's assignments are opaque (Connect, Streams...)
    for m in description.members:
        who = {"consumer_id": m.member_id, "host": m.client_host, "client_id": m.client_id}
        for tp in decode_assignment(m.assignment).partitions:
            holders[tp] = who
    return holders


def _offset_rows(admin: AdminClient, group_id: str, description: GroupDescription) -> list[dict]:
    committed = {tp: o.offset for tp, o in admin.list_group_offsets(group_id).items() if o.offset >= 0}
    holders = _holders(description)
    partitions = sorted(set(committed) | set(holders))
    ends = admin.list_offsets(dict.fromkeys(partitions, "latest")) if partitions else {}
    rows = []
    for tp in partitions:
        current, end = committed.get(tp), ends[tp].offset
        rows.append({"group": group_id, "topic": tp.topic, "partition": tp.partition, "current_offset": current,
                     "log_end_offset": end, "lag": None if current is None else max(end - current, 0),
                     **holders.get(tp, {"consumer_id": None, "host": None, "client_id": None})})
    return rows


def _member_rows(group_id: str, description: GroupDescription) -> list[dict]:
    rows = []
    consumer = description.protocol_type == PROTOCOL_TYPE
    for m in description.members:
        partitions = decode_assignment(m.assignment).partitions if consumer else ()
        rows.append({"group": group_id, "consumer_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "host": m.client_host, "client_id": m.client_id, "partitions": len(partitions),
                     "assignment": [f"{tp.topic}:{tp.partition}" for tp in partitions]})
    return rows


def _describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        descriptions = _existing(admin, args.groups)
        for group_id, d in descriptions.items():
            if args.state:
                rows = [{"group": group_id, "coordinator": d.coordinator, "assignment_strategy": d.protocol,
                         "state": d.state, "members": len(d.members)}]
                emit(rows, _STATE_COLUMNS, args.json)
                continue
            if not d.members and not args.json:
                print(f"Consumer group '{group_id}' has no active members.")
            if args.members:
                emit(_member_rows(group_id, d), _MEMBER_COLUMNS, args.json)
            else:
                emit(_offset_rows(admin, group_id, d), _OFFSET_COLUMNS, args.json)
            if not args.json:
                print()
    return 0


def _delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        admin.delete_groups(args.groups)
    for group_id in args.groups:
        print(f"Deleted group {group_id}.")
    return 0


# -- reset-offsets -------------------------------------------------------------------------

def _scope(admin: AdminClient, args: argparse.Namespace, committed: Mapping[TopicPartition, int],
           bar: Progress) -> list[TopicPartition]:
    """The partitions ``--topic`` or ``--all-topics`` names."""
    if args.all_topics:
        return sorted(committed)
    whole = [topic for topic, partitions in args.topic if partitions is None]
    counts = {}
    if whole:
        counts = {name: len(d.partitions) for name, d in admin.describe_topics(whole).items()}
        bar.update(1)
    return sorted({TopicPartition(topic, p) for topic, partitions in args.topic
                   for p in (range(counts[topic]) if partitions is None else partitions)})


def _targets(admin: AdminClient, args: argparse.Namespace, partitions: list[TopicPartition],
             committed: Mapping[TopicPartition, int], bar: Progress) -> dict[TopicPartition, int]:
    """The new offset of each partition, clamped to the partition's earliest and latest."""
    earliest = admin.list_offsets(dict.fromkeys(partitions, "earliest"))
    bar.update(1)
    latest = admin.list_offsets(dict.fromkeys(partitions, "latest"))
    bar.update(1)
    if args.to_datetime is not None:
        found = admin.list_offsets(dict.fromkeys(partitions, args.to_datetime))
        bar.update(1)
        wanted = {tp: found[tp].offset if found[tp].offset >= 0 else latest[tp].offset for tp in partitions}
    elif args.shift_by is not None:
        missing = [f"{tp.topic}:{tp.partition}" for tp in partitions if tp not in committed]
        if missing:
            raise ValueError(f"group {args.group!r} has no committed offset to shift on {', '.join(missing)}")
        wanted = {tp: committed[tp] + args.shift_by for tp in partitions}
    elif args.to_offset is not None:
        wanted = dict.fromkeys(partitions, args.to_offset)
    else:
        wanted = {tp: (earliest if args.to_earliest else latest)[tp].offset for tp in partitions}
    return {tp: min(max(offset, earliest[tp].offset), latest[tp].offset) for tp, offset in wanted.items()}


def _reset(args: argparse.Namespace) -> int:
    # One step per admin request, each over every partition at once (see _steps).
    bar = progress(_steps(args), "requests", "reset-offsets")
    try:
        plan, committed = _plan(args, bar)
    finally:
        bar.close()
    rows = [{"group": args.group, "topic": tp.topic, "partition": tp.partition,
             "current_offset": committed.get(tp), "new_offset": offset} for tp, offset in plan.items()]
    emit(rows, _RESET_COLUMNS, args.json)
    if not args.execute:
        print("Dry run: nothing was committed; add --execute to commit these offsets.", file=sys.stderr)
    return 0


def _steps(args: argparse.Namespace) -> int:
    """The admin requests reset-offsets makes: describe the group, list its offsets, the
    topics' partition counts (for whole topics), the earliest and latest offsets, the
    offsets by time, and the commit."""
    whole_topics = not args.all_topics and any(partitions is None for _, partitions in args.topic)
    return 4 + whole_topics + (args.to_datetime is not None) + bool(args.execute)


def _plan(args: argparse.Namespace, bar: Progress) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """The new offsets (committed with --execute) and the committed ones they replace."""
    with admin_client(args) as admin:
        description = admin.describe_groups([args.group])[args.group]
        bar.update(1)
        if description.state not in _INACTIVE:
            raise NonEmptyGroupError(f"offsets of group {args.group!r} can only be reset while it has no active "
                                     f"members; it is {description.state} with {len(description.members)} member(s)")
        committed = {tp: o.offset for tp, o in admin.list_group_offsets(args.group).items() if o.offset >= 0}
        bar.update(1)
        partitions = _scope(admin, args, committed, bar)
        if not partitions:
            raise UsageError(f"group {args.group!r} has no committed offsets: name the partitions with --topic")
        plan = _targets(admin, args, partitions, committed, bar)
        if args.execute:
            admin.alter_group_offsets(args.group, plan)
            bar.update(1)
    return plan, committed
