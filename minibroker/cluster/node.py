"""One broker of a MiniCluster: its server, state, replica manager, heartbeats and lease.

A :class:`ClusterNode` is a KRaft broker in combined mode, in process (the cluster design,
section 1). Its start follows a Kafka broker's (``BrokerServer.startup``, KIP-631):

1. bind its listeners (fixed ports on a restart, so clients' bootstrap lists stay valid);
2. build its :class:`~minibroker.state.BrokerState` with a
   :class:`~minibroker.cluster.api.ClusterContext` (node id, controller channel, an empty
   metadata image);
3. renew its controller lease (a live node may host the controller) and register with
   the controller (BrokerRegistration, with every listener's name, advertised address and
   security protocol): the reply's broker epoch is the offset of its
   ``RegisterBrokerRecord``. A restarted broker whose old session still lives gets
   DUPLICATE_BROKER_REGISTRATION and retries every heartbeat interval until the controller
   lets that session expire (``broker.session.timeout.ms``), as a Kafka broker does;
   NOT_CONTROLLER (a failover under way) is retried the same way;
4. subscribe to the metadata from offset 0, applied by its
   :class:`~minibroker.cluster.replica_manager.ReplicaManager` (image, partitions,
   fetchers);
5. heartbeat every ``broker.heartbeat.interval.ms`` with the offset of the metadata it
   applied (the first one that covers its registration unfences it), renewing its lease
   each time, and run the replica manager (ISR upkeep, checkpoints).

:meth:`ClusterNode.kill` is a crash: connections reset, tasks cancelled, logs closed
without flush or checkpoint (:meth:`~minibroker.state.BrokerState.abandon`); the
controller notices only when the session expires. :meth:`ClusterNode.stop` is a
controlled shutdown: a last heartbeat with ``want_shut_down`` (the controller fences the
broker and moves its leaderships at once), checkpoints written, files closed.

Faults (MiniCluster's ``isolate``, ``heal``): :meth:`ClusterNode.isolate` cuts the node
off from clients and/or the other brokers: its server holds their requests unanswered
(:class:`~minibroker.faults.BrokerFaults`), and cut off from the brokers its fetchers
send nothing and the quorum stops hearing it (:meth:`Quorum.isolate
<minibroker.cluster.quorum.Quorum.isolate>`): no lease, no heartbeat, no AlterPartition,
no metadata. :meth:`ClusterNode.heal` delivers the metadata it missed first, then lets
the held requests go on, so that they meet the node's new state.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Callable

from kproto.errors import (
    DuplicateBrokerRegistrationError,
    NotControllerError,
    StaleBrokerEpochError,
)
from minibroker.cluster.api import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ClusterContext,
    QuorumLink,
)
from minibroker.cluster.metadata import MetadataImage
from minibroker.cluster.quorum import Quorum
from minibroker.cluster.replica_manager import ReplicaManager
from minibroker.cluster.security import inter_broker_client
from minibroker.cluster.txn_markers import AddPartitionsToTxnSender, send_txn_markers
from minibroker.config import BrokerConfig
from minibroker.server import Server

__all__ = ["ClusterNode", "monotonic_ms"]

log = logging.getLogger("minibroker.cluster")

#: Registration answers that a starting broker waits out (Kafka's BrokerLifecycleManager
#: retries its registration until it is accepted).
_RETRIED = frozenset({DuplicateBrokerRegistrationError.code, NotControllerError.code})


def monotonic_ms() -> int:
    """The cluster's clock: milliseconds of a monotonic clock (sessions, leases, lag)."""
    return time.monotonic_ns() // 1_000_000


