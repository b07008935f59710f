"""kill -9 soak: every record a crashing minibroker acknowledged (acks=all) is in its log at
the end, once when the producer is idempotent, in each producer's order per partition.

Invariant checked: after N ``kill -9`` of a ``python -m minibroker`` process, each
restarted on the same data dir and port while producers keep sending, reading every
topic back gives, per producer:

- lost = acknowledged records missing from the log: must be 0;
- duplicates = records in the log more than once: must be 0 with idempotence (counted
  and reported without it, where retries of an appended batch are allowed to repeat it);
- order violations = per partition, a record after one of a later sequence number of the
  same producer: must be 0 with idempotence (reported without it).

Producers: kproto's :class:`kproto.Producer` and confluent-kafka's (librdkafka), each with
idempotence on and off, acks=all, each writing its own topic. Every value is
``"<producer>:<sequence>"``, and sequence ``s`` goes to partition ``s % partitions``, so
loss, repeats and order are checked exactly. Each producer keeps at most ``--window``
records unsettled, so a downtime queues a bounded amount.

Figures printed per producer: sent, acknowledged, failed (delivery error), unsettled at
the end, in the log, lost, duplicates, order violations, and records in the log never
acknowledged (allowed: the ack may have been lost with the broker); then the kill count
and restart times. Exit status 1 when an invariant broke.

Loopback only; bounded by ``--kills`` and ``--seconds``. Usage::

    python bench/soak_kill.py [--kills 100] [--seconds 540] [--rate 300]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka import Producer as CkProducer
from confluent_kafka.admin import AdminClient, NewTopic

import kproto

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support import process  # noqa: E402  (python -m minibroker, as the tests run it)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """``python -m minibroker`` as a child process on one data dir and one port."""

    def __init__(self, data_dir: str, port: int, log_path: str) -> None:
        self.data_dir, self.port = data_dir, port
        self.log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the broker
        self.proc: subprocess.Popen | None = None
        self.restart_seconds: list[float] = []

    def start(self, timeout: float = 60.0) -> None:
        started = time.monotonic()
        self.proc = process.start_minibroker("--port", str(self.port), "--data-dir", self.data_dir,
                                             "--stop-on-stdin-eof", stdin=subprocess.PIPE, stderr=self.log)
        process.wait_ready(self.proc, timeout, Path(self.log.name))
        self.restart_seconds.append(time.monotonic() - started)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()  # --stop-on-stdin-eof: a clean stop
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
        self.log.close()


class Run:
    """One producer sending ``name:seq`` records, and what became of each."""

    def __init__(self, client: str, idempotent: bool, bootstrap: str, partitions: int, window: int, rate: float):
        self.client, self.idempotent = client, idempotent
        self.name = f"{client}-{'idem' if idempotent else 'plain'}"
        self.topic = f"soak-{self.name}"
        self.partitions, self.window, self.rate = partitions, window, rate
        self.sent = 0
        self.acked: set[int] = set()
        self.failed: dict[str, int] = defaultdict(int)
        self.send_errors: dict[str, int] = defaultdict(int)
        self.settled = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.finished = False
        if client == "kproto":
            self.producer = kproto.Producer({
                "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotent,
                "linger.ms": 5, "delivery.timeout.ms": 600_000, "request.timeout.ms": 5_000,
                "retry.backoff.ms": 50, "retry.backoff.max.ms": 500, "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500, "max.block.ms": 60_000,
            })
        else:
            self.producer = CkProducer({
                "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotent,
                "linger.ms": 5, "message.timeout.ms": 600_000, "request.timeout.ms": 5_000,
                "retry.backoff.ms": 50, "retry.backoff.max.ms": 500, "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500, "log_level": 0,
            })
        self.thread = threading.Thread(target=self._loop, name=self.name, daemon=True)

    def _settle(self, seq: int, error: object) -> None:
        with self.lock:
            self.settled += 1
            if error is None:
                self.acked.add(seq)
            else:
                self.failed[type(error).__name__ if self.client == "kproto" else str(error.name())] += 1

    def _send(self, seq: int) -> None:
        value = f"{self.name}:{seq}".encode()
        partition = seq % self.partitions
        if self.client == "kproto":
            self.producer.send(self.topic, value, partition=partition,
                               on_delivery=lambda error, _metadata: self._settle(seq, error))
        else:
            self.producer.produce(self.topic, value, partition=partition,
                                  on_delivery=lambda error, _msg: self._settle(seq, error))

    def _loop(self) -> None:
        period = 1.0 / self.rate
        next_at = time.monotonic()
        while not self.stop.is_set():
            if self.client == "confluent":
                self.producer.poll(0)
            with self.lock:
                busy = self.sent - self.settled >= self.window
            now = time.monotonic()
            if busy or now < next_at:
                time.sleep(min(0.005, max(0.0, next_at - now)) if not busy else 0.005)
                continue
            try:
                self._send(self.sent)
            except Exception as exc:  # not queued: try the same sequence again
                self.send_errors[type(exc).__name__] += 1
                time.sleep(0.05)
                continue
            self.sent += 1
            next_at = max(next_at + period, now - 1.0)

    def finish(self, timeout: float) -> None:
        """Stop sending, wait up to ``timeout`` for what is queued, close. Idempotent."""
        if self.finished:
            return
        self.finished = True
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        if self.client == "kproto":
            try:
                self.producer.flush(timeout)
            except Exception as exc:
                self.send_errors[f"flush: {type(exc).__name__}"] += 1
            self.producer.close(5)
        else:
            self.producer.flush(timeout)


def read_back(bootstrap: str, runs: list[Run], partitions: int) -> dict[str, dict[int, list[int]]]:
    """Every record of every run's topic: name -> partition -> sequences in log order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-reader", "enable.auto.commit": False,
                         "fetch.max.bytes": 8 << 20, "log_level": 0})
    found: dict[str, dict[int, list[int]]] = {r.name: defaultdict(list) for r in runs}
    try:
        ends = {}
        for r in runs:
            for p in range(partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(r.topic, p), timeout=30)
                if high > low:
                    ends[(r.topic, p)] = high
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in ends])
        left = dict(ends)
        deadline = time.monotonic() + 300
        while left and time.monotonic() < deadline:
            for m in consumer.consume(10_000, timeout=1):
                if m.error() is not None:
                    raise RuntimeError(f"read back: {m.error()}")
                name, seq = m.value().decode().rsplit(":", 1)
                found[name][m.partition()].append(int(seq))
                key = (m.topic(), m.partition())
                if key in left and m.offset() + 1 >= left[key]:
                    del left[key]
        if left:
            raise RuntimeError(f"read back timed out with {left} left")
    finally:
        consumer.close()
    return found


