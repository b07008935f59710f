"""A cluster broker's group coordinator: groups of the ``__consumer_offsets`` partitions it
leads, loaded on election and dropped on resignation, and commits that count once
acknowledged (issue 13, step 2, item 1). No sockets: the replicated journal is a function
of the test's, which decides when and how each write is acknowledged."""

import asyncio

from kproto.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidCommitOffsetSizeError,
    MessageTooLargeError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
)
from minibroker.coordinator import CommittedOffset, GroupCoordinator, GroupState
from minibroker.coordinator.offsets_log import partition_for

PARTITIONS = 3
CONFIG = {"group.initial.rebalance.delay.ms": 60_000, "group.min.session.timeout.ms": 10,
          "group.max.session.timeout.ms": 600_000}


def group_on(partition, avoid=()):
    """A group id whose offsets partition is ``partition``."""
    return next(g for g in (f"g{i}" for i in range(1000)) if partition_for(g, PARTITIONS) == partition
                and g not in avoid)


def committed(offset):
    return CommittedOffset(offset=offset, commit_timestamp=0)


def join_args():
    return dict(member_id="", group_instance_id=None, client_id="c", client_host="", session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000, protocol_type="consumer", protocols=[("range", b"")],
                require_known_member_id=False)


class Acks:
    """The replicated journal: records each write and holds it until the test answers."""

    def __init__(self):
        self.writes = []  # (group, entries, future)

    async def __call__(self, group_id, entries):
        future = asyncio.get_running_loop().create_future()
        self.writes.append((group_id, entries, future))
        return await future


def commit(coordinator, group, offset):
    return coordinator.commit_offsets(group, member_id="", group_instance_id=None, generation_id=-1,
                                      offsets=[("t", 0, committed(offset))])


def test_groups_are_loading_until_the_partition_is_loaded_then_answered():
    """Issue 13 step 2, item 1: NOT_COORDINATOR for a partition not led here,
    COORDINATOR_LOAD_IN_PROGRESS from the election until the load, then the loaded
    commits with their group Empty (Kafka's loadGroupsForPartition)."""
    coordinator = GroupCoordinator(CONFIG, replicated_journal=Acks())
    g = group_on(1)
    assert coordinator.status(g) == NotCoordinatorError.code
    load = coordinator.begin_load(1, PARTITIONS)
    assert coordinator.status(g) == CoordinatorLoadInProgressError.code and coordinator.loading()
    assert coordinator.status(group_on(2)) == NotCoordinatorError.code
    assert coordinator.begin_load(1, PARTITIONS) is None  # held already (a re-elected leader)
    assert coordinator.finish_load(load, [(g, "t", 0, committed(4)), (g, "t", 0, committed(7))])
    assert coordinator.status(g) == 0 and not coordinator.loading()
    assert coordinator.offsets.get(g, "t", 0) == committed(7)
    assert coordinator.get(g).state is GroupState.Empty


def test_unload_answers_held_joins_not_coordinator_and_forgets_the_partitions_groups():
    """Issue 13 step 2, item 1: a resigned coordinator answers held JoinGroups
    NOT_COORDINATOR (Kafka's removeGroupsForPartition) and drops that partition's groups
    and offsets, keeping the other partitions'; a load that ends after it changes nothing."""
    async def run():
        coordinator = GroupCoordinator(CONFIG, replicated_journal=Acks())
        g1, g2 = group_on(1), group_on(2)
        coordinator.finish_load(coordinator.begin_load(1, PARTITIONS), [(g1, "t", 0, committed(3))])
        coordinator.finish_load(coordinator.begin_load(2, PARTITIONS), [(g2, "t", 0, committed(5))])
        held = asyncio.ensure_future(coordinator.join(g1, **join_args()))  # held: initial rebalance delay
        await asyncio.sleep(0)
        assert not held.done()
        coordinator.unload(1)
        assert (await held).error_code == NotCoordinatorError.code
        assert coordinator.status(g1) == NotCoordinatorError.code
        assert coordinator.get(g1) is None and coordinator.offsets.get(g1, "t", 0) is None
        assert coordinator.offsets.get(g2, "t", 0) == committed(5) and coordinator.status(g2) == 0

        stale = coordinator.begin_load(1, PARTITIONS)
        coordinator.unload(1)
        assert not coordinator.finish_load(stale, [(g1, "t", 0, committed(9))])
        assert coordinator.offsets.get(g1, "t", 0) is None
        coordinator.close()

    asyncio.run(run())


def test_a_commit_counts_once_acknowledged_and_failures_are_mapped_as_kafka():
    """Issue 13 step 2, item 1: a cluster's commit is visible only after its write is
    acknowledged (Kafka applies it on the append's completion); the append's errors are
    answered as GroupMetadataManager.storeOffsets maps them; a commit whose coordinator
    resigned while it waited is NOT_COORDINATOR and not applied."""
    async def run():
        acks = Acks()
        coordinator = GroupCoordinator(CONFIG, replicated_journal=acks)
        g = group_on(0)
        coordinator.finish_load(coordinator.begin_load(0, PARTITIONS), [])

        async def answered(offset, outcome):
            pending = asyncio.ensure_future(commit(coordinator, g, offset))
            await asyncio.sleep(0)
            _, entries, future = acks.writes[-1]
            assert entries == [(g, "t", 0, committed(offset))]
            assert not pending.done()
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
            return await pending

        assert await answered(5, 0) == 0
        assert coordinator.offsets.get(g, "t", 0) == committed(5)
        for outcome, code in [
            (RequestTimedOutError.code, CoordinatorNotAvailableError.code),
            (NotEnoughReplicasAfterAppendError.code, CoordinatorNotAvailableError.code),
            (NotLeaderOrFollowerError.code, NotCoordinatorError.code),
            (NotEnoughReplicasError("isr below min"), CoordinatorNotAvailableError.code),
            (MessageTooLargeError("too big"), InvalidCommitOffsetSizeError.code),
        ]:
            assert await answered(6, outcome) == code, outcome
            assert coordinator.offsets.get(g, "t", 0) == committed(5)  # not applied

        pending = asyncio.ensure_future(commit(coordinator, g, 8))
        await asyncio.sleep(0)
        coordinator.unload(0)
        acks.writes[-1][2].set_result(0)
        assert await pending == NotCoordinatorError.code
        assert coordinator.offsets.get(g, "t", 0) is None
        coordinator.close()

    asyncio.run(run())
