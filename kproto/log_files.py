"""Kafka's on-disk log files: their names, index entries, checkpoints and ``partition.metadata``.

The one owner of these formats: minibroker writes and reads its log directories with it,
and the Spark segment reader and ``kproto dump-log`` read Kafka's (or minibroker's) with
it. The record batches inside a ``.log`` are :mod:`kproto.records`' business; this module
knows the files around them. No I/O here: names, bytes and text in and out.

Facts (Kafka 3.x/4.x, ``storage/internals/log``):

- A log directory holds one directory per partition, ``<topic>-<partition>``
  (``UnifiedLog.logDirName``, parsed from the last ``-``: topic names may contain
  ``-``). A partition being deleted is renamed ``<topic>-<partition>.<uuid hex>-delete``
  and one the metadata does not know ``...-stray`` (``LocalLog.DeleteDirSuffix``,
  ``StrayDirSuffix``, ``logDeleteDirName``), its topic part cut so that the whole name fits
  in 255 characters (``logDirNameWithSuffixCappedLength``).
- A segment is three files named by its base offset in 20 digits, zero-padded
  (``LogFileUtils.filenamePrefixFromOffset``): ``.log`` (the batches), ``.index`` and
  ``.timeindex``. A suffix marks a file in transit: ``.deleted`` (waiting for
  ``file.delete.delay.ms``), ``.cleaned`` (being written by the cleaner) and ``.swap``
  (cleaned, being swapped in) (``LogFileUtils.DELETED_FILE_SUFFIX``,
  ``CLEANED_FILE_SUFFIX``, ``SWAP_FILE_SUFFIX``).
- ``.index`` (``OffsetIndex``): 8-byte big-endian entries ``relativeOffset: i32,
  position: i32``. ``.timeindex`` (``TimeIndex``): 12-byte entries ``timestamp: i64,
  relativeOffset: i32``. No header, no checksum; relative offsets are ``offset -
  baseOffset``. A preallocated file is zero past its used entries.
- ``.txnindex`` (``TransactionIndex``, ``AbortedTxn``): the aborted transactions whose
  ABORT marker lies in the segment, in the order of their markers, 34-byte big-endian
  entries ``version: i16 (0), producerId: i64, firstOffset: i64, lastOffset: i64,
  lastStableOffset: i64``: the transaction's first offset in the partition, its marker's
  offset, and the partition's last stable offset when the marker was written (the first
  offset of the earliest other open transaction, else the marker's offset + 1; a reader
  of the index stops at an entry whose ``lastStableOffset`` reaches its upper bound). The
  file exists only once a segment has an entry (Kafka creates it lazily).
- Checkpoint files (``CheckpointFile``; ``log-start-offset-checkpoint``,
  ``recovery-point-offset-checkpoint``...) are text: the version (``0``), the number of
  entries, then one entry per line, ``topic partition offset`` separated by spaces
  (``OffsetCheckpointFile.Formatter``). A reader takes exactly that many entries, each of
  exactly three fields, or the file is malformed.
- ``replication-offset-checkpoint`` (the high watermarks) and
  ``recovery-point-offset-checkpoint`` (the offsets below which each log is flushed) are
  log-directory-wide checkpoints in that same format, one line per partition of the
  directory (``ReplicaManager.highWatermarkCheckpoints``, ``LogManager.checkpointRecoveryOffsetsInDir``).
- ``leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile``, KIP-101), in each partition
  directory: version ``0``, the number of entries, then ``epoch start_offset`` per line,
  separated by whitespace, epochs and start offsets increasing.
- ``meta.properties`` (``MetaProperties``; KRaft version 1, KIP-631/KIP-858), in each log
  directory: a Java properties file, ``key=value`` lines and ``#`` comments, with
  ``version=1``, ``node.id``, ``cluster.id`` and ``directory.id`` (a Kafka uuid). Version
  0 (ZooKeeper brokers) has ``broker.id`` instead of ``node.id``.
- ``partition.metadata`` (``PartitionMetadataFile``) is ``version: 0`` and ``topic_id:
  <id>``, one per line, the topic id in Kafka's form: URL-safe base64 of its 16 bytes,
  without padding (22 characters, ``Uuid.toString``).
"""

from __future__ import annotations

