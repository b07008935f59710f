"""kproto.metrics: Java's windowed statistics, and every client's ``metrics()`` and
``statistics.interval.ms`` against a real minibroker (issue 16, "Observability": Java-style
metrics() on every client and a periodic statistics callback)."""

from __future__ import annotations

import asyncio
import json
import math
import time

import pytest

from kproto import AdminClient, Consumer, Producer, TopicPartition
from kproto.admin import NewTopic
from kproto.aio import AIOAdminClient, AIOConsumer, AIOProducer
from kproto.errors import ConfigError, MessageTooLargeError
from kproto.metrics import PROVIDED, MetricName, Sensor, metrics_json
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)


def _values(metrics: dict, group: str, **tags: str) -> dict[str, float]:
    """``{name: value}`` of one group's metrics with these tags (besides client-id)."""
    return {n.name: v for n, v in metrics.items()
            if n.group == group and {k: v for k, v in n.tags if k != "client-id"} == tags}


# -- the statistics, without a broker -----------------------------------------------------------

def test_a_sensor_measures_as_javas_avg_max_rate_and_totals():
    """issue 16, metrics: Java's Avg/Max (NaN without samples), Rate over the windows' span
    with at least num.samples - 1 full windows, and cumulative totals."""
    sensor = Sensor(window=30.0, samples=2)
    start = time.monotonic()
    assert math.isnan(sensor.avg(start)) and math.isnan(sensor.max(start)) and sensor.rate(start) == 0.0
    for value in (10, 20, 30):
        sensor.record(value, start + 1)  # the first record opens the first window
    assert sensor.avg(start + 1) == 20 and sensor.max(start + 1) == 30
    # 60 recorded, 4 s since the window opened: the span is 4 s plus the one missing full
    # window (30 s), as Java's Rate
    assert sensor.rate(start + 5) == pytest.approx(60 / 34)
    assert sensor.rate(start + 5, of_count=True) == pytest.approx(3 / 34)
    sensor.record(40, start + 31)  # a second window
    assert sensor.avg(start + 31) == 25 and sensor.max(start + 31) == 40
    assert sensor.rate(start + 40) == pytest.approx(100 / 39)
    # two windows later the first has expired (samples x window), the totals stay
    assert sensor.avg(start + 62) == 40 and sensor.max(start + 62) == 40
    assert math.isnan(sensor.avg(start + 200))
    assert (sensor.total, sensor.count) == (100, 4)


def test_metric_names_compare_by_name_group_and_tags_and_make_json():
    a = MetricName("record-send-total", "producer-metrics", (("client-id", "x"),), "one description")
    b = MetricName("record-send-total", "producer-metrics", (("client-id", "x"),), "another")
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1 and a.tag_dict == {"client-id": "x"}
    node = MetricName("request-total", "producer-node-metrics", (("client-id", "x"), ("node-id", "node-1")))
    assert json.loads(metrics_json({a: 3.0, node: 2.0, MetricName("fetch-latency-avg", "g"): math.nan})) == {
        "producer-metrics": {"record-send-total": 3.0},
        "producer-node-metrics": {"request-total{node-id=node-1}": 2.0}, "g": {"fetch-latency-avg": None}}


def test_javas_names_are_provided():
    """issue 16: Java's names where they exist (the guide lists PROVIDED)."""
    provided = {kind: {f"{n.group}:{n.name}" for n in names} for kind, names in PROVIDED.items()}
    for name in ("producer-metrics:record-send-rate", "producer-metrics:record-send-total",
                 "producer-metrics:batch-size-avg", "producer-metrics:batch-size-max",
                 "producer-metrics:request-latency-avg", "producer-metrics:request-latency-max",
                 "producer-metrics:record-error-rate", "producer-metrics:record-error-total",
                 "producer-metrics:records-per-request-avg", "producer-metrics:compression-rate-avg",
                 "producer-metrics:buffer-available-bytes", "producer-node-metrics:request-latency-avg",
                 "producer-metrics:connection-count"):
        assert name in provided["producer"]
    for name in ("consumer-fetch-manager-metrics:records-consumed-rate",
                 "consumer-fetch-manager-metrics:records-consumed-total",
                 "consumer-fetch-manager-metrics:bytes-consumed-rate", "consumer-fetch-manager-metrics:fetch-latency-avg",
                 "consumer-fetch-manager-metrics:fetch-latency-max", "consumer-fetch-manager-metrics:records-lag-max",
                 "consumer-fetch-manager-metrics:fetch-size-avg", "consumer-coordinator-metrics:commit-latency-avg",
                 "consumer-coordinator-metrics:rebalance-total", "consumer-node-metrics:request-total"):
        assert name in provided["consumer"]
    assert "admin-client-node-metrics:request-latency-max" in provided["admin"]
    assert all(n.description for names in PROVIDED.values() for n in names)


