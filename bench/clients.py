"""kproto's clients side by side with confluent-kafka, aiokafka and kafka-python, one run.

Every client, kproto included, runs twice: with its defaults and with its best settings
(bench/peers.py says which and why, and how each client is timed: start-up, connection,
metadata and a warm-up record outside the clock). One partition, 100-byte values:

- produce: ``n`` single sends and a flush into a fresh topic (``acks=1`` for every
  client); the topic's end offset is checked afterwards;
- consume: ``n`` records read from offset 0 of a fresh topic filled beforehand in
  1000-record batches (the same log for every client), every value touched.

Against minibroker in its own process (logs in memory) and against Tansu (memory). Each
run measures every row once, in alternating order, so that all share the machine's noise;
a first, smaller round warms up and is not counted. aiokafka and kafka-python get a quarter
of the messages (rates are per message). Prints median records/s of ``--runs`` runs,
kproto's ratio to every row (to each peer at its defaults and at its best), and the goal
lines of issue 16, met or missed:

- consume, object API (``poll()`` records): kproto >= 1.5x confluent-kafka at its best,
  on minibroker and on Tansu;
- produce, single sends: sync >= 1.5x, asyncio >= 2x confluent-kafka at its best.

A new row is one measuring function in bench/peers.py and one line in :data:`PRODUCERS`
or :data:`CONSUMERS` below; its goal, one line in :data:`GOALS`.

``--bound`` adds a produce row that is no client: the broker alone, taking the same records
in Produce requests of kproto's best ``batch.size`` (1 MB) from bench/broker.py's raw client
(five in flight, nothing built per record): the most any producer reaches on that broker
over one connection. Its ratio to a peer is how far a goal can go there, and kproto's
ratio to it what share of it kproto reaches. ``--cpu`` adds, per row, the CPU per record
of the client (this process, every thread) and of the broker (its process, every thread)
in the timed part, and how many cores each kept busy: where a 2-core machine's time went.

``--sweep`` measures instead every candidate of bench/peers.py's ``SWEEP`` (how the best
settings were chosen). Usage: ``python bench/clients.py [--messages N] [--runs R]
[--brokers minibroker,tansu] [--phases produce,consume] [--clients kproto,...] [--labels best]
[--bound] [--cpu] [--quick] [--sweep]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import broker  # noqa: E402  (bench/broker.py)
import peers  # noqa: E402  (bench/peers.py)
from broker import FILL_BATCH, minibroker_process, tansu_process  # noqa: E402
from peers import Contender, Settings  # noqa: E402

SLOW = 0.25  # the share of the messages aiokafka and kafka-python get


def _acks_1(settings: Settings) -> Settings:
    return replace(settings, produce={"acks": 1, **settings.produce})


def _rows(clients: list[tuple[str, Callable, dict[str, Settings], float]]) -> list[Contender]:
    """A row per client and settings label (defaults, best)."""
    return [Contender(client, label, measure, _acks_1(settings), share)
            for client, measure, table, share in clients for label, settings in table.items()]


def broker_alone(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """The seconds the broker alone takes to write ``n`` 100-byte records sent in Produce
    requests of kproto's best ``batch.size`` (bench/broker.py's ``raw_produce``, five in
    flight) after a one-record warm-up batch, as every producer row sends one."""
    broker.raw_produce(bootstrap, topic, 1, per_batch=1)
    per = broker.records_per_full_batch(broker.BIG_BATCH_BYTES)
    start = peers.clock_start()
    seconds = broker.raw_produce(bootstrap, topic, n // per, per_batch=per) if n >= per else 0.0
    if n % per:
        seconds += broker.raw_produce(bootstrap, topic, 1, per_batch=n % per)
    peers.clock_stop(start)  # the CPU taken (connections included); the rate is raw_produce's
    return seconds


# Its settings legend: what bench/broker.py's raw client sends (it takes no Settings).
BOUND = Contender("broker alone", "1 MB requests", broker_alone,
                  Settings(produce={"acks": 1, "batch.size": 1_000_000, "requests in flight": 5}))


def listener_pid(bootstrap: str) -> int:
    """The process listening on ``bootstrap``'s port (the broker, for its CPU)."""
    port = int(bootstrap.rsplit(":", 1)[1])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # LISTEN
                    inodes.add(f"socket:[{fields[9]}]")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in os.listdir(f"/proc/{pid}/fd")):
                return int(pid)
        except OSError:  # gone, or not ours to read
            continue
    raise RuntimeError(f"no process listens on port {port}")