import base64
import re
import struct
import uuid
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = [
    "LOG_SUFFIX",
    "INDEX_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "DELETED_SUFFIX",
    "CLEANED_SUFFIX",
    "SWAP_SUFFIX",
    "DELETE_DIR_SUFFIX",
    "STRAY_DIR_SUFFIX",
    "LOG_START_OFFSET_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_OFFSET_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "META_PROPERTIES",
    "PARTITION_METADATA",
    "OFFSET_INDEX_ENTRY",
    "TIME_INDEX_ENTRY",
    "ABORTED_TXN_ENTRY",
    "AbortedTxn",
    "SegmentFileName",
    "segment_name",
    "parse_segment_file",
    "pack_offset_entry",
    "unpack_offset_entries",
    "pack_time_entry",
    "unpack_time_entries",
    "pack_aborted_txn",
    "unpack_aborted_txns",
    "partition_dir_name",
    "parse_partition_dir",
    "set_aside_dir_name",
    "parse_set_aside_dir",
    "format_checkpoint",
    "parse_checkpoint",
    "format_epoch_checkpoint",
    "parse_epoch_checkpoint",
    "format_meta_properties",
    "parse_meta_properties",
    "kafka_uuid",
    "format_partition_metadata",
    "parse_partition_metadata",
]

#: A segment's record batches.
LOG_SUFFIX = ".log"
#: A segment's offset index.
INDEX_SUFFIX = ".index"
#: A segment's time index.
TIME_INDEX_SUFFIX = ".timeindex"
#: A segment's aborted-transaction index (``TransactionIndex``).
TXN_INDEX_SUFFIX = ".txnindex"
#: Added to a deleted segment's files until ``file.delete.delay.ms`` passes.
DELETED_SUFFIX = ".deleted"
#: Added to the cleaner's output files while they are written.
CLEANED_SUFFIX = ".cleaned"
#: Added to the cleaner's output files, committed, while they replace the originals.
SWAP_SUFFIX = ".swap"
#: Ends the name of a partition directory being deleted (``LocalLog.DeleteDirSuffix``).
DELETE_DIR_SUFFIX = "-delete"
#: Ends the name of a partition directory the metadata does not know (``LocalLog.StrayDirSuffix``).
STRAY_DIR_SUFFIX = "-stray"

#: The checkpoint of a partition's log start offset (Kafka keeps one per log directory).
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
#: The high watermark of every partition of a log directory (``ReplicaManager``).
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
#: The recovery point of every partition of a log directory (``LogManager``).
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
#: A partition's leader epochs and their start offsets (``LeaderEpochCheckpointFile``).
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
#: A log directory's node id, cluster id and directory id (``MetaProperties``).
META_PROPERTIES = "meta.properties"
#: The file naming a partition directory's topic id (``PartitionMetadataFile``).
PARTITION_METADATA = "partition.metadata"

OFFSET_INDEX_ENTRY = struct.Struct(">ii")
"""The layout of one ``.index`` entry, relative offset then position in the ``.log``
(Kafka's ``OffsetIndex``)."""
TIME_INDEX_ENTRY = struct.Struct(">qi")
"""The layout of one ``.timeindex`` entry, timestamp then relative offset (Kafka's
``TimeIndex``)."""

_SEGMENT_FILE = re.compile(r"(\d{20})(\.log|\.index|\.timeindex|\.txnindex)(\.cleaned|\.swap|\.deleted)?")
_PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>[0-9]+)")
ABORTED_TXN_ENTRY = struct.Struct(">hqqqq")
"""The layout of one ``.txnindex`` entry (34 bytes): version (0), producer id, first
offset, last offset, last stable offset (Kafka's ``AbortedTxn``)."""
ABORTED_TXN_VERSION = 0  # AbortedTxn.CURRENT_VERSION

_SET_ASIDE_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>[0-9]+)\.[0-9a-f]{32}(?P<suffix>-delete|-stray)")
_MAX_NAME = 255  # a file name's length limit on common file systems


class SegmentFileName(NamedTuple):
    """A segment file's name, taken apart: ``00000000000000000042.index.swap`` is
    ``(42, ".index", ".swap")``."""

    base_offset: int
    kind: str  # LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX or TXN_INDEX_SUFFIX
    suffix: str  # "" or DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX


def segment_name(base_offset: int) -> str:
    """The file stem of a segment: its base offset in 20 digits (``filenamePrefixFromOffset``)."""
    return f"{base_offset:020d}"


def parse_segment_file(name: str) -> SegmentFileName | None:
    """Take a segment file's name apart; None if ``name`` is not one."""
    m = _SEGMENT_FILE.fullmatch(name)
    if m is None:
        return None
    return SegmentFileName(int(m.group(1)), m.group(2), m.group(3) or "")


