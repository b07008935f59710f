"""Fixtures for tests of a whole MiniCluster: a fresh cluster per test (function scope),
with and without racks, on the cluster's test-friendly defaults (failover within
about 400 ms). Each test waits for the states it needs (``wait_for_isr``,
``wait_for_leader``); none sleeps."""

import threading

import pytest

from minibroker.cluster import MiniCluster


@pytest.fixture
def cluster3(tmp_path):
    """Three brokers, their data under the test's tmp_path (kept for a post-mortem)."""
    before = set(threading.enumerate())
    with MiniCluster(brokers=3, data_dir=tmp_path / "cluster") as cluster:
        yield cluster
    leaked = [t for t in threading.enumerate() if t not in before and t.name.startswith("minicluster")]
    assert not leaked, f"threads left running: {leaked}"


@pytest.fixture
def cluster3_racks(tmp_path):
    """Three brokers on racks a, b, c."""
    with MiniCluster(brokers=3, racks=["a", "b", "c"], data_dir=tmp_path / "cluster") as cluster:
        yield cluster
