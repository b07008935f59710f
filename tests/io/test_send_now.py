"""Requests written and answered without the event loop (Connection.send_now / wait_now,
issue 16: a Spark task's Fetch loop), against minibroker on its own thread and through the
fault proxy: answers in order and the loop's own requests after them; a silent broker
times the request out; a cut connection fails it; a throttle holds the connection for the
loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from kproto.errors import KafkaConnectionError, KafkaTimeoutError
from kproto.io import Connection
from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataRequest
from minibroker.faults import Drop
from tests.support.proxy import FORWARD, LOSE_ACK, Edit, FaultProxy


def opened(loop: asyncio.AbstractEventLoop, port: int, **settings) -> Connection:
    conn = Connection("127.0.0.1", port, **settings)
    loop.run_until_complete(conn.open())
    return conn


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_answers_come_in_order_and_the_loop_takes_over_after_them(broker, loop):
    conn = opened(loop, broker.port)
    try:
        futures = [conn.send_now(MetadataRequest(topics=[])) for _ in range(3)]
        assert all(f is not None for f in futures) and conn.in_flight == 3
        # The last one's wait takes in the two answers before it on the way.
        last = conn.wait_now(futures[-1])
        assert all(f.done() for f in futures) and conn.in_flight == 0
        assert last.brokers[0].port == broker.port
        assert [conn.wait_now(f).brokers[0].port for f in futures[:2]] == [broker.port] * 2
        # The same connection through the loop, then without it again: one stream of correlation ids.
        assert loop.run_until_complete(conn.request(MetadataRequest(topics=[]))).brokers[0].port == broker.port
        assert conn.wait_now(conn.send_now(MetadataRequest(topics=[]))).brokers[0].port == broker.port
    finally:
        loop.run_until_complete(conn.close())
    assert conn.send_now(MetadataRequest(topics=[])) is None  # closed: nothing is written


def test_a_silent_broker_times_the_request_out_and_the_connection_closes(broker, loop):
    conn = opened(loop, broker.port)
    silence = broker.requests.control(ApiKey.METADATA, Drop())
    try:
        future = conn.send_now(MetadataRequest(topics=[]))
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="Metadata v.* got no response in 0.3 s"):
            conn.wait_now(future, 0.3)
        assert 0.3 <= time.monotonic() - started < 5
        assert conn.closed and conn.in_flight == 0
    finally:
        silence.remove()
        loop.run_until_complete(conn.close())


def test_a_connection_cut_under_a_request_fails_it(loop):
    def rule(key, version, request, n):
        return LOSE_ACK if key == ApiKey.METADATA else FORWARD

    with FaultProxy(rule) as proxy:
        conn = opened(loop, proxy.port)
        try:
            future = conn.send_now(MetadataRequest(topics=[]))
            with pytest.raises(KafkaConnectionError, match="closed the connection"):
                conn.wait_now(future, 10)
            assert conn.closed and future.done()
        finally:
            loop.run_until_complete(conn.close())


def test_a_throttled_answer_holds_the_connection_for_the_loop(loop):
    """KIP-219: requests after a throttled answer wait until the time is up, which only the
    loop can wait out: send_now declines them, and the loop's request goes out when it ends."""
    throttle_ms = 300

    def rule(key, version, request, n):
        if key == ApiKey.METADATA and n == 1:
            return Edit(lambda body: setattr(body, "throttle_time_ms", throttle_ms) or body)
        return FORWARD

    with FaultProxy(rule) as proxy:
        conn = opened(loop, proxy.port)
        try:
            answered = time.monotonic()
            assert conn.wait_now(conn.send_now(MetadataRequest(topics=[]))).throttle_time_ms == throttle_ms
            assert conn.throttled_until > answered
            assert conn.send_now(MetadataRequest(topics=[])) is None
            loop.run_until_complete(conn.request(MetadataRequest(topics=[])))
            assert time.monotonic() - answered >= throttle_ms / 1000 - 0.05
            assert conn.wait_now(conn.send_now(MetadataRequest(topics=[]))).throttle_time_ms == 0
        finally:
            loop.run_until_complete(conn.close())
