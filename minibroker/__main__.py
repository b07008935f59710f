"""The ``python -m minibroker`` command: run one broker, or a cluster of brokers, in the
foreground until stopped.

Usage::

    python -m minibroker [--port 9092] [--host 127.0.0.1]
        [--advertised-host H] [--advertised-port P]
        [--config server.properties] [--override key=value ...] [--stop-on-stdin-eof]
    python -m minibroker --brokers N [--racks a,b,c] [--data-dir DIR]
        [--config server.properties] [--override key=value ...] [--stop-on-stdin-eof]

Settings come from Kafka's own ``server.properties`` format (``--config``), then from
``--override`` (which wins). Only the keys minibroker implements are accepted
(:data:`minibroker.config.DEFAULTS`); any other key stops the command with exit code 2
and a message naming the closest known key. As Kafka's ``ConfigDef`` does, values are
stripped of surrounding whitespace before they are parsed.

Where to listen: the ``listeners`` and ``advertised.listeners`` settings, in Kafka's
syntax. The address flags win over the parts of those keys that they name, as
:class:`~minibroker.MiniBroker`'s arguments do; with neither ``--port`` nor
``listeners`` the broker takes Kafka's port, 9092, on 127.0.0.1. For example,
``listeners=PLAINTEXT://0.0.0.0:9092`` with ``advertised.listeners=PLAINTEXT://127.0.0.1:9092``
serves every interface and sends clients to loopback. Several listeners, TLS and SASL
take Kafka's settings too (``listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093``,
``ssl.keystore.location``, ``listener.name.sasl_ssl.plain.sasl.jaas.config``...: see the
guide "minibroker with TLS and SASL"); the address flags name the first listener.

Once the broker accepts connections, exactly one line goes to stdout, flushed, so that
scripts can wait for it::

    minibroker listening on HOST:PORT

(HOST:PORT is the first listener's advertised address, the one clients bootstrap from;
the other listeners' ports are logged.) Logs go to stderr.
SIGINT (Ctrl-C) and SIGTERM stop the broker cleanly, with exit code 0.

``--brokers N`` (N > 1) runs a :class:`~minibroker.MiniCluster` of N brokers in this one
process instead, each on 127.0.0.1 and an ephemeral port (``--racks`` gives one
``broker.rack`` per broker, comma-separated). The config file and overrides are the
settings of every broker, over the cluster's test-friendly defaults; the keys that are
each broker's own (``advertised.listeners``, ``broker.id``, ``node.id``, ``log.dirs``,
``broker.rack``) and the address flags are refused with exit code 2; ``listeners`` is every
broker's, each port 0 (the line below names the first listener's addresses).
``--data-dir`` keeps the brokers' logs and the cluster's metadata there. Once every
broker accepts connections, the one line on stdout names them all, comma-separated, as a
``bootstrap.servers`` value::

    minicluster listening on HOST:PORT,HOST:PORT,HOST:PORT

``--brokers 1`` (the default) is the single broker above.

``--stop-on-stdin-eof`` is for programs that start the broker as a child with a pipe
as its stdin: the broker stops cleanly when the pipe closes, which happens when the
parent exits for any reason, SIGKILL included, so no orphaned broker is left behind.

Exit codes: 0 stopped by a signal; 1 the broker could not start (e.g. the port is
taken, or another broker holds the data directory); 2 bad usage, an unreadable config
file, or an unknown or invalid config key.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import Iterable, Sequence

from minibroker.broker import MiniBroker
from minibroker.cluster.minicluster import MiniCluster
from minibroker.storage import CorruptStateFileError, LogDirInUseError

__all__ = ["load_config", "main", "parse_properties"]

log = logging.getLogger("minibroker")

# Java's single-character escapes (java.util.Properties.load); any other "\x" is "x".
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=:"
_WHITESPACE = " \t\f"


def _logical_lines(text: str) -> Iterable[str]:
    """Join continued natural lines into logical lines; drop blank and comment lines.

    Facts (``java.util.Properties.load``): a natural line ends at ``\\n``, ``\\r`` or
    ``\\r\\n``. A line whose first non-whitespace character is ``#`` or ``!`` is a
    comment, and a comment never continues. A line ending in an odd number of
    backslashes continues on the next one, whose leading whitespace is dropped.
    """
    pending: str | None = None
    for natural in re.split(r"\r\n|\r|\n", text):
        line = natural.lstrip(_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            yield pending
            pending = None
    if pending is not None:  # the file ended on a continuation backslash
        yield pending


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"malformed \\uxxxx escape in {text!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(following, following))
            i += 2
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text (Kafka's ``server.properties``) into a dict.

    ``key=value``, ``key: value`` and ``key value`` all work; whitespace around the
    separator is ignored, as are blank lines and ``#`` / ``!`` comment lines. A trailing
    backslash continues a line. Escapes (``\\=``, ``\\:``, ``\\ ``, ``\\t``, ``\\uXXXX``...)
    are decoded as Java decodes them. A later duplicate key wins. Values keep any
    trailing whitespace, as in Java.

    Raises:
        ValueError: a malformed ``\\uXXXX`` escape.
    """
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        # The key runs to the first unescaped separator or whitespace.
        i = 0
        while i < len(line) and line[i] not in _SEPARATORS and line[i] not in _WHITESPACE:
            i += 2 if line[i] == "\\" else 1
        key = line[:i]
        rest = line[i:].lstrip(_WHITESPACE)
        if rest and rest[0] in _SEPARATORS:
            rest = rest[1:].lstrip(_WHITESPACE)
        result[_unescape(key)] = _unescape(rest)
    return result


