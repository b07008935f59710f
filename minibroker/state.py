"""The broker's state: topics, their partition logs and ids, producer ids.

Handlers read and change it; the server owns one. No I/O here: the only asynchronous
piece is :meth:`BrokerState.wait_for_data`, which long-polled fetches await and every
append wakes.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field

from minibroker.config import BrokerConfig
from minibroker.coordinator import GroupCoordinator
from minibroker.log import PartitionLog
from minibroker.producer_state import ProducerStates
from minibroker.storage import Storage, StoredTopic

__all__ = ["BrokerState", "Topic", "validate_topic_name"]

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
_MAX_NAME = 249


def validate_topic_name(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's ``Topic.validate``), or None."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if len(name) > _MAX_NAME:
        return f"topic name is longer than {_MAX_NAME} characters"
    if not _LEGAL.match(name):
        return "topic name may only contain ASCII letters, digits, '.', '_' and '-'"
    return None


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
        self._next_producer_id = 1000
        self.producers = ProducerStates()
        self.groups = GroupCoordinator(config)  # classic groups and committed offsets
        self._data = asyncio.Event()
        dirs = [d.strip() for d in config["log.dirs"].split(",") if d.strip()]
        self.storage = Storage(config, dirs)
        for stored in self.storage.load_topics():
            self.topics[stored.name] = Topic(stored.name, stored.topic_id, [], stored.configs)
            self._open_partitions(self.topics[stored.name], stored.partitions)

    def _open_partitions(self, topic: Topic, count: int) -> None:
        for index in range(len(topic.partitions), count):
            topic.partitions.append(self.storage.open_partition(topic.name, topic.topic_id, index, topic.configs))

    def _save_topics(self) -> None:
        self.storage.save_topics(StoredTopic(t.name, t.topic_id, len(t.partitions), t.configs) for t in self.topics.values())

    def create_topic(self, name: str, partitions: int, configs: dict[str, str | None] | None = None) -> Topic:
        topic = Topic(name, uuid.uuid4(), [], dict(configs or {}))
        self._open_partitions(topic, partitions)
        self.topics[name] = topic
        self._save_topics()
        return topic

    def delete_topic(self, topic: Topic) -> None:
        del self.topics[topic.name]
        self._save_topics()
        self.storage.delete_partitions(topic.name, topic.partitions)

    def add_partitions(self, topic: Topic, count: int) -> None:
        self._open_partitions(topic, count)
        self._save_topics()

    def set_topic_configs(self, topic: Topic, configs: dict[str, str | None]) -> None:
        """Replace a topic's configs; its logs take the new log settings at once."""
        topic.configs = configs
        for log in topic.partitions:
            log.config = self.storage.log_config(configs)
        self._save_topics()

    def maintain(self) -> None:
        """Retention, then compaction, on every partition (``log.retention.check.interval.ms``)."""
        for topic in list(self.topics.values()):
            for log in topic.partitions:
                if log.config.delete:
                    log.apply_retention()
                if log.config.compact:
                    log.compact()

    def close(self) -> None:
        for topic in self.topics.values():
            for log in topic.partitions:
                log.close()

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    def new_producer_id(self) -> int:
        self._next_producer_id += 1
        return self._next_producer_id

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
