"""The ``kproto`` command: the parser that joins the commands, and how failures end.

Each command module adds its parser with a ``register(subparsers)`` function and sets
``run``, a function of the parsed arguments that returns the exit code. :func:`main`
parses, runs, and turns every expected failure into one line on stderr (several when an
admin call failed for several items) and an exit code:

===  ====================================================================
0    success; also when the reader of stdout went away (``| head``)
1    a Kafka error (the line names it: ``[TOPIC_ALREADY_EXISTS] ...``), an
     unreachable broker, a timeout, an unreadable file, a bad client setting;
     a damaged segment (``dump-log``); too few records (``perf consume``)
2    bad usage (argparse's code)
130  interrupted (Ctrl-C)
===  ====================================================================
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from kproto import __version__
from kproto.cli import (
    acls,
    broker,
    consume,
    dumplog,
    groups,
    perf,
    pipeline,
    produce,
    quotas,
    topics,
    transactions,
    users,
)
from kproto.cli.options import UsageError, add_connection_options
from kproto.errors import KafkaCodeError, KafkaError

__all__ = ["build_parser", "main"]

PROG = "kproto"
_COMMANDS = (topics, produce, consume, groups, transactions, acls, quotas, users, dumplog, perf, broker, pipeline)

_EPILOG = """examples:
  kproto broker --data-dir /tmp/kafka &           # a local broker on 127.0.0.1:9092
  kproto topics create orders --partitions 3
  seq 10 | kproto produce orders
  kproto consume orders --from-beginning --max-messages 10
  kproto groups describe billing
  kproto transactions find-hanging --topic orders
  kproto acls add --allow-principal User:alice --operation Read --topic orders
  kproto quotas alter --user alice --add-config producer_byte_rate=1048576
  kproto users alter alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
  kproto dump-log /tmp/kafka/orders-0/00000000000000000000.log --print-data
  kproto perf produce orders --num-records 100000 --record-size 100
  kproto pipeline                                 # the main job: minibroker, Kafka into Spark streaming

Run "kproto COMMAND --help" for a command's options and examples."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: global options, then one subcommand per command module."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Kafka's command-line tools, on kproto: topics, produce, consume, groups, transactions, "
                               "ACLs, quotas, SCRAM users, segment dumps, perf tests, a local broker and the Spark pipeline.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug) to stderr")
    add_connection_options(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMANDS:
        module.register(commands)
    return parser


def _describe(exc: BaseException) -> str:
    """One line for an error; a Kafka code's name leads (KafkaCodeError's str gives it)."""
    if isinstance(exc, KafkaCodeError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if isinstance(exc, KafkaError) else str(exc)


def _report(exc: BaseException) -> None:
    results = getattr(exc, "results", None)  # the admin client's outcome of every item
    failures = [r for r in results.values() if isinstance(r, BaseException)] if isinstance(results, dict) else [exc]
    for failure in failures:
        print(f"{PROG}: error: {_describe(failure)}", file=sys.stderr)


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so that the interpreter's final
    flush does not fail again (Python's documented recipe for SIGPIPE)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests capture it)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kproto`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "passes_extra_arguments", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else 2
    args.extra = extra
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG if args.verbose > 1 else logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.run(args)
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except UsageError as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (KafkaError, OSError, ValueError) as exc:
        _report(exc)
        return 1
