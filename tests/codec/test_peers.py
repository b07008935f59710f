"""kafka-python and aiokafka as oracles: what they write kproto reads the same, and back.

For every codec a peer can do here and every message format (magic 0, 1, 2):

- batches built by a peer's own builder (then stamped as a broker would: base offset,
  leader epoch, LogAppendTime) decode in kproto, on both backends and through all three
  readers (``read_batches``, ``decode_record_set``, ``decode_columnar``), to exactly the
  records and batch header fields the peer's own reader sees, and to what was written;
- batches built by kproto decode in both peers to what was written, CRC included;
- record sets of several batches (mixed formats and codecs, a partial tail, a fetch
  offset in the middle) agree with the peers' readers;
- ``murmur2`` agrees with the peers' and with Java's own test vectors.

Known peer limits (not kproto's), worked around here: aiokafka refuses lz4 in magic 0
messages (Kafka 0.8/0.9's broken frame checksum) both ways; aiokafka's Cython builder
treats a first timestamp of -1 as "unset" and writes the next record's timestamp as the
batch's base timestamp, so aiokafka-built v2 batches use timestamps >= 0; aiokafka's
Cython ``MemoryRecords`` reads every batch of a record set with the first batch's format,
so its record sets keep one magic; and it reports a magic 1 timestamp of -1 as
(None, None). Peers return ``None`` where kproto returns -1 (no timestamp in magic 0, no
timestamp type); the comparison maps one to the other. Both peers' producers write a
compressed magic 1 wrapper at offset 0; ``broker_stamp`` gives it its real offset, as a
broker does, and a separate test covers the unstamped form.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import aiokafka.codec
import aiokafka.partitioner
import aiokafka.record.default_records
import aiokafka.record.legacy_records
import aiokafka.record.memory_records
import kafka.codec
import kafka.partitioner.default
import kafka.record.default_records
import kafka.record.legacy_records
import kafka.record.memory_records
import pytest
from crc32c import crc32c as ref_crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import _codec_py
from kproto.records import ControlType, build_control_batch, parse_control_record

pytestmark = pytest.mark.codec

try:
    from kproto import _codec as _codec_cy
except ImportError:  # pragma: no cover - depends on the build
    _codec_cy = None

BACKENDS = [
    pytest.param(_codec_py, id="python"),
    pytest.param(
        _codec_cy,
        id="cython",
        marks=pytest.mark.skipif(_codec_cy is None, reason="the Cython extension is not built"),
    ),
]

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

PEER_SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# ---------------------------------------------------------------------------
# the peers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    """One peer library's record codec, seen through the same few calls."""

    name: str
    default_builder: Any  # DefaultRecordBatchBuilder (magic 2)
    legacy_builder: Any  # LegacyRecordBatchBuilder (magic 0/1)
    memory_records: Any  # MemoryRecords (reader)
    default_batch: Any  # the class next_batch() returns for magic 2
    codec_module: Any  # has_gzip(), has_snappy(), ...
    codec_library: dict[int, str]  # codec id -> what to install for it
    min_timestamp: int  # lowest timestamp its builder writes faithfully
    refuses: frozenset[tuple[int, int]]  # (magic, codec) it will not do at all
    mixed_magic: bool  # reads a record set whose batches differ in magic
    untyped_no_timestamp: bool  # reports timestamp -1 as (None, None), type unknown

    def has_codec(self, codec: int) -> bool:
        if codec == 0:
            return True
        return bool(getattr(self.codec_module, f"has_{CODEC_NAMES[codec]}")())

    def missing(self, magic: int, codec: int) -> str | None:
        """What this environment lacks for the peer to do (magic, codec), or None."""
        if not self.has_codec(codec):
            return f"{self.name} needs {self.codec_library[codec]} for {CODEC_NAMES[codec]}"
        # kafka-python's has_lz4() does not check xxhash, which its magic 0 framing needs.
        if (magic, codec) == (0, 3) and getattr(self.codec_module, "xxhash", True) is None:
            return f"{self.name} needs xxhash for lz4 in magic 0"
        return None