class ClusterNode:
    """One broker of a MiniCluster (see the module docstring).

    Args:
        node_id: the broker's id (``node.id``); ``config`` must say the same.
        config: its broker config (``broker.id``, ``log.dirs``, ``listeners``, ``broker.rack``
            already the node's own).
        quorum: the cluster's controller quorum (in a broker process of its own, the
            quorum's wire face, :class:`~minibroker.cluster.remote.RemoteQuorum`).
        port: port to bind on 127.0.0.1's listener host; 0 picks a free one, kept by
            :attr:`port` for a restart.
        clock_ms: the cluster's clock.

    Attributes:
        alive: started and neither killed nor stopped.
        context: the node's ClusterContext (None before :meth:`start`).
    """

    def __init__(self, *, node_id: int, config: BrokerConfig, quorum: QuorumLink, port: int = 0,
                 clock_ms: Callable[[], int] = monotonic_ms):
        self.node_id = node_id
        self.config = config
        self.quorum = quorum
        self.clock_ms = clock_ms
        self.host = config.listener.host or "127.0.0.1"
        self.port = port
        self.alive = False
        self.context: ClusterContext | None = None
        self.server: Server | None = None
        self.replica_manager: ReplicaManager | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def broker_epoch(self) -> int:
        return -1 if self.context is None else self.context.broker_epoch

    async def start(self) -> None:
        """Bind, build the state, register, subscribe, then heartbeat and replicate.

        Raises:
            OSError: the port cannot be bound (on a restart: taken by another process
                meanwhile); nothing is left running.
        """
        if self.alive:
            raise RuntimeError(f"node {self.node_id} is already running")
        # The security of this broker's connections to the others (inter.broker.listener.name),
        # built once: the fetchers, WriteTxnMarkers and KIP-890 verification share it.
        inter_broker = inter_broker_client(self.config).connection_settings()
        self.context = ClusterContext(node_id=self.node_id, channel=self.quorum.channel_for(self.node_id),
                                      image=MetadataImage())
        self.server = Server(self.config, self.host, self.port, cluster=self.context)
        try:
            await self.server.start()
        except OSError as exc:
            raise OSError(exc.errno, f"node {self.node_id} cannot bind {self.host}:{self.port}: {exc.strerror}") from exc
        self.port = self.server.port
        try:
            self.quorum.renew_lease(self.node_id)  # alive from now on: it may host the controller
            await self._register()
            self.replica_manager = ReplicaManager(self.server.state, self.context, self.clock_ms)
            self.replica_manager.leadership_listeners.append(self.server.state.leadership_changed)
            # WriteTxnMarkers to other brokers
            self.server.state.remote_txn_markers = functools.partial(send_txn_markers, connection=inter_broker)
            # KIP-890 verification
            self.server.state.remote_txn_verify = AddPartitionsToTxnSender(self.node_id, connection=inter_broker)
            self.replica_manager.fetchers.connection = inter_broker
            self.replica_manager.fetchers.faults = self.server.faults  # isolation and a slow disk reach the fetchers
            self.quorum.subscribe(self.node_id, self.replica_manager.apply, from_offset=0)
        except BaseException:
            self.quorum.unsubscribe(self.node_id)
            if self.replica_manager is not None:
                await self.replica_manager.close(crash=False)
            await self.server.stop()
            raise
        self._tasks = [
            asyncio.create_task(self._heartbeats(), name=f"broker-{self.node_id}-heartbeat"),
            asyncio.create_task(self.replica_manager.run(), name=f"broker-{self.node_id}-replicas"),
        ]
        self.alive = True

    async def _register(self) -> None:
        assert self.context is not None
        interval = int(self.config["broker.heartbeat.interval.ms"]) / 1000
        assert self.server is not None and self.server.state is not None
        endpoints = self.server.state.endpoints  # every listener, as Kafka's BrokerRegistration carries them
        request = BrokerRegistrationRequest(
            broker_id=self.node_id, incarnation_id=uuid.uuid4(), host=self.host, port=self.port,
            rack=self.config["broker.rack"] or None,
            listeners=tuple((listener.name, *endpoints[listener.name], listener.protocol)
                            for listener in self.server.listeners))
        while True:
            reply = await self.context.channel.register_broker(request)
            if reply.error_code == 0:
                self.context.broker_epoch = reply.broker_epoch
                return
            if reply.error_code not in _RETRIED:
                raise RuntimeError(f"node {self.node_id}: the controller refused its registration "
                                   f"(error code {reply.error_code})")
            self.quorum.renew_lease(self.node_id)
            await asyncio.sleep(interval)

    async def _heartbeats(self) -> None:
        """BrokerHeartbeat every ``broker.heartbeat.interval.ms`` (Kafka's
        BrokerLifecycleManager), with the lease renewal; until cancelled."""
        assert self.context is not None
        interval = int(self.config["broker.heartbeat.interval.ms"]) / 1000
        while True:
            try:
                self.quorum.renew_lease(self.node_id)
                reply = await self.context.channel.heartbeat(BrokerHeartbeatRequest(
                    broker_id=self.node_id, broker_epoch=self.context.broker_epoch,
                    current_metadata_offset=self.context.image.offset))
                if reply.error_code == StaleBrokerEpochError.code:
                    log.warning("node %d: heartbeat with broker epoch %d is stale", self.node_id,
                                self.context.broker_epoch)
            except Exception:  # a failed beat must not stop the next: the session would expire
                log.exception("node %d: heartbeat failed", self.node_id)
            await asyncio.sleep(interval)

    # -- faults ---------------------------------------------------------------------------

    def isolate(self, *, from_brokers: bool, from_clients: bool) -> None:
        """Cut the node off (see the module docstring); on the cluster's loop."""
        if self.server is None or not self.alive:
            raise RuntimeError(f"node {self.node_id} is not running")
        if from_brokers:
            self._local_quorum().isolate(self.node_id)
        self.server.faults.isolate(clients=from_clients, brokers=from_brokers)

    def heal(self) -> list[str]:
        """End every fault of the node (isolation, request controls, slow disk); returns
        what changed, in words. The missed metadata is applied before held requests go on."""
        if self.server is None or not self.alive:
            return []
        self._local_quorum().heal(self.node_id)
        return self.server.faults.heal()

    def _local_quorum(self) -> Quorum:
        """The quorum in this process: isolation is a gate in it (a broker process reaches
        its quorum over the wire, and MiniCluster refuses faults other than kill there)."""
        if not isinstance(self.quorum, Quorum):
            raise RuntimeError(f"node {self.node_id}: isolation needs the controller quorum in this process")
        return self.quorum

    async def _end_tasks(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def kill(self) -> None:
        """Crash: listener closed, connections reset, tasks cancelled, files closed with
        nothing flushed and no checkpoint written. The controller notices when the session
        expires (``broker.session.timeout.ms``)."""
        if not self.alive:
            return
        self.alive = False
        assert self.server is not None and self.replica_manager is not None
        self.quorum.unsubscribe(self.node_id)
        await self._end_tasks()
        await self.server.abort()
        await self.replica_manager.close(crash=True)
        assert self.server.state is not None
        self.server.state.abandon()

    async def stop(self) -> None:
        """Controlled shutdown: the controller fences the broker at once (its leaderships
        move), then checkpoints are written and files closed."""
        if not self.alive:
            return
        self.alive = False
        assert self.server is not None and self.replica_manager is not None and self.context is not None
        await self._end_tasks()
        await self.context.channel.heartbeat(BrokerHeartbeatRequest(
            broker_id=self.node_id, broker_epoch=self.context.broker_epoch,
            current_metadata_offset=self.context.image.offset, want_shut_down=True))
        self.quorum.unsubscribe(self.node_id)
        await self.replica_manager.close(crash=False)
        await self.server.stop()
