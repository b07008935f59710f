"""One local[2] SparkSession for every Spark test, and its JVM shut down at the end;
a minibroker per test module (``broker``, tests/conftest.py); a Spark standalone cluster
on loopback for a test that needs one (``spark_standalone``, tests/spark/standalone.py).

Skipped without pyspark (``pip install kproto[spark]``) or without Java. Spark's JVM
is a child process that outlives ``SparkSession.stop()`` (py4j keeps it for the next
session), so the fixture also shuts the gateway down and waits for the process: a test
run leaves no JVM behind.
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest

if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kproto-tests")
        .config("spark.ui.enabled", "false")
        # The driver's RPC and block manager listen on the host's address by default: tests
        # keep every listener on loopback.
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={tmp_path_factory.mktemp('jvm-tmp')}")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        gateway = SparkContext._gateway
        if gateway is not None:
            process = getattr(gateway, "proc", None)
            gateway.shutdown()
            if process is not None:
                process.stdin.close()  # the gateway server exits when its stdin closes
                process.wait(30)
            SparkContext._gateway = None
            SparkContext._jvm = None


@pytest.fixture
def spark_standalone(tmp_path):
    """A standalone Master and Worker (2 cores, 1 GB) on 127.0.0.1, from pyspark's own
    ``spark-class``; both killed after the test with every executor, whatever happened."""
    from tests.spark.standalone import standalone_cluster

    with standalone_cluster(tmp_path / "spark") as cluster:
        yield cluster
