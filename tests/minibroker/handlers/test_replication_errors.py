"""The data-path handlers under Kafka's replication rules (issue 13, step 1; design 2.2).

A cluster-mode :class:`~minibroker.state.BrokerState` with a hand-made metadata image and
no network: its partition of "t" is put in the LEADER or FOLLOWER role by
``Partition.apply_registration``, and followers are simulated by Fetch requests with a
replica id (as the real fetcher sends them). Each test names the Kafka rule it checks.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from types import SimpleNamespace

import pytest

from kproto.errors import (
    FencedLeaderEpochError,
    InvalidRequestError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol.messages import (
    DeleteRecordsRequest,
    FetchRequest,
    IncrementalAlterConfigsRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from kproto.protocol.timestamps import OffsetTimestamp
from kproto.records import decode_record_set
from minibroker.cluster.api import (
    AlterConfigsResource,
    AlterPartitionReply,
    ClusterContext,
    ConfigResult,
)
from minibroker.cluster.metadata import (
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from minibroker.cluster.partition import ReplicaRole
from minibroker.config import BrokerConfig
from minibroker.handlers import (
    RequestContext,
    cluster,
    configs,
    delete_records,
    fetch,
    list_offsets,
    offsets,
    produce,
)
from minibroker.state import BrokerState
from tests.minibroker.test_server import batch

TOPIC_ID = uuid.UUID(int=7)


class FakeChannel:
    """The controller as far as these handlers reach it: AlterPartition proposals are
    recorded (and applied back, as the controller's commit would be), producer id blocks,
    config changes (recorded, answered with an error)."""

    active_controller_id = 2

    def __init__(self) -> None:
        self.proposals: list = []
        self.blocks = 0
        self.config_changes: list = []
        self.state: BrokerState | None = None

    async def alter_partition(self, request):
        self.proposals.append(request)
        p = self.state.topics["t"].partitions[request.partition]
        reg = PartitionRegistration(replicas=p.replicas, isr=tuple(m.broker_id for m in request.new_isr),
                                    leader=p.leader, leader_epoch=p.leader_epoch,
                                    partition_epoch=request.partition_epoch + 1)
        p.apply_registration(reg, self.state.clock_ms())
        return AlterPartitionReply(error_code=0, registration=reg)

    async def allocate_producer_ids(self, broker_id, broker_epoch):
        self.blocks += 1
        return 1000 * self.blocks, 1000

    async def alter_configs(self, resources, *, validate_only):
        self.config_changes.append((list(resources), validate_only))
        return [ConfigResult(error_code=InvalidRequestError.code, error_message="from the controller")
                for _ in resources]


def brokers() -> dict[int, BrokerRegistration]:
    return {i: BrokerRegistration(broker_id=i, broker_epoch=100 + i, incarnation_id=uuid.UUID(int=i),
                                  host="127.0.0.1", port=9000 + i, rack=None, fenced=False) for i in range(3)}


def node(tmp_path, *, node_id=0, leader=0, isr=(0, 1, 2), leader_epoch=3, configs=None, broker_config=None):
    """A cluster broker ``node_id`` with topic "t" (one partition, replicas 0-2);
    ``broker_config``: more broker configs."""
    reg = PartitionRegistration(replicas=(0, 1, 2), isr=tuple(isr), leader=leader, leader_epoch=leader_epoch,
                                partition_epoch=5)
    image = MetadataImage(brokers=brokers())
    topic_image = TopicImage(name="t", topic_id=TOPIC_ID, partitions={0: reg}, configs=dict(configs or {}))
    image.topics[TOPIC_ID] = topic_image
    channel = FakeChannel()
    context = ClusterContext(node_id=node_id, channel=channel, image=image, broker_epoch=100 + node_id)
    config = BrokerConfig({"log.dirs": str(tmp_path / f"broker-{node_id}"), "broker.id": node_id,
                           **(broker_config or {})})
    state = BrokerState(config, "127.0.0.1", 9000 + node_id, cluster=context)
    channel.state = state
    topic = state.ensure_topic(topic_image)
    topic.partitions[0].apply_registration(reg, state.clock_ms())
    return state


def header(version):
    """A handler's context: an unauthenticated client on the PLAINTEXT listener (the API
    key is the handler's own, which none of them reads)."""
    return RequestContext(-1, version, 0, "test", None, "/127.0.0.1")


def run(coro):
    return asyncio.run(coro)


def produce_request(acks=-1, timeout_ms=5000, values=(b"a",), partition=0):
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch(*values))])])