KAFKA_PYTHON = Peer(
    name="kafka-python",
    default_builder=kafka.record.default_records.DefaultRecordBatchBuilder,
    legacy_builder=kafka.record.legacy_records.LegacyRecordBatchBuilder,
    memory_records=kafka.record.memory_records.MemoryRecords,
    default_batch=kafka.record.default_records.DefaultRecordBatch,
    codec_module=kafka.codec,
    codec_library={1: "(stdlib)", 2: "python-snappy", 3: "lz4", 4: "zstandard"},
    min_timestamp=-1,
    refuses=frozenset(),
    mixed_magic=True,
    untyped_no_timestamp=False,
)
AIOKAFKA = Peer(
    name="aiokafka",
    default_builder=aiokafka.record.default_records.DefaultRecordBatchBuilder,
    legacy_builder=aiokafka.record.legacy_records.LegacyRecordBatchBuilder,
    memory_records=aiokafka.record.memory_records.MemoryRecords,
    default_batch=aiokafka.record.default_records.DefaultRecordBatch,
    codec_module=aiokafka.codec,
    codec_library={1: "(stdlib)", 2: "cramjam", 3: "cramjam", 4: "cramjam"},
    min_timestamp=0,
    refuses=frozenset({(0, 3)}),  # "LZ4 is not supported for broker version 0.8/0.9"
    # Its Cython MemoryRecords reads every batch with the first batch's format.
    mixed_magic=False,
    untyped_no_timestamp=True,
)
PEERS = (KAFKA_PYTHON, AIOKAFKA)


def peer_cases():
    """(peer, magic, codec) for every format and codec; missing libraries skip."""
    cases = []
    for peer in PEERS:
        for magic in (0, 1, 2):
            for codec in range(5):
                if (codec == 4 and magic < 2) or (magic, codec) in peer.refuses:
                    continue
                reason = peer.missing(magic, codec)
                marks = [pytest.mark.skip(reason=reason)] if reason else []
                cases.append(pytest.param(peer, magic, codec, id=f"{peer.name}-v{magic}-{CODEC_NAMES[codec]}", marks=marks))
    return cases


def peer_build(peer: Peer, magic: int, codec: int, spec: dict) -> bytes:
    """Build a batch with the peer's own builder, as its producer would (base offset 0)."""
    if magic == 2:
        builder = peer.default_builder(
            2, codec, int(spec["is_transactional"]), spec["producer_id"],
            spec["producer_epoch"], spec["base_sequence"], 1 << 30,
        )
        for delta, ts, key, value, headers in spec["records"]:
            assert builder.append(delta, ts, key, value, list(headers)) is not None
    else:
        builder = peer.legacy_builder(magic, codec, 1 << 30)
        for delta, ts, key, value, _headers in spec["records"]:
            assert builder.append(delta, ts, key, value) is not None
    return bytes(builder.build())


def broker_stamp(raw: bytes, magic: int, spec: dict) -> bytes:
    """Do what a broker does to a produced batch, without kproto: assign the offsets, stamp
    the leader epoch, and for LogAppendTime set the timestamp type and time, fixing the CRC.
    """
    buf = bytearray(raw)
    base = spec["base_offset"]
    lat = spec["log_append_time"]
    if magic == 2:
        struct.pack_into(">q", buf, 0, base)
        struct.pack_into(">i", buf, 12, spec["partition_leader_epoch"])
        if lat is not None:
            (attributes,) = struct.unpack_from(">h", buf, 21)
            struct.pack_into(">h", buf, 21, attributes | 0x08)
            struct.pack_into(">q", buf, 35, lat)
            struct.pack_into(">I", buf, 17, ref_crc32c(bytes(buf[21:])))
        return bytes(buf)
    pos = 0
    last_delta = spec["records"][-1][0]
    while pos < len(buf):
        offset, size = struct.unpack_from(">qi", buf, pos)
        attributes = buf[pos + 17]
        if attributes & 0x07:  # a wrapper: the broker gives it the last inner offset
            struct.pack_into(">q", buf, pos, base + last_delta)
        else:
            struct.pack_into(">q", buf, pos, base + offset)
        if lat is not None:
            buf[pos + 17] = attributes | 0x08
            struct.pack_into(">q", buf, pos + 18, lat)
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16 : pos + 12 + size])))
        pos += 12 + size
    return bytes(buf)


# ---------------------------------------------------------------------------
# specs: what to write
# ---------------------------------------------------------------------------

keys_and_values = st.one_of(
    st.none(),
    st.binary(max_size=48),
    st.binary(min_size=1, max_size=6).map(lambda b: b * 25),  # compressible
)
header_lists = st.lists(
    st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=16))), max_size=3
)


