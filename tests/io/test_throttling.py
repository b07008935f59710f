"""Quotas (KIP-219): a response with ``throttle_time_ms`` holds its connection, and the
producer keeps its batches back, until the time is up. The throttle is injected by the
fault proxy (tests/support/proxy.py) into minibroker's real responses."""

import asyncio
import time

from kproto import Producer
from kproto.io import Connection
from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataRequest
from tests.support.proxy import FORWARD, Edit, FaultProxy

THROTTLE_MS = 600
EARLY = 0.05  # timers may fire up to a clock tick early; a real hold is ~THROTTLE_MS anyway


def throttled(api_key, number=1):
    """A rule throttling the ``number``-th response of ``api_key``; it notes when each request came."""
    arrivals = []

    def change(body):
        body.throttle_time_ms = THROTTLE_MS
        return body

    def rule(key, version, request, n):
        if key == api_key:
            arrivals.append(time.monotonic())
            if n == number:
                return Edit(change)
        return FORWARD

    rule.arrivals = arrivals
    return rule


def test_a_throttled_connection_holds_later_requests_in_order_and_their_timeout_starts_after():
    rule = throttled(ApiKey.METADATA)

    async def run(bootstrap):
        host, port = bootstrap.split(":")
        conn = Connection(host, int(port), request_timeout_ms=THROTTLE_MS // 2)
        await conn.open()
        try:
            first = await conn.request(MetadataRequest(topics=[]))
            assert first.throttle_time_ms == THROTTLE_MS and conn.throttled_until > time.monotonic()
            answered = time.monotonic()
            # shorter timeouts than the hold: they only count once the requests are written
            later = await asyncio.gather(*(conn.request(MetadataRequest(topics=[])) for _ in range(3)))
            return answered, later
        finally:
            await conn.close()

    with FaultProxy(rule) as proxy:
        answered, later = asyncio.run(run(proxy.bootstrap_servers))
    assert all(r.throttle_time_ms == 0 for r in later)
    assert len(rule.arrivals) == 4
    assert min(rule.arrivals[1:]) - answered >= THROTTLE_MS / 1000 - EARLY


def test_the_producer_sends_nothing_to_a_throttled_broker_until_the_time_is_up():
    rule = throttled(ApiKey.PRODUCE)
    with FaultProxy(rule) as proxy:
        with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=0) as producer:
            first = producer.send("throttled", b"a", partition=0).result(10)
            answered = time.monotonic()
            rest = [producer.send("throttled", b"%d" % i, partition=0) for i in range(50)]
            producer.flush(10)
        offsets = [f.result().offset for f in rest]
    assert first.offset == 0 and offsets == list(range(1, 51))
    assert rule.arrivals[1] - answered >= THROTTLE_MS / 1000 - EARLY
    # held back, the 50 records had time to gather: far fewer requests than records
    assert len(rule.arrivals) <= 3
