"""The consumer in groups, against minibroker: joining, eager, roundrobin and cooperative
rebalances, static membership, background heartbeats, leaving on close, commits and
auto-commit, max.poll.interval.ms, the group noticing new partitions and topics, committed
offsets that fell out of the log, and confluent-kafka in the same group."""

import asyncio
import re
import threading
import time

import pytest

from kproto.admin import AdminClient, NewTopic
from kproto.aio import AIOConsumer
from kproto.consumer import CommitFailedError, Consumer, NoOffsetForPartitionError
from kproto.consumer.protocol import decode_assignment
from kproto.errors import InvalidGroupIdError, OffsetOutOfRangeError
from kproto.producer import Producer
from kproto.structs import OffsetAndMetadata, TopicPartition
from minibroker import MiniBroker

ck = pytest.importorskip("confluent_kafka")

DEADLINE = 20
FAST = {  # small timeouts, so that rebalances and failures are quick
    "session_timeout_ms": 2000, "heartbeat_interval_ms": 200, "max_poll_interval_ms": 5000,
    "fetch_max_wait_ms": 100, "auto_offset_reset": "earliest", "metadata_max_age_ms": 300,
    "auto_commit_interval_ms": 200,
}


MIN_SESSION_MS = 500  # the broker's group.min.session.timeout.ms (its default, 6000, is Kafka's)


@pytest.fixture(scope="module")
def minibroker_config():
    return {"group.min.session.timeout.ms": MIN_SESSION_MS}


@pytest.fixture(autouse=True)
def no_consumer_threads_left():
    yield
    deadline = time.monotonic() + 2
    while any(t.name.startswith("kproto") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("kproto")]


def create(broker, topic, partitions):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, partitions)])


def fill(producer, topic, partitions, per_partition):
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, b"%d-%d" % (p, i), partition=p)
    assert producer.flush(DEADLINE) == 0


def member(broker, group, **config):
    return Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, **{**FAST, **config})


class Log:
    """Rebalance callbacks that record what they were given."""

    def __init__(self):
        self.events = []

    def callbacks(self, name):
        return {
            "on_assign": lambda c, parts: self.events.append((name, "assign", set(parts))),
            "on_revoke": lambda c, parts: self.events.append((name, "revoke", set(parts))),
            "on_lost": lambda c, parts: self.events.append((name, "lost", set(parts))),
        }


def poll_until(consumers, done, timeout=DEADLINE, got=None):
    """Poll every consumer in turn (as one thread each would) until ``done()``."""
    got = {} if got is None else got
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for c in consumers:
            for r in c.poll(0.02):
                got.setdefault(c, []).append((r.partition, r.offset))
    return got


def balanced(consumers, partitions):
    sizes = [len(c.assignment()) for c in consumers]
    return sum(sizes) == partitions and max(sizes) - min(sizes) <= 1


# -- membership -------------------------------------------------------------------------------------

def test_eager_members_split_partitions_and_hand_over_cleanly(broker, producer):
    create(broker, "eager", 4)
    fill(producer, "eager", 4, 25)
    log = Log()
    a = member(broker, "eager-g", partition_assignment_strategy="range")
    a.subscribe(["eager"], **log.callbacks("a"))
    got = poll_until([a], lambda: len(a.assignment()) == 4)
    b = member(broker, "eager-g", partition_assignment_strategy="range")
    b.subscribe("eager", **log.callbacks("b"))
    poll_until([a, b], lambda: balanced([a, b], 4) and len(log.events) == 4, got=got)
    # range: the member first by member id gets partitions 0-1 (ids are random: either one)
    assert {frozenset(a.assignment()), frozenset(b.assignment())} == {
        frozenset(TopicPartition("eager", p) for p in (0, 1)), frozenset(TopicPartition("eager", p) for p in (2, 3))}
    assert ("a", "revoke", {TopicPartition("eager", p) for p in range(4)}) in log.events  # eager: all of them
    a.close()
    poll_until([b], lambda: len(b.assignment()) == 4, got=got)
    poll_until([b], lambda: sum(map(len, got.values())) >= 100, got=got)
    b.close()
    records = [r for rs in got.values() for r in rs]
    assert sorted(records) == [(p, i) for p in range(4) for i in range(25)]  # once each


