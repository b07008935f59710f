"""kproto's Spark pieces, measured on local[2]: the decode UDF against peers, the source and
the sink against Spark-only floors.

1. Decode: N records held as raw record batches in a binary column (one producer batch
   of ``--per-row`` records per row, cached in Spark), decoded to
   ``array<struct<offset, timestamp, timestampType, key, value, headers>>`` by three
   scalar Arrow UDFs of the same shape and return type: kproto's ``decode_udf``
   (codec -> Arrow buffers), and the same UDF written on kafka-python's and on
   aiokafka's record readers (a Python object per record, then ``pa.array``). Each
   query ends in the ``noop`` sink; rows/s is records decoded per second.
   Goal (issues 5, 16): kproto >= 5x the best peer.
   A fourth UDF of the same shape, ``spark-only``, decodes nothing: it returns an answer
   of the same size decoded once per Python worker. Its time is what Spark itself spends
   on such a query (scan, Arrow to and from the Python worker, the JVM's rows), a floor
   no decoder can go under; ``spark-only / best peer`` is then the highest ratio any
   decoder could reach against the best peer.
2. Source: rows/s of ``spark.read.format("kproto")`` over an N-record topic (two
   partitions) on minibroker running in its own process, into the ``noop`` sink; and of
   its floor, the ``spark-only`` format: a Python data source replaying, from memory,
   the very Arrow batches the source makes (read once on the driver with the source's
   own task code: the same schema, row counts and tasks). Both go through PySpark's
   Arrow path for Python data sources, so the difference is the Kafka work (fetch,
   decode, the broker). spark.range would be no floor: it never enters Python.
   A third row, ``fetch-only``, runs the source's own task with its CRC check, decode and
   Arrow assembly replaced by slices of the floor's batch (same row counts; it reads the
   batches' headers only): its ratio to the floor is the most a free CRC check, decode and
   assembly could give, what the Fetch path (the task's Fetch loop, the broker) leaves.
   Goal (issue 16): kproto >= 0.8x the floor. The topic is long (``--topic-records``,
   4 M by default) so that a query runs for seconds, not for Spark's per-job overhead of a
   few tenths of a second, which made the ratio swing by tens of percent between runs.
   The broker shares the machine's cores with Spark here, as it would not in a cluster:
   its CPU is shown apart, and the ratio by CPU is given with and without it.
   Where the time goes (issue 16, 2 cores, 4 M records of ~95 bytes, 2.5 MB Fetch answers;
   perf and thread-time splits of the Python workers): the query is CPU bound, so the ratio
   by wall time follows the one by CPU. The floor costs ~0.40 CPU s per M rows (Spark's JVM
   ~0.35, the Python worker's Arrow hand-over ~0.05). The source adds ~0.09 in its tasks and
   ~0.04 in the broker (~0.76x by CPU, ~0.82x without the broker). ``fetch-only`` reaches
   ~0.83x: the Fetch path alone (the task's Fetch loop ~0.04, the broker ~0.04) takes most
   of the ~0.10 that 0.8x allows. In the tasks: the codec's CRC and decode into columns
   ~0.035 (0.02 with hot caches: an answer and its columns overflow the 2 MiB L2), Arrow
   assembly ~0.007, the Fetch loop ~0.03-0.04 (~0.7 ms per answer: the socket's copy,
   asyncio and the client's Python), and the hand-over of fresh columns ~0.015 more than
   the floor's slices of one cache-hot batch. pyspark's daemon runs gc.collect() after each
   task in both. Larger answers (4 MiB) did not lower the tasks' CPU and raised the broker's.
   Later (``perf record -a`` over 4 runs of each row): the broker's ~0.05 is nearly all the
   kernel's loopback TCP (with ``--data-dir`` and sendfile it costs the same); in the tasks
   the decode's record walk ~0.023 (with a prefetch; ~0.025 before), the CRC-32C ~0.01, the
   socket's copy into the frame ~0.014, Python ~0.015, the copies of keys and values ~0.007.
   4 MiB answers cut into batches of the 2 MiB answers' sizes were no faster either.
   Tried and dropped (issue 16, tenth session): a task writing each Fetch and reading its
   answer on its own thread with ``poll``, without turns of the event loop. It halved the
   task's Python calls per Fetch (~600 -> ~300), but A/B runs against the code before
   showed no change in the workers' CPU (perf: libpython 1870 -> 1771 samples per 16 M
   rows) nor in the ratio, whose spread between runs (0.73-0.79x for one build) is
   larger than the gain. py-spy had overstated it: it charges the syscalls (the socket's
   copy, the wake-up a Fetch request costs the broker) to the Python frames that make them.
   4 MiB answers then gave 0.81-0.83x, but only because the floor, which replays the
   source's batches, slows with 44k-row ones; kproto's own rate did not rise.
   Twelfth session: a task whose leader's connection is open writes each Fetch and reads
   its answer on its own thread with its event loop idle (``Connection.send_now`` and
   ``wait_now``: ~8 syscalls per answer instead of ~20, no run of the loop). Fourteen
   alternating runs of each against the code before: the workers' CPU 0.130 -> 0.119 s
   per M rows, kproto 3.67 -> 3.82 M rows/s, the ratio's mean 0.774 -> 0.793x (by CPU
   0.79 -> 0.81x). Timed inside the workers, a task's generator costs 57-80 ms per M rows
   (the machine's speed moves by a fifth between runs) and pyspark's hand-over of its
   batches 30-35 ms, as much as the floor's: the hand-over's and the JVM's shares are the
   same in both rows. Tried and dropped then: minibroker writing a Fetch answer with one
   ``writev`` (it made 3.3 sends: no change in the task's CPU), 4 MiB answers decoded and
   handed over in 2 MiB parts (the broker's CPU -0.006 s per M rows, the task's +0.002 to
   +0.004), 1 and 3 MiB answers (both costlier than 2 MiB), the record walk taking the
   next record's start from its length alone (no change).
   Thirteenth session: inside Spark a task's decode with its CRC check cost 32-36 ms per M
   rows against ~24 in a task run alone, and no less when timed again at once on the same
   (now hot) answer: the cost was in its stores, whose lines were out of the caches (the
   JVM ran between two answers); a decode after a 64 MB copy costs alone what it costs in
   Spark. The column writes now ask for their lines a kilobyte ahead: 35-36 -> 29 ms per M
   rows in the workers. Fourteen alternating runs of each against the code before
   (7c1d96f): kproto 3.51 -> 3.58 M rows/s, the workers' CPU 0.123 -> 0.115 s per M rows,
   the ratio's mean 0.794 -> 0.812x (median 0.79 -> 0.82x; by CPU 0.808 -> 0.825x); single
   runs still spread 0.77-0.84x. Also seen: the JVM's C2 compiler still works in the
   measured rounds and bills whichever row runs first after the warm-up (the rounds
   alternate the rows, so it falls on each alike), and pyspark's ``gc.collect()`` after
   each task costs 30-35 ms of CPU in both rows' workers (~105k objects).
3. Sink: rows/s of ``df.write.format("kproto")`` of a cached DataFrame of (key, value)
   rows like the source's, with Kafka's default producer batches and with bigger ones;
   the floor is the ``spark-only`` Arrow writer, which takes the same Arrow batches and
   drops them. (Spark's own Kafka sink is a jar that PyPI's pyspark does not ship.)

Each figure is the median of ``--runs`` rounds after one warm-up round; a round runs
every compared query once, in turn, so that load from elsewhere on the machine falls
on all of them alike. Beside each rate: the CPU seconds that the benchmark's process
tree (driver, Spark's JVM and Python workers, the broker) spent per million rows, and of
those the broker's and PySpark's Python workers' (where the source's tasks run: a steadier
measure of kproto's own work than the ratio, which moves by +-0.03 between runs).
Arrow batches hold ``--arrow-batch-rows`` rows
(``spark.sql.execution.arrow.maxRecordsPerBatch``) for every UDF alike: Spark's default
of 10,000 rows makes batches of a million records here, which slows all three.

Usage: ``python bench/spark.py [--records 2000000] [--per-row 100] [--compression none]
[--topic-records 4000000] [--source-option NAME=VALUE ...] [--sink-records 200000] [--runs 5] [--arrow-batch-rows 1000]
[--only decode|source|sink ...]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kproto.spark.schema import ARROW_RECORD_FIELDS, RECORDS_TYPE  # noqa: E402
from tests.support.process import minibroker_process  # noqa: E402  (python -m minibroker, as the tests run it)

RECORDS_ARROW = pa.list_(pa.struct([pa.field(k, v) for k, v in ARROW_RECORD_FIELDS.items()]))


# -- the data: one producer batch per row, built on the executors ---------------------------

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def raw_batches(per_row: int, codec: str) -> Callable:
    """A mapInArrow function turning ids into rows of one v2 batch of ``per_row`` records each."""

    def generate(batches):
        from kproto.records import BatchBuilder

        for batch in batches:
            raws = []
            for row in batch.column("id").to_pylist():
                builder = BatchBuilder(2, CODECS[codec], base_offset=row * per_row)
                for i in range(per_row):
                    n = row * per_row + i
                    builder.append(1_700_000_000_000 + n, b"user-%d" % (n % 1000),
                                   b'{"event":"click","page":"/p/%d","n":%d,"pad":"%s"}' % (n % 97, n, b"x" * 30),
                                   [("source", b"web")])
                raws.append(builder.build())
            yield pa.RecordBatch.from_arrays([pa.array(raws, pa.binary())], ["raw"])

    return generate


# -- the peers' UDFs: same shape, their record readers ---------------------------------------

def peer_decoder(memory_records: type) -> Callable[[pa.Array], pa.Array]:
    """A scalar Arrow UDF body decoding each row with a peer's ``MemoryRecords``."""

    def decode(raw: pa.Array) -> pa.Array:
        out = []
        for value in raw.to_pylist():
            records = []
            batches = memory_records(value)
            while (batch := batches.next_batch()) is not None:
                for r in batch:
                    records.append((r.offset, r.timestamp * 1000, r.timestamp_type, r.key, r.value,
                                    [(k, v) for k, v in r.headers]))
            out.append(records)
        return pa.array(out, RECORDS_ARROW)

    return decode


