"""format("kproto") and format("kafka-log") work with no register call: PySpark finds the
top-level pyspark_kproto / pyspark_kproto_log modules kproto installs.

Runs in a fresh process with the checkout on PYTHONPATH, as an installed kproto puts the
modules on the path (an editable install hides them from PySpark's module scan).
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    from kproto import Producer
    from minibroker import MiniBroker

    with MiniBroker(data_dir=sys.argv[1]) as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
            for i in range(5):
                producer.send("auto", b"v%d" % i, partition=0)
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "1").getOrCreate())
        try:
            kafka = (spark.read.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                     .option("subscribe", "auto").load())
            segments = spark.read.format("kafka-log").load(sys.argv[1])
            print("rows", kafka.count(), segments.count())
        finally:
            spark.stop()
""")


def test_both_formats_need_no_register_call(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert "rows 5 5" in done.stdout, done.stderr[-4000:]