def fetch_request(offset, *, replica_id=-1, replica_epoch=-1, current_leader_epoch=-1, last_fetched_epoch=-1,
                  version=15, max_wait_ms=0, log_start_offset=-1):
    kwargs = dict(replica_state=FetchRequest.ReplicaState(replica_id=replica_id, replica_epoch=replica_epoch)) \
        if version >= 15 else dict(replica_id=replica_id)
    return FetchRequest(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
        topic="t", topic_id=TOPIC_ID, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=offset, current_leader_epoch=current_leader_epoch,
            last_fetched_epoch=last_fetched_epoch, log_start_offset=log_start_offset,
            partition_max_bytes=1 << 20)])], **kwargs)


async def do_fetch(state, offset, version=15, **kwargs):
    response = await fetch.handle(state, header(version), fetch_request(offset, version=version, **kwargs))
    return response.responses[0].partitions[0]


def offsets_of(records) -> list[int]:
    return [r.offset for r in decode_record_set(records.tobytes() if hasattr(records, "tobytes") else records)[0]]


async def produce_one(state, acks=1, values=(b"a",)):
    response = await produce.handle(state, header(9), produce_request(acks=acks, values=values))
    return response.responses[0].partition_responses[0]


# -- Produce --------------------------------------------------------------------------------


@pytest.mark.parametrize("acks", [1, -1, 0])
def test_produce_to_a_follower_is_not_leader_or_follower(tmp_path, acks):
    """ReplicaManager.appendToLocalLog → getPartitionOrException(requireLeader): a follower
    answers NOT_LEADER_OR_FOLLOWER and appends nothing."""
    state = node(tmp_path, node_id=1)
    try:
        if acks:
            response = run(produce.handle(state, header(10), produce_request(acks=acks)))
            answer = response.responses[0].partition_responses[0]
            assert answer.error_code == NotLeaderOrFollowerError.code
            # KIP-951 (v10+): the leader this broker knows, with its endpoint.
            assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (0, 3)
            assert [(e.node_id, e.port) for e in response.node_endpoints] == [(0, 9000)]
        assert state.topics["t"].partitions[0].log.log_end_offset == 0
    finally:
        state.close()


def test_produce_acks_all_below_min_insync_is_not_enough_replicas_and_appends_nothing(tmp_path):
    """Partition.appendRecordsToLeader: acks=all with ISR < min.insync.replicas →
    NOT_ENOUGH_REPLICAS before the append; acks=1 is not checked."""
    state = node(tmp_path, isr=(0,), configs={"min.insync.replicas": "2"})
    try:
        answer = run(produce_one(state, acks=-1))
        assert answer.error_code == NotEnoughReplicasError.code and answer.base_offset == -1
        assert state.topics["t"].partitions[0].log.log_end_offset == 0
        assert run(produce_one(state, acks=1)).error_code == 0
    finally:
        state.close()


def test_produce_acks_all_waits_for_the_followers_and_answers_once_the_high_watermark_passes(tmp_path):
    """DelayedProduce: acks=all completes when every ISR member fetched past the batch."""
    state = node(tmp_path)

    async def scenario():
        waiting = asyncio.ensure_future(produce.handle(state, header(9), produce_request(acks=-1)))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # followers have not fetched
        for follower in (1, 2):
            await do_fetch(state, 1, replica_id=follower, replica_epoch=100 + follower)
        response = await asyncio.wait_for(waiting, 5)
        return response.responses[0].partition_responses[0]

    try:
        answer = run(scenario())
        assert (answer.error_code, answer.base_offset) == (0, 0)
        assert state.topics["t"].partitions[0].high_watermark == 1
    finally:
        state.close()


def test_produce_acks_all_times_out_with_request_timed_out(tmp_path):
    """DelayedProduce expiry: no follower fetched within timeout_ms → REQUEST_TIMED_OUT
    (the records stay appended, as in Kafka)."""
    state = node(tmp_path)

    async def scenario():
        return (await produce.handle(state, header(9), produce_request(acks=-1, timeout_ms=50))
                ).responses[0].partition_responses[0]

    try:
        assert run(scenario()).error_code == RequestTimedOutError.code
        assert state.topics["t"].partitions[0].log.log_end_offset == 1
    finally:
        state.close()