@st.composite
def batch_specs(draw, magic: int, codec: int, min_timestamp: int = -1, stamped: bool = True):
    """One batch to write: header fields and (offset_delta, timestamp, key, value, headers)."""
    n = draw(st.integers(1, 10))
    deltas = [0]
    for _ in range(n - 1):
        deltas.append(deltas[-1] + draw(st.sampled_from([1, 1, 1, 2, 7])))  # compaction gaps
    ts0 = draw(st.integers(min_timestamp, 1 << 42)) if magic else -1
    records = []
    for i, delta in enumerate(deltas):
        if magic == 0:
            ts = -1
        elif i == 0:
            ts = ts0
        else:  # timestamps need not increase inside a batch
            ts = max(0, ts0 + draw(st.integers(-1000, 100_000)))
        records.append((delta, ts, draw(keys_and_values), draw(keys_and_values), tuple(draw(header_lists)) if magic == 2 else ()))
    spec = {
        "records": records,
        "base_offset": draw(st.integers(0, 1 << 40)),
        "partition_leader_epoch": -1,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "is_transactional": False,
        "log_append_time": None,
    }
    if magic == 0 and codec:
        # Inner offsets of a compressed magic 0 wrapper are absolute and inside the
        # compressed bytes: a broker would recompress to move them. Keep them where written.
        spec["base_offset"] = 0
    if magic == 2:
        spec["partition_leader_epoch"] = draw(st.integers(-1, 1 << 20))
        if draw(st.booleans()):
            spec["producer_id"] = draw(st.integers(0, (1 << 63) - 1))
            spec["producer_epoch"] = draw(st.integers(0, 32767))
            spec["base_sequence"] = draw(st.integers(0, (1 << 31) - 1))
            spec["is_transactional"] = draw(st.booleans())
    if magic >= 1 and draw(st.booleans()):
        spec["log_append_time"] = draw(st.integers(0, 1 << 42)) if stamped else True
    return spec


def expected_records(spec: dict, magic: int, codec: int, lat_time: int | None) -> list[tuple]:
    """The records a correct reader returns for ``spec``, as kproto record tuples."""
    out = []
    for delta, ts, key, value, headers in spec["records"]:
        if magic == 0:
            ts, ts_type = -1, -1
        elif lat_time is not None:
            ts, ts_type = lat_time, 1
        else:
            ts_type = 0
        out.append((spec["base_offset"] + delta, ts, ts_type, key, value, tuple(headers)))
    return out


# ---------------------------------------------------------------------------
# reading: the peer's view and kproto's view, as plain tuples
# ---------------------------------------------------------------------------

# kproto Batch attribute -> peer batch attribute, for magic 2
V2_FIELDS = {
    "base_offset": "base_offset",
    "magic": "magic",
    "crc": "crc",
    "attributes": "attributes",
    "compression": "compression_type",
    "timestamp_type": "timestamp_type",
    "is_transactional": "is_transactional",
    "is_control": "is_control_batch",
    "last_offset_delta": "last_offset_delta",
    "base_timestamp": "first_timestamp",
    "max_timestamp": "max_timestamp",
    "producer_id": "producer_id",
    "producer_epoch": "producer_epoch",
    "base_sequence": "base_sequence",
    "next_offset": "next_offset",
    # kafka-python only:
    "partition_leader_epoch": "leader_epoch",
    "records_count": "records_count",
    "size": "size_in_bytes",
    "last_offset": "last_offset",
}
# for a legacy message (kproto's base_offset of a wrapper is its first inner record's,
# the peers' is the wrapper's own offset, compared separately)
LEGACY_FIELDS = {
    "magic": "magic",
    "compression": "compression_type",
    "timestamp_type": "timestamp_type",
    "next_offset": "next_offset",
    "size": "size_in_bytes",
    "is_transactional": "is_transactional",
    "is_control": "is_control_batch",
}
_MISSING = object()


def none_as(value, default=-1):
    return default if value is None else value


def peer_record(r) -> tuple:
    key = None if r.key is None else bytes(r.key)
    value = None if r.value is None else bytes(r.value)
    headers = tuple((k, None if v is None else bytes(v)) for k, v in r.headers)
    return (r.offset, none_as(r.timestamp), none_as(r.timestamp_type), key, value, headers)


