"""The ``python -m minibroker`` command, run as a real subprocess, and its properties parser."""

from __future__ import annotations

import signal
import socket
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from minibroker.__main__ import load_config, main, parse_properties
from tests.support.process import (
    READY,
    ROOT,
    TIMEOUT,
    child_env,
    minibroker_command,
    minibroker_process,
    read_line,
    start_minibroker,
    stop,
)

kafka = pytest.importorskip("kafka")

_env, _readline = child_env, read_line  # the names this module's tests use


def _host(host: str | None) -> list[str]:
    return ["--host", host] if host is not None else []


def _command(args: tuple[str, ...], host: str | None) -> list[str]:
    return minibroker_command(*_host(host), *args)


def run_cli(tmp_path: Path, *args: str, host: str | None = "127.0.0.1"
            ) -> AbstractContextManager[tuple[subprocess.Popen, str]]:
    """Start the command, wait for its ready line, yield (process, bootstrap servers).

    ``host`` is passed as ``--host`` unless None. The process is always killed on the
    way out; its stderr is in ``tmp_path/stderr``.
    """
    return minibroker_process(*_host(host), *args, log=tmp_path / "stderr")


def run_to_exit(tmp_path: Path, *args: str, host: str | None = "127.0.0.1") -> subprocess.CompletedProcess:
    return subprocess.run(_command(args, host), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)


# -- the command -------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serves_clients_and_stops_cleanly_on_signal(tmp_path, signum):
    with run_cli(tmp_path, "--port", "0") as (proc, bootstrap):
        host, port = bootstrap.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0

        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000, max_block_ms=5000)
        try:
            for i in range(5):
                producer.send("cli", key=b"k%d" % i, value=b"v%d" % i, partition=0)
            producer.flush(timeout=TIMEOUT)
        finally:
            producer.close(timeout=TIMEOUT)

        consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                       consumer_timeout_ms=5000, request_timeout_ms=5000)
        try:
            consumer.assign([kafka.TopicPartition("cli", 0)])
            got = []
            for message in consumer:
                got.append((message.offset, message.key, message.value))
                if len(got) == 5:
                    break
        finally:
            consumer.close()
        assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(5)]

        proc.send_signal(signum)
        assert proc.wait(timeout=5) == 0
        assert proc.stdout.read() == ""  # the ready line is the only line on stdout
    assert "minibroker listening on 127.0.0.1:" in (tmp_path / "stderr").read_text()


def test_stop_on_stdin_eof_stops_cleanly_when_the_parent_closes_its_pipe():
    proc = subprocess.Popen(_command(("--port", "0", "--stop-on-stdin-eof"), "127.0.0.1"), cwd=ROOT, env=_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _readline(proc.stdout, TIMEOUT).startswith(READY)
        proc.stdin.write("anything written is ignored\n")
        proc.stdin.flush()
        assert proc.poll() is None
        proc.stdin.close()
        assert proc.wait(timeout=TIMEOUT) == 0
        assert "standard input closed" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=TIMEOUT)
        proc.stdout.close()
        proc.stderr.close()


def test_without_the_flag_the_end_of_stdin_changes_nothing(tmp_path):
    with run_cli(tmp_path, "--port", "0") as (proc, _):  # stdin is inherited; pytest's is closed or /dev/null
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)


def test_advertised_address_is_the_ready_line(tmp_path):
    with run_cli(tmp_path, "--port", "0", "--advertised-host", "localhost", "--advertised-port", "19092") as (proc, bootstrap):
        assert bootstrap == "localhost:19092"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0


def test_config_file_and_override(tmp_path):
    # The file disables auto-creation and the override enables it again: overrides win.
    config = tmp_path / "server.properties"
    config.write_text("# minibroker test\nnum.partitions=3\nauto.create.topics.enable = false\n")
    with run_cli(tmp_path, "--port", "0", "--config", str(config),
                 "--override", "auto.create.topics.enable=true") as (proc, bootstrap):
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000, max_block_ms=5000)
        try:
            assert producer.partitions_for("auto-created") == {0, 1, 2}  # asks Metadata to create it
        finally:
            producer.close(timeout=TIMEOUT)
        consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        try:
            assert consumer.partitions_for_topic("auto-created") == {0, 1, 2}
        finally:
            consumer.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0


def test_listeners_in_the_config_file_replace_the_default_port(tmp_path):
    # Without --port the command defaults to Kafka's 9092, but only when listeners is unset.
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://127.0.0.1:0\nadvertised.listeners=PLAINTEXT://localhost:0\n")
    with run_cli(tmp_path, "--config", str(config), host=None) as (proc, bootstrap):
        host, port = bootstrap.rsplit(":", 1)
        assert host == "localhost" and int(port) not in (0, 9092)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0
    assert f"minibroker listening on 127.0.0.1:{port} (advertised localhost:{port})" in (tmp_path / "stderr").read_text()


