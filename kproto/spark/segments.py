"""``spark.read.format("kafka-log")``: Kafka's on-disk log segments as a DataFrame.

Reads the ``.log`` files of a broker's ``log.dirs`` (Kafka's or minibroker's, the same
format) without a broker, in the schema of Spark's Kafka source (see
:func:`~kproto.spark.schema.kafka_schema`), topic and partition taken from each
partition directory's name::

    spark.read.format("kafka-log").load("/var/lib/kafka/data")            # every partition
    spark.read.format("kafka-log").load("/var/lib/kafka/data/orders-3")   # one partition
    spark.read.format("kafka-log").option("includeHeaders", "true").load(".../00000000000000000000.log")

Options: ``includeHeaders`` (false, as Spark's Kafka source), ``verifyCrc`` (true).
Like a consumer at ``read_uncommitted``, the reader skips control batches (transaction
markers) and returns the records of aborted transactions.

Theory of operation. A ``.log`` file is a sequence of batches, each framed as
``baseOffset int64, batchLength int32`` and ``batchLength`` bytes (record batch v2 and
legacy message sets alike: Kafka's ``LOG_OVERHEAD``). One Spark input partition reads
one segment: it maps the file, walks those 12-byte frames to cut runs of whole batches
of about :data:`CHUNK_BYTES`, and decodes each run with
:func:`~kproto.records.decode_columnar` into one Arrow record batch. A frame that runs
past the end of the file is a torn tail (the broker died mid-write, or the file is a
copy taken mid-write) and a zero length is the zero padding of a preallocated segment:
either ends the segment cleanly, as Kafka's log recovery would cut it there. A batch
that is whole but does not decode (a bad CRC, garbage) is an error naming the file and
the byte position.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from kproto.arrow import arrow_schema, record_batch
from kproto.codec import decode_columnar
from kproto.errors import CorruptRecordError, KafkaError
from kproto.log_files import LOG_SUFFIX, parse_partition_dir, parse_segment_file
from kproto.spark.options import check_schema, flag
from kproto.spark.schema import kafka_schema

__all__ = ["CHUNK_BYTES", "KafkaLogDataSource", "SegmentPartition", "find_segments", "read_segment"]

CHUNK_BYTES = 4 << 20
"""About how many bytes of batches become one Arrow record batch."""

_FRAME = struct.Struct(">qi")  # baseOffset, batchLength


@dataclass(frozen=True)
class SegmentPartition(InputPartition):
    """One segment file: what one Spark task reads."""

    path: str
    topic: str
    partition: int


def _partition_of(directory: Path) -> tuple[str, int]:
    parsed = parse_partition_dir(directory.name)
    if parsed is None:
        raise ValueError(f"{directory} is not a partition directory (<topic>-<partition>)")
    return parsed


def _is_segment(name: str) -> bool:
    """A segment's ``.log`` in use: not a ``.deleted``, ``.cleaned`` or ``.swap`` one."""
    parsed = parse_segment_file(name)
    return parsed is not None and parsed.kind == LOG_SUFFIX and not parsed.suffix


def _segments_in(directory: Path) -> list[SegmentPartition]:
    topic, partition = _partition_of(directory)
    return [SegmentPartition(str(p), topic, partition) for p in sorted(directory.iterdir()) if _is_segment(p.name)]


def find_segments(path: str | os.PathLike) -> list[SegmentPartition]:
    """The segment files under ``path``, in topic, partition and offset order.

    ``path`` is a log directory (holding ``<topic>-<partition>`` directories), one
    partition directory, or one ``.log`` file (named by its base offset or not).
    Directories that are not partitions (Kafka's ``-delete`` and ``-future`` ones,
    checkpoints) are passed over.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a ``.log`` file outside a partition directory.
    """
    root = Path(path)
    if root.is_file():
        topic, partition = _partition_of(root.parent)
        return [SegmentPartition(str(root), topic, partition)]
    if not root.is_dir():
        raise FileNotFoundError(f"no such file or directory: {root}")
    if parse_partition_dir(root.name) and any(_is_segment(p.name) for p in root.iterdir()):
        return _segments_in(root)
    found = [s for d in sorted(root.iterdir()) if d.is_dir() and parse_partition_dir(d.name) for s in _segments_in(d)]
    return sorted(found, key=lambda s: (s.topic, s.partition, s.path))


def _runs(data: memoryview, limit: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` byte ranges of whole batches, each about ``limit`` bytes, up to a torn tail."""
    size = len(data)
    start = pos = 0
    while size - pos >= _FRAME.size:
        _, length = _FRAME.unpack_from(data, pos)
        end = pos + _FRAME.size + length
        if length <= 0 or end > size:  # zero padding, or a batch cut short
            break
        pos = end
        if pos - start >= limit:
            yield start, pos
            start = pos
    if pos > start:
        yield start, pos


def read_segment(segment: SegmentPartition, include_headers: bool = False, verify_crc: bool = True,
                 chunk_bytes: int = CHUNK_BYTES) -> Iterator[pa.RecordBatch]:
    """The records of one segment file as Arrow batches in :func:`arrow_schema` form.

    Raises:
        CorruptRecordError: a whole batch that does not decode; the message names the
            file and the byte position of the run it is in.
    """
    schema = arrow_schema(include_headers)
    with open(segment.path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            data = memoryview(mapped)
            try:
                for start, end in _runs(data, chunk_bytes):
                    try:
                        cols = decode_columnar(data[start:end], 0, verify_crc)
                    except (KafkaError, ValueError) as exc:
                        raise CorruptRecordError(f"{segment.path}, bytes {start}-{end}: {exc}",
                                                 getattr(exc, "first_offset", None),
                                                 getattr(exc, "last_offset", None)) from exc
                    # cols holds copies, not views of the mapping: safe to unmap after
                    yield record_batch(cols, segment.topic, segment.partition, schema)
            finally:
                data.release()


class _SegmentReader(DataSourceReader):
    def __init__(self, paths: list[str], include_headers: bool, verify_crc: bool) -> None:
        self.paths = paths
        self.include_headers = include_headers
        self.verify_crc = verify_crc

    def partitions(self) -> list[SegmentPartition]:
        return [s for path in self.paths for s in find_segments(path)]

    def read(self, partition: SegmentPartition) -> Iterator[pa.RecordBatch]:
        return read_segment(partition, self.include_headers, self.verify_crc)


class KafkaLogDataSource(DataSource):
    """The ``kafka-log`` format: Kafka log segment files, one Spark task per segment."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> StructType:
        return kafka_schema(flag(self.options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self.options
        check_schema(schema, self.schema(), "kafka-log")
        if "paths" in options:  # load([a, b]) gives a JSON list
            paths = json.loads(options["paths"])
        elif "path" in options:
            paths = [options["path"]]
        else:
            raise ValueError('kafka-log needs a path: spark.read.format("kafka-log").load(path)')
        return _SegmentReader(paths, flag(options, "includeHeaders", False), flag(options, "verifyCrc", True))
