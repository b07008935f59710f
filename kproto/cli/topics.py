"""``kproto topics``: create, list, describe, alter and delete topics (``kafka-topics.sh``,
with ``kafka-configs.sh``'s topic part in ``alter``).

Every action is one or two :class:`~kproto.AdminClient` calls. Actions on several topics
report each topic: the admin client raises the first failure with every topic's outcome
in ``.results``, and :func:`~kproto.cli.main.main` prints one line per failed topic.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from kproto import TopicPartition
from kproto.admin import ConfigResource, NewTopic
from kproto.cli.options import (
    UsageError,
    add_command,
    add_connection_options,
    admin_client,
    key_value,
)
from kproto.cli.output import add_json_option
from kproto.errors import KafkaError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

__all__ = ["register"]

_DYNAMIC_TOPIC_CONFIG = 1  # Kafka's ConfigSource: set on the topic itself


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "topics", help="create, list, describe, alter and delete topics",
                         examples=["kproto topics create orders --partitions 3 --config retention.ms=86400000",
                                   "kproto topics list",
                                   "kproto topics describe orders",
                                   "kproto topics alter orders --partitions 6 --delete-config retention.ms",
                                   "kproto topics delete orders"])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    create = add_command(actions, "create", help="create topics",
                         examples=["kproto topics create orders --partitions 3 --replication-factor 1",
                                   "kproto topics create logs --config cleanup.policy=compact --if-not-exists"])
    create.add_argument("topics", nargs="+", metavar="TOPIC")
    create.add_argument("--partitions", type=int, default=-1, help="partition count (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", type=int, default=-1,
                        help="replicas per partition (default: the broker's default.replication.factor)")
    create.add_argument("--config", metavar="KEY=VALUE", type=key_value, action="append", default=[],
                        help="a topic config (repeatable)")
    create.add_argument("--if-not-exists", action="store_true", help="a topic that exists already is not an error")
    create.add_argument("--validate-only", action="store_true", help="ask the broker to check, without creating")
    create.set_defaults(run=_create)

    listing = add_command(actions, "list", help="list topic names", examples=["kproto topics list --include-internal"])
    listing.add_argument("--include-internal", action="store_true", help="also list internal topics (__consumer_offsets)")
    listing.set_defaults(run=_list)

    describe = add_command(actions, "describe", help="partitions (leader, replicas, ISR, offsets) and configs of topics",
                           examples=["kproto topics describe", "kproto topics describe orders --json | jq .partitions"])
    describe.add_argument("topics", nargs="*", metavar="TOPIC", help="topics to describe (default: every topic)")
    add_json_option(describe)
    describe.set_defaults(run=_describe)

    alter = add_command(actions, "alter", help="add partitions to a topic, set or delete its configs",
                        examples=["kproto topics alter orders --partitions 6",
                                  "kproto topics alter orders --config retention.ms=3600000 --delete-config cleanup.policy"])
    alter.add_argument("topic", metavar="TOPIC")
    alter.add_argument("--partitions", type=int, help="the new, larger partition count")
    alter.add_argument("--config", metavar="KEY=VALUE", type=key_value, action="append", default=[],
                       help="set a topic config (repeatable)")
    alter.add_argument("--delete-config", metavar="KEY", action="append", default=[],
                       help="return a topic config to its default (repeatable)")
    alter.set_defaults(run=_alter)

    delete = add_command(actions, "delete", help="delete topics", examples=["kproto topics delete orders logs"])
    delete.add_argument("topics", nargs="+", metavar="TOPIC")
    delete.add_argument("--if-exists", action="store_true", help="a topic that does not exist is not an error")
    delete.set_defaults(run=_delete)

    for action in (create, listing, describe, alter, delete):
        add_connection_options(action)


def _settle(call: Callable[[], dict[str, Any]], tolerated: tuple[type[KafkaError], ...]) -> list[str]:
    """Run an admin call on several topics; return the topics it acted on, tolerating
    ``tolerated`` failures (re-raising any other one, with every outcome attached)."""
    try:
        results = call()
    except KafkaError as exc:
        results = getattr(exc, "results", None)
        if results is None:
            raise
        failures = {name: r for name, r in results.items() if isinstance(r, BaseException)}
        if any(not isinstance(r, tolerated) for r in failures.values()):
            raise
        return [name for name in results if name not in failures]
    return list(results)


def _create(args: argparse.Namespace) -> int:
    new = [NewTopic(name, args.partitions, args.replication_factor, dict(args.config)) for name in args.topics]
    tolerated = (TopicAlreadyExistsError,) if args.if_not_exists else ()
    with admin_client(args) as admin:
        done = _settle(lambda: admin.create_topics(new, validate_only=args.validate_only), tolerated)
    verb = "Validated" if args.validate_only else "Created"
    for name in done:
        print(f"{verb} topic {name}.")
    return 0


def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        names = admin.list_topics(include_internal=args.include_internal)
    sys.stdout.write("".join(f"{name}\n" for name in names))
    return 0


def _describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        names = args.topics or admin.list_topics(include_internal=True)
        descriptions = admin.describe_topics(names) if names else {}
        # Only a leader knows a partition's offsets: a partition without one shows none.
        partitions = [TopicPartition(name, p.partition) for name, d in descriptions.items() for p in d.partitions
                      if p.leader >= 0]
        starts = admin.list_offsets(dict.fromkeys(partitions, "earliest")) if partitions else {}
        ends = admin.list_offsets(dict.fromkeys(partitions, "latest")) if partitions else {}
        configs = admin.describe_configs([ConfigResource.topic(name) for name in names]) if names else {}

    def offset(found: dict[TopicPartition, Any], tp: TopicPartition) -> int | None:
        return found[tp].offset if tp in found else None

    for name, d in descriptions.items():
        rows = [{"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
                 "replicas": list(p.replicas), "isr": list(p.isr), "offline_replicas": list(p.offline_replicas),
                 "log_start_offset": offset(starts, TopicPartition(name, p.partition)),
                 "log_end_offset": offset(ends, TopicPartition(name, p.partition))} for p in d.partitions]
        own = {k: e.value for k, e in configs[ConfigResource.topic(name)].items() if e.source == _DYNAMIC_TOPIC_CONFIG}
        replication = len(d.partitions[0].replicas) if d.partitions else 0
        if args.json:
            print(json.dumps({"topic": name, "topic_id": str(d.topic_id) if d.topic_id else None,
                              "is_internal": d.is_internal, "replication_factor": replication,
                              "configs": own, "partitions": rows}), flush=True)
            continue
        print(_kafka_topics_layout(name, d.topic_id, replication, own, rows), flush=True)
    return 0


def _kafka_topics_layout(name: str, topic_id: Any, replication: int, configs: dict[str, str],
                         rows: list[dict[str, Any]]) -> str:
    """A topic as ``kafka-topics.sh --describe`` prints it (Java's ``TopicCommand``): a topic
    line, then one tab-separated line per partition; a partition without a leader shows
    ``Leader: none``, offline replicas get an ``Offline:`` field, and the log's offsets
    come last (kproto's own fields, after Kafka's; ``-`` without a leader to ask)."""
    def ids(nodes: list[int]) -> str:
        return ",".join(map(str, nodes))

    settings = ",".join(f"{k}={v}" for k, v in sorted(configs.items()))
    lines = [f"Topic: {name}\tTopicId: {topic_id or ''}\tPartitionCount: {len(rows)}\t"
             f"ReplicationFactor: {replication}\tConfigs: {settings}"]
    for r in rows:
        leader = r["leader"] if r["leader"] >= 0 else "none"
        offline = f"\tOffline: {ids(r['offline_replicas'])}" if r["offline_replicas"] else ""
        start, end = ("-" if o is None else o for o in (r["log_start_offset"], r["log_end_offset"]))
        lines.append(f"\tTopic: {name}\tPartition: {r['partition']}\tLeader: {leader}\tReplicas: {ids(r['replicas'])}"
                     f"\tIsr: {ids(r['isr'])}{offline}\tLogStartOffset: {start}\tLogEndOffset: {end}")
    return "\n".join(lines)


def _alter(args: argparse.Namespace) -> int:
    if args.partitions is None and not args.config and not args.delete_config:
        raise UsageError("nothing to alter: give --partitions, --config or --delete-config")
    resource = ConfigResource.topic(args.topic)
    with admin_client(args) as admin:
        if args.partitions is not None:
            admin.create_partitions({args.topic: args.partitions})
            print(f"Topic {args.topic} now has {args.partitions} partitions.")
        changes = [(k, "set", v) for k, v in args.config] + [(k, "delete", None) for k in args.delete_config]
        if changes:
            admin.incremental_alter_configs({resource: changes})
            for name, op, value in changes:
                print(f"Set {name}={value} on topic {args.topic}." if op == "set"
                      else f"Returned {name} to its default on topic {args.topic}.")
    return 0


def _delete(args: argparse.Namespace) -> int:
    tolerated = (UnknownTopicOrPartitionError,) if args.if_exists else ()
    with admin_client(args) as admin:
        done = _settle(lambda: admin.delete_topics(args.topics), tolerated)
    for name in done:
        print(f"Deleted topic {name}.")
    return 0
