"""The sync Consumer's records drained ahead (issue 16, sync poll): one trip to the loop
thread drains a few polls' worth, later polls hand them out in the calling thread. What
poll returns, where positions stand, what is committed, and what seek, pause, assign and
poll_arrow see must be what they were without the read-ahead."""

import random
import threading
import time

import pytest

from kproto.consumer import Consumer
from kproto.structs import TopicPartition
from tests.consumer.conftest import DEADLINE
from tests.consumer.test_consumer import create
from tests.consumer.test_group import member, minibroker_config, poll_until  # noqa: F401 (a fixture)
from tests.consumer.test_poll_path import buffered


@pytest.fixture
def filled(broker, producer):
    """A topic of ``count`` records per partition, value ``p<partition>-<offset>``."""
    def fill(topic, count=40, partitions=1):
        create(broker, topic, partitions)
        for p in range(partitions):
            for i in range(count):
                producer.produce(topic, b"p%d-%d" % (p, i), partition=p)
        assert producer.flush(DEADLINE) == 0
        return [TopicPartition(topic, p) for p in range(partitions)]
    return fill


def trips(consumer):
    """Count the consumer's quick trips to the loop thread (Portal.call_plain)."""
    portal = consumer._portal
    count = [0]
    plain = portal.call_plain

    def counted(*args, **kwargs):
        count[0] += 1
        return plain(*args, **kwargs)
    portal.call_plain = counted
    return count


def polled_with_records_ahead(c, tps):
    """Assign ``tps`` and poll until records of them are drained ahead (the case under
    test): the records the polls returned."""
    c.assign(tps)
    got = c.poll(DEADLINE)
    for tp in tps:
        buffered(c, tp, 1)
    got += c.poll(DEADLINE) + c.poll(DEADLINE)
    assert c._core._ahead is not None and c._core._unconsumed()
    return got


def offsets(records):
    return [(r.partition, r.offset) for r in records]


def sync_consumer(broker, **config):
    return Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                    fetch_max_wait_ms=100, **config)


