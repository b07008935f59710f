"""The main job: a website's activity stream through Kafka into a Spark Structured Streaming job.

``python -m kproto.pipeline`` (the same as ``kproto pipeline``) runs it end to end:

1. **A Kafka cluster.** With no ``--bootstrap-servers``, minibroker in a child process
   (``python -m minibroker --port 0``, logs in memory), stopped when the pipeline ends:
   kproto never imports minibroker (DESIGN, principle 1), as ``kproto broker`` does not.
2. **Topics** :data:`EVENTS_TOPIC` and :data:`RESULTS_TOPIC` (created if missing).
3. **The stream.** ``--events`` page views and clicks (:func:`generate_events`: user ids
   as keys, JSON values, ``source`` and ``app-version`` headers, five minutes of event
   time ending now, mobile events arriving late), produced by kproto's Producer.
4. **The Spark job** (:func:`run_pipeline`): ``readStream.format("kproto")`` from the
   offsets the topic had before step 3, ``maxOffsetsPerTrigger`` for several
   micro-batches and ``Trigger.AvailableNow`` to stop once the stream is read; the
   events are counted per minute, page and user under a watermark, and each
   micro-batch's closed windows go to Parquet (``minutes/``: events and clicks per
   minute, page and user) and, one JSON record per page and minute, back to Kafka
   through ``write.format("kproto")``.
5. **The summary** (:func:`format_report`), read back from the Parquet: top pages per
   minute, top users, counts and rates.

Theory of operation: why every count is final and exact. Spark appends a window's rows
only once the watermark (the largest event time seen, less :data:`WATERMARK_DELAY_MS`)
has passed the window's end, and drops rows older than the watermark. Events arrive at
most :data:`MAX_LATENESS_MS` after their event time, less than the delay, and
``maxOffsetsPerTrigger`` is shared among partitions in proportion to their backlog, so
every micro-batch reads about the same stretch of time from each partition: no event is
behind the watermark when it is read (the report counts the rows Spark dropped, 0). A
stream that ends never moves the watermark past its last windows, so the producer ends
it with a heartbeat (:func:`heartbeat`) whose event time is the last window's end plus
the delay: Spark's last, data-less micro-batch closes every window of the stream, while
the heartbeat's own window stays open and is never written. Per (minute, page, user)
counts are Spark's only state; pages and users are sums of those closed rows, so even
distinct users per page are exact (a streaming ``countDistinct`` could only be
approximate).

With ``--master`` on a cluster, the executors need kproto installed and must reach the
brokers (the embedded one listens on 127.0.0.1 only), and ``--output`` must be a path
every executor can write (HDFS, S3, NFS). A broker that dies mid-stream changes no
count when the topics are replicated (``--replication-factor 3``): the producers send
with acks=all and idempotence, and the source's planning and fetches retry on the new
leader (the Spark guide, "Through a broker failure").
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kproto.admin import AdminClient, NewTopic
from kproto.config import ADMIN, CONSUMER, PRODUCER, ClientConfig, settings_of_kind
from kproto.errors import ConfigError
from kproto.producer import Producer
from kproto.structs import TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.streaming.listener import StreamingQueryProgress

__all__ = [
    "EVENTS_TOPIC",
    "RESULTS_TOPIC",
    "Event",
    "PageMinute",
    "Report",
    "UserTotal",
    "check_client_config",
    "embedded_broker",
    "format_report",
    "generate_events",
    "heartbeat",
    "run_pipeline",
    "spark_session",
]

EVENTS_TOPIC = "kproto-pipeline-activity"
RESULTS_TOPIC = "kproto-pipeline-page-minutes"
PARTITIONS = 3
WINDOW_MS = 60_000
WATERMARK_DELAY_MS = 30_000
SPAN_MS = 5 * WINDOW_MS  # the stream's arrival times cover five minutes
MAX_LATENESS_MS = 20_000  # below WATERMARK_DELAY_MS with room for partitions read unevenly
MICRO_BATCHES = 3  # the default maxOffsetsPerTrigger reads the stream in this many, and one more closes it
TOP = 3  # pages shown per minute
TOP_USERS = 5
DEFAULT_EVENTS = 30_000  # about 20 s on two cores, most of it Spark's fixed cost per micro-batch
_PROGRESS_STEP = 1_000  # events sent between updates of the progress bar

# Traffic that looks like a small product site: a few busy pages, a long tail of users
# (weights 1/rank), more clicks on pages that sell, mobile apps that buffer events.
PAGES = {"/": 20, "/pricing": 9, "/docs": 12, "/docs/quickstart": 10, "/docs/consumer": 6, "/docs/producer": 6,
         "/blog": 7, "/blog/kafka-from-python": 5, "/signup": 4, "/login": 8, "/search": 5}
CLICK_RATE = {"/pricing": 0.45, "/signup": 0.6, "/login": 0.5, "/search": 0.4}  # others: 0.15
USERS = 400
SOURCES = {"web": (0.6, ("web-5.12.0",), 300), "ios": (0.25, ("4.12.0", "4.13.1"), 2_000),
           "android": (0.15, ("4.12.3", "4.13.0"), 2_500)}  # share, app versions, mean lateness in ms


@dataclass(frozen=True, slots=True)
class Event:
    """One page view or click: ``event_ms`` on the user's device, ``arrival_ms`` at the collector."""

    user: str
    page: str
    kind: str  # "view" or "click"
    event_ms: int
    arrival_ms: int
    source: str
    app_version: str

    def key(self) -> bytes:
        return self.user.encode()

    def value(self) -> bytes:
        return json.dumps({"user": self.user, "event": self.kind, "page": self.page, "ts": self.event_ms}).encode()

    def headers(self) -> list[tuple[str, bytes]]:
        return [("source", self.source.encode()), ("app-version", self.app_version.encode())]


