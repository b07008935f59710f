"""Exactly-once under crashes (issue 14, tests: "a consume-transform-produce process killed
with SIGKILL at random points, N restarts, then the output topic holds every input
exactly once, read with read_committed by kproto and by confluent-kafka").

The worker is the recipe of docs/examples/exactly_once.py in a real process
(tests/eos/worker.py), the broker a real ``python -m minibroker`` with a data dir; the
harness and its invariant are tests/eos/crash.py's (bench/soak_eos.py runs it longer).
"""

import random
import uuid

import pytest

from tests.eos.crash import Run, check, kill_and_restart, make_topics, read_output, run_to_the_end
from tests.support.process import minibroker_process

pytest.importorskip("confluent_kafka")

SEED = 14
INPUTS = 5000
KILLS = 6


def test_every_input_is_in_the_output_once_after_sigkills_of_the_worker(tmp_path):
    """Issue 14, exactly-once under crashes: SIGKILLs aimed between a transaction's first
    appended batch and its commit, a restart after each; read_committed readers (kproto's
    and confluent-kafka's) see every input's transform once, while a read_uncommitted
    reader sees the aborted attempts' duplicates, proof that the kills hit open transactions."""
    rng = random.Random(SEED)
    (tmp_path / "logs").mkdir()
    with minibroker_process("--port", "0", "--data-dir", str(tmp_path / "data"),
                            log=tmp_path / "broker.log") as (_, bootstrap):
        run = Run(bootstrap, f"eos-{uuid.uuid4().hex[:6]}", INPUTS, logs=tmp_path / "logs")
        make_topics(run)
        kill_and_restart(run, KILLS, rng)
        run_to_the_end(run)
        said = f"seed {SEED}, {run}"
        for client in ("kproto", "confluent"):
            outcome = check(run, read_output(run, client, "read_committed"))
            assert outcome.exactly_once, f"{client} read_committed: {outcome} ({said})"
        uncommitted = check(run, read_output(run, "kproto", "read_uncommitted"))
    assert not uncommitted.missing and not uncommitted.unexpected, said
    assert run.kills_aimed + run.kills_blind == KILLS, said
    assert uncommitted.duplicated, f"no aborted record in the log: the kills missed ({said})"
    print(f"{said}: {run.kills_aimed} kills aimed at an open transaction; "
          f"{sum(uncommitted.duplicated.values()) - len(uncommitted.duplicated)} aborted duplicates")


CLUSTER_CONFIG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}


def test_every_input_is_in_the_output_once_when_brokers_die_with_the_worker(tmp_path):
    """Issue 14, exactly-once under crashes, the broker side too: in a 3-broker MiniCluster
    (topics RF 3), each worker kill takes a broker with it in turn, the transaction
    coordinator, the leader of an output partition, the group coordinator, and the next
    kill brings it back; the output still holds every input once."""
    from minibroker.cluster import MiniCluster
    from minibroker.coordinator.offsets_log import partition_for

    rng = random.Random(SEED)
    (tmp_path / "logs").mkdir()
    with MiniCluster(brokers=3, data_dir=tmp_path / "cluster", config=CLUSTER_CONFIG) as cluster:
        run = Run(cluster.bootstrap_servers, f"eos-{uuid.uuid4().hex[:6]}", INPUTS, logs=tmp_path / "logs",
                  replication_factor=3)
        make_topics(run)
        victims = iter([("__transaction_state", partition_for(f"{run.name}-txn", 3)), (run.sink, 0),
                        ("__consumer_offsets", partition_for(run.group, 3))])
        dead = []

        def on_kill():
            if dead:
                cluster.restart(dead.pop())
            elif (victim := next(victims, None)) is not None:
                dead.append(cluster.leader_of(*victim))
                cluster.kill(dead[-1])

        kill_and_restart(run, KILLS, rng, on_kill=on_kill)
        run_to_the_end(run)
        said = f"seed {SEED}, {run}"
        for client in ("kproto", "confluent"):
            outcome = check(run, read_output(run, client, "read_committed"))
            assert outcome.exactly_once, f"{client} read_committed: {outcome} ({said})"
        uncommitted = check(run, read_output(run, "kproto", "read_uncommitted"))
    assert not uncommitted.missing and not uncommitted.unexpected, said
    assert run.kills_aimed + run.kills_blind == KILLS and not dead, said
    print(f"{said}: {run.kills_aimed} kills aimed at an open transaction; "
          f"{sum(uncommitted.duplicated.values()) - len(uncommitted.duplicated)} aborted duplicates")