def spark_only_udf() -> object:
    """A UDF of the decoders' shape whose body costs (almost) nothing: it slices an answer
    decoded once per Python worker, from the first rows it is given.

    The answer is made in the worker rather than on the driver: captured in the closure,
    its megabytes would travel with every task's pickled command, which is not Spark's cost
    for a decoder and made this "floor" slower than kproto's decoder.
    """
    from pyspark.sql.functions import arrow_udf

    from kproto.spark.arrow import decode_record_sets

    answers: list[pa.Array] = []

    def spark_only(raw: pa.Array) -> pa.Array:  # hints: a scalar Arrow UDF
        if not answers or len(answers[0]) < len(raw):
            answers[:] = [decode_record_sets(raw)[0]]
        return answers[0].slice(0, len(raw))

    return arrow_udf(spark_only, RECORDS_TYPE)


def udfs() -> dict[str, object]:
    import aiokafka.record.memory_records
    import kafka.record.memory_records
    from pyspark.sql.functions import arrow_udf

    from kproto.spark import decode_udf

    def peer(memory_records: type):
        body = peer_decoder(memory_records)

        def peer_decode(raw: pa.Array) -> pa.Array:  # hints: a scalar Arrow UDF
            return body(raw)

        return arrow_udf(peer_decode, RECORDS_TYPE)

    return {
        "kproto": decode_udf(),
        "kafka-python": peer(kafka.record.memory_records.MemoryRecords),
        "aiokafka": peer(aiokafka.record.memory_records.MemoryRecords),
        "spark-only": spark_only_udf(),
    }


