"""Fixtures of the client-side transaction tests (issue 14).

``txn_broker`` is the one place that says which broker they run against: minibroker
(its transaction coordinator) and Tansu (a real broker of another lineage). A test that
meets a gap of one broker marks only that case with :func:`broker_gap`.
"""

import pytest

from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)

# param -> (the fixture of tests/conftest.py that starts that broker, a group member's session
# settings there: Tansu holds a join for half the session timeout, so short sessions keep its
# rebalances quick; minibroker refuses sessions under group.min.session.timeout.ms, 6 s)
_BROKERS = {"tansu": ("tansu_broker", {"session_timeout_ms": 2000, "heartbeat_interval_ms": 200}),
            "minibroker": ("broker", {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500})}


@pytest.fixture(scope="module")
def minibroker_config():
    """minibroker looks for timed-out transactions every 200 ms (Kafka's
    ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, 10 s by default), so
    that a test of the timeout abort waits a second, not ten."""
    return {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}


@pytest.fixture(scope="module", params=["minibroker", "tansu"])
def txn_broker(request):
    """The broker of this module's transaction tests: its kind (for :func:`broker_gap`),
    ``bootstrap_servers``, and ``session`` settings for consumer group members."""
    fixture, session = _BROKERS[request.param]
    return TxnBroker(request.param, request.getfixturevalue(fixture).bootstrap_servers, session)


class TxnBroker:
    """Which broker, where to connect, and the session settings of group members there."""

    def __init__(self, kind: str, bootstrap_servers: str, session: dict) -> None:
        self.kind = kind
        self.bootstrap_servers = bootstrap_servers
        self.session = session


def broker_gap(request, broker, kind: str, reason: str) -> None:
    """Mark the running test a strict xfail when it runs against ``kind``: a gap of that
    broker (named in ``reason``), not of kproto; the test states Kafka's behaviour."""
    if broker.kind == kind:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=f"{kind} gap: {reason}"))
