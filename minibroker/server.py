"""The asyncio TCP server: frames in, handlers, frames out.

Theory of operation: each connection is one task that reads frames and answers them
strictly in order, one at a time. A long-polled Fetch therefore holds back later
requests on its own connection (Kafka's guarantee, which kafka-python and aiokafka rely
on) and never anything on other connections. Bytes a peer sends that break the protocol
close that connection only; an unknown ApiVersions version gets the v0 answer with
UNSUPPORTED_VERSION (KIP-511); any other unknown API key or version closes the
connection, as Kafka does when it cannot parse a request.
"""

from __future__ import annotations

import asyncio
import logging

from kproto.errors import ProtocolError, UnsupportedVersionError
from kproto.protocol import (
    ApiKey,
    FrameReader,
    UnsupportedApiVersionError,
    decode_request,
    encode_response,
)
from minibroker.config import BrokerConfig
from minibroker.handlers import HANDLERS
from minibroker.handlers.api_versions import api_versions_response
from minibroker.state import BrokerState

__all__ = ["Server"]

log = logging.getLogger("minibroker")


class Server:
    """One broker listening on one socket."""

    def __init__(self, config: BrokerConfig, host: str, port: int, advertised_host: str | None = None, advertised_port: int | None = None):
        self.config = config
        self.host = host
        self.port = port
        self._advertised = (advertised_host, advertised_port)
        self.state: BrokerState | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()
        self._maintenance: asyncio.Task | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        host = self._advertised[0] or self.host
        port = self._advertised[1] or self.port
        self.state = BrokerState(self.config, host, port)
        self._maintenance = asyncio.create_task(self._maintain())
        log.info("minibroker listening on %s:%d (advertised %s:%d)", self.host, self.port, host, port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
            self._maintenance.cancel()
            await asyncio.gather(self._maintenance, return_exceptions=True)
            self.state.groups.close()  # cancels group timers, answers held joins and syncs
            self.state.close()

    async def _maintain(self) -> None:
        """Retention and compaction, every ``log.retention.check.interval.ms``."""
        interval = self.config["log.retention.check.interval.ms"] / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.state.maintain()
            except Exception:  # one failing partition must not stop the others' upkeep for good
                log.exception("log maintenance failed")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        frames = FrameReader(max_frame_size=self.config["socket.request.max.bytes"])
        try:
            while True:
                data = await reader.read(256 * 1024)
                frames.receive_data(data)
                while (frame := frames.next_frame()) is not None:
                    response = await self._answer(frame)
                    if response is not None:
                        writer.write(response)
                        await writer.drain()
                if not data:
                    return
        except ProtocolError as exc:
            log.info("closing connection from %s: %s", writer.get_extra_info("peername"), exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:  # a handler bug must cost one connection, never the broker
            log.exception("closing connection after an internal error")
        finally:
            self._connections.discard(task)
            writer.close()

    async def _answer(self, frame) -> bytes | None:
        """The response frame for one request frame, or None when none is due."""
        try:
            header, request = decode_request(frame, strict=False)  # lenient as Kafka: see decode_request
        except UnsupportedApiVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS:
                return encode_response(ApiKey.API_VERSIONS, 0, exc.correlation_id, api_versions_response(UnsupportedVersionError.code))
            raise ProtocolError(f"unsupported API key {exc.api_key} version {exc.api_version}") from None
        entry = HANDLERS.get(header.api_key)
        if entry is None or not entry[0] <= header.api_version <= entry[1]:
            if header.api_key == ApiKey.API_VERSIONS:
                return encode_response(ApiKey.API_VERSIONS, 0, header.correlation_id, api_versions_response(UnsupportedVersionError.code))
            raise ProtocolError(f"API key {header.api_key} version {header.api_version} is not served by minibroker")
        response = await entry[2](self.state, header, request)
        if response is None:
            return None
        return encode_response(header.api_key, header.api_version, header.correlation_id, response)
