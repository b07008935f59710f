"""Where partition logs live: in memory, or in ``log.dirs`` in Kafka's own layout.

Theory of operation: each partition is a directory ``<topic>-<partition>`` in one of
the log directories: a new partition goes to the directory holding the fewest. Next to
the segments sits Kafka's ``partition.metadata`` file (``version: 0`` and the topic id),
so Kafka's tools recognise the directory. Topic configs, which Kafka keeps in its
metadata log, are kept in ``minibroker-topics.json`` in the first log directory,
rewritten atomically (write, fsync, rename) on every change; dynamic broker configs
(KIP-226) likewise in ``minibroker-broker-configs.json``. On start the topics are
read back, with their ids and configs, and every partition log recovers itself. The
last block of producer ids handed out is kept beside it in
``minibroker-producer-ids.json`` (see :class:`~minibroker.coordinator.producer_state.ProducerIdManager`).

These three files are written atomically, so only damage from outside (a disk error, a
hand edit) leaves one unreadable. Then the broker refuses to start with
:exc:`CorruptStateFileError`, naming the file and what to do, as Kafka refuses a corrupt
metadata log: starting without the topics file would set every partition aside as stray;
without the producer ids file, producer ids handed out but not (or no longer) in any log
could be handed out again, breaking idempotence (skipping ahead by a guess would not
prove otherwise); without the dynamic broker configs, limits an operator set (say
``message.max.bytes``) would silently revert.

Deletion and recovery: a deleted topic leaves the topics file first, then each of its
partition directories is renamed ``<topic>-<partition>.<uuid hex>-delete`` (Kafka's
``LocalLog.logDeleteDirName``) and removed. On start, before any log is opened, leftover
``-delete`` directories are removed, and a ``<topic>-<partition>`` directory that is no
partition of a topic in the topics file, or whose ``partition.metadata`` names another
topic id, is renamed ``...-stray`` (Kafka's name for logs its metadata does not know) and
left for an operator; a topic being created sets aside a directory of its name and
another topic id the same way: whatever a crash interrupted, a topic never opens another
topic's log.

A damaged ``partition.metadata`` (unreadable, cut short, a flipped byte: not Kafka's
``version: 0`` / ``topic_id: <id>``) in a directory that the topics file names as a
partition of a topic is rewritten from the topics file, with a warning, and the log next
to it opens as usual; anywhere else (no topic names the directory, or a topic is being
created) the directory is stray, as above. Kafka, whose ``PartitionMetadataFile`` read
fails with an ``IOException``, takes the whole log dir offline (``KafkaStorageException``)
until an operator steps in. This broker does not, because the file holds nothing that
the topics file (minibroker's metadata log) does not: Kafka too writes it from its
metadata. Going offline would stop a test broker from restarting and keep intact data
from being served, for a loss of nothing. A readable file naming another topic id is
evidence of another topic's data, and keeps being set aside as stray.

One broker per directory: every log directory holds Kafka's ``.lock`` file
(``LogManager.LockFileName``), locked exclusively with ``flock`` from start to stop. A
second broker on the same directory, in another process or in this one, fails to start
with :exc:`LogDirInUseError` naming it, instead of both appending to the same segments.
(Java's Kafka locks with ``fcntl`` record locks, which Linux keeps apart from ``flock``:
the lock keeps minibrokers apart, not a minibroker from a Kafka broker.)

Maintenance (retention, then compaction) runs every ``log.retention.check.interval.ms``.

A broker of a cluster (:mod:`minibroker.cluster`) keeps more of Kafka's files, written by
the methods below and not by the single broker (whose directories stay as they were):

- ``meta.properties`` in every log directory (KRaft version 1, KIP-631; ``directory.id``
  from KIP-858): :meth:`Storage.check_meta_properties` writes it on the first start and
  checks it on every later one. A directory of another node or another cluster refuses
  to start (:exc:`InconsistentBrokerMetadataError`), as Kafka refuses with
  ``InconsistentNodeIdException`` / ``InconsistentClusterIdException``: its logs are
  another broker's replicas.
- ``replication-offset-checkpoint`` (high watermarks) and
  ``recovery-point-offset-checkpoint`` in every log directory, one line per partition of
  that directory (:meth:`Storage.save_offset_checkpoints`, every
  ``replica.high.watermark.checkpoint.interval.ms`` and at a clean stop);
  :meth:`Storage.load_hw_checkpoint` reads the high watermarks back on start. A damaged
  one is ignored with a warning: a high watermark only comes back from the leader's
  next answer (Kafka takes the directory offline instead; here it would stop a replica
  for a value the leader gives back within one fetch).
- Partition logs opened with ``replicated=True`` keep ``leader-epoch-checkpoint``
  (:mod:`minibroker.log.leader_epochs`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kproto.log_files import (
    DELETE_DIR_SUFFIX,
    META_PROPERTIES,
    PARTITION_METADATA,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    STRAY_DIR_SUFFIX,
    format_checkpoint,
    format_meta_properties,
    format_partition_metadata,
    kafka_uuid,
    parse_checkpoint,
    parse_meta_properties,
    parse_partition_dir,
    parse_partition_metadata,
    parse_set_aside_dir,
    partition_dir_name,
    set_aside_dir_name,
)
from minibroker.config import BrokerConfig
from minibroker.log import LogConfig, PartitionLog
from minibroker.log.files import fsync_dir
from minibroker.topic_configs import sanitize

__all__ = ["CorruptStateFileError", "InconsistentBrokerMetadataError", "LogDirInUseError", "Storage", "StoredTopic"]

TOPICS_FILE = "minibroker-topics.json"
BROKER_CONFIGS_FILE = "minibroker-broker-configs.json"
PRODUCER_IDS_FILE = "minibroker-producer-ids.json"
LOCK_FILE = ".lock"  # Kafka's LogManager.LockFileName

log = logging.getLogger(__name__)

# The broker settings that shape every log (topic configs override them).
_LOG_KEYS = ("log.segment.bytes", "log.roll.ms", "log.retention.ms", "log.retention.bytes",
             "log.flush.interval.messages", "log.index.interval.bytes", "log.cleanup.policy",
             "log.cleaner.delete.retention.ms", "log.index.size.max.bytes", "log.roll.jitter.ms",
             "log.segment.delete.delay.ms", "log.flush.interval.ms",
             "log.cleaner.min.cleanable.ratio", "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms")


class LogDirInUseError(RuntimeError):
    """A log directory is locked by another broker (see the module docstring)."""


class InconsistentBrokerMetadataError(RuntimeError):
    """A log directory's ``meta.properties`` names another node id or cluster id than this
    broker's: it holds another broker's data, and the broker refuses to start (Kafka's
    ``InconsistentNodeIdException`` / ``InconsistentClusterIdException``)."""


class CorruptStateFileError(RuntimeError):
    """One of the broker's own files (topics, producer ids, dynamic broker configs) cannot
    be read or parsed: the broker refuses to start, naming it (see the module docstring)."""


def _load_json(path: Path, refusal: str) -> Any:
    """The JSON in ``path``; a file that cannot be read or parsed raises
    :class:`CorruptStateFileError` naming it and saying what to do (``refusal``)."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise CorruptStateFileError(f"{path} is damaged ({exc}): {refusal}") from exc


