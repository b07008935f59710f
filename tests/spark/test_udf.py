"""kproto.spark.udf on local Spark: the decode UDF against the codec, in the DataFrame API and SQL."""

from __future__ import annotations

import pytest
from pyspark.errors import PythonException

from kproto.spark import decode_udf, register_udfs
from tests.spark.records import CODECS, expected, kafka_python_batch, kproto_batch, sample_records


@pytest.fixture(scope="module")
def blobs(spark):
    """One row per (builder, codec): kproto and kafka-python batches, plus a null row."""
    raws = {}
    for codec in CODECS:
        raws[f"kproto-{codec}"] = kproto_batch(sample_records(30, 1), codec, base_offset=100) + kproto_batch(
            sample_records(5, 2), codec, base_offset=130)
        raws[f"kafka-python-{codec}"] = kafka_python_batch(sample_records(25, 3), codec)
    raws["kafka-python-v1-gzip"] = kafka_python_batch(sample_records(8, 4), "gzip", magic=1)
    df = spark.createDataFrame([(name, raw) for name, raw in raws.items()] + [("null", None)], "name string, raw binary")
    df.createOrReplaceTempView("blobs")
    register_udfs(spark)
    return raws


def test_sql_inline_of_kafka_decode_equals_the_codec(spark, blobs):
    rows = spark.sql("""
        SELECT name, offset, unix_millis(timestamp) AS timestamp, timestampType, key, value, headers
        FROM (SELECT name, inline(kafka_decode(raw)) FROM blobs)
    """).collect()
    got: dict[str, list] = {name: [] for name in blobs}
    for row in rows:
        record = row.asDict(recursive=True)
        got[record.pop("name")].append(record)
    want = {name: expected(raw) for name, raw in blobs.items()}
    for records in got.values():
        records.sort(key=lambda r: r["offset"])
        for r in records:
            r["key"], r["value"] = _bytes(r["key"]), _bytes(r["value"])
            r["headers"] = [{"key": h["key"], "value": _bytes(h["value"])} for h in r["headers"]]
    assert got == want


def _bytes(value):
    return None if value is None else bytes(value)


def test_dataframe_api_keeps_one_list_per_row(spark, blobs):
    out = spark.table("blobs").select("name", decode_udf()("raw").alias("records")).collect()
    sizes = {row.name: None if row.records is None else len(row.records) for row in out}
    assert sizes == {**{name: len(expected(raw)) for name, raw in blobs.items()}, "null": None}


def test_permissive_mode_reports_each_bad_row(spark, blobs):
    good = blobs["kproto-zstd"]
    df = spark.createDataFrame([(1, good), (2, good[:-1]), (3, b"\x00" * 70)], "id int, raw binary")
    out = {r.id: r.d for r in df.select("id", decode_udf("PERMISSIVE")("raw").alias("d")).collect()}
    assert len(out[1].records) == len(expected(good)) and out[1].error is None
    assert out[2].records is None and "not a whole batch" in out[2].error
    assert out[3].records is None and out[3].error.startswith("CorruptRecordError")


def test_failfast_mode_fails_the_query_with_the_codec_error(spark, blobs):
    df = spark.createDataFrame([(blobs["kproto-lz4"][:-1],)], "raw binary")
    with pytest.raises(PythonException, match="row 0 of the Arrow batch is not a valid record set"):
        df.select(decode_udf()("raw")).collect()
