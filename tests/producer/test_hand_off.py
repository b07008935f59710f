"""A sync producer's thread hands the loop to its sender (``Sender.hand_off``) and gets it
back only once what the sender sent is written to the socket (issue 16, the send_batch
stall).

Why it matters: the thread that appends (``send``, ``send_batch``) holds the GIL while it
encodes, so the loop's thread runs only while that thread waits. A megabyte request is
more than a socket takes at once (``send.buffer.bytes`` 128 KiB); if the hand-off ended
as soon as the sender had started its requests, the rest of each would wait for the next
hand-off and the broker would wait for it too (measured, send_batch of 100 B records
handing off after each 1 MB batch: 7.7 M rec/s against 8.5 M once the hand-off waits
for the write).
"""

from kproto import Producer
from kproto.producer import sender as sender_module
from minibroker import MiniBroker


def test_a_hand_off_returns_once_the_requests_it_let_go_are_written(monkeypatch):
    """Issue 16, send_batch stall: three whole 1 MB batches are queued by send_batch
    behind a 16 KiB send buffer, and the thread hands off: when it returns, the requests
    are sent and none of their bytes waits for the socket (before, most of them did)."""
    # the behaviour, not the time bound: a loaded machine must not end the wait early
    monkeypatch.setattr(sender_module, "HAND_OFF_TIMEOUT", 60)
    with MiniBroker() as broker, Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=1_000_000,
                                          linger_ms=60_000, send_buffer_bytes=8192) as producer:
        producer.send("hand-off", b"first", partition=0)
        producer.flush(15)  # connected, topic made
        future = producer.send_batch("hand-off", [b"v" * 100] * 25_000, partition=0)
        producer._core._sender.hand_off()
        connections = list(producer._core._cluster._connections.values())
        assert [c._writer.buffered for c in connections] == [0] * len(connections)
        written = future.result(15)
    assert len(written) == 3 and sum(m.record_count for m in written) == 25_000
    assert [m.error for m in written] == [None] * 3


def test_send_batch_lets_the_sender_write_each_megabyte_while_it_encodes_the_next(monkeypatch):
    """Issue 16, send_batch stall: the calling thread holds the GIL while it encodes, so
    the loop's thread sent nothing until send_batch returned (0 of 34 requests, measured).
    It hands over after each megabyte of batches: when send_batch returns, every batch
    but the last is written (4 of 5 here; max.in.flight 5 leaves room for them)."""
    monkeypatch.setattr(sender_module, "HAND_OFF_TIMEOUT", 60)  # the behaviour, not the time bound
    with MiniBroker() as broker, Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=1_000_000,
                                          linger_ms=60_000) as producer:
        producer.send("encode-while-sending", b"first", partition=0)
        producer.flush(15)
        sent = []
        monkeypatch.setattr(sender_module.Sender, "_request",
                            lambda self, conn, batches, orig=sender_module.Sender._request:
                            (sent.append(len(batches)), orig(self, conn, batches))[1])
        future = producer.send_batch("encode-while-sending", [b"v" * 100] * 45_000, partition=0)
        at_return = len(sent)
        written = future.result(15)
    assert len(written) == 5
    assert at_return >= 4


def test_the_sender_keeps_no_closed_connection_for_its_hand_offs():
    """Issue 16 (the hand-off waits on every connection the sender wrote to): what the
    sender remembers for that keeps no closed connection once a new one is used, so
    reconnects do not pile them up (before: one more per reconnect)."""
    with MiniBroker() as broker, Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for _ in range(3):
            producer.send("reconnects", b"x", partition=0).result(15)
            for conn in list(producer._core._cluster._connections.values()):
                producer._portal.call(conn.close)
        producer.send("reconnects", b"x", partition=0).result(15)
        sent_to = producer._core._sender._sent_to
        assert len(sent_to) == 1 and not any(conn.closed for conn in sent_to)
