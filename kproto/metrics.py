"""Client metrics in Java's shape: :class:`MetricName` keys, windowed rates, averages,
maxima and totals, and the sensors each client records into.

Every client keeps its metrics (always on, as in Java) and answers ``metrics()``: a
snapshot ``{MetricName: float}`` with Java's metric names, groups and tags
(``record-send-rate`` in ``producer-metrics`` with ``client-id``...). The names provided
are listed in the observability guide; :data:`PROVIDED` holds them per client kind.

Theory of operation (Java's ``org.apache.kafka.common.metrics``). A :class:`Sensor` takes
``record(value)`` calls and keeps, per time window of ``metrics.sample.window.ms``, the
count, sum and maximum of what it was given, for the last ``metrics.num.samples``
windows, plus totals since it was made. A metric is a function of a sensor: an average
(sum / count over the live windows; NaN without samples, as Java's ``Avg``), a maximum
(``Max``), a rate (sum, or count, per second over the windows' span, to which the full
windows missing to ``num.samples - 1`` are added so that a young sensor's rate is not
inflated: Java's ``Rate.windowSize``), or a cumulative total (``CumulativeSum`` /
``CumulativeCount``). A sensor may serve two metrics: a request's bytes give the request
count and the bytes sent, a response's latency the response count and the latency.
Clients record per batch, per request or per poll, never per record: the cost of metrics
does not grow with the record count.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

__all__ = ["PROVIDED", "AdminMetrics", "ConsumerMetrics", "MetricName", "Metrics", "NodeSensors", "ProducerMetrics",
           "Sensor", "Statistics", "metrics_json"]

log = logging.getLogger("kproto.metrics")


class MetricName(NamedTuple):
    """A metric's identity, as Java's ``MetricName``: ``name`` (``record-send-rate``),
    ``group`` (``producer-metrics``) and ``tags`` (``(("client-id", "kproto"),)``,
    sorted pairs, so that the name is hashable). ``description`` is not part of the
    identity."""

    name: str
    group: str
    tags: tuple[tuple[str, str], ...] = ()
    description: str = ""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricName):
            return NotImplemented
        return (self.name, self.group, self.tags) == (other.name, other.group, other.tags)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((self.name, self.group, self.tags))

    @property
    def tag_dict(self) -> dict[str, str]:
        """The tags as a dict (Java's ``MetricName.tags()``)."""
        return dict(self.tags)


class Sensor:
    """Values recorded over time: the last ``samples`` windows of ``window`` seconds each
    (count, sum, max per window) and the totals since the start. See the module docstring."""

    __slots__ = ("_window", "_samples", "_old", "_start", "_count", "_sum", "_max", "total", "count")

    def __init__(self, window: float, samples: int) -> None:
        self._window = window
        self._samples = samples
        self._old: list[tuple[float, int, float, float]] = []  # closed windows: (start, count, sum, max)
        self._start = -math.inf  # the first record opens the first window (Java's SampledStat)
        self._count = 0
        self._sum = 0.0
        self._max = -math.inf
        self.total = 0.0  # every value ever recorded, summed (Java's CumulativeSum)
        self.count = 0  # how many values were recorded (Java's CumulativeCount)

    def record(self, value: float = 1.0, now: float | None = None) -> None:
        """Record ``value`` (a count, bytes, milliseconds...) at ``now`` (monotonic seconds)."""
        if now is None:
            now = time.monotonic()
        if now - self._start >= self._window:
            self._roll(now)
        self._count += 1
        self._sum += value
        if value > self._max:
            self._max = value
        self.total += value
        self.count += 1

    def _roll(self, now: float) -> None:
        if self._count:
            self._old.append((self._start, self._count, self._sum, self._max))
            del self._old[:-(self._samples - 1) or len(self._old)]
        self._start = now
        self._count, self._sum, self._max = 0, 0.0, -math.inf

    def _live(self, now: float) -> list[tuple[float, int, float, float]]:
        """The windows still in the measurement: Java purges samples older than samples x window."""
        oldest = now - self._samples * self._window
        out = [s for s in self._old if s[0] >= oldest]
        if self._count and self._start >= oldest:
            out.append((self._start, self._count, self._sum, self._max))
        return out

    def avg(self, now: float) -> float:
        live = self._live(now)
        count = sum(s[1] for s in live)
        return sum(s[2] for s in live) / count if count else math.nan

    def max(self, now: float) -> float:
        live = self._live(now)
        return max(s[3] for s in live) if live else math.nan

    def rate(self, now: float, *, of_count: bool = False) -> float:
        """Per second: the sum (``of_count``: the number) of values in the live windows over
        their span, to which the full windows missing to ``samples - 1`` are added (Java's
        ``Rate.windowSize``: a young sensor's rate is not inflated)."""
        live = self._live(now)
        amount = sum(s[1] if of_count else s[2] for s in live)
        if not amount:
            return 0.0
        span = now - min(s[0] for s in live)
        full = int(span // self._window)
        if full < self._samples - 1:
            span += (self._samples - 1 - full) * self._window
        return amount / max(span, 1e-3)


class Metrics:
    """One client's registry: :class:`MetricName` -> a function of the time, and the
    sensors behind them.

    Args:
        config: the client's settings (``client.id``, ``metrics.sample.window.ms``,
            ``metrics.num.samples``).
        prefix: ``producer``, ``consumer`` or ``admin-client``: the groups' prefix.
    """

    def __init__(self, config: Mapping[str, Any], prefix: str) -> None:
        self.prefix = prefix
        self.window = config["metrics.sample.window.ms"] / 1000
        self.samples = config["metrics.num.samples"]
        self.tags = (("client-id", config["client.id"]),)
        self._metrics: dict[MetricName, Callable[[float], float]] = {}
        self._nodes: dict[int, NodeSensors] = {}
        self._clusters: list[Any] = []  # whose open connections connection-count counts
        group = f"{prefix}-metrics"
        self.connection_creation = self.sensor()
        self.add("connection-count", group, "The current number of active connections.",
                 lambda now: float(sum(c.open_connections() for c in self._clusters)))
        self.meter("connection-creation", group, self.connection_creation, "new connections established", count=True)
        # the client's network totals are its nodes' summed when read: a request records
        # into its node's sensors only (Java records into both, through parent sensors)
        for name, sensor, what, count in (("request", "requests", "requests sent", True),
                                          ("response", "responses", "responses received", True),
                                          ("outgoing-byte", "requests", "bytes sent to all brokers", False),
                                          ("incoming-byte", "incoming", "bytes read from all brokers", False)):
            self.add(f"{name}-rate", group, f"The number of {what} per second.", self._nodes_sum(sensor, "rate", count))
            self.add(f"{name}-total", group, f"The total number of {what}.", self._nodes_sum(sensor, "total", count))

    def _nodes_sum(self, sensor: str, how: str, count: bool) -> Callable[[float], float]:
        def value(now: float) -> float:
            sensors = [getattr(n, sensor) for n in list(self._nodes.values())]
            if how == "rate":
                return sum(s.rate(now, of_count=count) for s in sensors)
            return float(sum(s.count if count else s.total for s in sensors))
        return value

    def attach(self, cluster: Any) -> None:
        """Record the connections of ``cluster`` (a :class:`~kproto.io.Cluster`; a consumer
        has a second one for its group coordinator) here."""
        cluster.metrics = self
        self._clusters.append(cluster)

    def sensor(self) -> Sensor:
        """A new sensor with this registry's window and sample count."""
        return Sensor(self.window, self.samples)

    def add(self, name: str, group: str, description: str, value: Callable[[float], float],
            tags: tuple[tuple[str, str], ...] = ()) -> None:
        """Register a metric: ``value(now)`` gives it (now: ``time.monotonic()``)."""
        self._metrics[MetricName(name, group, tuple(sorted(self.tags + tags)), description)] = value

    def meter(self, name: str, group: str, sensor: Sensor, what: str, *, count: bool = False,
              tags: tuple[tuple[str, str], ...] = ()) -> None:
        """``{name}-rate`` and ``{name}-total`` of ``sensor`` (Java's ``Meter``): of the values
        recorded, or with ``count`` of the recordings."""
        self.add(f"{name}-rate", group, f"The number of {what} per second.",
                 lambda now: sensor.rate(now, of_count=count), tags)
        self.add(f"{name}-total", group, f"The total number of {what}.",
                 (lambda now: float(sensor.count)) if count else (lambda now: sensor.total), tags)

    def avg_max(self, name: str, group: str, sensor: Sensor, what: str) -> None:
        """``{name}-avg`` and ``{name}-max`` of ``sensor``."""
        self.add(f"{name}-avg", group, f"The average {what}.", sensor.avg)
        self.add(f"{name}-max", group, f"The maximum {what}.", sensor.max)

    def node(self, node_id: int) -> NodeSensors:
        """The sensors of one broker connection (made, with its metrics, at the first ask)."""
        sensors = self._nodes.get(node_id)
        if sensors is None:
            sensors = self._nodes[node_id] = NodeSensors(self, node_id)
        return sensors

    def snapshot(self) -> dict[MetricName, float]:
        """Every metric's value now."""
        now = time.monotonic()
        return {name: float(value(now)) for name, value in list(self._metrics.items())}


class NodeSensors:
    """What a connection records: requests, responses, bytes and latency, into its node's
    metrics (``{prefix}-node-metrics``, tag ``node-id``), which the client's add up."""

    __slots__ = ("requests", "responses", "incoming")

    def __init__(self, metrics: Metrics, node_id: int) -> None:
        group, tags = f"{metrics.prefix}-node-metrics", (("node-id", f"node-{node_id}"),)
        # one sensor per event, read two ways: a request's bytes (their count is the
        # requests'), a response's latency (its count is the responses'), a frame's bytes
        self.requests, self.responses, self.incoming = metrics.sensor(), metrics.sensor(), metrics.sensor()
        metrics.meter("request", group, self.requests, "requests sent to the node", count=True, tags=tags)
        metrics.meter("response", group, self.responses, "responses received from the node", count=True, tags=tags)
        metrics.meter("outgoing-byte", group, self.requests, "bytes sent to the node", tags=tags)
        metrics.meter("incoming-byte", group, self.incoming, "bytes read from the node", tags=tags)
        metrics.add("request-latency-avg", group, "The average request latency in ms.", self.responses.avg, tags)
        metrics.add("request-latency-max", group, "The maximum request latency in ms.", self.responses.max, tags)

    def sent(self, size: int) -> None:
        """A request of ``size`` bytes was written."""
        self.requests.record(size)

    def received(self, size: int) -> None:
        """A response frame of ``size`` bytes was read."""
        self.incoming.record(size)

    def answered(self, seconds: float) -> None:
        """A request got its response ``seconds`` after it went out."""
        self.responses.record(seconds * 1000)


class ProducerMetrics(Metrics):
    """``producer-metrics``: what the sender records per request and per batch.

    Args:
        config: the producer's settings.
        buffer_used: bytes held by unsettled batches now (``buffer-available-bytes``).
        in_flight: requests in flight now (``requests-in-flight``).
    """

    def __init__(self, config: Mapping[str, Any], buffer_used: Callable[[], int],
                 in_flight: Callable[[], int] = lambda: 0) -> None:
        super().__init__(config, "producer")
        group = "producer-metrics"
        self.in_flight = in_flight
        total = config["buffer.memory"]
        self.batch_size, self.compression = self.sensor(), self.sensor()
        self.queue_time, self.latency = self.sensor(), self.sensor()
        self.records, self.errors, self.retries = self.sensor(), self.sensor(), self.sensor()
        self.avg_max("batch-size", group, self.batch_size, "number of bytes sent per partition per request")
        self.add("compression-rate-avg", group, "The average ratio of the compressed batch size over the "
                 "uncompressed size.", self.compression.avg)
        self.avg_max("record-queue-time", group, self.queue_time, "time in ms record batches spent in the send buffer")
        self.avg_max("request-latency", group, self.latency, "produce request latency in ms")
        # the records sensor records a request's records: sent per second, and per request
        self.add("records-per-request-avg", group, "The average number of records per request.", self.records.avg)
        self.meter("record-send", group, self.records, "records sent")
        self.meter("record-error", group, self.errors, "record sends that resulted in errors")
        self.meter("record-retry", group, self.retries, "retried record sends")
        self.add("buffer-total-bytes", group, "The buffer memory the producer may use (buffer.memory).",
                 lambda now: float(total))
        self.add("buffer-available-bytes", group, "The buffer memory not in use.",
                 lambda now: float(total - buffer_used()))
        self.add("requests-in-flight", group, "The number of produce requests awaiting a response.",
                 lambda now: float(self.in_flight()))

    def request_sent(self, batches: Any) -> None:
        """A Produce request goes out with ``batches`` (built
        :class:`~kproto.producer.accumulator.ProducerBatch` objects): records sent, batch
        sizes, compression and queue times, per batch (a retried batch counts again, as in
        Java's ``SenderMetrics``)."""
        now = time.monotonic()
        records = 0
        for b in batches:
            size = len(b.data)
            records += b.record_count
            self.batch_size.record(size, now)
            self.compression.record(size / max(b.raw_size, 1), now)  # sealed: built, builder let go
            self.queue_time.record((now - b.created) * 1000, now)
        self.records.record(records, now)

    def request_done(self, seconds: float) -> None:
        """A Produce request was answered after ``seconds``."""
        self.latency.record(seconds * 1000)

    def failed(self, batch: Any) -> None:
        """A batch's records failed for good."""
        self.errors.record(batch.record_count)

    def retried(self, batch: Any) -> None:
        """A batch's records go back to be sent again."""
        self.retries.record(batch.record_count)


class ConsumerMetrics(Metrics):
    """``consumer-fetch-manager-metrics``, ``consumer-coordinator-metrics`` and the poll
    metrics of ``consumer-metrics``, recorded per fetch response, per poll, per commit
    and per rebalance.

    Args:
        config: the consumer's settings.
        assigned: the number of partitions assigned now (``assigned-partitions``).
    """

    def __init__(self, config: Mapping[str, Any], assigned: Callable[[], int] = lambda: 0) -> None:
        super().__init__(config, "consumer")
        fetch, coordinator = "consumer-fetch-manager-metrics", "consumer-coordinator-metrics"
        self.consumed, self.fetch_latency = self.sensor(), self.sensor()
        self.fetch_size, self.lag = self.sensor(), self.sensor()  # fetch_size: a response's bytes
        self.meter("records-consumed", fetch, self.consumed, "records consumed")
        self.meter("bytes-consumed", fetch, self.fetch_size, "bytes consumed")
        self.meter("fetch", fetch, self.fetch_latency, "fetch requests", count=True)
        self.avg_max("fetch-latency", fetch, self.fetch_latency, "time in ms a fetch request took")
        self.avg_max("fetch-size", fetch, self.fetch_size, "number of bytes fetched per request")
        self.add("records-lag-max", fetch, "The maximum lag in records of any partition (high watermark - "
                 "fetch offset).", self.lag.max)
        self.commits, self.rebalances = self.sensor(), self.sensor()
        self.avg_max("commit-latency", coordinator, self.commits, "time in ms a commit request took")
        self.meter("commit", coordinator, self.commits, "commit calls", count=True)
        self.avg_max("rebalance-latency", coordinator, self.rebalances, "time in ms a rebalance took")
        self.add("rebalance-total", coordinator, "The total number of rebalances this member took part in.",
                 lambda now: float(self.rebalances.count))
        self.add("rebalance-rate-per-hour", coordinator, "The number of rebalances per hour.",
                 lambda now: self.rebalances.rate(now, of_count=True) * 3600)
        self.add("last-rebalance-seconds-ago", coordinator, "Seconds since the last rebalance ended (-1: none).",
                 lambda now: -1.0 if self._rebalanced is None else now - self._rebalanced)
        self.add("assigned-partitions", coordinator, "The number of partitions assigned to this consumer.",
                 lambda now: float(assigned()))
        self._rebalanced: float | None = None
        self._joining: float | None = None
        self._last_poll: float | None = None
        self.between_polls = self.sensor()
        self.avg_max("time-between-poll", "consumer-metrics", self.between_polls,
                     "delay in ms between the application's polls")
        self.add("last-poll-seconds-ago", "consumer-metrics", "Seconds since the last poll (-1: none).",
                 lambda now: -1.0 if self._last_poll is None else now - self._last_poll)

    def poll_started(self) -> None:
        """The application called poll (Java records every poll's start, one that returns
        nothing too: an idle consumer that polls is not 'stuck')."""
        now = time.monotonic()
        if self._last_poll is not None:
            self.between_polls.record((now - self._last_poll) * 1000, now)
        self._last_poll = now

    def polled(self, records: Any) -> Any:
        """A poll returns ``records`` (a list, or poll_arrow's RecordBatch): counted with one
        ``len``. Returns them."""
        self.consumed.record(len(records))
        return records

    def fetched(self, seconds: float, offsets: Mapping[Any, int], answers: Mapping[Any, Any]) -> None:
        """A Fetch fetching at ``offsets`` was answered after ``seconds`` with ``answers``
        (partition -> its response): bytes, size, latency and each partition's lag."""
        now = time.monotonic()
        size = 0
        for tp, p in answers.items():
            records = p.records
            if records:
                size += len(records)
            offset = offsets.get(tp)
            if offset is not None and p.high_watermark >= 0:
                self.lag.record(max(p.high_watermark - offset, 0), now)
        self.fetch_latency.record(seconds * 1000, now)
        self.fetch_size.record(size, now)

    def committed(self, seconds: float) -> None:
        """An offset commit succeeded after ``seconds``."""
        self.commits.record(seconds * 1000)

    def joining(self) -> None:
        """A rebalance begins (the member joins)."""
        if self._joining is None:
            self._joining = time.monotonic()

    def rebalanced(self) -> None:
        """A rebalance ended with an assignment."""
        now = time.monotonic()
        started, self._joining = self._joining, None
        self.rebalances.record(0.0 if started is None else (now - started) * 1000, now)
        self._rebalanced = now


class AdminMetrics(Metrics):
    """``admin-client-metrics``: the connection and request metrics every client has."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config, "admin-client")


def metrics_json(snapshot: Mapping[MetricName, float]) -> str:
    """A snapshot as JSON, ``{group: {name: value}}`` with tagged metrics (a node's)
    under ``"name{tag=value,...}"``: for a log line or a librdkafka-style ``stats_cb``
    consumer of JSON. NaN (an average without samples) is written as null."""
    out: dict[str, dict[str, float | None]] = {}
    for name, value in snapshot.items():
        extra = ",".join(f"{k}={v}" for k, v in name.tags if k != "client-id")
        key = f"{name.name}{{{extra}}}" if extra else name.name
        out.setdefault(name.group, {})[key] = None if math.isnan(value) else value
    return json.dumps(out, sort_keys=True)


PROVIDED: dict[str, tuple[MetricName, ...]] = {}
"""Client kind (``producer``, ``consumer``, ``admin``) -> the metrics it provides, sorted
by group and name (per-node metrics shown for a ``node-id`` of ``node-0``)."""


def _provided() -> None:
    config = {"metrics.sample.window.ms": 30000, "metrics.num.samples": 2, "client.id": "x", "buffer.memory": 1}
    for kind, made in (("producer", ProducerMetrics(config, lambda: 0)), ("consumer", ConsumerMetrics(config)),
                       ("admin", AdminMetrics(config))):
        made.node(0)
        PROVIDED[kind] = tuple(sorted(made._metrics, key=lambda n: (n.group, n.name)))


_provided()


class Statistics:
    """``statistics.interval.ms``: a task on the client's loop that calls
    ``statistics.callback(snapshot)`` every interval (librdkafka's ``stats_cb``, with the
    metrics snapshot rather than JSON; :func:`metrics_json` makes the JSON). A callback
    that raises is logged and called again at the next interval. Off (no task) when the
    interval is 0 or there is no callback.

    Args:
        config: the client's settings.
        metrics: the registry to snapshot.
    """

    def __init__(self, config: Mapping[str, Any], metrics: Metrics) -> None:
        self._interval = config["statistics.interval.ms"] / 1000
        self._callback = config["statistics.callback"]
        self._metrics = metrics
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start reporting on the running loop (once; nothing when off)."""
        if self._task is None and self._interval > 0 and self._callback is not None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="kproto-statistics")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                self._callback(self._metrics.snapshot())
            except Exception:
                log.exception("statistics.callback failed")

    async def stop(self) -> None:
        """Stop reporting (a client's close)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
