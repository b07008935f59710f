"""A fault-injecting proxy between a client and minibroker, for the clients' fault tests.

It forwards frames both ways and lets a test decide, per request, what happens to it:
forward it (the default), answer it with a response of the test's making instead of
forwarding it (at once, or after a while: :class:`Later`, as a broker holding a long-polled
Fetch would), forward it but drop the response and cut the connection (a lost ack), or
forward it and change the broker's response (an :class:`Edit`). Responses leave in request
order on each connection, as a broker's do, so a held answer holds those behind it.
The broker advertises the proxy's port, so every connection of the client goes through it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from typing import Any

from kproto.protocol import FrameReader, decode_request, decode_response, encode_response, frame
from minibroker import MiniBroker

FORWARD, LOSE_ACK = "forward", "lose-ack"


class Edit:
    """A rule's answer: forward the request, then pass the broker's response body through ``change``."""

    def __init__(self, change: Callable[[Any], Any]) -> None:
        self.change = change


class Later:
    """A rule's answer: the response body ``body`` (not forwarded), sent ``seconds`` later."""

    def __init__(self, seconds: float, body: Any) -> None:
        self.seconds = seconds
        self.body = body


# (api key, api version, request body, n-th request of this key)
#   -> FORWARD, LOSE_ACK, an Edit, a Later or a response body
Rule = Callable[[int, int, Any, int], Any]


class FaultProxy:
    """``with FaultProxy(rule) as proxy:`` — a MiniBroker behind a proxy on ``proxy.bootstrap_servers``."""

    def __init__(self, rule: Rule, **broker_config: Any) -> None:
        self.rule = rule
        self.counts: dict[int, int] = {}
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.broker = MiniBroker(config=broker_config or None, advertised_port=self.port)
        self.bootstrap_servers = f"127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self.broker.start()
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="fault-proxy", daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()
        self.broker.stop()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._serve, sock=self._listener)
            ready.set()
        self._loop.run_until_complete(start())
        self._loop.run_forever()
        self._server.close()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.broker.port)
        except BaseException:  # cancelled by a shutdown (or the broker is gone): the client's socket too
            client_writer.close()
            raise
        frames = FrameReader()
        # in request order: (FORWARD, LOSE_ACK or an Edit; the request header) or (seconds to wait, bytes to send)
        replies: asyncio.Queue = asyncio.Queue()
        pump = asyncio.get_running_loop().create_task(self._responses(up_reader, client_writer, replies))
        try:
            while data := await client_reader.read(65536):
                frames.receive_data(data)
                while (f := frames.next_frame()) is not None:
                    header, body = decode_request(f, strict=False)
                    n = self.counts[header.api_key] = self.counts.get(header.api_key, 0) + 1
                    decision = self.rule(header.api_key, header.api_version, body, n)
                    if isinstance(decision, Edit) or decision in (FORWARD, LOSE_ACK):
                        await replies.put((decision, header))
                        up_writer.write(frame(f))
                    else:
                        delay, body = (decision.seconds, decision.body) if isinstance(decision, Later) else (0, decision)
                        await replies.put((delay, encode_response(
                            header.api_key, header.api_version, header.correlation_id, body)))
        finally:
            pump.cancel()
            up_writer.close()
            client_writer.close()

    async def _responses(self, up_reader, client_writer, replies) -> None:
        frames = FrameReader()
        while True:
            kind, answer = await replies.get()
            if isinstance(kind, (int, float)):  # an answer of the rule's making
                if kind > 0:
                    await asyncio.sleep(kind)
                client_writer.write(answer)
                continue
            while (f := frames.next_frame()) is None:
                data = await up_reader.read(65536)
                if not data:
                    client_writer.close()
                    return
                frames.receive_data(data)
            if kind == LOSE_ACK:
                client_writer.close()  # the broker did the work; the client never hears of it
                return
            if isinstance(kind, Edit):
                header = answer
                _, body = decode_response(header.api_key, header.api_version, f)
                client_writer.write(encode_response(header.api_key, header.api_version, header.correlation_id,
                                                    kind.change(body)))
                continue
            client_writer.write(frame(f))
