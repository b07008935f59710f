"""One MiniCluster broker in a process of its own: the entry point, and the parent's handle.

``MiniCluster(brokers=3, processes=True)`` runs each broker as::

    python -m minibroker.cluster.process --node-id 1 --port 0 --controller 127.0.0.1:PORT \\
        --config '{"broker.id": 1, "log.dirs": "...", ...}' --parent-pid PID

with the controller endpoint's secret in its environment (``MINIBROKER_CONTROLLER_SECRET``,
:data:`~minibroker.cluster.controller_server.SECRET_ENV`): it authenticates to the
endpoint with it (SASL PLAIN).

The process runs a :class:`~minibroker.cluster.node.ClusterNode`, unchanged, whose quorum
is the wire face of the parent's (:class:`~minibroker.cluster.remote.RemoteQuorum`): it
registers, fetches the metadata and heartbeats over the controller endpoint
(:class:`~minibroker.cluster.controller_server.ControllerServer`). SIGTERM (or SIGINT) is a
controlled shutdown; SIGKILL is the crash that kill -9 tests want. The process dies with
its parent (Linux's ``PR_SET_PDEATHSIG``, and a check of the parent's pid), so a parent
killed in turn leaves no broker behind. (Linux sends that signal when the *thread* that
spawned the process ends: MiniCluster spawns from its event loop's thread, which runs
until the cluster has stopped every broker.)

:class:`BrokerProcess` is the parent's side: it spawns the process (this interpreter, the
same ``minibroker`` on ``PYTHONPATH``), knows it registered when the endpoint accepted its
registration (which also says the port it bound), and kills, stops and always reaps it.
It has the attributes a MiniCluster reads of an in-process node (``node_id``, ``host``,
``port``, ``config``, ``alive``, ``broker_epoch``) plus ``pid``. A broker's output (its
log lines, a traceback if it cannot start) goes to ``<data_dir>/broker-<id>.out``.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from minibroker.cluster.controller_server import SECRET_ENV, ControllerServer, broker_sasl
from minibroker.cluster.node import ClusterNode
from minibroker.cluster.remote import RemoteQuorum
from minibroker.config import BrokerConfig

__all__ = ["BrokerProcess", "main"]

log = logging.getLogger("minibroker.cluster")

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the directory holding this minibroker
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# -- the broker's side -------------------------------------------------------------------------


def _die_with(parent_pid: int) -> None:
    """SIGKILL this process when its parent dies (Linux); elsewhere the pid check only."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _dump_tasks() -> None:
    """SIGUSR1: every task's stack on stderr (the parent asks before it kills a broker
    that did not stop in time, so that its output says where it hung)."""
    for task in asyncio.all_tasks():
        task.print_stack(file=sys.stderr)
    sys.stderr.flush()


async def _run(node_id: int, port: int, controller: tuple[str, int], config: BrokerConfig, secret: str) -> None:
    quorum = RemoteQuorum(controller[0], controller[1], node_id=node_id, config=config, sasl=broker_sasl(secret))
    node = ClusterNode(node_id=node_id, config=config, quorum=quorum, port=port)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    loop.add_signal_handler(signal.SIGUSR1, _dump_tasks)
    try:
        await node.start()
        log.info("broker %d running on port %d, pid %d", node_id, node.port, os.getpid())
        await stopping.wait()
        await node.stop()
    finally:
        await quorum.close()


def main(argv: Sequence[str] | None = None) -> int:
    """The broker process's entry point (see the module docstring); 0 after a controlled
    shutdown."""
    parser = argparse.ArgumentParser(prog="python -m minibroker.cluster.process",
                                     description="one broker of a MiniCluster(processes=True)")
    parser.add_argument("--node-id", type=int, required=True)
    parser.add_argument("--port", type=int, default=0, help="0: any free port (the registration says which)")
    parser.add_argument("--controller", required=True, help="HOST:PORT of the controller endpoint")
    parser.add_argument("--config", required=True, help="the broker's config, a JSON object")
    parser.add_argument("--parent-pid", type=int, help="exit with this process")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        _die_with(args.parent_pid)
    logging.basicConfig(level=args.log_level, format=f"%(asctime)s broker-{args.node_id} %(levelname)s "
                                                     "%(name)s: %(message)s")
    secret = os.environ.pop(SECRET_ENV, None)  # the endpoint's password, not for the broker's children
    if not secret:
        parser.error(f"{SECRET_ENV} is not set: the controller endpoint's secret comes in the environment")
    host, _, port = args.controller.rpartition(":")
    asyncio.run(_run(args.node_id, args.port, (host, int(port)), BrokerConfig(json.loads(args.config)), secret))
    return 0


