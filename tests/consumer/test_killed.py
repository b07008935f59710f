"""A group member killed with SIGKILL: after its session times out its partitions move to
the survivor, which starts exactly at the killed member's committed offsets — nothing
committed is read again, nothing is skipped."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kproto import AdminClient, Consumer, Producer, TopicPartition
from kproto.admin import NewTopic

ROOT = Path(__file__).resolve().parents[2]
TOPIC, GROUP, PARTITIONS, PER_PARTITION = "victim", "kill-group", 4, 200
FAST = {"session_timeout_ms": 1500, "heartbeat_interval_ms": 200, "max_poll_interval_ms": 10000,
        "fetch_max_wait_ms": 100, "auto_offset_reset": "earliest", "enable_auto_commit": False,
        "max_poll_records": 5}

CHILD = textwrap.dedent("""
    import sys, time
    from kproto import Consumer
    config = dict(eval(sys.argv[2]))
    with Consumer(bootstrap_servers=sys.argv[1], group_id=%r, **config) as consumer:
        consumer.subscribe([%r])
        while True:
            records = consumer.poll(0.2)
            if records:
                consumer.commit()
                print("committed", sorted((tp.partition for tp in consumer.assignment())), flush=True)
            time.sleep(0.05)  # slow, so the survivor arrives long before the end
""") % (GROUP, TOPIC)


@pytest.fixture(scope="module")
def minibroker_config():
    return {"group.min.session.timeout.ms": 1000}


@pytest.fixture
def broker(kafka_broker):
    """A fresh broker for each test: a member gets killed in it."""
    return kafka_broker


def test_a_killed_members_partitions_move_and_resume_at_its_commits(broker):
    bs = broker.bootstrap_servers
    with AdminClient(bootstrap_servers=bs) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS)])
    with Producer(bootstrap_servers=bs) as producer:
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.send(TOPIC, b"%d-%d" % (p, i), partition=p)
    child = subprocess.Popen([sys.executable, "-c", CHILD, bs, repr(FAST)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().startswith("committed")  # it consumes and commits
        seen: dict[int, list[int]] = {}
        with Consumer(bootstrap_servers=bs, group_id=GROUP, **FAST) as survivor:
            survivor.subscribe([TOPIC])
            deadline = time.monotonic() + 20
            while len(survivor.assignment()) in (0, PARTITIONS) and time.monotonic() < deadline:
                for r in survivor.poll(0.1):
                    seen.setdefault(r.partition, []).append(r.offset)
            mine = {tp.partition for tp in survivor.assignment()}
            assert 0 < len(mine) < PARTITIONS, "the group never split the partitions"
            commits = 0
            while commits < 20:  # the child goes on consuming and committing its share
                commits += "committed" in child.stdout.readline()
                for r in survivor.poll(0):
                    seen.setdefault(r.partition, []).append(r.offset)
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            killed_at = time.monotonic()
            with AdminClient(bootstrap_servers=bs) as admin:
                committed = admin.list_group_offsets(GROUP)
            theirs = {p: committed[TopicPartition(TOPIC, p)].offset for p in range(PARTITIONS) if p not in mine}
            while len(survivor.assignment()) < PARTITIONS and time.monotonic() < deadline:
                for r in survivor.poll(0.1):
                    seen.setdefault(r.partition, []).append(r.offset)
            assert len(survivor.assignment()) == PARTITIONS, "the killed member's partitions never moved"
            assert time.monotonic() - killed_at < 10  # about session.timeout.ms, not forever
            while any(len(seen.get(p, [])) == 0 for p in theirs) and time.monotonic() < deadline:
                for r in survivor.poll(0.1):
                    seen.setdefault(r.partition, []).append(r.offset)
        assert any(0 < offset < PER_PARTITION for offset in theirs.values())  # it had committed part of it
        for p, offset in theirs.items():
            assert seen[p][0] == offset, f"partition {p}: resumed at {seen[p][0]}, committed was {offset}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()
