"""kproto.io: one connection (negotiation, pipelining, failures) and the cluster view,
against minibroker and against small scripted servers for the failure cases."""

import asyncio
import socket
import threading
import time

import pytest

from kproto.config import ClientConfig
from kproto.errors import (
    ClientClosedError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailableError,
    UnsupportedVersionError,
)
from kproto.io import Cluster, Connection, parse_bootstrap_servers
from kproto.protocol import ApiKey, FrameReader, decode_request, encode_response
from kproto.protocol.messages import ApiVersionsResponse, FetchRequest, MetadataRequest
from minibroker import MiniBroker


class ScriptedBroker:
    """A TCP server on 127.0.0.1 that answers each request with ``script(header, request)``:
    a response body, ``(body, correlation_id)`` to answer under another id, None for
    silence, or "close" to drop the connection."""

    def __init__(self, script):
        self.script = script
        self.seen = []  # (api_key, api_version) of every request

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader, writer):
        frames = FrameReader()
        try:
            while data := await reader.read(65536):
                frames.receive_data(data)
                while (frame := frames.next_frame()) is not None:
                    header, request = decode_request(frame, strict=False)
                    self.seen.append((header.api_key, header.api_version))
                    answer = self.script(header, request)
                    if answer == "close":
                        return
                    if answer is not None:
                        answer, correlation_id = answer if type(answer) is tuple else (answer, header.correlation_id)
                        writer.write(encode_response(header.api_key, header.api_version, correlation_id, answer))
        finally:
            writer.close()


def versions_answer(*keys, error_code=0):
    return ApiVersionsResponse(error_code=error_code, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in keys])


def only_api_versions(header, request):
    if header.api_key == ApiKey.API_VERSIONS:
        return versions_answer((ApiKey.API_VERSIONS, 0, 3), (ApiKey.METADATA, 0, 12))
    return None  # silence


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- against minibroker ----------------------------------------------------------------------

def test_negotiates_the_highest_shared_version_and_pipelines(broker):
    async def run():
        conn = Connection("127.0.0.1", broker.port, client_id="t")
        await conn.open()
        try:
            assert conn.api_versions[ApiKey.METADATA][1] >= 12
            assert conn.version_for(ApiKey.METADATA, max_version=9) == 9
            with pytest.raises(UnsupportedVersionError, match="Metadata"):
                conn.version_for(ApiKey.METADATA, min_version=99)
            requests = [conn.request(MetadataRequest(topics=[]), max_version=12) for _ in range(200)]
            await asyncio.sleep(0)
            responses = await asyncio.gather(*requests)
            assert all(r.brokers[0].port == broker.port for r in responses)
            assert conn.in_flight == 0
        finally:
            await conn.close()
        assert conn.closed
        with pytest.raises(ClientClosedError):
            await conn.request(MetadataRequest(topics=[]))
    asyncio.run(run())


def test_cluster_bootstraps_past_dead_servers_and_finds_leaders(broker):
    async def run():
        servers = f"127.0.0.1:{free_port()},{broker.bootstrap_servers}"
        cluster = Cluster(ClientConfig("admin", bootstrap_servers=servers, reconnect_backoff_ms=1),
                          allow_auto_topic_creation=True)
        try:
            cluster.want(["wanted"])
            await asyncio.gather(cluster.refresh(["a"]), cluster.refresh(["a"]))
            assert set(cluster.topics) >= {"a", "wanted"} and cluster.partitions_for("a") == 1
            assert cluster.leader("a", 0) == 0 and cluster.leader("a", 5) == -1 and cluster.leader("nope", 0) == -1
            assert (await cluster.connection(0)).port == broker.port
        finally:
            await cluster.close()
        with pytest.raises(ClientClosedError):
            await cluster.refresh()
    asyncio.run(run())


