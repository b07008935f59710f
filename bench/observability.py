"""What observability costs: kproto's produce and consume throughput with its metrics
(always on, as Java's), with ``statistics.interval.ms=100`` and a callback, and with a
no-op interceptor on each side (``interceptor``: with ``on_acknowledgement``;
``on_send``: a producer interceptor without one), against the same code without these hooks: the main
branch's tree (``git archive``, its built codec copied in), in the same run, alternating
the variants run by run; medians, and each variant's % difference from the baseline.

Each measurement is a fresh process (``--child``) importing one tree, against one
minibroker process: produce ``--messages`` records of 100 bytes (a warm-up of 10% first,
not timed) and flush; consume them from the beginning with an assigned consumer,
touching each value (``len``). Two figures per variant: records per second (wall clock),
and the client process's CPU time per record (every thread), which the other processes of
a busy machine disturb less. The goal (issue 16): <= 2% either way.

Usage: ``python bench/observability.py [--messages N] [--runs R] [--baseline REF]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

VALUE = b"x" * 100


class Nothing:
    """A producer and consumer interceptor that does nothing (what the hook itself costs)."""

    def on_send(self, record):
        return record

    def on_acknowledgement(self, metadata, exception):
        pass

    def on_consume(self, records):
        return records

    def on_commit(self, offsets):
        pass


def _settings(variant: str) -> dict:
    if variant == "statistics":
        return {"statistics.interval.ms": 100, "statistics.callback": lambda snapshot: None}
    if variant == "interceptor":
        return {"interceptor.classes": [Nothing()]}
    if variant == "on_send":  # as the OpenTelemetry example's: no acknowledgement is watched for it
        # (not in the baseline tree, hence imported here)
        from kproto.interceptors import ConsumerInterceptor, ProducerInterceptor

        class OnlySend(ProducerInterceptor, ConsumerInterceptor):
            def on_send(self, record):
                return record

        return {"interceptor.classes": [OnlySend()]}
    return {}


def child(mode: str, variant: str, bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    """Records per second of one measurement, and the CPU time this process spent per
    record (microseconds, every thread: the caller's and the client's loop), in this
    process (its kproto is PYTHONPATH's)."""
    from kproto import Consumer, Producer, TopicPartition

    settings = {"bootstrap.servers": bootstrap, **_settings(variant)}
    if mode == "produce":
        with Producer(settings) as producer:
            send = producer.send
            for _ in range(n // 10):  # warm-up: connection, metadata, producer id
                send(topic, VALUE)
            producer.flush()
            start, cpu = time.perf_counter(), time.process_time()
            for _ in range(n):
                send(topic, VALUE)
            producer.flush()
            return n / (time.perf_counter() - start), (time.process_time() - cpu) / n * 1e6
    with Consumer(settings, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        warm = touched = 0
        while not warm:  # warm-up: the first fetch, untimed
            records = consumer.poll(5)
            warm, touched = len(records), sum(len(r.value) for r in records)
        got = warm
        start, cpu = time.perf_counter(), time.process_time()
        while got < n:
            records = consumer.poll(5)
            got += len(records)
            for record in records:
                touched += len(record.value)
        return (got - warm) / (time.perf_counter() - start), (time.process_time() - cpu) / (got - warm) * 1e6


def hook_costs() -> dict[str, float]:
    """Microseconds per call of each hook the hot paths make, in this process: what the
    end-to-end figures cannot resolve on a busy machine, divided by the records it covers."""
    import timeit

    from kproto.config import ClientConfig
    from kproto.metrics import ConsumerMetrics, ProducerMetrics
    from kproto.records import BatchBuilder

    config = ClientConfig("producer", {"bootstrap.servers": "127.0.0.1:9"})
    producer = ProducerMetrics(config, lambda: 0)
    builder = BatchBuilder(max_bytes=16384)
    while builder.size_in_bytes() < 16000:
        builder.append(0, None, VALUE)

    class Batch:  # what the sender hands over: a sealed batch, its count, its raw size, its age
        pass

    batch = Batch()
    batch.data, batch.record_count, batch.raw_size, batch.created = (builder.build(), builder.record_count,
                                                                     builder.size_in_bytes(), time.monotonic())
    batches = [batch]
    consumer = ConsumerMetrics(ClientConfig("consumer", {"bootstrap.servers": "127.0.0.1:9"}))
    records = [None] * 500
    node = producer.node(0)
    n = 20000
    return {
        f"produce request (1 batch of {batch.record_count} records)":
            timeit.timeit(lambda: producer.request_sent(batches), number=n) / n * 1e6,
        "poll (500 records)": timeit.timeit(lambda: consumer.polled(records), number=n) / n * 1e6,
        "connection request + response": timeit.timeit(
            lambda: (node.sent(100), node.received(100), node.answered(0.001)), number=n) / n * 1e6,
        "statistics snapshot (producer)": timeit.timeit(producer.snapshot, number=n // 10) / (n // 10) * 1e6,
    }


def baseline_tree(ref: str, into: Path) -> Path:
    """``ref``'s tree in ``into``, with this checkout's built codec (the same .pyx)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for built in (ROOT / "kproto").glob("_codec*.so"):
        shutil.copy(built, into / "kproto")
    return into


def measure(tree: Path, mode: str, variant: str, bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", mode, variant, bootstrap, topic,
                           str(n)], env=env, capture_output=True, text=True, timeout=600, cwd=tree)
    if done.returncode:
        raise RuntimeError(f"{mode} {variant} in {tree} failed:\n{done.stderr[-3000:]}")
    rate, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(rate), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="main", help="git ref of the code without the hooks")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, variant, bootstrap, topic, n = args.child
        print(*child(mode, variant, bootstrap, topic, int(n)))
        return

    sys.path.insert(0, str(ROOT))
    from tests.support.process import minibroker_process

    variants = [("baseline", "none"), ("metrics", "none"), ("statistics", "statistics"),
                ("interceptor", "interceptor"), ("on_send", "on_send")]
    with tempfile.TemporaryDirectory(prefix="bench-observability-") as tmp:
        trees = {"baseline": baseline_tree(args.baseline, Path(tmp)), "here": ROOT}
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        with minibroker_process("--port", "0") as (_, bootstrap):
            # the topic every consumer reads: produced once, with this tree's producer
            measure(ROOT, "produce", "none", bootstrap, "observability-consume", args.messages)
            for run in range(args.runs):
                order = variants if run % 2 == 0 else variants[::-1]  # alternate: no variant always goes first
                for mode in ("produce", "consume"):
                    for name, variant in order:
                        tree = trees["baseline" if name == "baseline" else "here"]
                        topic = f"observability-{mode}-{run}-{name}" if mode == "produce" else "observability-consume"
                        results.setdefault((mode, name), []).append(
                            measure(tree, mode, variant, bootstrap, topic, args.messages))
                print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    report = {}
    print(f"{'':8} {'variant':12} {'median rec/s':>14} {'vs baseline':>12} {'CPU us/rec':>11} {'vs baseline':>12}"
          f"   (runs: {args.runs}, {args.messages} x 100 B, baseline: {args.baseline})")
    for mode in ("produce", "consume"):
        base_rate = statistics.median(r for r, _ in results[(mode, "baseline")])
        base_cpu = statistics.median(c for _, c in results[(mode, "baseline")])
        for name, _ in variants:
            rate = statistics.median(r for r, _ in results[(mode, name)])
            cpu = statistics.median(c for _, c in results[(mode, name)])
            diff, cpu_diff = (rate / base_rate - 1) * 100, (cpu / base_cpu - 1) * 100
            report[f"{mode}/{name}"] = {"rate": rate, "rate_diff_percent": diff, "cpu_us": cpu,
                                        "cpu_diff_percent": cpu_diff, "runs": results[(mode, name)]}
            print(f"{mode:8} {name:12} {rate:14,.0f} {diff:+11.1f}% {cpu:11.3f} {cpu_diff:+11.1f}%")
    costs = hook_costs()
    print("\nhook costs, this tree (us per call):")
    for what, micros in costs.items():
        print(f"  {what:40} {micros:8.2f}")
    # per record: a produce request of one batch (the fewest records a request carries at
    # batch.size with 100-byte values) and its connection's request and response; a poll
    # of 500 records (its fetch, of up to max.partition.fetch.bytes, is rarer still)
    (request_name, request), (_, poll), (_, conn), (_, _) = costs.items()
    per_batch = int(request_name.split(" of ")[1].split()[0])
    for mode, per_record in (("produce", (request + conn) / per_batch), ("consume", poll / 500)):
        base = statistics.median(c for _, c in results[(mode, "baseline")])
        print(f"  {mode}: {per_record * 1000:.1f} ns per record = {per_record / base * 100:.2f}% of the baseline's "
              f"CPU per record")
    print(json.dumps(report), file=sys.stderr)


if __name__ == "__main__":
    main()