def test_produce_acks_all_on_a_solo_isr_answers_at_once(tmp_path):
    """An ISR of the leader alone: the high watermark is there at the append."""
    state = node(tmp_path, isr=(0,))
    try:
        assert run(produce_one(state, acks=-1)).error_code == 0
    finally:
        state.close()


# -- Fetch ----------------------------------------------------------------------------------


def test_consumer_fetch_never_returns_a_batch_at_or_above_the_high_watermark(tmp_path):
    """Partition.fetchRecords: a consumer reads below the high watermark only; an offset
    between HW and LEO answers no records and no error."""
    state = node(tmp_path)

    async def scenario():
        await produce_one(state, values=(b"a", b"b"))  # offsets 0-1
        for follower in (1, 2):
            await do_fetch(state, 2, replica_id=follower, replica_epoch=100 + follower)  # HW 2
        await produce_one(state, values=(b"c",))  # offset 2, above HW
        consumer = await do_fetch(state, 0)
        between = await do_fetch(state, 2)
        follower = await do_fetch(state, 0, replica_id=1, replica_epoch=101)
        return consumer, between, follower

    try:
        consumer, between, follower = run(scenario())
        assert consumer.error_code == 0 and consumer.high_watermark == 2 and consumer.last_stable_offset == 2
        assert offsets_of(consumer.records) == [0, 1]
        assert (between.error_code, offsets_of(between.records)) == (0, [])
        assert offsets_of(follower.records) == [0, 1, 2]  # a follower reads up to the LEO
    finally:
        state.close()


@pytest.mark.parametrize("version", [14, 15])
def test_follower_fetch_moves_the_high_watermark_and_proposes_the_isr(tmp_path, version):
    """Replica ids from v14's replica_id and v15's replica_state (KIP-903); a lagging
    replica out of the ISR that catches up is proposed back at once (Kafka expands the ISR
    on the fetch)."""
    state = node(tmp_path, isr=(0, 1))

    async def scenario():
        await produce_one(state)
        await do_fetch(state, 1, version=version, replica_id=1, replica_epoch=101)
        await do_fetch(state, 1, version=version, replica_id=2, replica_epoch=102)
        await asyncio.sleep(0.01)  # the proposal is a task

    try:
        run(scenario())
        p = state.topics["t"].partitions[0]
        assert p.high_watermark == 1
        proposals = state.cluster.channel.proposals
        assert [tuple(m.broker_id for m in r.new_isr) for r in proposals] == [(0, 1, 2)]
        assert p.isr == (0, 1, 2)
    finally:
        state.close()


def test_fetch_errors_not_leader_fenced_unknown_epoch_and_unknown_replica(tmp_path):
    """KIP-320 fencing (v9+) before the role, as Partition.localLogWithEpochOrThrow; a
    replica id that is not a replica → NOT_LEADER_OR_FOLLOWER."""
    leader, follower = node(tmp_path / "a"), node(tmp_path / "b", node_id=1)
    try:
        # A replica's fetch needs the leader; a consumer's v11+ fetch may read from a
        # follower (KIP-392: tests/minibroker/handlers/test_fetch_replicas.py), a v10 one not.
        answer = run(do_fetch(follower, 0, replica_id=2))
        assert answer.error_code == NotLeaderOrFollowerError.code
        assert run(do_fetch(follower, 0, version=10)).error_code == NotLeaderOrFollowerError.code
        assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (0, 3)  # KIP-951
        assert run(do_fetch(leader, 0, current_leader_epoch=2)).error_code == FencedLeaderEpochError.code
        assert run(do_fetch(leader, 0, current_leader_epoch=4)).error_code == UnknownLeaderEpochError.code
        assert run(do_fetch(leader, 0, current_leader_epoch=3)).error_code == 0
        assert run(do_fetch(follower, 0, current_leader_epoch=4)).error_code == UnknownLeaderEpochError.code
        assert run(do_fetch(leader, 0, replica_id=7)).error_code == NotLeaderOrFollowerError.code
        # v8 has no current_leader_epoch: the field is not looked at.
        assert run(do_fetch(leader, 0, version=8, current_leader_epoch=2)).error_code == 0
    finally:
        leader.close()
        follower.close()


