"""``kproto dump-log``: segments and indexes written by minibroker, then damaged copies of
them (a bad CRC, a torn tail, an unreadable header, zero padding), and segments built
with the codec for what a producer cannot write (transaction markers, legacy messages)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from kproto.records import BatchBuilder, ControlType, build_control_batch
from minibroker import MiniBroker

SEGMENT = "00000000000000000000"


@pytest.fixture(scope="module")
def partition_dir(tmp_path_factory) -> Path:
    """``dl-topic-0`` of a stopped broker: a plain batch of 3 keyed records with headers,
    then a gzip batch of 2 (compressible: the codec keeps a batch that would grow
    uncompressed); an index entry per batch."""
    data = tmp_path_factory.mktemp("data")
    from kproto import Producer

    with MiniBroker(data_dir=data, config={"log.index.interval.bytes": "1"}) as broker:
        for compression, records in (("none", [(b"k%d" % i, b"value-%d" % i) for i in range(3)]),
                                     ("gzip", [(None, b"zipped-%d " % i + b"z" * 100) for i in range(2)])):
            with Producer(bootstrap_servers=broker.bootstrap_servers, compression_type=compression) as producer:
                for key, value in records:
                    producer.send("dl-topic", value, key, timestamp_ms=1_700_000_000_000, headers=[("h", b"x")])
    return data / "dl-topic-0"


@pytest.fixture
def segment(partition_dir, tmp_path) -> Path:
    """A copy of the segment, free to damage."""
    return Path(shutil.copy(partition_dir / f"{SEGMENT}.log", tmp_path / f"{SEGMENT}.log"))


def batch_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("baseOffset:")]


def test_a_segment_batch_by_batch_and_record_by_record(cli, partition_dir):
    path = partition_dir / f"{SEGMENT}.log"
    result = cli("dump-log", str(path), bootstrap=None)
    assert result.code == 0 and result.err == ""
    lines = result.lines
    assert lines[:2] == [f"Dumping {path}", "Log starting offset: 0"]
    first, second = batch_lines(result.out)
    assert first.startswith("baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: ")
    assert "isTransactional: false isControl: false" in first and "position: 0 CreateTime: 1700000000000" in first
    assert first.endswith("compresscodec: none crc: " + first.split("crc: ")[1].split()[0] + " isValid: true")
    assert second.startswith("baseOffset: 3 lastOffset: 4 count: 2") and "compresscodec: gzip" in second
    assert lines[3] == "| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 7 sequence: 0 headerKeys: [h]"
    assert lines[-1] == "| offset: 4 CreateTime: 1700000000000 keySize: -1 valueSize: 109 sequence: 1 headerKeys: [h]"


def test_print_data(cli, partition_dir):
    result = cli("dump-log", str(partition_dir / f"{SEGMENT}.log"), "--print-data", bootstrap=None)
    records = [line for line in result.lines if line.startswith("| ")]
    assert records[0].endswith("headerKeys: [h] key: k0 payload: value-0 headers: [h:x]")
    assert records[4].endswith(f"key: null payload: zipped-1 {'z' * 100} headers: [h:x]")


def test_index_files(cli, partition_dir):
    result = cli("dump-log", str(partition_dir / f"{SEGMENT}.index"), str(partition_dir / f"{SEGMENT}.timeindex"),
                 bootstrap=None)
    assert result.code == 0
    dumps = result.out.split("Dumping ")[1:]
    offsets = dumps[0].splitlines()[1:]
    assert offsets and all(line.startswith("offset: ") and " position: " in line for line in offsets)
    assert offsets[-1].startswith("offset: 4 ")
    assert dumps[1].splitlines()[1:] == ["timestamp: 1700000000000 offset: 2"]


def test_a_bad_crc_is_shown_and_the_next_batch_still_read(cli, segment):
    data = bytearray(segment.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records, after its 61-byte header
    segment.write_bytes(data)
    result = cli("dump-log", str(segment), bootstrap=None)
    assert result.code == 1
    first, second = batch_lines(result.out)
    assert first.endswith("isValid: false") and second.endswith("isValid: true")
    assert result.err.startswith(f"kproto dump-log: error: {segment}: CRC mismatch in the batch at position 0")


def test_a_torn_tail(cli, segment):
    size = segment.stat().st_size
    with open(segment, "r+b") as f:
        f.truncate(size - 10)
    result = cli("dump-log", str(segment), bootstrap=None)
    assert result.code == 1
    (first,) = batch_lines(result.out)
    position = int(first.split("size: ")[1].split()[0])
    assert f"Found {size - 10 - position} invalid bytes at position {position} (a torn or partial batch)" in result.lines
    assert result.err == f"kproto dump-log: error: {segment}: {size - 10 - position} invalid bytes at position {position}\n"


def test_zero_padding_is_not_damage(cli, segment):
    with open(segment, "ab") as f:
        f.write(bytes(4096))
    result = cli("dump-log", str(segment), bootstrap=None)
    assert result.code == 0 and len(batch_lines(result.out)) == 2


def test_an_unreadable_header_ends_the_dump(cli, segment):
    data = bytearray(segment.read_bytes())
    (length,) = struct.unpack_from(">i", data, 8)
    data[12 + length + 16] = 7  # the second batch's magic byte
    segment.write_bytes(data)
    result = cli("dump-log", str(segment), bootstrap=None)
    assert result.code == 1 and len(batch_lines(result.out)) == 1
    assert result.lines[-1].startswith(f"Found an unreadable batch at position {12 + length}: ")
    assert "unknown magic byte 7" in result.lines[-1]


def test_transaction_markers_and_legacy_messages(cli, tmp_path):
    data = BatchBuilder(2, base_offset=0, producer_id=7, producer_epoch=1, base_sequence=0, is_transactional=True)
    data.append(1000, b"k", b"v")
    legacy = BatchBuilder(1, base_offset=2)
    legacy.append(2000, None, b"old")
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data.build()
                     + build_control_batch(ControlType.COMMIT, producer_id=7, producer_epoch=1, timestamp=1500,
                                           coordinator_epoch=5, base_offset=1)
                     + legacy.build())
    result = cli("dump-log", str(path), "--print-data", bootstrap=None)
    assert result.code == 0, result.err
    transactional, marker, old = batch_lines(result.out)
    assert "producerId: 7 producerEpoch: 1" in transactional and "isTransactional: true isControl: false" in transactional
    assert "isTransactional: true isControl: true" in marker
    assert "| offset: 1 CreateTime: 1500 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT " \
           "coordinatorEpoch: 5" in result.lines
    assert "magic: 1" in old and result.lines[-1].endswith("key: null payload: old")


def test_missing_files_and_several_files(cli, partition_dir, tmp_path):
    missing = cli("dump-log", str(tmp_path / "nope.log"), bootstrap=None)
    assert missing.code == 1 and missing.out == "" and "No such file" in missing.err
    empty = tmp_path / f"{SEGMENT}.log"
    empty.write_bytes(b"")
    both = cli("dump-log", str(empty), str(partition_dir / f"{SEGMENT}.log"), bootstrap=None)
    assert both.code == 0 and both.out.count("Dumping ") == 2


def test_as_a_subprocess(run_process, segment):
    with open(segment, "r+b") as f:
        f.truncate(segment.stat().st_size - 1)
    done = run_process("dump-log", str(segment))
    assert done.returncode == 1 and done.stdout.startswith(b"Dumping ")
    assert done.stderr.startswith(b"kproto dump-log: error: ") and b"Traceback" not in done.stderr
