"""The pipeline (kproto.pipeline) end to end on a small stream: what it wrote to the results
topic and to Parquet equals counts made here, in plain Python, from the same generated events."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest

from kproto import AdminClient
from kproto.cli.main import main as kproto
from kproto.pipeline import (
    MAX_LATENESS_MS,
    WATERMARK_DELAY_MS,
    WINDOW_MS,
    embedded_broker,
    format_report,
    generate_events,
    heartbeat,
    run_pipeline,
)
from kproto.protocol import ApiKey
from tests.spark import pipeline_counts as counts

EVENTS = 2_000
SEED = 5
PER_TRIGGER = 700  # three micro-batches of data, then the one the heartbeat's watermark adds


CLIENT_ID = "kproto-pipeline-test"  # client_config's: every client of the job sends it


@pytest.fixture(scope="module")
def run(spark, broker, tmp_path_factory):
    """The pipeline's report, and the requests the broker got while it ran: by the job's
    client id (its Fetch requests: the Spark source's), and by kproto's default one."""
    by_job, fetches = broker.requests.control(client_id=CLIENT_ID), broker.requests.control(
        ApiKey.FETCH, client_id=CLIENT_ID)
    by_default = broker.requests.control(client_id="kproto")
    try:
        report = run_pipeline(spark, broker.bootstrap_servers, events=EVENTS, seed=SEED,
                              output=str(tmp_path_factory.mktemp("pipeline")), max_offsets_per_trigger=PER_TRIGGER,
                              client_config={"client.id": CLIENT_ID, "request.timeout.ms": "20000"})
    finally:
        for control in (by_job, fetches, by_default):
            control.remove()
    return report, {"job": by_job.count, "fetch": fetches.count, "default": by_default.count}


@pytest.fixture(scope="module")
def report(run):
    return run[0]


@pytest.fixture(scope="module")
def events(report):
    return generate_events(EVENTS, SEED, report.start_ms)


@pytest.fixture(scope="module")
def per_user(events) -> Counter:
    """(minute, page, user, kind) -> events."""
    return counts.per_user(events)


@pytest.fixture(scope="module")
def per_page(per_user) -> dict[tuple[int, str], tuple[int, int, int, int]]:
    """(minute, page) -> (events, views, clicks, distinct users)."""
    return counts.per_page(per_user)


def test_every_client_of_the_job_takes_client_config(run):
    """issue 15, A: run_pipeline(client_config=...) reaches the admin client, the producer,
    and the Spark source and sink as kafka. options: no request left with the default client id."""
    _, requests = run
    assert requests["job"] > 0 and requests["fetch"] > 0
    assert requests["default"] == 0


def test_every_event_is_read_and_none_is_late(report):
    assert report.input_rows == EVENTS + 1  # and the heartbeat
    # Spark rounds each partition's share down, so a few records may take one more.
    assert report.micro_batches >= math.ceil((EVENTS + 1) / PER_TRIGGER) + 1  # and one to close the windows
    assert report.late_rows_dropped == 0


def test_the_summary_counts_every_page_minute(report, per_page):
    assert {(r.window_start, r.page): (r.events, r.views, r.clicks, r.users) for r in report.page_minutes} == per_page
    assert sum(r.events for r in report.page_minutes) == EVENTS


def test_the_results_topic_holds_one_record_per_page_and_minute(report, broker, per_page):
    records = counts.results(broker.bootstrap_servers, report.results_start, report.results)
    assert len(records) == report.results == len(per_page)
    assert counts.results_per_page(records) == per_page


def test_the_parquet_holds_events_and_clicks_per_minute_page_and_user(report, per_user):
    assert pq.read_table(report.minutes_path).num_rows == report.minute_rows
    assert counts.parquet_rows(report.minutes_path) == counts.want_rows(per_user)


def test_the_top_users(report, events):
    assert report.top_users == counts.top_users(events)


def test_the_printed_summary(report):
    text = format_report(report)
    assert f"{EVENTS:,} events counted" in text and "rows behind the watermark: 0" in text
    assert report.minutes_path in text
    first = report.page_minutes[0]
    assert f"{first.page} {first.events:,} ({first.clicks:,}, {first.users:,})" in text
    rows = [line.split() for line in text.splitlines()]
    assert all([u.user, f"{u.events:,}", f"{u.clicks:,}", str(u.minutes)] in rows for u in report.top_users)


def test_the_stream_is_the_same_for_the_same_seed_and_its_heartbeat_closes_every_window():
    first = generate_events(500, 3, 1_700_000_040_000)
    assert first == generate_events(500, 3, 1_700_000_040_000) != generate_events(500, 4, 1_700_000_040_000)
    assert all(0 <= e.arrival_ms - e.event_ms <= MAX_LATENESS_MS for e in first)
    assert {e.kind for e in first} == {"view", "click"} and len({e.source for e in first}) == 3
    watermark = json.loads(heartbeat(first))["ts"] - WATERMARK_DELAY_MS
    assert watermark >= counts.minute(max(e.event_ms for e in first)) + WINDOW_MS  # the last window's end


def test_the_embedded_broker_stops_when_its_block_fails():
    with pytest.raises(RuntimeError, match="boom"), embedded_broker() as servers:
        with AdminClient(bootstrap_servers=servers) as admin:
            admin.list_topics()
        raise RuntimeError("boom")
    host, port = servers.rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=5).close()


def test_the_embedded_broker_does_not_outlive_a_killed_pipeline():
    """SIGKILL leaves no finally block to run: the broker child notices its stdin closing."""
    script = ("import time\nfrom kproto.pipeline import embedded_broker\n"
              "with embedded_broker() as servers:\n    print(servers, flush=True)\n    time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        host, port = parent.stdout.readline().strip().rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=5).close()
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except ConnectionRefusedError:
            return
        except ConnectionResetError:
            pass  # the connect raced the listener's close: the broker is on its way out
        time.sleep(0.05)
    pytest.fail("the broker still listens after its parent was killed")


def test_a_non_empty_output_is_refused_before_anything_starts(tmp_path, capsys):
    (tmp_path / "old.parquet").write_bytes(b"")
    assert kproto(["pipeline", "--output", str(tmp_path)]) == 2
    assert "is not empty" in capsys.readouterr().err
