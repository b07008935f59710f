"""The broker's state: topics, their partitions and ids, producer ids, groups.

Handlers read and change it; the server owns one. Every ``Topic.partitions[i]`` is a
:class:`~minibroker.cluster.partition.Partition` (this broker's replica: role, ISR, high
watermark) whose ``log`` is the local log. A single broker's are *solo* (leader at epoch
0, ISR = itself, high watermark = log end). A cluster broker (``cluster=``, a
:class:`~minibroker.cluster.api.ClusterContext`) takes its topics from the metadata image
(:meth:`BrokerState.ensure_topic`, :meth:`BrokerState.drop_topic`), opens logs only for the
replicas it hosts, gets producer ids in blocks from the controller and answers for the
groups whose ``__consumer_offsets`` partition it leads (:meth:`BrokerState.coordinates`,
:meth:`BrokerState.coordinator_error`): the replica manager tells it of each leadership
change (:meth:`BrokerState.leadership_changed`), and a new leader loads the partition's
committed offsets from its log before it answers for those groups; its commits are
written with acks=all (:meth:`BrokerState.replicate_offsets`).
:meth:`BrokerState.leader_partition` is the one place a partition-scoped request is
resolved, raising the error Kafka answers (unknown, offline, fenced, not the leader). Files are :mod:`minibroker.storage`'s
business. Two pieces are asynchronous: :meth:`BrokerState.wait_for_data`, which
long-polled fetches await and every append wakes, and :meth:`BrokerState.grow_topic`,
which makes partitions one at a time so that other connections are served meanwhile.
Committed offsets are written to the internal ``__consumer_offsets`` topic, created on
the first commit as Kafka does, and read back when the state is built. Producer ids are
handed out by a :class:`~minibroker.coordinator.producer_state.ProducerIdManager`, never twice.
The partitions' side of transactions (KIP-98) is the producer state's: transactional
batches open a producer's transaction on a partition, :meth:`BrokerState.write_txn_markers`
closes it and indexes an abort in the ``.txnindex``; a follower does the same as it copies
the leader's batches, and every start, leader change or truncation replays the log, so the
last stable offset (:attr:`Partition.last_stable_offset`) is right on every replica.

A file that cannot be written (a full disk) leaves the state as it was: a topic created,
grown, reconfigured or deleted is recorded in the topics file before it counts, and
what was made for it is removed if that fails; the caller answers KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

from kproto._loop import wait_for
from kproto.errors import (
    CoordinatorNotAvailableError,
    KafkaCodeError,
    KafkaStorageError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from kproto.records import Batch, ControlType, build_control_batch, read_batches
from kproto.structs import validate_topic_name
from minibroker.acl_store import AclStore
from minibroker.authorizer import INTER_BROKER_PRINCIPAL, Authorizer
from minibroker.cluster.api import AlterPartitionRequest, ClusterContext, ReplicaBrokerEpoch
from minibroker.cluster.metadata import MetadataImage, TopicImage
from minibroker.cluster.partition import Partition, Transition
from minibroker.config import BrokerConfig
from minibroker.coordinator import GroupCoordinator
from minibroker.coordinator.group_coordinator import PartitionLoad
from minibroker.coordinator.offsets import OffsetEntry
from minibroker.coordinator.offsets_log import (
    OFFSETS_TOPIC,
    offsets_batch,
    partition_for,
    read_offset_records,
    txn_offsets_batch,
)
from minibroker.coordinator.producer_state import (
    CompletedTxn,
    ProducerIdManager,
    ProducerInfo,
    ProducerStates,
)
from minibroker.coordinator.txn_coordinator import TransactionCoordinator, TxnBackend
from minibroker.coordinator.txn_log import TRANSACTION_STATE_TOPIC, read_txn_records
from minibroker.coordinator.txn_log import partition_for as txn_partition_for
from minibroker.log import PartitionLog
from minibroker.log.maintenance import maintain as maintain_logs
from minibroker.log.txn_index import AbortedTxn
from minibroker.quota_store import open_client_quotas
from minibroker.scram_credentials import ScramCredentials
from minibroker.storage import Storage, StoredTopic
from minibroker.topic_configs import effective

__all__ = ["INTERNAL_TOPICS", "OFFSETS_TOPIC", "TRANSACTION_STATE_TOPIC", "BrokerState", "RemoteTxnMarkers", "RemoteTxnVerify", "Topic",
           "validate_topic_name"]

INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})  # written by the broker only

#: A cluster broker's way to write markers on another broker (WriteTxnMarkers, set by its
#: node: :func:`minibroker.cluster.txn_markers.send_txn_markers`).
RemoteTxnMarkers = Callable[..., Awaitable[dict[tuple[str, int], int]]]

#: A cluster broker's way to ask another broker's transaction coordinator whether
#: partitions are in a transaction (KIP-890, AddPartitionsToTxn v4+; set by its node:
#: :class:`minibroker.cluster.txn_markers.AddPartitionsToTxnSender`).
RemoteTxnVerify = Callable[..., Awaitable[dict[tuple[str, int], int]]]

log = logging.getLogger(__name__)


def _batches(log: PartitionLog) -> Iterator[Batch]:
    """Every batch of a log, oldest first (headers are what callers read)."""
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        last = None
        for batch in read_batches(log.read(offset, 1 << 20), check_crc=False):  # recovery checked them
            last = batch
            yield batch
        if last is None:
            return
        offset = last.base_offset + last.last_offset_delta + 1


@dataclass
class Topic:
    """A topic and this broker's replica of each of its partitions
    (:class:`~minibroker.cluster.partition.Partition`: solo ones for a single broker, each
    with its log; in a cluster, ``Partition.log`` is None for a partition hosted elsewhere)."""

    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str | None] = field(default_factory=dict)

    def logs(self) -> list[PartitionLog]:
        """The local logs of the partitions hosted here, by index."""
        return [p.log for p in self.partitions if p.log is not None]


class BrokerState:
    """Everything one broker knows. Used from the server's event loop only."""

    def __init__(self, config: BrokerConfig, host: str, port: int, *, cluster: ClusterContext | None = None):
        self.config = config
        self.node_id: int = config["broker.id"] if cluster is None else cluster.node_id
        self.cluster = cluster
        self.host = host
        self.port = port
        self.topics: dict[str, Topic] = {}
        # Names of topics whose partitions are being made (grow_topic), deleted meanwhile or not.
        self.growing: set[str] = set()
        self.producers = ProducerStates(config["producer.id.expiration.ms"])
        # Classic groups and committed offsets; a cluster broker's commits wait for acks=all.
        self.groups = GroupCoordinator(config, journal=self._write_offsets,
                                       replicated_journal=None if cluster is None else self.replicate_offsets,
                                       txn_journal=self._write_txn_offsets)
        # The transaction coordinator (issue 14): its state is __transaction_state.
        self.transactions = TransactionCoordinator(config, TxnBackend(
            partition_count=self._txn_partition_count, append=self._append_txn_log,
            write_markers=self._write_txn_markers_anywhere, partition_exists=self.topic_partition_exists,
            new_producer_id=self.new_producer_id_async), solo=cluster is None)
        self.remote_txn_markers: RemoteTxnMarkers | None = None
        self.remote_txn_verify: RemoteTxnVerify | None = None
        self._data = asyncio.Event()
        dirs = [d.strip() for d in config["log.dirs"].split(",") if d.strip()]
        self.storage = Storage(config, dirs)
        self.producer_ids: ProducerIdManager | None = None
        self._hw_checkpoint: dict[tuple[str, int], int] = {}
        self._id_block = (0, 0)  # cluster: the controller's block being handed out, [first, end)
        self._id_lock = asyncio.Lock()
        self._proposing: set[tuple[uuid.UUID, int]] = set()  # partitions with an AlterPartition under way
        self._tasks: set[asyncio.Task[None]] = set()
        #: The clock every Partition call is given (ms): the replica manager must use the same.
        self.clock_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000)
        #: The advertised (host, port) of each listener by name; the server fills it once bound.
        self.endpoints: dict[str, tuple[str, int]] = {}
        try:
            self.quotas = open_client_quotas(config, self.storage.log_dirs, cluster)  # KIP-13/55/219
            #: SCRAM users (issue 15), in the first log directory; a cluster's, in its metadata image.
            self.scram_credentials = (
                ScramCredentials(None, held=cluster.image.scram_credentials) if cluster is not None
                else ScramCredentials(self.storage.log_dirs[0] if self.storage.persistent else None))
            # The ACLs and who may do what (issue 15): a cluster's are in the metadata image.
            acls = AclStore(self.storage.log_dirs if cluster is None else [])
            # The anonymous client-id stopgap only where the brokers reach each other over
            # PLAINTEXT; on a secured inter-broker listener they log in and are super.users.
            plaintext_brokers = cluster is not None and config.security_protocols.get(
                config.inter_broker_listener_name) == "PLAINTEXT"
            self.authorizer = Authorizer(config, acls.load(), journal=acls.save, inter_broker_principal=(
                INTER_BROKER_PRINCIPAL if plaintext_brokers else None))
            self._load()
        except BaseException:
            self.close()  # the directories are not left locked by a broker that failed to start
            raise

    def endpoint(self, listener_name: str) -> tuple[str, int]:
        """``(host, port)`` that the clients of a listener are told (Kafka answers Metadata,
        DescribeCluster and FindCoordinator with the endpoints of the request's listener)."""
        return self.endpoints.get(listener_name, (self.host, self.port))

    def cluster_endpoint(self, registration: Any, listener_name: str) -> tuple[str, int] | None:
        """In a MiniCluster, :meth:`endpoint` of another broker: that of its registration in
        the metadata image (a :class:`~minibroker.cluster.metadata.BrokerRegistration`, which
        carries every listener); None when it has no such listener (Kafka leaves it out of
        that listener's answers)."""
        return registration.endpoint(listener_name)

    def inter_broker_endpoint(self, registration: Any) -> tuple[str, int]:
        """Where this broker's own requests to another broker go (replica fetches,
        WriteTxnMarkers, AddPartitionsToTxn verification): its ``inter.broker.listener.name``
        listener (Kafka's ``interBrokerListenerName``), else its first."""
        return (registration.endpoint(self.config.inter_broker_listener_name)
                or (registration.host, registration.port))

    def _load(self) -> None:
        """Read back the topics, their logs, the producer state and the committed offsets.

        A cluster broker reads none of them here: its topics come from the metadata image
        (:meth:`ensure_topic`), its logs are opened as replicas (:meth:`open_replica_log`),
        its producer ids come from the controller. It checks ``meta.properties`` and reads
        the high watermark checkpoint its replicas start from.
        """
        if self.cluster is not None:
            self.storage.check_meta_properties(self.node_id, self.config["cluster.id"])
            self._hw_checkpoint = self.storage.load_hw_checkpoint()
            self.producer_ids = None
            return
        stored_topics = self.storage.load_topics()
        self.storage.recover({t.name: (t.topic_id, t.partitions) for t in stored_topics})
        for stored in stored_topics:
            self.topics[stored.name] = Topic(stored.name, stored.topic_id, [], stored.configs)
            self._open_partitions(self.topics[stored.name], stored.partitions)
        next_producer_id = self.storage.load_producer_id_block()
        for topic in self.topics.values():  # idempotence and open transactions must survive a restart
            for partition in topic.partitions:
                next_producer_id = max(next_producer_id, self._rebuild_producers(partition) + 1)
        self.producer_ids = ProducerIdManager(next_producer_id, self.storage.save_producer_id_block)
        if OFFSETS_TOPIC in self.topics:
            for log in self.topics[OFFSETS_TOPIC].logs():
                pending: dict[int, list[OffsetEntry]] = {}  # transactional commits of open transactions
                self.groups.load_offsets(list(read_offset_records(log.read, log.log_start_offset, log.log_end_offset,
                                                                  pending)), pending)
        if TRANSACTION_STATE_TOPIC in self.topics:
            logs = self.topics[TRANSACTION_STATE_TOPIC].logs()
            self.transactions.load((entry for log in logs
                                    for entry in read_txn_records(log.read, log.log_start_offset, log.log_end_offset)),
                                   len(logs))

    def _solo(self, topic: Topic, index: int, log: PartitionLog) -> Partition:
        """A single broker's partition: leader at epoch 0, ISR = this broker, HW = LEO
        (an empty log's epoch cache gets ``(0, 0)``, so OffsetForLeaderEpoch answers
        epoch 0 up to the log end)."""
        partition = Partition.solo(topic=topic.name, topic_id=topic.topic_id, index=index, node_id=self.node_id, log=log)
        self._hook(partition)
        return partition

    def _hook(self, partition: Partition) -> None:
        key = (partition.topic_id, partition.index)
        partition.on_high_watermark = lambda: self._high_watermark_moved(partition)
        partition.on_become_leader = self._rebuild_producers
        partition.on_truncated = self._rebuild_producers
        partition.on_follower_append = self._follower_appended
        partition.first_unstable_offset = lambda hw: self.producers.first_unstable_offset(key, hw)

    def _rebuild_producers(self, partition: Partition) -> int:
        """Idempotence and transactions across a restart, a leader change or a truncation:
        the producer state of a partition is what its log holds (Kafka's
        ``UnifiedLog.rebuildProducerState``), control batches included; every aborted
        transaction met is indexed if its segment's ``.txnindex`` lacks it (what a crash
        lost). Returns the highest producer id seen (-1: none)."""
        if partition.log is None:
            return -1
        local = partition.log
        return self.producers.rebuild((partition.topic_id, partition.index), _batches(local),
                                      lambda txn, lso: self._index_completed(local, txn, lso))

    def _open_partitions(self, topic: Topic, count: int) -> None:
        for index in range(len(topic.partitions), count):
            topic.partitions.append(self._solo(topic, index, self.storage.open_partition(
                topic.name, topic.topic_id, index, topic.configs)))

    def _save_topics(self, without: Topic | None = None) -> None:
        self.storage.save_topics(StoredTopic(t.name, t.topic_id, len(t.partitions), t.configs)
                                 for t in self.topics.values() if t.partitions and t is not without)

    def create_topic(self, name: str, partitions: int, configs: dict[str, str | None] | None = None) -> Topic:
        """Make a topic and all its partitions at once. A file system error (a full disk)
        leaves nothing of it: the partitions made are deleted, and the error raised."""
        topic = Topic(name, uuid.uuid4(), [], dict(configs or {}))
        try:
            self._open_partitions(topic, partitions)
            self.topics[name] = topic
            self._save_topics()
        except BaseException:
            if self.topics.get(name) is topic:
                del self.topics[name]
            self.storage.delete_partitions(topic.topic_id, topic.logs())
            raise
        return topic

    def delete_topic(self, topic: Topic) -> None:
        """Delete a topic, its logs and every group's committed offsets for it.

        Raises:
            OSError: the topics file could not be written; the topic is still there.
        """
        # The topics file first, as Kafka commits the deletion to its metadata log before
        # any log goes: after a crash in between, the directories left are stray
        # (Storage.recover), never the logs of a topic created later under the name.
        self._save_topics(without=topic)
        del self.topics[topic.name]
        self.groups.delete_topic(topic.name)
        self._forget_producers(topic)
        try:
            self.storage.delete_partitions(topic.topic_id, topic.logs())
        except OSError as exc:  # the topic is gone; the next start removes or sets aside what is left
            log.warning("topic %r: its partition directories could not all be removed: %s", topic.name, exc)

    def _forget_producers(self, topic: Topic) -> None:
        """A deleted topic's producer state goes with it (Kafka's goes with the log)."""
        for index in range(len(topic.partitions)):
            self.producers.forget((topic.topic_id, index))

    def offsets_topic(self) -> Topic:
        """``__consumer_offsets``, created compacted on first use (as Kafka does)."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None and self.cluster is not None:  # the controller creates it (FindCoordinator)
            raise UnknownTopicOrPartitionError(f"{OFFSETS_TOPIC} does not exist yet")
        if topic is None:
            topic = self.create_topic(OFFSETS_TOPIC, self.config["offsets.topic.num.partitions"], {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config["offsets.topic.segment.bytes"]),
            })
        return topic

    def _offsets_partition(self, group_id: str) -> tuple[Topic, Partition]:
        """The offsets topic and the group's partition of it, led here.

        Raises:
            UnknownTopicOrPartitionError: the offsets topic does not exist and cannot be
                made (a full disk): the error Kafka's append would meet.
            NotLeaderOrFollowerError, KafkaStorageError: see :meth:`leader_partition`.
        """
        try:
            topic = self.offsets_topic()
        except (OSError, KafkaStorageError) as exc:
            raise UnknownTopicOrPartitionError(f"{OFFSETS_TOPIC} could not be created: {exc}") from exc
        return topic, self.leader_partition(topic, partition_for(group_id, len(topic.partitions)))

    def _append_offsets(self, partition: Partition, entries: list[OffsetEntry]) -> None:
        now_ms = int(time.time() * 1000)
        builder = offsets_batch(entries, now_ms)
        partition.append_as_leader(builder.build(), last_offset_delta=builder.record_count - 1, max_timestamp=now_ms)
        self.data_arrived()

    def _write_offsets(self, group_id: str, entries: list[OffsetEntry]) -> None:
        """The offset store's journal: one batch on the group's partition of the offsets
        topic, counted once appended (a single broker's commits; a cluster's deletions and
        expiry tombstones, which Kafka's classic coordinator appends with acks=0).

        Raises:
            UnknownTopicOrPartitionError, NotLeaderOrFollowerError: see :meth:`_offsets_partition`.
            KafkaStorageError: the append failed (see :meth:`PartitionLog.append`).
        """
        self._append_offsets(self._offsets_partition(group_id)[1], entries)

    async def replicate_offsets(self, group_id: str, entries: list[OffsetEntry]) -> int:
        """A cluster's commit (the group coordinator's replicated journal): one batch on the
        group's partition, then wait until every ISR member has it, the Produce path's
        acks=all (:meth:`Partition.wait_for_ack`, Kafka's ``DelayedProduce``), for at most
        ``offsets.commit.timeout.ms``. Returns 0, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        NOT_LEADER_OR_FOLLOWER (leadership lost) or REQUEST_TIMED_OUT; the coordinator
        maps them (Kafka's ``GroupMetadataManager.storeOffsets``).

        Raises:
            NotEnoughReplicasError: the ISR is smaller than the topic's
                ``min.insync.replicas``; nothing is appended (``appendRecordsToLeader``).
            UnknownTopicOrPartitionError, NotLeaderOrFollowerError, KafkaStorageError: as
                :meth:`_write_offsets`.
        """
        topic, partition = self._offsets_partition(group_id)
        min_isr = self._min_isr(topic, partition)
        self._append_offsets(partition, entries)
        return await self._acked(partition, min_isr, self.config["offsets.commit.timeout.ms"])

    # The broker's own acks=all writes (replicated commits, the transaction log, markers,
    # transactional commits) check and wait through these two, as a Produce does.

    def _min_isr(self, topic: Topic, partition: Partition) -> int:
        """The topic's ``min.insync.replicas``, checked before an acks=all append (Kafka's
        ``Partition.appendRecordsToLeader``).

        Raises:
            NotEnoughReplicasError: the ISR is smaller: nothing may be appended.
        """
        min_isr = int(effective(topic.configs, "min.insync.replicas", self.config))
        if len(partition.isr) < min_isr:
            raise NotEnoughReplicasError(f"the ISR {list(partition.isr)} of {partition.topic}-{partition.index} "
                                         f"is below min.insync.replicas={min_isr}")
        return min_isr

    async def _acked(self, partition: Partition, min_isr: int, timeout_ms: int) -> int:
        """Wait until every ISR member has the partition's log end (acks=all, Kafka's
        ``DelayedProduce``), for at most ``timeout_ms``: 0, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        NOT_LEADER_OR_FOLLOWER (leadership lost) or REQUEST_TIMED_OUT."""
        assert partition.log is not None
        try:
            return await wait_for(partition.wait_for_ack(partition.log.log_end_offset, min_isr),
                                          timeout_ms / 1000)
        except TimeoutError:
            return RequestTimedOutError.code

    def new_topic(self, name: str, configs: dict[str, str | None] | None = None) -> Topic:
        """A topic with no partitions yet, for CreateTopics to give them with :meth:`grow_topic`.

        It exists at once (a second create of the name is refused; a DeleteTopics deletes
        it) but is listed in the topics file only once it has partitions.
        """
        topic = Topic(name, uuid.uuid4(), [], dict(configs or {}))
        self.topics[name] = topic
        return topic

    async def grow_topic(self, topic: Topic, count: int) -> None:
        """Give ``topic`` partitions up to ``count``, yielding to the event loop after each.

        On disk a partition costs a few fsyncs (milliseconds), so thousands of them must
        not hold up every other connection (issue 10, item 9). The new partitions appear
        together, with the topics file, once all exist: a crash midway leaves directories
        of no known partition, which the next start sets aside as stray, and nothing was
        written to them. While a topic grows, its name is in :attr:`growing`: it may not
        grow again, nor a topic of that name be created.
        """
        self.growing.add(topic.name)
        made: list[PartitionLog] = []
        try:
            for index in range(len(topic.partitions), count):
                if self.topics.get(topic.name) is not topic:  # deleted meanwhile
                    break
                made.append(self.storage.open_partition(topic.name, topic.topic_id, index, topic.configs))
                await asyncio.sleep(0)
        except BaseException:
            self.storage.delete_partitions(topic.topic_id, made)
            if not topic.partitions and self.topics.get(topic.name) is topic:
                del self.topics[topic.name]
            raise
        finally:
            self.growing.discard(topic.name)
        if self.topics.get(topic.name) is not topic:
            self.storage.delete_partitions(topic.topic_id, made)
            return
        for log in made:  # AlterConfigs may have come meanwhile
            log.config = self.storage.log_config(topic.configs)
        first = len(topic.partitions)
        topic.partitions.extend(self._solo(topic, first + i, log) for i, log in enumerate(made))
        try:
            self._save_topics()
        except BaseException:  # the topics file is as before: so is the topic
            del topic.partitions[len(topic.partitions) - len(made):]
            if not topic.partitions and self.topics.get(topic.name) is topic:
                del self.topics[topic.name]
            self.storage.delete_partitions(topic.topic_id, made)
            raise

    def set_topic_configs(self, topic: Topic, configs: dict[str, str | None]) -> None:
        """Replace a topic's configs; its logs take the new log settings at once.

        Raises:
            OSError: the topics file could not be written; nothing changed.
        """
        previous, topic.configs = topic.configs, configs
        try:
            self._save_topics()
        except BaseException:
            topic.configs = previous
            raise
        for log in topic.logs():
            log.config = self.storage.log_config(configs)

    async def maintain(self) -> None:
        """Retention, then compaction, on every partition (``log.retention.check.interval.ms``),
        the heavy work in a worker thread (see :mod:`minibroker.log.maintenance`)."""
        await maintain_logs(log for topic in list(self.topics.values()) for log in topic.logs())

    def close(self) -> None:
        self.transactions.close()
        for task in list(self._tasks):
            task.cancel()
        for topic in self.topics.values():
            for log in topic.logs():
                log.close()
        self.storage.close()

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    # -- partitions -------------------------------------------------------------------------

    def partition(self, topic: Topic | None, index: int) -> Partition | None:
        """This broker's replica state of ``topic``'s partition ``index``, or None when the
        topic has no such partition."""
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def leader_partition(self, topic: Topic | None, index: int, current_leader_epoch: int = -1, *,
                         require_leader: bool = True) -> Partition:
        """The partition a leader-only request (Produce, Fetch, ListOffsets,
        OffsetForLeaderEpoch, DeleteRecords) acts on; the one place that resolves one.
        ``require_leader`` False also accepts a follower (a consumer's Fetch v11+, KIP-392).

        Kafka's ``ReplicaManager.getPartitionOrException`` then
        ``Partition.localLogWithEpochOrThrow``, in that order:

        Raises:
            UnknownTopicOrPartitionError: no such topic or partition.
            KafkaStorageError: the local log is offline (a storage error).
            FencedLeaderEpochError, UnknownLeaderEpochError: ``current_leader_epoch``
                (-1: not checked) is older / newer than the partition's (KIP-320).
            NotLeaderOrFollowerError: this broker does not lead the partition.
        """
        partition = self.partition(topic, index)
        if partition is None:
            raise UnknownTopicOrPartitionError(f"no partition {index} of topic {topic.name if topic else None!r}")
        if partition.log is not None and partition.log.offline:
            raise KafkaStorageError(f"the log of {partition.topic}-{index} is offline after a storage error")
        partition.check_leader(current_leader_epoch, require_leader=require_leader)
        return partition

    # -- cluster mode: the metadata image's topics -------------------------------------------

    def ensure_topic(self, image: TopicImage) -> Topic:
        """The topic as the metadata image has it (cluster mode): made or grown to the
        image's partitions, each a :class:`Partition` in role NONE until the replica manager
        applies its registration; the partitions this broker hosts get their log first
        (:meth:`open_replica_log`). Configs changed in the image are taken, and the logs get
        their new settings. A topic of that name with another id (deleted and created
        again) is dropped first."""
        topic = self.topics.get(image.name)
        if topic is not None and topic.topic_id != image.topic_id:
            self.drop_topic(topic.topic_id)
            topic = None
        if topic is None:
            topic = Topic(image.name, image.topic_id, [], dict(image.configs))
            self.topics[image.name] = topic
        elif topic.configs != image.configs:  # ConfigRecords: the logs take the new settings at once
            topic.configs = dict(image.configs)
            for partition_log in topic.logs():
                partition_log.config = self.storage.log_config(topic.configs)
        for index in range(len(topic.partitions), max(image.partitions, default=-1) + 1):
            partition = Partition(topic=topic.name, topic_id=topic.topic_id, index=index, node_id=self.node_id)
            self._hook(partition)
            topic.partitions.append(partition)
        for index, registration in image.partitions.items():
            if self.node_id in registration.replicas:
                self.open_replica_log(topic, index)
        return topic

    def apply_acls(self, image: MetadataImage) -> None:
        """Take the image's ACLs (a cluster broker's authorizer: the controller keeps them)."""
        self.authorizer.load(record.binding() for record in image.acls.values())

    def apply_broker_configs(self, image: MetadataImage) -> None:
        """This broker's dynamic configs as the metadata image has them (cluster mode,
        KIP-226): the cluster default's ("") and its own (its id); every log takes the new
        settings at once. The metadata log keeps them: nothing is written here."""
        self.config.load_dynamic({"default": image.broker_configs.get("", {}),
                                  "broker": image.broker_configs.get(str(self.node_id), {})})
        for topic in self.topics.values():
            for partition_log in topic.logs():
                partition_log.config = self.storage.log_config(topic.configs)

    def open_replica_log(self, topic: Topic, index: int) -> PartitionLog:
        """The local log of a replica hosted here (opened once, with its leader epoch
        checkpoint, and attached to the partition). Its high watermark starts at the
        ``replication-offset-checkpoint``'s, capped by its LEO, or at its log start without
        one (Kafka's ``UnifiedLog`` startup): a replica that becomes leader must not show
        records the old ISR never had. Its producer state is rebuilt from it."""
        partition = topic.partitions[index]
        if partition.log is not None:
            return partition.log
        log = self.storage.open_partition(topic.name, topic.topic_id, index, topic.configs, replicated=True)
        checkpoint = self._hw_checkpoint.get((topic.name, index))
        log.set_high_watermark(min(checkpoint, log.log_end_offset) if checkpoint is not None else log.log_start_offset)
        partition.attach_log(log)
        self._rebuild_producers(partition)
        return log

    def drop_topic(self, topic_id: uuid.UUID) -> None:
        """Forget a topic the controller deleted (cluster mode): its logs are closed and
        their directories deleted, its committed offsets forgotten."""
        topic = self.topic_by_id(topic_id)
        if topic is None:
            return
        del self.topics[topic.name]
        self.groups.delete_topic(topic.name)
        self._forget_producers(topic)
        logs = topic.logs()
        for partition_log in logs:
            partition_log.close()
        try:
            self.storage.delete_partitions(topic_id, logs)
        except OSError as exc:
            log.warning("topic %r: its partition directories could not all be removed: %s", topic.name, exc)

    def isr_eligible(self, broker_id: int, broker_epoch: int) -> bool:
        """Whether a replica may join an ISR: its broker registered and unfenced, with the
        broker epoch it fetched with (-1: not known; KIP-903, Kafka's ``isReplicaIsrEligible``)."""
        if self.cluster is None:
            return False
        broker = self.cluster.image.brokers.get(broker_id)
        return broker is not None and not broker.fenced and broker_epoch in (-1, broker.broker_epoch)

    def propose_isr(self, partition: Partition) -> None:
        """Propose the leader's next ISR to the controller (AlterPartition, KIP-497) if it
        should change, without waiting: a follower fetch calls it, as Kafka's leader
        expands the ISR on the fetch that caught it up. One proposal per partition at a
        time; the change takes effect when the committed registration comes back through
        the replica manager. Errors are logged; the next fetch or ISR upkeep tick retries."""
        if self.cluster is None or (partition.topic_id, partition.index) in self._proposing:
            return
        new_isr = partition.isr_change(self.clock_ms(), self.config["replica.lag.time.max.ms"], self.isr_eligible)
        if new_isr is None:
            return
        cluster = self.cluster
        request = AlterPartitionRequest(
            broker_id=self.node_id, broker_epoch=cluster.broker_epoch, topic_id=partition.topic_id,
            partition=partition.index, leader_epoch=partition.leader_epoch, partition_epoch=partition.partition_epoch,
            new_isr=tuple(ReplicaBrokerEpoch(
                broker_id=r,
                broker_epoch=cluster.broker_epoch if r == self.node_id else (
                    partition.followers[r].broker_epoch if r in partition.followers else -1))
                for r in new_isr))
        key = (partition.topic_id, partition.index)

        async def propose() -> None:
            try:
                reply = await cluster.channel.alter_partition(request)
                if reply.error_code:
                    log.info("%s-%d: AlterPartition to ISR %s refused with error %d", partition.topic,
                             partition.index, list(new_isr), reply.error_code)
            except Exception:
                log.warning("%s-%d: AlterPartition to ISR %s failed", partition.topic, partition.index,
                            list(new_isr), exc_info=True)
            finally:
                self._proposing.discard(key)

        self._proposing.add(key)
        self._spawn(propose())

    def coordinator_error(self, group_id: str) -> int:
        """What a group request gets before the group is asked: 0 when this broker holds
        the group; NOT_COORDINATOR when another broker coordinates it (the client looks
        it up again); COORDINATOR_LOAD_IN_PROGRESS while this new coordinator loads its
        partition of ``__consumer_offsets`` (Kafka's ``validateGroupStatus``). Always 0 for
        a single broker."""
        if self.cluster is None:
            return 0
        if not self.coordinates(group_id):
            return NotCoordinatorError.code
        return self.groups.status(group_id)

    def leadership_changed(self, partition: Partition, transition: Transition) -> None:
        """The replica manager's hook: a replica became leader, follower or none here.

        For ``__consumer_offsets`` (Kafka's ``GroupCoordinator.onElection`` /
        ``onResignation``): a new leader loads the partition's groups in a task
        (:meth:`_load_groups`); a broker that stops leading it unloads them.
        """
        if partition.topic == TRANSACTION_STATE_TOPIC:
            self._transactions_leadership_changed(partition, transition)
        if partition.topic != OFFSETS_TOPIC:
            return
        if transition is Transition.BECAME_LEADER:
            load = self.groups.begin_load(partition.index, len(self.topics[OFFSETS_TOPIC].partitions))
            if load is not None:
                self._spawn(self._load_groups(partition, load))
        elif transition in (Transition.BECAME_FOLLOWER, Transition.STOPPED):
            self.groups.unload(partition.index)

    async def _load_groups(self, partition: Partition, load: PartitionLoad) -> None:
        """Kafka's ``GroupMetadataManager.loadGroupsAndOffsets`` for one partition: replay
        the commits of the local log into the group coordinator.

        The log is read up to the LEO it had on election, once the high watermark has
        reached it: a new leader's high watermark lags its log until its followers fetch,
        and what it holds past it may be commits the old leader acknowledged (every ISR
        member had them). Waiting for the high watermark (the acks=all wait, min ISR 1)
        means every loaded commit is on the ISR; a leadership lost meanwhile ends the wait
        (the partition was unloaded).
        """
        local = partition.log
        assert local is not None
        end = local.log_end_offset
        if await partition.wait_for_ack(end, 1):
            return  # no longer the leader
        pending: dict[int, list[OffsetEntry]] = {}  # transactional commits of open transactions
        try:
            entries = list(read_offset_records(local.read, local.log_start_offset, end, pending))
        except Exception:
            log.exception("%s-%d: cannot load its groups", OFFSETS_TOPIC, partition.index)
            self.groups.unload(partition.index)  # NOT_COORDINATOR rather than empty groups
            return
        self.groups.finish_load(load, entries, pending)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task of this broker (cancelled by :meth:`close`, :meth:`abandon`)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def coordinates(self, group_id: str) -> bool:
        """Whether this broker is the group's coordinator: always for a single broker; in a
        cluster, when it leads the group's partition of ``__consumer_offsets`` (Kafka's
        ``GroupCoordinator`` placement)."""
        if self.cluster is None:
            return True
        image = self.cluster.image.topic_by_name(OFFSETS_TOPIC)
        if image is None or not image.partitions:
            return False
        registration = image.partitions.get(partition_for(group_id, len(image.partitions)))
        return registration is not None and registration.leader == self.node_id

    def abandon(self) -> None:
        """A crash: every log closed without writing anything (:meth:`PartitionLog.abandon`),
        the directories' locks released; no checkpoint, no flush."""
        self.transactions.close()
        for task in list(self._tasks):
            task.cancel()
        for topic in self.topics.values():
            for log in topic.logs():
                log.abandon()
        self.storage.close()

    # -- transaction markers -----------------------------------------------------------------

    async def write_txn_markers(self, *, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                commit: bool, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Write one transaction's COMMIT or ABORT marker (a control batch) to each of
        ``partitions`` led here; returns each partition's error code (0: written).

        The one way a marker enters a log, for the WriteTxnMarkers handler and for this
        broker's own transaction coordinator. As Kafka's ``handleWriteTxnMarkersRequest``,
        a marker is appended as the leader with acks=all, bounded by ``request.timeout.ms``:
        it counts once every ISR member has it. The errors are a Produce's
        (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR,
        NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT) and the marker's own
        (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: see
        :mod:`minibroker.coordinator.producer_state`). The marker closes the producer's
        transaction on the partition; an ABORT of a transaction that wrote there goes into
        the ``.txnindex`` of the marker's segment.
        """
        control = ControlType.COMMIT if commit else ControlType.ABORT

        async def write(name: str, index: int) -> int:
            topic = self.topics.get(name)
            try:
                partition = self.leader_partition(topic, index)
                assert topic is not None and partition.log is not None
                min_isr = self._min_isr(topic, partition)
                key = (partition.topic_id, partition.index)
                # ProducerAppendInfo.appendEndTxnMarker's checks (origin COORDINATOR).
                code = self.producers.check_marker(key, producer_id, producer_epoch, coordinator_epoch)
                if code:
                    return code
                now_ms = int(time.time() * 1000)
                marker = build_control_batch(control, producer_id=producer_id, producer_epoch=producer_epoch,
                                             timestamp=now_ms, coordinator_epoch=coordinator_epoch)
                offset = partition.append_as_leader(marker, last_offset_delta=0, max_timestamp=now_ms)
                completed = self.producers.end_txn(key, producer_id, producer_epoch, coordinator_epoch, offset,
                                                   commit=commit, timestamp=now_ms)
                if completed is not None:
                    self._index_completed(partition.log, *completed)
            except KafkaCodeError as exc:
                return exc.code
            self.data_arrived()
            return await self._acked(partition, min_isr, self.config["request.timeout.ms"])

        codes = dict(zip(partitions, await asyncio.gather(*(write(name, index) for name, index in partitions))))
        self._complete_txn_offsets(producer_id, commit, codes)  # pending TxnOffsetCommits of __consumer_offsets
        return codes

    # -- transactions on the partitions (issue 14: the partition side) ------------------------

    def _index_completed(self, local: PartitionLog, txn: CompletedTxn, last_stable_offset: int) -> None:
        """A marker closed ``txn``: an aborted one goes into the aborted-transaction index
        (Kafka's ``LogSegment.updateTxnIndex``; the log skips an entry it has)."""
        if txn.is_aborted:
            local.append_aborted_txn(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, last_stable_offset))

    def _follower_appended(self, partition: Partition, records: bytes | memoryview) -> None:
        """A follower appended the leader's batches: its producer state and aborted index
        follow them (Kafka's ``appendAsFollower``, origin REPLICATION: nothing checked), so
        that its last stable offset and ``.txnindex`` are the leader's."""
        local = partition.log
        assert local is not None
        key = (partition.topic_id, partition.index)
        for batch in read_batches(records, check_crc=False):  # the log checked them
            if batch.last_offset >= local.log_end_offset:
                break
            completed = self.producers.replay(key, batch)
            if completed is not None:
                self._index_completed(local, *completed)

    def _high_watermark_moved(self, partition: Partition) -> None:
        """The high watermark moved up: completed transactions whose marker it passed are
        forgotten (Kafka's ``ProducerStateManager.onHighWatermarkUpdated``), and long-polled
        fetches wake (the LSO may have moved too)."""
        self.producers.on_high_watermark((partition.topic_id, partition.index), partition.high_watermark)
        self.data_arrived()

    def active_producers(self, partition: Partition) -> list[ProducerInfo]:
        """The producers of a partition whose state is kept (DescribeProducers)."""
        return self.producers.producers((partition.topic_id, partition.index))

    # -- the transaction coordinator's broker (issue 14) --------------------------------------

    def transaction_state_topic(self) -> Topic:
        """``__transaction_state``, created compacted on first use by a single broker (as
        Kafka does); a cluster's is created by the controller (FindCoordinator).

        Raises:
            UnknownTopicOrPartitionError: a cluster's does not exist yet.
            OSError, KafkaStorageError: it cannot be made (a full disk).
        """
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None and self.cluster is not None:
            raise UnknownTopicOrPartitionError(f"{TRANSACTION_STATE_TOPIC} does not exist yet")
        if topic is None:
            topic = self.create_topic(TRANSACTION_STATE_TOPIC, self.config["transaction.state.log.num.partitions"], {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config["transaction.state.log.segment.bytes"]),
            })
        return topic

    def _txn_partition_count(self) -> int:
        if self.cluster is None:
            return len(self.transaction_state_topic().partitions)
        image = self.cluster.image.topic_by_name(TRANSACTION_STATE_TOPIC)
        if image is None or not image.partitions:
            raise UnknownTopicOrPartitionError(f"{TRANSACTION_STATE_TOPIC} does not exist yet")
        return len(image.partitions)

    def topic_partition_exists(self, tp: tuple[str, int]) -> bool:
        """Whether the partition exists (a cluster's: in the metadata image), led here or not."""
        if self.cluster is None:
            topic = self.topics.get(tp[0])
            return topic is not None and 0 <= tp[1] < len(topic.partitions)
        image = self.cluster.image.topic_by_name(tp[0])
        return image is not None and tp[1] in image.partitions

    async def _append_txn_log(self, index: int, builder: Any) -> int:
        """The coordinator's write: one batch on partition ``index`` of ``__transaction_state``,
        acks=all within ``request.timeout.ms`` (Kafka's ``appendTransactionToLog``). Returns
        0 or the append's error code; raises the error of an append that cannot be made."""
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        partition = self.leader_partition(topic, index)
        assert topic is not None
        min_isr = self._min_isr(topic, partition)
        now_ms = int(time.time() * 1000)
        partition.append_as_leader(builder.build(), last_offset_delta=builder.record_count - 1, max_timestamp=now_ms)
        self.data_arrived()
        return await self._acked(partition, min_isr, self.config["request.timeout.ms"])

    async def _write_txn_markers_anywhere(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                          commit: bool, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """One transaction's markers on every partition, wherever it is led: here through
        :meth:`write_txn_markers`, on another broker of a cluster by WriteTxnMarkers
        (:attr:`remote_txn_markers`). A partition without a live leader is
        NOT_LEADER_OR_FOLLOWER (the coordinator retries)."""
        async def local(tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
            return await self.write_txn_markers(producer_id=producer_id, producer_epoch=producer_epoch,
                                                coordinator_epoch=coordinator_epoch, commit=commit, partitions=tps)

        if self.cluster is None:
            return await local(partitions)
        image = self.cluster.image
        by_leader: dict[int, list[tuple[str, int]]] = {}
        codes: dict[tuple[str, int], int] = {}
        for tp in partitions:
            topic = image.topic_by_name(tp[0])
            registration = None if topic is None else topic.partitions.get(tp[1])
            broker = None if registration is None else image.brokers.get(registration.leader)
            if registration is None:
                codes[tp] = UnknownTopicOrPartitionError.code
            elif broker is None or broker.fenced:
                codes[tp] = NotLeaderOrFollowerError.code
            else:
                by_leader.setdefault(registration.leader, []).append(tp)

        async def send(leader: int, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
            if leader == self.node_id:
                return await local(tps)
            if self.remote_txn_markers is None:
                return dict.fromkeys(tps, CoordinatorNotAvailableError.code)
            return await self.remote_txn_markers(
                *self.inter_broker_endpoint(image.brokers[leader]), node_id=self.node_id, producer_id=producer_id, producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch, commit=commit, partitions=tps,
                timeout_ms=self.config["request.timeout.ms"])

        for answer in await asyncio.gather(*(send(leader, tps) for leader, tps in by_leader.items())):
            codes.update(answer)
        return codes

    # -- KIP-890: a leader asks the transaction coordinator (issue 14 step 2) ----------------

    async def verify_txn_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                    partitions: list[tuple[str, int]], *,
                                    verify_only: bool = True) -> dict[tuple[str, int], int]:
        """Ask the coordinator of ``transactional_id`` whether ``partitions`` are in the
        producer's ongoing transaction (``verify_only``) or to add them (KIP-890 part 2's
        implicit add); each partition's error code, as the coordinator answers
        AddPartitionsToTxn v4+ (Kafka's ``AddPartitionsToTxnManager.verifyTransaction``).

        The coordinator is this broker's own when it leads the id's partition of
        ``__transaction_state`` (a single broker always), else another broker's, asked
        through :attr:`remote_txn_verify`. No ``__transaction_state`` yet, or no live
        leader of the partition, is COORDINATOR_NOT_AVAILABLE (Kafka's
        ``getTransactionCoordinator``: no transaction can have started)."""
        unavailable = dict.fromkeys(partitions, CoordinatorNotAvailableError.code)
        if self.cluster is None:
            if TRANSACTION_STATE_TOPIC not in self.topics:
                return unavailable
            return await self._verify_here(transactional_id, producer_id, producer_epoch, partitions, verify_only)
        image = self.cluster.image
        topic = image.topic_by_name(TRANSACTION_STATE_TOPIC)
        if topic is None or not topic.partitions:
            return unavailable
        registration = topic.partitions.get(txn_partition_for(transactional_id, len(topic.partitions)))
        broker = None if registration is None else image.brokers.get(registration.leader)
        if registration is None or broker is None or broker.fenced:
            return unavailable
        if registration.leader == self.node_id:
            return await self._verify_here(transactional_id, producer_id, producer_epoch, partitions, verify_only)
        if self.remote_txn_verify is None:
            return unavailable
        return await self.remote_txn_verify(
            *self.inter_broker_endpoint(broker), transactional_id=transactional_id, producer_id=producer_id,
            producer_epoch=producer_epoch, partitions=partitions, verify_only=verify_only,
            timeout_ms=self.config["request.timeout.ms"])

    async def _verify_here(self, transactional_id: str, producer_id: int, producer_epoch: int,
                           partitions: list[tuple[str, int]], verify_only: bool) -> dict[tuple[str, int], int]:
        if verify_only:
            return self.transactions.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
        # A leader's add is KIP-890 part 2's implicit add: the producer uses transaction version 2.
        code = await self.transactions.add_partitions(transactional_id, producer_id, producer_epoch, partitions, 2)
        return dict.fromkeys(partitions, code)

    async def _write_txn_offsets(self, group_id: str, entries: list[OffsetEntry], producer_id: int,
                                 producer_epoch: int) -> int:
        """The group coordinator's journal of transactional commits (TxnOffsetCommit): the
        producer's transactional batch on the group's partition of ``__consumer_offsets``,
        acks=all in a cluster within ``offsets.commit.timeout.ms`` (Kafka's ``storeOffsets``
        with a producer id). Returns 0 or the append's error code; raises as
        :meth:`replicate_offsets`."""
        topic, partition = self._offsets_partition(group_id)
        min_isr = self._min_isr(topic, partition) if self.cluster else 1
        key = (partition.topic_id, partition.index)
        # Kafka appends it through ProducerStateManager with origin COORDINATOR: the epoch is
        # checked (a fenced zombie's late commit is refused), the sequence is not.
        code = self.producers.check_epoch(key, producer_id, producer_epoch)
        if code:
            return code
        now_ms = int(time.time() * 1000)
        builder = txn_offsets_batch(entries, now_ms, producer_id, producer_epoch)
        base = partition.append_as_leader(builder.build(), last_offset_delta=builder.record_count - 1,
                                          max_timestamp=now_ms)
        # The batch opens the producer's transaction on this partition as a Produce's
        # would: the partition's LSO holds at it and an abort is indexed.
        self.producers.record(key, producer_id, producer_epoch, builder.base_sequence, builder.record_count, base,
                              is_transactional=True, max_timestamp=now_ms)
        self.data_arrived()
        return await self._acked(partition, min_isr, self.config["offsets.commit.timeout.ms"])

    def _complete_txn_offsets(self, producer_id: int, commit: bool, codes: dict[tuple[str, int], int]) -> None:
        """A marker written on a partition of ``__consumer_offsets`` ends the producer's
        transactional commits of that partition's groups (Kafka's ``KafkaApis`` calls
        ``GroupCoordinator.scheduleHandleTxnCompletion`` after WriteTxnMarkers)."""
        topic = self.topics.get(OFFSETS_TOPIC)
        for (name, index), code in codes.items():
            if name == OFFSETS_TOPIC and code == 0 and topic is not None:
                self.groups.complete_txn(producer_id, commit, index, len(topic.partitions))

    def _transactions_leadership_changed(self, partition: Partition, transition: Transition) -> None:
        """For ``__transaction_state`` (Kafka's ``TransactionCoordinator.onElection`` /
        ``onResignation``): a new leader loads the partition's transactional ids in a task
        (:meth:`_load_transactions`), at the partition's leader epoch as coordinator
        epoch; a broker that stops leading it unloads them."""
        if transition is Transition.BECAME_LEADER:
            count = len(self.topics[TRANSACTION_STATE_TOPIC].partitions)
            if self.transactions.begin_load(partition.index, count, partition.leader_epoch):
                self._spawn(self._load_transactions(partition, partition.leader_epoch))
        elif transition in (Transition.BECAME_FOLLOWER, Transition.STOPPED):
            self.transactions.unload(partition.index)

    async def _load_transactions(self, partition: Partition, epoch: int) -> None:
        """Kafka's ``loadTransactionsForTxnTopicPartition``: replay the partition's records
        once the high watermark covers the log end it had on election (as
        :meth:`_load_groups`)."""
        local = partition.log
        assert local is not None
        end = local.log_end_offset
        if await partition.wait_for_ack(end, 1):
            return  # no longer the leader
        try:
            entries = list(read_txn_records(local.read, local.log_start_offset, end))
        except Exception:
            log.exception("%s-%d: cannot load its transactions", TRANSACTION_STATE_TOPIC, partition.index)
            self.transactions.unload(partition.index)
            return
        self.transactions.finish_load(partition.index, epoch, entries)

    # -- producer ids ------------------------------------------------------------------------

    def new_producer_id(self) -> int:
        """A producer id never handed out before, by this broker or an earlier run of it
        (a single broker; a cluster broker uses :meth:`new_producer_id_async`)."""
        if self.producer_ids is None:
            raise RuntimeError("a cluster broker's producer ids come from the controller: new_producer_id_async")
        return self.producer_ids.next_id()

    async def new_producer_id_async(self) -> int:
        """A producer id no broker handed out before: a single broker's own
        (:meth:`new_producer_id`); in a cluster, the next of a block the controller
        allocated to this broker (Kafka's AllocateProducerIds, ``ProducerIdsRecord``).

        Raises:
            KafkaCodeError: the controller refused (stale broker epoch, not controller).
        """
        if self.cluster is None:
            return self.new_producer_id()
        async with self._id_lock:
            first, end = self._id_block
            if first >= end:
                first, count = await self.cluster.channel.allocate_producer_ids(self.node_id, self.cluster.broker_epoch)
                end = first + count
            self._id_block = (first + 1, end)
            return first

    def data_arrived(self) -> None:
        """Wake every long-polled fetch (they recheck what they wait for)."""
        self._data.set()
        self._data = asyncio.Event()

    async def wait_for_data(self, timeout: float) -> None:
        """Return when data arrives or ``timeout`` seconds pass, whichever is first."""
        try:
            await wait_for(self._data.wait(), timeout)
        except TimeoutError:
            pass
