"""Exactly-once under SIGKILL (issue 14): the one harness of tests/eos/test_crash.py and
bench/soak_eos.py.

Invariant: however often the consume-transform-produce worker (tests/eos/worker.py, the
recipe of docs/examples/exactly_once.py) is killed with SIGKILL and started again, once
its group's committed offsets reach the end of the input, the output read with
read_committed holds the transform of every input exactly once and nothing else.

Theory of operation. The inputs arrive in shares while the workers run, so that each
worker has work to die in. :func:`kill_and_restart` starts the worker, waits for its
``started`` line, sleeps a random time, then aims: it freezes the worker (SIGSTOP), asks
the sink partitions' high watermarks and last stable offsets, and kills it (SIGKILL) if
a transaction of *this* instance is open with records in the log (on some partition
``hw > lso >= the hw at the previous kill``: the dead predecessor's transaction is
settled and a new one has appended). Otherwise it lets the worker go on (SIGCONT) and
aims again a moment later; after :data:`AIM_SECONDS` it kills blind. So the kills land
between a transaction's first appended batch and its commit, where a crash can do harm,
and what they leave is visible: the aborted records stay in the log, where a
read_uncommitted reader finds them as duplicates. (Watching without freezing does not
do: a transaction's records reach the log when its commit flushes them, just before its
EndTxn, so one seen open is nearly always committed by the time the kill lands.)

The randomness is one seeded :class:`random.Random`: a failure prints the seed.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kproto import Consumer, Producer, TopicPartition
from kproto.admin import AdminClient, NewTopic
from tests.support.process import ROOT, child_env, read_line, stop

__all__ = ["AIMS_PER_SHARE", "AIM_SECONDS", "Outcome", "Run", "add_input", "check", "kill_and_restart", "make_topics",
           "read_output", "read_to_end", "run_to_the_end", "seal"]

AIMS_PER_SHARE = 15  # missed freezes before more inputs arrive
AIM_SECONDS = 10.0  # of watching per kill before a blind kill
WORKER_TIMEOUT = 60.0  # seconds for a worker to start, or to finish the input when not killed
END = b"end-of-output"  # the sentinel written to each sink partition once the workers are done


@dataclass
class Run:
    """One crash run's topics and figures."""

    bootstrap: str
    name: str
    inputs: int
    logs: Path  # a directory: worker-<n>.log holds the n-th worker's stderr
    source_partitions: int = 3
    sink_partitions: int = 2
    replication_factor: int = 1
    kills_aimed: int = 0  # killed with a transaction of its own open
    kills_blind: int = 0
    restarts: int = 0
    delays: list[float] = field(default_factory=list)
    aims: list[int] = field(default_factory=list)  # freezes (SIGSTOP) before each kill
    produced: int = 0  # inputs written so far
    sealed: bool = False  # the END sentinels are written

    @property
    def source(self) -> str:
        return f"{self.name}-in"

    @property
    def sink(self) -> str:
        return f"{self.name}-out"

    @property
    def group(self) -> str:
        return f"{self.name}-group"

    @property
    def sink_partitions_list(self) -> list[TopicPartition]:
        return [TopicPartition(self.sink, p) for p in range(self.sink_partitions)]


def make_topics(run: Run) -> None:
    with AdminClient(bootstrap_servers=run.bootstrap) as admin:
        admin.create_topics([NewTopic(run.source, run.source_partitions, run.replication_factor),
                             NewTopic(run.sink, run.sink_partitions, run.replication_factor)])


def add_input(run: Run, count: int) -> None:
    """The next ``count`` inputs (at most up to ``run.inputs``): records ``r<i>`` keyed ``k<i>``."""
    first, run.produced = run.produced, min(run.inputs, run.produced + count)
    with Producer(bootstrap_servers=run.bootstrap, linger_ms=5) as producer:
        for i in range(first, run.produced):
            producer.send(run.source, b"r%d" % i, key=b"k%d" % i)
        producer.flush()


