"""The main job where users outgrow one machine (issue 13, step 2, item 6).

``python -m kproto.pipeline --bootstrap-servers ... --master spark://...`` as a real
process, against a 3-broker MiniCluster (``--replication-factor 3``,
``min.insync.replicas=2``) and a standalone Spark cluster (Master and Worker from
pyspark's own ``spark-class``, tests/spark/standalone.py). While the query streams, the
leader of an input partition is killed, and restarted later: the job still ends with exactly the counts of
a local run, that is plain Python's counts of the same generated events (which
tests/spark/test_pipeline.py checks a local[2] run against), and no record of the input or
results topic is lost or written twice.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from kproto import Consumer, TopicPartition
from kproto.pipeline import EVENTS_TOPIC, PARTITIONS, RESULTS_TOPIC, generate_events, heartbeat
from tests.spark import pipeline_counts as counts
from tests.spark.standalone import descendants, not_loopback
from tests.support.process import ROOT, child_env

EVENTS = 2_000
SEED = 11
PER_TRIGGER = 700  # three micro-batches of data, then the one the heartbeat's watermark adds
TIMEOUT = 240.0  # seconds for the whole job: Spark's JVMs start on two loaded cores


@pytest.fixture
def kafka(tmp_path):
    from minibroker.cluster import MiniCluster

    # A killed broker keeps its leaderships until its session expires, as with Kafka (9 s
    # there): 5 s here, so that the job's next planning and tasks meet the dead leader.
    config = {"min.insync.replicas": 2, "broker.session.timeout.ms": 5000}
    with MiniCluster(3, data_dir=tmp_path / "kafka", config=config) as cluster:
        yield cluster


def _wait_for(what: str, done: Callable[[], bool], job: subprocess.Popen, log: Path, poll: float = 0.05) -> None:
    """Wait until ``done()``; fail if the job exits first or after TIMEOUT (with its stderr)."""
    deadline = time.monotonic() + TIMEOUT
    while not done():
        if job.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {job.returncode}" if job.poll() is not None else "still runs"
            pytest.fail(f"{what} not reached; the pipeline {state}; its stderr:\n{log.read_text()[-5000:]}")
        time.sleep(poll)


def _topic(bootstrap_servers: str, topic: str, expected: int) -> list:
    """Every record of ``topic`` (polled until ``expected`` are read, then a while longer)."""
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    records = []
    with Consumer(bootstrap_servers=bootstrap_servers) as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning(partitions)
        for _ in range(100):
            batch = consumer.poll(0.2)
            records += batch
            if len(records) >= expected and not batch:
                break
    return records


def test_the_pipeline_on_a_kafka_and_a_spark_cluster_counts_exactly_through_a_broker_failure(
        spark_standalone, kafka, tmp_path):
    output, log = tmp_path / "out", tmp_path / "pipeline.log"
    command = [sys.executable, "-m", "kproto.pipeline", "--bootstrap-servers", kafka.bootstrap_servers,
               "--master", spark_standalone.master_url, "--events", str(EVENTS), "--seed", str(SEED),
               "--max-offsets-per-trigger", str(PER_TRIGGER), "--replication-factor", "3", "--output", str(output)]
    with open(log, "wb") as stderr:
        job = subprocess.Popen(command, cwd=ROOT, env=child_env(**spark_standalone.env), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=stderr, text=True,
                               start_new_session=True)  # its group: the driver, its JVM, its Python runners
    try:
        checkpoint = output / "_checkpoint"
        # The first micro-batch is planned: next the driver cuts its ranges (ListOffsets) and
        # the executor's tasks fetch them. The leader of partition 0 of the input dies now
        # and keeps its leaderships until its session expires: the driver's planning and the
        # tasks meet the dead broker.
        _wait_for("the first micro-batch", (checkpoint / "offsets" / "0").exists, job, log, poll=0.005)
        killed = kafka.leader_of(EVENTS_TOPIC, 0)
        kafka.kill(killed, wait=False)
        kafka.wait_for_leader(EVENTS_TOPIC, 0, not_in=[killed], timeout=60)
        # A micro-batch after the kill read from the new leaders and wrote its results.
        _wait_for("a micro-batch committed after the kill", (checkpoint / "commits" / "1").exists, job, log)
        # The driver, the executor and its Python workers are all up now: nothing of the
        # job or of the Spark cluster listens on more than loopback.
        spark = spark_standalone
        assert not not_loopback(descendants(job.pid) | descendants(spark.master.pid) | descendants(spark.worker.pid))
        kafka.restart(killed)
        stdout, _ = job.communicate(timeout=TIMEOUT)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.communicate()
    assert job.returncode == 0, log.read_text()[-5000:]

    assert {len(p.replicas) for t in (EVENTS_TOPIC, RESULTS_TOPIC) for p in kafka.describe(t)} == {3}
    # The input topic: every event and the heartbeat, once each.
    records = _topic(kafka.bootstrap_servers, EVENTS_TOPIC, EVENTS + 1)
    start_ms = min(r.timestamp for r in records)  # the first event's arrival time
    events = generate_events(EVENTS, SEED, start_ms)
    assert Counter((r.key, r.value) for r in records) == Counter(
        [(e.key(), e.value()) for e in events] + [(None, heartbeat(events))])

    per_user = counts.per_user(events)
    per_page = counts.per_page(per_user)
    # What the job printed: every record read, none behind the watermark, every event counted.
    assert re.search(rf"micro-batches read {EVENTS + 1:,} records .*rows behind the watermark: 0\n", stdout), stdout
    assert f"{EVENTS:,} events counted" in stdout
    assert f"results   {len(per_page):,} records" in stdout
    # What it wrote: the Parquet and the results topic hold exactly the local run's counts.
    assert counts.parquet_rows(str(output / "minutes")) == counts.want_rows(per_user)
    results = counts.results(kafka.bootstrap_servers, dict.fromkeys(range(PARTITIONS), 0), len(per_page))
    assert len(results) == len(per_page)
    assert counts.results_per_page(results) == per_page
