"""MiniBroker: an embedded Kafka-compatible broker that starts in-process.

Sync users get a broker on a background thread with its own event loop::

    with MiniBroker() as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

Async users run it in their own loop::

    async with MiniBroker() as broker:
        ...
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from typing import Any

from minibroker.config import BrokerConfig
from minibroker.server import Server

__all__ = ["MiniBroker"]


class MiniBroker:
    """A single-node broker, in memory, listening on ``host:port`` (0: an ephemeral port).

    Args:
        port: port to bind; 0 picks a free one (see :attr:`bootstrap_servers`).
        host: address to bind, 127.0.0.1 by default.
        data_dir: where to keep the logs, in Kafka's on-disk layout (the same as
            ``config={"log.dirs": ...}``, which may name several); None keeps everything
            in memory. A broker started again on the same directory finds its topics,
            ids, configs and records.
        config: broker settings under Kafka's names (see :mod:`minibroker.config`).
        advertised_host, advertised_port: what Metadata tells clients to connect to,
            when it differs from the bind address (e.g. bound to 0.0.0.0).

    Raises:
        ValueError: an unknown or invalid config key.
    """

    def __init__(self, port: int = 0, host: str = "127.0.0.1", data_dir: str | os.PathLike | None = None,
                 config: Mapping[str, Any] | None = None, *, advertised_host: str | None = None,
                 advertised_port: int | None = None):
        settings = dict(config or {})
        if data_dir is not None:
            if settings.get("log.dirs"):
                raise ValueError("give data_dir or config['log.dirs'], not both")
            settings["log.dirs"] = os.fspath(data_dir)
        self._server = Server(BrokerConfig(settings), host, port, advertised_host, advertised_port)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        state = self._server.state
        if state is None:
            raise RuntimeError("the broker is not started")
        return f"{state.host}:{state.port}"

    # -- in a running event loop -------------------------------------------------------

    async def start_async(self) -> MiniBroker:
        """Start in the current event loop; returns once the broker accepts connections."""
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
        """Start on a background thread; returns once the broker accepts connections."""
        if self._thread is not None:
            raise RuntimeError("the broker is already started")
        ready = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                await self._server.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            await self._stopped.wait()
            await self._server.stop()

        self._thread = threading.Thread(target=asyncio.run, args=(main(),), name="minibroker", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        """Stop the background broker and wait for its thread (idempotent)."""
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join()
        self._thread = None

    def __enter__(self) -> MiniBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