def _start_worker(run: Run) -> subprocess.Popen:
    """A started worker; its stderr goes to a file of ``run.logs`` (:func:`_failed` quotes it)."""
    run.restarts += 1
    with open(run.logs / f"worker-{run.restarts}.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tests.eos.worker", run.bootstrap, run.source, run.sink,
                                 run.group, f"{run.name}-txn"], cwd=ROOT, env=child_env(), stdout=subprocess.PIPE,
                                stderr=log, text=True)
    proc.log = log.name  # type: ignore[attr-defined]
    try:
        line = read_line(proc.stdout, WORKER_TIMEOUT)
    except TimeoutError:
        line = ""
    if line.strip() != "started":
        stop(proc)
        raise _failed(proc, f"the worker did not start: {line!r}")
    return proc


def _failed(proc: subprocess.Popen, what: str) -> RuntimeError:
    proc.wait(WORKER_TIMEOUT)
    return RuntimeError(f"{what} (exit {proc.returncode}); its stderr: {Path(proc.log).read_text()[-3000:]}")


def _offsets(admin: AdminClient, tps: list[TopicPartition], isolation: str) -> dict[TopicPartition, int]:
    listed = admin.list_offsets({tp: "latest" for tp in tps}, isolation_level=isolation)
    return {tp: listed[tp].offset for tp in tps}


def kill_and_restart(run: Run, kills: int, rng: random.Random, delay: tuple[float, float] = (0.0, 0.1),
                     on_kill: Callable[[], None] | None = None) -> None:
    """Start the worker and SIGKILL it ``kills`` times (aimed as the module says), each
    after a delay drawn from ``delay`` seconds. The inputs arrive in shares of
    ``run.inputs // (4 * kills)``: one before each start, one more after every
    :data:`AIMS_PER_SHARE` freezes that missed, so that every worker has work to die in
    (while the inputs last; a worker that runs out of them ends by itself, uncounted,
    and the next one is started). ``on_kill`` is called right after each kill (while
    nothing else has moved: a test's broker fault lands in the same moment)."""
    tps = run.sink_partitions_list
    with AdminClient(bootstrap_servers=run.bootstrap) as admin:
        last_hw = _offsets(admin, tps, "read_uncommitted")
        share = run.inputs // (4 * kills)
        while run.kills_aimed + run.kills_blind < kills and run.restarts < 3 * kills:
            add_input(run, share)
            proc = _start_worker(run)
            try:
                run.delays.append(rng.uniform(*delay))
                time.sleep(run.delays[-1])
                aims, deadline = 0, time.monotonic() + AIM_SECONDS
                while proc.poll() is None and time.monotonic() < deadline:
                    aims += 1
                    proc.send_signal(signal.SIGSTOP)
                    time.sleep(0.01)  # requests already on the wire are answered
                    hw = _offsets(admin, tps, "read_uncommitted")
                    lso = _offsets(admin, tps, "read_committed")
                    if any(hw[tp] > lso[tp] >= last_hw[tp] for tp in tps):
                        run.kills_aimed += 1
                        break
                    proc.send_signal(signal.SIGCONT)
                    if aims % AIMS_PER_SHARE == 0:
                        add_input(run, share)
                    time.sleep(rng.uniform(0.002, 0.01))
                else:
                    if proc.poll() is None:
                        run.kills_blind += 1
                run.aims.append(aims)
                if proc.poll() is not None:
                    if proc.returncode != 0:
                        raise _failed(proc, "the worker failed")
                    continue  # it ran out of inputs before a kill
                proc.kill()
                if on_kill is not None:
                    on_kill()
                last_hw = _offsets(admin, tps, "read_uncommitted")
            finally:
                stop(proc)


