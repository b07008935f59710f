"""``kproto broker``: minibroker's own command line, run in place of the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from kproto.cli.main import main
from tests.cli.helpers import ROOT, TIMEOUT, command, process_env

READY = b"minibroker listening on "


def test_runs_minibroker_until_ctrl_c(cli, tmp_path):
    proc = subprocess.Popen(command("broker", "--port", "0", "--data-dir", str(tmp_path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=process_env())
    try:
        line = proc.stdout.readline()
        assert line.startswith(READY), proc.stderr.read() if proc.poll() is not None else line
        bootstrap = line[len(READY):].strip().decode()
        assert cli("topics", "create", "br-topic", bootstrap=bootstrap).code == 0
        assert cli("topics", "list", bootstrap=bootstrap).lines == ["br-topic"]
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0
    assert (tmp_path / "br-topic-0").is_dir()


def test_brokers_3_runs_a_cluster_until_sigterm(cli, tmp_path):
    """Issue 13: ``kproto broker --brokers 3`` is ``python -m minibroker --brokers 3``: one
    ready line naming three brokers, each answering, and SIGTERM stops it with 0."""
    ready = b"minicluster listening on "
    proc = subprocess.Popen(command("broker", "--brokers", "3", "--override", "default.replication.factor=3"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=process_env())
    try:
        line = proc.stdout.readline()
        assert line.startswith(ready), proc.stderr.read() if proc.poll() is not None else line
        servers = line[len(ready):].strip().decode().split(",")
        assert len(set(servers)) == 3
        assert cli("topics", "create", "br-cluster", "--partitions", "3", bootstrap=servers[2]).code == 0
        for server in servers:
            assert cli("topics", "list", bootstrap=server).lines == ["br-cluster"]
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=3 * TIMEOUT)
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait(timeout=TIMEOUT)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0


def test_help_and_bad_options_are_minibrokers(run_process):
    helped = run_process("broker", "--help")
    assert helped.returncode == 0
    ours, theirs = helped.stdout.decode().split("\n\nusage: ")
    assert ours.startswith("kproto broker runs python -m minibroker") and "examples:\n  kproto broker " in ours
    assert theirs.startswith("python -m minibroker") and "--data-dir" in theirs
    bad = run_process("broker", "--bogus")
    assert bad.returncode == 2 and b"unrecognized arguments: --bogus" in bad.stderr


def test_every_argument_after_broker_is_passed_on(monkeypatch, capsys):
    calls = []

    def execv(path: str, argv: list[str]) -> None:
        calls.append((path, argv))
        raise PermissionError("exec refused")  # what a failed exec raises; the test process goes on

    monkeypatch.setattr(os, "execv", execv)
    assert main(["broker", "--port", "0", "--override", "num.partitions=3", "-h"]) == 1
    assert calls == [(sys.executable, [sys.executable, "-m", "minibroker", "--port", "0",
                                       "--override", "num.partitions=3", "-h"])]
    captured = capsys.readouterr()
    assert captured.out.startswith("kproto broker runs python -m minibroker")
    assert captured.err == "kproto: error: exec refused\n"
