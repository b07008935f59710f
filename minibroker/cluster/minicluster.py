"""MiniCluster: several brokers, a controller with failover, and replication, in one process
(or a process per broker).

Sync users get the cluster on a background thread with its own event loop (as
:class:`~minibroker.MiniBroker`)::

    with MiniCluster(brokers=3, config={"min.insync.replicas": 2}) as cluster:
        cluster.create_topic("t", partitions=3, replication_factor=3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        cluster.kill(cluster.leader_of("t", 0))

Async users run it in their own loop (``async with MiniCluster(3) as cluster``) and use
the ``*_async`` methods. Every broker and the controller share that one loop (the cluster
design, 1.1): controller calls are plain calls, and a kill is deterministic.

Test-friendly defaults, each overridable through ``config`` (Kafka's own default in
brackets): ``broker.heartbeat.interval.ms`` 50 [2000], ``broker.session.timeout.ms`` 250
[9000], ``controller.quorum.fetch.timeout.ms`` 300 [2000], ``replica.lag.time.max.ms``
1000 [30000], ``replica.fetch.wait.max.ms`` 100 [500], ``replica.fetch.backoff.ms`` 50
[1000], ``offsets.topic.replication.factor`` min(3, brokers) [3]. So a killed leader is
replaced within about 400 ms. ``auto.leader.rebalance.enable`` is Kafka's (true) with
Kafka's ``leader.imbalance.check.interval.seconds`` (300): a restarted preferred leader
gets its leadership back after minutes, or at once through ElectLeaders; give the
interval 1 to see it within about a second.

Listeners and security (issue 15). ``config["listeners"]`` gives every broker the same
named listeners (each port 0: a broker binds its own ports, kept across restarts), with
``listener.security.protocol.map`` and the TLS and SASL settings of a single
:class:`~minibroker.MiniBroker`. Each broker registers every listener with the
controller (as Kafka's BrokerRegistration does), and a client is told each broker's
address on the listener it came in on; :meth:`MiniCluster.bootstrap_servers_for` gives
its bootstrap. The brokers reach each other on ``inter.broker.listener.name`` (default:
the listener named after ``security.inter.broker.protocol``, PLAINTEXT, as Kafka), with
its TLS and SASL when it has them: each broker is a client of that listener with the
settings :mod:`minibroker.cluster.security` reads (``ssl.truststore.*``, its keystore,
``sasl.mechanism.inter.broker.protocol`` and the JAAS config's ``username``/``password``),
and its principal belongs in ``super.users`` when the authorizer is on, as in Kafka.
SCRAM users are the cluster's (UserScramCredentialRecord through the controller)::

    config = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
              "ssl.keystore.location": "server.pem"}
    with MiniCluster(3, config=config) as cluster:
        clients_bootstrap = cluster.bootstrap_servers_for("SASL_SSL")

``MiniCluster(brokers=3, processes=True)`` runs each broker in a process of its own
(:mod:`minibroker.cluster.process`): ``kill`` is a real SIGKILL, ``brokers[i].pid`` the
process. The controller quorum stays in this process behind a port of its own
(:mod:`minibroker.cluster.controller_server`), which the brokers reach with Kafka's
broker-to-controller RPCs (:mod:`minibroker.cluster.remote`); the active controller is
still the lowest live broker's, as in process. Starting costs an interpreter start per
broker (side by side).

Every fault (:meth:`MiniCluster.kill`, :meth:`MiniCluster.restart`,
:meth:`MiniCluster.isolate`, :meth:`MiniCluster.heal`, :meth:`MiniCluster.slow_disk`, and
each request control added or removed) logs one INFO line on the ``minibroker.cluster``
logger saying what changed (leaders moved, ISR shrunk, controller moved) once the
controller has committed it.

Faults besides a crash: :meth:`MiniCluster.isolate` cuts a broker off from the other
brokers (its followers, its leaders, the controller) and/or from clients, as a network
partition does: silence, not resets; :meth:`MiniCluster.requests` gives a broker's request
controls (delay, fail, drop or hold requests by API key: :mod:`minibroker.faults`);
:meth:`MiniCluster.slow_disk` makes its log writes slow; :meth:`MiniCluster.heal` ends
them all::

    cluster.isolate(cluster.leader_of("t", 0))        # returns once the leader moved
    cluster.requests(1).control(ApiKey.FETCH, Delay(0.5))
    cluster.heal()
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kproto.errors import for_code
from minibroker.background import BackgroundLoop
from minibroker.cluster.api import NewTopic
from minibroker.cluster.controller_server import ControllerServer
from minibroker.cluster.metadata import MetadataImage, MetadataLog, PartitionRegistration
from minibroker.cluster.node import ClusterNode, monotonic_ms
from minibroker.cluster.process import BrokerProcess
from minibroker.cluster.quorum import Quorum
from minibroker.cluster.security import inter_broker_client
from minibroker.config import BrokerConfig, Listener
from minibroker.faults import RequestControls

__all__ = ["ClusterBroker", "MiniCluster", "MINICLUSTER_DEFAULTS"]

log = logging.getLogger("minibroker.cluster")

T = TypeVar("T")

#: The MiniCluster's own defaults (see the module docstring); ``offsets.topic.replication.factor``
#: is capped at the number of brokers on top of these.
MINICLUSTER_DEFAULTS: dict[str, Any] = {
    "broker.heartbeat.interval.ms": 50,
    "broker.session.timeout.ms": 250,
    "controller.quorum.fetch.timeout.ms": 300,
    "replica.lag.time.max.ms": 1000,
    "replica.fetch.wait.max.ms": 100,
    "replica.fetch.backoff.ms": 50,
}

# The cluster's own: where each broker listens and keeps its logs, and its id and rack.
_RESERVED = {
    "broker.id": "node ids are 0..n-1",
    "node.id": "node ids are 0..n-1",
    "advertised.listeners": "each broker advertises its listeners' bound addresses",
    "log.dirs": "use data_dir=",
    "broker.rack": "use racks=",
}


@dataclass(frozen=True, slots=True)
class ClusterBroker:
    """One broker of a MiniCluster as a test sees it."""

    node_id: int
    host: str
    port: int
    rack: str | None
    data_dir: Path
    alive: bool
    pid: int | None = None
    """The broker's process (this one's in process; None for a process not running)."""

    @property
    def bootstrap_servers(self) -> str:
        """This broker alone, as a ``bootstrap.servers`` value."""
        return f"{self.host}:{self.port}"


class MiniCluster:
    """A cluster of ``brokers`` minibrokers with a controller, replicating over loopback.

    Args:
        brokers: how many; node ids are ``0..brokers-1``.
        racks: one ``broker.rack`` per broker (placement spreads replicas over racks), or None.
        data_dir: where brokers keep their logs (``broker-<id>/``, Kafka's layout) and the
            cluster its metadata (``metadata/``); None: a temporary directory removed at
            stop. A directory given is reused by a later cluster (same topics, records).
        config: broker configs for every broker, under Kafka's names; ``broker.id``,
            ``node.id``, ``advertised.listeners``, ``log.dirs`` and ``broker.rack`` are the
            cluster's own and refused. ``listeners`` (each port 0) applies to every broker,
            with its TLS and SASL settings; see :meth:`bootstrap_servers_for`.
        broker_configs: per-broker overrides, ``{node_id: {...}}``.
        processes: run each broker in a process of its own (``kill`` is a real SIGKILL);
            the controller quorum stays in this process, served on a port (see
            :mod:`minibroker.cluster.process`).

    Raises:
        ValueError: a refused or invalid config key, or ``racks`` not one per broker.
    """

    def __init__(self, brokers: int = 3, racks: Iterable[str] | None = None,
                 data_dir: str | os.PathLike[str] | None = None, config: Mapping[str, Any] | None = None,
                 broker_configs: Mapping[int, Mapping[str, Any]] | None = None, processes: bool = False):
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, not {brokers}")
        self._racks = list(racks) if racks is not None else None
        if self._racks is not None and len(self._racks) != brokers:
            raise ValueError(f"racks= has {len(self._racks)} entries for {brokers} brokers: give one per broker")
        for key in [*(config or {}), *(k for c in (broker_configs or {}).values() for k in c)]:
            if key in _RESERVED:
                raise ValueError(f"config {key!r} is the cluster's own: {_RESERVED[key]}")
        for node_id in broker_configs or {}:
            if not 0 <= node_id < brokers:
                raise ValueError(f"broker_configs names broker {node_id}; node ids are 0..{brokers - 1}")
        self.size = brokers
        settings: dict[str, Any] = {**MINICLUSTER_DEFAULTS,
                                    "offsets.topic.replication.factor": min(3, brokers), **(config or {})}
        self._settings = settings
        self._broker_settings = {i: dict((broker_configs or {}).get(i, {})) for i in range(brokers)}
        self.config = BrokerConfig(settings)  # validated now: a bad key fails here, not in the thread
        self._listeners = self._check_listeners(self.config)
        for i in range(brokers):
            self._node_config(i, Path("."))
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self.data_dir: Path | None = None
        self.quorum: Quorum | None = None
        self._nodes: list[ClusterNode | BrokerProcess] = []
        self._quorum_task: asyncio.Task[None] | None = None
        self._background = BackgroundLoop("minicluster", "cluster")
        self.processes = processes
        self._endpoint: ControllerServer | None = None  # the Quorum's port (processes=True)

    @staticmethod
    def _check_listeners(config: BrokerConfig) -> list[Listener]:
        """The listeners of every broker (``listeners``, each port 0: every broker binds its
        own), and the inter-broker one checked (see :meth:`bootstrap_servers_for`).

        Raises:
            ValueError: a fixed port; an inter-broker listener that is none of them, or
                whose TLS/SASL settings the brokers cannot connect with
                (:func:`~minibroker.cluster.security.inter_broker_client`).
        """
        if any(listener.port != 0 for listener in config.listeners):
            raise ValueError(f"listeners {config['listeners']}: a MiniCluster's listeners take port 0 "
                             "(each broker binds its own ports, kept across restarts)")
        config.check_inter_broker_listener()
        inter_broker_client(config)  # the brokers' own TLS/SASL settings, checked before any starts
        return [Listener(listener.host or "127.0.0.1", 0, listener.name) for listener in config.listeners]

    def _node_settings(self, node_id: int, data_dir: Path, ports: Mapping[str, int] | None = None) -> dict[str, Any]:
        """``ports``: each listener's port from an earlier run (a restart binds them again)."""
        listeners = ",".join(str(Listener(listener.host, (ports or {}).get(listener.name, 0), listener.name))
                             for listener in self._listeners)
        settings = {**self._settings, **self._broker_settings[node_id],
                    "broker.id": node_id, "listeners": listeners,
                    "log.dirs": str(data_dir / f"broker-{node_id}")}
        if self._racks is not None:
            settings["broker.rack"] = self._racks[node_id]
        return settings

    def _node_config(self, node_id: int, data_dir: Path, ports: Mapping[str, int] | None = None) -> BrokerConfig:
        return BrokerConfig(self._node_settings(node_id, data_dir, ports))

    def _new_node(self, node_id: int, port: int = 0, ports: Mapping[str, int] | None = None
                  ) -> ClusterNode | BrokerProcess:
        """Broker ``node_id``, not started: in this loop, or (``processes=True``) the handle
        on its process. ``port``/``ports``: the first listener's and every listener's port
        of an earlier run."""
        assert self.data_dir is not None
        if self._endpoint is not None:
            return BrokerProcess(node_id=node_id, settings=self._node_settings(node_id, self.data_dir, ports),
                                 endpoint=self._endpoint, output=self.data_dir / f"broker-{node_id}.out", port=port)
        return ClusterNode(node_id=node_id, config=self._node_config(node_id, self.data_dir, ports),
                           quorum=self._require_quorum(), port=port)

    # -- what a test reads ---------------------------------------------------------------------

    @property
    def brokers(self) -> list[ClusterBroker]:
        """Every broker, by node id, alive or not."""
        if self.data_dir is None:
            raise RuntimeError("the cluster is not started")
        return [ClusterBroker(node_id=n.node_id, host=n.host, port=n.port, rack=n.config["broker.rack"] or None,
                              data_dir=self.data_dir / f"broker-{n.node_id}", alive=n.alive,
                              pid=n.pid if isinstance(n, BrokerProcess) else os.getpid()) for n in self._nodes]

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's ``host:port``, comma-separated (ports stay fixed across restarts)."""
        return ",".join(b.bootstrap_servers for b in self.brokers)

    def bootstrap_servers_for(self, listener: str) -> str:
        """Every broker's ``host:port`` on one listener, by name, comma-separated (as
        :meth:`MiniBroker.bootstrap_servers_for <minibroker.MiniBroker.bootstrap_servers_for>`):
        ``cluster.bootstrap_servers_for("SASL_SSL")``. A client bootstrapping there is told
        that listener's address of every broker (Metadata, FindCoordinator). The brokers'
        registrations with the controller say where each listens; ports stay fixed across
        restarts.

        Raises:
            KeyError: no listener has that name.
            RuntimeError: the cluster is not started.
        """
        name = listener.upper()
        if name not in {existing.name for existing in self._listeners}:
            raise KeyError(f"no listener {listener!r}; the listeners are "
                           f"{', '.join(existing.name for existing in self._listeners)}")
        self._require_quorum()
        image = self._read(self._image)
        out = []
        for node_id in range(self.size):
            registration = image.brokers.get(node_id)
            at = registration.endpoint(name) if registration is not None else None
            if at is not None:
                host = f"[{at[0]}]" if ":" in at[0] else at[0]
                out.append(f"{host}:{at[1]}")
        return ",".join(out)

    @property
    def controller_id(self) -> int:
        """The node hosting the active controller (-1: none, every node is down)."""
        return self._require_quorum().controller_id

    def _require_quorum(self) -> Quorum:
        if self.quorum is None:
            raise RuntimeError("the cluster is not started")
        return self.quorum

    def _image(self) -> MetadataImage:
        """The controller's view of the metadata (replayed from the log when no controller is active)."""
        quorum = self._require_quorum()
        if quorum.controller is not None:
            return quorum.controller.image
        image = MetadataImage()
        entries = quorum.log.read(0)
        if entries:
            image.apply(entries[-1][0], [r for _, r in entries])
        return image

    def _registration(self, topic: str, partition: int) -> PartitionRegistration | None:
        t = self._image().topic_by_name(topic)
        return None if t is None else t.partitions.get(partition)

    def describe(self, topic: str) -> list[PartitionRegistration]:
        """Every partition's registration (replicas, ISR, leader, epochs), by index.

        Raises:
            KeyError: no such topic.
        """
        return self._read(lambda: self._describe(topic))

    def _describe(self, topic: str) -> list[PartitionRegistration]:
        t = self._image().topic_by_name(topic)
        if t is None:
            raise KeyError(f"no topic {topic!r} in the cluster")
        return [t.partitions[i] for i in sorted(t.partitions)]

    def leader_of(self, topic: str, partition: int) -> int | None:
        """The partition's leader in the controller's view; None when it has none."""
        reg = self._read(lambda: self._registration(topic, partition))
        return None if reg is None or reg.leader < 0 else reg.leader

    def isr_of(self, topic: str, partition: int) -> tuple[int, ...]:
        """The partition's in-sync replicas in the controller's view (empty: no such partition)."""
        reg = self._read(lambda: self._registration(topic, partition))
        return () if reg is None else reg.isr

    def _read(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the cluster's loop (its state is that loop's), from any thread."""
        thread = self._background.thread
        if thread is None or threading.current_thread() is thread:
            return fn()

        async def call() -> T:
            return fn()
        return self._call(call())

    # -- waiting for states ----------------------------------------------------------------------

    async def _wait(self, what: str, check: Callable[[], T | None], timeout: float,
                    seen: Callable[[], object]) -> T:
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result is not None:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{what} not reached within {timeout} s; last seen: {seen()}")
            await asyncio.sleep(0.01)

    async def wait_for_isr_async(self, topic: str, partition: int, size: int, timeout: float = 10.0) -> tuple[int, ...]:
        """Wait until the partition's ISR has ``size`` members; returns it.

        Raises:
            TimeoutError: not within ``timeout`` seconds; the message names the ISR seen.
        """
        def check() -> tuple[int, ...] | None:
            reg = self._registration(topic, partition)
            return reg.isr if reg is not None and len(reg.isr) == size else None
        return await self._wait(f"an ISR of {size} for {topic}-{partition}", check, timeout,
                                lambda: self._registration(topic, partition))

    async def wait_for_leader_async(self, topic: str, partition: int, not_in: Iterable[int] = (),
                                    timeout: float = 10.0) -> int:
        """Wait until the partition has a leader that is not in ``not_in``; returns its id.

        Raises:
            TimeoutError: not within ``timeout`` seconds; the message names the state seen.
        """
        excluded = frozenset(not_in)

        def check() -> int | None:
            reg = self._registration(topic, partition)
            return reg.leader if reg is not None and reg.leader >= 0 and reg.leader not in excluded else None
        return await self._wait(f"a leader of {topic}-{partition} not in {sorted(excluded)}", check, timeout,
                                lambda: self._registration(topic, partition))

    def wait_for_isr(self, topic: str, partition: int, size: int, timeout: float = 10.0) -> tuple[int, ...]:
        """Sync face of :meth:`wait_for_isr_async`."""
        return self._call(self.wait_for_isr_async(topic, partition, size, timeout))

    def wait_for_leader(self, topic: str, partition: int, not_in: Iterable[int] = (), timeout: float = 10.0) -> int:
        """Sync face of :meth:`wait_for_leader_async`."""
        return self._call(self.wait_for_leader_async(topic, partition, tuple(not_in), timeout))

    async def _wait_ready(self, node_ids: Iterable[int], timeout: float) -> None:
        """Wait until every one of ``node_ids`` runs with its registration unfenced."""
        ids = list(node_ids)

        def check() -> bool | None:
            image = self._image()
            return all(self._nodes[i].alive and (b := image.brokers.get(i)) is not None and not b.fenced
                       and b.broker_epoch == self._nodes[i].broker_epoch for i in ids) or None
        await self._wait(f"brokers {ids} registered and unfenced", check, timeout,
                         lambda: sorted(self._image().brokers.values(), key=lambda b: b.broker_id))

    # -- topics --------------------------------------------------------------------------------

    async def create_topic_async(self, name: str, partitions: int = 1, replication_factor: int = 1,
                                 configs: Mapping[str, Any] | None = None) -> None:
        """Create a topic through the controller; its partitions exist on their brokers when
        this returns.

        Raises:
            kproto.errors.KafkaError: the controller's refusal (e.g.
                InvalidReplicationFactorError with too few live brokers).
        """
        channel = self._require_quorum().channel_for(-1)
        new = NewTopic(name=name, num_partitions=partitions, replication_factor=replication_factor,
                       configs={k: None if v is None else str(v) for k, v in (configs or {}).items()})
        [result] = await channel.create_topics([new], validate_only=False)
        if result.error_code:
            raise for_code(result.error_code)(result.error_message or f"cannot create {name!r}")

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     configs: Mapping[str, Any] | None = None) -> None:
        """Sync face of :meth:`create_topic_async`."""
        self._call(self.create_topic_async(name, partitions, replication_factor, configs))

    # -- faults ----------------------------------------------------------------------------------

    def _node(self, node_id: int) -> ClusterNode | BrokerProcess:
        if not 0 <= node_id < len(self._nodes):
            raise ValueError(f"no broker {node_id}: node ids are 0..{len(self._nodes) - 1}")
        return self._nodes[node_id]

    def _in_process(self, node_id: int, fault: str) -> ClusterNode:
        """Broker ``node_id`` as a node of this process: the faults other than a crash reach
        into a broker's server, which ``processes=True`` puts in another process."""
        node = self._node(node_id)
        if not isinstance(node, ClusterNode):
            raise RuntimeError(f"{fault} needs the brokers in this process: with processes=True, "
                               f"broker {node_id} runs in process {node.pid} (kill and restart work)")
        return node

    @staticmethod
    def _registrations(image: MetadataImage) -> dict[tuple[str, int], PartitionRegistration]:
        return {(t.name, i): p for t in image.topics.values() for i, p in t.partitions.items()}

    async def kill_async(self, node_id: int, *, wait: bool = True, timeout: float = 10.0) -> None:
        """Crash broker ``node_id`` (as a SIGKILL: connections reset, nothing flushed).

        With ``wait`` (the default), return once the controller has fenced it (session
        expiry; a new controller first if it hosted the controller): its leaderships have
        moved and it left the ISRs. Without, return at once (to act in the window before).
        Killing the last broker running leaves no controller: it returns at once.
        """
        node = self._node(node_id)
        if not node.alive:
            raise RuntimeError(f"broker {node_id} is not running")
        before = self._registrations(self._image())
        controller = self.controller_id
        await node.kill()
        if not any(n.alive for n in self._nodes):  # no node left to host a controller that would fence it
            log.info("killed broker %d, the last one running: no controller is left", node_id)
            return
        if not wait:
            log.info("killed broker %d (its session expires after broker.session.timeout.ms)", node_id)
            return

        def fenced() -> bool | None:
            b = self._image().brokers.get(node_id)
            return (self.controller_id != node_id and b is not None and b.fenced) or None
        await self._wait(f"broker {node_id} fenced", fenced, timeout,
                         lambda: (self.controller_id, self._image().brokers.get(node_id)))
        log.info("killed broker %d: %s", node_id, self._changes_since(before, controller))

    def _changes_since(self, before: dict[tuple[str, int], PartitionRegistration], controller: int) -> str:
        """What the controller changed since ``before`` (registrations) and ``controller``, in words."""
        after = self._registrations(self._image())
        moved = [f"{t}-{p} {before[t, p].leader}->{r.leader}" for (t, p), r in sorted(after.items())
                 if (t, p) in before and r.leader != before[t, p].leader]
        shrunk = sum(1 for key, r in after.items() if key in before and len(r.isr) < len(before[key].isr))
        grown = sum(1 for key, r in after.items() if key in before and len(r.isr) > len(before[key].isr))
        now = self.controller_id
        where = f"moved {controller}->{now}" if controller != now else f"stays {controller}"
        return (f"controller {where}, leaders moved: {', '.join(moved) or 'none'}; "
                f"ISR shrunk in {shrunk} partition(s)" + (f", grown in {grown}" if grown else ""))

    async def shutdown_async(self, node_id: int) -> None:
        """Stop broker ``node_id`` as Kafka's controlled shutdown does (what a rolling
        restart uses): it tells the controller it wants to shut down, the controller fences
        it and moves its leaderships to other ISR members at once, then it writes its
        checkpoints and closes its files. Returns once it has stopped; :meth:`restart`
        starts it again."""
        node = self._node(node_id)
        if not node.alive:
            raise RuntimeError(f"broker {node_id} is not running")
        before = self._registrations(self._image())
        controller = self.controller_id
        await node.stop()
        log.info("shut down broker %d (controlled): %s", node_id, self._changes_since(before, controller))

    async def restart_async(self, node_id: int, *, timeout: float = 10.0) -> None:
        """Start broker ``node_id`` again on the same port and directories, with a new broker
        epoch; returns once it is registered and unfenced (it rejoins ISRs once caught up:
        :meth:`wait_for_isr`)."""
        old = self._node(node_id)
        if old.alive:
            raise RuntimeError(f"broker {node_id} is running")
        assert self.data_dir is not None
        registration = self._image().brokers.get(node_id)
        ports = {name: port for name, _, port, _ in registration.listeners} if registration is not None else {}
        node = self._new_node(node_id, old.port, ports)
        self._nodes[node_id] = node
        await node.start()
        await self._wait_ready([node_id], timeout)
        log.info("restarted broker %d on port %d with broker epoch %d; controller %d", node_id, node.port,
                 node.broker_epoch, self.controller_id)

    # -- faults: isolation, request controls, a slow disk ---------------------------------------

    def requests(self, node_id: int) -> RequestControls:
        """Broker ``node_id``'s request controls (:meth:`RequestControls.control
        <minibroker.faults.RequestControls.control>`: delay, fail, drop, hold or count its
        requests by API key). Callable from any thread; a killed or restarted broker's
        controls are gone (a restart starts with none), and :meth:`heal` removes them all."""
        node = self._in_process(node_id, "requests()")
        if node.server is None:
            raise RuntimeError("the cluster is not started")
        return node.server.faults.requests

    async def isolate_async(self, node_id: int, *, from_brokers: bool = True, from_clients: bool = True,
                            wait: bool = True, timeout: float = 10.0) -> None:
        """Cut broker ``node_id`` off, as a network partition: silence, not resets.

        ``from_clients``: clients' requests to it are held unanswered (new connections are
        accepted and stay silent), so clients time out on it. ``from_brokers``: the other
        brokers' fetchers get no answer from it, its own fetchers send nothing, and the
        controller hears nothing from it (no heartbeat, lease or AlterPartition; no
        metadata reaches it): it is fenced after ``broker.session.timeout.ms``, its
        leaderships move to other ISR members, and a controller it hosts moves after
        ``controller.quorum.fetch.timeout.ms``. It still believes what it last knew (e.g.
        that it leads), as a partitioned Kafka broker does. :meth:`heal` ends it.

        Args:
            wait: with ``from_brokers``, return once the controller has fenced it (its
                leaderships moved), as :meth:`kill` does; else return at once.

        Raises:
            RuntimeError: the broker is not running.
            TimeoutError: not fenced within ``timeout`` seconds.
        """
        node = self._in_process(node_id, "isolate()")
        if not node.alive:
            raise RuntimeError(f"broker {node_id} is not running")
        if not (from_brokers or from_clients):
            raise ValueError("isolate from brokers, clients or both")
        before = self._registrations(self._image())
        controller = self.controller_id
        node.isolate(from_brokers=from_brokers, from_clients=from_clients)
        what = " and ".join(w for w, on in (("brokers", from_brokers), ("clients", from_clients)) if on)
        others = [n for n in self._nodes if n.alive and n.node_id not in self._require_quorum().isolated]
        if not from_brokers or not wait or not others:
            log.info("isolated broker %d from %s%s", node_id, what,
                     " (fenced after broker.session.timeout.ms)" if from_brokers else "")
            return

        def fenced() -> bool | None:
            b = self._image().brokers.get(node_id)
            return (self.controller_id != node_id and b is not None and b.fenced) or None
        await self._wait(f"broker {node_id} fenced", fenced, timeout,
                         lambda: (self.controller_id, self._image().brokers.get(node_id)))
        log.info("isolated broker %d from %s: %s", node_id, what, self._changes_since(before, controller))

    async def heal_async(self, *, wait: bool = True, timeout: float = 10.0) -> None:
        """End every fault but a crash: isolations (a broker cut off gets the metadata it
        missed, then its held requests go on), request controls (held answers are sent)
        and slow disks.

        Args:
            wait: return once every broker that was cut off from the brokers is unfenced
                again (it rejoins ISRs once caught up: :meth:`wait_for_isr`).
        """
        quorum = self._require_quorum()
        rejoining = [n.node_id for n in self._nodes if n.alive and n.node_id in quorum.isolated]
        changes = [f"broker {n.node_id}: {', '.join(c)}" for n in self._nodes
                   if isinstance(n, ClusterNode) and (c := n.heal())]
        if wait and rejoining:
            await self._wait_ready(rejoining, timeout)
        log.info("healed: %s", "; ".join(changes) or "nothing to heal")

    async def slow_disk_async(self, node_id: int, delay_ms: int) -> None:
        """Make every log write of broker ``node_id`` (appends of Produce, of its fetchers
        as a follower, of committed offsets) take ``delay_ms`` more, one write at a time, as
        a slow disk; 0 clears it (so does :meth:`heal`). A follower slower than
        ``replica.lag.time.max.ms`` drops out of the ISR."""
        if delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0, not {delay_ms}")
        node = self._in_process(node_id, "slow_disk()")
        if node.server is None or not node.alive:
            raise RuntimeError(f"broker {node_id} is not running")
        disk = node.server.faults.disk
        was, disk.delay_ms = disk.delay_ms, delay_ms
        log.info("broker %d: slow disk %s", node_id,
                 f"cleared (was {was} ms)" if not delay_ms else f"of {delay_ms} ms per log write (was {was} ms)")

    def isolate(self, node_id: int, *, from_brokers: bool = True, from_clients: bool = True,
                wait: bool = True, timeout: float = 10.0) -> None:
        """Sync face of :meth:`isolate_async`."""
        self._call(self.isolate_async(node_id, from_brokers=from_brokers, from_clients=from_clients,
                                      wait=wait, timeout=timeout))

    def heal(self, *, wait: bool = True, timeout: float = 10.0) -> None:
        """Sync face of :meth:`heal_async`."""
        self._call(self.heal_async(wait=wait, timeout=timeout))

    def slow_disk(self, node_id: int, delay_ms: int) -> None:
        """Sync face of :meth:`slow_disk_async`."""
        self._call(self.slow_disk_async(node_id, delay_ms))

    def kill(self, node_id: int, *, wait: bool = True, timeout: float = 10.0) -> None:
        """Sync face of :meth:`kill_async`."""
        self._call(self.kill_async(node_id, wait=wait, timeout=timeout))

    def shutdown(self, node_id: int) -> None:
        """Sync face of :meth:`shutdown_async`."""
        self._call(self.shutdown_async(node_id))

    def restart(self, node_id: int, *, timeout: float = 10.0) -> None:
        """Sync face of :meth:`restart_async`."""
        self._call(self.restart_async(node_id, timeout=timeout))

    # -- in a running event loop -----------------------------------------------------------------

    async def start_async(self, timeout: float = 30.0) -> MiniCluster:
        """Start every broker in the current event loop; returns once all are registered
        and unfenced."""
        if self.quorum is not None:
            raise RuntimeError("the cluster is already started")
        self.data_dir = self._given_dir or Path(tempfile.mkdtemp(prefix="minicluster-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        metadata = MetadataLog(self.data_dir / "metadata" / "metadata.jsonl")
        self.quorum = Quorum(log=metadata, config=self.config, clock_ms=monotonic_ms)
        try:
            if self.processes:
                self._endpoint = ControllerServer(self.quorum, self.config)
                await self._endpoint.start()
            self._nodes = [self._new_node(i) for i in range(self.size)]
            if self.processes:
                # Node 0 first, so that it hosts the first controller (the lowest live node,
                # as in process); then the others side by side (each an interpreter starting).
                await self._nodes[0].start()
                failures = [r for r in await asyncio.gather(*(n.start() for n in self._nodes[1:]),
                                                            return_exceptions=True)
                            if isinstance(r, BaseException)]
                if failures:
                    raise failures[0]
            else:
                for node in self._nodes:
                    await node.start()
            self._quorum_task = asyncio.create_task(self.quorum.run(), name="minicluster-quorum")
            await self._wait_ready(range(self.size), timeout)
        except BaseException:
            await self.stop_async()
            raise
        log.info("MiniCluster of %d brokers at %s, controller %d", self.size, self.bootstrap_servers,
                 self.controller_id)
        return self

    async def stop_async(self) -> None:
        """Stop every live broker (controlled shutdown), the controller, and remove a
        temporary data directory."""
        if self.quorum is None:
            return
        if self.processes:  # side by side; each is reaped, killed if it does not stop in time
            for node, result in zip(self._nodes, await asyncio.gather(*(n.stop() for n in self._nodes),
                                                                      return_exceptions=True)):
                if isinstance(result, BaseException):
                    log.error("broker %d failed to stop", node.node_id, exc_info=result)
        for node in reversed(self._nodes):
            try:
                await node.stop()
            except Exception:  # one broker failing to stop must not leave the others running
                log.exception("broker %d failed to stop", node.node_id)
        if self._endpoint is not None:
            await self._endpoint.stop()
            self._endpoint = None
        if self._quorum_task is not None:
            self._quorum_task.cancel()
            await asyncio.gather(self._quorum_task, return_exceptions=True)
            self._quorum_task = None
        self.quorum.log.close()
        self.quorum = None
        if self._given_dir is None and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    async def __aenter__(self) -> MiniCluster:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # -- on a background thread ------------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        thread, loop = self._background.thread, self._background.loop
        if thread is None:
            coro.close()
            raise RuntimeError("the sync methods need a cluster started with start() or `with`; "
                               "in an event loop use the *_async methods")
        if threading.current_thread() is thread:
            coro.close()
            raise RuntimeError("a sync method of MiniCluster was called on the cluster's own loop")
        assert loop is not None
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def start(self) -> MiniCluster:
        """Start on a background thread; returns once every broker is registered and unfenced.

        Raises:
            OSError: a port cannot be bound.
            minibroker.storage.LogDirInUseError: another broker holds a directory.
        """
        self._background.start(self.start_async, self.stop_async)
        return self

    def stop(self) -> None:
        """Stop the cluster and wait for its thread (idempotent)."""
        self._background.stop()

    def __enter__(self) -> MiniCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
