"""minibroker's pytest plugin, used by a real inner pytest run (pytester)."""

from __future__ import annotations

import socket

import pytest

pytest_plugins = ["pytester"]

INNER_TESTS = """
import socket

PORTS = []


def _port(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    assert host == "127.0.0.1"
    return int(port)


def _live(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_function_broker(kafka_broker, kafka_bootstrap_servers, port_log):
    assert kafka_bootstrap_servers == kafka_broker.bootstrap_servers
    port = _port(kafka_bootstrap_servers)
    _live(port)
    port_log("function", port)


def test_function_broker_is_fresh(kafka_broker, port_log):
    port_log("function", _port(kafka_broker.bootstrap_servers))


def test_session_broker(kafka_broker_session, port_log):
    port = _port(kafka_broker_session.bootstrap_servers)
    _live(port)
    port_log("session", port)


def test_session_broker_is_shared(kafka_broker_session, port_log):
    port_log("session", _port(kafka_broker_session.bootstrap_servers))
"""


def _closed(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except OSError:
        return True


@pytest.fixture
def inner(pytester, monkeypatch):
    """A pytester whose inner run loads only the plugin under test, and a port log."""
    # Whether or not the pytest11 entry point is installed, register the plugin once.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    log = pytester.path / "ports.txt"
    pytester.makeconftest(f"""
import pytest

@pytest.fixture
def port_log():
    def write(kind, port):
        with open({str(log)!r}, "a") as f:
            f.write(f"{{kind}} {{port}}\\n")
    return write
""")
    pytester.makepyfile(test_inner=INNER_TESTS)
    return pytester, log


def test_fixtures_serve_during_tests_and_stop_after(inner):
    pytester, log = inner
    result = pytester.runpytest("-p", "minibroker.pytest_plugin", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=4)

    ports = [line.split() for line in log.read_text().splitlines()]
    function_ports = [int(port) for kind, port in ports if kind == "function"]
    session_ports = [int(port) for kind, port in ports if kind == "session"]
    assert len(function_ports) == 2 and function_ports[0] != function_ports[1]
    assert len(session_ports) == 2 and session_ports[0] == session_ports[1]
    for port in {*function_ports, *session_ports}:
        assert _closed(port), f"a broker still listens on port {port}"


def test_fixtures_are_documented(inner):
    pytester, _ = inner
    result = pytester.runpytest("-p", "minibroker.pytest_plugin", "-p", "no:cacheprovider", "--fixtures")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*kafka_broker*",
        "*fresh, started minibroker*",
        "*kafka_bootstrap_servers*",
        "*kafka_broker_module*",
        "*kafka_broker_session*",
    ])
    result.stdout.fnmatch_lines(["kafka_cluster -- *", "*fresh, started MiniCluster*",
                                 "kafka_cluster_bootstrap_servers -- *"])  # issue 13


MODULE_TESTS = """
from kproto import Producer


def _port(broker):
    return int(broker.bootstrap_servers.rsplit(":", 1)[1])


def test_first(kafka_broker_module, port_log):
    port_log("{name}", _port(kafka_broker_module))


def test_second(kafka_broker_module, port_log):
    port_log("{name}", _port(kafka_broker_module))
    with Producer(bootstrap_servers=kafka_broker_module.bootstrap_servers) as producer:
        assert len(producer.partitions_for("auto-created")) == {partitions}
"""

MODULE_CONFIG = """
import pytest


@pytest.fixture(scope="module")
def minibroker_config():
    return {"num.partitions": 3}
"""


