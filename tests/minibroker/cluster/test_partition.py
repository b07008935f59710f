"""minibroker.cluster.partition: one replica's rules, pure (fake clock, no sockets).

Followers are simulated by calls (``on_follower_fetch``), the controller by
``apply_registration`` with hand-made registrations, the fetcher's truncation rounds by
:func:`converge`. Every rule is a table (issue 13, WP3).

Most tests run on :class:`FakeLog`, a stand-in for the replication half of
``PartitionLog`` (WP1 of the design: ``epochs``, ``set_high_watermark``,
``append_replicated``, ``truncate_to``) until that half is merged; it keeps batches as
``(base_offset, last_offset, epoch)`` and implements exactly the calls Partition makes.
The solo tests also run on today's real ``PartitionLog`` (in memory and on disk).
"""

from __future__ import annotations

import asyncio
import struct
import uuid

import pytest

from kproto.errors import (
    FencedLeaderEpochError,
    IllegalTransitionError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from kproto.records import BatchBuilder
from minibroker.cluster.metadata import PartitionRegistration
from minibroker.cluster.partition import (
    TRANSITIONS,
    EpochQuery,
    Partition,
    ReplicaRole,
    Transition,
)
from minibroker.log import PartitionLog

TOPIC_ID = uuid.UUID(int=7)
LAG_MS = 1000


# -- the log stand-in ------------------------------------------------------------------


class FakeEpochCache:
    """WP1's ``LeaderEpochCache`` as the design specifies it: ``(epoch, start_offset)``
    entries, increasing in both; ``end_offset_for`` is Kafka's ``LeaderEpochFileCache.endOffsetFor``."""

    def __init__(self) -> None:
        self.entries: tuple[tuple[int, int], ...] = ()

    def assign(self, epoch: int, start_offset: int) -> None:
        if self.entries and epoch <= self.entries[-1][0]:
            return  # not newer: no-op
        self.entries += ((epoch, start_offset),)

    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else -1

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        if epoch < 0 or not self.entries:
            return -1, -1
        if epoch == self.latest_epoch():
            return epoch, log_end_offset
        higher = [e for e in self.entries if e[0] > epoch]
        if not higher:
            return -1, -1
        floor = [e for e in self.entries if e[0] <= epoch]
        return (floor[-1][0] if floor else epoch), higher[0][1]

    def truncate_from_end(self, end_offset: int) -> None:
        self.entries = tuple(e for e in self.entries if e[1] < end_offset)


class FakeLog:
    """Stand-in for ``PartitionLog`` with WP1's replication methods (see the module docstring).

    Assumes of WP1: ``high_watermark`` is the LEO until ``set_high_watermark`` is first
    called, which clamps to [log start, LEO]; ``append(..., leader_epoch)`` and
    ``append_replicated`` add a batch's epoch to ``epochs`` when newer than the latest;
    ``append_replicated`` takes whole v2 batches at or after the LEO and returns the new
    LEO; ``truncate_to`` drops every batch whose last offset is >= the target, returns the
    records dropped, clamps the HW and truncates ``epochs`` from the end; ``delete_records``
    is today's (bounded by the HW).
    """

    def __init__(self, batches: list[tuple[int, int, int]] = (), *, high_watermark: int | None = None) -> None:
        self.batches: list[tuple[int, int, int]] = []
        self.epochs = FakeEpochCache()
        self.log_start_offset = 0
        for base, last, epoch in batches:
            self._add(base, last, epoch)
        self._hw = high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.batches[-1][1] + 1 if self.batches else self.log_start_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset if self._hw is None else self._hw

    def set_high_watermark(self, offset: int) -> None:
        self._hw = max(self.log_start_offset, min(offset, self.log_end_offset))

    def _add(self, base: int, last: int, epoch: int) -> None:
        if base < self.log_end_offset:
            raise ValueError(f"batch at {base} below the log end offset {self.log_end_offset}")
        self.batches.append((base, last, epoch))
        self.epochs.assign(epoch, base)

    def append(self, batch: bytes, *, last_offset_delta: int, max_timestamp: int, leader_epoch: int) -> int:
        base = self.log_end_offset
        self._add(base, base + last_offset_delta, leader_epoch)
        return base

    def append_replicated(self, records: bytes | memoryview) -> int:
        data, pos = bytes(records), 0
        while pos < len(data):
            base, length, epoch = struct.unpack_from(">qii", data, pos)
            (delta,) = struct.unpack_from(">i", data, pos + 23)
            self._add(base, base + delta, epoch)
            pos += 12 + length
        return self.log_end_offset

    def truncate_to(self, offset: int) -> int:
        dropped = [b for b in self.batches if b[1] >= offset]
        self.batches = [b for b in self.batches if b[1] < offset]
        self.epochs.truncate_from_end(self.log_end_offset)
        if self._hw is not None:
            self._hw = min(self._hw, self.log_end_offset)
        return sum(last - base + 1 for base, last, _ in dropped)

    def delete_records(self, before_offset: int) -> int:
        if not 0 <= before_offset <= self.high_watermark:
            raise OffsetOutOfRangeError(f"{before_offset} above the high watermark")
        self.log_start_offset = max(self.log_start_offset, before_offset)
        self.batches = [b for b in self.batches if b[1] >= self.log_start_offset]
        return self.log_start_offset


class RealLog(PartitionLog):
    """Today's PartitionLog; until WP1 merges it has no epoch cache, so it gets the stand-in's."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if not hasattr(self, "epochs"):
            self.epochs = FakeEpochCache()


# -- helpers ---------------------------------------------------------------------------


def batch(*values: bytes, ts: int = 1_000) -> bytes:
    builder = BatchBuilder(2, 0)
    for v in values:
        builder.append(ts, b"k", v)
    return builder.build()


def replicated(base: int, epoch: int, *values: bytes) -> bytes:
    """A batch as a leader stored it: base offset and partition leader epoch stamped."""
    data = bytearray(batch(*values))
    struct.pack_into(">q", data, 0, base)
    struct.pack_into(">i", data, 12, epoch)
    return bytes(data)


def reg(leader: int, leader_epoch: int, partition_epoch: int, isr=(0, 1, 2), replicas=(0, 1, 2)) -> PartitionRegistration:
    return PartitionRegistration(replicas=tuple(replicas), isr=tuple(isr), leader=leader,
                                 leader_epoch=leader_epoch, partition_epoch=partition_epoch)


def replica(log, node_id: int = 0) -> Partition:
    return Partition(topic="t", topic_id=TOPIC_ID, index=0, node_id=node_id, log=log)


def leader(batches=(), *, hw: int | None = 0, isr=(0, 1, 2), replicas=(0, 1, 2), epoch: int = 1,
           now_ms: int = 0) -> Partition:
    p = replica(FakeLog(list(batches), high_watermark=hw))
    assert p.apply_registration(reg(0, epoch, epoch, isr, replicas), now_ms) is Transition.BECAME_LEADER
    return p


def produce(p: Partition, n: int = 1) -> int:
    """Append ``n`` records as one producer batch; returns the offset after it."""
    base = p.append_as_leader(batch(*(b"v%d" % i for i in range(n))), last_offset_delta=n - 1, max_timestamp=1_000)
    return base + n


def run(coro):
    return asyncio.run(coro)


# -- the role state machine --------------------------------------------------------------


@pytest.mark.parametrize("start", list(ReplicaRole))
@pytest.mark.parametrize("target", list(ReplicaRole))
def test_role_moves_follow_the_transitions_table(start, target):
    p = replica(FakeLog())
    p.role = start
    if target in TRANSITIONS[start]:
        p._move(target)
        assert p.role is target
    else:
        with pytest.raises(IllegalTransitionError):
            p._move(target)
        assert p.role is start


# (registrations applied in order, expected transition of each, role after the last)
REGISTRATION_CASES = {
    "new leader": ([reg(0, 1, 1)], [Transition.BECAME_LEADER], ReplicaRole.LEADER),
    "new follower": ([reg(1, 1, 1)], [Transition.BECAME_FOLLOWER], ReplicaRole.FOLLOWER),
    "not a replica": ([reg(1, 1, 1, replicas=(1, 2), isr=(1, 2))], [Transition.NONE], ReplicaRole.NONE),
    "leader, isr shrinks": ([reg(0, 1, 1), reg(0, 1, 2, isr=(0, 1))],
                            [Transition.BECAME_LEADER, Transition.ISR_CHANGED], ReplicaRole.LEADER),
    "leader re-elected at a new epoch": ([reg(0, 1, 1), reg(0, 2, 2)],
                                         [Transition.BECAME_LEADER, Transition.BECAME_LEADER], ReplicaRole.LEADER),
    "leader demoted": ([reg(0, 1, 1), reg(1, 2, 2)],
                       [Transition.BECAME_LEADER, Transition.BECAME_FOLLOWER], ReplicaRole.FOLLOWER),
    "leader fenced: no leader": ([reg(0, 1, 1), reg(-1, 2, 2, isr=(0,))],
                                 [Transition.BECAME_LEADER, Transition.BECAME_FOLLOWER], ReplicaRole.FOLLOWER),
    "follower promoted": ([reg(1, 1, 1), reg(0, 2, 2)],
                          [Transition.BECAME_FOLLOWER, Transition.BECAME_LEADER], ReplicaRole.LEADER),
    "follower of a new leader": ([reg(1, 1, 1), reg(2, 2, 2)],
                                 [Transition.BECAME_FOLLOWER, Transition.BECAME_FOLLOWER], ReplicaRole.FOLLOWER),
    "follower, isr changes": ([reg(1, 1, 1), reg(1, 1, 2, isr=(1, 2))],
                              [Transition.BECAME_FOLLOWER, Transition.ISR_CHANGED], ReplicaRole.FOLLOWER),
    "reassigned away": ([reg(0, 1, 1), reg(1, 2, 2, replicas=(1, 2), isr=(1, 2))],
                        [Transition.BECAME_LEADER, Transition.STOPPED], ReplicaRole.NONE),
    "same registration twice": ([reg(0, 1, 1), reg(0, 1, 1)],
                                [Transition.BECAME_LEADER, Transition.NONE], ReplicaRole.LEADER),
    "stale leader epoch": ([reg(1, 3, 3), reg(0, 2, 4)],
                           [Transition.BECAME_FOLLOWER, Transition.NONE], ReplicaRole.FOLLOWER),
    "stale partition epoch": ([reg(0, 1, 5), reg(0, 1, 4, isr=(0,))],
                              [Transition.BECAME_LEADER, Transition.NONE], ReplicaRole.LEADER),
}


@pytest.mark.parametrize("case", REGISTRATION_CASES)
def test_apply_registration(case):
    """The role follows the controller's registrations; stale ones change nothing."""
    registrations, transitions, role = REGISTRATION_CASES[case]
    p = replica(FakeLog(high_watermark=0))
    assert [p.apply_registration(r, 0) for r in registrations] == transitions
    assert p.role is role
    newest = max(registrations, key=lambda r: (r.leader_epoch, r.partition_epoch))
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (
        newest.leader, newest.leader_epoch, newest.partition_epoch, newest.isr)


def test_becoming_leader_starts_an_epoch_at_the_log_end_and_calls_the_hook():
    becomes = []
    p = replica(FakeLog([(0, 4, 0)], high_watermark=5))
    p.on_become_leader = becomes.append
    p.apply_registration(reg(0, 3, 3), 0)
    assert p.log.epochs.entries == ((0, 0), (3, 5))
    assert becomes == [p]
    produce(p, 2)
    assert p.log.batches[-1] == (5, 6, 3)  # stamped with the leader epoch


# -- a solo partition: the single MiniBroker -------------------------------------------


@pytest.fixture(params=["fake", "memory", "disk"])
def solo(request, tmp_path):
    if request.param == "fake":
        log = FakeLog()
    else:
        log = RealLog(tmp_path / "t-0" if request.param == "disk" else None)
        request.addfinalizer(log.close)
    return Partition.solo(topic="t", topic_id=TOPIC_ID, index=0, node_id=0, log=log)


def test_solo_partition_answers_as_a_single_broker(solo):
    """HW = LEO after every append; fencing at epoch 0; acks=all answers at once;
    OffsetForLeaderEpoch as today's single broker: (0, LEO) for epoch 0, (-1, -1) above."""
    woken = []
    solo.on_high_watermark = lambda: woken.append(solo.high_watermark)
    assert (solo.role, solo.leader, solo.leader_epoch, solo.replicas, solo.isr) == (ReplicaRole.LEADER, 0, 0, (0,), (0,))
    assert solo.high_watermark == 0
    assert solo.append_as_leader(batch(b"a", b"b", b"c"), last_offset_delta=2, max_timestamp=1_000) == 0
    assert solo.high_watermark == solo.log.log_end_offset == 3
    assert solo.append_as_leader(batch(b"d"), last_offset_delta=0, max_timestamp=1_000) == 3
    assert solo.high_watermark == 4
    assert woken == [3, 4]
    solo.check_leader()
    solo.check_leader(0)
    with pytest.raises(UnknownLeaderEpochError):
        solo.check_leader(1)
    assert run(solo.wait_for_ack(4, 1)) == 0
    assert run(solo.wait_for_ack(4, 2)) == NotEnoughReplicasAfterAppendError.code
    assert solo.end_offset_for_epoch(0) == (0, 4)
    assert solo.end_offset_for_epoch(1) == (-1, -1)
    assert solo.diverging_epoch(0, 4) is None
    solo.on_follower_fetch(5, 1, 2, 10_000)  # any replica id is served read-only: nothing recorded
    assert solo.followers == {} and solo.high_watermark == 4
    assert solo.isr_change(10_000_000, LAG_MS, lambda r, e: True) is None


# -- the high watermark ------------------------------------------------------------------


# follower fetches (replica, offset) after the leader appended 10 records → HW after each
HW_CASES = {
    "min over the isr": ((0, 1, 2), [(1, 4), (2, 6), (1, 10), (2, 10)], [0, 4, 6, 10]),
    "only the isr counts": ((0, 1), [(2, 1), (1, 7), (2, 3), (1, 10)], [0, 7, 7, 10]),
    "never backwards": ((0, 1), [(1, 8), (1, 5), (1, 2)], [8, 8, 8]),
    "a lone leader commits at once": ((0,), [(1, 3)], [10]),
}


@pytest.mark.parametrize("case", HW_CASES)
def test_high_watermark_is_the_smallest_isr_log_end_and_monotonic(case):
    isr, fetches, expected = HW_CASES[case]
    p = leader(isr=isr)
    produce(p, 10)
    seen = []
    for t, (r, offset) in enumerate(fetches):
        p.on_follower_fetch(r, 1, offset, t)
        seen.append(p.high_watermark)
    assert seen == expected


def test_an_isr_shrink_lets_the_high_watermark_move():
    p = leader()
    produce(p, 5)
    p.on_follower_fetch(1, 1, 5, 0)
    assert p.high_watermark == 0  # replica 2 never fetched
    assert p.apply_registration(reg(0, 1, 2, isr=(0, 1)), 0) is Transition.ISR_CHANGED
    assert p.high_watermark == 5


@pytest.mark.parametrize("who", [3, 0])
def test_fetch_from_a_non_replica_is_refused(who):
    p = leader()
    with pytest.raises(NotLeaderOrFollowerError):
        p.on_follower_fetch(who, 1, 0, 0)


@pytest.mark.parametrize("offset", [11, 2])
def test_a_fetch_outside_the_log_is_not_recorded(offset):
    """The fetch itself answers OFFSET_OUT_OF_RANGE; the follower's state is not touched."""
    p = leader([(0, 9, 0)], hw=5, isr=(0, 1))
    p.log.delete_records(3)
    p.on_follower_fetch(1, 1, offset, 0)
    assert p.followers[1].log_end_offset == -1 and p.high_watermark == 5


def test_attach_log_once():
    p = replica(None)
    log = FakeLog()
    p.attach_log(log)
    p.attach_log(log)
    with pytest.raises(ValueError):
        p.attach_log(FakeLog())


def test_fetch_on_a_follower_is_refused():
    p = replica(FakeLog(high_watermark=0))
    p.apply_registration(reg(1, 1, 1), 0)
    with pytest.raises(NotLeaderOrFollowerError):
        p.on_follower_fetch(2, 1, 0, 0)


# -- purgatory: acks=all -----------------------------------------------------------------


def test_ack_waits_for_the_high_watermark():
    async def scenario():
        p = leader()
        end = produce(p, 3)
        ack = asyncio.ensure_future(p.wait_for_ack(end, 2))
        await asyncio.sleep(0)
        p.on_follower_fetch(1, 1, end, 0)
        await asyncio.sleep(0)
        assert not ack.done()  # replica 2 is in the ISR and behind
        p.on_follower_fetch(2, 1, 2, 0)
        await asyncio.sleep(0)
        assert not ack.done()
        p.on_follower_fetch(2, 1, end, 0)
        return await ack, p.waiting

    assert run(scenario()) == (0, 0)


# (ISR after the shrink, min_isr) → the answer once the shrink lets the HW reach the batch
SHRINK_CASES = {
    "still enough replicas": ((0, 1), 2, 0),
    "fell below min.insync.replicas": ((0,), 2, NotEnoughReplicasAfterAppendError.code),
    "min.insync.replicas 1": ((0,), 1, 0),
}


@pytest.mark.parametrize("case", SHRINK_CASES)
def test_ack_after_the_isr_shrank_meanwhile(case):
    """Kafka's checkEnoughReplicasReachOffset: the ISR size counts when the HW arrives."""
    isr, min_isr, code = SHRINK_CASES[case]

    async def scenario():
        p = leader()
        end = produce(p, 3)
        p.on_follower_fetch(1, 1, end, 0)
        ack = asyncio.ensure_future(p.wait_for_ack(end, min_isr))
        await asyncio.sleep(0)
        assert not ack.done()
        p.apply_registration(reg(0, 1, 2, isr=isr), 0)
        return await ack

    assert run(scenario()) == code


@pytest.mark.parametrize("registration", [reg(1, 2, 2), reg(-1, 2, 2, isr=(0,)),
                                          reg(1, 2, 2, replicas=(1, 2), isr=(1, 2))],
                         ids=["demoted", "leader fenced", "reassigned away"])
def test_ack_answers_not_leader_when_leadership_is_lost(registration):
    async def scenario():
        p = leader()
        end = produce(p, 3)
        acks = [asyncio.ensure_future(p.wait_for_ack(end, 1)) for _ in range(2)]
        await asyncio.sleep(0)
        p.apply_registration(registration, 0)
        return [await a for a in acks] + [await p.wait_for_ack(end, 1)]

    assert run(scenario()) == [NotLeaderOrFollowerError.code] * 3


def test_an_abandoned_ack_wait_is_dropped():
    """The Produce handler bounds waits by timeout_ms; a cancelled waiter is skipped later."""
    async def scenario():
        p = leader(isr=(0, 1))
        end = produce(p, 1)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(p.wait_for_ack(end, 1), 0.01)
        assert p.waiting == 0
        p.on_follower_fetch(1, 1, end, 0)
        return p.high_watermark

    assert run(scenario()) == 1


# -- follower fetch state and the ISR ----------------------------------------------------


def test_a_live_follower_is_not_dropped_right_after_a_leader_change():
    """Kafka's resetReplicaState: ISR members count as caught up at the election."""
    p = leader(isr=(0, 1), now_ms=5_000)
    produce(p)
    assert p.isr_change(5_000 + LAG_MS, LAG_MS, lambda r, e: True) is None
    assert p.isr_change(5_001 + LAG_MS, LAG_MS, lambda r, e: True) == (0,)


def _follow(p: Partition, schedule: dict[int, int | str], until: int) -> list[tuple[int, tuple[int, ...] | None]]:
    """Drive time in 100 ms steps: the leader appends one record per step; at each
    ``schedule`` time replica 1 fetches at an offset ("leo": the leader's LEO then,
    "prev": the leader's LEO at its previous fetch, an int: that offset). Returns
    ``(time, isr_change)`` at every step."""
    out = []
    prev_leo = 0
    for now in range(0, until + 1, 100):
        what = schedule.get(now)
        if what is not None:
            offset = {"leo": p.log.log_end_offset, "prev": prev_leo}.get(what, what)
            prev_leo = p.log.log_end_offset
            p.on_follower_fetch(1, 1, offset, now)
        produce(p)
        out.append((now, p.isr_change(now, LAG_MS, lambda r, e: True)))
    return out


def _first_shrink(changes):
    return next((now for now, change in changes if change is not None), None)


# fetch schedule of replica 1 → first time the leader proposes dropping it (None: never)
SHRINK_SCHEDULES = {
    # never fetches again after the election at 0: out after lag.time.max
    "stuck": ({}, 1_100),
    # fetches every 500 ms up to the LEO of its previous fetch: slow but keeping up
    "slow, keeping up": ({t: "prev" for t in range(0, 4_001, 500)}, None),
    # fetches every 500 ms at the leader's LEO: caught up each time
    "fast": ({t: "leo" for t in range(0, 4_001, 500)}, None),
    # fetches often but falls further behind: caught up only at its first fetch (0)
    "falling behind": ({t: t // 500 for t in range(0, 4_001, 500)}, 1_100),
}


@pytest.mark.parametrize("case", SHRINK_SCHEDULES)
def test_isr_shrink_after_the_lag_time(case):
    """Kafka's Replica.updateFetchStateOrThrow caught-up time and isFollowerOutOfSync."""
    schedule, expected = SHRINK_SCHEDULES[case]
    p = leader(isr=(0, 1), replicas=(0, 1))
    assert _first_shrink(_follow(p, schedule, 4_000)) == expected


def test_a_follower_at_the_leader_log_end_is_never_dropped():
    p = leader(isr=(0, 1), replicas=(0, 1))
    end = produce(p, 3)
    p.on_follower_fetch(1, 1, end, 0)
    assert p.isr_change(1_000_000, LAG_MS, lambda r, e: True) is None


def _behind_leader() -> Partition:
    """Leader at epoch 1 since offset 10 (its epoch-0 records 0-9), HW 5 (the previous
    leader's), ISR (0, 1) with replica 1 not fetched yet, replica 2 out of the ISR."""
    return leader([(0, 9, 0)], hw=5, isr=(0, 1))


# replica 2's fetch (offset, broker epoch) → does the leader propose it joins?
EXPAND_CASES = {
    "caught up, eligible": (10, 7, (0, 1, 2)),
    "past the HW, not the epoch start": (7, 7, None),
    "below the HW": (4, 7, None),
    "caught up, stale broker epoch": (10, 6, None),
}


@pytest.mark.parametrize("case", EXPAND_CASES)
def test_isr_expand_needs_the_epoch_start_and_the_broker_epoch(case):
    """Kafka's isFollowerInSync (LEO >= HW and >= the leader epoch's start offset) and
    isReplicaIsrEligible with the fetch's broker epoch (KIP-903)."""
    offset, broker_epoch, expected = EXPAND_CASES[case]
    p = _behind_leader()
    asked = []

    def eligible(r, e):
        asked.append((r, e))
        return e == 7

    p.on_follower_fetch(2, broker_epoch, offset, 0)
    assert p.high_watermark == 5
    assert p.isr_change(0, LAG_MS, eligible) == expected
    assert asked in ([], [(2, broker_epoch)])


def test_isr_expand_of_a_fenced_broker_is_not_proposed():
    p = _behind_leader()
    p.on_follower_fetch(2, 7, 10, 0)
    assert p.isr_change(0, LAG_MS, lambda r, e: False) is None


# -- fencing (KIP-320) ---------------------------------------------------------------------


def _in_role(role: ReplicaRole) -> Partition:
    p = replica(FakeLog(high_watermark=0))
    registration = {ReplicaRole.LEADER: reg(0, 5, 5), ReplicaRole.FOLLOWER: reg(1, 5, 5),
                    ReplicaRole.NONE: reg(1, 5, 5, replicas=(1, 2), isr=(1, 2))}[role]
    p.apply_registration(registration, 0)
    assert p.role is role
    return p


FENCING = {
    (ReplicaRole.LEADER, -1): None,
    (ReplicaRole.LEADER, 5): None,
    (ReplicaRole.LEADER, 4): FencedLeaderEpochError,
    (ReplicaRole.LEADER, 6): UnknownLeaderEpochError,
    (ReplicaRole.FOLLOWER, -1): NotLeaderOrFollowerError,
    (ReplicaRole.FOLLOWER, 5): NotLeaderOrFollowerError,
    (ReplicaRole.FOLLOWER, 4): FencedLeaderEpochError,
    (ReplicaRole.FOLLOWER, 6): UnknownLeaderEpochError,
    (ReplicaRole.NONE, -1): NotLeaderOrFollowerError,
    (ReplicaRole.NONE, 4): NotLeaderOrFollowerError,
    (ReplicaRole.NONE, 6): NotLeaderOrFollowerError,
}


@pytest.mark.parametrize(("role", "epoch"), FENCING)
def test_fencing_by_current_leader_epoch(role, epoch):
    """Kafka's getLocalLog: the epoch first, then the role; no replica: NOT_LEADER_OR_FOLLOWER."""
    p = _in_role(role)
    expected = FENCING[role, epoch]
    if expected is None:
        p.check_leader(epoch)
    else:
        with pytest.raises(expected):
            p.check_leader(epoch)


def test_appends_need_the_right_role():
    p = _in_role(ReplicaRole.FOLLOWER)
    with pytest.raises(NotLeaderOrFollowerError):
        produce(p)
    q = _in_role(ReplicaRole.LEADER)
    with pytest.raises(NotLeaderOrFollowerError):
        q.append_as_follower(replicated(0, 5, b"x"))


# -- OffsetForLeaderEpoch and the diverging epoch ----------------------------------------

# leader: epoch 0 at 0-9, epoch 2 at 10-19, epoch 5 at 20-29 (LEO 30)
EPOCHS = [(0, 9, 0), (10, 19, 2), (20, 29, 5)]

END_OFFSETS = {5: (5, 30), 6: (-1, -1), 3: (2, 20), 2: (2, 20), 1: (0, 10), 0: (0, 10), -1: (-1, -1)}


@pytest.mark.parametrize("epoch", END_OFFSETS)
def test_end_offset_for_epoch(epoch):
    """Kafka's LeaderEpochFileCache.endOffsetFor: the latest epoch ends at the LEO; an older
    one at the next epoch's start, answered with the largest epoch at or below it."""
    p = leader(EPOCHS, hw=30, epoch=5)
    assert p.end_offset_for_epoch(epoch) == END_OFFSETS[epoch]


DIVERGING = {
    (5, 25): None, (5, 30): None, (2, 15): None, (2, 20): None, (-1, 5): None,
    (2, 25): (2, 20),  # epoch 2 ended at 20: the follower has more
    (3, 15): (2, 20),  # the leader never had epoch 3
    # An epoch from the future: its end is unknown ((-1, -1) in OffsetForLeaderEpoch), which
    # Kafka's Partition.readRecords answers OFFSET_OUT_OF_RANGE (issue 13 step 2 item 3).
    (6, 30): OffsetOutOfRangeError,
}


@pytest.mark.parametrize(("last_fetched_epoch", "fetch_offset"), DIVERGING)
def test_diverging_epoch(last_fetched_epoch, fetch_offset):
    """KIP-595's check in Fetch v12+: the epoch is smaller or ends before the fetch offset."""
    p = leader(EPOCHS, hw=30, epoch=5)
    expected = DIVERGING[last_fetched_epoch, fetch_offset]
    if expected is OffsetOutOfRangeError:
        with pytest.raises(OffsetOutOfRangeError):
            p.diverging_epoch(last_fetched_epoch, fetch_offset)
    else:
        assert p.diverging_epoch(last_fetched_epoch, fetch_offset) == expected


def test_a_fetch_below_the_log_start_is_out_of_range_whether_or_not_epochs_diverge():
    """Kafka's Partition.readRecords checks the log start before the divergence (issue 13
    step 2 item 3)."""
    p = leader(EPOCHS, hw=30, epoch=5)
    p.log.log_start_offset = 12
    with pytest.raises(OffsetOutOfRangeError):
        p.diverging_epoch(2, 11)  # epoch 2 ends at 20: would not diverge
    with pytest.raises(OffsetOutOfRangeError):
        p.diverging_epoch(0, 11)  # epoch 0 ends at 10: would diverge
    assert p.diverging_epoch(0, 12) == (0, 10)


# -- follower: replicated appends, HW, log start -------------------------------------------


def test_follower_appends_batches_as_the_leader_wrote_them():
    p = replica(FakeLog(high_watermark=0), node_id=1)
    p.apply_registration(reg(0, 3, 3), 0)
    leo = p.append_as_follower(replicated(0, 1, b"a", b"b") + replicated(2, 3, b"c"))
    assert leo == 3 and p.log.batches == [(0, 1, 1), (2, 2, 3)]
    assert p.log.epochs.entries == ((1, 0), (3, 2))
    woken = []
    p.on_high_watermark = lambda: woken.append(p.high_watermark)
    p.update_follower_high_watermark(leader_hw=10, leader_log_start=0)
    assert p.high_watermark == 3  # capped by the own LEO
    p.update_follower_high_watermark(leader_hw=2, leader_log_start=2)
    assert (p.high_watermark, p.log.log_start_offset) == (2, 2)  # follows a new leader's HW down
    assert woken == [3]


# -- truncation (KIP-101, KIP-279) ---------------------------------------------------------


def converge(follower: Partition, leader_p: Partition) -> tuple[int, int]:
    """What the fetcher does with a new leader: OffsetForLeaderEpoch with the own latest
    epoch, again for each EpochQuery, then truncate. Returns (offset, rounds)."""
    ask = follower.log.epochs.latest_epoch()
    rounds = 0
    while True:
        rounds += 1
        answer = follower.truncation_offset(*leader_p.end_offset_for_epoch(ask))
        if isinstance(answer, EpochQuery):
            ask = answer.epoch
            continue
        follower.truncate_to(answer)
        return answer, rounds


def _pair(leader_batches, leader_epoch, follower_batches, follower_hw):
    leader_p = replica(FakeLog(leader_batches, high_watermark=leader_batches[-1][1] + 1 if leader_batches else 0))
    leader_p.apply_registration(reg(0, leader_epoch, leader_epoch), 0)
    follower = replica(FakeLog(follower_batches, high_watermark=follower_hw), node_id=1)
    follower.apply_registration(reg(0, leader_epoch, leader_epoch), 0)
    return leader_p, follower


# name → (leader's batches, leader epoch now, follower's batches, follower HW,
#         truncation offset, OffsetForLeaderEpoch rounds)
TRUNCATION = {
    # KIP-101 scenario 1: B fetched m1 but had not yet learnt the HW that covers it (1),
    # then restarted. Truncating to the HW cut m1, lost for good when A died; epochs keep it.
    "KIP-101 HW-truncation loss": ([(0, 0, 0), (1, 1, 0)], 1, [(0, 0, 0), (1, 1, 0)], 1, 2, 1),
    # KIP-101 scenario 2: A wrote m1 at offset 1 (epoch 0) that B never got; both died; B
    # came back first and led epoch 1, writing m2 at offset 1. A returns as a follower with
    # HW 2: the HW rule kept m1 (the logs differ at offset 1 for good); epochs cut it.
    "KIP-101 divergent logs after a double failover": ([(0, 0, 0), (1, 1, 1)], 1, [(0, 0, 0), (1, 1, 0)], 2, 1, 1),
    # KIP-279 fast failover: the follower led epoch 2 (offsets 5-7) on top of epoch-0
    # records 3-4 that the leader replaced in epoch 1 (3-7, then epoch 3 from 8). The leader
    # answers epoch 1, which the follower never had: it asks again about its epoch 0 and
    # cuts at 3 (a single round, or the HW, would keep the wrong 3-4).
    "KIP-279 fast failover, two rounds": ([(0, 2, 0), (3, 7, 1), (8, 9, 3)], 3,
                                          [(0, 2, 0), (3, 4, 0), (5, 7, 2)], 4, 3, 2),
    "caught up follower keeps everything": ([(0, 4, 0), (5, 9, 1)], 1, [(0, 4, 0), (5, 9, 1)], 8, 10, 1),
    "behind follower keeps everything": ([(0, 4, 0), (5, 6, 1), (7, 9, 1)], 1, [(0, 4, 0), (5, 6, 1)], 5, 7, 1),
    "follower with no epochs: its HW": ([(0, 4, 0)], 1, [], 0, 0, 1),
    # the follower's only epoch (5) is newer than the leader's answer (3): nothing is known
    # to be common (Kafka's cache answers the start of the follower's first epoch)
    "no common epoch": ([(0, 3, 3), (4, 9, 7)], 7, [(0, 5, 5)], 2, 0, 1),
}


@pytest.mark.parametrize("case", TRUNCATION)
def test_truncation_tables(case):
    """KIP-101/279 as the fetcher runs them; afterwards the follower's log is a prefix of
    the leader's, epochs included, and the records removed are counted."""
    leader_batches, epoch, follower_batches, hw, expected, rounds = TRUNCATION[case]
    leader_p, follower = _pair(leader_batches, epoch, follower_batches, hw)
    before = follower.log.log_end_offset
    assert converge(follower, leader_p) == (expected, rounds)
    assert follower.log.log_end_offset == expected
    assert follower.truncated_records == before - expected
    assert follower.high_watermark <= expected  # the log clamps its HW
    assert follower.log.batches == [b for b in leader_p.log.batches if b[1] < expected]


def test_unclean_leader_answer_sends_the_follower_to_its_high_watermark():
    """The leader answers (-1, -1) (it has no such epoch at all): the HW rule."""
    _, follower = _pair([(0, 9, 4)], 4, [(0, 3, 0), (4, 7, 1)], 5)
    assert follower.truncation_offset(-1, -1) == 5


def test_truncation_never_goes_below_the_log_start():
    _, follower = _pair([(0, 9, 2)], 2, [(0, 9, 0)], 8)
    follower.log.delete_records(6)
    assert follower.truncation_offset(0, 3) == 6


def test_truncate_to_a_mid_batch_offset_removes_the_whole_batch():
    truncated = []
    _, follower = _pair([(0, 9, 1)], 1, [(0, 4, 0), (5, 9, 0)], 9)
    follower.on_truncated = truncated.append
    assert follower.truncate_to(7) == 5
    assert (follower.log.log_end_offset, follower.high_watermark, follower.truncated_records) == (5, 5, 5)
    assert truncated == [follower]
    assert follower.truncate_to(5) == 0 and truncated == [follower]  # nothing removed: no hook