# The rows: (client, measuring function, its settings by label, share of the messages).
PRODUCERS = _rows([
    ("kproto", peers.kproto_produce, peers.KPROTO, 1.0),
    ("kproto asyncio", peers.kproto_async_produce, peers.KPROTO, 1.0),
    ("kproto send_batch", peers.kproto_send_batch, peers.KPROTO, 1.0),
    ("confluent-kafka", peers.confluent_produce, peers.CONFLUENT, 1.0),
    ("aiokafka", peers.aiokafka_produce, peers.AIOKAFKA, SLOW),
    ("kafka-python", peers.kafka_python_produce, peers.KAFKA_PYTHON, SLOW),
])
CONSUMERS = _rows([
    ("kproto", peers.kproto_consume, peers.KPROTO, 1.0),
    ("kproto asyncio", peers.kproto_async_consume, peers.KPROTO, 1.0),
    ("kproto poll_arrow", peers.kproto_poll_arrow, peers.KPROTO, 1.0),
    ("confluent-kafka", peers.confluent_consume, peers.CONFLUENT, 1.0),
    ("aiokafka", peers.aiokafka_consume, peers.AIOKAFKA, SLOW),
    ("kafka-python", peers.kafka_python_consume, peers.KAFKA_PYTHON, SLOW),
])


@dataclass(frozen=True)
class Goal:
    """Issue 16's goal: row ``ours`` >= ``factor`` x row ``peer`` (medians, same run)."""

    what: str
    phase: str
    ours: str
    peer: str
    factor: float


GOALS = [
    Goal("consume, object API (poll() records)", "consume", "kproto (best)", "confluent-kafka (best)", 1.5),
    Goal("consume, object API, asyncio", "consume", "kproto asyncio (best)", "confluent-kafka (best)", 1.5),
    Goal("consume, columnar (poll_arrow)", "consume", "kproto poll_arrow (best)", "confluent-kafka (best)", 5.0),
    Goal("produce, single sends, sync", "produce", "kproto (best)", "confluent-kafka (best)", 1.5),
    Goal("produce, single sends, asyncio", "produce", "kproto asyncio (best)", "confluent-kafka (best)", 2.0),
    Goal("produce, batches (send_batch)", "produce", "kproto send_batch (best)", "confluent-kafka (best)", 5.0),
]

