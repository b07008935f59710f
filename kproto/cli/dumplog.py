"""``kproto dump-log FILE...``: decode Kafka's on-disk files (``kafka-dump-log.sh --files``).

A ``.log`` segment is printed batch by batch: the header (offsets, producer id, epoch
and sequences, transactional and control flags, codec, position, size) with the result
of its CRC check, then one line per record (offset, timestamp, key and value sizes,
sequence, header keys; transaction markers as ``endTxnMarker``), with ``--print-data``
also its key, value and headers. ``.index``, ``.timeindex`` and ``.txnindex`` files are
printed entry by entry (an aborted transaction as Kafka's ``DumpLogSegments`` shows it). Files are read without a broker, so Kafka's files and minibroker's alike.
With the dump in a file or a pipe and stderr on a terminal, a live line there shows how
many bytes of the segments are done.

How a damaged segment shows (and the exit code is 1, with a summary on stderr):

- a whole batch whose CRC does not match is printed with ``isValid: false``, and its
  records are decoded all the same when they still parse;
- bytes after the last whole batch that do not make one are a torn tail (a broker that
  died mid-write, a copy taken mid-write): "Found N invalid bytes at position P";
  zero bytes there are preallocation padding, not damage;
- a batch header that cannot be read (a bad length, an unknown magic) ends the dump
  there, since nothing after it can be framed.

Theory of operation. :func:`~kproto.records.read_batches` frames the file with CRC
checks off, which gives every whole batch and its size, hence its position; each batch
is then read again on its own bytes with the check on, which is its CRC verdict. So
one bad batch does not hide the ones after it, and the CRC is computed by the codec,
not here.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

from kproto.cli.options import add_command
from kproto.cli.output import TIMESTAMP_TYPES
from kproto.cli.progress import Progress, progress
from kproto.compression import codec_name
from kproto.errors import CorruptRecordError, KafkaError
from kproto.log_files import (
    ABORTED_TXN_ENTRY,
    INDEX_SUFFIX,
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    unpack_aborted_txns,
)
from kproto.records import (
    Batch,
    ControlType,
    Record,
    parse_control_record,
    parse_txn_marker,
    read_batches,
)

__all__ = ["register"]

_CONTROL_TYPES = {t.value for t in ControlType}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "dump-log", help="decode log segments and index files, checking CRCs",
                         examples=["kproto dump-log /var/lib/kafka/orders-0/00000000000000000000.log",
                                   "kproto dump-log data/orders-0/*.log --print-data",
                                   "kproto dump-log data/orders-0/00000000000000000000.index"])
    parser.add_argument("files", nargs="+", metavar="FILE", help=".log, .index, .timeindex or .txnindex files")
    parser.add_argument("--print-data", action="store_true", help="also print each record's key, value and headers")
    parser.set_defaults(run=_run)


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode(errors="backslashreplace")


def _flag(value: bool) -> str:
    return str(value).lower()


def _base_offset(path: Path) -> int:
    """A segment's base offset, from its name (Kafka names segments after it)."""
    return int(path.stem) if path.stem.isdigit() else 0