def run_noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def tree_cpu() -> float:
    """CPU seconds used so far by this process and every process under it (Spark's JVM, its
    Python workers, the broker), from /proc; reaped children count through their parent."""
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        parents[int(entry)] = int(fields[1])
        used[int(entry)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    mine = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in mine} - mine
        grew = bool(found)
        mine |= found
    return sum(used[pid] for pid in mine if pid in used)


def process_cpu(pid: int) -> float:
    """CPU seconds used so far by the process ``pid`` alone (its utime and stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:13]) / os.sysconf("SC_CLK_TCK")


def workers_cpu() -> float:
    """CPU seconds used so far by PySpark's Python workers (``python -m pyspark.daemon``
    and the workers it forks), alone: where the source's tasks run. Steadier than the ratio
    for what kproto's own work costs (issue 16: the ratio moved by +-0.03 between runs of
    one build, the workers' CPU by a few percent)."""
    used = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"pyspark.daemon" not in f.read():
                    continue
            used += process_cpu(int(entry))
        except OSError:
            continue  # ended while we looked
    return used


class Rate(NamedTuple):
    """One query's medians: rows per wall-clock second, CPU seconds per row (every process
    of the benchmark), and of those the broker's and the Python workers'."""

    per_second: float
    cpu: float
    broker_cpu: float = 0.0
    workers_cpu: float = 0.0

    def ratio(self, other: Rate) -> str:
        """How many times faster than ``other``: by wall time, by CPU time, and by CPU time
        without the broker's (when a broker was measured apart)."""
        text = f"{self.per_second / other.per_second:.2f}x (CPU: {other.cpu / self.cpu:.3f}x"
        if self.broker_cpu or other.broker_cpu:
            text += f"; CPU without the broker's: {(other.cpu - other.broker_cpu) / (self.cpu - self.broker_cpu):.3f}x"
        return text + ")"


