"""What ``send`` returns and what it calls back: RecordFuture and BatchResult, without a broker
(the accumulator's per-record path, settled by hand as the sender would)."""

import gc
import weakref

from kproto.errors import KafkaTimeoutError
from kproto.producer.accumulator import RecordAccumulator
from kproto.producer.futures import RecordFuture, RecordMetadata
from kproto.producer.partitioner import Partitioner
from kproto.producer.producer import _on_delivery


def accumulator(batch_size=1 << 20):
    return RecordAccumulator(batch_size=batch_size, linger=0.005, buffer_memory=1 << 30, compression=0,
                             compression_level=None, delivery_timeout=120, wake=lambda: None,
                             partitioner=Partitioner(), counts={"t": 2}, register=_on_delivery)


def settle_all(acc, base_offset=100, error=None):
    for queue in list(acc.queues.values()):
        for batch in list(queue):
            acc.take(batch)
            acc.settle(batch, base_offset, error=error)


def test_delivery_callbacks_keep_no_object_per_record_while_the_batch_is_in_flight():
    """Issue 16, item 1: a delivery callback made a closure, two lists and a dict per
    record and kept each record's future alive until the batch settled (about 10 us a
    send with the garbage collector walking them); the batch now keeps the callbacks in
    three columns."""
    acc = accumulator()
    got = []

    def callback(error, metadata):
        got.append((error, metadata))

    acc.send("t", b"warm", partition=0, on_delivery=callback)
    gc.collect()
    before = len(gc.get_objects())
    for i in range(10_000):
        acc.send("t", b"%d" % i, partition=0, on_delivery=callback)
    gc.collect()
    assert len(gc.get_objects()) - before < 500
    settle_all(acc)
    assert len(got) == 10_001
    assert [m.offset for _, m in got] == list(range(100, 10_101))  # in send order, base offset + index


def test_delivery_callbacks_get_the_error_and_one_raising_does_not_stop_the_others(caplog):
    acc = accumulator()
    got = []

    def bad(error, metadata):
        raise ValueError("a user's bug")

    acc.send("t", b"a", partition=1, timestamp_ms=7, on_delivery=lambda e, m: got.append((e, m)))
    acc.send("t", b"b", partition=1, on_delivery=bad)
    acc.send("t", b"c", partition=1, on_delivery=lambda e, m: got.append((e, m)))
    error = KafkaTimeoutError("expired")
    settle_all(acc, -1, error=error)
    assert got == [(error, None), (error, None)]
    assert "exception in a delivery callback" in caplog.text


def test_a_callback_registered_on_a_settled_batch_runs_at_once_with_its_metadata():
    acc = accumulator()
    future = acc.send("t", b"a", partition=0, timestamp_ms=5)
    settle_all(acc, 42)
    got = []
    _on_delivery(future, lambda e, m: got.append((e, m)))  # a send racing the settle does this
    assert got == [(None, RecordMetadata("t", 0, 42, 5))] and future.result(0) == got[0][1]


def test_only_a_future_nobody_can_see_any_more_is_handed_out_again_and_each_resolves_to_its_record():
    """Issue 16, asyncio send on Tansu: the appender hands the last record's future out again
    when its caller dropped it (a loop of sends allocates no future per record). One that
    anyone still holds, refers to weakly, set an attribute on, watches, or gave another
    class is never handed out again, and every future resolves to its own record."""

    class Marked(RecordFuture):
        pass

    acc = accumulator()
    kept = [acc.send("t", b"%d" % i, partition=0, timestamp_ms=1000 + i) for i in range(3)]  # offsets 100-102
    assert len({id(f) for f in kept}) == 3
    noted = acc.send("t", b"noted", partition=0)  # 103
    noted.note = "mine"
    del noted
    after_noted = acc.send("t", b"x", partition=0, timestamp_ms=2000)  # 104
    assert not hasattr(after_noted, "note")
    weakly = acc.send("t", b"weak", partition=0)  # 105
    ref = weakref.ref(weakly)
    del weakly
    after_weak = acc.send("t", b"x", partition=0)  # 106
    assert ref() is not after_weak
    called = []
    watched = acc.send("t", b"watched", partition=0, timestamp_ms=3000)  # 107
    watched.add_done_callback(called.append)
    del watched
    after_watched = acc.send("t", b"x", partition=0)  # 108
    recast = acc.send("t", b"recast", partition=0)  # 109
    recast.__class__ = Marked
    del recast
    after_recast = acc.send("t", b"x", partition=0)  # 110
    assert type(after_recast) is RecordFuture
    for _ in range(5):
        acc.send("t", b"dropped", partition=0)  # 111-115
    last = acc.send("t", b"last", partition=0, timestamp_ms=4000)  # 116
    settle_all(acc)
    assert [f.result() for f in kept] == [RecordMetadata("t", 0, 100 + i, 1000 + i) for i in range(3)]
    assert after_noted.result() == RecordMetadata("t", 0, 104, 2000)
    assert after_weak.result().offset == 106
    assert [f.result() for f in called] == [RecordMetadata("t", 0, 107, 3000)]
    assert after_watched.result().offset == 108
    assert after_recast.result().offset == 110
    assert last.result() == RecordMetadata("t", 0, 116, 4000)
