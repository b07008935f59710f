"""A Spark standalone cluster on loopback for tests, started from pyspark's own ``spark-class``.

:func:`standalone_cluster` starts a Master (``org.apache.spark.deploy.master.Master``) on
127.0.0.1 and an ephemeral port, reads the URL it took from its log (``Starting Spark
master at spark://...``), starts one Worker with the cores and memory given, waits until
the Master has it (``Successfully registered with master`` in the Worker's log), and
yields a :class:`Standalone`. Each daemon runs in a session of its own; on the way out,
whatever happened, each process group gets SIGTERM (the Worker kills its executors and
their Python workers, which are in its group), then SIGKILL after a bound, and the test
waits until no process of either group is left: no JVM outlives the block.

Everything listens on 127.0.0.1 only: ``SPARK_LOCAL_IP`` binds the RPC endpoints and the
web UIs (ephemeral ports) to it, and the Master's REST submission server, which would take
the fixed port 6066, is off. :func:`listening` lists what a process tree listens on, so
that a test can check it (:func:`not_loopback`).

Executors run ``PYSPARK_PYTHON`` (this interpreter) with this checkout first on
``PYTHONPATH`` (:func:`tests.support.process.child_env`), so that they import the kproto
under test, not an installed one.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.process import child_env

__all__ = ["Standalone", "descendants", "listening", "not_loopback", "spark_env", "standalone_cluster"]

START_TIMEOUT = 90.0  # seconds for a daemon to say it is up: a JVM start on two loaded cores
STOP_TIMEOUT = 20.0
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_REGISTERED = "Successfully registered with master"


@dataclass(frozen=True)
class Standalone:
    """A running standalone cluster: its master URL and its daemons, for a test's checks."""

    master_url: str
    master: subprocess.Popen
    worker: subprocess.Popen
    env: dict[str, str]  # what a driver process needs too (SPARK_LOCAL_IP, PYSPARK_PYTHON, PYTHONPATH)
    logs: Path


def spark_home() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of the daemons and of a driver: loopback only, this interpreter, this checkout."""
    return child_env(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                     **extra)


def _wait_for(log: Path, proc: subprocess.Popen, pattern: re.Pattern[str] | str, what: str) -> re.Match[str] | str:
    """Poll ``log`` until ``pattern`` appears; fail when ``proc`` exits or after START_TIMEOUT."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        text = log.read_text(errors="replace")
        found = pattern.search(text) if isinstance(pattern, re.Pattern) else (pattern if pattern in text else None)
        if found:
            return found
        if proc.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {proc.returncode}" if proc.poll() is not None else f"not up in {START_TIMEOUT:g} s"
            raise RuntimeError(f"the Spark {what} {state}; its log ({log}):\n{text[-3000:]}")
        time.sleep(0.1)


def _daemon(cls: str, args: Iterable[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:  # spark-class execs java: the pid is the JVM's
        return subprocess.Popen([os.path.join(spark_home(), "bin", "spark-class"), cls, *args], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pgid: int, proc: subprocess.Popen, timeout: float) -> bool:
    """Whether no process of group ``pgid`` is left within ``timeout`` (the leader reaped as it exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc.poll()
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the daemon's process group (itself, its executors, their Python workers), then SIGKILL.

    Raises:
        RuntimeError: a process of the group outlived SIGKILL.
    """
    pgid = proc.pid  # start_new_session: the daemon leads its group
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        if _gone(pgid, proc, STOP_TIMEOUT):
            break
    else:
        raise RuntimeError(f"processes of the Spark daemon {proc.pid}'s group outlived SIGKILL")
    proc.wait(STOP_TIMEOUT)


@contextmanager
def standalone_cluster(logs: Path, cores: int = 2, memory: str = "1g") -> Iterator[Standalone]:
    """A Master and one Worker on 127.0.0.1 (see the module docstring); both stopped on the way out.

    Raises:
        RuntimeError: a daemon exited or did not come up within START_TIMEOUT (its log quoted).
    """
    logs.mkdir(parents=True, exist_ok=True)
    env = spark_env(
        SPARK_DAEMON_MEMORY="256m",
        # C1 only: the daemons and a test's short job end before C2's compiles pay off.
        SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1",
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
        SPARK_CONF_DIR=str(logs),  # no spark-defaults.conf or spark-env.sh of the machine's
        SPARK_WORKER_DIR=str(logs / "work"),
    )
    with ExitStack() as stack:
        master_log = logs / "master.log"
        master = _daemon("org.apache.spark.deploy.master.Master",
                         ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"], env, master_log)
        stack.callback(_stop, master)
        url = _wait_for(master_log, master, _MASTER_URL, "master")[1]
        worker_log = logs / "worker.log"
        worker = _daemon("org.apache.spark.deploy.worker.Worker",
                         ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", str(cores),
                          "--memory", memory, "--work-dir", str(logs / "work"), url], env, worker_log)
        stack.callback(_stop, worker)  # stopped first: its executors go with it
        _wait_for(worker_log, worker, _REGISTERED, "worker")
        yield Standalone(master_url=url, master=master, worker=worker,
                         env={k: env[k] for k in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYTHONPATH")}, logs=logs)


def descendants(pid: int) -> set[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # gone while we looked
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p not in found:
            found.add(p)
            todo += children.get(p, [])
    return found


def _address(hex_address: str) -> str:
    """/proc/net/tcp{,6}'s local address (little-endian 32-bit words) as text."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listening(pids: Iterable[int]) -> dict[int, list[tuple[str, int]]]:
    """Per process, the TCP sockets it listens on as ``(address, port)``."""
    inodes: dict[str, int] = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes[link[8:-1]] = pid
    found: dict[int, list[tuple[str, int]]] = {}
    for table in ("tcp", "tcp6"):
        with open(f"/proc/net/{table}") as f:
            rows = f.read().splitlines()[1:]
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # TCP_LISTEN
                host, port = local.split(":")
                found.setdefault(inodes[inode], []).append((_address(host), int(port, 16)))
    return found


def not_loopback(pids: Iterable[int]) -> dict[int, list[tuple[str, int]]]:
    """What of :func:`listening` is bound to an address other than loopback (0.0.0.0 and :: among them)."""
    def loopback(address: str) -> bool:
        ip = ipaddress.ip_address(address)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_loopback

    bad = {pid: [a for a in addresses if not loopback(a[0])] for pid, addresses in listening(pids).items()}
    return {pid: addresses for pid, addresses in bad.items() if addresses}