# -- the parent's side ---------------------------------------------------------------------------


class BrokerProcess:
    """The parent's handle on one broker process (see the module docstring).

    Args:
        node_id: the broker's id.
        settings: its broker config (JSON-able values), as given to the process.
        endpoint: the controller endpoint it registers with.
        output: the file its output is appended to.
        port: the port to bind (0: any; the registration tells which).
    """

    def __init__(self, *, node_id: int, settings: Mapping[str, Any], endpoint: ControllerServer, output: Path,
                 port: int = 0):
        self.node_id = node_id
        self.settings = dict(settings)
        self.config = BrokerConfig(self.settings)
        self.endpoint = endpoint
        self.output = output
        self.host = "127.0.0.1"
        self.port = port
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        """Spawned, registered, and not exited."""
        return self._proc is not None and self._proc.poll() is None and self.node_id in self.endpoint.registered

    @property
    def broker_epoch(self) -> int:
        """The epoch of this process's registration (-1 before it registered)."""
        return self.endpoint.registered.get(self.node_id, -1)

    def _spawn(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
        env[SECRET_ENV] = self.endpoint.secret  # not on the command line: /proc/<pid>/cmdline is anyone's
        level = logging.getLevelName(log.getEffectiveLevel())
        command = [sys.executable, "-m", "minibroker.cluster.process", "--node-id", str(self.node_id),
                   "--port", str(self.port), "--controller", f"{self.endpoint.host}:{self.endpoint.port}",
                   "--config", json.dumps(self.settings), "--parent-pid", str(os.getpid()), "--log-level", level]
        with open(self.output, "ab") as out:
            self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          env=env, close_fds=True)
        self.pid = self._proc.pid

    async def start(self, timeout: float = 30.0) -> None:
        """Spawn the process and wait until the controller accepted its registration.

        Raises:
            RuntimeError: it exited first (the message has the end of its output).
            TimeoutError: it did not register within ``timeout`` seconds (it is killed).
        """
        if self._proc is not None and self._proc.poll() is None:
            raise RuntimeError(f"broker {self.node_id} is already running (pid {self.pid})")
        self.endpoint.registered.pop(self.node_id, None)
        self.endpoint.endpoints.pop(self.node_id, None)
        self._spawn()
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while self.node_id not in self.endpoint.registered:
            if self._proc.poll() is not None:
                code, pid = self._proc.returncode, self.pid
                await self._reap()
                raise RuntimeError(f"broker {self.node_id} (pid {pid}) exited with {code} before it registered:"
                                   f"\n{self._tail()}")
            if time.monotonic() > deadline:
                pid = self.pid
                await self.kill()
                raise TimeoutError(f"broker {self.node_id} (pid {pid}) did not register within {timeout} s:"
                                   f"\n{self._tail()}")
            await asyncio.sleep(0.01)
        self.port = self.endpoint.endpoints[self.node_id][1]

    def _tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.output.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"

    async def _reap(self, timeout: float | None = None) -> bool:
        """Wait for the process to exit (without blocking the loop); whether it did."""
        proc = self._proc
        if proc is None:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while proc.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        self._proc, self.pid = None, None
        self.endpoint.registered.pop(self.node_id, None)
        return True

    async def kill(self) -> None:
        """SIGKILL, and reap it. Its sockets are closed by the kernel (peers see resets),
        nothing of its is flushed; the controller notices when its session expires."""
        if self._proc is None:
            return
        try:
            self._proc.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass
        await self._reap()

    async def stop(self, timeout: float = 10.0) -> None:
        """Controlled shutdown (SIGTERM), reaped; SIGKILL if it takes over ``timeout`` seconds."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        if not await self._reap(timeout):
            log.warning("broker %d (pid %d) did not stop within %s s: killed (its tasks are in %s)", self.node_id,
                        self.pid, timeout, self.output)
            self._proc.send_signal(signal.SIGUSR1)
            await self._reap(0.5)
            await self.kill()


if __name__ == "__main__":
    sys.exit(main())
