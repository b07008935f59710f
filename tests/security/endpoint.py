"""A real HTTP(S) endpoint on 127.0.0.1 for the OAuth tests: an OIDC token endpoint or a
JWKS endpoint, answering from a script of responses (with headers: a redirect), and
recording each request it got."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["Endpoint", "Reply", "Request", "http_endpoint"]


@dataclass
class Reply:
    """One answer: ``status``, ``body`` and extra ``headers``, after ``delay`` seconds (cut
    short when the endpoint stops)."""

    status: int = 200
    body: str = ""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: str


@dataclass
class Endpoint:
    """The endpoint's URL, the replies still to give (the last one repeats) and the
    requests it got."""

    url: str
    replies: list[Reply]
    requests: list[Request] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def next_reply(self) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


@contextmanager
def http_endpoint(*replies: Reply, path: str = "/token", tls: ssl.SSLContext | None = None,
                  host: str = "127.0.0.1") -> Iterator[Endpoint]:
    """An HTTP server on an ephemeral port of 127.0.0.1 in a thread, stopped and joined on
    exit; HTTPS with ``tls`` (a server context), its URL naming ``host``."""
    endpoint: Endpoint

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            endpoint.requests.append(Request(self.command, self.path, dict(self.headers.items()), body))
            reply = endpoint.next_reply()
            if reply.delay and endpoint.stopping.wait(reply.delay):
                return
            data = reply.body.encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (a read timeout) and closed
                pass

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False  # joined by server_close: no thread outlives the test
    server.block_on_close = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls is not None else "http"
    endpoint = Endpoint(f"{scheme}://{host}:{server.server_address[1]}{path}", list(replies or [Reply()]))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        endpoint.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
