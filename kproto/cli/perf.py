"""``kproto perf produce|consume``: throughput and latency of a topic (Kafka's
``kafka-producer-perf-test.sh`` and ``kafka-consumer-perf-test.sh``).

``perf produce`` sends ``--num-records`` records of ``--record-size`` random uppercase
letters (as Kafka's tool does, so compression ratios compare), optionally throttled to
``--throughput`` records/s. A record's latency is the time from ``send`` to its
acknowledgement.

``perf consume`` reads ``--messages`` records from the start of the topic (or from a
group's committed offsets). A record's latency is its end-to-end latency, the time from
its timestamp to its receipt: meaningful while the records are being produced (run it
alongside ``perf produce``); on old records it is their age.

Both print one summary: records, records/s, MB/s, and latency average, max and
percentiles (50th, 95th, 99th, 99.9th), as text or ``--json``. ``--plot FILE.png``
also draws the latency histogram and the throughput over time (with matplotlib, an
optional dependency); the throughput is the rate over a moving window (a twentieth of
the run, at least 100 ms), since records complete in bursts. A live progress line goes
to stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import random
import sys
import time
from dataclasses import dataclass, field

from kproto import ConsumerRecord, Producer, RecordMetadata, TopicPartition
from kproto.cli.options import (
    UsageError,
    add_command,
    add_connection_options,
    add_producer_options,
    admin_client,
    consumer_client,
    positive_int,
    producer_client,
    producer_flags,
)
from kproto.cli.progress import progress

__all__ = ["register"]

PERCENTILES = (0.5, 0.95, 0.99, 0.999)
_PLOT_WINDOWS = 20  # a throughput window is 1/20 of the run...
_MIN_WINDOW = 0.1  # ...and at least 100 ms, many polls or produce responses wide
_STEPS_PER_WINDOW = 5  # points per window length: the window moves by a fifth at a time


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "perf", help="measure produce or consume throughput and latency",
                         examples=["kproto perf produce bench --num-records 1000000 --record-size 100",
                                   "kproto perf produce bench --num-records 100000 --throughput 20000 --plot produce.png",
                                   "kproto perf consume bench --messages 1000000"])
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)

    produce = add_command(kinds, "produce", help="send records as fast as allowed; measure acknowledgement latency",
                          examples=["kproto perf produce bench --num-records 1000000 --record-size 100 --acks 1",
                                    "kproto perf produce bench --num-records 100000 --compression lz4 "
                                    "--property linger.ms=20 --json"])
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("--num-records", type=positive_int, required=True, metavar="N", help="records to send")
    produce.add_argument("--record-size", type=positive_int, default=100, metavar="BYTES",
                         help="value size of each record (default: 100)")
    produce.add_argument("--throughput", type=float, default=-1, metavar="RECORDS_PER_S",
                         help="throttle to this many records/s (default: -1, no limit)")
    add_producer_options(produce)
    produce.set_defaults(run=_produce)

    consume = add_command(kinds, "consume", help="read records as fast as possible; measure end-to-end latency",
                          examples=["kproto perf consume bench --messages 1000000",
                                    "kproto perf consume bench --messages 100000 --group perf --plot consume.png"])
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument("--messages", type=positive_int, required=True, metavar="N", help="records to read")
    consume.add_argument("--group", metavar="GROUP", help="read as a member of this group (default: no group)")
    consume.add_argument("--timeout-ms", type=positive_int, default=10000, metavar="MS",
                         help="give up once no record arrived for MS milliseconds (default: 10000)")
    consume.set_defaults(run=_consume)

    for kind in (produce, consume):
        kind.add_argument("--plot", metavar="FILE.png", help="draw latency histogram and throughput over time "
                                                             "(needs matplotlib)")
        kind.add_argument("--json", action="store_true", help="print the summary as one JSON object")
        kind.add_argument("--no-progress", action="store_true", help="do not draw the live progress line")
        add_connection_options(kind)


@dataclass
class Measurement:
    """What a run measured: when each record completed and its latency."""

    start: float = field(default_factory=time.perf_counter)
    latencies_ms: list[float] = field(default_factory=list)
    done_at: list[float] = field(default_factory=list)  # seconds after start
    bytes: int = 0
    errors: list[BaseException] = field(default_factory=list)

    def completed(self, latency_ms: float, size: int) -> None:
        self.latencies_ms.append(latency_ms)
        self.done_at.append(time.perf_counter() - self.start)
        self.bytes += size

    def summary(self) -> dict[str, float]:
        n = len(self.latencies_ms)
        elapsed = max(self.done_at[-1] if self.done_at else 0.0, 1e-9)
        ordered = sorted(self.latencies_ms)
        summary = {"records": n, "elapsed_s": round(elapsed, 3), "records_per_s": n / elapsed,
                   "mb_per_s": self.bytes / elapsed / 1024 / 1024,
                   "latency_avg_ms": sum(ordered) / n if n else 0.0, "latency_max_ms": ordered[-1] if n else 0.0}
        for p in PERCENTILES:  # nearest rank, as Kafka's tool
            summary[f"latency_p{p * 100:g}_ms"] = ordered[min(int(p * n), n - 1)] if n else 0.0
        return summary


def _print_summary(summary: dict[str, float], verb: str, latency: str, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary), flush=True)
        return
    percentiles = ", ".join(f"{summary[f'latency_p{p * 100:g}_ms']:.2f} ms {p * 100:g}th" for p in PERCENTILES)
    print(f"{summary['records']:,} records {verb}, {summary['records_per_s']:,.1f} records/sec "
          f"({summary['mb_per_s']:.2f} MB/sec); {latency}: {summary['latency_avg_ms']:.2f} ms avg, "
          f"{summary['latency_max_ms']:.2f} ms max, {percentiles}.", flush=True)


def _check_plot(args: argparse.Namespace) -> None:
    """Refuse --plot before the run, not after it, when matplotlib is missing."""
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--plot needs matplotlib, which is not installed (pip install matplotlib)")


def throughput_over_time(done_at: list[float]) -> tuple[list[float], list[float], float]:
    """Records per second over a moving window: ``(times, rates, window)``.

    Records complete in bursts (a poll's batch, a produce response's records), so a rate
    over a window narrower than the gap between bursts swings from zero to millions. The
    window is 1/20 of the run and at least 100 ms; each point is the rate over the full
    window that ends at its time, so there is no partial window at either end (a last
    bucket holding one record used to draw a fall to zero). A run shorter than one window
    gives one point: its average.
    """
    if not done_at:
        return [], [], _MIN_WINDOW
    done_at = sorted(done_at)
    end = done_at[-1]
    window = min(max(end / _PLOT_WINDOWS, _MIN_WINDOW), end) or 1e-9
    step = window / _STEPS_PER_WINDOW
    steps = max(int((end - window) / step + 1e-9), 0)
    ends = [end - (steps - i) * step for i in range(steps + 1)]
    times, rates, first = [], [], 0
    last = 0
    for t in ends:  # two cursors over the sorted completion times: (t - window, t]
        while last < len(done_at) and done_at[last] <= t:
            last += 1
        while first < last and done_at[first] <= t - window:
            first += 1
        times.append(t)
        rates.append((last - first) / window)
    return times, rates, window


def _plot(measurement: Measurement, path: str, title: str, latency: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    from matplotlib import pyplot
    from matplotlib.ticker import StrMethodFormatter

    figure, (histogram, timeline) = pyplot.subplots(2, 1, figsize=(8, 7), layout="constrained")
    figure.suptitle(title)
    histogram.hist(measurement.latencies_ms, bins=50)
    histogram.set(xlabel=f"{latency} (ms)", ylabel="records")
    times, rates, window = throughput_over_time(measurement.done_at)
    timeline.plot(times, rates, marker="o" if len(times) == 1 else None)
    if measurement.done_at:
        average = len(measurement.done_at) / max(measurement.done_at[-1], 1e-9)
        timeline.axhline(average, linestyle="--", color="grey", label=f"average {average:,.0f} records/s")
        timeline.legend(loc="lower right")
        timeline.set_xlim(0, measurement.done_at[-1])  # the whole run, the first window included
    timeline.set_ylim(bottom=0)
    timeline.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))  # 250,000, not 2.5 and "1e5"
    timeline.set_title(f"records per second over a moving {window * 1000:,.0f} ms window", fontsize="medium")
    timeline.set(xlabel="time (s)", ylabel="records/s")
    figure.savefig(path)
    pyplot.close(figure)


def _finish(args: argparse.Namespace, measurement: Measurement, verb: str, latency: str) -> None:
    _print_summary(measurement.summary(), verb, latency, args.json)
    if args.plot:
        _plot(measurement, args.plot, f"kproto perf {args.kind} {args.topic}", latency)


# -- produce -------------------------------------------------------------------------------

def _delivered(measurement: Measurement, size: int, sent_at: float,
               error: BaseException | None, _metadata: RecordMetadata | None) -> None:
    if error is not None:
        measurement.errors.append(error)
    else:
        measurement.completed((time.perf_counter() - sent_at) * 1000, size)


def _send(producer: Producer, args: argparse.Namespace, measurement: Measurement) -> None:
    payload = bytes(random.choices(range(ord("A"), ord("Z") + 1), k=args.record_size))
    bar = progress(args.num_records, "records", "sent", enabled=not args.no_progress)
    try:
        for i in range(args.num_records):
            if args.throughput > 0:  # hold each record until its slot in the schedule
                wait = measurement.start + i / args.throughput - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
            now = time.perf_counter()
            producer.send(args.topic, payload,
                          on_delivery=functools.partial(_delivered, measurement, args.record_size, now))
            bar.update(1)
        producer.flush()
    finally:
        bar.close()


def _produce(args: argparse.Namespace) -> int:
    _check_plot(args)
    producer = producer_client(args, producer_flags(args))
    try:
        measurement = Measurement()
        _send(producer, args, measurement)
    finally:
        producer.close(10.0)
    _finish(args, measurement, "sent", "latency")
    if measurement.errors:
        print(f"kproto perf: {len(measurement.errors):,} records failed", file=sys.stderr)
        raise measurement.errors[0]
    return 0


# -- consume -------------------------------------------------------------------------------

def _received(measurement: Measurement, records: list[ConsumerRecord]) -> None:
    now_ms = time.time() * 1000
    for r in records:
        size = (len(r.key) if r.key is not None else 0) + (len(r.value) if r.value is not None else 0)
        measurement.completed(now_ms - r.timestamp, size)


def _consume(args: argparse.Namespace) -> int:
    _check_plot(args)
    with admin_client(args) as admin:
        partitions = [TopicPartition(args.topic, p.partition)
                      for p in admin.describe_topics([args.topic])[args.topic].partitions]
    settings = {"group.id": args.group, "auto.offset.reset": "earliest"}
    with consumer_client(args, settings) as consumer:
        if args.group is None:
            consumer.assign(partitions)
            consumer.seek_to_beginning(partitions)
        else:
            consumer.subscribe([args.topic])
        measurement = Measurement()
        bar = progress(args.messages, "records", "consumed", enabled=not args.no_progress)
        idle = args.timeout_ms / 1000
        try:
            while len(measurement.latencies_ms) < args.messages:
                records = consumer.poll(idle, max_records=args.messages - len(measurement.latencies_ms))
                if not records:
                    break
                _received(measurement, records)
                bar.update(len(records))
        finally:
            bar.close()
    _finish(args, measurement, "consumed", "end-to-end latency")
    if len(measurement.latencies_ms) < args.messages:
        print(f"kproto perf: error: only {len(measurement.latencies_ms):,} of {args.messages:,} records arrived "
              f"(none for {args.timeout_ms} ms)", file=sys.stderr)
        return 1
    return 0