def measure(bootstrap: str, tables: dict[str, list[Contender]], n: int, runs: int,
            cpu: dict[str, dict[str, list[tuple[float, float, float]]]] | None = None) -> dict[str, dict[str, float]]:
    """Median records/s of every row by phase (bench/broker.py's ``rate``: a fresh topic per
    measurement, produced topics counted after each run); a first round of ``n / 5`` is not
    counted; each run goes through every row, in reverse order every other run. ``cpu``,
    when given, gets per row and run the timed part's (wall, client CPU, broker CPU)
    seconds per record."""
    rates: dict[str, dict[str, list[float]]] = {phase: {row.name: [] for row in rows} for phase, rows in tables.items()}
    for run in range(runs + 1):
        produced: list[tuple[str, int, str]] = []  # counted once the run's rows are timed (broker.rate)
        for phase, rows in tables.items():
            for row in rows if run % 2 else rows[::-1]:
                count = max(FILL_BATCH, int((n if run else n // 5) * row.share) // FILL_BATCH * FILL_BATCH)
                rate = broker.rate(bootstrap, phase, row, count, later=produced)
                if run:
                    rates[phase][row.name].append(rate)
                    if cpu is not None:
                        client, broker_cpu = peers.last_cpu
                        cpu.setdefault(phase, {}).setdefault(row.name, []).append(
                            (1 / rate, client / count, (broker_cpu or 0.0) / count))
        broker.check_produced(bootstrap, produced)
    return {phase: {name: statistics.median(r) for name, r in by.items()} for phase, by in rates.items()}


def report(broker: str, tables: dict[str, list[Contender]], medians: dict[str, dict[str, float]], runs: int,
           ratios: bool = True) -> None:
    print(f"\n{broker}: records/s, median of {runs} runs" +
          ("; kproto's ratio to each row (columns: kproto's rows)" if ratios else ""))
    for phase, rows in tables.items():
        by_name = medians[phase]
        ours = [row.name for row in rows if ratios and row.client.startswith("kproto")]
        width = max(len(row.name) for row in rows)
        print(f"  {phase:8} {'':{width}} {'records/s':>11}  " + "  ".join(f"{name:>22}" for name in ours))
        for row in rows:
            rate = by_name[row.name]
            versus = "" if row.name in ours else "  ".join(f"{by_name[name] / rate:21.2f}x" for name in ours)
            print(f"  {phase:8} {row.name:{width}} {rate:11,.0f}  {versus}".rstrip())
    for goal in GOALS:
        by_name = medians.get(goal.phase, {})
        if goal.ours in by_name and goal.peer in by_name:
            ratio = by_name[goal.ours] / by_name[goal.peer]
            verdict = "met" if ratio >= goal.factor else "MISSED"
            bound = by_name.get(BOUND.name)
            beside = (f"; {BOUND.name} / {goal.peer} = {bound / by_name[goal.peer]:.2f}x, {goal.ours} reaches "
                      f"{by_name[goal.ours] / bound:.0%} of it" if bound else "")
            print(f"  goal {goal.what}: {goal.ours} / {goal.peer} = {ratio:.2f}x, goal >= {goal.factor}x: {verdict}"
                  + beside)


def cpu_report(tables: dict[str, list[Contender]], cpu: dict[str, dict[str, list[tuple[float, float, float]]]]) -> None:
    """Per row, medians over the runs: CPU per record of the client and of the broker in the
    timed part, and the cores each kept busy (CPU / wall)."""
    print("  CPU in the timed part, per record (medians): client (this process) + broker (its process)")
    for phase, rows in tables.items():
        width = max(len(row.name) for row in rows)
        for row in rows:
            runs = cpu.get(phase, {}).get(row.name, [])
            if not runs:
                continue
            wall, client, broker_cpu = (statistics.median(column) for column in zip(*runs))
            print(f"  {phase:8} {row.name:{width}} client {client * 1e9:5.0f} ns + broker {broker_cpu * 1e9:5.0f} ns"
                  f" = {(client + broker_cpu) * 1e9:5.0f} ns; wall {wall * 1e9:5.0f} ns; cores busy: client "
                  f"{client / wall:.2f}, broker {broker_cpu / wall:.2f}")


def settings_legend(tables: dict[str, list[Contender]]) -> None:
    print("Settings (beyond each client's defaults):")
    for phase, rows in tables.items():
        for row in rows:
            print(f"  {phase:8} {row.name:34} {row.settings.describe(phase)}")


def sweep_tables() -> dict[str, list[Contender]]:
    """One row per candidate of peers.SWEEP, labelled with its settings."""
    produce = {"kproto": peers.kproto_produce, "confluent-kafka": peers.confluent_produce,
               "aiokafka": peers.aiokafka_produce, "kafka-python": peers.kafka_python_produce}
    consume = {"kproto": peers.kproto_consume, "confluent-kafka": peers.confluent_consume,
               "aiokafka": peers.aiokafka_consume, "kafka-python": peers.kafka_python_consume}
    tables: dict[str, list[Contender]] = {"produce": [], "consume": []}
    for client, (produce_configs, consume_configs) in peers.SWEEP.items():
        share = SLOW if client in ("aiokafka", "kafka-python") else 1.0
        for config in produce_configs:
            settings = _acks_1(Settings(produce=config))
            tables["produce"].append(Contender(client, settings.describe("produce"), produce[client], settings, share))
        for config, records in consume_configs:
            settings = Settings(consume=config, records=records)
            tables["consume"].append(Contender(client, settings.describe("consume"), consume[client], settings, share))
    return tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--brokers", default="minibroker,tansu")
    parser.add_argument("--quick", action="store_true", help="50,000 messages, 3 runs: a few minutes")
    parser.add_argument("--sweep", action="store_true", help="measure every candidate of peers.SWEEP instead")
    parser.add_argument("--phases", default="produce,consume")
    parser.add_argument("--clients", help="only these clients' rows, by name or its first word: e.g. "
                        "kproto,confluent-kafka (every kproto row) or 'kproto asyncio,confluent-kafka'")
    parser.add_argument("--labels", help="only the rows of these settings labels, e.g. best")
    parser.add_argument("--bound", action="store_true", help="add the broker alone as a produce row (its own rate)")
    parser.add_argument("--cpu", action="store_true", help="report client and broker CPU per record of every row")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.runs = 50_000, 3
    logging.basicConfig(level=logging.ERROR)
    tables = sweep_tables() if args.sweep else {"produce": PRODUCERS, "consume": CONSUMERS}
    clients = args.clients.split(",") if args.clients else None
    labels = args.labels.split(",") if args.labels else None
    tables = {phase: [row for row in rows
                      if (clients is None or row.client in clients or row.client.split()[0] in clients)
                      and (labels is None or row.label in labels)]
              for phase, rows in tables.items() if phase in args.phases.split(",")}
    if args.bound and "produce" in tables:
        tables["produce"] = [*tables["produce"], BOUND]
    print(f"{args.messages:,} x 100 B records, one partition (aiokafka, kafka-python: {SLOW:.0%} of them)")
    settings_legend(tables)
    launchers = {"minibroker": minibroker_process, "tansu": tansu_process}
    for name in args.brokers.split(","):
        with launchers[name]() as bootstrap:
            cpu: dict[str, dict[str, list[tuple[float, float, float]]]] | None = {} if args.cpu else None
            peers.CPU_OF = listener_pid(bootstrap) if args.cpu else None
            report(name, tables, measure(bootstrap, tables, args.messages, args.runs, cpu), args.runs, not args.sweep)
            if cpu is not None:
                cpu_report(tables, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
