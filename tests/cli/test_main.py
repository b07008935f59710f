"""The ``kproto`` command as a whole: help and examples everywhere, bad usage, errors as
one line with the Kafka name, an unreachable or silent broker failing in bounded time."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time

import pytest

from kproto.cli.main import build_parser, main
from tests.cli.helpers import ROOT, TIMEOUT, process_env


def _leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every runnable command path (``("groups", "reset-offsets")``...)."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield path
        return
    for name, sub in actions[0].choices.items():
        yield from _leaf_commands(sub, (*path, name))


LEAVES = sorted(_leaf_commands(build_parser()))


def test_every_command_is_reachable():
    assert {leaf[0] for leaf in LEAVES} == {"topics", "produce", "consume", "groups", "transactions", "acls",
                                              "quotas", "users", "dump-log", "perf", "broker", "pipeline"}
    assert ("groups", "reset-offsets") in LEAVES and ("perf", "consume") in LEAVES


@pytest.mark.parametrize("path", [p for p in LEAVES if p != ("broker",)], ids=" ".join)
def test_help_of_every_command_has_examples(path, capsys):
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: kproto {' '.join(path)}")
    examples = out.split("\nexamples:\n", 1)[1]
    assert f"kproto {path[0]} " in examples


def test_top_level_help_and_version(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "dump-log" in out and "--bootstrap-servers" in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("kproto ")


@pytest.mark.parametrize("argv", [
    [],
    ["nope"],
    ["topics"],
    ["topics", "create"],
    ["topics", "create", "t", "--partitions", "many"],
    ["topics", "create", "t", "--config", "novalue"],
    ["topics", "list", "--unknown-flag"],
    ["consume"],
    ["consume", "t", "--format", "xml"],
    ["consume", "t", "--offset", "-3", "--partition", "0"],
    ["groups", "reset-offsets", "g", "--to-earliest"],
    ["groups", "reset-offsets", "g", "--all-topics"],
    ["groups", "reset-offsets", "g", "--all-topics", "--to-earliest", "--to-latest"],
    ["groups", "reset-offsets", "g", "--all-topics", "--to-earliest", "--dry-run", "--execute"],
    ["groups", "reset-offsets", "g", "--topic", "t:x", "--to-earliest"],
    ["groups", "reset-offsets", "g", "--all-topics", "--to-datetime", "yesterday"],
    ["perf", "produce", "t"],
    ["perf", "produce", "t", "--num-records", "0"],
    ["consume", "t", "--max-messages", "0"],
    ["consume", "t", "--timeout-ms", "soon"],
], ids=" ".join)
def test_bad_arguments_exit_2_with_usage(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "usage: kproto" in err and "error:" in err


@pytest.mark.parametrize("argv", [
    ["consume", "t", "--offset", "5"],
    ["consume", "t", "--group", "g", "--partition", "0"],
    ["topics", "alter", "t"],
], ids=" ".join)
def test_arguments_that_do_not_fit_together_exit_2(argv, cli):
    result = cli(*argv)
    assert result.code == 2
    assert result.err.startswith("kproto ") and "error:" in result.err and len(result.err.splitlines()) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("argv", [["topics", "list"], ["groups", "list"], ["consume", "t"], ["produce", "t"],
                                  ["perf", "consume", "t", "--messages", "1"]], ids=" ".join)
def test_unreachable_broker_is_one_line_and_fails_fast(argv, cli):
    started = time.monotonic()
    result = cli(*argv, stdin=b"x\n", bootstrap=f"127.0.0.1:{_closed_port()}")
    assert result.code == 1
    assert time.monotonic() - started < 5
    assert result.err.splitlines()[-1].startswith("kproto: error: NoBrokersAvailableError: ")


def test_silent_broker_fails_within_the_configured_time(cli, tmp_path):
    """A peer that accepts connections but never answers: bounded by request.timeout.ms,
    here set from a --command-config file (the CLI's own default is 10 s)."""
    config = tmp_path / "client.properties"
    config.write_text("# a Kafka client properties file\nrequest.timeout.ms=500\n\n"
                      "socket.connection.setup.timeout.ms: 500\nacks=all\n")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        started = time.monotonic()
        result = cli("--command-config", str(config), "topics", "list",
                     bootstrap=f"127.0.0.1:{silent.getsockname()[1]}")
    assert result.code == 1 and "NoBrokersAvailableError" in result.err
    assert time.monotonic() - started < 3  # the file's 500 ms, not the CLI's default 10 s


def test_kafka_errors_name_the_code(cli):
    assert cli("topics", "create", "main-dup").code == 0
    result = cli("topics", "create", "main-dup")
    assert result.code == 1
    assert result.err == "kproto: error: [TOPIC_ALREADY_EXISTS] topic 'main-dup' already exists\n"


def test_failures_of_several_items_are_one_line_each(cli):
    result = cli("topics", "delete", "main-missing-1", "main-missing-2")
    assert result.code == 1
    lines = result.err.splitlines()
    assert len(lines) == 2 and all(line.startswith("kproto: error: [UNKNOWN_TOPIC_OR_PARTITION]") for line in lines)


def test_bad_client_settings_name_the_closest_key(cli, tmp_path):
    result = cli("--property", "request.timeout.mss=5", "topics", "list")
    assert result.code == 1 and "did you mean 'request.timeout.ms'" in result.err
    config = tmp_path / "bad.properties"
    config.write_text("no separator here\n")  # java.util.Properties: the key "no", the value "separator here"
    result = cli("topics", "list", "--command-config", str(config))
    assert result.code == 1 and "unknown admin config 'no'" in result.err
    result = cli("topics", "list", "--command-config", str(tmp_path / "missing.properties"))
    assert result.code == 1 and "No such file" in result.err


def test_bootstrap_servers_from_the_environment(cli, broker, monkeypatch):
    monkeypatch.setenv("KPROTO_BOOTSTRAP_SERVERS", broker.bootstrap_servers)
    assert cli("topics", "create", "main-env", bootstrap=None).code == 0
    assert "main-env" in cli("topics", "list", bootstrap=None).lines


def test_connection_options_go_before_or_after_the_command(cli, broker):
    cli("topics", "create", "main-where")
    after = cli("topics", "list", "--bootstrap-servers", broker.bootstrap_servers, bootstrap=None)
    assert after.code == 0 and "main-where" in after.lines


def test_runs_as_python_dash_m(run_process, broker):
    created = run_process("--bootstrap-servers", broker.bootstrap_servers, "topics", "create", "main-sub", "--partitions", "2")
    assert created.returncode == 0 and created.stdout == b"Created topic main-sub.\n"
    bad = run_process("topics", "describe", "--bootstrap-servers", broker.bootstrap_servers, "main-nope")
    assert bad.returncode == 1
    assert bad.stderr.decode().startswith("kproto: error: [UNKNOWN_TOPIC_OR_PARTITION]")
    assert b"Traceback" not in bad.stderr


def test_python_dash_m_kproto_pipeline_is_the_pipeline_command():
    """Issue 12: ``python -m kproto.pipeline`` stays ``kproto pipeline`` now that the job
    (kproto/pipeline/) no longer imports the command line: its ``__main__`` runs it."""
    run = subprocess.run([sys.executable, "-m", "kproto.pipeline", "--help"], capture_output=True, cwd=ROOT,
                         env=process_env(), timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode().startswith("usage: kproto pipeline ")
