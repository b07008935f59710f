"""The controller's rules, KRaft's (ClusterControlManager, ReplicationControlManager,
PartitionChangeBuilder, ProducerIdControlManager; KIP-631, KIP-903), with a fake clock
(issue 13, WP2)."""

import random
import uuid

import pytest

from kproto.errors import StaleBrokerEpochError
from minibroker.cluster.api import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    NewTopic,
    ReplicaBrokerEpoch,
)
from minibroker.cluster.controller import Controller
from minibroker.cluster.metadata import MetadataImage, MetadataLog
from minibroker.config import BrokerConfig

SESSION = 250


class Clock:
    def __init__(self):
        self.now = 1_000

    def __call__(self):
        return self.now


class World:
    """A controller with ``n`` registered, unfenced brokers, and a broker-side image fed by
    its commits (the Quorum's delivery)."""

    def __init__(self, n=3, racks=None, config=None):
        self.clock = Clock()
        self.log = MetadataLog(None)
        self.log.begin_epoch(1)
        self.delivered = MetadataImage()
        self.config = BrokerConfig({"broker.session.timeout.ms": SESSION, **(config or {})})
        self.c = Controller(node_id=0, epoch=1, log=self.log, config=self.config, clock_ms=self.clock,
                            rng=random.Random(0), on_commit=self.delivered.apply)
        self.epochs = {}
        for i in range(n):
            self.register(i, rack=racks[i] if racks else None)
            self.heartbeat(i)

    def register(self, i, rack=None, incarnation=None):
        reply = self.c.register_broker(BrokerRegistrationRequest(
            broker_id=i, incarnation_id=incarnation or uuid.UUID(int=i + 1), host="127.0.0.1", port=9000 + i,
            rack=rack))
        if reply.error_code == 0:
            self.epochs[i] = reply.broker_epoch
        return reply

    def heartbeat(self, i, offset=None, epoch=None, want_shut_down=False):
        return self.c.heartbeat(BrokerHeartbeatRequest(
            broker_id=i, broker_epoch=self.epochs[i] if epoch is None else epoch,
            current_metadata_offset=self.log.end_offset - 1 if offset is None else offset,
            want_shut_down=want_shut_down))

    def create(self, name="t", partitions=1, rf=3, assignments=None, configs=None, validate_only=False):
        [result] = self.c.create_topics([NewTopic(name=name, num_partitions=partitions, replication_factor=rf,
                                                  assignments=assignments, configs=configs)],
                                        validate_only=validate_only)
        return result

    def part(self, name="t", p=0):
        return self.c.image.topic_by_name(name).partitions[p]

    def alive(self, *ids, ms=SESSION // 2):
        """Time passes by ``ms``; brokers ``ids`` heartbeat; the controller ticks."""
        self.clock.now += ms
        for i in ids:
            self.heartbeat(i)
        self.c.tick(self.clock.now)

    def alter(self, isr, *, broker=None, leader_epoch=None, partition_epoch=None, epochs=None, sender_epoch=None):
        part = self.part()
        broker = part.leader if broker is None else broker
        return self.c.alter_partition(AlterPartitionRequest(
            broker_id=broker, broker_epoch=self.epochs[broker] if sender_epoch is None else sender_epoch,
            topic_id=self.c.image.topic_by_name("t").topic_id, partition=0,
            leader_epoch=part.leader_epoch if leader_epoch is None else leader_epoch,
            partition_epoch=part.partition_epoch if partition_epoch is None else partition_epoch,
            new_isr=tuple(ReplicaBrokerEpoch(broker_id=b, broker_epoch=(epochs or {}).get(b, self.epochs[b]))
                          for b in isr)))


# -- registration and heartbeats -----------------------------------------------------------


def test_broker_epoch_is_the_offset_of_its_registration_and_it_starts_fenced():
    w = World(n=0)
    assert w.register(0).broker_epoch == 0
    assert w.c.image.brokers[0].fenced
    assert w.register(1).broker_epoch == 1
    assert w.log.read(1)[0][1].broker_epoch == 1


@pytest.mark.parametrize("offset, fenced_after", [(-1, True), (0, True), (1, False), (5, False)])
def test_a_broker_is_unfenced_once_its_heartbeat_caught_up(offset, fenced_after):
    w = World(n=0)
    w.register(0)
    w.register(1)  # broker 1's epoch is 1
    reply = w.heartbeat(1, offset=offset)
    assert reply.error_code == 0 and reply.is_caught_up == (not fenced_after)
    assert reply.is_fenced == fenced_after == w.c.image.brokers[1].fenced


@pytest.mark.parametrize("broker, epoch, code", [(0, -1, 77), (0, 99, 77), (7, 0, 77)])
def test_heartbeat_errors(broker, epoch, code):
    w = World(n=1)
    w.epochs[7] = 0
    assert w.heartbeat(broker, epoch=epoch).error_code == code


def test_registering_a_new_incarnation_while_the_old_session_lives_is_duplicate_registration():
    w = World(n=3)
    assert w.register(1, incarnation=uuid.UUID(int=77)).error_code == 101
    w.alive(0, 2, ms=SESSION + 1)  # broker 1's session expires: fenced by the tick
    assert w.c.image.brokers[1].fenced
    reply = w.register(1, incarnation=uuid.UUID(int=77))
    assert reply.error_code == 0 and reply.broker_epoch == w.log.end_offset - 1


def test_registering_again_fences_the_old_epoch_out_of_every_isr_first():
    w = World(n=3)
    w.create(rf=3)
    w.clock.now += SESSION + 1  # expired, not yet ticked
    w.register(0, incarnation=uuid.UUID(int=55))
    assert 0 not in w.part().isr and w.part().leader != 0


# -- session expiry and elections ----------------------------------------------------------


def test_session_expiry_fences_the_broker_and_moves_leadership():
    w = World(n=3)
    w.create(partitions=3, rf=3)
    led = [p for p in range(3) if w.part(p=p).leader == 1]
    before = {p: w.part(p=p) for p in range(3)}
    w.alive(0, 1, 2)
    w.alive(0, 2)
    assert not w.c.image.brokers[1].fenced  # not yet: SESSION not passed since its heartbeat
    w.alive(0, 2)
    assert w.c.image.brokers[1].fenced
    for p in range(3):
        part, old = w.part(p=p), before[p]
        assert 1 not in part.isr and part.partition_epoch == old.partition_epoch + 1
        if p in led:
            assert part.leader == next(r for r in old.replicas if r != 1) and part.leader_epoch == old.leader_epoch + 1
        else:
            assert part.leader == old.leader and part.leader_epoch == old.leader_epoch
    assert w.delivered == w.c.image  # the brokers saw the same commits


def test_the_isr_never_drops_its_last_member_and_leader_goes_to_minus_one():
    w = World(n=3)
    w.create(rf=1)
    only = w.part().leader
    others = [b for b in range(3) if b != only]
    w.alive(*others, ms=SESSION + 1)
    part = w.part()
    assert part.isr == (only,) and part.leader == -1 and part.leader_epoch == 1 and part.partition_epoch == 1
    w.alive(*others)  # a tick with the partition leaderless changes nothing (no unclean)
    assert w.part() == part


def test_the_returning_last_isr_member_leads_again_when_unfenced():
    w = World(n=3)
    w.create(rf=-1, assignments={0: (1, 2)}, partitions=-1)
    w.alive(0, ms=SESSION + 1)  # 1 and 2 fenced, in id order
    part = w.part()
    assert part.leader == -1 and part.isr == (2,)  # 1 left (2 led), then 2 kept as the last member
    assert part.leader_epoch == 2
    w.register(1, incarnation=uuid.UUID(int=98))
    w.heartbeat(1)  # out of the ISR: no clean election for it, and unclean is off
    assert w.part() == part
    w.register(2, incarnation=uuid.UUID(int=99))
    w.heartbeat(2)
    assert w.part().leader == 2 and w.part().leader_epoch == part.leader_epoch + 1


@pytest.mark.parametrize("topic_config, broker_config, unclean", [
    (None, None, False),
    ({"unclean.leader.election.enable": "true"}, None, True),
    (None, {"unclean.leader.election.enable": True}, True),
    ({"unclean.leader.election.enable": "false"}, {"unclean.leader.election.enable": True}, False),
])
def test_unclean_election_follows_the_topic_config_else_the_broker(topic_config, broker_config, unclean):
    w = World(n=3, config=broker_config)
    w.create(rf=-1, assignments={0: (1, 2)}, partitions=-1, configs=topic_config)
    # broker 2 falls out of the ISR (its leader shrinks it), then broker 1, the last member, dies
    assert w.alter((1,)).error_code == 0
    w.alive(0, 2, ms=SESSION + 1)
    part = w.part()
    if unclean:
        assert part.leader == 2 and part.isr == (2,)
    else:
        assert part.leader == -1 and part.isr == (1,)


def test_an_unclean_election_is_retried_at_the_tick_once_a_replica_is_back():
    w = World(n=3, config={"unclean.leader.election.enable": True})
    w.create(rf=-1, assignments={0: (1, 2)}, partitions=-1)
    w.alter((1,))
    w.alive(0, ms=SESSION + 1)  # both fenced: no replica to elect at all
    assert w.part().leader == -1
    w.register(2, incarnation=uuid.UUID(int=123))
    w.heartbeat(2)  # unfenced: elected (uncleanly, the ISR was {1})
    assert w.part().leader == 2 and w.part().isr == (2,)


def test_want_shut_down_fences_and_answers_should_shut_down():
    w = World(n=3)
    w.create(rf=3)
    reply = w.heartbeat(0, want_shut_down=True)
    assert reply.should_shut_down and reply.is_fenced and 0 not in w.part().isr


# -- AlterPartition ------------------------------------------------------------------------


def _alter_world():
    w = World(n=4)
    w.create(rf=-1, assignments={0: (0, 1, 2)}, partitions=-1)
    return w


@pytest.mark.parametrize("kwargs, code", [
    (dict(isr=(0, 1)), 0),
    (dict(isr=(0, 1, 2)), 0),                             # no change: no record
    (dict(isr=(0, 1), sender_epoch=42), 77),              # STALE_BROKER_EPOCH
    (dict(isr=(0, 1), leader_epoch=-1), 74),              # FENCED_LEADER_EPOCH (older)
    (dict(isr=(0, 1), leader_epoch=5), 41),               # newer than the controller's: NOT_CONTROLLER
    (dict(isr=(0, 1), partition_epoch=-1), 95),           # INVALID_UPDATE_VERSION
    (dict(isr=(0, 1), partition_epoch=3), 41),
    (dict(isr=(1, 2), broker=1), 42),                     # not the leader: INVALID_REQUEST
    (dict(isr=(1, 2)), 42),                               # the leader must stay in the ISR
    (dict(isr=(0, 3)), 42),                               # 3 is not a replica
    (dict(isr=(0, 0)), 42),
    (dict(isr=(0, 1), epochs={1: 99}), 107),              # INELIGIBLE_REPLICA: wrong broker epoch (KIP-903)
    (dict(isr=(0, 1), epochs={1: -1}), 0),                # -1 skips the epoch check
])
def test_alter_partition_rules(kwargs, code):
    w = _alter_world()
    before, end = w.part(), w.log.end_offset
    reply = w.alter(**kwargs)
    assert reply.error_code == code
    if code:
        assert reply.registration is None and w.part() == before and w.log.end_offset == end
    else:
        isr = kwargs["isr"]
        assert reply.registration == w.part() and w.part().isr == isr
        assert w.part().leader_epoch == before.leader_epoch  # an ISR change keeps the leader epoch
        assert w.part().partition_epoch == before.partition_epoch + (isr != before.isr)


def test_alter_partition_with_a_fenced_member_is_ineligible_replica():
    w = _alter_world()
    w.alter((0, 1))
    w.alive(0, 1, 3, ms=SESSION + 1)  # 2 fenced, outside the ISR already
    assert w.c.image.brokers[2].fenced
    assert w.alter((0, 1, 2)).error_code == 107


def test_alter_partition_of_an_unknown_topic_id_or_partition():
    w = _alter_world()
    req = AlterPartitionRequest(broker_id=0, broker_epoch=w.epochs[0], topic_id=uuid.UUID(int=5), partition=0,
                                leader_epoch=0, partition_epoch=0, new_isr=())
    assert w.c.alter_partition(req).error_code == 100
    topic_id = w.c.image.topic_by_name("t").topic_id
    assert w.c.alter_partition(AlterPartitionRequest(
        broker_id=0, broker_epoch=w.epochs[0], topic_id=topic_id, partition=9, leader_epoch=0, partition_epoch=0,
        new_isr=())).error_code == 3


# -- topics --------------------------------------------------------------------------------


def test_create_topics_places_and_records_partitions():
    w = World(n=3, racks=["a", "b", "c"])
    result = w.create(partitions=6, rf=3, configs={"retention.ms": "1000"})
    assert result.error_code == 0 and result.num_partitions == 6 and result.replication_factor == 3
    topic = w.c.image.topics[result.topic_id]
    assert topic.configs == {"retention.ms": "1000"}
    for p in topic.partitions.values():
        assert p.isr == p.replicas and p.leader == p.replicas[0] and p.leader_epoch == p.partition_epoch == 0
    assert sorted(p.leader for p in topic.partitions.values()) == [0, 0, 1, 1, 2, 2]
    assert w.delivered == w.c.image


@pytest.mark.parametrize("kwargs, code, message", [
    (dict(rf=4), 38, "only 3 broker(s)"),
    (dict(rf=0), 38, "larger than 0"),
    (dict(partitions=0), 37, "non-positive"),
    (dict(name="bad name"), 17, "may only contain"),
    (dict(name=""), 17, "empty"),
    (dict(assignments={0: (0, 9)}, partitions=-1, rf=-1), 39, "no such broker"),
    (dict(assignments={0: (1, 1)}, partitions=-1, rf=-1), 39, "more than once"),
    (dict(assignments={0: (0, 1), 1: (2,)}, partitions=-1, rf=-1), 39, "same number"),
    (dict(assignments={0: (0,), 2: (1,)}, partitions=-1, rf=-1), 39, "consecutive"),
    (dict(assignments={0: (0, 1)}, partitions=1, rf=-1), 42, "Both"),
    (dict(configs={"retention.ms": "soon"}), 40, None),
    (dict(configs={"no.such.config": "1"}), 40, "Unknown topic config name"),
])
def test_create_topics_errors(kwargs, code, message):
    w = World(n=3)
    end = w.log.end_offset
    result = w.create(**kwargs)
    assert result.error_code == code and result.topic_id is None
    if message:
        assert message in result.error_message
    assert w.log.end_offset == end


def test_a_bad_config_gives_the_single_brokers_message():
    from minibroker.topic_configs import validate_all
    w = World(n=3)
    assert w.create(configs={"retention.ms": "soon"}).error_message == validate_all({"retention.ms": "soon"}, w.config)


def test_all_replicas_fenced_in_a_manual_assignment_is_invalid_replica_assignment():
    w = World(n=3)
    w.alive(0, ms=SESSION + 1)
    result = w.create(assignments={0: (1, 2)}, partitions=-1, rf=-1)
    assert result.error_code == 39 and "fenced" in result.error_message
    ok = w.create(assignments={0: (1, 0)}, partitions=-1, rf=-1)  # ISR = the unfenced replicas
    assert ok.error_code == 0 and w.part().isr == (0,) and w.part().leader == 0


def test_rf_counts_registered_brokers_and_a_fenced_one_gets_a_follower_replica():
    """Issue 13 step 2, item 5.3 (step 1 refused this): as Kafka's StripedReplicaPlacer,
    the replication factor is checked against every registered broker; a fenced one takes
    a follower replica (outside the ISR) when the unfenced ones run out, never a leader."""
    w = World(n=3)
    w.alive(0, 1, ms=SESSION + 1)  # broker 2 is fenced
    result = w.create(rf=4)
    assert result.error_code == 38 and result.error_message == (
        "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
        "because only 3 broker(s) are registered.")
    assert w.create(rf=3).error_code == 0
    part = w.part()
    assert sorted(part.replicas) == [0, 1, 2] and part.replicas[-1] == 2
    assert part.isr == part.replicas[:2] and part.leader == part.replicas[0]
    assert w.c.create_partitions("t", 2, None, validate_only=False).error_code == 0
    assert w.part(p=1).replicas[-1] == 2 and 2 not in w.part(p=1).isr
    w.alive(ms=SESSION + 1)  # every broker fenced
    result = w.create(name="u", rf=1)
    assert result.error_code == 38 and result.error_message == (
        "Unable to replicate the partition 1 time(s): All brokers are currently fenced.")


def test_duplicate_names_are_topic_already_exists_also_within_one_request():
    w = World(n=3)
    assert w.create(rf=1).error_code == 0
    assert w.create(rf=1).error_code == 36
    results = w.c.create_topics([NewTopic(name="u", num_partitions=1, replication_factor=1)] * 2, validate_only=False)
    assert [r.error_code for r in results] == [0, 36]


def test_validate_only_writes_nothing_and_defaults_apply():
    w = World(n=3, config={"num.partitions": 4, "default.replication.factor": 2})
    end = w.log.end_offset
    result = w.create(partitions=-1, rf=-1, validate_only=True)
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 4, 2)
    assert w.log.end_offset == end and w.c.image.topic_by_name("t") is None