def test_module_broker_is_shared_by_a_module_and_configured_by_its_override(inner):
    """Issue 12: ``kafka_broker_module``, one broker per test module (the scope most of this
    project's own tests use), configured by a module-scoped ``minibroker_config``."""
    pytester, log = inner
    pytester.makepyfile(
        test_plain=MODULE_TESTS.format(name="plain", partitions=1),
        test_configured=MODULE_CONFIG + MODULE_TESTS.format(name="configured", partitions=3))
    result = pytester.runpytest("-p", "minibroker.pytest_plugin", "-p", "no:cacheprovider", "-q",
                                "test_plain.py", "test_configured.py")
    result.assert_outcomes(passed=4)

    ports: dict[str, list[int]] = {}
    for line in log.read_text().splitlines():
        kind, port = line.split()
        ports.setdefault(kind, []).append(int(port))
    assert len(ports["plain"]) == 2 and len(set(ports["plain"])) == 1
    assert len(ports["configured"]) == 2 and len(set(ports["configured"])) == 1
    assert ports["plain"][0] != ports["configured"][0]
    for port in {*ports["plain"], *ports["configured"]}:
        assert _closed(port), f"a broker still listens on port {port}"


CLUSTER_TESTS = """
from kproto import Producer


def test_three_brokers_and_a_new_leader(kafka_cluster, kafka_cluster_bootstrap_servers, minicluster_config,
                                        port_log):
    assert kafka_cluster_bootstrap_servers == kafka_cluster.bootstrap_servers
    brokers = kafka_cluster.brokers
    assert [b.node_id for b in brokers] == [0, 1, 2] and len({b.port for b in brokers}) == 3
    for b in brokers:
        port_log("cluster", b.port)
    assert kafka_cluster.config["min.insync.replicas"] == 2  # the override reached every broker
    kafka_cluster.create_topic("t", partitions=1, replication_factor=3)
    with Producer(bootstrap_servers=kafka_cluster_bootstrap_servers, acks="all") as producer:
        producer.send("t", b"before").result(timeout=10)
    leader = kafka_cluster.leader_of("t", 0)
    kafka_cluster.kill(leader)
    new_leader = kafka_cluster.wait_for_leader("t", 0, not_in=(leader,))
    assert new_leader != leader and kafka_cluster.brokers[new_leader].alive
    assert not kafka_cluster.brokers[leader].alive


def test_each_test_gets_a_fresh_cluster(kafka_cluster, port_log):
    assert all(b.alive for b in kafka_cluster.brokers)
    for b in kafka_cluster.brokers:
        port_log("cluster2", b.port)
"""

CLUSTER_CONFIG = """
import pytest


@pytest.fixture(scope="session")
def minicluster_config():
    return {"min.insync.replicas": 2}
"""


def test_kafka_cluster_gives_three_brokers_a_test_can_kill_and_stops_them_after(inner):
    """Issue 13: ``kafka_cluster`` is a fresh MiniCluster of three brokers per test,
    configured by an override of ``minicluster_config``; a test kills a leader and sees a
    new one; every broker is stopped after the test."""
    pytester, log = inner
    pytester.makepyfile(test_cluster=CLUSTER_CONFIG + CLUSTER_TESTS)
    result = pytester.runpytest("-p", "minibroker.pytest_plugin", "-p", "no:cacheprovider", "-q",
                                "test_cluster.py")
    result.assert_outcomes(passed=2)
    ports: dict[str, list[int]] = {}
    for line in log.read_text().splitlines():
        kind, port = line.split()
        ports.setdefault(kind, []).append(int(port))
    assert len(set(ports["cluster"])) == 3 and len(set(ports["cluster2"])) == 3
    assert set(ports["cluster"]) != set(ports["cluster2"])
    for port in {*ports["cluster"], *ports["cluster2"]}:
        assert _closed(port), f"a broker still listens on port {port}"


def test_minicluster_brokers_sets_the_cluster_size(inner):
    """Issue 13: an override of ``minicluster_brokers`` changes how many brokers
    ``kafka_cluster`` starts."""
    pytester, _ = inner
    pytester.makepyfile(test_size="""
import pytest


@pytest.fixture(scope="session")
def minicluster_brokers():
    return 2


def test_two(kafka_cluster):
    assert len(kafka_cluster.brokers) == 2
""")
    result = pytester.runpytest("-p", "minibroker.pytest_plugin", "-p", "no:cacheprovider", "-q", "test_size.py")
    result.assert_outcomes(passed=1)
