"""The producer's per-record path in the codec (Appender): both backends apply the one
policy (kproto.producer's SendPolicy and Partitioner) exactly alike, Java's way, and keep
the memory count honest."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto import _codec_py as py
from kproto.codec import murmur2_partition
from kproto.producer.accumulator import SendPolicy
from kproto.producer.partitioner import Partitioner

pytestmark = pytest.mark.codec

cy = pytest.importorskip("kproto._codec", reason="the Cython extension is not built")


def ref(backend):
    """A RecordRef subclass of ``backend`` whose instances compare as (result, index, timestamp)."""
    class Ref(backend.RecordRef):
        def __eq__(self, other):
            return (self._batch, self._index, self._timestamp) == other

        def __getitem__(self, i):
            return (self._batch, self._index, self._timestamp)[i]

    return Ref


def run(backend, ops, *, partitions=3, batch_bytes=300, memory=1 << 30, ignore_keys=False, seed=7):
    """Apply ``ops`` (topic, partition, key, value, headers); what came out, comparably."""
    random.seed(seed)  # the sticky partitioner's choices are random.randrange's
    batches = []
    wakes = []

    def new_batch(topic, partition):
        batch = backend.OpenBatch(backend.BatchBuilder(max_bytes=batch_bytes), (topic, partition, len(batches)))
        batches.append(batch)
        return batch

    appender = backend.Appender(SendPolicy(new_batch, lambda: wakes.append(1), memory,
                                           Partitioner(ignore_keys=ignore_keys), ref(backend), batch_size=batch_bytes))
    futures = []
    for i, (topic, partition, key, value, headers) in enumerate(ops):
        f = appender.append(topic, partition, partitions, 1000 + i, key, value, headers)
        futures.append(None if f is None else (f._batch, f._index, f._timestamp))
        if i % 7 == 6:
            for b in batches:
                b.closed = True  # the sender took everything open
            appender.idle = True
    return futures, [(b.result, b.builder.capacity, b.builder.build(), b.size) for b in batches], appender.used, len(wakes)


ops_strategy = st.lists(st.tuples(
    st.sampled_from(["a", "b"]),
    st.sampled_from([-1, -1, -1, 0, 2]),
    st.none() | st.binary(max_size=12),
    st.none() | st.binary(max_size=80),
    st.none() | st.lists(st.tuples(st.sampled_from(["h", "ü"]), st.none() | st.binary(max_size=5)), max_size=2),
), max_size=60)


@settings(max_examples=150, deadline=None)
@given(ops=ops_strategy, ignore_keys=st.booleans())
def test_both_backends_partition_and_batch_alike(ops, ignore_keys):
    assert run(cy, ops, ignore_keys=ignore_keys) == run(py, ops, ignore_keys=ignore_keys)


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_keys_follow_murmur2_and_keyless_records_stick_until_a_batch_fills(backend):
    keyed = [("t", -1, b"key-%d" % i, b"v", None) for i in range(50)]
    futures, batches, _, _ = run(backend, keyed, partitions=5, batch_bytes=1 << 20)
    assert [f[0][1] for f in futures] == [murmur2_partition(b"key-%d" % i, 5) for i in range(50)]
    keyless = [("t", -1, None, b"x" * 50, None) for _ in range(6)]
    futures, batches, _, _ = run(backend, keyless, partitions=5, batch_bytes=250)  # about 3 records a batch
    chosen = [f[0][1] for f in futures]
    assert chosen[0] == chosen[1] == chosen[2] != chosen[3] == chosen[4] == chosen[5]  # KIP-480: new batch, new partition
    futures, _, _, _ = run(backend, [("t", -1, b"k", b"v", None)] * 3, ignore_keys=True, partitions=5)
    assert len({f[0][1] for f in futures}) == 1


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_a_record_without_room_in_memory_appends_nothing(backend):
    """Issue 16, item 2: memory never goes over buffer.memory; a record that needs a new
    batch is appended only if the batch's capacity (batch.size, here 300) fits in what is
    left. The first batch holds 300 bytes: a second record goes into it, the third needs
    a new batch and waits."""
    futures, batches, used, _ = run(backend, [("t", 0, None, b"x" * 100, None)] * 3, memory=300)
    assert futures[0] is not None and futures[1] is not None and futures[2] is None
    assert len(batches) == 1
    assert used == batches[0][3] == batches[0][1] == 300 >= len(batches[0][2])


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_a_record_that_could_never_fit_in_memory_is_refused(backend):
    """Issue 16, item 2: a record whose bound is over buffer.memory goes to the policy's
    check_size (MessageTooLargeError), not to the waiting path, whatever makes it big."""
    from kproto.errors import MessageTooLargeError

    appender = backend.Appender(SendPolicy(lambda t, p: backend.OpenBatch(backend.BatchBuilder(max_bytes=300), (t, p)),
                                           lambda: None, 300, future_class=ref(backend), counts={"t": 1}))
    for key, value, headers in [(None, b"x" * 250, None), (b"k" * 250, None, None),
                                (None, b"v", [("h" * 200, b"x" * 10)])]:
        with pytest.raises(MessageTooLargeError, match="buffer.memory=300"):
            appender.send("t", value, key, headers=headers)
    assert appender.used == 0
    assert appender.send("t", b"x" * 150) is not None and appender.used <= 300


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_wrong_types_raise_before_anything_is_counted(backend):
    appender = backend.Appender(SendPolicy(lambda t, p: backend.OpenBatch(backend.BatchBuilder(max_bytes=16384), (t, p)),
                                           lambda: None, 1 << 20, future_class=ref(backend)))
    with pytest.raises(TypeError):
        appender.append("t", 0, 1, 0, None, "text", None)
    assert appender.used == 0
    assert not appender.lock.locked()
    with pytest.raises(TypeError, match="RecordRef"):
        backend.Appender(SendPolicy(lambda t, p: None, lambda: None, 1 << 20,
                                    future_class=lambda *a: a))


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_send_is_the_whole_per_record_path(backend):
    from kproto.errors import ClientClosedError, MessageTooLargeError

    waited, registered = [], []
    batches = []

    def new_batch(topic, partition):
        batches.append(backend.OpenBatch(backend.BatchBuilder(), (topic, partition)))
        return batches[-1]

    appender = backend.Appender(SendPolicy(
        new_batch, lambda: None, 1 << 20, Partitioner(lambda key, n, topic: 3), ref(backend),
        counts={"t": 4}, key_serializer=str.encode, value_serializer=lambda v: v * 2, max_request_size=200,
        waiting=lambda *args: waited.append(args) or "waiting", register=lambda f, cb: registered.append(cb)))
    assert appender.send("t", b"v", "k", timestamp_ms=5) == ((("t", 3)), 0, 5)  # chooser, serializers
    assert appender.send("t", b"v", partition=1, headers={"h": b"1"}, on_delivery=print)[0] == ("t", 1)
    assert registered == [print]
    assert appender.send("unknown", b"v") == "waiting" and waited[-1][0] == "unknown"
    appender.hold = True
    assert appender.send("t", b"v") == "waiting"  # behind the waiting ones, in order
    appender.hold = False
    with pytest.raises(ValueError, match="partition 4"):
        appender.send("t", b"v", partition=4)
    with pytest.raises(MessageTooLargeError):
        appender.send("t", b"x" * 100)  # doubled by the serializer: over 200 with the overhead
    assert appender.try_send("unknown", b"v") is None
    appender.closed = True
    with pytest.raises(ClientClosedError):
        appender.send("t", b"v")
    built = batches[1].builder.build()
    (record,) = py.read_batches(built).__next__().records()
    assert record.headers == (("h", b"1"),) and record.value == b"vv"


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_a_partition_beyond_the_topics_is_refused_whoever_chose_it(backend):
    partitioner = Partitioner()
    partitioner.chooser = lambda topic, key, n: 10**9  # a chooser that does not check (the user's ones are checked)
    appender = backend.Appender(SendPolicy(lambda t, p: backend.OpenBatch(backend.BatchBuilder(max_bytes=16384), (t, p)),
                                           lambda: None, 1 << 20, partitioner, ref(backend),
                                           counts={"t": 3}))
    with pytest.raises(ValueError, match=r"partition 1000000000 is not in \[0, 3\)"):
        appender.send("t", b"v")
    with pytest.raises(ValueError, match=r"partition 3 is not in \[0, 3\)"):
        appender.append("t", 3, 3, 0, None, b"v")
    assert appender.used == 0 and not appender.lock.locked()

    class Wrong(Partitioner):  # the policy is the codec's caller's: its answers are checked too
        __slots__ = ()

        def next_sticky(self, topic, previous, partitions):
            return -1

    appender = backend.Appender(SendPolicy(lambda t, p: backend.OpenBatch(backend.BatchBuilder(max_bytes=16384), (t, p)),
                                           lambda: None, 1 << 20, Wrong(), ref(backend),
                                           counts={"t": 3}))
    with pytest.raises(ValueError, match=r"partition -1 is not in \[0, 3\)"):
        appender.send("t", b"v")
    assert appender.used == 0 and not appender.lock.locked()


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_the_sticky_choice_is_the_partitioners_asked_per_batch_not_per_record(backend):
    """Issue 12, "One owner": the codec applies the producer's Partitioner; it asks it once
    for the topic's first sticky partition and once per full batch (KIP-480), and follows
    what it answers."""
    asked = []

    class Counting(Partitioner):
        __slots__ = ()

        def stick(self, topic, partitions):
            asked.append(("stick", topic))
            return super().stick(topic, partitions)

        def next_sticky(self, topic, previous, partitions):
            asked.append(("next", topic))
            self.sticky[topic] = (previous + 1) % partitions  # not random: the codec must follow it
            return self.sticky[topic]

    batches = []

    def new_batch(topic, partition):
        batches.append(backend.OpenBatch(backend.BatchBuilder(max_bytes=250), (topic, partition)))
        return batches[-1]

    random.seed(3)
    appender = backend.Appender(SendPolicy(new_batch, lambda: None, 1 << 20, Counting(),
                                           ref(backend), counts={"t": 5}))
    futures = [appender.send("t", b"x" * 50, timestamp_ms=0) for _ in range(10)]  # 3 records a batch
    assert [b.builder.record_count for b in batches] == [3, 3, 3, 1]
    assert asked == [("stick", "t")] + [("next", "t")] * 4  # once per new batch (the first one's too)
    first = batches[0].result[1]
    assert [b.result[1] for b in batches] == [(first + i) % 5 for i in range(4)]
    assert [f[0] for f in futures] == [b.result for b in batches for _ in range(b.builder.record_count)]


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_runs_of_sends_switching_topics_land_in_their_topics_batches(backend):
    """issue 16 (asyncio send): the Appender keeps the last topic's open batches at hand; a
    switch of topic, or an equal topic string that is another object, still finds its own."""
    a, b = "topic-a", "topic-b"
    other_a = "".join(["topic-", "a"])  # equal to a, not the same object
    assert other_a == a and other_a is not a
    topics = [a, a, b, other_a, b, b, a]  # seven: run() closes every batch after the seventh
    ops = [(topic, 0, None, b"v%d" % i, None) for i, topic in enumerate(topics)]
    futures, batches, _, _ = run(backend, ops, partitions=1, batch_bytes=1 << 20)
    assert [f[0][0] for f in futures] == topics
    assert [f[1] for f in futures] == [0, 1, 0, 2, 1, 2, 3]  # each topic's one batch, in order
    assert len(batches) == 2


@pytest.mark.parametrize("backend", [cy, py], ids=["cython", "python"])
def test_an_owner_thread_appends_without_the_lock_and_other_threads_are_refused(backend):
    """Issue 16, asyncio send: with ``owner_thread`` set (an asyncio producer's loop thread)
    the per-record path takes no lock, so it appends even while the lock is held (by its own
    thread: nothing else may use the appender then), and a record from any other thread is
    refused with ``policy.thread_error()``, nothing appended. Without one, it locks as before."""
    import threading

    appender = backend.Appender(SendPolicy(lambda t, p: backend.OpenBatch(backend.BatchBuilder(max_bytes=16384), (t, p)),
                                           lambda: None, 1 << 20, Partitioner(), ref(backend), counts={"t": 1}))
    assert appender.owner_thread == 0
    appender.owner_thread = threading.get_ident()
    with appender.lock:  # a locking path would wait for itself here, for ever
        first = appender.send("t", b"v", partition=0)
    assert first == (("t", 0), 0, first._timestamp)
    refused = []

    def elsewhere():
        try:
            appender.send("t", b"w", partition=0)
        except RuntimeError as exc:
            refused.append(str(exc))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert refused and "thread-safe Producer" in refused[0]
    assert appender.send("t", b"x", partition=0)._index == 1  # nothing was appended from the other thread
    appender.owner_thread = 0
    assert appender.send("t", b"y", partition=0)._index == 2 and not appender.lock.locked()


@pytest.mark.parametrize("backend", [py, cy], ids=["python", "cython"])
def test_a_future_class_with_slots_or_its_own_new_gets_a_fresh_future_per_record(backend):
    """Issue 16 (review): the Cython appender hands a dropped future out again only when a
    fresh one would be no different. A ``future_class`` with slots (whose values it cannot
    see) or its own ``__new__`` (which runs per future) gets a new one per record, as in
    the twin: the next record's future did carry the last one's slot value, and
    ``__new__`` ran once for five sends."""
    made = []

    class Tagged(backend.RecordRef):
        __slots__ = ("tag",)

    class Counted(backend.RecordRef):
        def __new__(cls, *args):
            made.append(cls)
            return super().__new__(cls)

    def appender(future_class):
        return backend.Appender(SendPolicy(
            lambda t, p: backend.OpenBatch(backend.BatchBuilder(max_bytes=16384), (t, p)),
            lambda: None, 1 << 20, future_class=future_class, counts={"t": 1}))

    tagged = appender(Tagged)
    first = tagged.send("t", b"a", partition=0)
    first.tag = "record a's tag"
    del first
    assert not hasattr(tagged.send("t", b"b", partition=0), "tag")
    counted = appender(Counted)
    for _ in range(5):
        counted.send("t", b"b", partition=0)
    assert len(made) == 5