@contextmanager
def _parsing(path: Path, refusal: str) -> Iterator[None]:
    """Turn a well-formed JSON file of the wrong shape into :class:`CorruptStateFileError`."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptStateFileError(f"{path} is damaged ({type(exc).__name__}: {exc}): {refusal}") from exc


_TOPICS_REFUSAL = ("the broker does not start rather than lose topics; restore the file, or rewrite it "
                   "(each topic's id is in its partition directories' partition.metadata)")
_PRODUCER_IDS_REFUSAL = ("the broker does not start rather than hand out producer ids again; restore the "
                         "file, or write one whose block_end is above every producer id ever handed out")
_BROKER_CONFIGS_REFUSAL = ("the broker does not start rather than forget its dynamic configs; restore the "
                           "file, or remove it to start with the static configs only")


def _lock(directory: Path) -> int:
    """Lock ``directory/.lock`` for this broker's life; returns the descriptor holding it."""
    path = directory / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogDirInUseError(f"log directory {directory} is in use by another broker (its {path} is locked); "
                               "stop that broker or give this one another directory") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


class StoredTopic:
    """What storage remembers of a topic: enough to rebuild it on start."""

    def __init__(self, name: str, topic_id: uuid.UUID, partitions: int, configs: dict[str, str | None]):
        self.name, self.topic_id, self.partitions, self.configs = name, topic_id, partitions, configs