def test_bound_to_every_interface_advertising_loopback(tmp_path):
    with run_cli(tmp_path, "--override", "listeners=PLAINTEXT://0.0.0.0:0",
                 "--override", "advertised.listeners=PLAINTEXT://127.0.0.1:0", host=None) as (proc, bootstrap):
        host, port = bootstrap.rsplit(":", 1)
        assert host == "127.0.0.1"
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000, max_block_ms=5000)
        try:
            assert producer.send("everywhere", value=b"v", partition=0).get(TIMEOUT).offset == 0
        finally:
            producer.close(timeout=TIMEOUT)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0
    assert f"minibroker listening on 0.0.0.0:{port} (advertised 127.0.0.1:{port})" in (tmp_path / "stderr").read_text()


def test_flags_win_over_the_parts_of_listeners_they_name(tmp_path):
    # Port 1 cannot be bound here: starting at all shows that --port replaced it.
    with run_cli(tmp_path, "--port", "0", "--override", "listeners=PLAINTEXT://localhost:1", host=None) as (proc, bootstrap):
        host, port = bootstrap.rsplit(":", 1)
        assert host == "localhost" and int(port) > 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0


@pytest.mark.parametrize(("args", "message"), [
    (("--override", "listeners=SSL://127.0.0.1:9093"), "listener SSL: an SSL listener needs its certificate and key"),
    (("--override", "listeners=PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:1"),
     "listeners: Each listener must have a different name"),
    (("--host", "0.0.0.0", "--port", "0"), "advertised.listeners cannot use the non-routable meta-address 0.0.0.0"),
])
def test_invalid_listeners_exit_2(tmp_path, args, message):
    result = run_to_exit(tmp_path, *args, host=None)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_unknown_key_in_file_exits_2_naming_the_closest_key(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("num.partition=3\n")
    result = run_to_exit(tmp_path, "--port", "0", "--config", str(config))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "'num.partition'" in result.stderr and "'num.partitions'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_override_exits_2(tmp_path):
    result = run_to_exit(tmp_path, "--port", "0", "--override", "auto.create.topic.enable=true")
    assert result.returncode == 2
    assert "'auto.create.topics.enable'" in result.stderr


def test_port_in_use_exits_1(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = run_to_exit(tmp_path, "--port", str(taken.getsockname()[1]))
    assert result.returncode == 1
    assert "cannot listen on 127.0.0.1:" in result.stderr
    assert result.stdout == ""


def test_bad_value_and_missing_file_exit_2(tmp_path, capsys):
    assert main(["--port", "0", "--override", "num.partitions=many"]) == 2
    assert "num.partitions" in capsys.readouterr().err
    assert main(["--port", "0", "--config", str(tmp_path / "absent.properties")]) == 2
    assert "absent.properties" in capsys.readouterr().err


def test_override_without_equals_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--override", "num.partitions"])
    assert exc.value.code == 2
    assert "key=value" in capsys.readouterr().err


# -- a cluster: --brokers N (issue 13) ----------------------------------------------------

CLUSTER_READY = "minicluster listening on "


def test_brokers_3_runs_a_cluster_whose_brokers_answer_metadata_and_stops_on_sigterm(tmp_path):
    """Issue 13, the cluster's surface: ``--brokers 3`` prints one parsable line naming the
    three brokers, each answers Metadata with all three, and SIGTERM stops it with 0."""
    admin_module = pytest.importorskip("confluent_kafka.admin")
    with open(tmp_path / "stderr", "wb") as stderr:
        proc = start_minibroker("--brokers", "3", "--racks", "a,b,c", "--data-dir", str(tmp_path / "data"),
                                "--override", "num.partitions=2", stderr=stderr)
    try:
        line = read_line(proc.stdout, 3 * TIMEOUT)
        assert line.startswith(CLUSTER_READY), (line, (tmp_path / "stderr").read_text()[-3000:])
        servers = line[len(CLUSTER_READY):].strip().split(",")
        assert len(servers) == 3 and all(s.startswith("127.0.0.1:") for s in servers)
        assert len({s.rsplit(":", 1)[1] for s in servers}) == 3
        for server in servers:  # every broker answers, and knows the other two
            admin = admin_module.AdminClient({"bootstrap.servers": server})
            brokers = admin.list_topics(timeout=TIMEOUT).brokers
            assert sorted(f"{b.host}:{b.port}" for b in brokers.values()) == sorted(servers)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=3 * TIMEOUT) == 0
        assert proc.stdout.read() == ""  # the ready line is the only line on stdout
    finally:
        stop(proc, 3 * TIMEOUT)
    assert [p.name for p in sorted((tmp_path / "data").iterdir())] == [
        "broker-0", "broker-1", "broker-2", "metadata"]


def test_brokers_stop_on_stdin_eof():
    """Issue 13: ``--stop-on-stdin-eof`` stops a cluster cleanly too."""
    proc = start_minibroker("--brokers", "2", "--stop-on-stdin-eof", stdin=subprocess.PIPE)
    try:
        assert read_line(proc.stdout, 3 * TIMEOUT).startswith(CLUSTER_READY)
        proc.stdin.close()
        assert proc.wait(timeout=3 * TIMEOUT) == 0
    finally:
        stop(proc, 3 * TIMEOUT)


@pytest.mark.parametrize("key", ["advertised.listeners", "broker.id", "log.dirs"])
def test_brokers_refuse_a_per_broker_key_with_exit_2(tmp_path, key):
    """Issue 13: the keys that are each broker's own are refused with MiniCluster's message
    (issue 15: ``listeners`` is every broker's now, with port 0)."""
    value = {"advertised.listeners": "PLAINTEXT://127.0.0.1:0", "broker.id": "1", "log.dirs": str(tmp_path)}[key]
    result = run_to_exit(tmp_path, "--brokers", "3", "--override", f"{key}={value}", host=None)
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"config {key!r} is the cluster's own" in result.stderr


def test_brokers_refuse_a_fixed_listener_port_with_exit_2(tmp_path):
    """Issue 15: a cluster's listeners take port 0 (each broker binds its own)."""
    result = run_to_exit(tmp_path, "--brokers", "3", "--override", "listeners=PLAINTEXT://127.0.0.1:9092", host=None)
    assert result.returncode == 2
    assert result.stdout == "" and "a MiniCluster's listeners take port 0" in result.stderr


@pytest.mark.parametrize("args, message", [
    (("--brokers", "3", "--port", "9092"), "--port names one broker's address"),
    (("--brokers", "3", "--racks", "a,b"), "racks= has 2 entries for 3 brokers"),
    (("--racks", "a"), "--racks needs --brokers"),
    (("--brokers", "0"), "--brokers must be at least 1"),
])
def test_brokers_bad_usage_exits_2(tmp_path, args, message):
    """Issue 13: address flags, a wrong number of racks, or no brokers: exit 2."""
    result = run_to_exit(tmp_path, *args, host=None)
    assert result.returncode == 2
    assert message in result.stderr and result.stdout == ""


# -- the properties parser ---------------------------------------------------------------


def test_properties_separators_comments_and_blank_lines():
    text = (
        "# a comment\n"
        "! another comment\n"
        "\n"
        "   \t\n"
        "a=1\n"
        "b: 2\n"
        "c 3\n"
        "  d   =   4\n"
        "e:f=g\n"
        "empty=\n"
        "bare\n"
        "   # an indented comment = not a key\n"
    )
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "f=g", "empty": "", "bare": ""}


