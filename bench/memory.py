"""Memory while consuming (and producing) a large topic: peak RSS against the client's limits.

Issue 16's goal: consuming a 1 GB topic keeps the consumer's RSS under
``2 x fetch.max.bytes + a constant``; producing with ``buffer.memory`` never goes past it.

How it measures. A minibroker process (memory storage) gets a topic of ``--size-mb`` of
``--value-bytes`` values over ``--partitions`` partitions (written by confluent-kafka).
Each measurement runs in a fresh child process, so that nothing of the fill or of an
earlier run is counted: the child imports kproto (and pyarrow), makes its client and
waits for metadata, takes that RSS as its baseline, resets the kernel's high-water mark
(``/proc/self/clear_refs``), then works; its peak is the larger of ``VmHWM`` and RSS
sampled every 5 ms. What is reported is peak minus baseline: memory the work took.

- ``poll``: ``Consumer.poll()`` until every record came, touching each value.
- ``poll_arrow``: ``Consumer.poll_arrow()`` until every row came, touching the value column.
- ``produce``: ``Producer.send()`` of as many bytes, as fast as it takes them (it blocks
  when ``buffer.memory`` is full), then ``flush()``; compared with ``buffer.memory``, and
  with what the producer counts against it (the bytes of unsettled batches, sampled with
  RSS): the accounting never passes ``buffer.memory``; RSS does.

What the producer's RSS beyond ``buffer.memory`` is (issue 16, measured with the defaults:
128 MiB of values, 4 partitions, ``buffer.memory`` 32 MiB, ``batch.size`` 16 KiB). Not
the copies on the way to the socket any more: a request's batches go to the socket as
they are (kproto.io.connection). It was the codec's ``BatchBuilder``, whose buffer grew
by doubling from 1 KiB while the appender counted the bytes written: a 10,000 B record
alone in a 16 KiB batch sat in a 16 KiB buffer and counted 10 KB (1.97x of the bound).
Now each batch counts ``max(batch.size, record size)`` from its first record, as Java
counts per batch taken from its BufferPool, and its builder's doubling stops there
(``BatchBuilder.capacity``): the builders never hold more than is counted, and a record
that needs a new batch waits until that fits. Measured on a shared 2-core machine, the
two trees one after the other per size, peak RSS over the baseline before -> after
(counted at most 32.0 MiB in every run), ``--modes produce --value-bytes N``: 10,000 B
63.3 -> 38.3 MiB (1.98x -> 1.20x), 8,100 B 42.2 -> 47.3 (1.32x -> 1.48x), 1,000 B 37.5
-> 39.1 (1.17x -> 1.22x), 100 B 40.7 -> 45.2 (1.27x -> 1.41x; this row reaches
``buffer.memory`` only when the producer outruns the broker: one run before stayed at
12 MiB counted). The ~5 MiB more for 8,100 B and 100 B values is not the builders'
buffers (the same for full batches either way; taking ``batch.size`` whole at the first
record instead of doubling measured no better: 100 B 46.9, 8,100 B 47.7): what
else is resident beyond the counted bytes (allocator, per-batch and per-request objects)
is not explained yet.

The consumer's bound is ``2 x fetch.max.bytes + CONSTANT``: the fetcher holds under one
``fetch.max.bytes`` of responses when it sends a Fetch and one response arrives (see
kproto.consumer.fetcher); CONSTANT (16 MiB) is the rest: one poll's result, the
connection's read buffers, the interpreter's and the allocator's slack. pyarrow's
one-time start (~50 MiB at its first compute call) is taken before the baseline. The
consumer is given ``max.partition.fetch.bytes = fetch.max.bytes`` so that every response
can be full, the worst case for buffering.

Usage: ``python bench/memory.py [--size-mb 128] [--value-bytes 10000] [--partitions 4]
[--fetch-max-bytes 8388608] [--buffer-memory 33554432] [--modes poll,poll_arrow,produce]``;
``--size-mb 1024`` is the issue's 1 GB (the broker holds it in memory).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from broker import minibroker_process  # noqa: E402  (bench/broker.py)

MiB = 1 << 20
CONSTANT = 16 * MiB  # the consumer's bound besides 2 x fetch.max.bytes (see the docstring)
TOPIC = "memory"


# -- the child: one measurement ---------------------------------------------------------------

def rss() -> int:
    """This process's resident set size, in bytes (``VmRSS``)."""
    return _status("VmRSS")


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


class Peak:
    """Samples RSS every 5 ms in a thread; ``peak`` is the highest seen (or VmHWM's, higher).
    ``counted``: a figure of the client's own accounting sampled with it (its highest is
    ``counted``), such as the producer's bytes of unsettled batches."""

    def __init__(self, counted=None) -> None:
        self._counted = counted
        self.counted_peak = 0
        self.baseline = rss()
        try:  # "5" resets the peak RSS (VmHWM) to the current RSS (Linux 4.0+)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
        self.highest = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.highest = max(self.highest, rss())
            if self._counted is not None:
                self.counted_peak = max(self.counted_peak, self._counted())

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return {"baseline": self.baseline, "peak": max(self.highest, _status("VmHWM"), rss()),
                "counted": self.counted_peak}