@pytest.mark.parametrize(("settings", "words"), [
    ({"statistics.interval.ms": -1}, "statistics.interval.ms"),
    ({"statistics.callback": "print"}, "callable"),
    ({"metrics.num.samples": 0}, "metrics.num.samples"),
    ({"metrics.sample.window.ms": "soon"}, "metrics.sample.window.ms"),
])
def test_bad_observability_settings_are_config_errors(settings, words):
    """issue 16, config validation (Kafka's and librdkafka's names)."""
    for client in (Producer, Consumer, AdminClient):
        with pytest.raises(ConfigError, match=words):
            client({"bootstrap.servers": "127.0.0.1:9", **settings})


# -- the clients' metrics, against minibroker -------------------------------------------------

def test_a_producer_counts_records_batches_and_requests(broker):
    """issue 16, metrics after producing a known count: record-send-total, batches,
    records per request, latency, buffer, and the connection's per-node metrics."""
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=50, client_id="counted") as producer:
        for i in range(500):
            producer.send("metrics-produce", b"x" * 100, key=b"%d" % (i % 7))
        producer.flush()
        metrics = producer.metrics()
    p = _values(metrics, "producer-metrics")
    assert p["record-send-total"] == 500 and p["record-error-total"] == 0 and p["record-retry-total"] == 0
    assert p["record-send-rate"] > 0
    assert 100 * 500 / 7 / 10 < p["batch-size-avg"] <= p["batch-size-max"] <= 16384 + 200
    assert 0 < p["records-per-request-avg"] <= 500 and p["compression-rate-avg"] == pytest.approx(1.0, abs=0.01)
    assert 0 <= p["request-latency-avg"] <= p["request-latency-max"] < 30000
    assert p["buffer-available-bytes"] == p["buffer-total-bytes"] == 33554432 and p["requests-in-flight"] == 0
    assert p["request-total"] == p["response-total"] >= 3 and p["outgoing-byte-total"] > 500 * 100
    assert p["connection-count"] >= 1 and p["connection-creation-total"] >= 1
    leader = _values(metrics, "producer-node-metrics", **{"node-id": "node-0"})  # minibroker's node id
    assert leader["request-total"] >= 1 and leader["outgoing-byte-total"] > 500 * 100
    assert all(dict(n.tags)["client-id"] == "counted" for n in metrics)


def test_a_producer_counts_records_that_fail(broker):
    """issue 16, record-error-total: a batch the broker refuses for good (MESSAGE_TOO_LARGE
    against the topic's max.message.bytes) counts its records."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("metrics-small", 1, 1, configs={"max.message.bytes": "200"})])
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=20) as producer:
        futures = [producer.send("metrics-small", b"x" * 100) for _ in range(5)]
        for future in futures:
            with pytest.raises(MessageTooLargeError):
                future.result(10)
        p = _values(producer.metrics(), "producer-metrics")
    assert p["record-error-total"] == 5 and p["record-error-rate"] > 0


def test_a_consumer_counts_records_bytes_fetches_commits_and_rebalances(broker):
    """issue 16, metrics after consuming a known count: records-consumed-total (one len()
    per poll), bytes, fetch latency and size, lag, commit latency, rebalance counts."""
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for _ in range(300):
            producer.send("metrics-consume", b"y" * 100)
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="metrics", auto_offset_reset="earliest",
                  max_poll_records=100) as consumer:
        consumer.subscribe(["metrics-consume"])
        got = 0
        for _ in range(100):
            got += len(consumer.poll(0.2))
            if got >= 300:
                break
        consumer.commit()
        metrics = consumer.metrics()
    f = _values(metrics, "consumer-fetch-manager-metrics")
    assert got == 300 and f["records-consumed-total"] == 300 and f["records-consumed-rate"] > 0
    assert f["bytes-consumed-total"] > 300 * 100 and f["fetch-total"] >= 1
    assert f["fetch-size-max"] >= f["fetch-size-avg"] > 0 and f["fetch-latency-max"] >= f["fetch-latency-avg"] >= 0
    assert 0 < f["records-lag-max"] <= 300
    c = _values(metrics, "consumer-coordinator-metrics")
    assert c["commit-total"] == 1 and c["commit-latency-avg"] >= 0
    assert c["rebalance-total"] == 1 and c["assigned-partitions"] == 1 and c["last-rebalance-seconds-ago"] >= 0
    m = _values(metrics, "consumer-metrics")
    assert m["time-between-poll-max"] >= m["time-between-poll-avg"] >= 0 and m["last-poll-seconds-ago"] >= 0
    assert m["request-total"] >= 4 and m["connection-count"] >= 2  # the group coordinator's connection too


def test_the_admin_client_counts_its_requests(broker):
    """issue 16, metrics() on the admin client: admin-client-metrics and per-node metrics."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.list_topics()
        admin.describe_cluster()
        metrics = admin.metrics()
    a = _values(metrics, "admin-client-metrics")
    assert a["request-total"] >= 2 and a["response-total"] == a["request-total"] and a["incoming-byte-total"] > 0
    assert any(n.group == "admin-client-node-metrics" and n.name == "request-latency-avg" for n in metrics)


