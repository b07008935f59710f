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
    # PySpark's Python processes run `python3` from PATH unless told: this interpreter, as
    # an activated environment would give them.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert "rows 5 5" in done.stdout, done.stderr[-4000:]


def test_a_development_install_needs_no_register_call_either(tmp_path):
    """Issue 11 item B: after `pip install -e .` PySpark's scan of top-level modules did not
    see pyspark_kproto (setuptools' editable finder hides it), so format("kproto") failed with
    DATA_SOURCE_NOT_FOUND unless kproto.spark.register(spark) was called.

    A venv of its own, seeing this environment's dependencies but no kproto, gets
    `pip install -e .` of a copy of the checkout; the script then runs, as a user would, in
    that venv from another directory."""
    from tests.test_install import fresh_clone

    clone = fresh_clone(tmp_path / "clone")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    venv_python = venv / "bin" / "python"
    # This environment's packages (pyspark, setuptools...) as a plain path entry: its .pth
    # files, an editable kproto among them, are not run.
    site = subprocess.run([str(venv_python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    Path(site, "deps.pth").write_text(deps + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(KPROTO_NO_EXTENSIONS="1",  # the twin: no compiling; the codec is not the point here
               VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv_python), "install", "-q", "-e", ".",
                              "--no-build-isolation", "--no-deps", "--no-index"], cwd=clone, env=env,
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-3000:]
    done = subprocess.run([str(venv_python), "-c", SCRIPT, str(tmp_path / "data")], env=env, capture_output=True,
                          text=True, timeout=240, cwd=tmp_path)
    assert "rows 5 5" in done.stdout, [line for line in done.stderr.splitlines() if "Exception" in line][:3]
