"""A cluster broker's replicas: metadata in, leader/follower roles, ISR upkeep, checkpoints.

Theory of operation (Kafka's ``ReplicaManager.applyDelta`` / ``maybeShrinkIsr`` /
``checkpointHighWatermarks``, as a KRaft broker runs them):

- :meth:`ReplicaManager.apply` is the Quorum's delivery callback. It applies the committed
  records to the broker's :class:`~minibroker.cluster.metadata.MetadataImage` and acts on
  the :class:`~minibroker.cluster.metadata.MetadataDelta`: a deleted topic leaves the
  fetchers and the broker (``state.drop_topic``); a new or changed partition gets its
  topic (``state.ensure_topic``), a log when this broker is one of its replicas
  (``state.open_replica_log``, which restores its high watermark from
  ``replication-offset-checkpoint`` as ``min(checkpoint, LEO)``: it must happen before the
  registration is applied, so that a new leader never shows uncommitted records), and its registration
  (:meth:`Partition.apply_registration`). A topic whose configs changed (ConfigRecord) gets
  them through ``state.ensure_topic`` too, which gives its logs the new settings; changed
  dynamic broker configs (the cluster default's, this broker's) go to
  ``state.apply_broker_configs`` before anything else. A partition that became leader here (or is no
  longer hosted) leaves the fetchers; one that became follower of a live leader gets a
  :class:`~minibroker.cluster.fetcher.FetchTarget`, which truncates first.
- :meth:`ReplicaManager.run` keeps the ISR: every ``replica.lag.time.max.ms / 2`` each
  partition led here proposes its next ISR (``state.propose_isr`` →
  :meth:`Partition.isr_change`: shrink after the lag, expand a caught-up replica whose
  broker is unfenced with the epoch it fetches with, KIP-903) to the controller as an
  AlterPartition (KIP-497); the ISR changes when
  the committed record comes back through :meth:`apply`. Errors are logged and the
  proposal is made again at the next round. Every
  ``replica.high.watermark.checkpoint.interval.ms`` it writes the high watermarks and
  recovery points (``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``).
- :meth:`ReplicaManager.close` stops the fetchers; a clean close writes the checkpoints
  once more, a crash (``crash=True``) writes nothing.

What it needs of the broker is :class:`ReplicaHost` (``BrokerState`` in a MiniCluster).
Whoever must act on a leadership change (the group coordinator: Kafka's ``applyDelta``
calls its ``onElection`` / ``onResignation``) adds a :data:`LeadershipListener` to
:attr:`ReplicaManager.leadership_listeners`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kproto._loop import wait_for
from minibroker.cluster.api import ClusterContext
from minibroker.cluster.fetcher import FetcherManager, FetchTarget
from minibroker.cluster.metadata import NO_LEADER, MetadataImage, Record, TopicImage
from minibroker.cluster.partition import Partition, ReplicaRole, Transition
from minibroker.config import BrokerConfig
from minibroker.log import PartitionLog

__all__ = ["LeadershipListener", "ReplicaHost", "ReplicaManager"]

log = logging.getLogger("minibroker.cluster")


#: Called with a replica after :meth:`Partition.apply_registration` made it leader,
#: follower or no replica here (``Transition.BECAME_LEADER``, ``BECAME_FOLLOWER``,
#: ``STOPPED``); ISR-only changes are not told.
LeadershipListener = Callable[[Partition, Transition], None]
_TOLD = frozenset({Transition.BECAME_LEADER, Transition.BECAME_FOLLOWER, Transition.STOPPED})


class _Storage(Protocol):
    def save_offset_checkpoints(self, hw: Any, recovery: Any) -> None: ...


class _Topic(Protocol):
    name: str
    topic_id: uuid.UUID


class ReplicaHost(Protocol):
    """What the replica manager uses of the broker (``minibroker.state.BrokerState``)."""

    config: BrokerConfig
    storage: _Storage

    def ensure_topic(self, t: TopicImage) -> Any:
        """The broker's topic for ``t`` (created with a :class:`Partition`, without a log,
        per partition of the image; partitions added to the image are added; configs
        changed in the image are taken, by its logs too)."""
        ...

    def partition(self, topic: Any, index: int) -> Partition | None: ...

    def open_replica_log(self, topic: Any, index: int) -> PartitionLog:
        """The local log of one replica, opened once (replicated: it keeps its epoch
        checkpoint), its high watermark set to ``min(replication-offset-checkpoint, LEO)``
        (else its log start), and attached to the partition."""
        ...

    def apply_acls(self, image: MetadataImage) -> None:
        """Take the image's ACLs into the broker's authorizer."""
        ...

    def apply_broker_configs(self, image: MetadataImage) -> None:
        """Take the image's dynamic broker configs for this broker (its own, the cluster
        default's) and give every log the new settings."""
        ...

    def propose_isr(self, partition: Partition) -> None:
        """Send the leader's next ISR (``Partition.isr_change``) to the controller as an
        AlterPartition if it should change, without waiting; one at a time per partition."""
        ...

    def drop_topic(self, topic_id: uuid.UUID) -> None: ...