# -- statistics.interval.ms ------------------------------------------------------------------

def test_the_statistics_callback_runs_at_its_interval_and_stops_at_close(broker):
    """issue 16, statistics.interval.ms: the callback gets metrics snapshots every interval
    while the client lives, and never after close (no task or thread left)."""
    for client, settings in ((Producer, {}), (Consumer, {"group.id": "stats"}), (AdminClient, {})):
        snapshots: list = []
        with client(bootstrap_servers=broker.bootstrap_servers, statistics_interval_ms=50,
                    statistics_callback=snapshots.append, **settings) as c:
            if client is Producer:
                c.send("metrics-stats", b"x").result(10)
            elif client is Consumer:
                c.subscribe(["metrics-stats"])
                c.poll(0.05)
            else:
                c.list_topics()
            started = time.monotonic()
            while len(snapshots) < 3 and time.monotonic() - started < 10:
                time.sleep(0.05)
        assert len(snapshots) >= 3, client
        assert all(isinstance(name, MetricName) for name in snapshots[-1])
        closed_with = len(snapshots)
        time.sleep(0.3)
        assert len(snapshots) == closed_with, f"{client.__name__}: called after close"
    # a snapshot holds the metrics of its time
    assert _values(snapshots[-1], "admin-client-metrics")["request-total"] >= 1


def test_statistics_on_asyncio_clients_leave_no_task_behind(broker, caplog):
    """issue 16, statistics on AIO clients: the reporting task lives on the client's loop and
    ends at close; a callback that raises is logged and called again."""
    calls: list = []

    def failing(snapshot):
        calls.append(snapshot)
        raise RuntimeError("stats broke")

    async def main():
        settings = {"bootstrap_servers": broker.bootstrap_servers, "statistics_interval_ms": 20,
                    "statistics_callback": failing}
        async with AIOProducer(**settings) as producer:
            await producer.send("metrics-stats-aio", b"x")
            await asyncio.sleep(0.2)
        async with AIOConsumer(group_id="stats-aio", **settings) as consumer:
            consumer.subscribe(["metrics-stats-aio"])
            await consumer.poll(0.2)
        async with AIOAdminClient(**settings) as admin:
            await admin.list_topics()
            await asyncio.sleep(0.1)
        left = len(calls)
        await asyncio.sleep(0.1)
        assert len(calls) == left
        return [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(main()) == []
    assert len(calls) >= 6
    assert "statistics.callback failed" in caplog.text


def test_statistics_are_off_by_default(broker):
    """librdkafka's default, statistics.interval.ms=0: no callback, no task."""
    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers,
                               statistics_callback=lambda s: pytest.fail("called")) as producer:
            await producer.send("metrics-stats-off", b"x")
            return sorted(t.get_name() for t in asyncio.all_tasks())
    assert "kproto-statistics" not in asyncio.run(main())


def test_metrics_per_partition_count_only_what_poll_returned(broker):
    """issue 16: records-consumed-total counts what poll returned, per poll: a max_records=1
    poll counts one even though a whole fetch is buffered."""
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for _ in range(10):
            producer.send("metrics-one", b"z")
    with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("metrics-one", 0)])
        records = []
        for _ in range(50):
            records = consumer.poll(0.2, max_records=1)
            if records:
                break
        assert len(records) == 1
        assert _values(consumer.metrics(), "consumer-fetch-manager-metrics")["records-consumed-total"] == 1


def test_a_young_sensors_rate_starts_at_its_first_record():
    """issue 16, metrics (review): Java's first sample opens at the first record
    (SampledStat), not when the sensor is made: one value of 100, recorded 10 s after the
    sensor was made, is a rate of 100 over (samples - 1) x 30 s windows = 3.33/s (it was 2.5)."""
    sensor = Sensor(30.0, 2)
    now = time.monotonic() + 10
    sensor.record(100.0, now=now)
    assert sensor.rate(now) == pytest.approx(100.0 / 30.0)


def test_polls_that_return_nothing_count_as_polls(broker):
    """issue 16, metrics (review): an application polling an idle topic polls; Java records
    every poll's start, so last-poll-seconds-ago stays small and time-between-poll counts
    the empty polls (it grew without end while only polls with records were counted)."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("metrics-idle", 1)])
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send("metrics-idle", b"x")
    with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                  fetch_max_wait_ms=100) as consumer:
        consumer.assign([TopicPartition("metrics-idle", 0)])
        deadline = time.monotonic() + 15
        while not consumer.poll(0.5) and time.monotonic() < deadline:
            pass
        for _ in range(6):
            assert consumer.poll(0.2) == []
        polls = _values(consumer.metrics(), "consumer-metrics")
        fetched = _values(consumer.metrics(), "consumer-fetch-manager-metrics")
    assert polls["last-poll-seconds-ago"] < 1.0
    assert 150 <= polls["time-between-poll-avg"] < 1000  # the empty polls' 0.2 s apart
    assert fetched["records-consumed-total"] == 1
