"""What every ``kproto`` command shares: its parser's shape, the connection options, and
the settings its clients are built with.

Where a client setting comes from, last wins:

1. the CLI's own defaults (:data:`CLI_DEFAULTS`): short timeouts, so that a command
   against a broker that is down fails in seconds instead of Java's minute;
2. ``--command-config FILE``: Kafka client properties, a Java ``.properties`` file as
   Kafka's tools read it (:mod:`kproto.cli.properties`);
3. ``--property KEY=VALUE`` (repeatable);
4. the command's own flags (``--acks``, ``--compression``, ``--group``...).

``bootstrap.servers`` comes from ``--bootstrap-servers``, else from those settings, else
from ``$KPROTO_BOOTSTRAP_SERVERS``, else ``127.0.0.1:9092``.

One settings file may serve several kinds of client: a key that belongs to another kind
(``acks`` when an admin client is built) is left out for this one, while a key no client
knows is an error naming the closest one (:class:`~kproto.config.ClientConfig` says so).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from kproto import AdminClient, Consumer, Producer
from kproto.cli.properties import read_properties
from kproto.config import settings_of_kind

__all__ = [
    "CLI_DEFAULTS",
    "ENV_BOOTSTRAP",
    "UsageError",
    "add_command",
    "add_connection_options",
    "add_producer_options",
    "admin_client",
    "client_settings",
    "command_settings",
    "consumer_client",
    "key_value",
    "positive_int",
    "producer_client",
    "producer_flags",
]

ENV_BOOTSTRAP = "KPROTO_BOOTSTRAP_SERVERS"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

#: Settings the CLI changes from Java's defaults, so that an unreachable or silent
#: broker is an error within seconds; each can be overridden like any other setting.
CLI_DEFAULTS: dict[str, Any] = {
    "client.id": "kproto-cli",
    "socket.connection.setup.timeout.ms": 5000,
    "request.timeout.ms": 10000,
    "default.api.timeout.ms": 10000,
    "max.block.ms": 10000,
    "delivery.timeout.ms": 30000,  # a record the cluster cannot take fails in 30 s, not Java's 2 min
}


class UsageError(Exception):
    """Arguments that parse but do not make sense together (exit code 2, as argparse's)."""


def key_value(text: str) -> tuple[str, str]:
    """argparse type of ``KEY=VALUE`` options (the value may be empty or hold ``=``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value


def positive_int(text: str) -> int:
    """argparse type of counts and durations that must be > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    return value


def add_command(subparsers: argparse._SubParsersAction, name: str, *, help: str,
                examples: Sequence[str] = (), description: str | None = None,
                **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand parser whose ``--help`` ends with worked examples."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples) if examples else None
    return subparsers.add_parser(name, help=help, description=description or help, epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def add_connection_options(parser: argparse.ArgumentParser, *, suppress: bool = True,
                           bootstrap_help: str | None = None) -> None:
    """Add ``--bootstrap-servers``, ``--command-config`` and ``--property`` to ``parser``.

    The top-level parser takes them with defaults; each command that connects takes them
    again with ``suppress`` (no default), so that they may come before or after the
    command name without the command's absent copy hiding the top-level value.
    ``bootstrap_help`` replaces the help of ``--bootstrap-servers`` (for a command whose
    default is not the usual one).
    """
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("connection")
    group.add_argument("--bootstrap-servers", metavar="HOST:PORT[,...]", default=default(None),
                       help=bootstrap_help or f"brokers to connect to (default: ${ENV_BOOTSTRAP}, else "
                                              f"{DEFAULT_BOOTSTRAP})")
    group.add_argument("--command-config", metavar="FILE", default=default(None),
                       help="Kafka client properties file (Java .properties: key=value lines, # comments)")
    group.add_argument("--property", metavar="KEY=VALUE", type=key_value, action="append",
                       default=default([]), dest="properties",
                       help="a client setting that wins over --command-config (repeatable)")


def add_producer_options(parser: argparse.ArgumentParser) -> None:
    """``--acks`` and ``--compression``, for the commands that produce (see :func:`producer_flags`)."""
    parser.add_argument("--acks", choices=("all", "-1", "0", "1"), help="acks (default: all)")
    parser.add_argument("--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"),
                        help="compression.type (default: none)")


def producer_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The producer settings :func:`add_producer_options` collected."""
    return {"acks": args.acks, "compression.type": args.compression}


def command_settings(args: argparse.Namespace) -> dict[str, str]:
    """The settings of ``--command-config`` with ``--property`` over them, for every kind of
    client alike (:func:`client_settings` picks one kind's).

    Raises:
        OSError: the file cannot be read.
        ValueError: the file is malformed.
    """
    settings = read_properties(args.command_config) if args.command_config else {}
    settings.update(args.properties)
    return settings


def client_settings(args: argparse.Namespace, client: str, flags: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The settings of a ``client`` (``"admin"``, ``"producer"``, ``"consumer"``) for a
    command, in the order of precedence the module docstring gives.

    ``flags`` are the command's own settings; None values in it are flags not given.
    """
    settings = settings_of_kind(client, {**CLI_DEFAULTS, **command_settings(args)})
    settings.update((name, value) for name, value in (flags or {}).items() if value is not None)
    bootstrap = args.bootstrap_servers or settings.get("bootstrap.servers") or os.environ.get(ENV_BOOTSTRAP)
    settings["bootstrap.servers"] = bootstrap or DEFAULT_BOOTSTRAP
    return settings


def admin_client(args: argparse.Namespace) -> AdminClient:
    """An admin client for the command (close it, or use it in ``with``)."""
    return _reached(AdminClient(client_settings(args, "admin")))


def producer_client(args: argparse.Namespace, flags: Mapping[str, Any] | None = None) -> Producer:
    """A producer for the command, with the command's own settings in ``flags``."""
    return _reached(Producer(client_settings(args, "producer", flags)))


def consumer_client(args: argparse.Namespace, flags: Mapping[str, Any] | None = None) -> Consumer:
    """A consumer for the command, with the command's own settings in ``flags``."""
    return _reached(Consumer(client_settings(args, "consumer", flags)))


_Client = TypeVar("_Client", AdminClient, Producer, Consumer)


def _reached(client: _Client) -> _Client:
    """``client`` once one round over the bootstrap servers found a broker.

    The clients connect lazily and keep trying for ``default.api.timeout.ms`` /
    ``max.block.ms``, as Java's do, so that a broker may start after them; a command line
    tool should instead say at once that nothing answers (each server tried once, bounded
    by ``socket.connection.setup.timeout.ms`` and ``request.timeout.ms``).

    Raises:
        NoBrokersAvailableError: no bootstrap server answered (the client is closed).
    """
    try:
        client._portal.call(client._core._cluster.refresh)
    except BaseException:
        client.close()
        raise
    return client
