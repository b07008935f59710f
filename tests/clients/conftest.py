"""Fixtures of the client-side transaction tests (issue 14).

``txn_broker`` is the one place that says which broker they run against: Tansu for now
(its transaction coordinator, checked with confluent-kafka first); ``"minibroker"`` is
added to its params once minibroker has a transaction coordinator. A test that meets a
gap of one broker marks only that case with :func:`broker_gap`.
"""

import pytest

from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)

# param -> the fixture (tests/conftest.py) that starts that broker
_BROKERS = {"tansu": "tansu_broker", "minibroker": "broker"}


@pytest.fixture(scope="module", params=["tansu"])
def txn_broker(request):
    """The broker of this module's transaction tests (anything with ``bootstrap_servers``)."""
    return _Named(request.param, request.getfixturevalue(_BROKERS[request.param]).bootstrap_servers)


class _Named:
    """The broker's kind (for :func:`broker_gap`) and where to connect."""

    def __init__(self, kind: str, bootstrap_servers: str) -> None:
        self.kind = kind
        self.bootstrap_servers = bootstrap_servers


def broker_gap(request, broker, kind: str, reason: str) -> None:
    """Mark the running test a strict xfail when it runs against ``kind``: a gap of that
    broker (named in ``reason``), not of kproto; the test states Kafka's behaviour."""
    if broker.kind == kind:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=f"{kind} gap: {reason}"))