def test_idle_connections_close_and_the_cluster_opens_a_new_one(broker):
    """connections.max.idle.ms: quiet connections close; one waiting on a request does not."""
    async def run():
        cluster = Cluster(ClientConfig("admin", bootstrap_servers=broker.bootstrap_servers,
                                       connections_max_idle_ms=200), allow_auto_topic_creation=True)
        try:
            await cluster.refresh(["idle"])
            first = await cluster.connection(0)
            # a request outliving the idle time keeps its connection open
            await first.request(FetchRequest(max_wait_ms=500, min_bytes=1, topics=[
                FetchRequest.FetchTopic(topic="idle", partitions=[FetchRequest.FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=1024)])]), max_version=12)
            assert not first.closed
            deadline = asyncio.get_running_loop().time() + 5
            while not first.closed and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.02)
            assert first.closed
            again = await cluster.connection(0)
            assert again is not first and not again.closed
            await again.request(MetadataRequest(topics=[]))
        finally:
            await cluster.close()
    asyncio.run(run())


def test_reconnects_back_off_doubling_up_to_the_maximum():
    """reconnect.backoff.ms doubles per failure up to reconnect.backoff.max.ms (20 % jitter)."""
    attempts = []
    door = socket.create_server(("127.0.0.1", 0))  # the advertised broker: accepts, then hangs up
    door.settimeout(0.05)

    def accept_and_hang_up():
        while not stop.is_set():
            try:
                conn, _ = door.accept()
            except OSError:
                continue
            attempts.append(time.monotonic())
            conn.close()

    stop = threading.Event()
    doorman = threading.Thread(target=accept_and_hang_up)
    doorman.start()

    async def run(bootstrap):
        cluster = Cluster(ClientConfig("admin", bootstrap_servers=bootstrap, reconnect_backoff_ms=50,
                                       reconnect_backoff_max_ms=400))
        try:
            await cluster.refresh()
            for _ in range(7):
                with pytest.raises(KafkaConnectionError):
                    await cluster.connection(0)
        finally:
            await cluster.close()

    try:
        with MiniBroker(advertised_port=door.getsockname()[1]) as b:
            asyncio.run(run(f"127.0.0.1:{b.port}"))
    finally:
        stop.set()
        doorman.join()
        door.close()
    gaps = [later - earlier for earlier, later in zip(attempts, attempts[1:])]
    assert len(gaps) == 6
    for gap, base in zip(gaps, (0.05, 0.1, 0.2, 0.4, 0.4, 0.4)):
        assert base * 0.8 - 0.01 <= gap <= base * 1.2 + 0.3, gaps  # sleeps are never short; the machine may be slow


def test_socket_settings_reach_the_socket(broker):
    """TCP_NODELAY always; send.buffer.bytes / receive.buffer.bytes when set (-1: the OS's)."""
    async def run():
        conn = Connection("127.0.0.1", broker.port, send_buffer_bytes=100_000, receive_buffer_bytes=90_000)
        await conn.open()
        try:
            sock = conn._writer.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 100_000  # Linux doubles what it is given
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 90_000
        finally:
            await conn.close()
    asyncio.run(run())