def test_properties_continuation_lines():
    text = "list=a,\\\n    b,\\\n\tc\nnext=1\n"
    assert parse_properties(text) == {"list": "a,b,c", "next": "1"}


def test_properties_continuation_rules():
    # An escaped backslash does not continue; a comment never continues; a continued
    # line may look like a comment; a blank line ends a continuation; CRLF and CR work.
    assert parse_properties("path=c:\\\\dir\\\\\nx=1") == {"path": "c:\\dir\\", "x": "1"}
    assert parse_properties("# comment \\\nx=1") == {"x": "1"}
    assert parse_properties("x=a\\\n#b\n") == {"x": "a#b"}
    assert parse_properties("x=a\\\n\ny=2") == {"x": "a", "y": "2"}
    assert parse_properties("a=1\r\nb=2\\\r  3\rc=4") == {"a": "1", "b": "23", "c": "4"}
    assert parse_properties("x=end\\") == {"x": "end"}


def test_properties_whitespace_and_escapes():
    assert parse_properties("  key  =  value with spaces  ") == {"key": "value with spaces  "}
    assert parse_properties("a\\=b\\:c\\ d = v") == {"a=b:c d": "v"}
    assert parse_properties("k=\\t\\n\\u0041\\q") == {"k": "\t\nAq"}
    assert parse_properties("dup=1\ndup=2") == {"dup": "2"}
    with pytest.raises(ValueError, match="uxxxx"):
        parse_properties("k=\\u12")


def test_load_config_overrides_win_and_values_are_stripped(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("num.partitions = 3  \nbroker.id=1\n")
    assert load_config(str(config), [("broker.id", " 7 ")]) == {"num.partitions": "3", "broker.id": "7"}
    assert load_config(None) == {}


def test_a_sasl_listener_from_a_properties_file(tmp_path):
    """Issue 15, item 1: the command takes Kafka's security settings, a JAAS config with
    its quotes included, from server.properties; the ready line names the first listener."""
    ck = pytest.importorskip("confluent_kafka")
    config = tmp_path / "server.properties"
    config.write_text("listeners=SASL_PLAINTEXT://127.0.0.1:0\n"
                      "sasl.enabled.mechanisms=PLAIN\n"
                      "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."
                      "PlainLoginModule required user_alice=\"alice-secret\";\n")
    with run_cli(tmp_path, "--config", str(config)) as (proc, bootstrap):
        producer = ck.Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                                "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})
        producer.produce("cli-sasl", b"v", partition=0)
        assert producer.flush(15) == 0
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0
