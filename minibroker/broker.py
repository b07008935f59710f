"""MiniBroker: an embedded Kafka-compatible broker that starts in-process.

Sync users get a broker on a background thread with its own event loop::

    with MiniBroker() as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

Async users run it in their own loop::

    async with MiniBroker() as broker:
        ...

Where it listens comes from Kafka's ``listeners`` and ``advertised.listeners`` configs,
or from the ``host``, ``port``, ``advertised_host`` and ``advertised_port`` arguments,
which are shorthands for their parts (see :class:`MiniBroker`).

Faults for tests of a client: :attr:`MiniBroker.requests` delays, fails, drops or holds
requests by API key (:mod:`minibroker.faults`)::

    from minibroker.faults import Fail
    ctl = broker.requests.control(ApiKey.PRODUCE, Fail(NotLeaderOrFollowerError), times=2)
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Mapping
from typing import Any

from minibroker.background import BackgroundLoop
from minibroker.config import DEFAULTS, BrokerConfig, Listener, parse_listeners
from minibroker.faults import RequestControls
from minibroker.server import Server

__all__ = ["MiniBroker"]


def _apply_arguments(settings: dict[str, Any], host: str | None, port: int | None,
                     advertised_host: str | None, advertised_port: int | None) -> None:
    """Write the address arguments that are given into ``listeners`` / ``advertised.listeners``.

    They name the parts of the first listener (and of its advertised entry). Rewriting the
    keys, rather than passing the arguments around them, keeps one source of truth:
    DescribeConfigs then reports the listeners the broker really uses. A key left empty
    stays so, for :class:`BrokerConfig` to refuse.
    """
    listeners = parse_listeners("listeners", str(settings.get("listeners", DEFAULTS["listeners"][0])))
    if listeners and (host is not None or port is not None):
        first = listeners[0]
        listeners[0] = Listener(first.host if host is None else host, first.port if port is None else port, first.name)
        settings["listeners"] = ",".join(map(str, listeners))
    if not listeners or (advertised_host is None and advertised_port is None):
        return
    # advertised.listeners defaults to listeners, so that is what a lone argument edits.
    advertised = parse_listeners("advertised.listeners", str(settings.get("advertised.listeners", ""))) or listeners
    by_name = {a.name: a for a in advertised}
    first = by_name.get(listeners[0].name, listeners[0])
    by_name[first.name] = Listener(first.host if advertised_host is None else advertised_host,
                                   first.port if advertised_port is None else advertised_port, first.name)
    settings["advertised.listeners"] = ",".join(map(str, by_name.values()))


class MiniBroker:
    """A single-node broker, in memory unless given a ``data_dir``, on one PLAINTEXT listener
    unless ``listeners`` names more (SSL, SASL_PLAINTEXT, SASL_SSL: see :mod:`minibroker.listeners`
    and the guide "minibroker with TLS and SASL").

    Where it listens follows one rule: an address argument that is given wins over the
    same part of the config key, and what neither gives takes the key's default. So
    ``host`` and ``port`` replace the host and port of the first of ``listeners`` (default
    ``PLAINTEXT://127.0.0.1:0``: loopback, a free port), and ``advertised_host`` and
    ``advertised_port`` those of ``advertised.listeners``, which defaults to
    ``listeners``. An advertised port of 0 (or none) is the bound port; an empty
    advertised host is this machine's canonical name (``socket.getfqdn()``), as in Kafka.

    Args:
        port: port to bind; 0 picks a free one (see :attr:`port` once started).
        host: address to bind. 0.0.0.0 binds every interface and then needs an
            advertised host that clients can reach; "" binds every interface too, and is
            advertised as this machine's name.
        data_dir: where to keep the logs, in Kafka's on-disk layout (the same as
            ``config={"log.dirs": ...}``, which may name several); None keeps everything
            in memory. A broker started again on the same directory finds its topics,
            ids, configs and records. One broker at a time: each directory is locked
            (Kafka's ``.lock``) from start to stop.
        config: broker settings under Kafka's names (see :mod:`minibroker.config`).
        advertised_host, advertised_port: what Metadata and DescribeCluster tell clients
            to connect to, when it differs from the bind address (e.g. bound to 0.0.0.0
            behind a port mapping).

    Raises:
        ValueError: an unknown or invalid config key, e.g. two listeners of one name, a
            listener name missing from ``listener.security.protocol.map``, an advertised
            0.0.0.0, or an SSL listener whose certificate cannot be read.
    """

    def __init__(self, port: int | None = None, host: str | None = None, data_dir: str | os.PathLike | None = None,
                 config: Mapping[str, Any] | None = None, *, advertised_host: str | None = None,
                 advertised_port: int | None = None):
        settings = dict(config or {})
        if data_dir is not None:
            if settings.get("log.dirs"):
                raise ValueError("give data_dir or config['log.dirs'], not both")
            settings["log.dirs"] = os.fspath(data_dir)
        _apply_arguments(settings, host, port, advertised_host, advertised_port)
        broker_config = BrokerConfig(settings)
        bind, advertised = broker_config.listener, broker_config.advertised_listener
        self._server = Server(broker_config, bind.host or "0.0.0.0", bind.port,
                              advertised.host or socket.getfqdn(), advertised.port)
        self._background = BackgroundLoop("minibroker", "broker")

    @property
    def host(self) -> str:
        """The address bound (or to bind)."""
        return self._server.host

    @property
    def port(self) -> int:
        """The port bound; before :meth:`start`, the one asked for (0: any free one)."""
        return self._server.port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``: the first listener's
        advertised address."""
        return self.bootstrap_servers_for(self._server.listeners[0].name)

    def bootstrap_servers_for(self, listener: str) -> str:
        """``host:port`` of one listener (its advertised address), by name, e.g.
        ``broker.bootstrap_servers_for("SASL_SSL")``; a client of that listener bootstraps
        from it and is told that listener's addresses.

        Raises:
            KeyError: no listener has that name.
            RuntimeError: the broker is not started.
        """
        state = self._server.state
        if state is None:
            raise RuntimeError("the broker is not started")
        if listener.upper() not in state.endpoints:
            raise KeyError(f"no listener {listener!r}; the listeners are {', '.join(state.endpoints)}")
        host, port = state.endpoints[listener.upper()]
        host = f"[{host}]" if ":" in host else host
        return f"{host}:{port}"

    @property
    def requests(self) -> RequestControls:
        """The broker's request controls (:meth:`~minibroker.faults.RequestControls.control`:
        delay, fail, drop, hold or count requests by API key); removed when it stops."""
        return self._server.faults.requests

    # -- in a running event loop -------------------------------------------------------

    async def start_async(self) -> MiniBroker:
        """Start in the current event loop; returns once the broker accepts connections.

        Raises the same errors as :meth:`start`.
        """
        await self._server.start()
        return self

    async def stop_async(self) -> None:
        await self._server.stop()

    async def __aenter__(self) -> MiniBroker:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # -- on a background thread ------------------------------------------------------------

    def start(self) -> MiniBroker:
        """Start on a background thread; returns once the broker accepts connections.

        Raises:
            minibroker.storage.LogDirInUseError: another broker (in this process or
                another) holds a log directory; nothing stays bound or locked.
            minibroker.storage.CorruptStateFileError: the topics, producer ids or dynamic
                broker configs file is damaged; the message names it.
            OSError: the port cannot be bound.
        """
        self._background.start(self._server.start, self._server.stop)
        return self

    def stop(self) -> None:
        """Stop the background broker and wait for its thread (idempotent)."""
        self._background.stop()

    @property
    def _loop(self) -> asyncio.AbstractEventLoop | None:
        """The background broker's loop (for tests that reach into its state)."""
        return self._background.loop

    def __enter__(self) -> MiniBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
