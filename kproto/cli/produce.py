"""``kproto produce TOPIC``: one record per line of stdin or a file (the console producer).

Lines are bytes, sent as they arrive (so ``tail -f log | kproto produce t`` streams), with
their line ending (``\\n`` or ``\\r\\n``) removed. With ``--key-separator`` each line is
``KEY<sep>VALUE``, split at the first separator; a line without one is an error, as in
Kafka. Every record carries the ``--header`` pairs given.

The command ends once every record is acknowledged (per ``--acks``); the first record the
producer could not deliver stops it with that record's error. Reading a file (``--file``,
or stdin redirected from one), it shows how much of the file is sent on stderr when that
is a terminal.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from kproto import Producer
from kproto.cli.options import (
    add_command,
    add_connection_options,
    add_producer_options,
    key_value,
    producer_client,
    producer_flags,
)
from kproto.cli.progress import Progress, progress

__all__ = ["register"]

_CLOSE_TIMEOUT = 10.0  # seconds to deliver what is queued after an error or Ctrl-C


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "produce", help="send lines of stdin or a file as records",
                         examples=["seq 5 | kproto produce orders",
                                   "kproto produce orders --file orders.txt --key-separator : --header source=batch",
                                   "kproto produce orders --compression zstd --acks 1 --partition 0 < orders.txt"])
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--file", metavar="FILE", help="read this file instead of stdin")
    parser.add_argument("--key-separator", metavar="SEP", help="each line is KEY<SEP>VALUE (split at the first SEP)")
    parser.add_argument("--header", metavar="KEY=VALUE", type=key_value, action="append", default=[],
                        help="a header on every record (repeatable)")
    add_producer_options(parser)
    parser.add_argument("--partition", type=int, help="send every record to this partition (default: the partitioner's choice)")
    add_connection_options(parser)
    parser.set_defaults(run=_run)


def _lines(stream: BinaryIO, bar: Progress) -> Iterator[bytes]:
    """The lines of ``stream`` without their endings, as they arrive; ``bar`` counts bytes."""
    for line in stream:
        bar.update(len(line))
        yield line.removesuffix(b"\n").removesuffix(b"\r")


def _file_size(stream: BinaryIO) -> int | None:
    """The size of what ``stream`` reads when it is a regular file (not a pipe or a tty)."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's stdin, say)
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _records(lines: Iterable[bytes], separator: bytes | None) -> Iterator[tuple[bytes | None, bytes]]:
    """``(key, value)`` per line: no key, or the parts around the first ``separator``."""
    for number, line in enumerate(lines, 1):
        if separator is None:
            yield None, line
            continue
        key, found, value = line.partition(separator)
        if not found:
            raise ValueError(f"line {number} has no key separator {separator.decode()!r}")
        yield key, value


def _send_all(producer: Producer, args: argparse.Namespace, stream: BinaryIO) -> None:
    headers = [(k, v.encode()) for k, v in args.header]
    separator = args.key_separator.encode() if args.key_separator else None
    failures: list[BaseException] = []

    def delivered(error: BaseException | None, _metadata: object) -> None:
        if error is not None:
            failures.append(error)

    size = _file_size(stream)  # a pipe or `tail -f` has no end to measure against
    bar = progress(size, "B", "sent", enabled=size is not None)
    try:
        for key, value in _records(_lines(stream, bar), separator):
            if failures:
                break
            producer.send(args.topic, value, key, partition=args.partition, headers=headers, on_delivery=delivered)
        producer.flush()
    finally:
        bar.close()
    if failures:
        raise failures[0]


def _run(args: argparse.Namespace) -> int:
    stream = open(args.file, "rb") if args.file else sys.stdin.buffer
    try:
        producer = producer_client(args, producer_flags(args))
        try:
            _send_all(producer, args, stream)
        finally:
            producer.close(_CLOSE_TIMEOUT)
    finally:
        if args.file:
            stream.close()
    return 0