class Storage:
    """Opens, persists and maintains partition logs for one broker.

    Args:
        config: the broker's settings (``log.*`` keys give every log's defaults).
        log_dirs: directories for the logs; empty for memory only.

    Raises:
        LogDirInUseError: another broker holds one of the directories; none stays locked.
    """

    def __init__(self, config: BrokerConfig, log_dirs: Iterable[str | os.PathLike]):
        self.log_dirs = [Path(d) for d in log_dirs]
        self._config = config  # read at each use: dynamic broker configs change the defaults
        self._broker_id = config["broker.id"]
        self._locks: list[int] = []
        try:
            for d in self.log_dirs:
                d.mkdir(parents=True, exist_ok=True)
                self._locks.append(_lock(d))
        except BaseException:
            self.close()
            raise
        path = self.log_dirs[0] / BROKER_CONFIGS_FILE if self.persistent else None
        if path is not None and path.exists():
            try:
                stored = _load_json(path, _BROKER_CONFIGS_REFUSAL)
                with _parsing(path, _BROKER_CONFIGS_REFUSAL):
                    config.load_dynamic(stored)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        """Release the log directories (the logs themselves are closed by their owner)."""
        while self._locks:
            os.close(self._locks.pop())

    @property
    def persistent(self) -> bool:
        return bool(self.log_dirs)

    def log_config(self, topic_configs: Mapping[str, Any]) -> LogConfig:
        defaults = {key: self._config[key] for key in _LOG_KEYS}
        return LogConfig.from_configs({**defaults, **{k: v for k, v in topic_configs.items() if v is not None}})

    def _partition_dir(self, topic: str, index: int) -> Path | None:
        for d in self.log_dirs:
            path = d / partition_dir_name(topic, index)
            if path.is_dir():
                return path
        return None

    def _least_used_dir(self) -> Path:
        return min(self.log_dirs, key=lambda d: sum(1 for p in d.iterdir() if p.is_dir()))

    def open_partition(
        self, topic: str, topic_id: uuid.UUID, index: int, topic_configs: Mapping[str, Any], *, replicated: bool = False,
    ) -> PartitionLog:
        """The log of one partition: recovered from disk if it exists, else new.

        A directory of that name whose ``partition.metadata`` names another topic id is
        another topic's (one deleted, say): it is set aside as stray, never opened.
        ``replicated`` (a replica of a cluster) keeps its ``leader-epoch-checkpoint``.
        """
        config = self.log_config(topic_configs)
        if not self.persistent:
            return PartitionLog(config=config)
        existing = self._partition_dir(topic, index)
        if existing is not None:
            try:
                found = _read_topic_id(existing)
            except PartitionMetadataCorrupt as exc:
                # On start recover() has rewritten the file of every partition the topics
                # file names, so this is a topic being created: the directory is no
                # known topic's, and the new topic must not adopt its data.
                found = f"unknown ({exc})"
            if found is not None and found != kafka_uuid(topic_id):
                log.warning("%s belongs to topic id %s, not to %s's %s: set aside as stray",
                            existing, found, topic, kafka_uuid(topic_id))
                _set_aside(existing, STRAY_DIR_SUFFIX)
                existing = None
        new = existing is None
        path = self._least_used_dir() / partition_dir_name(topic, index) if existing is None else existing
        if new:
            path.mkdir()
        try:
            if not (path / PARTITION_METADATA).exists():
                _write_topic_id(path, topic_id)
            return PartitionLog(path, config=config, epoch_checkpoint=replicated)
        except BaseException:
            if new:  # e.g. a full disk: no half-made directory is left for a later topic of the name
                shutil.rmtree(path, ignore_errors=True)
            raise

    def delete_partitions(self, topic_id: uuid.UUID, logs: Iterable[PartitionLog]) -> None:
        """Delete a topic's partition directories, once the topic is gone from the topics file.

        As Kafka's ``LogManager.asyncDelete``: each directory is first renamed to
        ``<topic>-<partition>.<id>-delete`` (``LocalLog.logDeleteDirName``), which no topic
        can open, and then removed; a removal cut short is finished by :meth:`recover`.
        A directory whose ``partition.metadata`` names another topic id than ``topic_id``
        is not touched: it is not this topic's (anymore).
        """
        doomed = []
        for partition in logs:
            partition.close()
            path = partition.directory
            if path is not None and path.is_dir() and _topic_id_or_none(path) in (None, kafka_uuid(topic_id)):
                doomed.append(_set_aside(path, DELETE_DIR_SUFFIX))
        for path in doomed:
            shutil.rmtree(path)

    def recover(self, topics: Mapping[str, tuple[uuid.UUID, int]]) -> None:
        """Tidy the log directories on start, before any partition is opened.

        Directories marked ``-delete`` are removed (a deletion cut short). A
        ``<topic>-<partition>`` directory that is no partition of a topic in ``topics``
        (name -> (topic id, partitions)), or whose ``partition.metadata`` names another
        topic id, is stray, as Kafka says of logs its metadata does not know: it is renamed
        ``<topic>-<partition>.<id>-stray`` and kept for an operator to inspect, so a topic
        created later under that name starts empty. Without a topics file (a directory
        minibroker never wrote a topic to, say a copy of Kafka's) nothing is stray: only
        :meth:`open_partition` sets aside a directory of another topic id, when a topic of
        its name is created. Other entries are left alone.
        """
        own = self.persistent and (self.log_dirs[0] / TOPICS_FILE).exists()
        for d in self.log_dirs:
            for path in sorted(d.iterdir()):
                if not path.is_dir():
                    continue
                set_aside = parse_set_aside_dir(path.name)
                if set_aside is not None and set_aside[2] == DELETE_DIR_SUFFIX:
                    log.info("removing %s, a deletion cut short", path)
                    shutil.rmtree(path)
                    continue
                parsed = parse_partition_dir(path.name)
                if parsed is None or not own:
                    continue
                known = topics.get(parsed[0])
                # The id this directory must have: that of the topic named by the topics file.
                owner = known[0] if known is not None and parsed[1] < known[1] else None
                try:
                    found = _read_topic_id(path)
                except PartitionMetadataCorrupt as exc:
                    if owner is None:
                        found = f"unknown ({exc})"
                    else:
                        log.warning("%s; rewritten from %s (topic id %s), which names this partition",
                                    exc, self.log_dirs[0] / TOPICS_FILE, kafka_uuid(owner))
                        _write_topic_id(path, owner)
                        found = kafka_uuid(owner)
                if owner is None or found not in (None, kafka_uuid(owner)):
                    log.warning("%s is no partition of a known topic (topic id %s): set aside as stray", path, found)
                    _set_aside(path, STRAY_DIR_SUFFIX)

    # -- a cluster broker's files (see the module docstring) ---------------------------------

    def check_meta_properties(self, node_id: int, cluster_id: str) -> None:
        """Write ``meta.properties`` in every log directory that has none; check it in the
        others (memory only: nothing to do).

        Raises:
            InconsistentBrokerMetadataError: a directory's file names another node id or
                cluster id (the message names the file and both values).
            CorruptStateFileError: a file that cannot be read or parsed.
        """
        for d in self.log_dirs:
            path = d / META_PROPERTIES
            if not path.exists():
                _write_atomically(path, format_meta_properties(
                    node_id=node_id, cluster_id=cluster_id, directory_id=kafka_uuid(uuid.uuid4())))
                continue
            refusal = "the broker does not start rather than guess whose data the directory holds; restore the file"
            try:
                props = parse_meta_properties(path.read_text())
            except (OSError, ValueError) as exc:
                raise CorruptStateFileError(f"{path} is damaged ({exc}): {refusal}") from exc
            found_node = props.get("node.id", props.get("broker.id"))
            if found_node != str(node_id):
                raise InconsistentBrokerMetadataError(
                    f"{path} has node.id {found_node}, but this broker is node {node_id}: the directory "
                    "holds another broker's data; give this broker its own directory")
            if props.get("cluster.id") != cluster_id:
                raise InconsistentBrokerMetadataError(
                    f"{path} has cluster.id {props.get('cluster.id')}, but this broker's cluster is {cluster_id}: "
                    "the directory holds another cluster's data; give this broker its own directory")

    def save_offset_checkpoints(
        self, hw: Mapping[tuple[str, int], int], recovery: Mapping[tuple[str, int], int],
    ) -> None:
        """Write ``replication-offset-checkpoint`` (``hw``) and
        ``recovery-point-offset-checkpoint`` (``recovery``) in every log directory, each
        with the partitions that directory holds (Kafka's per-directory files), atomically."""
        if not self.persistent:
            return
        home: dict[tuple[str, int], Path] = {}
        for key in {*hw, *recovery}:
            found = self._partition_dir(*key)
            if found is not None:
                home[key] = found.parent
        for d in self.log_dirs:
            for name, offsets in ((REPLICATION_OFFSET_CHECKPOINT, hw), (RECOVERY_POINT_OFFSET_CHECKPOINT, recovery)):
                entries = sorted((t, p, o) for (t, p), o in offsets.items() if home.get((t, p)) == d)
                _write_atomically(d / name, format_checkpoint(entries))

    def load_hw_checkpoint(self) -> dict[tuple[str, int], int]:
        """The high watermarks in every log directory's ``replication-offset-checkpoint``
        (missing files: none; a damaged one is skipped with a warning, see the module
        docstring). The caller clamps each to its log: HW = min(checkpoint, LEO)."""
        out: dict[tuple[str, int], int] = {}
        for d in self.log_dirs:
            path = d / REPLICATION_OFFSET_CHECKPOINT
            try:
                entries = parse_checkpoint(path.read_text())
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                log.warning("ignoring %s (%s): high watermarks come back from the leaders", path, exc)
                continue
            out.update(((topic, partition), offset) for topic, partition, offset in entries)
        return out

    def save_topics(self, topics: Iterable[StoredTopic]) -> None:
        if not self.persistent:
            return
        data = {t.name: {"topic_id": str(t.topic_id), "partitions": t.partitions, "configs": t.configs} for t in topics}
        _write_atomically(self.log_dirs[0] / TOPICS_FILE, json.dumps(data, indent=1, sort_keys=True))

    def load_topics(self) -> list[StoredTopic]:
        if not self.persistent or not (self.log_dirs[0] / TOPICS_FILE).exists():
            return []
        path = self.log_dirs[0] / TOPICS_FILE
        data = _load_json(path, _TOPICS_REFUSAL)
        with _parsing(path, _TOPICS_REFUSAL):
            return [StoredTopic(name, uuid.UUID(t["topic_id"]), int(t["partitions"]), sanitize(name, t["configs"]))
                    for name, t in data.items()]

    def save_broker_configs(self) -> None:
        """Write the dynamic broker configs (KIP-226), so that a restart keeps them."""
        if self.persistent:
            _write_atomically(self.log_dirs[0] / BROKER_CONFIGS_FILE, json.dumps(self._config.stored_dynamic(), indent=1, sort_keys=True))

    def load_producer_id_block(self) -> int:
        """The first producer id after the last block recorded (0 if none was)."""
        if not self.persistent or not (self.log_dirs[0] / PRODUCER_IDS_FILE).exists():
            return 0
        path = self.log_dirs[0] / PRODUCER_IDS_FILE
        data = _load_json(path, _PRODUCER_IDS_REFUSAL)
        with _parsing(path, _PRODUCER_IDS_REFUSAL):
            return int(data["block_end"]) + 1

    def save_producer_id_block(self, first: int, last: int) -> None:
        """Record, durably, that the producer ids ``first`` to ``last`` are being handed out.

        The layout is that of Kafka's ZooKeeper ``/latest_producer_id_block`` (KIP-98).
        """
        if not self.persistent:
            return
        data = {"version": 1, "broker": self._broker_id, "block_start": str(first), "block_end": str(last)}
        _write_atomically(self.log_dirs[0] / PRODUCER_IDS_FILE, json.dumps(data))