def canon(peer: Peer, records) -> list[tuple]:
    """Records as ``peer`` can report them (see the module docstring), for comparison."""
    if not peer.untyped_no_timestamp:
        return list(records)
    return [r[:2] + (-1,) + r[3:] if r[1] == -1 else r for r in records]


def kproto_record(r) -> tuple:
    return (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)


def peer_read(peer: Peer, raw: bytes) -> list[dict]:
    """Every batch the peer reads from ``raw``: header fields, CRC verdict, records."""
    out = []
    records = peer.memory_records(bytes(raw))
    while True:
        batch = records.next_batch()
        if batch is None:
            return out
        crc_ok = batch.validate_crc()  # before iterating: a compressed legacy batch swaps its buffer
        v2 = isinstance(batch, peer.default_batch)
        fields = V2_FIELDS if v2 else LEGACY_FIELDS
        header = {}
        for ours, theirs in fields.items():
            value = getattr(batch, theirs, _MISSING)
            if value is not _MISSING:
                header[ours] = none_as(value) if ours == "timestamp_type" else value
        if not v2 and hasattr(batch, "base_offset"):
            header["wrapper_offset"] = batch.base_offset
        out.append({"header": header, "crc_ok": crc_ok, "records": canon(peer, map(peer_record, batch))})


def kproto_batch_header(batch, fields) -> dict:
    # A legacy wrapper's offset is its last inner record's; a plain message's is its own.
    return {f: batch.last_offset if f == "wrapper_offset" else getattr(batch, f) for f in fields}


def log_entries(raw: bytes) -> list[tuple[int, int]]:
    """(position, size) of every whole batch or legacy message, read straight from the bytes."""
    out = []
    pos = 0
    while len(raw) - pos >= 12:
        (length,) = struct.unpack_from(">i", raw, pos + 8)
        if pos + 12 + length > len(raw):
            break
        out.append((pos, 12 + length))
        pos += 12 + length
    return out


def raw_crcs(raw: bytes) -> list[int]:
    """The CRC field of every whole batch (v2: at byte 17; legacy: at byte 12)."""
    return [struct.unpack_from(">I", raw, pos + (17 if raw[pos + 16] == 2 else 12))[0] for pos, _ in log_entries(raw)]