def test_fetch_v12_answers_a_diverging_epoch_and_no_records(tmp_path):
    """KIP-595: a follower whose last fetched epoch ends before its fetch offset on the
    leader gets diverging_epoch (end of that epoch) to truncate to; v11 has no such check."""
    state = node(tmp_path)

    async def scenario():
        await produce_one(state, values=(b"a", b"b"))  # epoch 3 from offset 0 (the leader's)
        return (await do_fetch(state, 2, version=12, replica_id=1, last_fetched_epoch=1),
                await do_fetch(state, 2, version=12, replica_id=1, last_fetched_epoch=3))

    try:
        diverged, same = run(scenario())
        assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (1, 0)
        assert offsets_of(diverged.records) == []
        assert same.diverging_epoch.epoch == -1 and same.error_code == 0
    finally:
        state.close()


# -- ListOffsets ----------------------------------------------------------------------------


async def list_offset(state, timestamp, *, replica_id=-1, current_leader_epoch=-1, version=7):
    request = ListOffsetsRequest(replica_id=replica_id, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name="t", partitions=[ListOffsetsRequest.ListOffsetsPartition(
            partition_index=0, timestamp=timestamp, current_leader_epoch=current_leader_epoch)])])
    return (await list_offsets.handle(state, header(version), request)).topics[0].partitions[0]


def test_list_offsets_latest_is_the_high_watermark_for_a_consumer_and_the_leo_for_a_replica(tmp_path):
    """Partition.fetchOffsetForTimestamp: LATEST is the HW for consumers, the LEO for a
    follower (replica_id >= 0); leader_epoch is the partition's (v4+)."""
    state = node(tmp_path)

    async def scenario():
        await produce_one(state, values=(b"a", b"b"))
        return (await list_offset(state, OffsetTimestamp.LATEST),
                await list_offset(state, OffsetTimestamp.LATEST, replica_id=1),
                await list_offset(state, 1_000))

    try:
        consumer, replica, by_time = run(scenario())
        assert (consumer.offset, consumer.leader_epoch) == (0, 3)
        assert replica.offset == 2
        assert by_time.offset == -1  # the record at 1000 ms is not committed yet
    finally:
        state.close()


def test_list_offsets_errors(tmp_path):
    leader, follower = node(tmp_path / "a"), node(tmp_path / "b", node_id=1)
    try:
        assert run(list_offset(follower, OffsetTimestamp.LATEST)).error_code == NotLeaderOrFollowerError.code
        assert run(list_offset(leader, -1, current_leader_epoch=1)).error_code == FencedLeaderEpochError.code
        assert run(list_offset(leader, -1, current_leader_epoch=9)).error_code == UnknownLeaderEpochError.code
        assert run(list_offset(leader, -1, current_leader_epoch=1, version=3)).error_code == 0  # no field before v4
    finally:
        leader.close()
        follower.close()


# -- OffsetForLeaderEpoch, DeleteRecords, DescribeCluster, configs, producer ids -------------


async def epoch_end(state, epoch, current_leader_epoch=-1, version=4, partition=0):
    request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic="t", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
            partition=partition, current_leader_epoch=current_leader_epoch, leader_epoch=epoch)])])
    p = (await cluster.offset_for_leader_epoch(state, header(version), request)).topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


def test_offset_for_leader_epoch_answers_from_the_leaders_epoch_cache(tmp_path):
    """LeaderEpochFileCache.endOffsetFor: latest epoch → LEO; newer → (-1, -1); older →
    the start of the next epoch; leader only, fenced (v2+)."""
    leader, follower = node(tmp_path / "a"), node(tmp_path / "b", node_id=1)
    try:
        run(produce_one(leader, values=(b"a", b"b")))
        assert run(epoch_end(leader, 3)) == (0, 3, 2)
        assert run(epoch_end(leader, 4)) == (0, -1, -1)
        assert run(epoch_end(leader, 1)) == (0, 1, 0)
        assert run(epoch_end(leader, 3, current_leader_epoch=2))[0] == FencedLeaderEpochError.code
        assert run(epoch_end(leader, 3, current_leader_epoch=4))[0] == UnknownLeaderEpochError.code
        assert run(epoch_end(leader, 3, current_leader_epoch=2, version=1))[0] == 0
        assert run(epoch_end(follower, 3))[0] == NotLeaderOrFollowerError.code
        assert run(epoch_end(leader, 3, partition=5))[0] == UnknownTopicOrPartitionError.code
    finally:
        leader.close()
        follower.close()