def generate_events(n: int, seed: int, start_ms: int) -> list[Event]:
    """``n`` events arriving evenly over :data:`SPAN_MS` from ``start_ms``, the same for the same arguments.

    An event's time is its arrival less an exponential delay (longer from the mobile
    apps), capped at :data:`MAX_LATENESS_MS`.
    """
    rng = random.Random(seed)
    users = [f"user-{i:04d}" for i in range(USERS)]
    user_weights = list(itertools.accumulate(1 / rank for rank in range(1, USERS + 1)))
    pages, page_weights = list(PAGES), list(itertools.accumulate(PAGES.values()))
    sources = list(SOURCES)
    source_weights = list(itertools.accumulate(share for share, _, _ in SOURCES.values()))
    events = []
    for i in range(n):
        arrival = start_ms + i * SPAN_MS // n
        source = rng.choices(sources, cum_weights=source_weights)[0]
        _, versions, mean_lateness = SOURCES[source]
        page = rng.choices(pages, cum_weights=page_weights)[0]
        lateness = min(int(rng.expovariate(1 / mean_lateness)), MAX_LATENESS_MS)
        events.append(Event(
            user=rng.choices(users, cum_weights=user_weights)[0], page=page,
            kind="click" if rng.random() < CLICK_RATE.get(page, 0.15) else "view",
            event_ms=arrival - lateness, arrival_ms=arrival, source=source, app_version=rng.choice(versions)))
    return events


