"""``kproto consume TOPIC``: print records as they arrive (the console consumer).

Where it starts:

- ``--group G``: as a member of group G (subscribe), from G's committed offsets, else
  from the end (``--from-beginning``: the start); what it prints is committed on exit;
- ``--partition P``: partition P only, at ``--offset`` (a number, ``earliest`` or
  ``latest``; default: the end, or the start with ``--from-beginning``);
- otherwise: every partition the topic has now, from the end (or the start).

Formats: ``value`` (default), ``key-value`` (key, ``--separator``, value) and ``jsonl``
(one JSON object per record with every field: topic, partition, offset, timestamp,
timestamp_type, key, value, headers, leader_epoch; text that is not UTF-8 is given as
``{"base64": ...}``). Keys and values are written as the bytes they are; null is
written ``null``, as Kafka's console consumer does.

Output is pipe-friendly: it is flushed after each polled batch (records of one batch
arrive together, so nothing waits behind another), and a reader that goes away
(``| head``) ends the command quietly, as Ctrl-C does. It stops after
``--max-messages``, or once nothing arrived for ``--timeout-ms``; the count goes to
stderr. With its output in a file or a pipe and stderr on a terminal, a live line there
counts the records (of ``--max-messages``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

from kproto import Consumer, ConsumerRecord, TopicPartition
from kproto.cli.options import (
    UsageError,
    add_command,
    add_connection_options,
    admin_client,
    consumer_client,
    positive_int,
)
from kproto.cli.output import TIMESTAMP_TYPES, json_bytes
from kproto.cli.progress import progress

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "consume", help="print records of a topic as they arrive",
                         examples=["kproto consume orders --from-beginning",
                                   "kproto consume orders --group billing --format key-value --separator ' => '",
                                   "kproto consume orders --partition 2 --offset 1000 --max-messages 10 --format jsonl",
                                   "kproto consume orders --from-beginning --timeout-ms 2000 | wc -l"])
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the first record (with --group: only where the group has no committed offset)")
    parser.add_argument("--group", metavar="GROUP", help="consume as a member of this group, committing on exit")
    parser.add_argument("--partition", type=int, help="consume only this partition")
    parser.add_argument("--offset", metavar="OFFSET", type=_offset,
                        help="with --partition: where to start, a number, earliest or latest")
    parser.add_argument("--max-messages", type=positive_int, metavar="N", help="stop after N records")
    parser.add_argument("--timeout-ms", type=positive_int, metavar="MS",
                        help="stop once no record arrived for MS milliseconds")
    parser.add_argument("--format", choices=("value", "key-value", "jsonl"), default="value",
                        help="what to print per record (default: value)")
    parser.add_argument("--separator", default="\t", help="between key and value with --format key-value (default: tab)")
    parser.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"),
                        help="read_committed skips records of aborted transactions")
    add_connection_options(parser)
    parser.set_defaults(run=_run)


def _offset(text: str) -> int | str:
    if text in ("earliest", "latest"):
        return text
    try:
        offset = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, earliest or latest, not {text!r}") from None
    if offset < 0:
        raise argparse.ArgumentTypeError(f"offsets are >= 0, not {offset}")
    return offset


def _nullable(data: bytes | None) -> bytes:
    return b"null" if data is None else data


def _formatter(args: argparse.Namespace) -> Callable[[ConsumerRecord], bytes]:
    """The bytes printed for a record (a line, without its newline)."""
    if args.format == "value":
        return lambda r: _nullable(r.value)
    if args.format == "key-value":
        separator = args.separator.encode()
        return lambda r: _nullable(r.key) + separator + _nullable(r.value)
    return lambda r: json.dumps({
        "topic": r.topic, "partition": r.partition, "offset": r.offset, "timestamp": r.timestamp,
        "timestamp_type": TIMESTAMP_TYPES[r.timestamp_type],
        "key": json_bytes(r.key), "value": json_bytes(r.value),
        "headers": [[k, json_bytes(v)] for k, v in r.headers], "leader_epoch": r.leader_epoch}).encode()


def _check(args: argparse.Namespace) -> None:
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition")
    if args.group is not None and args.partition is not None:
        raise UsageError("--group and --partition cannot be used together (a group assigns partitions itself)")


def _start(consumer: Consumer, args: argparse.Namespace, partitions: list[int]) -> None:
    """Subscribe, or assign the partitions and move to where the arguments say."""
    if args.group is not None:
        consumer.subscribe([args.topic])
        return
    if args.partition is not None:
        if args.partition not in partitions:
            raise UsageError(f"topic {args.topic!r} has no partition {args.partition} (it has {len(partitions)})")
        partitions = [args.partition]
    assigned = [TopicPartition(args.topic, p) for p in partitions]
    consumer.assign(assigned)
    where = args.offset if args.offset is not None else ("earliest" if args.from_beginning else "latest")
    if where == "earliest":
        consumer.seek_to_beginning(assigned)
    elif where == "latest":
        consumer.seek_to_end(assigned)
    else:
        consumer.seek(assigned[0], where)


class _Printer:
    """Writes records to stdout as bytes, one line each, and counts them."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.render = _formatter(args)
        self.count = 0
        self.bar = progress(args.max_messages, "records", "consumed", streams_stdout=True)

    def write(self, records: list[ConsumerRecord]) -> None:
        data = b"".join(self.render(r) + b"\n" for r in records)
        with _ctrl_c_deferred():  # so the count on exit is exactly what was printed
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            self.count += len(records)
        self.bar.update(len(records))


@contextlib.contextmanager
def _ctrl_c_deferred() -> Iterator[None]:
    """Hold a Ctrl-C that arrives inside the block and raise it when the block ends."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield  # only the main thread gets KeyboardInterrupt; None: a handler Python cannot restore
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _consume(consumer: Consumer, args: argparse.Namespace, printer: _Printer) -> None:
    """Poll and print until --max-messages, --timeout-ms, Ctrl-C or a closed pipe."""
    idle = None if args.timeout_ms is None else args.timeout_ms / 1000
    quiet_since = time.monotonic()
    while args.max_messages is None or printer.count < args.max_messages:
        wait = None if idle is None else quiet_since + idle - time.monotonic()
        if wait is not None and wait <= 0:
            break
        left = None if args.max_messages is None else args.max_messages - printer.count
        records = consumer.poll(wait, max_records=left)
        if records:
            printer.write(records)
            quiet_since = time.monotonic()


def _run(args: argparse.Namespace) -> int:
    _check(args)
    with admin_client(args) as admin:  # fails fast on a missing topic or an unreachable broker
        partitions = [p.partition for p in admin.describe_topics([args.topic])[args.topic].partitions]
    settings = {"group.id": args.group, "isolation.level": args.isolation_level,
                "auto.offset.reset": "earliest" if args.from_beginning else "latest"}
    printer = _Printer(args)
    with consumer_client(args, settings) as consumer:
        _start(consumer, args, partitions)
        try:
            _consume(consumer, args, printer)
        finally:
            printer.bar.close()
            print(f"Processed a total of {printer.count} messages", file=sys.stderr)
    return 0