def load_config(path: str | None, overrides: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """Settings from a properties file (if any), then overrides; values stripped.

    Keys are not checked here: :class:`~minibroker.config.BrokerConfig` does that.

    Raises:
        OSError: the file cannot be read.
        ValueError: the file is malformed.
    """
    settings: dict[str, str] = {}
    if path is not None:
        with open(path, encoding="utf-8") as f:
            settings.update(parse_properties(f.read()))
    settings.update(overrides)
    return {key.strip(): value.strip() for key, value in settings.items()}


def _override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, not {text!r}")
    return key.strip(), value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m minibroker",
        description="Run a minibroker (an in-memory Kafka-compatible broker) until SIGINT or SIGTERM.",
    )
    parser.add_argument("--port", type=int,
                        help="port to bind; 0 picks a free one (default: the port of listeners, else 9092)")
    parser.add_argument("--host", help="address to bind (default: the host of listeners, else 127.0.0.1)")
    parser.add_argument("--advertised-host",
                        help="host that Metadata tells clients (default: that of advertised.listeners, else the bind host)")
    parser.add_argument("--advertised-port", type=int,
                        help="port that Metadata tells clients (default: that of advertised.listeners, else the bound port)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="keep the logs here, in Kafka's layout (default: in memory; same as log.dirs)")
    parser.add_argument("--config", metavar="FILE", help="a Kafka server.properties file")
    parser.add_argument("--override", metavar="KEY=VALUE", type=_override, action="append", default=[],
                        help="a broker setting that wins over --config (repeatable)")
    parser.add_argument("--brokers", type=int, default=1, metavar="N",
                        help="run a cluster of N brokers in this process, on ephemeral ports (default: 1, "
                             "one broker)")
    parser.add_argument("--racks", metavar="A,B,...",
                        help="with --brokers: one broker.rack per broker, comma-separated")
    parser.add_argument("--stop-on-stdin-eof", action="store_true",
                        help="also stop when standard input closes (for a parent process holding a pipe to it: "
                             "the broker then never outlives that process)")
    return parser


def _stop_on_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    fd = sys.stdin.fileno()

    def readable() -> None:
        if not os.read(fd, 65536):  # whatever the parent writes is ignored; only the end counts
            loop.remove_reader(fd)
            log.info("standard input closed")
            stop.set()

    loop.add_reader(fd, readable)


async def _serve(broker: MiniBroker | MiniCluster, stop_on_stdin_eof: bool = False) -> None:
    """Run ``broker`` (or a cluster) in this loop until SIGINT or SIGTERM (or the end of
    stdin, if asked)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError):  # e.g. Windows: Ctrl-C raises KeyboardInterrupt
            pass
    if stop_on_stdin_eof:
        _stop_on_eof(loop, stop)
    await broker.start_async()
    try:
        name = "minicluster" if isinstance(broker, MiniCluster) else "minibroker"
        print(f"{name} listening on {broker.bootstrap_servers}", flush=True)
        await stop.wait()
        log.info("stopping")
    finally:
        await broker.stop_async()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.brokers < 1:
        parser.error(f"--brokers must be at least 1, not {args.brokers}")
    if args.brokers == 1 and args.racks is not None:
        parser.error("--racks needs --brokers N, N > 1")
    if args.brokers > 1:
        flags = [flag for flag, value in (("--port", args.port), ("--host", args.host),
                                          ("--advertised-host", args.advertised_host),
                                          ("--advertised-port", args.advertised_port)) if value is not None]
        if flags:
            parser.error(f"{flags[0]} names one broker's address; a cluster's brokers listen on "
                         "127.0.0.1 and ephemeral ports")
    try:
        settings = load_config(args.config, args.override)
        if args.brokers > 1:
            racks = args.racks.split(",") if args.racks is not None else None
            cluster = MiniCluster(brokers=args.brokers, racks=racks, data_dir=args.data_dir, config=settings)
    except (OSError, ValueError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.brokers > 1:
        return _run(parser, cluster, args.stop_on_stdin_eof, "127.0.0.1")
    try:
        port = args.port
        if port is None and "listeners" not in settings:
            port = 9092  # Kafka's port, where tools look by default; MiniBroker's own is ephemeral
        broker = MiniBroker(port=port, host=args.host, data_dir=args.data_dir, config=settings,
                            advertised_host=args.advertised_host, advertised_port=args.advertised_port)
    except (OSError, ValueError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    return _run(parser, broker, args.stop_on_stdin_eof, f"{broker.host}:{broker.port}")


def _run(parser: argparse.ArgumentParser, broker: MiniBroker | MiniCluster, stop_on_stdin_eof: bool,
         address: str) -> int:
    try:
        asyncio.run(_serve(broker, stop_on_stdin_eof))
    except KeyboardInterrupt:  # a signal before the handlers were installed
        return 0
    except (LogDirInUseError, CorruptStateFileError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{parser.prog}: error: cannot listen on {address}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
