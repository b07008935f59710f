"""Connection.send_now: a request written and its answer read on the caller's thread while
the connection's event loop is not running (a Spark task's fetch loop, issue 16), against
minibroker and against small servers on threads (the loop must stay stopped) for failures."""

import asyncio
import contextlib
import socket
import sys
import threading
import time

import pytest

from kproto.errors import KafkaConnectionError, KafkaTimeoutError
from kproto.io import Connection
from kproto.protocol import ApiKey, FrameReader, decode_request, encode_response
from kproto.protocol.messages import MetadataRequest, MetadataResponse
from tests.io.test_connection import versions_answer

# Only where the connection writes with os.writev (plaintext, Python < 3.12: see _Writer);
# elsewhere send_now declines and callers take the loop's way.
pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12), reason="send_now drives os.writev writers only")


@contextlib.contextmanager
def open_connection(port, **settings):
    """A Connection opened on a loop of its own, which then stays stopped; closed at the end."""
    loop = asyncio.new_event_loop()
    conn = Connection("127.0.0.1", port, **settings)
    try:
        loop.run_until_complete(conn.open())
        yield conn, loop
    finally:
        loop.run_until_complete(conn.close())
        loop.close()


@contextlib.contextmanager
def thread_server(after_versions):
    """A server on a thread that answers ApiVersions, then does ``after_versions``
    ("silent": reads and never answers; "close": closes the connection; "wrong id": answers
    under another correlation id) with the next request. Yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve():
        conn, _ = listener.accept()
        frames = FrameReader()
        with conn:
            while not done.is_set():
                data = conn.recv(65536)
                if not data:
                    return
                frames.receive_data(data)
                while (frame := frames.next_frame()) is not None:
                    header, _ = decode_request(frame, strict=False)
                    if header.api_key == ApiKey.API_VERSIONS:
                        answer = versions_answer((ApiKey.API_VERSIONS, 0, 3), (ApiKey.METADATA, 0, 12))
                        conn.sendall(encode_response(header.api_key, header.api_version, header.correlation_id,
                                                     answer))
                    elif after_versions == "close":
                        return
                    elif after_versions == "wrong id":
                        conn.sendall(encode_response(header.api_key, header.api_version, header.correlation_id + 1,
                                                     MetadataResponse()))
            # "silent": wait for the test to end

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        listener.close()
        thread.join(10)


def test_answers_are_read_on_the_callers_thread_in_order_and_the_loop_takes_over_after(broker):
    with open_connection(broker.port) as (conn, loop):
        sent = [conn.send_now(MetadataRequest(topics=[])) for _ in range(3)]
        assert all(s is not None for s in sent) and conn.in_flight == 3
        answers = [s.result() for s in sent]
        assert [a.brokers[0].port for a in answers] == [broker.port] * 3
        assert conn.in_flight == 0
        # The loop's way goes on where the caller's thread left off: same stream, same ids.
        again = loop.run_until_complete(conn.request(MetadataRequest(topics=[])))
        assert again.brokers[0].port == broker.port
        assert conn.send_now(MetadataRequest(topics=[])).result().brokers[0].port == broker.port


def test_a_cancelled_request_is_dropped_when_its_answer_comes(broker):
    with open_connection(broker.port) as (conn, loop):
        first, second = conn.send_now(MetadataRequest(topics=[])), conn.send_now(MetadataRequest(topics=[]))
        first.cancel()
        assert second.result().brokers[0].port == broker.port  # reads past the first answer
        assert conn.in_flight == 0 and not conn.closed
        with pytest.raises(asyncio.CancelledError):
            first.result()


def test_nothing_is_sent_while_the_loop_runs_or_once_closed(broker):
    with open_connection(broker.port) as (conn, loop):
        async def inside():
            return conn.send_now(MetadataRequest(topics=[]))
        assert loop.run_until_complete(inside()) is None  # the loop's reader owns the socket
        assert conn.in_flight == 0
        loop.run_until_complete(conn.close())
        assert conn.send_now(MetadataRequest(topics=[])) is None


def test_a_silent_broker_times_the_request_out_and_closes_the_connection():
    with thread_server("silent") as port, open_connection(port) as (conn, loop):
        sent = conn.send_now(MetadataRequest(topics=[]), timeout=0.3)
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="Metadata v12 .* got no response in 0.3 s"):
            sent.result()
        assert 0.25 <= time.monotonic() - started < 3
        assert conn.closed  # a late answer would be out of step, as with request()
        loop.run_until_complete(asyncio.sleep(0))  # the transport's close callbacks


def test_a_broker_that_closes_fails_the_request():
    with thread_server("close") as port, open_connection(port) as (conn, loop):
        sent = conn.send_now(MetadataRequest(topics=[]), timeout=10)
        with pytest.raises(KafkaConnectionError, match="closed the connection"):
            sent.result()
        assert conn.closed and conn.in_flight == 0
        loop.run_until_complete(asyncio.sleep(0))



def test_an_answer_that_came_in_time_is_taken_when_asked_for_after_the_deadline(broker):
    """Review of issue 16's send_now: a Spark task may hold a batch longer than the next
    Fetch's timeout while its answer waits in the socket; that answer is taken, as the
    loop reads what is ready before its timers fire, not a timeout and a new connection."""
    with open_connection(broker.port) as (conn, loop):
        sent = conn.send_now(MetadataRequest(topics=[]), timeout=0.2)
        time.sleep(0.5)
        assert sent.result().brokers[0].port == broker.port
        assert not conn.closed


def test_a_timeout_longer_than_poll_takes_is_waited_in_several_polls(broker):
    """kafka.request.timeout.ms=2147483647 (Java's "no timeout") plus fetch.max.wait.ms is
    more milliseconds than poll(2) takes (an int): waited in turns, not an OverflowError."""
    with open_connection(broker.port) as (conn, loop):
        assert conn.send_now(MetadataRequest(topics=[]), timeout=2_147_484_147 / 1000).result().brokers


def test_an_answer_under_another_correlation_id_fails_the_request_at_once():
    """The stream is broken: the connection fails every request in flight, the one whose
    answer was expected too (it waited for its timeout before), and result() stops reading."""
    with thread_server("wrong id") as port, open_connection(port) as (conn, loop):
        sent = conn.send_now(MetadataRequest(topics=[]), timeout=30)
        started = time.monotonic()
        with pytest.raises(KafkaConnectionError, match="answered correlation id"):
            sent.result()
        assert time.monotonic() - started < 5 and conn.closed and conn.in_flight == 0
        loop.run_until_complete(asyncio.sleep(0))
    with thread_server("wrong id") as port, open_connection(port) as (conn, loop):
        with pytest.raises(KafkaConnectionError, match="answered correlation id"):
            loop.run_until_complete(asyncio.wait_for(conn.request(MetadataRequest(topics=[]), timeout=30), 5))


def test_result_refuses_while_the_loop_runs(broker):
    with open_connection(broker.port) as (conn, loop):
        sent = conn.send_now(MetadataRequest(topics=[]))

        async def inside():
            with pytest.raises(RuntimeError, match="event loop runs"):
                sent.result()
        loop.run_until_complete(inside())
        assert sent.result().brokers  # (the answer is still there for the caller's thread)
