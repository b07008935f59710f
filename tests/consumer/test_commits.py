"""The consumer's commits under coordinator faults (tests/support/proxy.py in front of a real
minibroker): a committed offset never moves backwards because a stale commit was retried
after a newer one, and no commit reaches the broker for a partition the member no longer
owns (issue 10, item 7). The proxy records every OffsetCommit that reaches the broker."""

from __future__ import annotations

import asyncio
import time

from kproto import Consumer, Producer
from kproto.aio import AIOConsumer
from kproto.consumer.protocol import decode_assignment
from kproto.errors import NotCoordinatorError
from kproto.protocol import ApiKey
from kproto.protocol.messages import OffsetCommitResponse
from kproto.structs import TopicPartition
from tests.support.proxy import FORWARD, Edit, FaultProxy, Later


def refuse(request, code):
    """An OffsetCommit response failing every partition of ``request`` with ``code``."""
    return OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=[
        OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
        for p in t.partitions]) for t in request.topics])


class Recorder:
    """A proxy rule: refuses an OffsetCommit with NOT_COORDINATOR when
    ``refuse_commit(n, request)`` says after how many seconds (None: forward it), records
    those forwarded, and records each member's assignment per generation from SyncGroup."""

    def __init__(self, refuse_commit):
        self.refuse_commit = refuse_commit
        self.commits = []  # (member id, generation, {TopicPartition: offset}) as they reach the broker
        self.assignments = {}  # (member id, generation) -> set of TopicPartition

    def __call__(self, api_key, version, request, n):
        if api_key == ApiKey.OFFSET_COMMIT:
            delay = self.refuse_commit(n, request)
            if delay is not None:
                return Later(delay, refuse(request, NotCoordinatorError.code))
            self.commits.append((request.member_id, request.generation_id_or_member_epoch, {
                TopicPartition(t.name, p.partition_index): p.committed_offset
                for t in request.topics for p in t.partitions}))
        if api_key == ApiKey.SYNC_GROUP:
            def seen(response, member=request.member_id, generation=request.generation_id):
                if not response.error_code and response.assignment:
                    self.assignments[(member, generation)] = set(decode_assignment(response.assignment).partitions)
                return response
            return Edit(seen)
        return FORWARD


def produce(bootstrap, topic, count, partitions=(0,)):
    with Producer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        for i in range(count):
            producer.send(topic, b"%d" % i, partition=partitions[i % len(partitions)])


def test_a_retried_auto_commit_never_moves_the_committed_offset_backwards():
    """Issue 10 item 7: the broker stored 400...700, then 340, then 760 after one
    NOT_COORDINATOR: the auto-commit that failed was retried with its stale offsets after
    newer ones had been committed. As Java's ConsumerCoordinator, a failed auto-commit is
    not retried: the next one sends the current positions."""
    recorder = Recorder(lambda n, request: 0 if n == 3 else None)
    with FaultProxy(recorder) as proxy:
        produce(proxy.bootstrap_servers, "commits", 1000)
        with Consumer(bootstrap_servers=proxy.bootstrap_servers, group_id="g", auto_offset_reset="earliest",
                      auto_commit_interval_ms=20, retry_backoff_ms=300, max_poll_records=10) as consumer:
            consumer.subscribe(["commits"])
            got = 0
            deadline = time.monotonic() + 20
            while got < 1000 and time.monotonic() < deadline:
                got += len(consumer.poll(0.5))
                time.sleep(0.005)  # consuming takes a while: auto-commits come between polls
            assert got == 1000
    offsets = [o[TopicPartition("commits", 0)] for _, _, o in recorder.commits]
    assert offsets and offsets[-1] == 1000
    assert offsets == sorted(offsets), offsets


def test_auto_commits_wait_behind_a_sync_commit_that_is_retried():
    """Issue 10 item 7: a sync commit answered late with NOT_COORDINATOR retries its own
    offsets; auto-commits made meanwhile (with newer offsets) must not reach the broker
    before that retry, or the retry would move the committed offset back."""
    armed, refused = [], []

    def refuse_commit(n, request):
        if armed and not refused:  # the first commit after the sync one was made: that one
            refused.append(request.topics[0].partitions[0].committed_offset)
            return 0.3
        return None

    recorder = Recorder(refuse_commit)
    tp = TopicPartition("held", 0)

    async def main(bootstrap):
        async with AIOConsumer(bootstrap_servers=bootstrap, group_id="g3", auto_offset_reset="earliest",
                               auto_commit_interval_ms=20, retry_backoff_ms=50, max_poll_records=10) as consumer:
            consumer.subscribe(["held"])
            got = []
            while len(got) < 100:
                got += await consumer.poll(0.5)
            armed.append(True)
            syncing = asyncio.get_running_loop().create_task(consumer.commit())  # answered late, then retried
            while len(got) < 1000:
                got += await consumer.poll(0.5)
                await asyncio.sleep(0.005)  # more auto-commits while the sync one waits
            await syncing

    with FaultProxy(recorder) as proxy:
        produce(proxy.bootstrap_servers, "held", 1000)
        asyncio.run(main(proxy.bootstrap_servers))
    offsets = [o[tp] for _, _, o in recorder.commits]
    assert refused and refused[0] in offsets  # the sync commit was refused, then retried
    assert offsets and offsets[-1] == 1000
    assert offsets == sorted(offsets), offsets


def test_a_commit_retried_after_a_rebalance_is_not_sent_for_partitions_the_member_lost():
    """Issue 10 item 7: a background commit of both partitions is refused NOT_COORDINATOR;
    while it waits to retry, a second member joins and takes a partition. The retry must not
    commit the old offsets under the new generation for the partition now owned by the
    other member (every OffsetCommit reaching the broker covers only partitions its member
    holds in the generation it carries)."""
    first_commit = []

    def refuse_commit(n, request):
        if not first_commit:
            first_commit.append(request.member_id)
            return 0
        return None

    recorder = Recorder(refuse_commit)
    fast = {"heartbeat_interval_ms": 100, "partition_assignment_strategy": "range", "auto_offset_reset": "earliest",
            "enable_auto_commit": False}
    with FaultProxy(recorder, **{"num.partitions": 2}) as proxy:
        produce(proxy.bootstrap_servers, "moved", 100, partitions=(0, 1))
        with Consumer(bootstrap_servers=proxy.bootstrap_servers, group_id="g2", retry_backoff_ms=1500,
                      **fast) as one:
            one.subscribe(["moved"])
            deadline = time.monotonic() + 15
            while len(one.assignment()) < 2 and time.monotonic() < deadline:
                one.poll(0.2)
            assert len(one.assignment()) == 2
            one.commit_async({TopicPartition("moved", 0): 7, TopicPartition("moved", 1): 9})
            with Consumer(bootstrap_servers=proxy.bootstrap_servers, group_id="g2", **fast) as two:
                two.subscribe(["moved"])
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline and (len(one.assignment()) != 1 or len(two.assignment()) != 1):
                    one.poll(0.05)
                    two.poll(0.05)
                assert len(one.assignment()) == 1 and len(two.assignment()) == 1
                end = time.monotonic() + 2.5  # past the refused commit's retry backoff
                while time.monotonic() < end:
                    one.poll(0.05)
                    two.poll(0.05)
    assert first_commit
    for member, generation, offsets in recorder.commits:
        owned = recorder.assignments.get((member, generation), set())
        assert set(offsets) <= owned, (member, generation, offsets, owned)