def pack_offset_entry(relative_offset: int, position: int) -> bytes:
    """One ``.index`` entry's 8 bytes."""
    return OFFSET_INDEX_ENTRY.pack(relative_offset, position)


def unpack_offset_entries(data: bytes | memoryview) -> Iterator[tuple[int, int]]:
    """Every ``(relative_offset, position)`` of an ``.index`` file's bytes.

    Raises:
        ValueError: ``data`` is not a whole number of entries.
    """
    return _entries(OFFSET_INDEX_ENTRY, data)


def pack_time_entry(timestamp: int, relative_offset: int) -> bytes:
    """One ``.timeindex`` entry's 12 bytes."""
    return TIME_INDEX_ENTRY.pack(timestamp, relative_offset)


def unpack_time_entries(data: bytes | memoryview) -> Iterator[tuple[int, int]]:
    """Every ``(timestamp, relative_offset)`` of a ``.timeindex`` file's bytes.

    Raises:
        ValueError: ``data`` is not a whole number of entries.
    """
    return _entries(TIME_INDEX_ENTRY, data)


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry (Kafka's ``AbortedTxn``): the transaction's producer, the
    offset of its first batch in the partition, the offset of its ABORT marker, and the
    partition's last stable offset right after the marker."""

    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's
    last_stable_offset: int


def pack_aborted_txn(txn: AbortedTxn) -> bytes:
    """One ``.txnindex`` entry's 34 bytes (version 0)."""
    return ABORTED_TXN_ENTRY.pack(ABORTED_TXN_VERSION, *txn)


def unpack_aborted_txns(data: bytes | memoryview) -> Iterator[AbortedTxn]:
    """Every entry of a ``.txnindex`` file's bytes.

    Raises:
        ValueError: ``data`` is not a whole number of entries, or an entry's version is
            not 0 (Kafka refuses a newer one too).
    """
    if len(data) % ABORTED_TXN_ENTRY.size:
        raise ValueError(f"{len(data)} bytes is not a whole number of {ABORTED_TXN_ENTRY.size}-byte entries")
    for version, *fields in ABORTED_TXN_ENTRY.iter_unpack(data):
        if version != ABORTED_TXN_VERSION:
            raise ValueError(f"unknown aborted transaction entry version {version}")
        yield AbortedTxn(*fields)


def _entries(entry: struct.Struct, data: bytes | memoryview) -> Iterator[tuple[int, int]]:
    """The entries of an index file's bytes, which must hold a whole number of them."""
    if len(data) % entry.size:
        raise ValueError(f"{len(data)} bytes is not a whole number of {entry.size}-byte entries")
    return entry.iter_unpack(data)


def partition_dir_name(topic: str, partition: int) -> str:
    """A partition's directory name, ``<topic>-<partition>``."""
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` of a partition directory's name; None if it is not one."""
    m = _PARTITION_DIR.fullmatch(name)
    return None if m is None else (m["topic"], int(m["partition"]))


def set_aside_dir_name(name: str, suffix: str, unique: str | None = None) -> str:
    """The name a partition directory ``name`` gets when deleted or stray:
    ``<topic>-<partition>.<unique><suffix>``, ``unique`` a fresh uuid's hex unless given,
    the topic cut so the name fits in 255 characters (``logDirNameWithSuffixCappedLength``)."""
    topic, _, partition = name.rpartition("-")
    tail = f"-{partition}.{uuid.uuid4().hex if unique is None else unique}{suffix}"
    return topic[:_MAX_NAME - len(tail)] + tail


def parse_set_aside_dir(name: str) -> tuple[str, int, str] | None:
    """``(topic, partition, suffix)`` of a ``-delete`` or ``-stray`` directory's name."""
    m = _SET_ASIDE_DIR.fullmatch(name)
    return None if m is None else (m["topic"], int(m["partition"]), m["suffix"])


def format_checkpoint(entries: Iterable[tuple[str, int, int]]) -> str:
    """A checkpoint file's text: version 0, the count, ``topic partition offset`` lines."""
    lines = [f"{topic} {partition} {offset}\n" for topic, partition, offset in entries]
    return f"0\n{len(lines)}\n" + "".join(lines)


def parse_checkpoint(text: str) -> list[tuple[str, int, int]]:
    """The ``(topic, partition, offset)`` entries of a checkpoint file's text.

    Raises:
        ValueError: not version 0, or not as many well-formed entries as it says.
    """
    lines = text.split("\n")
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError("unknown version or entry count")
    count = int(lines[1])
    entries = []
    for line in lines[2:2 + count]:
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(f"malformed entry {line!r}")
        entries.append((fields[0], int(fields[1]), int(fields[2])))
    if len(entries) != count:
        raise ValueError(f"{count} entries expected, {len(entries)} found")
    return entries


def format_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> str:
    """A ``leader-epoch-checkpoint``'s text: version 0, the count, ``epoch start_offset`` lines."""
    lines = [f"{epoch} {start_offset}\n" for epoch, start_offset in entries]
    return f"0\n{len(lines)}\n" + "".join(lines)


def parse_epoch_checkpoint(text: str) -> list[tuple[int, int]]:
    """The ``(epoch, start_offset)`` entries of a ``leader-epoch-checkpoint``'s text.

    Raises:
        ValueError: not version 0, not as many well-formed entries as it says, or epochs
            and start offsets not increasing (``LeaderEpochFileCache`` keeps them so).
    """
    lines = text.split("\n")
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError("unknown version or entry count")
    count = int(lines[1])
    entries: list[tuple[int, int]] = []
    for line in lines[2:2 + count]:
        fields = line.split()
        if len(fields) != 2:
            raise ValueError(f"malformed entry {line!r}")
        epoch, start = int(fields[0]), int(fields[1])
        if epoch < 0 or start < 0 or (entries and (epoch <= entries[-1][0] or start < entries[-1][1])):
            raise ValueError(f"entry {line!r} does not follow {entries[-1] if entries else 'nothing'}")
        entries.append((epoch, start))
    if len(entries) != count:
        raise ValueError(f"{count} entries expected, {len(entries)} found")
    return entries


def format_meta_properties(*, node_id: int, cluster_id: str, directory_id: str) -> str:
    """A KRaft ``meta.properties`` (version 1)'s text, keys sorted.

    Java's ``Properties.store`` starts the file with a comment line and the date, and
    writes the keys in hash order; readers ignore both, so this writes one fixed comment.
    """
    props = {"cluster.id": cluster_id, "directory.id": directory_id, "node.id": str(node_id), "version": "1"}
    return "#\n#Written by minibroker\n" + "".join(f"{k}={v}\n" for k, v in sorted(props.items()))


def parse_meta_properties(text: str) -> dict[str, str]:
    """The properties of a ``meta.properties``' text, checked as Kafka's ``MetaProperties``.

    Lines are ``key=value`` (or ``key:value``); blank lines and ``#``/``!`` comments are
    skipped. Version 1 needs ``node.id`` (an integer) and ``cluster.id``; version 0
    ``broker.id``.

    Raises:
        ValueError: a line without a separator, no ``version``, an unknown version, or a
            required key missing or malformed.
    """
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut <= 0:
            raise ValueError(f"malformed line {line!r}")
        props[line[:cut].strip()] = line[cut + 1:].strip()
    version = props.get("version")
    required = {"1": ("node.id", "cluster.id"), "0": ("broker.id",)}.get(version or "")
    if required is None:
        raise ValueError(f"unknown meta.properties version {version!r}")
    for key in required:
        if not props.get(key):
            raise ValueError(f"version {version} without {key}")
    int(props[required[0]])  # node.id / broker.id: an integer, else ValueError
    return props


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """A topic id as Kafka writes it: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def format_partition_metadata(topic_id: uuid.UUID) -> str:
    """A ``partition.metadata`` file's text."""
    return f"version: 0\ntopic_id: {kafka_uuid(topic_id)}\n"


def parse_partition_metadata(data: bytes) -> str:
    """The topic id (Kafka's form) in a ``partition.metadata`` file's bytes.

    Raises:
        ValueError: not UTF-8 text, not ``version: 0`` and a ``topic_id``, or not a topic id.
    """
    lines = data.decode("utf-8").splitlines()
    fields = {key.strip(): value for key, value in (line.split(":", 1) for line in lines)}
    if fields.keys() != {"version", "topic_id"} or fields["version"].strip() != "0":
        raise ValueError(f"not version 0 with a topic_id: {lines!r}")
    topic_id = fields["topic_id"].strip()
    if len(topic_id) != 22 or kafka_uuid(uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=="))) != topic_id:
        raise ValueError(f"{topic_id!r} is not a topic id")
    return topic_id
