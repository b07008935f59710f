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