def test_create_partitions():
    w = World(n=3)
    w.create(partitions=2, rf=2)
    assert w.c.create_partitions("t", 5, None, validate_only=False).error_code == 0
    topic = w.c.image.topic_by_name("t")
    assert sorted(topic.partitions) == [0, 1, 2, 3, 4]
    assert all(len(p.replicas) == 2 for p in topic.partitions.values())
    assert w.c.create_partitions("t", 6, [(2, 0)], validate_only=False).error_code == 0
    assert topic.partitions[5].replicas == (2, 0)


@pytest.mark.parametrize("name, count, assignments, code", [
    ("nope", 3, None, 3),
    ("t", 2, None, 37),
    ("t", 1, None, 37),
    ("t", 4, [(0, 1)], 39),            # two partitions added, one assignment
    ("t", 3, [(0,)], 39),              # not the topic's replication factor
    ("t", 3, [(0, 7)], 39),
])
def test_create_partitions_errors(name, count, assignments, code):
    w = World(n=3)
    w.create(partitions=2, rf=2)
    end = w.log.end_offset
    assert w.c.create_partitions(name, count, assignments, validate_only=False).error_code == code
    assert w.log.end_offset == end


def test_create_partitions_above_registered_brokers_is_invalid_replication_factor():
    w = World(n=3)
    w.create(partitions=1, rf=3)
    w.alive(0, 1, ms=SESSION + 1)
    w.c.image.brokers.pop(2)  # as if broker 2 had never registered
    result = w.c.create_partitions("t", 2, None, validate_only=False)
    assert result.error_code == 38 and "only 2 broker(s) are registered" in result.error_message


