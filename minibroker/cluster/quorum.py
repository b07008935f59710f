"""The controller quorum of a MiniCluster: the metadata log, the active controller, failover.

KRaft in combined mode runs a controller in some of the brokers' processes; they elect
one active controller by Raft, with an epoch, over the ``__cluster_metadata`` log
(KIP-500, KIP-595, KIP-631). A MiniCluster keeps what clients can see of that and
simplifies how it is agreed (the cluster design, 1.1):

- one shared :class:`~minibroker.cluster.metadata.MetadataLog`, held here, not by a node;
- the active :class:`~minibroker.cluster.controller.Controller` is hosted by a live node:
  the lowest node id among those whose lease is fresh. Every live node renews its lease
  (:meth:`Quorum.renew_lease`) each heartbeat interval; when the host's lease is older than
  ``controller.quorum.fetch.timeout.ms``, :meth:`Quorum.check` activates a new controller
  on the lowest live node with ``controller_epoch + 1``, built by replaying the log. The
  new epoch claims the log, so a deposed controller's appends raise NotControllerError;
- a commit is delivered at once, in offset order, to every subscribed node
  (``deliver(offset_of_last, records)``): brokers never lag the controller;
- the controller's time-driven work (:meth:`Controller.tick`) runs from :meth:`run` every
  ``broker.heartbeat.interval.ms``.

Each node reaches the active controller through its :meth:`channel_for` channel (a
:class:`~minibroker.cluster.api.ControllerChannel`); with no active controller (no live
node) the calls answer NOT_CONTROLLER.

A node cut off by :meth:`Quorum.isolate` (a network partition, MiniCluster's
``isolate``) cannot reach the quorum: its lease is not renewed (so a controller it hosts
moves once the lease is older than ``controller.quorum.fetch.timeout.ms``), its channel's
calls answer NOT_CONTROLLER at once (as a broker that sees no controller; its heartbeats
stop counting and the controller fences it after ``broker.session.timeout.ms``), and
commits are not delivered to it. :meth:`Quorum.heal` delivers what it missed, in one
call, and lets it through again.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kproto.errors import NotControllerError
from minibroker.authorizer import AclBinding, AclBindingFilter
from minibroker.cluster.api import (
    AlterConfigsResource,
    AlterPartitionReply,
    AlterPartitionRequest,
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ConfigResult,
    ControllerChannel,
    ElectionResult,
    ElectionType,
    NewTopic,
    TopicResult,
)
from minibroker.cluster.controller import Controller
from minibroker.cluster.metadata import MetadataLog, Record
from minibroker.config import BrokerConfig
from minibroker.quotas import AlterEntry, AlterResult, entity_of

__all__ = ["Quorum"]

log = logging.getLogger("minibroker.cluster")

Deliver = Callable[[int, Sequence[Record]], None]


class Quorum:
    """The metadata log, the active controller and its epoch, and the nodes' subscriptions.

    Attributes:
        controller_id: the node hosting the active controller (-1: none yet, or no live node).
        controller_epoch: the active controller's epoch (0 before the first).
        controller: the active :class:`Controller`, or None.
    """

    def __init__(self, *, log: MetadataLog, config: BrokerConfig, clock_ms: Callable[[], int],
                 rng: random.Random | None = None):
        self.log = log
        self.config = config
        self.clock_ms = clock_ms
        self.rng = rng
        self.controller: Controller | None = None
        self.controller_id = -1
        self.controller_epoch = log.epoch
        self._subscribers: dict[int, Deliver] = {}
        self._leases: dict[int, int] = {}
        self._delivered: dict[int, int] = {}  # node -> offset of the last record delivered to it
        self.isolated: set[int] = set()  # nodes cut off from the quorum (isolate)

    # -- leases and failover -------------------------------------------------------------------

    def _fresh(self, node_id: int, now: int) -> bool:
        renewed = self._leases.get(node_id)
        return renewed is not None and now - renewed <= int(self.config["controller.quorum.fetch.timeout.ms"])

    def renew_lease(self, node_id: int) -> None:
        """Node ``node_id`` is alive (its lease task calls this every heartbeat interval).
        The first lease ever activates the first controller. A node cut off (:meth:`isolate`)
        renews nothing."""
        if node_id in self.isolated:
            return
        self._leases[node_id] = self.clock_ms()
        if self.controller is None:
            self._elect(self.clock_ms())

    def _elect(self, now: int) -> None:
        live = sorted(n for n in self._leases if self._fresh(n, now))
        old = self.controller_id
        if not live:
            if self.controller is not None:
                log.warning("controller %d (epoch %d) lost its lease and no node is live", old, self.controller_epoch)
            self.controller, self.controller_id = None, -1
            return
        epoch = self.log.epoch + 1
        self.log.begin_epoch(epoch)  # from now on the deposed controller's appends are refused
        self.controller = Controller(node_id=live[0], epoch=epoch, log=self.log, config=self.config,
                                     clock_ms=self.clock_ms, rng=self.rng, on_commit=self._deliver)
        self.controller_id, self.controller_epoch = live[0], epoch
        log.info("controller moved from node %d to node %d, epoch %d", old, live[0], epoch)

    def check(self, now_ms: int | None = None) -> None:
        """One round of :meth:`run`: fail over if the controller's host lost its lease, then
        tick the controller (session expiry, elections)."""
        now = self.clock_ms() if now_ms is None else now_ms
        if self.controller is None or not self._fresh(self.controller_id, now):
            self._elect(now)
        if self.controller is not None:
            self.controller.tick(now)

    async def run(self) -> None:
        """Check leases and tick the controller every ``broker.heartbeat.interval.ms``, until
        cancelled."""
        interval = int(self.config["broker.heartbeat.interval.ms"]) / 1000
        while True:
            await asyncio.sleep(interval)
            # After a stall of the loop, every timer that came due runs now: yield once so
            # that the brokers' heartbeats due meanwhile are counted before the sessions
            # and leases are judged (else a stall would fence healthy brokers).
            await asyncio.sleep(0)
            try:
                self.check()
            except Exception:  # a controller bug must not stop failover; it is logged
                log.exception("controller tick failed")

    # -- delivery ------------------------------------------------------------------------------

    def subscribe(self, node_id: int, deliver: Deliver, from_offset: int = 0) -> None:
        """Deliver the records from ``from_offset`` to node ``node_id`` now (one call), then
        every commit as it happens."""
        self._delivered[node_id] = from_offset - 1
        self._subscribers[node_id] = deliver
        if node_id not in self.isolated:
            self._catch_up(node_id)

    def unsubscribe(self, node_id: int) -> None:
        """Stop delivering to ``node_id`` (it stopped or died; its lease expires on its own,
        and an isolation of it ends: a node that starts again starts connected)."""
        self._subscribers.pop(node_id, None)
        self._delivered.pop(node_id, None)
        self.isolated.discard(node_id)

    def _catch_up(self, node_id: int) -> None:
        """Deliver to ``node_id``, in one call, every record after the last it got."""
        entries = self.log.read(self._delivered[node_id] + 1)
        if entries:
            self._delivered[node_id] = entries[-1][0]
            self._subscribers[node_id](entries[-1][0], [r for _, r in entries])

    def _deliver(self, offset: int, records: Sequence[Record]) -> None:
        for node_id, deliver in list(self._subscribers.items()):
            if node_id in self.isolated:
                continue  # cut off: it gets these at heal
            self._delivered[node_id] = offset
            try:
                deliver(offset, records)
            except Exception:  # one broker's failure to apply must not undo the commit for the others
                log.exception("node %d failed to apply metadata up to offset %d", node_id, offset)

    # -- isolation (a network partition) ----------------------------------------------------

    def isolate(self, node_id: int) -> None:
        """Cut node ``node_id`` off from the quorum (see the module docstring)."""
        self.isolated.add(node_id)

    def heal(self, node_id: int) -> None:
        """Reconnect node ``node_id``: deliver what it missed (one call), then let it
        through; its next heartbeat and lease renewal count again."""
        if node_id not in self.isolated:
            return
        self.isolated.discard(node_id)
        if node_id in self._subscribers:
            try:
                self._catch_up(node_id)
            except Exception:  # as _deliver: a broker's failure to apply must not stop the heal
                log.exception("node %d failed to apply the metadata it missed", node_id)

    # -- channels ------------------------------------------------------------------------------

    def channel_for(self, node_id: int) -> ControllerChannel:
        """Node ``node_id``'s way to the active controller."""
        return _Channel(self, node_id)

    def active(self) -> Controller:
        """The active controller; NotControllerError when there is none."""
        if self.controller is None:
            raise NotControllerError("no active controller: no node holds a lease")
        return self.controller