async def delete(state, offset, timeout_ms=1000):
    request = DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=offset)])])
    p = (await delete_records.handle(state, header(2), request)).topics[0].partitions[0]
    return p.error_code, p.low_watermark


def test_delete_records_leader_only_and_bounded_by_the_high_watermark(tmp_path):
    leader, follower = node(tmp_path / "a"), node(tmp_path / "b", node_id=1)

    async def scenario():
        await produce_one(leader, values=(b"a", b"b"))  # HW still 0
        assert (await delete(follower, 0))[0] == NotLeaderOrFollowerError.code
        assert (await delete(leader, 1))[0] == 1  # OFFSET_OUT_OF_RANGE: above the HW
        for r in (1, 2):  # the followers say where their logs start
            await do_fetch(leader, 0, replica_id=r, replica_epoch=100 + r, log_start_offset=0)
        assert await delete(leader, -1) == (0, 0)  # -1: the HW

    try:
        run(scenario())
    finally:
        leader.close()
        follower.close()


def test_delete_records_waits_for_every_live_replicas_log_start(tmp_path):
    """Issue 13 step 2, item 5.2 (Kafka's DelayedDeleteRecords, Partition.lowWatermarkIfLeader):
    the leader's log start moves at once, the answer waits until the followers' fetches say
    theirs reached the offset and gives the low watermark; a follower on a fenced broker
    does not count; one that never tells makes the answer REQUEST_TIMED_OUT."""
    leader = node(tmp_path)

    async def scenario():
        await produce_one(leader, values=(b"a", b"b", b"c"))
        for r in (1, 2):
            await do_fetch(leader, 3, replica_id=r, replica_epoch=100 + r, log_start_offset=0)
        assert leader.topics["t"].partitions[0].high_watermark == 3
        waiting = asyncio.ensure_future(delete(leader, 2, timeout_ms=5000))
        await asyncio.sleep(0.05)
        assert not waiting.done() and leader.topics["t"].partitions[0].log.log_start_offset == 2
        await do_fetch(leader, 3, replica_id=1, replica_epoch=101, log_start_offset=2)
        await asyncio.sleep(0.05)
        assert not waiting.done()  # broker 2's replica still starts at 0
        await do_fetch(leader, 3, replica_id=2, replica_epoch=102, log_start_offset=2)
        assert await waiting == (0, 2)
        assert await delete(leader, 3, timeout_ms=50) == (RequestTimedOutError.code, 2)
        leader.cluster.image.brokers[2] = replace(leader.cluster.image.brokers[2], fenced=True)
        await do_fetch(leader, 3, replica_id=1, replica_epoch=101, log_start_offset=3)
        assert await delete(leader, 3, timeout_ms=5000) == (0, 3)  # broker 2 is fenced: not counted

    try:
        run(scenario())
    finally:
        leader.close()


def test_a_waiting_delete_records_fails_when_leadership_is_lost(tmp_path):
    """DelayedDeleteRecords.tryComplete: a partition no longer led here answers
    NOT_LEADER_OR_FOLLOWER with low watermark -1."""
    leader = node(tmp_path)

    async def scenario():
        await produce_one(leader, values=(b"a", b"b"))
        for r in (1, 2):
            await do_fetch(leader, 2, replica_id=r, replica_epoch=100 + r, log_start_offset=0)
        waiting = asyncio.ensure_future(delete(leader, 1, timeout_ms=5000))
        await asyncio.sleep(0.05)
        partition = leader.topics["t"].partitions[0]
        partition.apply_registration(PartitionRegistration(replicas=(0, 1, 2), isr=(1, 2), leader=1, leader_epoch=4,
                                                           partition_epoch=6), leader.clock_ms())
        assert await waiting == (NotLeaderOrFollowerError.code, -1)

    try:
        run(scenario())
    finally:
        leader.close()


