"""Record sets for the Spark tests, built by kproto and by kafka-python, every codec."""

from __future__ import annotations

import kafka.record.default_records
import kafka.record.legacy_records

from kproto.records import BatchBuilder, decode_record_set

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def sample_records(n: int, seed: int = 0) -> list[tuple]:
    """``(timestamp, key, value, headers)`` with null keys, null values and headers mixed in."""
    return [
        (1_700_000_000_000 + seed + i,
         None if i % 5 == 0 else b"key-%d" % i,
         None if i % 7 == 3 else b"value-%d-" % i + b"x" * (i % 13),
         [(f"h{j}", None if (i + j) % 4 == 0 else b"%d" % j) for j in range(i % 3)])
        for i in range(n)
    ]


def kproto_batch(records: list[tuple], codec: str, base_offset: int = 0) -> bytes:
    builder = BatchBuilder(2, CODECS[codec], base_offset=base_offset)
    for timestamp, key, value, headers in records:
        builder.append(timestamp, key, value, headers)
    return builder.build()


def kafka_python_batch(records: list[tuple], codec: str, magic: int = 2) -> bytes:
    """A batch from kafka-python's own builder, as its producer would make it (base offset 0)."""
    if magic == 2:
        builder = kafka.record.default_records.DefaultRecordBatchBuilder(2, CODECS[codec], 0, -1, -1, -1, 1 << 30)
        for delta, (timestamp, key, value, headers) in enumerate(records):
            assert builder.append(delta, timestamp, key, value, headers) is not None
    else:
        builder = kafka.record.legacy_records.LegacyRecordBatchBuilder(magic, CODECS[codec], 1 << 30)
        for delta, (timestamp, key, value, _) in enumerate(records):
            assert builder.append(delta, timestamp, key, value) is not None
    return bytes(builder.build())


def expected(raw: bytes) -> list[dict]:
    """What the codec's row path says ``raw`` holds, in the UDF's shape (timestamps in ms)."""
    return [{"offset": r.offset, "timestamp": r.timestamp, "timestampType": r.timestamp_type, "key": r.key,
             "value": r.value, "headers": [{"key": k, "value": v} for k, v in r.headers]}
            for r in decode_record_set(raw)[0]]