def test_polls_after_one_trip_hand_out_records_drained_ahead_without_another(broker, filled):
    """issue 16 (sync poll): a poll that goes to the loop for buffered records drains up to
    eight polls' worth; the next polls return them from the calling thread, max.poll.records
    at a time, in order, each moving the position past what it returned (before: a trip
    to the loop thread per poll, whose cost was twice the decoding it fetched)."""
    [tp] = filled("ahead-trips")
    with sync_consumer(broker, max_poll_records=5) as c:
        c.assign([tp])
        got = c.poll(DEADLINE)
        buffered(c, tp, 40 - len(got))
        count = trips(c)
        polls = 0
        while len(got) < 40:
            records = c.poll(DEADLINE)
            assert 0 < len(records) <= 5
            got += records
            polls += 1
            assert c.position(tp) == got[-1].offset + 1
        assert [r.value for r in got] == [b"p0-%d" % i for i in range(40)]
        assert polls >= 7 and count[0] <= -(-polls // 8) + 1, (polls, count[0])


def test_records_drained_ahead_are_not_consumed_for_position_and_commits(broker, filled):
    """issue 16 (sync poll): while records are drained ahead, position() is the offset of the
    next record poll returns, and commit() and the commit of close (auto-commit) commit
    what polls returned, not what was drained: a consumer of the group after the close
    starts right after the last record returned."""
    [tp] = filled("ahead-commit")
    with sync_consumer(broker, group_id="ahead-commit", max_poll_records=4) as c:
        c.assign([tp])
        got = c.poll(DEADLINE)
        buffered(c, tp, 40 - len(got))
        got += c.poll(DEADLINE)  # a trip that drains ahead
        got += c.poll(DEADLINE)  # one from what was drained ahead
        assert c._core._ahead is not None and c._core._unconsumed()  # the case under test
        assert c.position(tp) == len(got) == got[-1].offset + 1
        c.commit()
        assert c.committed([tp])[tp].offset == len(got)
        got += c.poll(DEADLINE)
        returned = len(got)
    with sync_consumer(broker, group_id="ahead-commit", max_poll_records=100) as again:
        again.assign([tp])
        rest = again.poll(DEADLINE)
    assert rest[0].offset == returned
    assert [r.offset for r in got + rest] == list(range(40))


def test_commit_callbacks_run_in_the_polling_thread_without_dropping_records_drained_ahead(broker, filled):
    """issue 16 (sync poll): poll then commit_async(callback) at every poll, a common loop: the
    callbacks run in the polling thread at the next polls (as Java's), and the records
    drained ahead stay (no seek back and fetch again per commit); a callback that seeks
    is obeyed by the polls after it."""
    [tp] = filled("ahead-callbacks", count=60)
    ran = []
    sought_back = []  # records drained ahead polled again, but by the callback's seek
    seeking = [False]
    with sync_consumer(broker, group_id="ahead-callbacks", enable_auto_commit=False, max_poll_records=3) as c:
        seek_back = c._core._seek_back
        c._core._seek_back = lambda first: (sought_back.append(dict(first)) if first and not seeking[0] else None,
                                            seek_back(first))

        def callback(offsets, error):
            ran.append((threading.current_thread(), error))
            if len(ran) == 8:
                seeking[0] = True
                c.seek(tp, 50)
                seeking[0] = False

        c.assign([tp])
        got = [r.offset for r in c.poll(DEADLINE)]
        buffered(c, tp, 60 - len(got))
        deadline = time.monotonic() + DEADLINE
        while not got or got[-1] < 59:
            assert time.monotonic() < deadline
            records = c.poll(0.2)
            got += [r.offset for r in records]
            if records:
                c.commit_async(callback=callback)
                while not c._core._commit_results:  # answered: its callback is due at the next poll
                    assert time.monotonic() < deadline
                    time.sleep(0.001)
        assert len(ran) >= 8 and {t for t, _ in ran} == {threading.current_thread()}
        assert {e for _, e in ran} == {None}
        cut = got.index(50)
        assert got[:cut] == list(range(cut)) and got[cut:] == list(range(50, 60))
        assert not sought_back


def test_a_close_from_another_thread_ends_iteration_before_the_records_drained_ahead(broker, filled):
    """issue 16 (sync poll): ``for record in consumer`` closed from another thread ends once
    the batch being yielded is done; the records drained ahead, which the close counted as
    not consumed, are not handed out after it."""
    [tp] = filled("ahead-close", count=100)
    c = sync_consumer(broker, max_poll_records=5)
    try:
        c.assign([tp])
        got = [r.offset for r in c.poll(DEADLINE)]
        buffered(c, tp, 100 - len(got))
        after = []
        for record in c:
            if not c._core._closed and got[-1] == 12:  # here, with records drained ahead
                assert c._core._ahead is not None and c._core._unconsumed()
                closing = threading.Thread(target=c.close)
                closing.start()
                closing.join()
            (after if c._core._closed else got).append(record.offset)
        assert got == list(range(13)) and after == list(range(13, 13 + len(after)))
        assert len(after) < 5, after
    finally:
        c.close()


def test_seek_and_pause_act_on_the_positions_polls_returned(broker, filled):
    """issue 16 (sync poll): a seek while records are drained ahead starts that partition at
    the offset sought, with the other partition going on where its polls stopped; a paused
    partition's records drained ahead are not returned until resume, and then none is
    lost or returned twice."""
    tp0, tp1 = filled("ahead-seek", partitions=2)
    with sync_consumer(broker, max_poll_records=3) as c:
        got = polled_with_records_ahead(c, [tp0, tp1])
        seen = {0: [r.offset for r in got if r.partition == 0], 1: [r.offset for r in got if r.partition == 1]}
        c.seek(tp0, 30)
        c.pause([tp1])
        after = []
        deadline = time.monotonic() + DEADLINE
        while len(after) < 10:
            assert time.monotonic() < deadline
            after += c.poll(0.2)
        assert offsets(after) == [(0, i) for i in range(30, 40)]
        assert c.position(tp1) == (seen[1][-1] + 1 if seen[1] else 0)
        c.resume([tp1])
        rest = []
        while len(rest) < 40 - len(seen[1]):
            assert time.monotonic() < deadline
            rest += c.poll(0.2)
        assert seen[1] + [r.offset for r in rest] == list(range(40))
        assert {r.partition for r in rest} == {1}


def test_assign_drops_records_drained_ahead_of_partitions_given_up(broker, filled):
    """issue 16 (sync poll): after assign() no poll returns records of a partition no longer
    assigned, though some were drained ahead; a partition kept goes on where its polls
    stopped."""
    tp0, tp1 = filled("ahead-assign", partitions=2)
    with sync_consumer(broker, max_poll_records=3) as c:
        got = polled_with_records_ahead(c, [tp0, tp1])
        kept = [r.offset for r in got if r.partition == 1]
        c.assign([tp1])
        rest = []
        deadline = time.monotonic() + DEADLINE
        while len(kept) + len(rest) < 40:
            assert time.monotonic() < deadline
            rest += c.poll(0.2)
        assert {r.partition for r in rest} == {1}
        assert kept + [r.offset for r in rest] == list(range(40))


def test_poll_arrow_and_iteration_after_sync_polls_start_where_polls_stopped(broker, filled):
    """issue 16 (sync poll): poll_arrow, and iteration left early, after polls whose trip
    drained records ahead: each record comes exactly once, in order."""
    pytest.importorskip("pyarrow")
    [tp] = filled("ahead-mixed", count=60)
    with sync_consumer(broker, max_poll_records=4) as c:
        c.assign([tp])
        got = [r.offset for r in c.poll(DEADLINE)]
        buffered(c, tp, 60 - len(got))
        got += [r.offset for r in c.poll(DEADLINE) + c.poll(DEADLINE)]
        assert c._core._ahead is not None and c._core._unconsumed()
        got += c.poll_arrow(DEADLINE, max_records=5).column("offset").to_pylist()
        got += [r.offset for r in c.poll(DEADLINE) + c.poll(DEADLINE)]
        for record in c:  # left early, part way through a batch
            got.append(record.offset)
            if len(got) % 4 == 2:
                break
        deadline = time.monotonic() + DEADLINE
        while len(got) < 60:
            assert time.monotonic() < deadline
            got += [r.offset for r in c.poll(0.2)]
        assert got == list(range(60))


def test_many_polls_racing_fetches_seeks_and_pauses_lose_and_repeat_nothing(broker, producer):
    """issue 16 (sync poll): polls of random sizes, seeks and pauses made while the loop thread
    fetches (and a producer keeps writing): every poll returns each partition's records in
    order from where the last poll or seek left it, and the records are those a peer client
    (confluent-kafka) reads from the same offsets."""
    ck = pytest.importorskip("confluent_kafka")
    topic, partitions, count = "ahead-race", 3, 1500
    create(broker, topic, partitions)
    tps = [TopicPartition(topic, p) for p in range(partitions)]

    def write(start, stop):
        for i in range(start, stop):
            for p in range(partitions):
                producer.produce(topic, b"%d-%d" % (p, i), partition=p)
            if i % 100 == 0:
                producer.poll(0)
        assert producer.flush(DEADLINE) == 0

    write(0, count // 2)
    writer = threading.Thread(target=write, args=(count // 2, count))
    rng = random.Random(16)
    expected = {p: 0 for p in range(partitions)}  # the offset each partition's next record must have
    got = {p: {} for p in range(partitions)}
    with sync_consumer(broker, max_poll_records=50) as c:
        c.assign(tps)
        writer.start()
        paused: set[int] = set()
        deadline = time.monotonic() + 4 * DEADLINE
        while any(expected[p] < count for p in range(partitions)) or paused:
            assert time.monotonic() < deadline, expected
            roll = rng.random()
            if roll < 0.08:  # a little way back: the records sought come again
                p = rng.randrange(partitions)
                to = rng.randrange(max(expected[p] - 30, 0), expected[p] + 1)
                c.seek(tps[p], to)
                expected[p] = to
            elif roll < 0.16 and not paused:
                paused = {rng.randrange(partitions)}
                c.pause([tps[p] for p in paused])
            elif roll < 0.28 and paused:
                c.resume([tps[p] for p in paused])
                paused = set()
            for r in c.poll(0.2, max_records=rng.choice([None, 1, 7, 50])):
                assert r.partition not in paused
                assert r.offset == expected[r.partition], (r.partition, r.offset, expected)
                expected[r.partition] = r.offset + 1
                got[r.partition][r.offset] = r.value
            for p in range(partitions):
                assert c.position(tps[p]) == expected[p]
    writer.join()
    peer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ahead-race-peer",
                        "enable.auto.commit": False})
    try:
        peer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        theirs = {p: {} for p in range(partitions)}
        deadline = time.monotonic() + DEADLINE
        while sum(map(len, theirs.values())) < partitions * count:
            assert time.monotonic() < deadline
            for m in peer.consume(1000, 0.5):
                assert m.error() is None
                theirs[m.partition()][m.offset()] = m.value()
    finally:
        peer.close()
    assert got == theirs


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_a_rebalance_while_records_are_drained_ahead_hands_over_exactly_where_polls_stopped(
        broker, producer, strategy):
    """issue 16 (sync poll): a second member joins while the first has records drained ahead:
    the first's rebalance (in its poll, callbacks in its thread) commits what its polls
    returned, not what was drained, and returns nothing of a partition once revoked; the
    members together get every record once."""
    topic, group = f"ahead-rebalance-{strategy}", f"ahead-rebalance-g-{strategy}"
    create(broker, topic, 4)
    for p in range(4):
        for i in range(300):
            producer.produce(topic, b"%d-%d" % (p, i), partition=p)
    assert producer.flush(DEADLINE) == 0
    config = {"max_poll_records": 5, "partition_assignment_strategy": strategy}
    revoked: set = set()
    late = []  # records of a partition returned after its revocation

    def on_revoke(consumer, partitions):
        revoked.update(partitions)

    got: dict = {}
    a = member(broker, group, **config)
    b = member(broker, group, **config)
    try:
        a.subscribe([topic], on_revoke=on_revoke,
                    on_assign=lambda consumer, partitions: revoked.difference_update(partitions))
        poll_until([a], lambda: a._core._ahead is not None and bool(a._core._unconsumed()), got=got)
        b.subscribe([topic])
        deadline = time.monotonic() + DEADLINE
        while sum(map(len, got.values())) < 1200:
            assert time.monotonic() < deadline, "timed out"
            for c in (a, b):
                for r in c.poll(0.02):
                    if c is a and TopicPartition(topic, r.partition) in revoked:
                        late.append(r)
                    got.setdefault(c, []).append((r.partition, r.offset))
        assert got.get(b), "the second member got nothing"
    finally:
        a.close()
        b.close()
    assert not late
    assert sorted(r for rs in got.values() for r in rs) == [(p, i) for p in range(4) for i in range(300)]


# -- the hand-out: records drained ahead stay not consumed until a poll returns them -----

def committed(broker, group, tp):
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, enable_auto_commit=False) as c:
        return c.committed([tp])[tp]


def test_ctrl_c_while_a_poll_hands_out_records_drained_ahead_loses_none(broker, filled):
    """issue 16, item 1 (a): a KeyboardInterrupt while a poll hands out records drained ahead
    (here raised by the metrics of the hand-out, once) loses nothing: the next poll returns
    them, and the commit of close (auto-commit) commits only what polls returned (before:
    those records were taken from the read-ahead and lost; close committed past them)."""
    [tp] = filled("handout-ctrl-c", count=100)
    c = sync_consumer(broker, group_id="handout-ctrl-c", enable_auto_commit=True, max_poll_records=5)
    try:
        c.assign([tp])
        got = [r.offset for r in c.poll(DEADLINE)]
        buffered(c, tp, 50)
        got += [r.offset for r in c.poll(DEADLINE)]  # a trip that drains ahead
        metrics = c._core._metrics
        real = metrics.polled

        def interrupted(records):
            metrics.polled = real
            raise KeyboardInterrupt
        metrics.polled = interrupted
        with pytest.raises(KeyboardInterrupt):
            c.poll(DEADLINE)  # one from the records drained ahead
        assert c.position(tp) == got[-1] + 1
        got += [r.offset for r in c.poll(DEADLINE)]
        assert got == list(range(len(got)))
    finally:
        c.close()
    assert committed(broker, "handout-ctrl-c", tp).offset == got[-1] + 1


def test_ctrl_c_while_the_trip_s_records_are_handed_out_loses_none(broker, filled):
    """issue 16, item 1 (a): the same at the poll whose trip drained the records ahead: the
    records of that poll are not lost either (before: the whole trip's were)."""
    [tp] = filled("handout-trip-ctrl-c", count=100)
    c = sync_consumer(broker, group_id="handout-trip-ctrl-c", enable_auto_commit=True, max_poll_records=5)
    try:
        c.assign([tp])
        got = [r.offset for r in c.poll(DEADLINE)]
        buffered(c, tp, 50)
        metrics = c._core._metrics
        real = metrics.polled

        def interrupted(records):
            metrics.polled = real
            raise KeyboardInterrupt
        metrics.polled = interrupted
        with pytest.raises(KeyboardInterrupt):
            c.poll(DEADLINE)  # the trip that drains ahead
        assert c.position(tp) == got[-1] + 1
        while len(got) < 40:
            got += [r.offset for r in c.poll(DEADLINE)]
        assert got == list(range(len(got)))
    finally:
        c.close()
    assert committed(broker, "handout-trip-ctrl-c", tp).offset == got[-1] + 1


@pytest.mark.parametrize("at_trip", [True, False], ids=["the-trip", "from-ahead"])
def test_another_thread_s_commit_during_a_hand_out_commits_only_what_polls_returned(broker, filled, at_trip):
    """issue 16, item 1 (b): another thread's commit() and position() while a poll is handing
    out records drained ahead (held here in the metrics of the hand-out) see the position
    after the records polls returned, not after those being handed out (before: past
    them, and during the trip's hand-out past all the records drained)."""
    [tp] = filled(f"handout-race-{at_trip}", count=100)
    c = sync_consumer(broker, group_id=f"handout-race-{at_trip}", enable_auto_commit=False, max_poll_records=5)
    try:
        c.assign([tp])
        got = [r.offset for r in c.poll(DEADLINE)]
        buffered(c, tp, 50)
        if not at_trip:
            got += [r.offset for r in c.poll(DEADLINE)]
        metrics = c._core._metrics
        real = metrics.polled
        held, release = threading.Event(), threading.Event()

        def slow(records):
            metrics.polled = real
            held.set()
            release.wait(DEADLINE)
            return real(records)
        metrics.polled = slow
        polled = []
        poller = threading.Thread(target=lambda: polled.extend(r.offset for r in c.poll(DEADLINE)))
        poller.start()
        try:
            assert held.wait(DEADLINE)
            position = c.position(tp)
            c.commit()
        finally:
            release.set()
            poller.join()
        assert position == got[-1] + 1
        assert committed(broker, f"handout-race-{at_trip}", tp).offset == got[-1] + 1
        assert polled == list(range(got[-1] + 1, got[-1] + 6))
    finally:
        c.close()


def test_pause_with_records_drained_ahead_keeps_the_other_partitions_fetched_data(broker, filled):
    """issue 16, item 3: pause() of one partition while records of two are drained ahead
    seeks back only the paused one, without validating that position again (no
    OffsetsForLeaderEpoch: the client read it from this leader just now), and keeps what
    was fetched for the other, whose position does not move (before: both were sought
    back with their leader epoch, dropping the fetched data and awaiting validation)."""
    tp0, tp1 = filled("ahead-pause-kept", count=300, partitions=2)
    with sync_consumer(broker, max_poll_records=5) as c:
        c.assign([tp0, tp1])
        got = c.poll(DEADLINE)
        buffered(c, tp1, 100)
        core = c._core
        deadline = time.monotonic() + DEADLINE
        while not (core._ahead and {r.partition for r in core._ahead.records()} == {0, 1}):
            assert time.monotonic() < deadline  # the case under test: records of both ahead
            got += c.poll(DEADLINE)

        def state():
            return {tp: (list(core._fetcher._buffered.get(tp, ())), core._subscriptions.state(tp).awaiting_validation)
                    for tp in (tp0, tp1)}
        before = c._portal.call(state)
        c.pause([tp0])
        after = c._portal.call(state)
        assert after[tp0][1] is False and after[tp1][1] is False
        kept = before[tp1][0]
        assert kept and after[tp1][0][:len(kept)] == kept  # the same chunks (and maybe more)
        assert {r.partition for r in core._ahead.records()} == {1}
        seen = {0: [r.offset for r in got if r.partition == 0], 1: [r.offset for r in got if r.partition == 1]}
        assert c.position(tp0) == seen[0][-1] + 1
        while len(seen[1]) < 300:
            assert time.monotonic() < deadline
            records = c.poll(0.2)
            assert {r.partition for r in records} <= {1}
            seen[1] += [r.offset for r in records]
        c.resume([tp0])
        while len(seen[0]) < 300:
            assert time.monotonic() < deadline
            seen[0] += [r.offset for r in c.poll(0.2)]
        assert seen == {0: list(range(300)), 1: list(range(300))}


@pytest.mark.parametrize("ahead", [True, False], ids=["read-ahead", "no-read-ahead"])
def test_a_seek_after_leaving_iteration_early_is_where_the_next_poll_starts(broker, filled, monkeypatch, ahead):
    """issue 16, item 4: ``for record in consumer`` left part way through a batch, then
    seek(): the next poll starts at the offset sought, as Java's position is what the last
    seek said (before: the poll sought the partition back to the iteration's first record
    not yet yielded, undoing the seek silently)."""
    import kproto.consumer.consumer as module
    if not ahead:
        monkeypatch.setattr(module, "_AHEAD", 1)
    [tp] = filled(f"iter-seek-{ahead}", count=100)
    with sync_consumer(broker, max_poll_records=5) as c:
        c.assign([tp])
        c.poll(DEADLINE)
        buffered(c, tp, 50)
        for record in c:
            if record.offset == 6:
                break
        c.seek(tp, 30)
        assert c.position(tp) == 30
        assert [r.offset for r in c.poll(DEADLINE)] == list(range(30, 35))


def test_records_a_poll_returned_are_not_kept_with_those_drained_ahead(broker, filled):
    """issue 16, item 2: once a poll returned records drained ahead, the consumer holds no
    reference to them (the application may have dropped them): only the records not yet
    returned stay (before: the whole trip's list, until the next trip)."""
    import gc

    from kproto.consumer.structs import ConsumerRecord

    def held(root):
        """The records reachable from ``root`` through containers."""
        seen, found, todo = set(), set(), [root]
        while todo:
            obj = todo.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if isinstance(obj, ConsumerRecord):
                found.add(id(obj))
            elif obj is root or not isinstance(obj, (str, bytes, int, type)):
                todo.extend(o for o in gc.get_referents(obj) if not isinstance(o, (str, bytes, int, type)))
        return found

    [tp] = filled("ahead-let-go", count=100)
    with sync_consumer(broker, max_poll_records=5) as c:
        c.assign([tp])
        c.poll(DEADLINE)
        buffered(c, tp, 50)
        returned = c.poll(DEADLINE) + c.poll(DEADLINE)  # a trip that drains ahead, one more
        ahead = c._core._ahead
        assert ahead  # the case under test
        kept = held(ahead)
        assert kept and not kept & {id(r) for r in returned}


def test_a_close_from_another_thread_leaves_no_records_drained_ahead_to_hand_out(broker, filled):
    """issue 16, item 5: close() from another thread while records are drained ahead: by the
    time it revokes the partitions (its on_revoke runs, in the closing thread), the records
    drained ahead are gone, so a poll in the application's thread meanwhile cannot hand
    them out without the loop (before: they stayed until the close ended, and a poll
    handed them out during the revocation and LeaveGroup), and the close commits what
    polls returned."""
    [tp] = filled("ahead-close-revoke", count=100)
    in_revoke, go = threading.Event(), threading.Event()
    ahead_in_revoke = []

    def on_revoke(consumer, partitions):
        if consumer._core._closing_by is not None:
            ahead_in_revoke.append(bool(consumer._core._ahead))
            in_revoke.set()
            go.wait(DEADLINE)

    c = member(broker, "ahead-close-revoke", max_poll_records=5)
    closing = threading.Thread(target=c.close)
    try:
        c.subscribe([tp.topic], on_revoke=on_revoke)
        got: dict = {}
        poll_until([c], lambda: bool(c._core._ahead), got=got)
        returned = [offset for _, offset in got.get(c, [])]
        closing.start()
        assert in_revoke.wait(DEADLINE)
        assert ahead_in_revoke == [False]
    finally:
        go.set()
        if closing.is_alive():
            closing.join()
        c.close()
    with sync_consumer(broker, group_id="ahead-close-revoke", enable_auto_commit=False) as again:
        assert again.committed([tp])[tp].offset == len(returned) == returned[-1] + 1