def timed(actions: dict[str, Callable[[], object]], runs: int, count: int, label: str,
          broker: int | None = None) -> dict[str, Rate]:
    """Rows/s of each action (``count`` rows per run): medians of ``runs`` rounds that run every
    action once, in turn, after one warm-up round, so that load from outside the benchmark
    falls on all of them alike; prints each, with the CPU time that the benchmark's processes
    spent per million rows (less sensitive than wall time to other work on the machine) and,
    given the ``broker``'s pid, how much of it the broker spent."""
    for action in actions.values():
        action()  # warm-up: Python workers, JIT, caches
    seconds: dict[str, list[float]] = {name: [] for name in actions}
    cpu: dict[str, list[float]] = {name: [] for name in actions}
    broker_cpu: dict[str, list[float]] = {name: [] for name in actions}
    workers_used: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(runs):
        for name, action in actions.items():
            start, start_cpu, start_workers = time.perf_counter(), tree_cpu(), workers_cpu()
            start_broker = 0.0 if broker is None else process_cpu(broker)
            action()
            seconds[name].append(time.perf_counter() - start)
            cpu[name].append(tree_cpu() - start_cpu)
            workers_used[name].append(workers_cpu() - start_workers)
            broker_cpu[name].append(0.0 if broker is None else process_cpu(broker) - start_broker)
    rates = {}
    for name, times in seconds.items():
        rates[name] = rate = Rate(count / statistics.median(times), statistics.median(cpu[name]) / count,
                                  statistics.median(broker_cpu[name]) / count, statistics.median(workers_used[name]) / count)
        # Three decimals: a change of kproto's own work moves the workers' CPU by a hundredth
        # (issue 16), as much as two decimals can show, while the ratio moves by +-0.03.
        broker_part = f"{rate.broker_cpu * 1e6:5.3f} the broker's, " if broker is not None else ""
        apart = f" ({broker_part}{rate.workers_cpu * 1e6:5.3f} the Python workers')"
        print(f"  {label:7} {name:13} {rate.per_second / 1e6:6.2f} M records/s, "
              f"{rate.cpu * 1e6:5.3f} CPU s per M{apart}  (runs {', '.join(f'{s:.2f}' for s in times)} s)",
              flush=True)
    return rates


def bench_decode(spark, records: int, per_row: int, codec: str, runs: int) -> dict[str, Rate]:
    rows = records // per_row
    df = spark.range(rows, numPartitions=4).mapInArrow(raw_batches(per_row, codec), "raw binary").cache()
    assert df.count() == rows
    actions = {}
    for name, udf in udfs().items():
        query = df.select(udf("raw").alias("records"))
        check = query.selectExpr("sum(size(records))").first()[0]
        assert check == rows * per_row, (name, check)
        actions[name] = lambda q=query: run_noop(q)
    rates = timed(actions, runs, rows * per_row, "decode")
    df.unpersist()
    return rates


