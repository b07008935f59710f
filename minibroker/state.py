"""The broker's state: topics, their partition logs and ids, producer ids, groups.

Handlers read and change it; the server owns one. Files are :mod:`minibroker.storage`'s
business. Two pieces are asynchronous: :meth:`BrokerState.wait_for_data`, which
long-polled fetches await and every append wakes, and :meth:`BrokerState.grow_topic`,
which makes partitions one at a time so that other connections are served meanwhile.
Committed offsets are written to the internal ``__consumer_offsets`` topic, created on
the first commit as Kafka does, and read back when the state is built. Producer ids are
handed out by a :class:`~minibroker.coordinator.producer_state.ProducerIdManager`, never twice.

A file that cannot be written (a full disk) leaves the state as it was: a topic created,
grown, reconfigured or deleted is recorded in the topics file before it counts, and
what was made for it is removed if that fails; the caller answers KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from kproto.errors import KafkaStorageError, UnknownTopicOrPartitionError
from kproto.records import Batch, read_batches
from kproto.structs import validate_topic_name
from minibroker.config import BrokerConfig
from minibroker.coordinator import GroupCoordinator
from minibroker.coordinator.offsets import OffsetEntry
from minibroker.coordinator.offsets_log import (
    OFFSETS_TOPIC,
    offsets_batch,
    partition_for,
    read_offset_records,
)
from minibroker.coordinator.producer_state import ProducerIdManager, ProducerStates
from minibroker.log import PartitionLog
from minibroker.log.maintenance import maintain as maintain_logs
from minibroker.storage import Storage, StoredTopic

__all__ = ["INTERNAL_TOPICS", "OFFSETS_TOPIC", "BrokerState", "Topic", "validate_topic_name"]

INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC})  # written by the broker only

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
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog]
    configs: dict[str, str | None] = field(default_factory=dict)
    leader_epoch: int = 0


class BrokerState:
    """Everything one broker knows. Used from the server's event loop only."""

    def __init__(self, config: BrokerConfig, host: str, port: int):
        self.config = config
        self.node_id: int = config["broker.id"]
        self.host = host
        self.port = port
        self.topics: dict[str, Topic] = {}
        # Names of topics whose partitions are being made (grow_topic), deleted meanwhile or not.
        self.growing: set[str] = set()
        self.producers = ProducerStates(config["producer.id.expiration.ms"])
        self.groups = GroupCoordinator(config, journal=self._write_offsets)  # classic groups and committed offsets
        self._data = asyncio.Event()
        dirs = [d.strip() for d in config["log.dirs"].split(",") if d.strip()]
        self.storage = Storage(config, dirs)
        try:
            self._load()
        except BaseException:
            self.close()  # the directories are not left locked by a broker that failed to start
            raise

    def _load(self) -> None:
        """Read back the topics, their logs, the producer state and the committed offsets."""
        stored_topics = self.storage.load_topics()
        self.storage.recover({t.name: (t.topic_id, t.partitions) for t in stored_topics})
        for stored in stored_topics:
            self.topics[stored.name] = Topic(stored.name, stored.topic_id, [], stored.configs)
            self._open_partitions(self.topics[stored.name], stored.partitions)
        next_producer_id = self.storage.load_producer_id_block()
        for topic in self.topics.values():  # idempotence must survive a restart
            for index, log in enumerate(topic.partitions):
                highest = self.producers.rebuild((topic.topic_id, index), _batches(log))
                next_producer_id = max(next_producer_id, highest + 1)
        self.producer_ids = ProducerIdManager(next_producer_id, self.storage.save_producer_id_block)
        if OFFSETS_TOPIC in self.topics:
            for log in self.topics[OFFSETS_TOPIC].partitions:
                self.groups.load_offsets(read_offset_records(log.read, log.log_start_offset, log.log_end_offset))

    def _open_partitions(self, topic: Topic, count: int) -> None:
        for index in range(len(topic.partitions), count):
            topic.partitions.append(self.storage.open_partition(topic.name, topic.topic_id, index, topic.configs))

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
            self.storage.delete_partitions(topic.topic_id, topic.partitions)
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
        try:
            self.storage.delete_partitions(topic.topic_id, topic.partitions)
        except OSError as exc:  # the topic is gone; the next start removes or sets aside what is left
            log.warning("topic %r: its partition directories could not all be removed: %s", topic.name, exc)

    def offsets_topic(self) -> Topic:
        """``__consumer_offsets``, created compacted on first use (as Kafka does)."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            topic = self.create_topic(OFFSETS_TOPIC, self.config["offsets.topic.num.partitions"], {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config["offsets.topic.segment.bytes"]),
            })
        return topic

    def _write_offsets(self, group_id: str, entries: list[OffsetEntry]) -> None:
        """The offset store's journal: one batch on the group's partition of the offsets topic.

        Raises:
            UnknownTopicOrPartitionError: the offsets topic does not exist and cannot be
                made (a full disk): the error Kafka's append would meet.
            KafkaStorageError: the append failed (see :meth:`PartitionLog.append`).
        """
        try:
            topic = self.offsets_topic()
        except (OSError, KafkaStorageError) as exc:
            raise UnknownTopicOrPartitionError(f"{OFFSETS_TOPIC} could not be created: {exc}") from exc
        now_ms = int(time.time() * 1000)
        builder = offsets_batch(entries, now_ms)
        topic.partitions[partition_for(group_id, len(topic.partitions))].append(
            builder.build(), last_offset_delta=builder.record_count - 1, max_timestamp=now_ms,
            leader_epoch=topic.leader_epoch)
        self.data_arrived()

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
        topic.partitions.extend(made)
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
        for log in topic.partitions:
            log.config = self.storage.log_config(configs)

    async def maintain(self) -> None:
        """Retention, then compaction, on every partition (``log.retention.check.interval.ms``),
        the heavy work in a worker thread (see :mod:`minibroker.log.maintenance`)."""
        await maintain_logs(log for topic in list(self.topics.values()) for log in list(topic.partitions))

    def close(self) -> None:
        for topic in self.topics.values():
            for log in topic.partitions:
                log.close()
        self.storage.close()

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    def new_producer_id(self) -> int:
        """A producer id never handed out before, by this broker or an earlier run of it."""
        return self.producer_ids.next_id()

    def data_arrived(self) -> None:
        """Wake every long-polled fetch (they recheck what they wait for)."""
        self._data.set()
        self._data = asyncio.Event()

    async def wait_for_data(self, timeout: float) -> None:
        """Return when data arrives or ``timeout`` seconds pass, whichever is first."""
        try:
            await asyncio.wait_for(self._data.wait(), timeout)
        except asyncio.TimeoutError:
            pass