def test_cooperative_members_revoke_only_what_moves(broker, producer):
    create(broker, "coop", 6)
    fill(producer, "coop", 6, 10)
    log = Log()
    config = {"partition_assignment_strategy": "cooperative-sticky"}
    a = member(broker, "coop-g", **config)
    a.subscribe(["coop"], **log.callbacks("a"))
    got = poll_until([a], lambda: len(a.assignment()) == 6)
    b = member(broker, "coop-g", **config)
    b.subscribe(["coop"], **log.callbacks("b"))
    poll_until([a, b], lambda: balanced([a, b], 6), got=got)
    kept = a.assignment()
    revoked = [e for e in log.events if e[:2] == ("a", "revoke")]
    assert len(revoked) == 1 and revoked[0][2] == {TopicPartition("coop", p) for p in range(6)} - kept
    assert [e for e in log.events if e[0] == "b"] == [("b", "assign", set()), ("b", "assign", b.assignment())]
    poll_until([a, b], lambda: sum(map(len, got.values())) >= 60, got=got)
    a.close()
    b.close()
    assert sorted(r for rs in got.values() for r in rs) == [(p, i) for p in range(6) for i in range(10)]


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_members_leaving_and_joining_lose_nothing_and_repeat_nothing(broker, producer, strategy):
    """Members come and go while records are consumed, committing as they go (auto-commit,
    on rebalance and on close): every record is consumed once, by someone. Cooperative
    members keep consuming during rebalances, so their handover is the harder case."""
    topic, group = f"churn-{strategy}", f"churn-g-{strategy}"
    create(broker, topic, 6)
    fill(producer, topic, 6, 200)
    config = {"max_poll_records": 10, "partition_assignment_strategy": strategy}
    got: dict = {}
    members = [member(broker, group, **config) for _ in range(3)]
    for m in members:
        m.subscribe([topic])

    def consumed():
        return sum(map(len, got.values()))

    poll_until(members, lambda: consumed() >= 150, got=got)
    members.pop(0).close()  # leaves: its partitions move
    poll_until(members, lambda: consumed() >= 400, got=got)
    newcomer = member(broker, group, **config)
    newcomer.subscribe([topic])
    members.append(newcomer)
    poll_until(members, lambda: consumed() >= 700 and balanced(members, 6), got=got)
    members.pop(0).close()
    members.append(member(broker, group, **config))
    members[-1].subscribe([topic])
    poll_until(members, lambda: consumed() >= 1000 and balanced(members, 6), got=got)
    members.pop().close()  # the newest leaves at once
    poll_until(members, lambda: consumed() >= 1200, got=got)
    for m in members:
        m.close()
    records = sorted(r for rs in got.values() for r in rs)
    assert records == [(p, i) for p in range(6) for i in range(200)]


def round_robin(subscriptions, partitions):
    """What Java's RoundRobinAssignor promises: members sorted by id; every partition, sorted
    by topic then partition, goes to the next member in that circle subscribed to its topic."""
    order = sorted(subscriptions)
    out, i = {m: set() for m in order}, 0
    for tp in sorted(partitions):
        while tp.topic not in subscriptions[order[i % len(order)]]:
            i += 1
        out[order[i % len(order)]].add(tp)
        i += 1
    return out


def test_roundrobin_deals_the_partitions_of_two_topics_in_turn(broker, producer):
    """Two members subscribed to the same two topics, then a third subscribed to one:
    each gets what dealing the sorted partitions round the members sorted by id gives
    (where range would give the first member one more per topic)."""
    create(broker, "rr-x", 3)
    create(broker, "rr-y", 3)
    tps = [TopicPartition(t, p) for t in ("rr-x", "rr-y") for p in range(3)]
    fill(producer, "rr-x", 3, 4)
    fill(producer, "rr-y", 3, 4)
    log = Log()
    topics = {"a": ["rr-x", "rr-y"], "b": ["rr-x", "rr-y"], "c": ["rr-y"]}
    consumers = {}
    got: dict = {}
    try:
        for name in ("a", "b", "c"):
            consumers[name] = c = member(broker, "rr-g", client_id=name, partition_assignment_strategy="roundrobin")
            c.subscribe(topics[name], **log.callbacks(name))
            poll_until(list(consumers.values()), lambda: settled(log, **consumers), got=got)
            described = members_by_client(broker, "rr-g")
            assert sorted(described) == sorted(consumers)
            ids = {n: member_id for n, (member_id, _) in described.items()}
            expected = round_robin({ids[n]: set(topics[n]) for n in consumers}, tps)
            for n, c in consumers.items():
                assert c.assignment() == expected[ids[n]] == described[n][1], n
            if name == "b":
                assert sorted(len(c.assignment()) for c in consumers.values()) == [3, 3]  # range: 4 and 2
        poll_until(list(consumers.values()), lambda: sum(map(len, got.values())) == 24, got=got)
    finally:
        for c in consumers.values():
            c.close()
    assert sorted(r for rs in got.values() for r in rs) == sorted((tp.partition, i) for tp in tps for i in range(4))


