"""Where a new partition's replicas go, and whether a manual assignment is acceptable.

Facts (Kafka's ``StripedReplicaPlacer`` in KRaft, and KIP-36's rack-aware assignment):

- the replication factor is checked against every registered broker, fenced ones
  included: above their number is INVALID_REPLICATION_FACTOR ("The target replication
  factor of N cannot be reached because only M broker(s) are registered."); with no
  unfenced broker, "All brokers are currently fenced." (the controller prefixes both with
  "Unable to replicate the partition N time(s): ");
- a leader (the first replica) is always an unfenced broker; fenced brokers take follower
  replicas only once the unfenced ones are used up, so a topic made while a broker is
  down is created under-replicated, its ISR the unfenced replicas, and the broker joins
  when it is back;
- a partition's replicas are distinct brokers, on distinct racks as long as the
  replication factor does not exceed the number of racks (KIP-36);
- leaders (the first replica) are spread evenly: over the partitions of one call the
  leader counts of any two brokers differ by at most one;
- the starting broker is random (Kafka's placer uses a ``Random``), so topics created one
  after the other do not all lead on broker 0; tests pass a seeded ``random.Random``.

How, here: the brokers are ordered rack-interleaved (racks sorted, then one broker of
each rack in turn, brokers of a rack by id; brokers without a rack form one more rack),
as KIP-36's ``getRackAlternatedBrokerList``. Partition ``p`` is led by entry
``(start + p) % n``; each further replica is the next entry, walking forward with a shift
that grows every ``n`` partitions (followers spread too, KIP-36's ``replicaShift``),
skipping brokers already chosen and, while some rack is still unused, brokers of a used
rack. The walk is over the unfenced brokers; replicas beyond them go to the fenced brokers
in the same rack-alternated order, starting one further for each partition (their racks
are not balanced).

Manual assignments (CreateTopics / CreatePartitions with ``assignments``) are checked as
``ReplicationControlManager.validateManualPartitionAssignment`` does: INVALID_REPLICA_ASSIGNMENT
for an empty list, an unknown broker, a broker twice, unequal lengths, partition ids that
are not consecutive, or a partition whose replicas are all fenced.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from itertools import zip_longest

from kproto.errors import InvalidReplicationFactorError
from minibroker.cluster.metadata import BrokerRegistration

__all__ = ["place_replicas", "rack_alternated", "validate_assignments"]


def rack_alternated(brokers: Sequence[BrokerRegistration]) -> list[int]:
    """Broker ids, one of each rack in turn (racks sorted, ids sorted within a rack)."""
    racks: dict[str, list[int]] = {}
    for b in sorted(brokers, key=lambda b: b.broker_id):
        racks.setdefault(b.rack or "", []).append(b.broker_id)
    columns = [racks[r] for r in sorted(racks)]
    return [b for row in zip_longest(*columns) for b in row if b is not None]


def place_replicas(brokers: Sequence[BrokerRegistration], partitions: int, replication_factor: int,
                   *, first_partition: int = 0, rng: random.Random) -> list[tuple[int, ...]]:
    """The replicas of ``partitions`` new partitions, leader first.

    Args:
        brokers: the registered brokers; fenced ones lead nothing and take replicas only
            when the unfenced ones are too few.
        partitions: how many partitions to place.
        replication_factor: replicas per partition.
        first_partition: the id of the first of them (CreatePartitions adds after the
            existing ones); it only moves where the walk starts.
        rng: picks the starting broker (seed it for reproducible placements).

    Raises:
        InvalidReplicationFactorError: ``replication_factor`` is not positive, above the
            number of registered brokers, or every broker is fenced (Kafka's messages,
            ``StripedReplicaPlacer``).
    """
    live = [b for b in brokers if not b.fenced]
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered.")
    if not live:
        raise InvalidReplicationFactorError("All brokers are currently fenced.")
    fenced = rack_alternated([b for b in brokers if b.fenced])
    order = rack_alternated(live)
    rack = {b.broker_id: b.rack or "" for b in live}
    n, all_racks = len(order), set(rack.values())
    start = rng.randrange(n)
    placed = []
    for i in range(partitions):
        p = first_partition + i
        lead = (start + p) % n
        chosen, used = [order[lead]], {rack[order[lead]]}
        step = 1 + (p // n) % max(n - 1, 1)  # the follower shift grows every n partitions
        pos = lead + step - 1
        while len(chosen) < min(replication_factor, n):
            ahead = [order[(pos + k) % n] for k in range(1, n + 1)]
            free = [b for b in ahead if b not in chosen]
            # a broker of a rack not used yet in this round, else any (racks fewer than RF)
            candidate = next((b for b in free if rack[b] not in used), free[0])
            chosen.append(candidate)
            used.add(rack[candidate])
            if used == all_racks:
                used = set()  # every rack has one: the next round prefers racks again
            pos = order.index(candidate)
        chosen += [fenced[(p + k) % len(fenced)] for k in range(replication_factor - len(chosen))]
        placed.append(tuple(chosen))
    return placed


def validate_assignments(assignments: Mapping[int, Sequence[int]], brokers: Mapping[int, BrokerRegistration],
                         *, first_partition: int = 0) -> str | None:
    """Why a manual assignment is INVALID_REPLICA_ASSIGNMENT, or None when it is fine.

    ``assignments`` maps partition id to replica ids (the first is the preferred leader);
    ids must run from ``first_partition`` without a gap.
    """
    ids = sorted(assignments)
    if ids != list(range(first_partition, first_partition + len(ids))):
        return (f"partition ids must be consecutive integers starting at {first_partition}, "
                f"got {ids}")
    length = None
    for partition in ids:
        replicas = list(assignments[partition])
        if not replicas:
            return f"The manual partition assignment of partition {partition} is an empty replica list."
        for broker in replicas:
            if broker not in brokers:
                return (f"The manual partition assignment of partition {partition} includes broker {broker}, "
                        "but no such broker is registered.")
        if len(set(replicas)) != len(replicas):
            twice = next(b for b in replicas if replicas.count(b) > 1)
            return (f"The manual partition assignment of partition {partition} includes the broker {twice} "
                    "more than once.")
        if length is not None and len(replicas) != length:
            return (f"The manual partition assignment of partition {partition} has {len(replicas)} replica(s), "
                    f"but the others have {length}: all partitions should have the same number of replicas.")
        length = len(replicas)
        if all(brokers[b].fenced for b in replicas):
            return (f"All brokers specified in the manual partition assignment for partition {partition} "
                    "are fenced.")
    return None