def column_rows(cols) -> list[tuple]:
    """Rebuild record tuples from kproto's Arrow-layout :class:`Columns`."""
    n = cols.count

    def ints(buf, fmt, count):
        return struct.unpack_from(f"<{count}{fmt}", bytes(buf)) if count else ()

    def binary(offsets, data, validity, count):
        offs = ints(offsets, "i", count + 1)
        out = []
        for i in range(count):
            if validity is not None and not (validity[i // 8] >> (i % 8)) & 1:
                out.append(None)
            else:
                out.append(bytes(data[offs[i] : offs[i + 1]]))
        return out

    assert len(cols.offsets) == 8 * n and len(cols.key_offsets) == 4 * (n + 1)
    offsets = ints(cols.offsets, "q", n)
    timestamps = ints(cols.timestamps, "q", n)
    ts_types = ints(cols.timestamp_types, "i", n)
    keys = binary(cols.key_offsets, cols.key_data, cols.key_validity, n)
    values = binary(cols.value_offsets, cols.value_data, cols.value_validity, n)
    assert cols.key_nulls == keys.count(None) and cols.value_nulls == values.count(None)
    h = cols.header_count
    hkeys = [k.decode("utf-8") for k in binary(cols.header_key_offsets, cols.header_key_data, None, h)]
    hvals = binary(cols.header_value_offsets, cols.header_value_data, cols.header_value_validity, h)
    assert cols.header_value_nulls == hvals.count(None)
    hoffs = ints(cols.header_offsets, "i", n + 1)
    return [
        (offsets[i], timestamps[i], ts_types[i], keys[i], values[i],
         tuple(zip(hkeys[hoffs[i] : hoffs[i + 1]], hvals[hoffs[i] : hoffs[i + 1]])))
        for i in range(n)
    ]


def assert_kproto_reads_like_peer(peer: Peer, backend, raw: bytes, peer_view: list[dict]) -> None:
    """All three kproto readers agree with the peer's view of ``raw``."""
    batches = list(backend.read_batches(raw, check_crc=True))
    assert len(batches) == len(peer_view)
    assert [b.crc for b in batches] == raw_crcs(raw)
    for ours, theirs in zip(batches, peer_view):
        assert theirs["crc_ok"], "the peer rejects its own CRC"
        assert kproto_batch_header(ours, theirs["header"]) == theirs["header"]
        assert canon(peer, map(kproto_record, ours.records())) == theirs["records"]
    flat = [r for b in peer_view for r in b["records"]]
    records, next_offset, whole = backend.decode_record_set(raw)
    assert canon(peer, map(kproto_record, records)) == flat
    assert whole == len(raw)
    assert next_offset == batches[-1].next_offset
    cols = backend.decode_columnar(raw)
    assert (cols.count, cols.next_offset, cols.whole_bytes) == (len(flat), next_offset, whole)
    assert canon(peer, column_rows(cols)) == flat


# ---------------------------------------------------------------------------
# peer writes, kproto reads
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("peer", "magic", "codec"), peer_cases())
@PEER_SETTINGS
@given(data=st.data())
def test_kproto_reads_what_peer_writes(backend, peer, magic, codec, data):
    spec = data.draw(batch_specs(magic, codec, peer.min_timestamp))
    raw = broker_stamp(peer_build(peer, magic, codec, spec), magic, spec)
    view = peer_read(peer, raw)
    # The oracle first: the peer reads back what was written.
    expected = canon(peer, expected_records(spec, magic, codec, spec["log_append_time"]))
    assert [r for b in view for r in b["records"]] == expected
    if magic == 2:
        (header,) = [b["header"] for b in view]
        assert header["base_offset"] == spec["base_offset"]
        assert (header["producer_id"], header["producer_epoch"], header["base_sequence"], header["is_transactional"]) == (
            spec["producer_id"], spec["producer_epoch"], spec["base_sequence"], spec["is_transactional"])
    assert_kproto_reads_like_peer(peer, backend, raw, view)


# ---------------------------------------------------------------------------
# kproto writes, peer reads
# ---------------------------------------------------------------------------


def kproto_build(backend, magic: int, codec: int, spec: dict) -> bytes:
    builder = backend.BatchBuilder(
        magic, codec,
        base_offset=spec["base_offset"],
        producer_id=spec["producer_id"],
        producer_epoch=spec["producer_epoch"],
        base_sequence=spec["base_sequence"],
        is_transactional=spec["is_transactional"],
        partition_leader_epoch=spec["partition_leader_epoch"],
        timestamp_type=1 if spec["log_append_time"] else 0,
    )
    for delta, ts, key, value, headers in spec["records"]:
        assert builder.append(ts, key, value, list(headers) if magic == 2 else None, offset_delta=delta) == delta
    return builder.build()


def kproto_lat_time(spec: dict, magic: int, codec: int) -> int | None:
    """What a reader reports as the time of a LogAppendTime batch kproto built."""
    if not spec["log_append_time"]:
        return None
    if magic == 2 or codec:  # the batch's (wrapper's) max timestamp
        return max(ts for _, ts, *_ in spec["records"])
    return "own"  # uncompressed magic 1: each message carries its own time


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("peer", "magic", "codec"), peer_cases())
@PEER_SETTINGS
@given(data=st.data())
def test_peer_reads_what_kproto_writes(backend, peer, magic, codec, data):
    spec = data.draw(batch_specs(magic, codec, -1, stamped=False))
    raw = kproto_build(backend, magic, codec, spec)
    view = peer_read(peer, raw)
    assert all(b["crc_ok"] for b in view), "the peer rejects kproto's CRC"
    lat = kproto_lat_time(spec, magic, codec)
    expected = expected_records(spec, magic, codec, None if lat == "own" else lat)
    if lat == "own":
        expected = [r[:2] + (1,) + r[3:] for r in expected]
    assert [r for b in view for r in b["records"]] == canon(peer, expected)
    if magic == 2:
        (header,) = [b["header"] for b in view]
        records = spec["records"]
        assert header["base_offset"] == spec["base_offset"]
        assert header["last_offset_delta"] == records[-1][0]
        assert header["base_timestamp"] == records[0][1]
        assert header["max_timestamp"] == max(r[1] for r in records)
        assert (header["producer_id"], header["producer_epoch"], header["base_sequence"]) == (
            spec["producer_id"], spec["producer_epoch"], spec["base_sequence"])
        assert header["is_transactional"] == spec["is_transactional"]
        assert header["is_control"] is False
        assert header["timestamp_type"] == (1 if spec["log_append_time"] else 0)
        assert header["crc"] == ref_crc32c(raw[21:])
        if "partition_leader_epoch" in header:
            assert header["partition_leader_epoch"] == spec["partition_leader_epoch"]
            assert header["records_count"] == len(records)
    # And kproto agrees with the peer about its own bytes.
    assert_kproto_reads_like_peer(peer, backend, raw, view)