def test_static_member_restarting_within_its_session_keeps_its_partitions(broker, producer):
    create(broker, "static", 2)
    config = {"group_instance_id": "instance-1", "session_timeout_ms": 5000}
    a = member(broker, "static-g", **config)
    other = member(broker, "static-g", group_instance_id="instance-2")
    a.subscribe(["static"])
    other.subscribe(["static"])
    poll_until([a, other], lambda: balanced([a, other], 2))
    mine = a.assignment()
    a.close()  # a static member sends no LeaveGroup
    log = Log()
    poll_until([other], lambda: True)
    back = member(broker, "static-g", **config)
    back.subscribe(["static"], **log.callbacks("back"))
    poll_until([back, other], lambda: back.assignment() == mine)
    assert len(other.assignment()) == 1 and log.events == [("back", "assign", mine)]
    back.close()
    other.close()


def settled(log, **consumers):
    """Whether each named consumer's last rebalance callback assigned what it holds now."""
    last = {}
    for name, kind, parts in log.events:
        last[name] = (kind, parts)
    return all(last.get(name) == ("assign", c.assignment()) for name, c in consumers.items())


def members_by_client(broker, group):
    """``{client.id: (member id, assigned partitions)}`` as the coordinator describes the group."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        description = admin.describe_groups([group])[group]
    assert description.state == "Stable"
    return {m.client_id: (m.member_id, set(decode_assignment(m.assignment).partitions)) for m in description.members}


def test_a_member_out_of_poll_longer_than_its_session_keeps_its_partitions(broker, producer):
    """Heartbeats run in the background: a member that stays out of poll() for several
    session timeouts, but less than max.poll.interval.ms, is still in the group and no
    rebalance happens (same members, same generation, no callback, nothing moved)."""
    create(broker, "busy", 2)
    log = Log()
    config = {"session_timeout_ms": MIN_SESSION_MS, "heartbeat_interval_ms": 100, "max_poll_interval_ms": 10000}
    busy = member(broker, "busy-g", client_id="busy", **config)
    other = member(broker, "busy-g", client_id="other", **config)
    busy.subscribe(["busy"], **log.callbacks("busy"))
    other.subscribe(["busy"], **log.callbacks("other"))
    poll_until([busy, other], lambda: balanced([busy, other], 2) and settled(log, busy=busy, other=other))
    held, theirs = busy.assignment(), other.assignment()
    events = len(log.events)
    generation = busy._core._membership.generation_id
    before = members_by_client(broker, "busy-g")
    deadline = time.monotonic() + 4 * MIN_SESSION_MS / 1000
    while time.monotonic() < deadline:  # only the other member polls; it would see a rebalance
        other.poll(0.05)
    assert other.assignment() == theirs
    assert members_by_client(broker, "busy-g") == before  # the broker kept the busy member
    assert busy.poll(0.1) == [] and busy.assignment() == held
    assert busy._core._membership.generation_id == other._core._membership.generation_id == generation
    busy.commit({tp: 0 for tp in held})  # a commit with the old generation is still accepted
    assert len(log.events) == events  # no callback since
    busy.close()
    other.close()


def test_close_leaves_the_group_at_once_with_its_offsets_committed(broker, producer):
    """close() commits what was consumed and sends LeaveGroup: the other member gets the
    partitions long before the session timeout (30 s) could have ended the membership, and
    starts exactly where the closed member stopped."""
    create(broker, "leaving", 2)
    fill(producer, "leaving", 2, 20)
    session_s = 30
    config = {"session_timeout_ms": session_s * 1000, "heartbeat_interval_ms": 100, "max_poll_records": 3,
              "auto_commit_interval_ms": 60000, "partition_assignment_strategy": "range"}
    log = Log()
    closing = member(broker, "leaving-g", **config)
    staying = member(broker, "leaving-g", **config)
    closing.subscribe(["leaving"], **log.callbacks("closing"))
    staying.subscribe(["leaving"], **log.callbacks("staying"))
    try:
        poll_until([closing, staying], lambda: balanced([closing, staying], 2)
                   and settled(log, closing=closing, staying=staying))
        (tp,) = closing.assignment()
        poll_until([closing], lambda: closing.position(tp) >= 5)
        stopped = closing.position(tp)
        assert stopped < 20
    finally:
        closing.close()
    closed = time.monotonic()
    try:
        got = poll_until([staying], lambda: len(staying.assignment()) == 2)
        assert time.monotonic() - closed < session_s / 3
        with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            assert admin.list_group_offsets("leaving-g", [tp])[tp].offset == stopped
        poll_until([staying], lambda: any(p == tp.partition for p, _ in got.get(staying, [])), got=got)
        assert [o for p, o in got[staying] if p == tp.partition][0] == stopped  # nothing read twice
    finally:
        staying.close()


def test_a_member_that_stops_polling_leaves_and_finds_its_partitions_lost(broker, producer):
    create(broker, "slow", 2)
    log = Log()
    slow = member(broker, "slow-g", max_poll_interval_ms=1500)
    fast = member(broker, "slow-g")
    slow.subscribe(["slow"], **log.callbacks("slow"))
    fast.subscribe(["slow"])
    poll_until([slow, fast], lambda: balanced([slow, fast], 2))
    held = slow.assignment()
    deadline = time.monotonic() + 3  # longer than max.poll.interval.ms, heartbeats or not
    while time.monotonic() < deadline:
        fast.poll(0.1)
    assert len(fast.assignment()) == 2  # the group moved on
    with pytest.raises(CommitFailedError):  # before the next poll rejoins, a commit cannot succeed
        slow.commit({tp: 0 for tp in held})
    poll_until([slow, fast], lambda: balanced([slow, fast], 2))
    assert ("slow", "lost", held) in log.events and ("slow", "revoke", held) not in log.events
    slow.close()
    fast.close()


def test_waiting_inside_poll_longer_than_max_poll_interval_is_not_leaving(broker):
    """Java counts time blocked in poll as polling; only time between polls is limited."""
    create(broker, "patient", 1)
    log = Log()
    with member(broker, "patient-g", max_poll_interval_ms=1000) as c:
        c.subscribe(["patient"], **log.callbacks("c"))
        poll_until([c], lambda: bool(c.assignment()))
        assert c.poll(2.0) == []
        assert c.assignment() == {TopicPartition("patient", 0)}
        assert [e[1] for e in log.events] == ["assign"]


# -- commits ---------------------------------------------------------------------------------------

def test_commits_sync_async_and_committed_with_metadata(broker, producer):
    create(broker, "commits", 2)
    fill(producer, "commits", 2, 10)
    tp0, tp1 = TopicPartition("commits", 0), TopicPartition("commits", 1)
    results = []
    with member(broker, "commits-g", enable_auto_commit=False) as c:
        c.subscribe(["commits"])
        poll_until([c], lambda: c.position(tp0) == 10 if c.assignment() else False)
        c.commit({tp0: OffsetAndMetadata(4, "four")})
        assert c.committed([tp0, tp1]) == {tp0: OffsetAndMetadata(4, "four"), tp1: None}
        c.commit_async(callback=lambda offsets, error: results.append((offsets, error)))
        poll_until([c], lambda: results)
        assert results[0][1] is None and results[0][0][tp0].offset == 10
        assert c.committed([tp1])[tp1].offset == c.position(tp1)
    with member(broker, "commits-g") as again:  # resumes from the commits
        again.subscribe(["commits"])
        poll_until([again], lambda: bool(again.assignment()))
        assert again.position(tp0) == 10 and again.poll(0.3) == []
    with Consumer(bootstrap_servers=broker.bootstrap_servers) as no_group:
        with pytest.raises(InvalidGroupIdError):
            no_group.subscribe(["commits"])
        with pytest.raises(InvalidGroupIdError):
            no_group.commit({tp0: 1})


def test_auto_commit_moves_the_committed_offsets_forward_while_polling(broker, producer):
    """enable.auto.commit: every auto.commit.interval.ms the consumer commits what poll
    returned, with no commit() call; the committed offset never passes what was returned.
    A poll blocked waiting for records commits too, once the interval is up (as Java's)."""
    create(broker, "auto", 1)
    fill(producer, "auto", 1, 100)
    tp = TopicPartition("auto", 0)
    seen = []  # (committed offset, position) after each poll
    with member(broker, "auto-g", enable_auto_commit=True, auto_commit_interval_ms=100, max_poll_records=5) as c, \
            AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        c.subscribe(["auto"])

        def committed():
            return admin.list_group_offsets("auto-g", [tp])[tp].offset

        deadline = time.monotonic() + DEADLINE
        while not seen or seen[-1][1] < 100:
            assert time.monotonic() < deadline, "timed out"
            c.poll(0.5)
            time.sleep(0.03)  # the application at work
            seen.append((committed(), c.position(tp) if c.assignment() else 0))
        moving = sorted({offset for offset, _ in seen if 0 < offset < 100})
        assert len(moving) >= 3, seen  # it moved forward several times on its way
        assert [o for o, _ in seen] == sorted(o for o, _ in seen)
        assert all(offset <= position for offset, position in seen)
        # The last records were returned; the next poll finds no more and waits in poll.
        waiting = threading.Thread(target=c.poll, args=(1.0,))
        waiting.start()
        try:
            while committed() < 100:
                assert waiting.is_alive(), "the offsets were committed only when the poll returned"
                time.sleep(0.02)
        finally:
            waiting.join()


def test_a_revoke_callback_may_commit_from_the_polling_thread(broker, producer):
    """Consumer runs callbacks in the thread that polls, so blocking calls work in them."""
    create(broker, "cb", 2)
    fill(producer, "cb", 2, 5)
    threads = []

    def on_revoke(consumer, partitions):
        threads.append(threading.current_thread())
        consumer.commit()

    c = member(broker, "cb-g", enable_auto_commit=False)
    c.subscribe(["cb"], on_revoke=on_revoke)
    poll_until([c], lambda: c.assignment() and c.position(TopicPartition("cb", 0)) == 5)
    c.close()
    assert threads == [threading.current_thread()]
    with member(broker, "cb-g") as again:
        again.subscribe(["cb"])
        poll_until([again], lambda: bool(again.assignment()))
        assert again.committed([TopicPartition("cb", 0)])[TopicPartition("cb", 0)].offset == 5


def test_committed_offsets_deleted_from_the_log_reset_or_raise(broker, producer):
    """The committed offset fell below the log start (retention, DeleteRecords)."""
    create(broker, "retained", 1)
    fill(producer, "retained", 1, 10)
    tp = TopicPartition("retained", 0)
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.alter_group_offsets("retained-earliest", {tp: 2})
        admin.alter_group_offsets("retained-none", {tp: 2})
        admin.delete_records({tp: 6})
    with member(broker, "retained-earliest") as c:
        c.subscribe(["retained"])
        got = poll_until([c], lambda: c.assignment() and c.position(tp) == 10)
        assert [o for _, o in got[c]] == [6, 7, 8, 9]
    with member(broker, "retained-none", auto_offset_reset="none") as c:
        c.subscribe(["retained"])
        with pytest.raises(OffsetOutOfRangeError) as raised:
            poll_until([c], lambda: False, timeout=10)
        assert raised.value.partitions == {tp: 2}
    with member(broker, "retained-never", auto_offset_reset="none") as c:
        c.subscribe(["retained"])
        with pytest.raises(NoOffsetForPartitionError):
            poll_until([c], lambda: False, timeout=10)


def test_committed_offsets_removed_by_retention_reset_or_raise():
    """The same, with the broker's own retention (retention.bytes) moving the log start."""
    config = {"group.min.session.timeout.ms": MIN_SESSION_MS, "log.retention.check.interval.ms": 50}
    tp = TopicPartition("aged", 0)
    with MiniBroker(config=config) as b, AdminClient(bootstrap_servers=b.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("aged", 1, configs={"segment.bytes": "100", "retention.bytes": "100"})])
        with Producer(bootstrap_servers=b.bootstrap_servers, linger_ms=0) as producer:
            for i in range(10):  # a batch, so a segment, each
                producer.send("aged", b"%d" % i, partition=0).result(DEADLINE)
        for group in ("aged-earliest", "aged-none"):
            admin.alter_group_offsets(group, {tp: 2})
        deadline = time.monotonic() + DEADLINE
        while (start := admin.list_offsets({tp: "earliest"})[tp].offset) <= 2:
            assert time.monotonic() < deadline, "retention never ran"
            time.sleep(0.05)
        with member(b, "aged-earliest") as c:
            c.subscribe(["aged"])
            got = poll_until([c], lambda: c.assignment() and c.position(tp) == 10)
            assert [o for _, o in got[c]] == list(range(start, 10))
        with member(b, "aged-none", auto_offset_reset="none") as c:
            c.subscribe(["aged"])
            with pytest.raises(OffsetOutOfRangeError) as raised:
                poll_until([c], lambda: False, timeout=10)
            assert raised.value.partitions == {tp: 2}