def _set_aside(path: Path, suffix: str) -> Path:
    """Rename a partition directory to Kafka's ``<topic>-<partition>.<uuid hex><suffix>``,
    durably; the topic part is cut so that the name stays within 255 characters
    (``LocalLog.logDirNameWithSuffixCappedLength``)."""
    target = path.with_name(set_aside_dir_name(path.name, suffix))
    os.rename(path, target)
    fsync_dir(path.parent)
    return target


def _topic_id_or_none(path: Path) -> str | None:
    """The topic id of a directory being deleted: its owner opened it, so an unreadable
    ``partition.metadata`` does not make it another topic's."""
    try:
        return _read_topic_id(path)
    except PartitionMetadataCorrupt:
        return None


class PartitionMetadataCorrupt(ValueError):
    """A ``partition.metadata`` that cannot be read or parsed (see :meth:`Storage.recover`)."""


def _read_topic_id(path: Path) -> str | None:
    """The topic id in a partition directory's ``partition.metadata``; None if absent.

    The format is Kafka's ``PartitionMetadataFile``: ``version: 0`` then ``topic_id: <id>``,
    the id in Kafka's form (22 characters, URL-safe base64 of 16 bytes).

    Raises:
        PartitionMetadataCorrupt: the file is unreadable (an I/O error, bytes that are not
            text) or is not that format (cut short, a flipped byte).
    """
    try:
        data = (path / PARTITION_METADATA).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PartitionMetadataCorrupt(f"{path / PARTITION_METADATA}: {exc}") from exc
    try:
        return parse_partition_metadata(data)
    except ValueError as exc:  # UnicodeDecodeError, binascii.Error and a short line included
        raise PartitionMetadataCorrupt(f"{path / PARTITION_METADATA} is malformed: {exc}") from exc


def _write_topic_id(path: Path, topic_id: uuid.UUID) -> None:
    _write_atomically(path / PARTITION_METADATA, format_partition_metadata(topic_id))


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