def test_no_reachable_bootstrap_server_is_a_clear_error():
    async def run():
        cluster = Cluster(ClientConfig("admin", bootstrap_servers=f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"))
        try:
            with pytest.raises(NoBrokersAvailableError, match="could be reached"):
                await cluster.refresh()
        finally:
            await cluster.close()
    asyncio.run(run())


@pytest.mark.parametrize("text, parsed", [
    ("a:1,b:2", [("a", 1), ("b", 2)]),
    (" a:1 , ", [("a", 1)]),
    ("host", [("host", 9092)]),
    ("[::1]:9093,[fe80::1]", [("::1", 9093), ("fe80::1", 9092)]),
])
def test_parse_bootstrap_servers(text, parsed):
    assert parse_bootstrap_servers(text) == parsed


@pytest.mark.parametrize("text", ["", "a:0", "a:x", ":9092"])
def test_parse_bootstrap_servers_rejects(text):
    with pytest.raises(ValueError):
        parse_bootstrap_servers(text)


# -- failures, against scripted servers ------------------------------------------------------

def test_connection_refused_is_a_connection_error():
    async def run():
        with pytest.raises(KafkaConnectionError, match="cannot connect"):
            await Connection("127.0.0.1", free_port()).open()
    asyncio.run(run())


def test_a_silent_server_times_out_open_and_requests():
    async def run():
        async with ScriptedBroker(lambda h, r: None) as server:
            conn = Connection("127.0.0.1", server.port, connect_timeout_ms=200)
            with pytest.raises(KafkaTimeoutError, match="ApiVersions"):
                await conn.open()
            assert conn.closed
        async with ScriptedBroker(only_api_versions) as server:
            conn = Connection("127.0.0.1", server.port, request_timeout_ms=200)
            await conn.open()
            with pytest.raises(KafkaTimeoutError, match="Metadata"):
                await conn.request(MetadataRequest(topics=[]))
            assert conn.closed  # a late answer would be out of step: the connection is dropped
    asyncio.run(run())


def test_a_dropped_connection_fails_every_request_in_flight():
    def script(header, request):
        if header.api_key == ApiKey.API_VERSIONS:
            return only_api_versions(header, request)
        return "close" if len(server.seen) == 4 else None

    async def run():
        nonlocal server
        async with ScriptedBroker(script) as server:
            conn = Connection("127.0.0.1", server.port)
            await conn.open()
            results = await asyncio.gather(*(conn.request(MetadataRequest(topics=[])) for _ in range(3)),
                                           return_exceptions=True)
            assert all(isinstance(r, KafkaConnectionError) for r in results), results
            assert conn.closed and conn.in_flight == 0
    server = None
    asyncio.run(run())


def test_an_answer_under_another_correlation_id_fails_every_request_at_once():
    """The stream is broken: every request in flight fails with the connection, the one
    whose answer was expected too (it was taken off the queue, then waited out its timeout)."""
    from kproto.protocol.messages import MetadataResponse

    def script(header, request):
        if header.api_key == ApiKey.API_VERSIONS:
            return only_api_versions(header, request)
        return MetadataResponse(), header.correlation_id + 1

    async def run():
        async with ScriptedBroker(script) as server:
            conn = Connection("127.0.0.1", server.port, request_timeout_ms=30_000)
            await conn.open()
            started = time.monotonic()
            results = await asyncio.gather(*(conn.request(MetadataRequest(topics=[])) for _ in range(2)),
                                           return_exceptions=True)
            assert all(isinstance(r, KafkaConnectionError) and "answered correlation id" in str(r)
                       for r in results), results
            assert time.monotonic() - started < 5 and conn.closed and conn.in_flight == 0
    asyncio.run(run())


def test_api_versions_falls_back_as_kip_511_says():
    def script(header, request):
        if header.api_key == ApiKey.API_VERSIONS and header.api_version > 2:
            return versions_answer((ApiKey.API_VERSIONS, 0, 2), error_code=UnsupportedVersionError.code)
        return versions_answer((ApiKey.API_VERSIONS, 0, 2), (ApiKey.METADATA, 0, 4))

    async def run():
        async with ScriptedBroker(script) as server:
            conn = Connection("127.0.0.1", server.port)
            await conn.open()
            try:
                assert [v for _, v in server.seen] == [3, 2]
                assert conn.version_for(ApiKey.METADATA) == 4
                with pytest.raises(UnsupportedVersionError):
                    conn.version_for(ApiKey.PRODUCE)  # the broker offers none
            finally:
                await conn.close()
    asyncio.run(run())


def test_a_cancel_that_arrives_with_the_answer_still_cancels():
    """Issue 13, step 2 (a MiniCluster broker process hung in its controlled stop): a task
    waiting on a request and cancelled in the very loop turn its answer arrives must end
    cancelled. ``asyncio.wait_for`` before Python 3.12 returns the result instead and drops
    the cancellation (CPython gh-86296), so a loop of requests (a heartbeat) never ended."""
    from kproto.protocol.messages import MetadataResponse

    def script(header, request):
        if header.api_key == ApiKey.API_VERSIONS:
            return versions_answer((ApiKey.API_VERSIONS, 0, 3), (ApiKey.METADATA, 0, 12))
        return MetadataResponse()

    async def run():
        async with ScriptedBroker(script) as server:
            conn = Connection("127.0.0.1", server.port)
            await conn.open()
            try:
                task = asyncio.create_task(conn.request(MetadataRequest(topics=[])))
                while not conn.in_flight:
                    await asyncio.sleep(0)
                # The answer's future resolves; the cancel comes in the same turn (white box:
                # the only way to hit that turn without a race).
                conn._pending[0][3].add_done_callback(lambda _: task.cancel())
                with pytest.raises(asyncio.CancelledError):
                    await task
            finally:
                await conn.close()

    asyncio.run(run())
