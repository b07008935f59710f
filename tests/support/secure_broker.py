"""A small TLS/SASL test broker: real sockets, real TLS (``ssl``), real frames
(``kproto.protocol``) and the server side of each SASL mechanism from ``kproto.security``.

It answers what a client needs to connect and learn the cluster: ApiVersions,
SaslHandshake, SaslAuthenticate and Metadata (itself as node 0, every topic asked for
unknown), and closes a connection that sends anything else, or anything before SASL is
done (as Kafka's ``SaslServerAuthenticator`` does). With ``upstream`` set to a plaintext
broker (a minibroker advertising this broker's port), it is a TLS/SASL front for it: once
a connection is authenticated, its requests and their answers pass through unchanged, so
producers and consumers do real work over TLS and SASL; ApiVersions then answers the
upstream's APIs plus SaslHandshake and SaslAuthenticate. It is for what Tansu cannot serve
(PLAIN, OAUTHBEARER, mutual TLS, KIP-368 re-authentication, each refusal); tests take
the broker as a fixture so that minibroker's own TLS/SASL listeners can stand in later.

::

    with SecureBroker(ssl_context=server_context(pki), plain_users={"alice": "pw"}) as broker:
        broker.bootstrap_servers   # "127.0.0.1:<port>"
        broker.authentications     # [(mechanism, principal)] of every success
        broker.session_lifetime_ms = 1000   # KIP-368: answered in SaslAuthenticate v1+

The server runs on its own event loop in a thread, so sync and asyncio clients both
use it; ``close()`` (or the ``with`` block's end) stops it and its connections.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any

from kproto.errors import ProtocolError
from kproto.protocol import (
    APIS,
    ApiKey,
    FrameReader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kproto.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataResponse,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
)
from kproto.security import SaslServerError, oauthbearer, plain, scram

__all__ = ["SecureBroker", "server_context"]

_ANSWERED = (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.METADATA)


def server_context(cert_path: Any, key_path: Any, *, client_ca: Any = None) -> ssl.SSLContext:
    """A TLS server context; with ``client_ca`` it requires client certificates it signed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert_path), str(key_path))
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(client_ca))
    return context


class SecureBroker:
    """The test broker (see the module docstring).

    Args:
        ssl_context: serve TLS with it (None: plaintext).
        plain_users: PLAIN's users, name -> password.
        scram_users: SCRAM's users, name -> password (both SCRAM mechanisms).
        oauthbearer: accept unsecured JWTs (Kafka's default validator).
        mechanisms: the enabled mechanisms (default: those with users, and OAUTHBEARER if on).
        session_lifetime_ms: KIP-368's session lifetime answered in SaslAuthenticate v1+ (0: none).
    """

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None, plain_users: Mapping[str, str] | None = None,
                 scram_users: Mapping[str, str] | None = None, oauthbearer: bool = False,
                 mechanisms: tuple[str, ...] | None = None, session_lifetime_ms: int = 0) -> None:
        self.ssl_context = ssl_context
        self.plain_users = dict(plain_users or {})
        self._scram = {(m, user): scram.credential(pw, m) for user, pw in (scram_users or {}).items()
                       for m in scram.MECHANISMS}
        if mechanisms is None:
            mechanisms = ((("PLAIN",) if self.plain_users else ()) + (tuple(scram.MECHANISMS) if self._scram else ())
                          + (("OAUTHBEARER",) if oauthbearer else ()))
        self.mechanisms = mechanisms
        self.session_lifetime_ms = session_lifetime_ms
        self.authentications: list[tuple[str, str]] = []  # (mechanism, principal) per success
        self.handshakes = 0  # SaslHandshake requests seen
        self.connections = 0
        self.requests: list[tuple[int, str | None]] = []  # (api key, principal) of answered requests
        self.events: list[str] = []  # "authenticated" and API names, in the order handled
        self.metadata_delay = 0.0  # seconds each Metadata answer waits (a request in flight)
        self.upstream: tuple[str, int] | None = None  # pass authenticated traffic to this broker
        self._upstream_versions: list[Any] | None = None
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="secure-broker", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def sasl(self) -> bool:
        return bool(self.mechanisms)

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> SecureBroker:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]

    def close(self) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()

    # -- one connection -------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        session = _Session(self)
        frames = FrameReader()
        upstream: asyncio.StreamWriter | None = None
        pump: asyncio.Task | None = None
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                frames.receive_data(data)
                while (frame := frames.next_frame()) is not None:
                    if upstream is not None:  # passing through: as it came
                        upstream.write(len(frame).to_bytes(4, "big") + frame)
                        continue
                    header, body = decode_request(frame, strict=False)
                    if header.api_key == ApiKey.API_VERSIONS and self.upstream is not None:
                        await self._learn_upstream_versions()
                    if (self.upstream is not None and session.ready
                            and header.api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE)):
                        up_reader, upstream = await asyncio.open_connection(*self.upstream)
                        pump = asyncio.get_running_loop().create_task(_copy(up_reader, writer))
                        upstream.write(len(frame).to_bytes(4, "big") + frame)
                        continue
                    answer = session.handle(header.api_key, header.api_version, body)
                    if answer is None:  # Kafka closes the connection
                        return
                    if header.api_key == ApiKey.METADATA and self.metadata_delay:
                        await asyncio.sleep(self.metadata_delay)
                    writer.write(encode_response(header.api_key, header.api_version, header.correlation_id, answer))
                    await writer.drain()
        except (OSError, ssl.SSLError, ProtocolError, asyncio.CancelledError):
            pass  # the client's garbage or its going away: Kafka closes the connection too
        finally:
            if pump is not None:
                pump.cancel()
            if upstream is not None:
                upstream.transport.abort()
            writer.transport.abort()
            self._tasks.discard(task)

    async def _learn_upstream_versions(self) -> None:
        if self._upstream_versions is not None:
            return
        assert self.upstream is not None
        reader, writer = await asyncio.open_connection(*self.upstream)
        try:
            writer.write(encode_request(ApiKey.API_VERSIONS, 3, 1, "secure-broker", ApiVersionsRequest(
                client_software_name="secure-broker", client_software_version="1")))
            frames = FrameReader()
            while (frame := frames.next_frame()) is None:
                frames.receive_data(await reader.read(65536))
            _, response = decode_response(ApiKey.API_VERSIONS, 3, frame)
            self._upstream_versions = [k for k in response.api_keys
                                       if k.api_key not in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)]
        finally:
            writer.transport.abort()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, ssl.SSLError):
        pass
    finally:
        writer.transport.abort()