class ReplicaManager:
    """Applies metadata to one broker's replicas and keeps their ISR and checkpoints.

    Args:
        state: the broker (:class:`ReplicaHost`).
        context: its cluster context (node id, controller channel, image, broker epoch).
        clock_ms: milliseconds, the clock of the ISR rules.

    Attributes:
        fetchers: the broker's :class:`FetcherManager`.
        hosted: the replicas on this broker, by ``(topic id, index)``.
        leadership_listeners: told of every leadership change (:data:`LeadershipListener`).
    """

    def __init__(self, state: ReplicaHost, context: ClusterContext, clock_ms: Callable[[], int]) -> None:
        self.state = state
        self.context = context
        self.clock_ms = clock_ms
        self.config: BrokerConfig = state.config
        self.hosted: dict[tuple[uuid.UUID, int], Partition] = {}
        self.fetchers = FetcherManager(
            node_id=context.node_id, config=self.config, partitions=lambda tid, i: self.hosted.get((tid, i)),
            endpoint=self._endpoint, broker_epoch=lambda: self.context.broker_epoch)
        self._closed = asyncio.Event()
        self.leadership_listeners: list[LeadershipListener] = []

    def __repr__(self) -> str:
        return f"ReplicaManager(broker {self.context.node_id}, {len(self.hosted)} replica(s))"

    def _endpoint(self, broker_id: int) -> tuple[str, int] | None:
        broker = self.context.image.brokers.get(broker_id)
        return self.state.inter_broker_endpoint(broker) if broker is not None else None  # inter.broker.listener.name

    # -- metadata -------------------------------------------------------------------------

    def apply(self, offset: int, records: Sequence[Record]) -> None:
        """The Quorum's delivery: apply committed ``records`` (the last at ``offset``) and act."""
        image = self.context.image
        if offset <= image.offset:
            return  # delivered already (a re-subscription from an older offset)
        delta = image.apply(offset, records)
        node = self.context.node_id
        now = self.clock_ms()
        if delta.broker_configs & {"", str(node)}:
            # Dynamic broker configs (KIP-226) first, so that logs opened below take them.
            self.state.apply_broker_configs(image)
        if delta.acls:
            self.state.apply_acls(image)
        for topic_id, name in delta.deleted_topics.items():
            gone = [key for key in self.hosted if key[0] == topic_id]
            self.fetchers.remove(gone)
            for key in gone:
                del self.hosted[key]
            self.state.drop_topic(topic_id)
            log.info("broker %d: topic %s deleted", node, name)
        for topic_id in delta.configs:
            # ConfigRecords: the broker's topic takes the image's configs, its logs the new
            # log settings (retention, segments, max.message.bytes...) at once.
            self.state.ensure_topic(image.topics[topic_id])
        changed: dict[uuid.UUID, list[int]] = {}
        for topic_id, index in delta.changed:
            changed.setdefault(topic_id, []).append(index)
        targets: list[FetchTarget] = []
        leaving: list[tuple[uuid.UUID, int]] = []
        for topic_id, indexes in changed.items():
            image_topic = image.topics[topic_id]
            topic = self.state.ensure_topic(image_topic)
            for index in sorted(indexes):
                reg = image_topic.partitions[index]
                partition = self.state.partition(topic, index)
                if partition is None:
                    raise RuntimeError(f"broker {node} has no partition {image_topic.name}-{index} after ensure_topic")
                key = (topic_id, index)
                try:
                    if node in reg.replicas and partition.log is None:
                        # Before the registration: a replica's HW must come from its checkpoint first.
                        self.state.open_replica_log(topic, index)
                    transition = partition.apply_registration(reg, now)
                except Exception:  # one replica that cannot open (a storage error) must not stop the others
                    log.exception("broker %d: cannot apply %s to %s-%d", node, reg, image_topic.name, index)
                    continue
                if partition.role is ReplicaRole.NONE:
                    self.hosted.pop(key, None)
                else:
                    self.hosted[key] = partition
                if transition in _TOLD:
                    self._tell(partition, transition)
                if transition in (Transition.BECAME_LEADER, Transition.STOPPED):
                    leaving.append(key)
                elif transition is Transition.BECAME_FOLLOWER:
                    if reg.leader == NO_LEADER:
                        leaving.append(key)  # nothing to fetch from until a leader is elected
                    else:
                        targets.append(FetchTarget(topic=image_topic.name, topic_id=topic_id, index=index,
                                                   leader=reg.leader, leader_epoch=reg.leader_epoch))
        if leaving:
            self.fetchers.remove(leaving)
        if targets:
            self.fetchers.set_targets(targets)

    def _tell(self, partition: Partition, transition: Transition) -> None:
        for listener in self.leadership_listeners:
            try:
                listener(partition, transition)
            except Exception:  # a listener's failure must not stop the metadata
                log.exception("broker %d: a listener failed on %s of %s-%d", self.context.node_id,
                              transition.name, partition.topic, partition.index)

    # -- upkeep ---------------------------------------------------------------------------

    def maybe_alter_isr(self) -> None:
        """ISR upkeep (Kafka's ``maybeShrinkIsr``, run every ``replica.lag.time.max.ms / 2``):
        every partition led here proposes its next ISR through ``state.propose_isr``, the
        one owner of the AlterPartition request, which a follower's Fetch also calls
        (Kafka expands the ISR on the fetch that caught a replica up)."""
        for partition in list(self.hosted.values()):
            if partition.role is ReplicaRole.LEADER:
                self.state.propose_isr(partition)

    def checkpoint(self) -> None:
        """Write the high watermarks and recovery points of the hosted replicas."""
        hw: dict[tuple[str, int], int] = {}
        recovery: dict[tuple[str, int], int] = {}
        for partition in self.hosted.values():
            local = partition.log
            if local is not None and not local.offline:
                hw[(partition.topic, partition.index)] = local.high_watermark
                recovery[(partition.topic, partition.index)] = local.recovery_point
        self.state.storage.save_offset_checkpoints(hw, recovery)

    async def run(self) -> None:
        """ISR upkeep every ``replica.lag.time.max.ms / 2``; checkpoints every
        ``replica.high.watermark.checkpoint.interval.ms``; until :meth:`close`."""
        loop = asyncio.get_running_loop()
        isr_every = self.config["replica.lag.time.max.ms"] / 2000
        checkpoint_every = self.config["replica.high.watermark.checkpoint.interval.ms"] / 1000
        next_isr = loop.time() + isr_every
        next_checkpoint = loop.time() + checkpoint_every
        while not self._closed.is_set():
            try:
                await wait_for(self._closed.wait(), max(0.0, min(next_isr, next_checkpoint) - loop.time()))
                return
            except TimeoutError:
                pass
            now = loop.time()
            if now >= next_isr:
                next_isr = now + isr_every
                self.maybe_alter_isr()
            if now >= next_checkpoint:
                next_checkpoint = now + checkpoint_every
                try:
                    self.checkpoint()
                except OSError:
                    log.exception("broker %d: cannot write the offset checkpoints", self.context.node_id)

    async def close(self, *, crash: bool) -> None:
        """Stop :meth:`run` and the fetchers; a clean close writes the checkpoints (a crash
        writes nothing, as a killed broker would not)."""
        self._closed.set()
        await self.fetchers.close()
        if not crash:
            self.checkpoint()
