"""pytest fixtures that give a test suite a real Kafka-compatible broker: minibroker.

Installed with its package, it loads by itself as the ``minibroker`` plugin (a ``pytest11``
entry point; ``-p minibroker`` names it). Where the entry point is not installed, or with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, enable it with ``-p minibroker.pytest_plugin``; not
both, as pytest refuses one module registered under two names.

Each broker is on 127.0.0.1 and an ephemeral port, with Kafka's defaults (topics are
auto-created with one partition) and its logs in memory, unless ``minibroker_config``
says otherwise.

Fixtures:

- ``kafka_broker``: a fresh broker for one test, stopped after it.
- ``kafka_bootstrap_servers``: that broker's ``"host:port"``.
- ``kafka_broker_module``: one broker shared by the tests of one module.
- ``kafka_broker_session``: one broker shared by the whole session.
- ``minibroker_config``: the broker settings every broker starts with (Kafka's names, as
  ``MiniBroker(config=...)`` takes them); ``{}`` here. Override it in a ``conftest.py``
  (or a test module) to configure the brokers: ``{"num.partitions": 3}``, or
  ``{"log.dirs": path}`` to keep their logs on disk. It is session-scoped so that
  ``kafka_broker_session`` can use it; an override of narrower scope configures only the
  brokers of that scope or narrower: module scope, ``kafka_broker_module`` and
  ``kafka_broker``; function scope (one that uses ``tmp_path`` for a data directory per
  test, say), ``kafka_broker`` only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from minibroker import MiniBroker, MiniCluster

__all__ = ["kafka_bootstrap_servers", "kafka_broker", "kafka_broker_module", "kafka_broker_session",
           "kafka_cluster", "kafka_cluster_bootstrap_servers", "minibroker_config", "minicluster_brokers",
           "minicluster_config"]


@pytest.fixture(scope="session")
def minibroker_config() -> Mapping[str, Any]:
    """Broker settings for every broker fixture of this plugin: none here.

    Override this fixture to configure them, with Kafka's names (see
    :class:`minibroker.MiniBroker`), e.g. in ``conftest.py``::

        @pytest.fixture(scope="session")
        def minibroker_config():
            return {"num.partitions": 3}
    """
    return {}


@pytest.fixture
def kafka_broker(minibroker_config: Mapping[str, Any]) -> Iterator[MiniBroker]:
    """A fresh, started minibroker for this test only, stopped after it.

    Started with ``minibroker_config``. No topics exist at first; unknown topics are
    auto-created (with one partition by default). Connect with
    ``kafka_broker.bootstrap_servers`` (or use ``kafka_bootstrap_servers``).
    """
    with MiniBroker(config=minibroker_config) as broker:
        yield broker


@pytest.fixture
def kafka_bootstrap_servers(kafka_broker: MiniBroker) -> str:
    """``"host:port"`` of this test's fresh ``kafka_broker``, for ``bootstrap.servers``."""
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="module")
def kafka_broker_module(minibroker_config: Mapping[str, Any]) -> Iterator[MiniBroker]:
    """One started minibroker shared by the tests of one module, stopped after its last test.

    Started with ``minibroker_config``; a module-scoped override of it in the module
    configures this module's broker only. Tests of the module share its topics and
    records, so give each test its own topic names; the next module gets a fresh broker.
    """
    with MiniBroker(config=minibroker_config) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_broker_session(minibroker_config: Mapping[str, Any]) -> Iterator[MiniBroker]:
    """One started minibroker shared by every test of the session, stopped at its end.

    Started with ``minibroker_config``. Cheaper than ``kafka_broker`` but shared: topics
    and records written by one test are seen by the next, so give each test its own
    topic names.
    """
    with MiniBroker(config=minibroker_config) as broker:
        yield broker


@pytest.fixture(scope="session")
def minicluster_brokers() -> int:
    """How many brokers ``kafka_cluster`` starts: 3 here. Override this fixture to change it."""
    return 3


@pytest.fixture(scope="session")
def minicluster_config() -> Mapping[str, Any]:
    """Broker settings for every broker of ``kafka_cluster``: none here (the cluster's own
    test-friendly defaults apply, see :class:`minibroker.MiniCluster`).

    Override this fixture to configure them, with Kafka's names, e.g.::

        @pytest.fixture(scope="session")
        def minicluster_config():
            return {"min.insync.replicas": 2, "default.replication.factor": 3}
    """
    return {}


@pytest.fixture
def kafka_cluster(minicluster_brokers: int, minicluster_config: Mapping[str, Any]) -> Iterator[MiniCluster]:
    """A fresh, started MiniCluster for this test only, stopped after it.

    ``minicluster_brokers`` brokers (3 by default), started with ``minicluster_config``,
    every one registered and unfenced. Connect with ``kafka_cluster.bootstrap_servers``;
    ``kafka_cluster.kill(node_id)``, ``restart``, ``leader_of`` and ``wait_for_leader``
    play and watch failures.
    """
    with MiniCluster(brokers=minicluster_brokers, config=minicluster_config) as cluster:
        yield cluster


@pytest.fixture
def kafka_cluster_bootstrap_servers(kafka_cluster: MiniCluster) -> str:
    """``"host:port,host:port,..."`` of this test's fresh ``kafka_cluster``, every broker."""
    return kafka_cluster.bootstrap_servers