def test_delete_topics():
    w = World(n=3)
    topic_id = w.create(rf=1).topic_id
    unknown = uuid.UUID(int=3)
    results = w.c.delete_topics([topic_id, unknown, topic_id])
    assert [(r.name, r.error_code) for r in results] == [("t", 0), ("", 100), ("", 100)]
    assert w.c.image.topics == {} and w.delivered.topics == {}


# -- producer ids --------------------------------------------------------------------------


def test_producer_ids_come_in_blocks_of_1000():
    w = World(n=2)
    assert w.c.allocate_producer_ids(0, w.epochs[0]) == (0, 1000)
    assert w.c.allocate_producer_ids(1, w.epochs[1]) == (1000, 1000)
    assert w.delivered.next_producer_id == 2000
    with pytest.raises(StaleBrokerEpochError):
        w.c.allocate_producer_ids(1, 12345)


def test_a_new_controller_replays_the_log_and_keeps_every_registration_and_partition():
    w = World(n=3)
    w.create(partitions=3, rf=2)
    w.c.allocate_producer_ids(0, w.epochs[0])
    w.log.begin_epoch(2)
    again = Controller(node_id=1, epoch=2, log=w.log, config=w.config, clock_ms=w.clock, rng=random.Random(1))
    assert again.image == w.c.image
    assert again.allocate_producer_ids(0, w.epochs[0]) == (1000, 1000)