def produce_topic(bootstrap: str, topic: str, n: int) -> None:
    from kproto import Producer

    with Producer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=512 * 1024) as producer:
        for i in range(n):
            producer.send(topic, b'{"event":"click","n":%d,"pad":"%s"}' % (i, b"x" * 40), key=b"user-%d" % (i % 1000))
        producer.flush()


# -- the Spark-only floors: Python data sources of the same shape that do no Kafka work -------

class FloorPartition(InputPartition):
    """What one floor task yields: ``template`` (Arrow IPC bytes of one batch) cut to ``sizes``."""

    def __init__(self, template: bytes, sizes: list[int]) -> None:
        self.template = template
        self.sizes = sizes


class FloorReader(DataSourceReader):
    def __init__(self, partitions: list[FloorPartition]) -> None:
        self.planned = partitions

    def partitions(self) -> list[FloorPartition]:
        return self.planned

    def read(self, partition: FloorPartition):
        template = pa.ipc.open_stream(partition.template).read_next_batch()
        for size in partition.sizes:
            yield template.slice(0, size)


class FloorWriter(DataSourceArrowWriter):
    def write(self, iterator) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


def floor_source(partitions: list[FloorPartition]) -> type:
    """The ``spark-only`` format: the source's own Arrow batches (the same schema, row counts
    and bytes, one task per Kafka partition, as format("kproto") made them on the driver),
    replayed from memory through the same Python data source Arrow path; and a sink that
    takes the Arrow batches Spark hands it and does nothing with them."""

    class SparkOnly(DataSource):
        @classmethod
        def name(cls) -> str:
            return "spark-only"

        def schema(self) -> StructType:
            from kproto.spark import kafka_schema

            return kafka_schema()

        def reader(self, schema: StructType) -> DataSourceReader:
            return FloorReader(partitions)

        def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
            return FloorWriter()

    return SparkOnly


def fetch_only_source(options: dict[str, str], template: bytes) -> type:
    """The ``fetch-only`` format: format("kproto")'s own task (planning, Fetch loop, fetch
    ahead, clients kept between tasks, the broker) with the decode and Arrow assembly
    replaced by slices of the floor's template of the same row counts. Its ratio to the
    floor is the most the source could reach with a decode that cost nothing: what the
    Fetch path and the broker leave."""
    from kproto.codec import read_batch_header
    from kproto.spark.fetch import _RangeReader
    from kproto.spark.planning import SourceOptions
    from kproto.spark.schema import kafka_schema
    from kproto.spark.source import KafkaBatchReader

    parsed = SourceOptions.parse(options, streaming=False)

    class NoDecode(_RangeReader):
        batch: pa.RecordBatch

        def take(self, data) -> pa.RecordBatch | None:
            """Advance as take does, reading the batch headers only (no CRC, no decode)."""
            records = data.records
            if records is None or len(records) == 0:
                return None
            view, pos, rows, after = memoryview(records), 0, 0, self.position
            while (header := read_batch_header(view, pos)) is not None and pos + header.size <= len(view):
                end = header.base_offset + header.last_offset_delta + 1
                if not header.is_control:
                    rows += max(0, min(end, self.task.end) - max(header.base_offset, self.position))
                after, pos = max(after, end), pos + header.size
            self.position = after
            return self.batch.slice(0, rows) if rows else None

    class FetchOnlyReader(DataSourceReader):
        def partitions(self) -> list:
            return KafkaBatchReader(parsed).partitions()

        def read(self, partition):
            # Imported here, in the worker: the clients it keeps between tasks, as the source's.
            from kproto.spark.fetch import WORKER_CLIENTS

            NoDecode.batch = pa.ipc.open_stream(template).read_next_batch()
            yield from WORKER_CLIENTS._read_with(NoDecode, parsed, partition)

    class FetchOnly(DataSource):
        @classmethod
        def name(cls) -> str:
            return "fetch-only"

        def schema(self) -> StructType:
            return kafka_schema()

        def reader(self, schema: StructType) -> DataSourceReader:
            return FetchOnlyReader()

    return FetchOnly