# ---------------------------------------------------------------------------
# record sets: several batches, mixed formats, a partial tail, a fetch offset
# ---------------------------------------------------------------------------


@st.composite
def record_sets(draw, peer: Peer):
    """Several peer-built batches with consecutive offsets, as a log would hold them."""
    parts = []
    next_base = draw(st.integers(0, 1 << 40))
    magics = [0, 1, 2] if peer.mixed_magic else [draw(st.sampled_from([0, 1, 2]))]
    for _ in range(draw(st.integers(1, 4))):
        magic = draw(st.sampled_from(magics))
        codec = draw(st.sampled_from([c for c in range(5) if not (c == 4 and magic < 2) and (magic, c) not in peer.refuses and not peer.missing(magic, c)]))
        spec = draw(batch_specs(magic, codec, peer.min_timestamp))
        if not (magic == 0 and codec):
            spec["base_offset"] = next_base
        raw = broker_stamp(peer_build(peer, magic, codec, spec), magic, spec)
        parts.append(raw)
        next_base = spec["base_offset"] + spec["records"][-1][0] + 1
    return parts


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("peer", PEERS, ids=lambda p: p.name)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_record_sets_agree_with_peer(backend, peer, data):
    parts = data.draw(record_sets(peer))
    whole = b"".join(parts)
    cut = data.draw(st.integers(0, len(parts[-1]) - 1)) if data.draw(st.booleans()) else 0
    raw = whole[: len(whole) - cut]  # a fetch may end inside the last batch
    view = peer_read(peer, raw)
    assert all(b["crc_ok"] for b in view)
    whole_bytes = sum(size for _, size in log_entries(raw))
    if isinstance(peer.memory_records(raw), kafka.record.memory_records.MemoryRecords):
        assert peer.memory_records(raw).valid_bytes() == whole_bytes
    peer_records = [r for b in view for r in b["records"]]
    all_offsets = [r[0] for r in peer_records] or [0]
    fetch_offset = data.draw(st.integers(0, max(all_offsets) + 1))

    batches = list(backend.read_batches(raw))
    assert len(batches) == len(view)
    assert sum(b.size for b in batches) == whole_bytes
    assert canon(peer, [kproto_record(r) for b in batches for r in b.records()]) == peer_records
    records, next_offset, consumed = backend.decode_record_set(raw, fetch_offset)
    expected = [r for r in peer_records if r[0] >= fetch_offset]
    assert canon(peer, map(kproto_record, records)) == expected
    assert consumed == whole_bytes
    assert next_offset == max([fetch_offset] + [b.next_offset for b in batches])
    cols = backend.decode_columnar(raw, fetch_offset)
    assert canon(peer, column_rows(cols)) == expected
    assert (cols.next_offset, cols.whole_bytes) == (next_offset, consumed)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("peer", PEERS, ids=lambda p: p.name)
def test_unassigned_magic1_wrapper_keeps_relative_offsets(backend, peer):
    """A magic 1 wrapper whose offset is below its last inner offset reads like Java.

    kafka-python's and aiokafka's producers write wrapper offset 0 (the broker assigns the
    real one), so a broker sees such wrappers in Produce requests. Java's
    ``AbstractLegacyRecordBatch.DeepRecordsIterator`` converts inner offsets only when
    ``absoluteBaseOffset = wrapperOffset - lastInnerOffset`` is >= 0, and otherwise keeps
    the relative offsets 0..n-1; both peers do the same. kproto must neither return
    negative offsets nor (decode_record_set from offset 0) drop the records they give.
    """
    codec = 1  # gzip: every peer has it
    builder = peer.legacy_builder(1, codec, 1 << 20)
    for i in range(3):
        builder.append(i, 1000 + i, b"k%d" % i, b"v" * 50)
    raw = bytes(builder.build())
    assert struct.unpack_from(">q", raw)[0] == 0  # as the producer wrote it
    view = peer_read(peer, raw)
    assert [r[0] for b in view for r in b["records"]] == [0, 1, 2]
    (batch,) = backend.read_batches(raw)
    assert [r.offset for r in batch.records()] == [0, 1, 2]
    assert (batch.base_offset, batch.last_offset) == (0, 2)
    records, next_offset, _ = backend.decode_record_set(raw)
    assert [r.offset for r in records] == [0, 1, 2]
    assert next_offset == 3