def test_a_stalled_broker_that_heartbeats_again_is_unfenced_but_not_back_in_the_isr():
    w = World(n=3)
    w.create(rf=3)
    w.alive(0, 2, ms=SESSION + 1)
    assert w.c.image.brokers[1].fenced and 1 not in w.part().isr
    reply = w.heartbeat(1)  # same epoch: the process was only stalled
    assert reply.error_code == 0 and not reply.is_fenced
    assert 1 not in w.part().isr  # its leader adds it back by AlterPartition once it caught up
    assert w.alter((*w.part().isr, 1)).error_code == 0 and 1 in w.part().isr


@pytest.mark.parametrize("seed", range(12))
def test_random_histories_keep_the_partition_invariants(seed):
    """Brokers die, stall, come back and re-register at random; leaders shrink and expand
    their ISR. After every step: the ISR is a non-empty subset of the replicas, a leader is
    an unfenced ISR member (or -1), epochs never go back, and the brokers' image (fed by
    the commits) equals the controller's."""
    rng = random.Random(seed)
    unclean = rng.random() < 0.5
    w = World(n=4, config={"unclean.leader.election.enable": unclean})
    w.create(partitions=4, rf=3)
    up = {0, 1, 2, 3}
    last = {p: w.part(p=p) for p in range(4)}
    for _ in range(60):
        action = rng.choice(["die", "back", "shrink", "expand", "tick"])
        if action == "die" and len(up) > 1:
            up.discard(rng.choice(sorted(up)))
        elif action == "back":
            b = rng.choice(range(4))
            if b not in up:
                up.add(b)
                if w.register(b, incarnation=uuid.uuid4()).error_code == 0:
                    w.heartbeat(b)
        elif action in ("shrink", "expand"):
            p = rng.choice(range(4))
            part = w.part(p=p)
            if part.leader != -1:
                others = [r for r in part.replicas if r != part.leader]
                isr = (part.leader, *rng.sample(others, rng.randint(0, len(others))))
                topic_id = w.c.image.topic_by_name("t").topic_id
                w.c.alter_partition(AlterPartitionRequest(
                    broker_id=part.leader, broker_epoch=w.epochs[part.leader], topic_id=topic_id, partition=p,
                    leader_epoch=part.leader_epoch, partition_epoch=part.partition_epoch,
                    new_isr=tuple(ReplicaBrokerEpoch(broker_id=b, broker_epoch=-1) for b in isr)))
        w.alive(*sorted(up), ms=rng.choice([50, 130, 300]))
        for p in range(4):
            part = w.part(p=p)
            assert part.isr and set(part.isr) <= set(part.replicas)
            if part.leader != -1:
                assert part.leader in part.isr and not w.c.image.brokers[part.leader].fenced
            assert part.leader_epoch >= last[p].leader_epoch and part.partition_epoch >= last[p].partition_epoch
            if part.leader != last[p].leader:
                assert part.leader_epoch > last[p].leader_epoch
            last[p] = part
        assert w.delivered == w.c.image
