"""``kproto transactions``: list and describe transactions, describe a partition's
producers, find and abort hanging transactions (``kafka-transactions.sh``, KIP-664).

The actions and their columns are Kafka's tool's (``TransactionsCommand``), headed in
kproto's table style (``TRANSACTIONAL-ID`` for ``TransactionalId``); ``--json`` prints
one object per row. A value Kafka prints as ``None`` is ``-`` in a table, null in JSON.

``find-hanging`` looks, on the partitions of ``--topic`` (or of every topic with a
replica on ``--broker-id``), for open transactions whose producer wrote nothing for
longer than ``--max-transaction-timeout`` minutes (default 15, Kafka's
``transaction.max.timeout.ms``) and that no transaction coordinator still holds: no
transactional id has their producer id, or the id's transaction does not count the
partition. Such a transaction never ends by itself; ``abort`` ends it, named by its
first offset (``--start-offset``) or by what ``describe-producers`` shows
(``--producer-id``, ``--producer-epoch``, ``--coordinator-epoch``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TypeVar

from kproto import AdminClient, TopicPartition
from kproto.admin import ProducerState
from kproto.cli.options import UsageError, add_command, add_connection_options, admin_client
from kproto.cli.output import add_json_option, emit
from kproto.errors import KafkaError, TransactionalIdNotFoundError

__all__ = ["register"]

_LIST_COLUMNS = ("transactional_id", "coordinator", "producer_id", "transaction_state")
_DESCRIBE_COLUMNS = ("coordinator_id", "transactional_id", "producer_id", "producer_epoch", "transaction_state",
                     "transaction_timeout_ms", "current_transaction_start_time_ms", "transaction_duration_ms",
                     "topic_partitions")
_PRODUCER_COLUMNS = ("producer_id", "producer_epoch", "latest_coordinator_epoch", "last_sequence", "last_timestamp",
                     "current_transaction_start_offset")
_HANGING_COLUMNS = ("topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch", "start_offset",
                    "last_timestamp", "duration_min")
_MINUTE_MS = 60_000
T = TypeVar("T")
_BATCH = 500  # topics or partitions per admin call in find-hanging, as Kafka's tool (MAX_BATCH_SIZE)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "transactions", help="list and describe transactions, find and abort hanging ones",
                         examples=["kproto transactions list",
                                   "kproto transactions describe --transactional-id billing-1",
                                   "kproto transactions describe-producers --topic orders --partition 0",
                                   "kproto transactions find-hanging --topic orders",
                                   "kproto transactions abort --topic orders --partition 0 --start-offset 42"])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = add_command(actions, "list", help="list the transactional ids of every coordinator",
                          examples=["kproto transactions list", "kproto transactions list --duration-filter 600000"])
    listing.add_argument("--duration-filter", type=int, metavar="MS",
                         help="only transactions running for longer than MS milliseconds (Kafka 3.8+ brokers)")
    add_json_option(listing)
    listing.set_defaults(run=_list)

    describe = add_command(actions, "describe", help="describe the state of a transactional id",
                           examples=["kproto transactions describe --transactional-id billing-1"])
    describe.add_argument("--transactional-id", required=True, metavar="ID")
    add_json_option(describe)
    describe.set_defaults(run=_describe)

    producers = add_command(actions, "describe-producers", help="the active producers of a partition",
                            examples=["kproto transactions describe-producers --topic orders --partition 0",
                                      "kproto transactions describe-producers --topic orders --partition 0 "
                                      "--broker-id 2"])
    _partition_options(producers)
    producers.add_argument("--broker-id", type=int, metavar="ID",
                           help="ask this replica instead of the partition's leader")
    add_json_option(producers)
    producers.set_defaults(run=_describe_producers)

    abort = add_command(
        actions, "abort", help="abort a hanging transaction (writes an ABORT marker to the partition)",
        description="Abort a hanging transaction on one partition, named by its first offset (--start-offset) or "
                    "by its producer (--producer-id, --producer-epoch and --coordinator-epoch, as "
                    "describe-producers shows them).",
        examples=["kproto transactions abort --topic orders --partition 0 --start-offset 42",
                  "kproto transactions abort --topic orders --partition 0 --producer-id 7 --producer-epoch 0 "
                  "--coordinator-epoch -1"])
    _partition_options(abort)
    abort.add_argument("--start-offset", type=int, metavar="OFFSET", help="the first offset of the transaction")
    abort.add_argument("--producer-id", type=int, metavar="ID")
    abort.add_argument("--producer-epoch", type=int, metavar="EPOCH")
    abort.add_argument("--coordinator-epoch", type=int, metavar="EPOCH",
                       help="the coordinator epoch of the producer's last marker (-1: none)")
    abort.set_defaults(run=_abort)

    hanging = add_command(
        actions, "find-hanging", help="find open transactions that no coordinator will end",
        examples=["kproto transactions find-hanging --topic orders",
                  "kproto transactions find-hanging --broker-id 0 --max-transaction-timeout 5"])
    hanging.add_argument("--broker-id", type=int, metavar="ID", help="search the partitions with a replica here")
    hanging.add_argument("--max-transaction-timeout", type=int, default=15, metavar="MINUTES",
                         help="only transactions whose producer wrote nothing for longer (default: 15)")
    hanging.add_argument("--topic", help="search this topic's partitions")
    hanging.add_argument("--partition", type=int, help="only this partition of --topic")
    add_json_option(hanging)
    hanging.set_defaults(run=_find_hanging)

    for action in (listing, describe, producers, abort, hanging):
        add_connection_options(action)


def _partition_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", type=int, required=True)


# -- list, describe, describe-producers ------------------------------------------------------

def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        listings = admin.list_transactions(duration_filter_ms=args.duration_filter)
    rows = [{"transactional_id": t.transactional_id, "coordinator": t.coordinator_id, "producer_id": t.producer_id,
             "transaction_state": t.state} for t in listings]
    emit(rows, _LIST_COLUMNS, args.json)
    return 0


def _describe(args: argparse.Namespace) -> int:
    tid = args.transactional_id
    with admin_client(args) as admin:
        d = admin.describe_transactions([tid])[tid]
    started = d.transaction_start_time_ms
    rows = [{"coordinator_id": d.coordinator_id, "transactional_id": tid, "producer_id": d.producer_id,
             "producer_epoch": d.producer_epoch, "transaction_state": d.state,
             "transaction_timeout_ms": d.transaction_timeout_ms, "current_transaction_start_time_ms": started,
             "transaction_duration_ms": None if started is None else _now_ms() - started,
             "topic_partitions": [f"{tp.topic}-{tp.partition}" for tp in sorted(d.topic_partitions)]}]
    emit(rows, _DESCRIBE_COLUMNS, args.json)
    return 0


def _producers(admin: AdminClient, tp: TopicPartition, broker_id: int | None = None) -> list[ProducerState]:
    return admin.describe_producers([tp], broker_id=broker_id)[tp]


def _describe_producers(args: argparse.Namespace) -> int:
    tp = TopicPartition(args.topic, args.partition)
    with admin_client(args) as admin:
        states = _producers(admin, tp, args.broker_id)
    rows = [{"producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
             "latest_coordinator_epoch": -1 if s.coordinator_epoch is None else s.coordinator_epoch,
             "last_sequence": s.last_sequence, "last_timestamp": s.last_timestamp,
             "current_transaction_start_offset": s.current_transaction_start_offset} for s in states]
    emit(rows, _PRODUCER_COLUMNS, args.json)
    return 0


# -- abort -----------------------------------------------------------------------------------

def _abort(args: argparse.Namespace) -> int:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise UsageError("name the transaction to abort with --start-offset, or with --producer-id, "
                         "--producer-epoch and --coordinator-epoch")
    if args.start_offset is not None and args.producer_id is not None:
        raise UsageError("--start-offset and --producer-id name the transaction two ways: give one")
    with admin_client(args) as admin:
        if args.start_offset is None:
            missing = [flag for flag, value in (("--producer-epoch", args.producer_epoch),
                                                ("--coordinator-epoch", args.coordinator_epoch)) if value is None]
            if missing:
                raise UsageError(f"--producer-id needs {' and '.join(missing)} too")
            producer_id, producer_epoch = args.producer_id, args.producer_epoch
            coordinator_epoch = args.coordinator_epoch
        else:
            found = [s for s in _producers(admin, tp) if s.current_transaction_start_offset == args.start_offset]
            if not found:
                raise ValueError(f"no open transaction starts at offset {args.start_offset} of "
                                 f"{tp.topic}-{tp.partition}")
            producer_id, producer_epoch = found[0].producer_id, found[0].producer_epoch
            coordinator_epoch = -1 if found[0].coordinator_epoch is None else found[0].coordinator_epoch
        # A producer that hangs before its first marker has no coordinator epoch (-1):
        # Kafka's tool sends 0 then, which no coordinator epoch is below.
        admin.abort_transaction(tp.topic, tp.partition, producer_id, producer_epoch, max(coordinator_epoch, 0))
    print(f"Aborted the transaction of producer {producer_id} (epoch {producer_epoch}) on {tp.topic}-{tp.partition}.")
    return 0


# -- find-hanging ----------------------------------------------------------------------------

def _find_hanging(args: argparse.Namespace) -> int:
    if args.topic is None and args.broker_id is None:
        raise UsageError("find-hanging needs --topic or --broker-id to limit the search")
    if args.partition is not None and args.topic is None:
        raise UsageError("--partition needs --topic")
    with admin_client(args) as admin:
        partitions = _search_scope(admin, args)
        now = _now_ms()
        max_ms = args.max_transaction_timeout * _MINUTE_MS
        states = {}
        for batch in _batches(partitions):  # no giant request to one broker
            states.update(admin.describe_producers(batch, broker_id=args.broker_id))
        candidates = [(tp, s) for tp, found in states.items() for s in found
                      if s.current_transaction_start_offset is not None and now - s.last_timestamp > max_ms]
        hanging = _unclaimed(admin, candidates)
    rows = [{"topic": tp.topic, "partition": tp.partition, "producer_id": s.producer_id,
             "producer_epoch": s.producer_epoch, "coordinator_epoch": -1 if s.coordinator_epoch is None
             else s.coordinator_epoch, "start_offset": s.current_transaction_start_offset,
             "last_timestamp": s.last_timestamp, "duration_min": (now - s.last_timestamp) // _MINUTE_MS}
            for tp, s in hanging]
    emit(rows, _HANGING_COLUMNS, args.json)
    return 0


def _search_scope(admin: AdminClient, args: argparse.Namespace) -> list[TopicPartition]:
    """The partitions to search: the one asked, the topic's, or every topic's with a
    replica on ``--broker-id``."""
    if args.topic is not None and args.partition is not None:
        return [TopicPartition(args.topic, args.partition)]
    topics = [args.topic] if args.topic is not None else admin.list_topics()
    return [TopicPartition(name, p.partition) for batch in _batches(topics)
            for name, d in admin.describe_topics(batch).items()
            for p in d.partitions if args.broker_id is None or args.broker_id in p.replicas]


def _unclaimed(admin: AdminClient, candidates: Sequence[tuple[TopicPartition, ProducerState]]
               ) -> list[tuple[TopicPartition, ProducerState]]:
    """The open transactions no coordinator holds: their producer id has no transactional
    id, or the id's transaction does not count the partition (Kafka's tool's rule)."""
    if not candidates:
        return []
    pids = {s.producer_id for _, s in candidates}
    ids = {t.producer_id: t.transactional_id for t in admin.list_transactions(producer_ids=pids)}
    descriptions = {}
    if ids:
        try:
            descriptions = admin.describe_transactions(ids.values())
        except KafkaError as exc:  # an id that expired since it was listed claims nothing; other errors stand
            results = getattr(exc, "results", None)
            if results is None or any(isinstance(d, BaseException) and not isinstance(d, TransactionalIdNotFoundError)
                                      for d in results.values()):
                raise
            descriptions = {i: d for i, d in results.items() if not isinstance(d, BaseException)}
    hanging = []
    for tp, s in candidates:
        d = descriptions.get(ids.get(s.producer_id, ""))
        if d is None or tp not in d.topic_partitions:
            hanging.append((tp, s))
    return sorted(hanging, key=lambda c: (c[0], c[1].producer_id))


def _batches(items: Sequence[T]) -> list[Sequence[T]]:
    return [items[i:i + _BATCH] for i in range(0, len(items), _BATCH)]


def _now_ms() -> int:
    return int(time.time() * 1000)