def run_to_the_end(run: Run) -> None:
    """The rest of the inputs, then workers without kills until the group's committed
    offsets reach the source's end."""
    add_input(run, run.inputs)
    source = [TopicPartition(run.source, p) for p in range(run.source_partitions)]
    with AdminClient(bootstrap_servers=run.bootstrap) as admin:
        end = _offsets(admin, source, "read_uncommitted")
        for _ in range(3):  # one run does it; a restart more if an idle poll came first
            proc = _start_worker(run)
            try:
                if proc.wait(WORKER_TIMEOUT) != 0:
                    raise _failed(proc, "the worker failed")
            finally:
                stop(proc)
            committed = admin.list_group_offsets(run.group, source)
            if all(committed[tp].offset == end[tp] for tp in source):
                return
        raise AssertionError(f"the group committed {committed}, the input ends at {end}")


def read_output(run: Run, client: str, isolation: str) -> list[bytes]:
    """Every value of the sink read by ``client`` with ``isolation`` (see :func:`read_to_end`)."""
    if not run.sealed:
        seal(run.bootstrap, run.sink, run.sink_partitions)
        run.sealed = True
    return read_to_end(run.bootstrap, run.sink, run.sink_partitions, client, isolation)


def seal(bootstrap: str, topic: str, partitions: int) -> None:
    """The :data:`END` sentinel at the end of each partition of ``topic`` (a plain record:
    once every transaction that wrote before it is decided, read_committed reaches it)."""
    with Producer(bootstrap_servers=bootstrap) as plain:
        for p in range(partitions):
            plain.send(topic, END, partition=p)


def read_to_end(bootstrap: str, topic: str, partitions: int, client: str, isolation: str,
                timeout: float = 30.0) -> list[bytes]:
    """Every value of ``topic`` read by ``client`` ("kproto": kproto's :class:`Consumer`;
    "confluent": librdkafka's) with ``isolation``, from the beginning up to the first
    :data:`END` sentinel of each partition (:func:`seal`); the sentinels left out."""
    got: list[bytes] = []
    ends: set[int] = set()  # the partitions read up to their sentinel
    deadline = time.monotonic() + timeout

    def stuck() -> str:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            hw, lso = _offsets(admin, tps, "read_uncommitted"), _offsets(admin, tps, "read_committed")
        return (f"{client} read {len(got)} records of {topic} ({isolation}) in {timeout} s, the ends of partitions "
                f"{sorted(ends)}; high watermarks {list(hw.values())}, last stable offsets {list(lso.values())}")

    if client == "kproto":
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation, fetch_max_wait_ms=100) as consumer:
            consumer.assign(tps)
            consumer.seek_to_beginning(tps)
            while len(ends) < partitions:
                assert time.monotonic() < deadline, stuck()
                for r in consumer.poll(0.2):
                    if r.value == END:
                        ends.add(r.partition)
                    elif r.partition not in ends:
                        got.append(r.value)
    else:
        import confluent_kafka as ck

        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-oracle", "isolation.level": isolation,
                                "enable.auto.commit": False})
        try:
            consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
            while len(ends) < partitions:
                assert time.monotonic() < deadline, stuck()
                message = consumer.poll(0.2)
                if message is not None and not message.error():
                    if message.value() == END:
                        ends.add(message.partition())
                    elif message.partition() not in ends:
                        got.append(message.value())
        finally:
            consumer.close()
    return got


@dataclass(frozen=True)
class Outcome:
    """What a reader found against what the inputs were."""

    missing: list[bytes]
    duplicated: dict[bytes, int]
    unexpected: list[bytes]

    @property
    def exactly_once(self) -> bool:
        return not (self.missing or self.duplicated or self.unexpected)


def check(run: Run, values: list[bytes]) -> Outcome:
    """``values`` against the transform of every input, once each."""
    want = {b"R%d" % i for i in range(run.inputs)}
    counts = Counter(values)
    return Outcome(missing=sorted(want - counts.keys()),
                   duplicated={v: n for v, n in counts.items() if v in want and n > 1},
                   unexpected=sorted(counts.keys() - want))
