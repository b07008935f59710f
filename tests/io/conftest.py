"""Tests of kproto.io: none may leave a kproto thread or a socket behind."""

from tests.minibroker.cluster.conftest import cluster3  # noqa: F401  (a MiniCluster fixture)
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)