class _Dump:
    """One file's dump: prints lines, and collects what is wrong with the file."""

    def __init__(self, path: Path, print_data: bool, bar: Progress) -> None:
        self.bar = bar
        self.counted = 0  # bytes the bar was given for this file
        self.path = path
        self.print_data = print_data
        self.problems: list[str] = []

    def line(self, text: str) -> None:
        sys.stdout.write(text + "\n")

    # -- .log ----------------------------------------------------------------------------

    def segment(self, buf: bytes) -> None:
        self.line(f"Log starting offset: {_base_offset(self.path)}")
        position = 0
        unreadable: KafkaError | None = None
        try:
            for batch in read_batches(buf, check_crc=False):
                self.batch(batch, position, self.crc_ok(buf, position, batch.size))
                position += batch.size
                self.bar.update(batch.size)
                self.counted += batch.size
        except KafkaError as exc:  # a header that cannot be framed: nothing after it can be
            unreadable = exc
        rest = len(buf) - position
        if not any(buf[position:]):
            return  # the end, or the zero padding of a preallocated segment
        if unreadable is not None:
            self.line(f"Found an unreadable batch at position {position}: {unreadable}")
            self.problems.append(f"unreadable batch at position {position}")
        else:
            self.line(f"Found {rest} invalid bytes at position {position} (a torn or partial batch)")
            self.problems.append(f"{rest} invalid bytes at position {position}")

    def crc_ok(self, buf: bytes, position: int, size: int) -> bool:
        try:
            next(read_batches(memoryview(buf)[position:position + size], check_crc=True))
        except CorruptRecordError:
            self.problems.append(f"CRC mismatch in the batch at position {position}")
            return False
        return True

    def batch(self, batch: Batch, position: int, valid: bool) -> None:
        sequences = (f"baseSequence: {batch.base_sequence} lastSequence: "
                     f"{batch.base_sequence + batch.last_offset_delta if batch.base_sequence >= 0 else -1} ")
        horizon = batch.base_timestamp if batch.has_delete_horizon else None
        self.line(
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.records_count} "
            f"{sequences}producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} isTransactional: {_flag(batch.is_transactional)} "
            f"isControl: {_flag(batch.is_control)} deleteHorizonMs: {horizon if horizon is not None else '-'} "
            f"position: {position} {TIMESTAMP_TYPES[batch.timestamp_type]}: {batch.max_timestamp} "
            f"size: {batch.size} magic: {batch.magic} compresscodec: {codec_name(batch.compression)} "
            f"crc: {batch.crc} isValid: {_flag(valid)}")
        try:
            records = batch.records()
        except KafkaError as exc:
            self.line(f"| records do not decode: {exc}")
            self.problems.append(f"undecodable records in the batch at position {position}")
            return
        for record in records:
            self.record(batch, record)

    def record(self, batch: Batch, record: Record) -> None:
        sequence = batch.base_sequence + record.offset - batch.base_offset if batch.base_sequence >= 0 else -1
        text = (f"| offset: {record.offset} {TIMESTAMP_TYPES[record.timestamp_type]}: {record.timestamp} "
                f"keySize: {len(record.key) if record.key is not None else -1} "
                f"valueSize: {len(record.value) if record.value is not None else -1} sequence: {sequence} "
                f"headerKeys: [{','.join(k for k, _ in record.headers)}]")
        if batch.is_control:
            text += " " + self.control(record)
        elif self.print_data:
            headers = ",".join(f"{k}:{_text(v)}" for k, v in record.headers)
            text += f" key: {_text(record.key)} payload: {_text(record.value)}"
            text += f" headers: [{headers}]" if headers else ""
        self.line(text)

    def control(self, record: Record) -> str:
        try:
            version, kind = parse_control_record(record)
        except CorruptRecordError as exc:
            return f"controlRecord: unreadable ({exc})"
        if version != 0 or kind not in _CONTROL_TYPES:
            return f"controlRecord: version {version} type {kind}"  # readers skip unknown ones, as Java does
        try:
            _, coordinator_epoch = parse_txn_marker(record)
        except CorruptRecordError:
            return f"controlRecord: version {version} type {kind}"
        return f"endTxnMarker: {ControlType(kind).name} coordinatorEpoch: {coordinator_epoch}"

    # -- .index and .timeindex -----------------------------------------------------------

    def index(self, buf: bytes, entry: struct.Struct) -> Iterator[tuple[int, int]]:
        """The used entries of an index file: a preallocated file is zero past them."""
        whole = len(buf) - len(buf) % entry.size
        for at in range(0, whole, entry.size):
            first, second = entry.unpack_from(buf, at)
            if at and not first and not second:
                return
            yield first, second
        if whole != len(buf):
            self.problems.append(f"{len(buf) - whole} bytes after the last whole entry")

    def offset_index(self, buf: bytes) -> None:
        base = _base_offset(self.path)
        for relative, position in self.index(buf, OFFSET_INDEX_ENTRY):
            self.line(f"offset: {base + relative} position: {position}")

    def time_index(self, buf: bytes) -> None:
        base = _base_offset(self.path)
        for timestamp, relative in self.index(buf, TIME_INDEX_ENTRY):
            self.line(f"timestamp: {timestamp} offset: {base + relative}")


    def txn_index(self, buf: bytes) -> None:
        whole = len(buf) - len(buf) % ABORTED_TXN_ENTRY.size
        try:
            for txn in unpack_aborted_txns(buf[:whole]):
                self.line(f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
                          f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")
        except ValueError as exc:
            self.problems.append(str(exc))
        if whole != len(buf):
            self.problems.append(f"{len(buf) - whole} bytes after the last whole entry")


def _dump(path: Path, print_data: bool, bar: Progress) -> list[str]:
    """Print one file; return what is wrong with it."""
    buf = path.read_bytes()
    dump = _Dump(path, print_data, bar)
    dump.line(f"Dumping {path}")
    {INDEX_SUFFIX: dump.offset_index, TIME_INDEX_SUFFIX: dump.time_index,
     TXN_INDEX_SUFFIX: dump.txn_index}.get(path.suffix, dump.segment)(buf)
    sys.stdout.flush()
    bar.update(len(buf) - dump.counted)  # what batches did not count: index files, a damaged tail
    return dump.problems


def _run(args: argparse.Namespace) -> int:
    damaged = 0
    sizes = [_size(Path(name)) for name in args.files]
    bar = progress(sum(sizes), "B", "dumped", streams_stdout=True)
    try:
        for name in args.files:
            problems = _dump(Path(name), args.print_data, bar)
            for problem in problems:
                print(f"kproto dump-log: error: {name}: {problem}", file=sys.stderr)
            damaged += bool(problems)
    finally:
        bar.close()
    return 1 if damaged else 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # reported when the file is read
        return 0