def test_describe_cluster_lists_the_images_live_brokers_and_the_active_controller(tmp_path):
    state = node(tmp_path)
    state.cluster.image.brokers[1] = BrokerRegistration(
        broker_id=1, broker_epoch=101, incarnation_id=uuid.UUID(int=1), host="127.0.0.1", port=9001, rack=None,
        fenced=True)
    try:
        request = SimpleNamespace(include_cluster_authorized_operations=False)
        response = run(cluster.describe_cluster(state, header(0), request))
        assert response.controller_id == 2
        assert [(b.broker_id, b.port) for b in response.brokers] == [(0, 9000), (2, 9002)]
    finally:
        state.close()


def test_topic_config_changes_are_forwarded_to_the_controller(tmp_path):
    """Issue 13 step 2, item 5.1 (was refused in step 1): a cluster's topic configs are the
    controller's (ConfigRecord), so IncrementalAlterConfigs goes to it as it is (KIP-590)
    and its answer is the broker's; nothing changes locally until the record comes back."""
    state = node(tmp_path)
    request = IncrementalAlterConfigsRequest(validate_only=True, resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=2, resource_name="t", configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                name="retention.ms", config_operation=0, value="1000")])])
    try:
        result = run(configs.incremental_alter_configs(state, header(0), request)).responses[0]
        assert (result.error_code, result.error_message) == (InvalidRequestError.code, "from the controller")
        [(resources, validate_only)] = state.cluster.channel.config_changes
        assert validate_only and resources == [AlterConfigsResource(
            resource_type=2, resource_name="t", ops=(("retention.ms", 0, "1000"),), replace=False)]
        assert state.topics["t"].configs == {}
    finally:
        state.close()


def test_producer_ids_come_from_controller_blocks(tmp_path):
    """AllocateProducerIds: a cluster broker hands out ids of the blocks the controller gave
    it, and asks for the next block when one runs out."""
    state = node(tmp_path)

    async def ids():
        return [await state.new_producer_id_async() for _ in range(1001)]

    try:
        got = run(ids())
        assert got[:2] == [1000, 1001] and got[-1] == 2000 and state.cluster.channel.blocks == 2
    finally:
        state.close()


def test_a_partition_hosted_here_is_a_follower_and_not_hosted_has_no_log(tmp_path):
    state = node(tmp_path, node_id=1)
    try:
        p = state.topics["t"].partitions[0]
        assert p.role is ReplicaRole.FOLLOWER and p.log is not None and p.log.high_watermark == 0
    finally:
        state.close()


def test_offset_apis_answer_not_coordinator_on_a_broker_that_does_not_own_the_group(tmp_path):
    """Kafka's GroupCoordinator: a group's offsets are served by the leader of its
    __consumer_offsets partition only; here there is none yet."""
    state = node(tmp_path)
    commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])
    fetched = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g", topics=None)])
    old_fetch = OffsetFetchRequest(group_id="g", topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
        name="t", partition_indexes=[0])])
    delete = OffsetDeleteRequest(group_id="g", topics=[])
    try:
        assert run(offsets.offset_commit(state, header(8), commit)).topics[0].partitions[0].error_code \
            == NotCoordinatorError.code
        assert run(offsets.offset_fetch(state, header(8), fetched)).groups[0].error_code == NotCoordinatorError.code
        assert run(offsets.offset_fetch(state, header(7), old_fetch)).error_code == NotCoordinatorError.code
        assert run(offsets.offset_delete(state, header(0), delete)).error_code == NotCoordinatorError.code
    finally:
        state.close()


@pytest.mark.parametrize("version", [9, 10, 11])
def test_not_leader_answers_encode_in_every_version(tmp_path, version):
    """KIP-951's tagged hints exist from Produce v10 and Fetch v12 only: an answer of an
    older version must leave them out (the encoder refuses a field its version lacks)."""
    from kproto.protocol import ApiKey
    from kproto.protocol.frames import encode_response, encode_response_parts

    state = node(tmp_path, node_id=1)
    try:
        answer = run(produce.handle(state, header(version), produce_request()))
        assert encode_response(ApiKey.PRODUCE, version, 1, answer)
        fetched = run(fetch.handle(state, header(version + 2), fetch_request(0, version=version + 2)))
        assert encode_response_parts(ApiKey.FETCH, version + 2, 1, fetched)
    finally:
        state.close()