class _Session:
    """One connection's SASL state (Kafka's SaslServerAuthenticator, much simplified)."""

    def __init__(self, broker: SecureBroker) -> None:
        self.broker = broker
        self.principal: str | None = None if broker.sasl else "ANONYMOUS"
        self.mechanism: str | None = None
        self.server: Any = None
        self.expires_at: float | None = None

    @property
    def ready(self) -> bool:
        """Authenticated (or no SASL), and not re-authenticating."""
        return self.principal is not None and self.server is None

    def handle(self, api_key: int, version: int, body: Any) -> Any:
        broker = self.broker
        if api_key == ApiKey.API_VERSIONS:
            keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=APIS[k].versions.lo,
                                                   max_version=APIS[k].versions.hi) for k in _ANSWERED
                    if broker._upstream_versions is None or k in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)]
            return ApiVersionsResponse(error_code=0, api_keys=keys + list(broker._upstream_versions or ()))
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(body.mechanism)
        if api_key == ApiKey.SASL_AUTHENTICATE:
            return self._authenticate(body.auth_bytes, version)
        if not self.ready:
            return None  # a request before SASL completed: Kafka closes the connection
        if self.expires_at is not None and time.monotonic() > self.expires_at:
            return None  # KIP-368: the session expired and was not renewed
        broker.requests.append((api_key, self.principal))
        broker.events.append(APIS[api_key].name)
        if api_key == ApiKey.METADATA:
            topics = [MetadataResponse.MetadataResponseTopic(error_code=3, name=t.name, partitions=[])
                      for t in body.topics or ()]
            return MetadataResponse(
                brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=broker.port)],
                cluster_id="secure-broker", controller_id=0, topics=topics)
        return None

    def _handshake(self, mechanism: str) -> Any:
        broker = self.broker
        broker.handshakes += 1
        if mechanism not in broker.mechanisms:
            return SaslHandshakeResponse(error_code=33, mechanisms=list(broker.mechanisms))
        self.mechanism = mechanism
        if mechanism == "PLAIN":
            self.server = _Plain(broker.plain_users)
        elif mechanism in scram.MECHANISMS:
            self.server = _Scram(scram.ScramServer(mechanism, lambda user: broker._scram.get((mechanism, user))))
        else:
            self.server = oauthbearer.OAuthBearerServer(_validate_unsecured)
        return SaslHandshakeResponse(error_code=0, mechanisms=list(broker.mechanisms))

    def _authenticate(self, message: bytes, version: int) -> Any:
        if self.server is None:
            return SaslAuthenticateResponse(error_code=34, error_message="SaslAuthenticate before SaslHandshake",
                                            auth_bytes=b"")
        try:
            answer = self.server.respond(message)
        except SaslServerError as exc:
            self.server = self.mechanism = None
            return SaslAuthenticateResponse(error_code=58, error_message=exc.client_message(), auth_bytes=b"")
        principal = getattr(self.server, "principal", None)
        lifetime = 0
        if principal is not None:  # complete
            self.broker.authentications.append((self.mechanism or "", principal))
            self.broker.events.append("authenticated")
            self.principal, self.server, self.mechanism = principal, None, None
            lifetime = self.broker.session_lifetime_ms if version >= 1 else 0
            self.expires_at = time.monotonic() + lifetime / 1000 if lifetime else None
        return SaslAuthenticateResponse(error_code=0, auth_bytes=answer, session_lifetime_ms=lifetime)


def _validate_unsecured(token: str) -> str:
    return oauthbearer.validate_unsecured(token, int(time.time() * 1000)).principal


class _Plain:
    def __init__(self, users: Mapping[str, str]) -> None:
        self.users, self.principal = users, None

    def respond(self, message: bytes) -> bytes:
        self.principal = plain.check(message, self.users)
        return b""


class _Scram:
    """ScramServer's two steps as one ``respond``."""

    def __init__(self, server: scram.ScramServer) -> None:
        self.server, self.principal, self._step = server, None, 0

    def respond(self, message: bytes) -> bytes:
        self._step += 1
        if self._step == 1:
            return self.server.first_message(message)
        answer = self.server.final_message(message)
        self.principal = self.server.principal
        return answer