class _Channel:
    """A :class:`ControllerChannel` that calls the Quorum's active controller in process."""

    def __init__(self, quorum: Quorum, node_id: int):
        self._quorum = quorum
        self.node_id = node_id

    @property
    def active_controller_id(self) -> int:
        return -1 if self.node_id in self._quorum.isolated else self._quorum.controller_id

    def _active(self) -> Controller:
        """The active controller, as this node reaches it: NotControllerError when there is
        none or the node is cut off (:meth:`Quorum.isolate`)."""
        if self.node_id in self._quorum.isolated:
            raise NotControllerError(f"node {self.node_id} cannot reach the controller quorum (isolated)")
        return self._quorum.active()

    async def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        try:
            return self._active().register_broker(request)
        except NotControllerError:
            return BrokerRegistrationReply(error_code=NotControllerError.code, broker_epoch=-1)

    async def heartbeat(self, request: BrokerHeartbeatRequest) -> BrokerHeartbeatReply:
        try:
            return self._active().heartbeat(request)
        except NotControllerError:
            return BrokerHeartbeatReply(error_code=NotControllerError.code, is_caught_up=False, is_fenced=True,
                                        should_shut_down=False)

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionReply:
        try:
            return self._active().alter_partition(request)
        except NotControllerError:
            return AlterPartitionReply(error_code=NotControllerError.code, registration=None)

    async def create_topics(self, topics: Sequence[NewTopic], *, validate_only: bool) -> list[TopicResult]:
        try:
            return self._active().create_topics(topics, validate_only=validate_only)
        except NotControllerError as exc:
            return [TopicResult(name=t.name, topic_id=None, error_code=NotControllerError.code,
                                error_message=str(exc)) for t in topics]

    async def create_partitions(self, name: str, count: int, assignments: Sequence[tuple[int, ...]] | None, *,
                                validate_only: bool) -> TopicResult:
        try:
            return self._active().create_partitions(name, count, assignments, validate_only=validate_only)
        except NotControllerError as exc:
            return TopicResult(name=name, topic_id=None, error_code=NotControllerError.code, error_message=str(exc))

    async def delete_topics(self, topic_ids: Sequence[uuid.UUID]) -> list[TopicResult]:
        try:
            return self._active().delete_topics(topic_ids)
        except NotControllerError as exc:
            return [TopicResult(name="", topic_id=t, error_code=NotControllerError.code, error_message=str(exc))
                    for t in topic_ids]

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        """Raises NotControllerError (no active controller) or StaleBrokerEpochError."""
        return self._active().allocate_producer_ids(broker_id, broker_epoch)

    # -- config changes ------------------------------------------------------------------------

    async def alter_configs(self, resources: Sequence[AlterConfigsResource], *,
                            validate_only: bool) -> list[ConfigResult]:
        try:
            return self._active().alter_configs(resources, validate_only=validate_only)
        except NotControllerError as exc:
            return [ConfigResult(error_code=NotControllerError.code, error_message=str(exc)) for _ in resources]

    # -- client quotas -----------------------------------------------------------------------

    async def alter_client_quotas(self, entries: Sequence[AlterEntry], *, validate_only: bool) -> list[AlterResult]:
        try:
            return self._active().alter_client_quotas(entries, validate_only=validate_only)
        except NotControllerError as exc:
            return [(entity, NotControllerError.code, str(exc)) for entity in dict.fromkeys(entity_of(p) for p, _ in entries)]
    # -- ACLs --------------------------------------------------------------------------------

    async def create_acls(self, acls: Sequence[AclBinding]) -> None:
        """Raises NotControllerError (no active controller)."""
        self._active().create_acls(acls)

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Raises NotControllerError (no active controller)."""
        return self._active().delete_acls(filters)

    # -- SCRAM users ---------------------------------------------------------------------------

    async def alter_user_scram_credentials(self, request: Any) -> list[tuple[str, int, str | None]]:
        try:
            return self._active().alter_user_scram_credentials(request)
        except NotControllerError as exc:
            return [(name, NotControllerError.code, str(exc))
                    for name in dict.fromkeys([*(d.name for d in request.deletions),
                                               *(u.name for u in request.upsertions)])]

    # -- elections ---------------------------------------------------------------------------

    async def elect_leaders(self, election_type: ElectionType,
                            partitions: Mapping[str, Sequence[int]] | None) -> list[ElectionResult]:
        """Raises NotControllerError (no active controller)."""
        return self._active().elect_leaders(election_type, partitions)
