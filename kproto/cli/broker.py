"""``kproto broker``: run minibroker in the foreground, exactly as ``python -m minibroker``.

Every argument after ``broker`` goes to minibroker's own command line (``kproto broker
--help`` shows its options). The library never imports minibroker (DESIGN, principle 1:
minibroker is built on kproto, not the other way round), so this command replaces the
process with ``python -m minibroker``: one implementation of the broker's options,
signals (Ctrl-C and SIGTERM stop it cleanly) and exit codes.
"""

from __future__ import annotations

import argparse
import os
import sys

from kproto.cli.options import add_command

__all__ = ["register"]

_EXAMPLES = """examples:
  kproto broker                      # 127.0.0.1:9092, in memory
  kproto broker --port 0 --data-dir /tmp/kafka
  kproto broker --override num.partitions=3
  kproto broker --brokers 3          # a cluster of 3 brokers on ephemeral ports
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    # No --help of its own: every argument, --help included, is minibroker's.
    parser = add_command(subparsers, "broker", add_help=False,
                         help="run minibroker, an embedded Kafka-compatible broker (same as python -m minibroker)")
    parser.set_defaults(run=_run, passes_extra_arguments=True)


def _run(args: argparse.Namespace) -> int:
    if {"-h", "--help"} & set(args.extra):  # minibroker's help follows, from the new process
        print(f"kproto broker runs python -m minibroker with the same arguments.\n\n{_EXAMPLES}")
    command = [sys.executable, "-m", "minibroker", *args.extra]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, command)  # returns only by raising OSError