def report(runs: list[Run], found: dict[str, dict[int, list[int]]]) -> bool:
    ok = True
    header = (f"{'producer':<18}{'sent':>8}{'acked':>8}{'failed':>8}{'unsettled':>10}{'in log':>8}"
              f"{'lost':>6}{'dups':>6}{'order':>7}{'unacked in log':>16}")
    print(header)
    for r in runs:
        in_log = [s for seqs in found[r.name].values() for s in seqs]
        present = set(in_log)
        lost = len(r.acked - present)
        dups = len(in_log) - len(present)
        order = 0
        for seqs in found[r.name].values():
            highest = -1
            for s in seqs:
                if s < highest:
                    order += 1
                highest = max(highest, s)
        unacked_in_log = len(present - r.acked)
        failed = sum(r.failed.values())
        print(f"{r.name:<18}{r.sent:>8}{len(r.acked):>8}{failed:>8}{r.sent - r.settled:>10}{len(in_log):>8}"
              f"{lost:>6}{dups:>6}{order:>7}{unacked_in_log:>16}")
        if r.failed:
            print(f"{'':<18}delivery errors: {dict(r.failed)}")
        if r.send_errors:
            print(f"{'':<18}send errors (retried): {dict(r.send_errors)}")
        if lost or (r.idempotent and (dups or order)):
            ok = False
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="kill -9 this many times (default 100)")
    parser.add_argument("--seconds", type=float, default=540, help="stop killing after this long (default 540)")
    parser.add_argument("--min-up", type=float, default=0.5, help="shortest uptime between kills, s")
    parser.add_argument("--max-up", type=float, default=3.0, help="longest uptime between kills, s")
    parser.add_argument("--rate", type=float, default=300, help="records/s per producer (default 300)")
    parser.add_argument("--window", type=int, default=2000, help="unsettled records per producer at most")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--clients", default="kproto,confluent", help="comma-separated: kproto, confluent")
    parser.add_argument("--data-dir", help="keep the broker's data here (default: a temporary dir)")
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args()

    import random
    rng = random.Random(args.seed)
    tmp = tempfile.TemporaryDirectory(prefix="soak-kill-")
    data_dir = args.data_dir or os.path.join(tmp.name, "data")
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    broker = Broker(data_dir, port, os.path.join(tmp.name, "broker.log"))
    broker.start()
    runs: list[Run] = []
    began = time.monotonic()
    kills = 0
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        clients = [c.strip() for c in args.clients.split(",") if c.strip()]
        specs = [(c, idem) for c in clients for idem in (True, False)]
        names = [f"soak-{c}-{'idem' if i else 'plain'}" for c, i in specs]
        for future in admin.create_topics([NewTopic(n, args.partitions, 1) for n in names]).values():
            future.result(30)
        del admin
        runs = [Run(c, idem, bootstrap, args.partitions, args.window, args.rate) for c, idem in specs]
        for r in runs:
            r.thread.start()
        while kills < args.kills and time.monotonic() - began < args.seconds:
            time.sleep(rng.uniform(args.min_up, args.max_up))
            broker.kill()
            kills += 1
            broker.start()
            print(f"kill {kills}: restarted in {broker.restart_seconds[-1]:.2f} s; "
                  f"acked so far {sum(len(r.acked) for r in runs)}", flush=True)
        time.sleep(args.max_up)  # let the producers catch up with the last restart
        for r in runs:
            r.finish(timeout=120)
        found = read_back(bootstrap, runs, args.partitions)
    finally:
        for r in runs:
            r.finish(timeout=5)  # after a failure: do not leave producer threads behind
        broker.stop()
    elapsed = time.monotonic() - began
    print()
    ok = report(runs, found)
    restarts = broker.restart_seconds[1:]
    if restarts:
        print(f"\nkills: {kills} in {elapsed:.0f} s; restart to listening: median {statistics.median(restarts):.2f} s, "
              f"max {max(restarts):.2f} s")
    print("invariants held" if ok else "INVARIANT BROKEN")
    if not ok:
        print(f"broker log kept at {broker.log.name}; data at {data_dir}")
        tmp._finalizer.detach()
    else:
        tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
