"""kproto.spark.arrow: record sets per row to Arrow lists, without Spark."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kproto.errors import CorruptRecordError
from kproto.records import ControlType, build_control_batch
from kproto.spark.arrow import _counts_if_one_v2_each, _counts_if_whole_v2, decode_record_sets
from kproto.spark.schema import ARROW_RECORD_FIELDS
from tests.spark.records import CODECS, expected, kafka_python_batch, kproto_batch, sample_records


def as_ms(rows: list) -> list:
    """Arrow gives datetimes; the codec gives milliseconds."""
    for records in rows:
        for r in records or ():
            r["timestamp"] = r["timestamp"].timestamp() * 1000
    return rows


def rows_of(*raws: bytes | None) -> pa.Array:
    return pa.array(list(raws), pa.binary())


@pytest.mark.parametrize("codec", CODECS)
def test_rows_of_whole_v2_batches_decode_as_the_codec_does(codec):
    raws = [kproto_batch(sample_records(n, n), codec, base_offset=10 * n) + kafka_python_batch(sample_records(3), codec)
            for n in (1, 9, 40)]
    lists, errors = decode_record_sets(rows_of(*raws, None, b""))
    lists.validate(full=True)
    assert errors is None
    assert lists.type.value_type == pa.struct([pa.field(k, v) for k, v in ARROW_RECORD_FIELDS.items()])
    assert as_ms(lists.to_pylist()) == [expected(r) for r in raws] + [None, []]


@pytest.mark.parametrize("codec", [c for c in CODECS if c != "zstd"])  # zstd came with magic 2
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_take_the_row_by_row_path(codec, magic):
    raws = [kafka_python_batch(sample_records(n), codec, magic) for n in (1, 6)] + [kproto_batch(sample_records(4), codec)]
    lists, _ = decode_record_sets(rows_of(raws[0], None, *raws[1:]))
    lists.validate(full=True)
    assert as_ms(lists.to_pylist()) == [expected(raws[0]), None, expected(raws[1]), expected(raws[2])]


def test_a_sliced_input_array_is_read_from_its_offset():
    raws = [kproto_batch(sample_records(n), "none") for n in (2, 3, 4)]
    lists, _ = decode_record_sets(rows_of(*raws).slice(1))
    assert as_ms(lists.to_pylist()) == [expected(raws[1]), expected(raws[2])]


def corrupt_rows() -> tuple[pa.Array, bytes]:
    good = kproto_batch(sample_records(5), "gzip")
    flipped = bytearray(good)
    flipped[17] ^= 0xFF  # the stored CRC-32C (bytes 17-20 of the header) no longer matches
    return rows_of(good, bytes(flipped), good[:-4], None), good


def test_failfast_names_the_row_at_fault():
    with pytest.raises(CorruptRecordError, match="row 1 of the Arrow batch"):
        decode_record_sets(corrupt_rows()[0])


def test_permissive_gives_null_records_and_an_error_per_bad_row():
    rows, good = corrupt_rows()
    lists, errors = decode_record_sets(rows, "permissive")
    assert as_ms(lists.to_pylist()) == [expected(good), None, None, None]
    messages = errors.to_pylist()
    assert messages[0] is None and messages[3] is None
    assert "CRC" in messages[1].upper() and "not a whole batch" in messages[2]


def test_allow_partial_ignores_a_torn_tail_as_a_consumer_does():
    rows, good = corrupt_rows()
    lists, _ = decode_record_sets(rows.take([2]), allow_partial=True)
    assert lists.to_pylist() == [[]]
    lists, _ = decode_record_sets(rows_of(good + good[:30]), allow_partial=True)
    assert as_ms(lists.to_pylist()) == [expected(good)]


def test_skipping_crc_checks_is_an_option():
    rows, good = corrupt_rows()
    lists, _ = decode_record_sets(rows.take([1]), check_crc=False)
    assert as_ms(lists.to_pylist()) == [expected(good)]


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="FAILFAST or PERMISSIVE"):
        from kproto.spark import decode_udf
        decode_udf("DROPMALFORMED")


@pytest.mark.parametrize("codec", CODECS)
def test_rows_of_one_v2_batch_each_count_as_the_batch_headers_say(codec):
    """issue 16, the decode UDF: rows of exactly one v2 batch (or empty, or null) are counted
    from their headers with numpy in one pass; a transaction marker counts no record, and
    the lists are those of the per-row header walk (rows of two batches take that walk)."""
    marker = build_control_batch(ControlType.COMMIT, producer_id=7, producer_epoch=0, timestamp=1_700_000_000_000,
                                 base_offset=99)
    one_each = [kproto_batch(sample_records(n, n), codec, base_offset=10 * n) for n in (1, 9, 40)]
    raws = [one_each[0], marker, None, b"", one_each[1], kafka_python_batch(sample_records(3), codec), one_each[2]]
    arrow = rows_of(*raws)
    buffers = arrow.buffers()
    ends = np.frombuffer(buffers[1], np.int32, len(arrow) + 1)
    valid = np.array([r is not None for r in raws])
    counts = _counts_if_one_v2_each(memoryview(buffers[2]), ends[:-1], ends[1:], valid)
    assert counts.tolist() == [1, 0, 0, 0, 9, 3, 40]
    assert counts.tolist() == _counts_if_whole_v2(memoryview(buffers[2]), ends.tolist(), valid).tolist()
    lists, _ = decode_record_sets(arrow)
    lists.validate(full=True)
    assert as_ms(lists.to_pylist()) == [expected(one_each[0]), [], None, [], expected(one_each[1]),
                                        expected(raws[5]), expected(one_each[2])]
    two = rows_of(one_each[0] + one_each[1], one_each[2])
    two_ends = np.frombuffer(two.buffers()[1], np.int32, 3)
    assert _counts_if_one_v2_each(memoryview(two.buffers()[2]), two_ends[:-1], two_ends[1:], np.ones(2, bool)) is None
    assert as_ms(decode_record_sets(two)[0].to_pylist()) == [expected(one_each[0] + one_each[1]), expected(one_each[2])]
