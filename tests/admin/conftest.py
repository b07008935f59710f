"""Tests of kproto.admin: none may leave a kproto thread or a socket behind."""

from tests.minibroker.cluster.conftest import cluster3, cluster4  # noqa: F401  (MiniCluster fixtures)
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)