def consume(bootstrap: str, mode: str, count: int, partitions: int, fetch_max_bytes: int) -> dict[str, int]:
    import pyarrow.compute as pc

    from kproto import Consumer
    from kproto.arrow import arrow_schema, record_batch
    from kproto.codec import decode_columnar
    from kproto.structs import TopicPartition

    # pyarrow's first compute call takes ~50 MiB once (kernels, pools): in both modes'
    # baselines, since it is no part of what reading takes.
    pc.sum(pc.binary_length(record_batch(decode_columnar(b""), "t", 0, arrow_schema(True)).column("value")))

    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                  fetch_max_bytes=fetch_max_bytes, max_partition_fetch_bytes=fetch_max_bytes) as consumer:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
        consumer.beginning_offsets([TopicPartition(TOPIC, 0)])  # connected, metadata known
        peak = Peak()
        got = touched = 0
        while got < count:
            if mode == "poll":
                for record in consumer.poll(1.0):
                    touched += len(record.value)
                    got += 1
            else:
                batch = consumer.poll_arrow(1.0, include_headers=False)
                touched += pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0
                got += batch.num_rows
                del batch
        return {**peak.stop(), "records": got, "bytes": touched}


# -- the producer's side (issue 16: "producing with buffer.memory never exceeds it"; the
# producer's memory accounting is the "produce" part's: this is the measurement) ----------

def produce(bootstrap: str, size: int, value_bytes: int, partitions: int, buffer_memory: int) -> dict[str, int]:
    from kproto import Producer

    value = os.urandom(value_bytes)
    with Producer(bootstrap_servers=bootstrap, buffer_memory=buffer_memory, linger_ms=5) as producer:
        producer.partitions_for(TOPIC + "-produced")
        peak = Peak(lambda: producer._core._acc.used)  # what buffer.memory bounds
        sent = 0
        for i in range(size // value_bytes):
            producer.send(TOPIC + "-produced", value, partition=i % partitions)
            sent += value_bytes
        producer.flush()
        return {**peak.stop(), "bytes": sent}


def child(args: argparse.Namespace) -> None:
    if args.child == "produce":
        result = produce(args.bootstrap, args.size_mb * MiB, args.value_bytes, args.partitions, args.buffer_memory)
    else:
        count = args.size_mb * MiB // args.value_bytes
        result = consume(args.bootstrap, args.child, count, args.partitions, args.fetch_max_bytes)
    print(json.dumps(result))


# -- the parent: fill, run each child, report -------------------------------------------------

def fill(bootstrap: str, size: int, value_bytes: int, partitions: int) -> int:
    """Write ``size`` bytes of values to TOPIC (and make TOPIC-produced); the record count."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, partitions, 1),
                                       NewTopic(TOPIC + "-produced", partitions, 1)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                         "queue.buffering.max.kbytes": 256 * 1024})
    value = os.urandom(value_bytes)  # incompressible, as most payloads at this size are
    count = size // value_bytes
    for i in range(count):
        while True:
            try:
                producer.produce(TOPIC, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("the fill was not acknowledged in time")
    return count


def run_child(mode: str, bootstrap: str, args: argparse.Namespace) -> dict[str, int]:
    argv = [sys.executable, __file__, "--child", mode, "--bootstrap", bootstrap, "--size-mb", str(args.size_mb),
            "--value-bytes", str(args.value_bytes), "--partitions", str(args.partitions),
            "--fetch-max-bytes", str(args.fetch_max_bytes), "--buffer-memory", str(args.buffer_memory)]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=1800).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=128, help="topic size (1024: the issue's 1 GB)")
    parser.add_argument("--value-bytes", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--fetch-max-bytes", type=int, default=8 * MiB)
    parser.add_argument("--buffer-memory", type=int, default=32 * MiB)
    parser.add_argument("--modes", default="poll,poll_arrow,produce")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    bound = 2 * args.fetch_max_bytes + CONSTANT
    with minibroker_process() as bootstrap:
        started = time.perf_counter()
        count = fill(bootstrap, args.size_mb * MiB, args.value_bytes, args.partitions)
        print(f"topic {TOPIC!r}: {count:,} x {args.value_bytes:,} B = {args.size_mb} MiB over {args.partitions} "
              f"partitions (filled in {time.perf_counter() - started:.1f} s)")
        print(f"consumer bound: 2 x fetch.max.bytes ({args.fetch_max_bytes / MiB:.0f} MiB) + {CONSTANT / MiB:.0f} MiB "
              f"= {bound / MiB:.0f} MiB; producer bound: buffer.memory = {args.buffer_memory / MiB:.0f} MiB")
        for mode in args.modes.split(","):
            result = run_child(mode, bootstrap, args)
            used = result["peak"] - result["baseline"]
            limit = args.buffer_memory if mode == "produce" else bound
            verdict = "within" if used <= limit else "OVER"
            print(f"  {mode:10} baseline {result['baseline'] / MiB:7.1f} MiB  peak {result['peak'] / MiB:7.1f} MiB  "
                  f"used {used / MiB:7.1f} MiB  ({used / limit:5.2f} of the bound: {verdict})"
                  + (f"; counted (unsettled batches) at most {result['counted'] / MiB:.1f} MiB" if mode == "produce" else ""))


if __name__ == "__main__":
    main()
