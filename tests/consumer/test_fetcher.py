"""The fetcher's per-partition decoding, without a network: read_committed filtering (Java's
``CompletedFetch`` rules), positions past control batches and gaps, a corrupt batch and a
failing deserializer leave the position at the bad record."""

import pytest

from kproto.consumer.errors import RecordDeserializationError
from kproto.consumer.fetcher import _Chunk
from kproto.errors import CorruptRecordError
from kproto.protocol.messages import FetchResponse
from kproto.records import BatchBuilder, ControlType, build_control_batch
from kproto.structs import TopicPartition

TP = TopicPartition("t", 0)


def data_batch(base, count, producer_id=-1, transactional=False, epoch=3):
    builder = BatchBuilder(2, 0, base_offset=base, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                           base_sequence=0 if producer_id >= 0 else -1, is_transactional=transactional,
                           partition_leader_epoch=epoch)
    for i in range(count):
        builder.append(1000 + base + i, b"k%d" % (base + i), b"v%d" % (base + i), [("h", b"%d" % i)])
    return builder.build()


def marker(offset, producer_id, kind):
    return build_control_batch(kind, producer_id=producer_id, producer_epoch=0, timestamp=5, base_offset=offset)


# Offsets: 0-1 aborted txn of producer 1; 2-3 committed txn of producer 2; 4 ABORT(1);
# 5-6 plain records; 7 COMMIT(2); 8 a later txn of producer 1, not aborted.
LOG = (data_batch(0, 2, 1, True) + data_batch(2, 2, 2, True) + marker(4, 1, ControlType.ABORT)
       + data_batch(5, 2) + marker(7, 2, ControlType.COMMIT) + data_batch(8, 1, 1, True))
ABORTED = [FetchResponse.AbortedTransaction(producer_id=1, first_offset=0)]


def drain(chunk, limit=100):
    out = []
    chunk.take(out, limit)
    return out


@pytest.mark.parametrize("read_committed, offsets", [(True, [2, 3, 5, 6, 8]), (False, [0, 1, 2, 3, 5, 6, 8])])
def test_read_committed_skips_aborted_batches_and_every_control_batch(read_committed, offsets):
    chunk = _Chunk(TP, 0, 0, LOG, check_crcs=True, aborted=ABORTED if read_committed else None,
                   deserializers=(None, None))
    records = drain(chunk)
    assert [r.offset for r in records] == offsets
    assert chunk.position == 9 and chunk.exhausted and chunk.end == 9
    first = records[0]
    assert (first.topic, first.partition, first.leader_epoch, first.timestamp_type) == ("t", 0, 3, 0)
    assert first.key == b"k%d" % first.offset and first.headers == (("h", b"0"),)


def test_fetch_offset_inside_a_batch_and_limits_move_the_position_record_by_record():
    chunk = _Chunk(TP, 0, 6, LOG, check_crcs=True, aborted=None, deserializers=(None, None))
    assert [r.offset for r in drain(chunk, 1)] == [6]
    assert chunk.position == 7  # past the batch (5-6), not yet past the COMMIT marker
    assert [r.offset for r in drain(chunk, 1)] == [8]
    assert chunk.position == 9 and chunk.exhausted


def test_a_corrupt_batch_stops_the_position_at_it():
    bad = bytearray(data_batch(2, 2))
    bad[-1] ^= 0xFF  # breaks the CRC
    chunk = _Chunk(TP, 0, 0, data_batch(0, 2) + bytes(bad) + data_batch(4, 1), check_crcs=True, aborted=None,
                   deserializers=(None, None))
    assert [r.offset for r in drain(chunk)] == [0, 1]
    assert chunk.exhausted and isinstance(chunk.error, CorruptRecordError) and chunk.position == 2
    assert chunk.end == 2  # the next fetch starts at the bad batch again


def bad_crc(batch):
    """``batch`` with its last byte changed: its CRC no longer matches."""
    bad = bytearray(batch)
    bad[-1] ^= 0xFF
    return bytes(bad)


@pytest.mark.parametrize("read_committed", [True, False])
def test_a_control_batch_with_a_bad_crc_stops_the_position_at_it(read_committed):
    """issue 16, poll_arrow lead 1: the CRCs are checked when poll first drains the chunk,
    no longer on arrival; a batch that is skipped, not returned (a transaction marker), is
    checked all the same (Java's ``CompletedFetch`` checks every batch it steps over)."""
    data = data_batch(0, 2, 1, True) + bad_crc(marker(2, 1, ControlType.COMMIT)) + data_batch(3, 1)
    chunk = _Chunk(TP, 0, 0, data, check_crcs=True, aborted=[] if read_committed else None,
                   deserializers=(None, None))
    assert [r.offset for r in drain(chunk)] == [0, 1]
    assert chunk.exhausted and isinstance(chunk.error, CorruptRecordError) and chunk.position == 2
    assert "CRC" in str(chunk.error) and chunk.end == 2
    assert drain(chunk) == [] and chunk.position == 2  # stuck there


def test_without_check_crcs_a_batch_with_a_bad_crc_is_returned():
    chunk = _Chunk(TP, 0, 0, data_batch(0, 2) + bad_crc(data_batch(2, 2)), check_crcs=False, aborted=None,
                   deserializers=(None, None))
    assert [r.offset for r in drain(chunk)] == [0, 1, 2, 3]
    assert chunk.error is None and chunk.position == 4


def test_a_failing_deserializer_leaves_the_position_at_its_record():
    def value(data):
        if data == b"v3":
            raise ValueError("not this one")
        return data.decode()

    chunk = _Chunk(TP, 0, 0, data_batch(0, 5), check_crcs=True, aborted=None, deserializers=(bytes.upper, value))
    records = drain(chunk)
    assert [(r.key, r.value) for r in records] == [(b"K0", "v0"), (b"K1", "v1"), (b"K2", "v2")]
    assert chunk.position == 3 and chunk.exhausted
    assert isinstance(chunk.error, RecordDeserializationError) and chunk.error.offset == 3
    assert isinstance(chunk.error.__cause__, ValueError)