# -- the group noticing the cluster change ----------------------------------------------------------

def test_a_subscribed_topic_gaining_partitions_rebalances_and_they_are_consumed(broker, producer):
    create(broker, "grows", 2)
    a, b = member(broker, "grows-g"), member(broker, "grows-g")
    for c in (a, b):
        c.subscribe(["grows"])
    got = poll_until([a, b], lambda: balanced([a, b], 2))
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_partitions({"grows": 4})
    poll_until([a, b], lambda: balanced([a, b], 4), got=got)
    fill(producer, "grows", 4, 3)
    poll_until([a, b], lambda: sum(map(len, got.values())) == 12, got=got)
    assert {p for rs in got.values() for p, _ in rs} == {0, 1, 2, 3}
    a.close()
    b.close()


def test_a_pattern_picks_up_a_topic_created_later(broker, producer):
    create(broker, "pat-one", 1)
    c = member(broker, "pattern-g")
    c.subscribe(re.compile(r"pat-.*"))
    poll_until([c], lambda: c.assignment() == {TopicPartition("pat-one", 0)})
    create(broker, "pat-two", 2)
    create(broker, "other-two", 1)
    poll_until([c], lambda: len(c.assignment()) == 3)
    assert c.subscription() == {"pat-one", "pat-two"}
    fill(producer, "pat-two", 2, 2)
    got: dict = {}
    poll_until([c], lambda: len(got.get(c, [])) == 4, got=got)
    c.close()