# ---------------------------------------------------------------------------
# control batches (transaction markers): kproto writes, peers read
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("peer", PEERS, ids=lambda p: p.name)
@pytest.mark.parametrize("control_type", list(ControlType), ids=lambda t: t.name)
def test_peers_read_kproto_transaction_markers(backend, peer, control_type):
    raw = build_control_batch(
        control_type, producer_id=4242, producer_epoch=7, timestamp=1_700_000_000_000,
        coordinator_epoch=3, base_offset=99, partition_leader_epoch=5,
    )
    (batch,) = peer_read(peer, raw)
    assert batch["crc_ok"]
    header = batch["header"]
    assert header["is_control"] is True and header["is_transactional"] is True
    assert (header["producer_id"], header["producer_epoch"], header["base_offset"]) == (4242, 7, 99)
    (record,) = batch["records"]
    assert record[0] == 99
    assert struct.unpack(">hh", record[3]) == (0, int(control_type))
    assert struct.unpack(">hi", record[4]) == (0, 3)
    # kafka-python parses control records itself: its verdict must match ours
    if peer is KAFKA_PYTHON:
        (kp_record,) = list(kafka.record.memory_records.MemoryRecords(raw).next_batch())
        assert (kp_record.version, kp_record.type) == (0, int(control_type))
    (ours,) = list(backend.read_batches(raw))
    assert ours.is_control and parse_control_record(ours.records()[0]) == (0, int(control_type))
    assert backend.decode_record_set(raw) == ([], 100, len(raw))  # never surfaced; offset advanced


# ---------------------------------------------------------------------------
# murmur2: the default partitioner's hash
# ---------------------------------------------------------------------------

# Java's Utils.murmur2 on these inputs, from apache/kafka
# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java (testMurmur2) ...
JAVA_UTILS_TEST_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]
# ... and librdkafka src/rdmurmur2.c (unittest_murmur2, "java_murmur2_results"), which adds
# every tail length (4, 3, 2 and 1 bytes) and the empty key.
LIBRDKAFKA_JAVA_VECTORS = [
    (b"kafka", 0xD067CF64),
    (b"giberish123456789", 0x8F552B0C),
    (b"1234", 0x9FC97B14),
    (b"234", 0xE7C009CA),
    (b"34", 0x873930DA),
    (b"4", 0x5A4B5CA1),
    (b"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x78424F1C),
    (b"reAmbleWillBeRemoved,ThePrePartThatIs", 0x4A62B377),
    (b"eAmbleWillBeRemoved,ThePrePartThatIs", 0xE0E4E09E),
    (b"AmbleWillBeRemoved,ThePrePartThatIs", 0x62B8B43F),
    (b"", 0x106E08D9),
]


def signed32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("key", "java"), JAVA_UTILS_TEST_VECTORS + LIBRDKAFKA_JAVA_VECTORS, ids=lambda v: repr(v)[:24])
def test_murmur2_matches_java(backend, key, java):
    assert backend.murmur2(key) == signed32(java)
    assert backend.murmur2(bytearray(key)) == signed32(java)
    assert backend.murmur2_partition(key, 2**31 - 1) == (java & 0x7FFFFFFF) % (2**31 - 1)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=300, deadline=None)
@given(key=st.binary(max_size=80), partitions=st.integers(1, 10_000))
def test_murmur2_matches_peers(backend, key, partitions):
    ours = backend.murmur2(key)
    assert ours == signed32(kafka.partitioner.default.murmur2(key))
    assert ours == signed32(aiokafka.partitioner.murmur2(key))
    part = backend.murmur2_partition(key, partitions)
    all_partitions = list(range(partitions))
    assert part == aiokafka.partitioner.DefaultPartitioner()(key, all_partitions, all_partitions)
    assert part == (kafka.partitioner.default.murmur2(key) & 0x7FFFFFFF) % partitions
