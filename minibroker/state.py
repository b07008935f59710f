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
from minibroker.log import PartitionLog
from minibroker.producer_state import ProducerStates

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
        self._data = asyncio.Event()

    def create_topic(self, name: str, partitions: int, configs: dict[str, str | None] | None = None) -> Topic:
        topic = Topic(name, uuid.uuid4(), [PartitionLog() for _ in range(partitions)], dict(configs or {}))
        self.topics[name] = topic
        return topic

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
