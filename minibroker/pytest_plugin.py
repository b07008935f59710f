"""pytest fixtures that give a test suite a real Kafka-compatible broker: minibroker.

Installed with its package, it loads by itself as the ``minibroker`` plugin (a ``pytest11``
entry point; ``-p minibroker`` names it). Where the entry point is not installed, or with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, enable it with ``-p minibroker.pytest_plugin``; not
both, as pytest refuses one module registered under two names.

Each broker is in memory, on 127.0.0.1 and an ephemeral port, with Kafka's defaults
(topics are auto-created with one partition).

Fixtures:

- ``kafka_broker``: a fresh broker for one test, stopped after it.
- ``kafka_bootstrap_servers``: that broker's ``"host:port"``.
- ``kafka_broker_session``: one broker shared by the whole session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker import MiniBroker

__all__ = ["kafka_bootstrap_servers", "kafka_broker", "kafka_broker_session"]


@pytest.fixture
def kafka_broker() -> Iterator[MiniBroker]:
    """A fresh, started minibroker for this test only, stopped after it.

    No topics exist at first; unknown topics are auto-created with one partition.
    Connect with ``kafka_broker.bootstrap_servers`` (or use ``kafka_bootstrap_servers``).
    """
    with MiniBroker() as broker:
        yield broker


@pytest.fixture
def kafka_bootstrap_servers(kafka_broker: MiniBroker) -> str:
    """``"host:port"`` of this test's fresh ``kafka_broker``, for ``bootstrap.servers``."""
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_broker_session() -> Iterator[MiniBroker]:
    """One started minibroker shared by every test of the session, stopped at its end.

    Cheaper than ``kafka_broker`` but shared: topics and records written by one test
    are seen by the next, so give each test its own topic names.
    """
    with MiniBroker() as broker:
        yield broker