def heartbeat(events: Sequence[Event]) -> bytes:
    """The record that closes the stream's windows (see the module docstring); no key, no user, no page."""
    last_window_end = (max(e.event_ms for e in events) // WINDOW_MS + 1) * WINDOW_MS
    return json.dumps({"event": "heartbeat", "ts": last_window_end + WATERMARK_DELAY_MS}).encode()


@contextmanager
def embedded_broker() -> Iterator[str]:
    """minibroker in a child process on a free port of 127.0.0.1; yields its bootstrap servers.

    The child has a session of its own, so that Ctrl-C reaches only the pipeline, which
    stops the Spark job before the broker. It is stopped with SIGTERM (minibroker's clean
    stop) when the block ends, whatever ends it; and should this process die without
    unwinding (SIGKILL), the pipe on the child's stdin closes and the child stops too.

    Raises:
        OSError: the broker exited instead of starting.
    """
    with tempfile.TemporaryFile("w+") as log:
        broker = subprocess.Popen([sys.executable, "-m", "minibroker", "--port", "0", "--stop-on-stdin-eof"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                                  start_new_session=True)
        try:
            # minibroker prints exactly one line once it accepts connections.
            line = broker.stdout.readline()
            if not line.startswith("minibroker listening on "):
                broker.wait(10)
                log.seek(0)
                raise OSError(f"minibroker did not start (exit code {broker.returncode}): {log.read()[-2000:]}")
            yield line.split()[-1]
        finally:
            broker.terminate()
            try:
                broker.wait(10)
            except subprocess.TimeoutExpired:
                broker.kill()
                broker.wait()
            broker.stdout.close()
            broker.stdin.close()


# Spark's driver logs errors only, so that its start-up warnings do not bury the summary.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
# PySpark's gateway sets the console to its logger's level (WARN unless configured) and says so.
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


@contextmanager
def spark_session(master: str) -> Iterator[SparkSession]:
    """A SparkSession for the pipeline on ``master``, stopped when the block ends.

    Shuffles get one partition per core (Spark's 200 would make every micro-batch
    manage 200 state stores), times print in UTC, the driver logs errors only and draws
    no stage progress bars, and on a local master the Python workers run this
    interpreter, the one that has kproto. The driver's JVM compiles with C1 only: a
    job this short ends before C2's optimizations pay for their compile time (C1 alone
    took a third off the wall time on two cores).
    """
    from pyspark.sql import SparkSession

    with tempfile.TemporaryDirectory(prefix="kproto-pipeline-") as config:
        log4j2 = os.path.join(config, "log4j2.properties")
        with open(log4j2, "w") as f:
            f.write(_LOG4J2)
        builder = (SparkSession.builder.master(master).appName("kproto-pipeline")
                   .config("spark.driver.extraJavaOptions",
                           f"-Dlog4j2.configurationFile=file:{log4j2} -XX:TieredStopAtLevel=1")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.session.timeZone", "UTC"))
        if master.startswith("local"):
            # Spark starts its Python workers (data sources' among them) as $PYSPARK_PYTHON,
            # else as "python3" from PATH, which may be another Python than this one.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            # A local job has no executors elsewhere: its driver listens on loopback only.
            builder = (builder.config("spark.driver.bindAddress", "127.0.0.1")
                       .config("spark.driver.host", "127.0.0.1"))
        spark = builder.getOrCreate()  # the JVM has read the log settings once this returns
    try:
        spark.conf.set("spark.sql.shuffle.partitions", str(spark.sparkContext.defaultParallelism))
        yield spark
    finally:
        spark.stop()


@dataclass(frozen=True, slots=True)
class PageMinute:
    """A page's events in one minute (window); ``users`` are distinct users."""

    window_start: int  # ms since the epoch
    page: str
    events: int
    views: int
    clicks: int
    users: int


@dataclass(frozen=True, slots=True)
class UserTotal:
    """A user's events over the whole stream."""

    user: str
    events: int
    clicks: int
    minutes: int  # windows with at least one event


@dataclass(frozen=True, slots=True)
class Report:
    """What a run did, for :func:`format_report` and for checking."""

    bootstrap_servers: str
    master: str
    start_ms: int  # the first event's arrival time: generate_events(events, seed, start_ms) repeats the stream
    events: int
    produce_seconds: float
    micro_batches: int
    input_rows: int  # records Spark read: the events and the heartbeat
    late_rows_dropped: int
    stream_seconds: float
    results_start: dict[int, int]  # the results topic's offsets before the job, by partition
    results_end: dict[int, int]
    minutes_path: str  # the Parquet: events and clicks per minute, page and user
    page_minutes: list[PageMinute]  # read back from the Parquet, as top_users
    top_users: list[UserTotal]

    @property
    def minute_rows(self) -> int:
        """Rows of the Parquet: one per user of each page's minute."""
        return sum(r.users for r in self.page_minutes)

    @property
    def results(self) -> int:
        """Records the job wrote to :data:`RESULTS_TOPIC`."""
        return sum(self.results_end.values()) - sum(self.results_start.values())


def _end_offsets(admin: AdminClient, topic: str) -> dict[int, int]:
    partitions = admin.describe_topics([topic])[topic].partitions
    listed = admin.list_offsets({TopicPartition(topic, p.partition): "latest" for p in partitions})
    return {tp.partition: o.offset for tp, o in listed.items()}


def check_client_config(client_config: Mapping[str, Any]) -> None:
    """Check the settings :func:`run_pipeline` gives its clients, before anything starts.

    The Spark source and sink take theirs as ``kafka.`` options, which are strings (sent to
    the executors): a setting of theirs must be a str, an int, a float or a bool, whose
    text is the value (not a list, a callable token provider or an ``ssl.context``).

    Raises:
        ConfigError: a key that no client of the job takes, a bad value, or a value the
            Spark options cannot carry.
    """
    for client in (ADMIN, PRODUCER, CONSUMER):
        # the bootstrap servers may be known only later (the embedded broker's port)
        ClientConfig(client, {"bootstrap.servers": "unused:9092", **settings_of_kind(client, client_config)})
    for client, role in ((CONSUMER, "source"), (PRODUCER, "sink")):
        for name, value in settings_of_kind(client, client_config).items():
            if not isinstance(value, str | int | float):  # bool is an int; str() of these is the value
                raise ConfigError(_not_a_spark_option(name, value, role))


def _not_a_spark_option(name: str, value: Any, role: str) -> str:
    if isinstance(value, list | tuple | set | frozenset):
        hint = f"give it as one comma-separated string, {','.join(map(str, value))!r}"
    elif callable(value) or hasattr(value, "token"):
        hint = "give the credentials as settings that are text (sasl.jaas.config)"
    elif name == "ssl.context":
        hint = "give the TLS settings as text (ssl.truststore.location, ssl.keystore.location...)"
    else:
        hint = "give its value as a string"
    return (f"{name}={value!r}: the Spark job's kproto {role} takes its settings as Spark options, which are "
            f"strings, and a {type(value).__name__} cannot be one: {hint}")


def _spark_options(client: str, config: Mapping[str, Any]) -> dict[str, str]:
    """``config`` as ``kafka.``-prefixed options of the kproto source (consumer) or sink (producer)."""
    return {f"kafka.{name}": str(value) for name, value in settings_of_kind(client, config).items()}


def _produce(config: Mapping[str, Any], events: Sequence[Event], progress: Callable[[int, str, str], Any] | None) -> float:
    """Send ``events`` and the heartbeat; return the seconds it took, every record acknowledged.

    Raises:
        KafkaError: a record was not delivered.
    """
    started = time.perf_counter()
    bar = progress(len(events), "events", "producing") if progress is not None else None
    settings = {"linger.ms": 5, "compression.type": "lz4", **settings_of_kind(PRODUCER, config)}
    with Producer(settings) as producer:
        sent = []
        for first in range(0, len(events), _PROGRESS_STEP):
            chunk = events[first:first + _PROGRESS_STEP]
            sent += [producer.send(EVENTS_TOPIC, e.value(), e.key(), timestamp_ms=e.arrival_ms, headers=e.headers())
                     for e in chunk]
            if bar is not None:
                bar.update(len(chunk))
        sent.append(producer.send(EVENTS_TOPIC, heartbeat(events), headers=[("source", b"kproto-pipeline")]))
        producer.flush()
        for future in sent:
            future.result()
    if bar is not None:
        bar.close()
    return time.perf_counter() - started


def _create_topics(admin: AdminClient, replication_factor: int) -> None:
    """Create the pipeline's topics that are missing; existing ones are used as they are."""
    existing = set(admin.list_topics())
    missing = [NewTopic(name, PARTITIONS, replication_factor) for name in (EVENTS_TOPIC, RESULTS_TOPIC)
               if name not in existing]
    if missing:
        admin.create_topics(missing)


def _closed_rows(spark: SparkSession, config: Mapping[str, Any], start: Mapping[int, int],
                 max_offsets_per_trigger: int) -> DataFrame:
    """The streaming query's result: events per closed (minute, page, user) window, read from ``start``."""
    from pyspark.sql import functions as F

    source = (spark.readStream.format("kproto")
              .options(**_spark_options(CONSUMER, config))
              .option("subscribe", EVENTS_TOPIC)
              .option("startingOffsets", json.dumps({EVENTS_TOPIC: {str(p): o for p, o in start.items()}}))
              .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
              .load())
    event = F.from_json(F.col("value").cast("string"), "event string, page string, ts long")
    events = source.select(F.col("key").cast("string").alias("user"), event.alias("e")).select(
        "user", "e.page", "e.event", F.timestamp_millis("e.ts").alias("event_time"))
    return (events.withWatermark("event_time", f"{WATERMARK_DELAY_MS} milliseconds")
            .groupBy(F.window("event_time", f"{WINDOW_MS} milliseconds"), "page", "user")
            .agg(F.count("*").alias("events"), F.count_if(F.col("event") == "click").alias("clicks")))


def _per_page(minutes: DataFrame) -> DataFrame:
    """Rows of (minute, page, user) summed per (minute, page); a row per user, so ``users`` is exact."""
    from pyspark.sql import functions as F

    return minutes.groupBy("window_start", "window_end", "page").agg(
        F.sum("events").alias("events"), (F.sum("events") - F.sum("clicks")).alias("views"),
        F.sum("clicks").alias("clicks"), F.count("*").alias("users"))


def _batch_writer(config: Mapping[str, Any], minutes_path: str) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: a micro-batch's closed rows to Parquet, per page to :data:`RESULTS_TOPIC`.

    Two Spark jobs a micro-batch, as Spark's fixed cost per job dominates at this size:
    the Parquet write runs the micro-batch into the cache, the Kafka write reads it there.
    """
    from pyspark.sql import functions as F

    def write(rows: DataFrame, batch_id: int) -> None:
        minutes = rows.select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                              "page", "user", "events", "clicks").persist()
        try:
            minutes.write.mode("append").parquet(minutes_path)
            pages = _per_page(minutes)
            (pages.select(F.col("page").alias("key"), F.to_json(F.struct(*pages.columns)).alias("value"))
             .write.format("kproto").options(**_spark_options(PRODUCER, config))
             .option("topic", RESULTS_TOPIC).mode("append").save())
        finally:
            minutes.unpersist()

    return write


def _await(query: StreamingQuery, records: int, progress: Callable[[int, str, str], Any] | None) -> list[StreamingQueryProgress]:
    """Wait for ``query`` to end, drawing its progress; return the progress of each micro-batch.

    Raises:
        StreamingQueryException: the query failed.
    """
    bar = progress(records, "records", "streaming") if progress is not None else None
    seen: dict[int, StreamingQueryProgress] = {}

    def collect() -> None:
        for batch in query.recentProgress:  # the last 100 micro-batches; polled often enough to see them all
            if batch.batchId not in seen:
                seen[batch.batchId] = batch
                if bar is not None:
                    bar.update(batch.numInputRows)

    try:
        while not query.awaitTermination(0.5):
            collect()
        collect()
    finally:
        if bar is not None:
            bar.close()
    return [seen[i] for i in sorted(seen)]


def _summary(spark: SparkSession, minutes_path: str) -> tuple[list[PageMinute], list[UserTotal]]:
    """The Parquet read back: every page's minutes and the top users."""
    from pyspark.sql import functions as F

    minutes = spark.read.parquet(minutes_path)
    pages = (_per_page(minutes).select(F.unix_millis("window_start").alias("window_start"), "page", "events",
                                       "views", "clicks", "users")
             .orderBy("window_start", F.desc("events"), "page").collect())
    top = (minutes.groupBy("user").agg(F.sum("events").alias("events"), F.sum("clicks").alias("clicks"),
                                       F.count_distinct("window_start").alias("minutes"))
           .orderBy(F.desc("events"), "user").limit(TOP_USERS).collect())
    return [PageMinute(**r.asDict()) for r in pages], [UserTotal(**r.asDict()) for r in top]


def run_pipeline(spark: SparkSession, bootstrap_servers: str, *, events: int = DEFAULT_EVENTS, seed: int = 1,
                 output: str, max_offsets_per_trigger: int | None = None, start_ms: int | None = None,
                 replication_factor: int = -1, progress: Callable[[int, str, str], Any] | None = None,
                 client_config: Mapping[str, Any] | None = None) -> Report:
    """Produce the stream, run the streaming job on ``spark`` and read its Parquet back (steps 2-5).

    Args:
        spark: a session; kproto's formats are registered with it.
        bootstrap_servers: the Kafka cluster.
        events: how many events to generate.
        seed: with the same ``start_ms``, the same seed gives the same events.
        output: a new or empty directory: ``minutes/`` (the Parquet) and the query's
            ``_checkpoint/`` go there.
        max_offsets_per_trigger: records per micro-batch (default: a third of the stream).
        start_ms: the first arrival time (default: five minutes ago, at a whole minute).
        replication_factor: of the topics the job creates (-1, the default: the
            cluster's ``default.replication.factor``); topics that exist are used as
            they are.
        progress: draws the progress of producing and of streaming: called as
            ``progress(total, unit, description)``, it returns a bar with tqdm's
            ``update(n)`` and ``close()``. The ``kproto pipeline`` command passes its
            progress line on stderr (:func:`kproto.cli.progress.progress`); None, the
            default, draws nothing.
        client_config: Kafka client settings for every client of the job (the
            ``--command-config`` of ``kproto pipeline``): ``security.protocol``,
            ``sasl.*``, ``ssl.*``, ``client.id``, timeouts... Each client takes the keys of
            its kind: the admin client and the producer directly, the Spark source
            (consumer) and sink (producer) as ``kafka.``-prefixed options, so values must
            be strings or numbers there. ``bootstrap_servers`` wins over a
            ``bootstrap.servers`` here.

    Raises:
        ConfigError: a setting no client of its kind takes, or a bad value.
        KafkaError: the cluster refused a topic or a record.
        StreamingQueryException: the Spark job failed.
    """
    from kproto.spark import register

    register(spark)
    if start_ms is None:
        start_ms = (int(time.time() * 1000) - SPAN_MS) // WINDOW_MS * WINDOW_MS
    stream = generate_events(events, seed, start_ms)
    minutes_path = os.path.join(output, "minutes")
    config = {**(client_config or {}), "bootstrap.servers": bootstrap_servers}
    check_client_config(config)
    with AdminClient(settings_of_kind(ADMIN, config)) as admin:
        _create_topics(admin, replication_factor)
        # This run's records are the ones past these offsets, on a new topic or one used before.
        events_start = _end_offsets(admin, EVENTS_TOPIC)
        results_start = _end_offsets(admin, RESULTS_TOPIC)
        produce_seconds = _produce(config, stream, progress)
        # Spark rounds each partition's share of a micro-batch down: one record per
        # partition more keeps a last micro-batch of a few records from following.
        limit = max_offsets_per_trigger or math.ceil((events + 1) / MICRO_BATCHES) + len(events_start)
        started = time.perf_counter()
        query = (_closed_rows(spark, config, events_start, limit).writeStream
                 .outputMode("append").foreachBatch(_batch_writer(config, minutes_path))
                 .option("checkpointLocation", os.path.join(output, "_checkpoint"))
                 .trigger(availableNow=True).queryName("kproto-pipeline").start())
        try:
            batches = _await(query, events + 1, progress)
        finally:
            query.stop()
        stream_seconds = time.perf_counter() - started
        results_end = _end_offsets(admin, RESULTS_TOPIC)
    page_minutes, top_users = _summary(spark, minutes_path)
    return Report(
        bootstrap_servers=bootstrap_servers, master=spark.sparkContext.master, start_ms=start_ms, events=events,
        produce_seconds=produce_seconds, micro_batches=len(batches), input_rows=sum(b.numInputRows for b in batches),
        late_rows_dropped=sum(op.numRowsDroppedByWatermark for b in batches for op in b.stateOperators),
        stream_seconds=stream_seconds, results_start=results_start, results_end=results_end,
        minutes_path=minutes_path, page_minutes=page_minutes, top_users=top_users)


def _minute(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M")


def format_report(report: Report) -> str:
    """The summary the command prints: what ran, the top pages per minute, the top users."""
    windows: dict[int, list[PageMinute]] = {}
    for row in report.page_minutes:  # ordered by window, then most events first
        windows.setdefault(row.window_start, []).append(row)
    first, last = min(windows), max(windows) + WINDOW_MS
    lines = [
        f"kproto pipeline: {report.events:,} events through Kafka and Spark Structured Streaming",
        "",
        f"  Kafka     {report.bootstrap_servers}, topic {EVENTS_TOPIC}: {report.events:,} events and a "
        f"heartbeat produced in {report.produce_seconds:.1f} s ({report.events / report.produce_seconds:,.0f}/s)",
        f"  Spark     {report.master}: {report.micro_batches} micro-batches read {report.input_rows:,} records "
        f"in {report.stream_seconds:.1f} s ({report.input_rows / report.stream_seconds:,.0f}/s); "
        f"rows behind the watermark: {report.late_rows_dropped}",
        f"  windows   {len(windows)} minutes, {_minute(first)} to {_minute(last)} UTC: "
        f"{sum(r.events for r in report.page_minutes):,} events counted",
        f"  results   {report.results:,} records, one per page and minute, in topic {RESULTS_TOPIC}",
        f"  Parquet   {report.minutes_path}: {report.minute_rows:,} rows of events per minute, page and user",
        "",
        "Top pages per minute: events (clicks, distinct users)",
        f"  {'minute':6}  {'events':>6}  " + "  ".join(f"{f'#{i}':30}" for i in range(1, TOP + 1)).rstrip(),
    ]
    for start, rows in windows.items():
        cells = [f"{f'{r.page} {r.events:,} ({r.clicks:,}, {r.users:,})':30}" for r in rows[:TOP]]
        lines.append(f"  {_minute(start):6}  {sum(r.events for r in rows):>6,}  " + "  ".join(cells).rstrip())
    lines += ["", "Top users", f"  {'user':10}  {'events':>6}  {'clicks':>6}  {'minutes':>7}"]
    lines += [f"  {u.user:10}  {u.events:>6,}  {u.clicks:>6,}  {u.minutes:>7}" for u in report.top_users]
    return "\n".join(lines)