# -- other clients in the same group -----------------------------------------------------------------

def test_kproto_and_confluent_kafka_share_a_range_group(broker, producer):
    create(broker, "mixed", 4)
    fill(producer, "mixed", 4, 20)
    # Both commit what they consumed when they give partitions up, so nothing is read twice.
    ours = member(broker, "mixed-g")
    ours.subscribe(["mixed"])
    theirs = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "mixed-g",
                          "auto.offset.reset": "earliest", "session.timeout.ms": 2000,
                          "heartbeat.interval.ms": 200, "partition.assignment.strategy": "range"})
    their_assignment = set()
    theirs.subscribe(["mixed"], on_assign=lambda c, ps: their_assignment.update((p.topic, p.partition) for p in ps),
                     on_revoke=lambda c, ps: their_assignment.clear())
    got, their_records = {}, []
    try:
        def done():
            for message in theirs.consume(50, 0.02):
                if message.error() is None:
                    their_records.append((message.partition(), message.offset()))
            mine = {(tp.topic, tp.partition) for tp in ours.assignment()}
            return len(mine) == 2 and len(their_assignment) == 2 and not mine & their_assignment
        poll_until([ours], done, got=got)
        poll_until([ours], lambda: done() and len(got.get(ours, [])) + len(their_records) >= 80, got=got)
    finally:
        theirs.close()
        ours.close()
    assert sorted(got.get(ours, []) + their_records) == [(p, i) for p in range(4) for i in range(20)]


def test_the_async_face_joins_with_async_callbacks(broker, producer):
    create(broker, "aio-g", 2)
    fill(producer, "aio-g", 2, 5)
    events = []

    async def on_assign(consumer, partitions):
        await asyncio.sleep(0)
        events.append(("assign", consumer, set(partitions)))

    async def run():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="aio-group", **FAST) as c:
            c.subscribe(["aio-g"], on_assign=on_assign)
            got = []
            while len(got) < 10:
                got += await c.poll(5)
            await c.commit()
            assert (await c.committed([TopicPartition("aio-g", 1)]))[TopicPartition("aio-g", 1)].offset == 5
            assert events == [("assign", c, {TopicPartition("aio-g", 0), TopicPartition("aio-g", 1)})]
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    asyncio.run(run())
