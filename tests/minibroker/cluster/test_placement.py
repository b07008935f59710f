"""Replica placement (KIP-36 rack-aware, StripedReplicaPlacer's even leaders) and manual
assignment checks (issue 13, WP2)."""

import random
import uuid
from collections import Counter

import pytest

from kproto.errors import InvalidReplicationFactorError
from minibroker.cluster.metadata import BrokerRegistration
from minibroker.cluster.placement import place_replicas, rack_alternated, validate_assignments


def brokers(racks, fenced=()):
    return [BrokerRegistration(broker_id=i, broker_epoch=i, incarnation_id=uuid.UUID(int=i), host="h", port=1,
                               rack=r, fenced=i in fenced) for i, r in enumerate(racks)]


def test_rack_alternated_takes_one_broker_of_each_rack_in_turn():
    assert rack_alternated(brokers(["b", "a", "a", "c", "b"])) == [1, 0, 3, 2, 4]
    assert rack_alternated(brokers([None, None, None])) == [0, 1, 2]


CASES = [  # racks, partitions, replication factor
    ([None] * 3, 12, 3),
    ([None] * 5, 7, 2),
    ([None] * 4, 9, 1),
    (["a", "a", "b", "b", "c", "c"], 20, 3),
    (["a", "a", "a", "b"], 10, 2),    # racks of unequal size
    (["a", "a", "a", "b"], 10, 3),    # RF above the number of racks
    (["a", "b", "c", "a", "b", "c", "d"], 15, 4),
]


@pytest.mark.parametrize("racks, partitions, rf", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_placement_spreads_replicas_racks_and_leaders(racks, partitions, rf, seed):
    bs = brokers(racks)
    placed = place_replicas(bs, partitions, rf, rng=random.Random(seed))
    assert len(placed) == partitions
    rack_count = len(set(racks))
    for replicas in placed:
        assert len(replicas) == rf and len(set(replicas)) == rf        # distinct brokers
        used = {racks[b] for b in replicas}
        assert len(used) == min(rf, rack_count)                         # distinct racks while they last
    leaders = Counter(r[0] for r in placed)
    counts = [leaders.get(b.broker_id, 0) for b in bs]
    assert max(counts) - min(counts) <= 1                               # leaders even


def test_placement_is_reproducible_with_a_seed_and_varies_without():
    bs = brokers([None] * 5)
    assert place_replicas(bs, 10, 3, rng=random.Random(42)) == place_replicas(bs, 10, 3, rng=random.Random(42))
    starts = {place_replicas(bs, 1, 1, rng=random.Random(s))[0] for s in range(30)}
    assert len(starts) > 1  # the first leader is not always broker 0


def test_placement_skips_fenced_brokers():
    placed = place_replicas(brokers([None] * 4, fenced={1, 3}), 6, 2, rng=random.Random(0))
    assert {b for r in placed for b in r} == {0, 2}


@pytest.mark.parametrize("rf, fenced, reason", [
    (4, (), "The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."),
    (4, {0}, "The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."),
    (1, {0, 1, 2}, "All brokers are currently fenced."),
    (0, (), "Invalid replication factor 0: the replication factor must be positive."),
    (-1, (), "Invalid replication factor -1: the replication factor must be positive."),
])
def test_replication_factor_above_registered_brokers_is_invalid_replication_factor(rf, fenced, reason):
    """Kafka's StripedReplicaPlacer and its messages: the factor is checked against every
    registered broker, fenced ones included; at least one must be unfenced."""
    with pytest.raises(InvalidReplicationFactorError) as info:
        place_replicas(brokers([None] * 3, fenced=fenced), 1, rf, rng=random.Random(0))
    assert info.value.code == 38 and str(info.value).endswith(reason)


@pytest.mark.parametrize("seed", range(4))
def test_fenced_brokers_take_followers_only_once_the_unfenced_run_out(seed):
    """Issue 13 step 2, item 5.3 (StripedReplicaPlacer): a leader is always unfenced;
    fenced brokers fill the replicas the unfenced cannot, spread over the partitions."""
    placed = place_replicas(brokers([None] * 5, fenced={1, 3}), 8, 4, rng=random.Random(seed))
    for replicas in placed:
        assert len(set(replicas)) == 4 and replicas[0] not in {1, 3}
        assert set(replicas[:3]) == {0, 2, 4}  # the unfenced first
    assert {r[3] for r in placed} == {1, 3}


@pytest.mark.parametrize("assignments, first, reason", [
    ({0: [0, 1], 1: [1, 2]}, 0, None),
    ({3: [2, 0]}, 3, None),
    ({0: [0, 1], 2: [1, 2]}, 0, "consecutive"),
    ({1: [0]}, 0, "consecutive"),
    ({0: []}, 0, "empty replica list"),
    ({0: [0, 9]}, 0, "broker 9, but no such broker is registered"),
    ({0: [1, 1]}, 0, "broker 1 more than once"),
    ({0: [0, 1], 1: [2]}, 0, "same number of replicas"),
    ({0: [3, 4]}, 0, "are fenced"),
    ({0: [3, 0]}, 0, None),  # one live replica is enough
])
def test_validate_assignments(assignments, first, reason):
    bs = {b.broker_id: b for b in brokers([None] * 5, fenced={3, 4})}
    why = validate_assignments(assignments, bs, first_partition=first)
    if reason is None:
        assert why is None
    else:
        assert reason in why
