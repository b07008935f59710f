"""Where partition logs live: in memory, or in ``log.dirs`` in Kafka's own layout.

Theory of operation: each partition is a directory ``<topic>-<partition>`` in one of
the log directories: a new partition goes to the directory holding the fewest. Next to
the segments sits Kafka's ``partition.metadata`` file (``version: 0`` and the topic id),
so Kafka's tools recognise the directory. Topic configs, which Kafka keeps in its
metadata log, are kept in ``minibroker-topics.json`` in the first log directory,
rewritten atomically (write, fsync, rename) on every change; dynamic broker configs
(KIP-226) likewise in ``minibroker-broker-configs.json``. On start the topics are
read back, with their ids and configs, and every partition log recovers itself.

Maintenance (retention, then compaction) runs every ``log.retention.check.interval.ms``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from minibroker.config import BrokerConfig
from minibroker.log import LogConfig, PartitionLog
from minibroker.topic_configs import sanitize

__all__ = ["Storage", "StoredTopic"]

TOPICS_FILE = "minibroker-topics.json"
BROKER_CONFIGS_FILE = "minibroker-broker-configs.json"
PARTITION_METADATA = "partition.metadata"

# The broker settings that shape every log (topic configs override them).
_LOG_KEYS = ("log.segment.bytes", "log.roll.ms", "log.retention.ms", "log.retention.bytes",
             "log.flush.interval.messages", "log.index.interval.bytes", "log.cleanup.policy",
             "log.cleaner.delete.retention.ms", "log.index.size.max.bytes", "log.roll.jitter.ms",
             "log.segment.delete.delay.ms", "log.flush.interval.ms")


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """A topic id as Kafka writes it: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


class StoredTopic:
    """What storage remembers of a topic: enough to rebuild it on start."""

    def __init__(self, name: str, topic_id: uuid.UUID, partitions: int, configs: dict[str, str | None]):
        self.name, self.topic_id, self.partitions, self.configs = name, topic_id, partitions, configs


class Storage:
    """Opens, persists and maintains partition logs for one broker.

    Args:
        config: the broker's settings (``log.*`` keys give every log's defaults).
        log_dirs: directories for the logs; empty for memory only.
    """

    def __init__(self, config: BrokerConfig, log_dirs: Iterable[str | os.PathLike]):
        self.log_dirs = [Path(d) for d in log_dirs]
        self._config = config  # read at each use: dynamic broker configs change the defaults
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        if self.persistent and (self.log_dirs[0] / BROKER_CONFIGS_FILE).exists():
            config.load_dynamic(json.loads((self.log_dirs[0] / BROKER_CONFIGS_FILE).read_text()))

    @property
    def persistent(self) -> bool:
        return bool(self.log_dirs)

    def log_config(self, topic_configs: Mapping[str, Any]) -> LogConfig:
        defaults = {key: self._config[key] for key in _LOG_KEYS}
        return LogConfig.from_configs({**defaults, **{k: v for k, v in topic_configs.items() if v is not None}})

    def _partition_dir(self, topic: str, index: int) -> Path | None:
        for d in self.log_dirs:
            path = d / f"{topic}-{index}"
            if path.is_dir():
                return path
        return None

    def _least_used_dir(self) -> Path:
        return min(self.log_dirs, key=lambda d: sum(1 for p in d.iterdir() if p.is_dir()))

    def open_partition(self, topic: str, topic_id: uuid.UUID, index: int, topic_configs: Mapping[str, Any]) -> PartitionLog:
        """The log of one partition: recovered from disk if it exists, else new."""
        config = self.log_config(topic_configs)
        if not self.persistent:
            return PartitionLog(config=config)
        path = self._partition_dir(topic, index) or self._least_used_dir() / f"{topic}-{index}"
        path.mkdir(exist_ok=True)
        metadata = path / PARTITION_METADATA
        if not metadata.exists():
            _write_atomically(metadata, f"version: 0\ntopic_id: {kafka_uuid(topic_id)}\n")
        return PartitionLog(path, config=config)

    def delete_partitions(self, topic: str, logs: list[PartitionLog]) -> None:
        for index, log in enumerate(logs):
            log.close()
            path = self._partition_dir(topic, index)
            if path is not None:
                shutil.rmtree(path)

    def save_topics(self, topics: Iterable[StoredTopic]) -> None:
        if not self.persistent:
            return
        data = {t.name: {"topic_id": str(t.topic_id), "partitions": t.partitions, "configs": t.configs} for t in topics}
        _write_atomically(self.log_dirs[0] / TOPICS_FILE, json.dumps(data, indent=1, sort_keys=True))

    def load_topics(self) -> list[StoredTopic]:
        if not self.persistent or not (self.log_dirs[0] / TOPICS_FILE).exists():
            return []
        data = json.loads((self.log_dirs[0] / TOPICS_FILE).read_text())
        return [StoredTopic(name, uuid.UUID(t["topic_id"]), t["partitions"], sanitize(name, t["configs"])) for name, t in data.items()]

    def save_broker_configs(self) -> None:
        """Write the dynamic broker configs (KIP-226), so that a restart keeps them."""
        if self.persistent:
            _write_atomically(self.log_dirs[0] / BROKER_CONFIGS_FILE, json.dumps(self._config.stored_dynamic(), indent=1, sort_keys=True))


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself must survive a power cut
    finally:
        os.close(fd)