def source_batches(options: dict[str, str]) -> list[FloorPartition]:
    """Read ``topic`` on the driver with the source's own task code (planning, then
    :func:`~kproto.spark.fetch.read_range` per range): each range's largest batch as the
    floor's template and every batch's row count."""
    from kproto.spark.fetch import read_range
    from kproto.spark.planning import SourceOptions
    from kproto.spark.source import KafkaBatchReader

    options = SourceOptions.parse(options, streaming=False)
    out = []
    for task in KafkaBatchReader(options).partitions():
        biggest, sizes = None, []
        for batch in read_range(options, task):  # one batch at a time: the topic may not fit in memory
            sizes.append(batch.num_rows)
            if biggest is None or batch.num_rows > biggest.num_rows:
                biggest = batch
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, biggest.schema) as stream:
            stream.write_batch(biggest)
        out.append(FloorPartition(sink.getvalue().to_pybytes(), sizes))
    return out


def bench_source(spark, bootstrap: str, topic: str, n: int, runs: int, broker: int,
                 extra: dict[str, str]) -> dict[str, Rate]:
    """format("kproto") with the options ``extra`` and its Spark-only floor, both into the noop
    sink (``broker``: the broker's pid, whose CPU time is shown apart)."""
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **extra}
    floor = source_batches(options)
    spark.dataSource.register(floor_source(floor))
    biggest = max(floor, key=lambda p: max(p.sizes))  # its template has rows for every batch
    spark.dataSource.register(fetch_only_source(options, biggest.template))
    print(f"  the source's batches: {sum(len(p.sizes) for p in floor)} over {len(floor)} tasks, "
          f"{max(biggest.sizes)} rows at most", flush=True)
    frames = {
        "kproto": spark.read.format("kproto").options(**options).load(),
        "fetch-only": spark.read.format("fetch-only").load(),
        "spark-only": spark.read.format("spark-only").load(),
    }
    for name, df in frames.items():
        assert df.count() == n, name
    return timed({name: lambda d=df: run_noop(d) for name, df in frames.items()}, runs, n, "source", broker)


BIG_BATCHES = {"batch.size": str(512 * 1024), "linger.ms": "20"}
"""The sink's producer settings of the ``kproto-big`` row (Kafka's defaults are 16 KiB and 5 ms)."""


