"""``kproto perf``: summaries of small runs against minibroker, throttling, the progress
line, and ``--plot`` with and without matplotlib."""

from __future__ import annotations

import importlib.util
import json
import re
import time

import pytest

from kproto.cli import progress
from kproto.cli.perf import PERCENTILES, Measurement

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
SUMMARY_KEYS = {"records", "elapsed_s", "records_per_s", "mb_per_s", "latency_avg_ms", "latency_max_ms",
                *(f"latency_p{p * 100:g}_ms" for p in PERCENTILES)}


def test_produce_then_consume(cli):
    produced = cli("perf", "produce", "pf-topic", "--num-records", "2000", "--record-size", "50", "--json")
    assert produced.code == 0, produced.err
    summary = json.loads(produced.out)
    assert set(summary) == SUMMARY_KEYS and summary["records"] == 2000 and summary["records_per_s"] > 0
    assert 0 <= summary["latency_p50_ms"] <= summary["latency_p99_ms"] <= summary["latency_max_ms"]
    consumed = cli("perf", "consume", "pf-topic", "--messages", "2000", "--json")
    assert consumed.code == 0, consumed.err
    summary = json.loads(consumed.out)
    assert summary["records"] == 2000 and summary["mb_per_s"] > 0
    text = cli("perf", "consume", "pf-topic", "--messages", "10", "--group", "pf-group")
    assert re.fullmatch(r"10 records consumed, [\d,.]+ records/sec \([\d.]+ MB/sec\); end-to-end latency: "
                        r"[\d.]+ ms avg, [\d.]+ ms max, [\d.]+ ms 50th, [\d.]+ ms 95th, [\d.]+ ms 99th, "
                        r"[\d.]+ ms 99.9th\.\n", text.out), text.out


def test_produce_throttles_and_takes_options(cli):
    started = time.monotonic()
    result = cli("perf", "produce", "pf-slow", "--num-records", "20", "--throughput", "100", "--acks", "1",
                 "--compression", "lz4", "--property", "linger.ms=0")
    assert result.code == 0 and result.out.startswith("20 records sent, ")
    assert time.monotonic() - started >= 0.19  # 20 records at 100/s: the last leaves after 0.19 s


def test_consume_reports_too_few_records(cli):
    cli("perf", "produce", "pf-few", "--num-records", "3", "--json")
    result = cli("perf", "consume", "pf-few", "--messages", "10", "--timeout-ms", "300", "--json")
    assert result.code == 1 and json.loads(result.out)["records"] == 3
    assert result.err == "kproto perf: error: only 3 of 10 records arrived (none for 300 ms)\n"


def test_plot_without_matplotlib_is_a_clear_error_before_the_run(cli, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "matplotlib" else real_find_spec(name, *args))
    result = cli("perf", "produce", "pf-plot", "--num-records", "5", "--plot", "out.png")
    assert result.code == 2 and result.out == ""
    assert result.err == ("kproto perf: error: --plot needs matplotlib, which is not installed "
                          "(pip install matplotlib)\n")


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="needs matplotlib")
def test_plot_draws_a_png(cli, tmp_path):
    path = tmp_path / "produce.png"
    assert cli("perf", "produce", "pf-plot", "--num-records", "200", "--plot", str(path)).code == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_percentiles_are_nearest_rank():
    measurement = Measurement()
    for latency in range(1, 1001):
        measurement.completed(float(latency), 10)
    summary = measurement.summary()
    assert (summary["latency_p50_ms"], summary["latency_p95_ms"], summary["latency_p99_ms"],
            summary["latency_p99.9_ms"], summary["latency_max_ms"]) == (501.0, 951.0, 991.0, 1000.0, 1000.0)
    assert summary["latency_avg_ms"] == 500.5 and summary["records"] == 1000


def test_progress_is_silent_off_a_terminal_and_a_redrawn_line_on_one(capsys, monkeypatch):
    bar = progress.progress(10, "records", "sent")
    bar.update(5)
    bar.close()
    assert capsys.readouterr().err == ""  # pytest's stderr is not a terminal
    monkeypatch.setattr(progress, "_REDRAW", 0.0)
    line = progress._Line(10, "records", "sent")
    line.update(4)
    line.close()
    drawn = capsys.readouterr().err
    assert drawn.startswith("\rsent: 4/10 records (") and drawn.endswith("records/s)\x1b[K\n")
    assert drawn.count("\r") == 2


def _drawn_throughput(cli, monkeypatch, tmp_path, *args):
    """Run ``kproto perf ... --plot`` and return the y values of the throughput line drawn."""
    from matplotlib.axes import Axes

    lines = []
    real_plot = Axes.plot
    monkeypatch.setattr(Axes, "plot", lambda self, *a, **kw: lines.append(list(a[1])) or real_plot(self, *a, **kw))
    path = tmp_path / "perf.png"
    result = cli("perf", *args, "--json", "--plot", str(path))
    assert result.code == 0, result.err
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(lines) == 1
    return lines[0], json.loads(result.out)["records_per_s"]


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="needs matplotlib")
def test_plotted_throughput_is_what_a_reader_can_trust(cli, monkeypatch, tmp_path):
    """Issue 11 item D: the produce chart fell to zero at the end (a last bucket of one record)
    and the consume chart showed 1 ms spikes of millions of records/s (a poll's batch in one
    bucket). The line now stays near the run's average at both ends and in between."""
    rates, average = _drawn_throughput(cli, monkeypatch, tmp_path, "produce", "pf-chart", "--num-records", "3000",
                                       "--throughput", "10000")
    assert min(rates[-3:]) > average / 4, (rates[-3:], average)  # generous: a loaded machine stalls
    rates, average = _drawn_throughput(cli, monkeypatch, tmp_path, "consume", "pf-chart", "--messages", "3000")
    assert max(rates) < average * 5, (max(rates), average)


def test_throughput_windows_are_full_and_at_least_100_ms():
    from kproto.cli.perf import throughput_over_time

    # a poll of 500 records every 10 ms for 2 s: 50,000 records/s
    done_at = [0.01 * (i // 500 + 1) + 1e-6 * (i % 500) for i in range(100_000)]
    times, rates, window = throughput_over_time(done_at)
    assert window == pytest.approx(done_at[-1] / 20) and times[0] >= window * (1 - 1e-9)  # full windows only
    assert times[-1] == done_at[-1] and all(40_000 < r < 60_000 for r in rates)
    assert throughput_over_time([0.001, 0.002]) == ([0.002], [1000.0], 0.002)  # shorter than a window: one point