def bench_sink(spark, bootstrap: str, n: int, runs: int) -> dict[str, Rate]:
    """df.write.format("kproto") of ``n`` (key, value) rows like the source's, and the
    floor: the same DataFrame into the spark-only Arrow writer (Spark's share: the scan of
    the cached rows, their Arrow batches to the Python worker)."""
    from kproto import AdminClient
    from kproto.admin import NewTopic

    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("spark-bench-sink", 2, 1)])
    df = spark.range(n, numPartitions=2).selectExpr(
        "cast(concat('user-', id % 1000) as binary) as key",
        "cast(concat('{\"event\":\"click\",\"n\":', id, ',\"pad\":\"', repeat('x', 40), '\"}') as binary) "
        "as value").cache()
    assert df.count() == n
    def kproto(**kafka: str) -> Callable[[], None]:
        writer = (df.write.format("kproto").option("kafka.bootstrap.servers", bootstrap)
                  .option("topic", "spark-bench-sink").mode("append"))
        return writer.options(**{f"kafka.{k}": v for k, v in kafka.items()}).save

    writes = {
        "kproto": kproto(),
        "kproto-big": kproto(**BIG_BATCHES),
        "spark-only": lambda: df.write.format("spark-only").mode("append").save(),
    }
    rates = timed(writes, runs, n, "sink")
    df.unpersist()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000, help="records to decode (default 2 M)")
    parser.add_argument("--per-row", type=int, default=100, help="records per raw batch, one batch per row")
    parser.add_argument("--topic-records", type=int, default=4_000_000,
                        help="records in the source's topic (default 4 M: seconds per query, so that Spark's "
                             "per-job overhead does not dominate)")
    parser.add_argument("--compression", choices=CODECS, default="none", help="codec of the raw batches")
    parser.add_argument("--runs", type=int, default=5, help="measured rounds (medians), after one warm-up round")
    parser.add_argument("--arrow-batch-rows", type=int, default=1000,
                        help="spark.sql.execution.arrow.maxRecordsPerBatch, for all three UDFs alike (Spark's "
                             "default, 10000 rows of 100 records, makes million-record Arrow batches)")
    parser.add_argument("--source-option", action="append", default=[], metavar="NAME=VALUE",
                        help="an option of the source's reads, e.g. kafka.max.partition.fetch.bytes=4194304 "
                             "(repeatable; the floor replays the batches the source makes with it)")
    parser.add_argument("--sink-records", type=int, default=200_000, help="rows written by the sink")
    parser.add_argument("--only", choices=("decode", "source", "sink"), action="append",
                        help="run only these parts (repeatable; default all)")
    args = parser.parse_args()
    parts = set(args.only or ("decode", "source", "sink"))

    from pyspark.sql import SparkSession

    from kproto import codec_backend
    from kproto.spark import register

    spark = (SparkSession.builder.master("local[2]").appName("kproto-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.arrow_batch_rows)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        print(f"pyspark {spark.version}, local[2], kproto codec: {codec_backend()}")
        if "decode" in parts:
            report_decode(spark, args)
        if parts & {"source", "sink"}:
            with minibroker_process("--port", "0") as (broker, bootstrap):
                if "source" in parts:
                    print(f"source: spark.read.format('kproto'), {args.topic_records} records on minibroker "
                          f"(own process), two partitions, options {args.source_option or 'default'}", flush=True)
                    from kproto import AdminClient
                    from kproto.admin import NewTopic

                    with AdminClient(bootstrap_servers=bootstrap) as admin:
                        admin.create_topics([NewTopic("spark-bench", 2, 1)])
                    start = time.perf_counter()
                    produce_topic(bootstrap, "spark-bench", args.topic_records)
                    print(f"  produced {args.topic_records} records in {time.perf_counter() - start:.1f} s")
                    extra = dict(option.split("=", 1) for option in args.source_option)
                    rates = bench_source(spark, bootstrap, "spark-bench", args.topic_records, args.runs, broker.pid,
                                         extra)
                    ratio = rates["kproto"].per_second / rates["spark-only"].per_second
                    print(f"  kproto / spark-only floor: {rates['kproto'].ratio(rates['spark-only'])}; "
                          f"goal >= 0.8x: {'ok' if ratio >= 0.8 else 'MISSED'}")
                    print(f"  fetch-only / spark-only floor: {rates['fetch-only'].ratio(rates['spark-only'])} "
                          "(the most a free CRC check, decode and Arrow assembly would give: Spark, the Fetch loop and the broker)")
                if "sink" in parts:
                    print(f"sink: df.write.format('kproto'), {args.sink_records} (key, value) rows to minibroker "
                          f"(own process), two partitions", flush=True)
                    rates = bench_sink(spark, bootstrap, args.sink_records, args.runs)
                    for name in ("kproto", "kproto-big"):
                        print(f"  {name} / spark-only floor: {rates[name].ratio(rates['spark-only'])}")
                    print("  (Spark's Kafka sink is a jar PyPI's pyspark does not ship: no peer to run)")
    finally:
        spark.stop()


def report_decode(spark, args: argparse.Namespace) -> None:
    print(f"decode: {args.records} records, {args.per_row} per raw batch (one batch per row, "
          f"compression {args.compression}), "
          f"{args.arrow_batch_rows} rows per Arrow batch, median of {args.runs}")
    rates = bench_decode(spark, args.records, args.per_row, args.compression, args.runs)
    best_peer = max(rates["kafka-python"], rates["aiokafka"], key=lambda r: r.per_second)
    for name in ("kafka-python", "aiokafka"):
        print(f"  kproto / {name}: {rates['kproto'].ratio(rates[name])}")
    ratio = rates["kproto"].per_second / best_peer.per_second
    print(f"  goal >= 5x the best peer: {ratio:.1f}x {'ok' if ratio >= 5 else 'MISSED'}")
    floor, kproto = rates["spark-only"], rates["kproto"]
    print(f"  Spark's own share of kproto's time: {kproto.per_second / floor.per_second:.0%} "
          f"(CPU: {floor.cpu / kproto.cpu:.0%}); the best ratio any decoder could reach against the best "
          f"peer (its time / spark-only's): {floor.ratio(best_peer)}")

if __name__ == "__main__":
    main()
