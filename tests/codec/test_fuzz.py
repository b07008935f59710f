"""Whatever bytes arrive, the codec returns records or raises a typed kproto error — never another exception, a crash, a hang or a read past the buffer.

A bounded, deterministic fuzz harness over the three readers (``read_batches`` with
``Batch.records()``, ``decode_record_set``, ``decode_columnar``) and the checker
(``read_batches`` with ``Batch.validate()``) of both backends, each with the CRC checked
and not checked.

Theory of operation: seeds are valid record sets (magic 0, 1 and 2, every codec, control
batches, several batches in a row, and peer-built batches for other compressor framings).
Each case picks a seed and applies one to three mutations: truncation, bit flips, byte
replacement, and structure-aware edits that a random flip rarely hits: the batch length,
records count and other header fields, the record length / key / value / header varints
*inside* the (decompressed) records, the key and value lengths of legacy messages, also
inside compressed wrappers, the magic byte, the codec bits, and garbage or truncated
compressed payloads. Structure-aware edits of a compressed batch decompress it, edit the
plain records and compress them again, and half of all cases then "reseal" the CRC, so
that with ``check_crc=True`` too the bytes reach the record parser instead of stopping at
the checksum (with ``check_crc=False`` they always do).

Every call must return or raise a :class:`kproto.errors.KafkaError`. For the Cython
backend each call is repeated on a memoryview into a larger buffer whose tail is random:
a decoder that reads past the end of its buffer would see that tail and answer
differently. The campaign runs in a child process with a capped address space, so a
crash (the child dies; ``faulthandler`` says where), a hang (the child outlives its
budget by ``WATCHDOG_S``) or a runaway allocation (a MemoryError) is reported with the
input that caused it; a call slower than ``SLOW_CALL_S`` is reported as a near-hang.
Both backends must also give the same answer (same records, or the same exception type
and offsets), and the checker must fail exactly where ``Batch.records()`` does, with the
same exception type and offsets.

The campaign is seeded (``SEED``) and bounded by ``KPROTO_FUZZ_SECONDS`` (wall time,
default 12) and ``KPROTO_FUZZ_CASES`` (default 20000): raise both for a longer local run.
A failure prints the case number and the input in hex; ``make_case`` rebuilds any case alone.
"""

from __future__ import annotations

import faulthandler
import os
import random
import struct
import time
import traceback
import zlib
from dataclasses import dataclass, field

import cramjam
import pytest
from crc32c import crc32c as ref_crc32c

from kproto import _codec_py, compression
from kproto.errors import CorruptRecordError, KafkaError
from kproto.records import ControlType, build_control_batch

pytestmark = pytest.mark.codec

try:
    from kproto import _codec as _codec_cy
except ImportError:  # pragma: no cover - depends on the build
    _codec_cy = None

SEED = 0x6B70726F  # "kpro"
BUDGET_S = float(os.environ.get("KPROTO_FUZZ_SECONDS", "12"))
MAX_CASES = int(os.environ.get("KPROTO_FUZZ_CASES", "20000"))
SLOW_CALL_S = 2.0  # inputs are a few KiB: anything this slow is a near-hang
WATCHDOG_S = 120.0  # the child may run this much past its budget before it is called hung
REPORT = 5  # examples shown per failure kind

BACKENDS = {"python": _codec_py}
if _codec_cy is not None:
    BACKENDS["cython"] = _codec_cy

V2_HEADER = 61
MiB = 1 << 20
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


# ---------------------------------------------------------------------------
# seeds: valid record sets
# ---------------------------------------------------------------------------


def _random_bytes(rng: random.Random, n: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(n))


def _value(rng: random.Random) -> bytes | None:
    kind = rng.random()
    if kind < 0.15:
        return None
    if kind < 0.3:
        return b""
    if kind < 0.7:
        return (b"kafka-%d " % rng.randrange(1000)) * rng.randrange(1, 8)  # compressible
    return _random_bytes(rng, rng.randrange(1, 40))


def _kproto_batch(rng: random.Random, magic: int, codec: int, base_offset: int) -> bytes:
    kwargs = {"base_offset": base_offset}
    if magic == 2:
        kwargs["partition_leader_epoch"] = rng.randrange(-1, 100)
        if rng.random() < 0.5:
            kwargs.update(producer_id=rng.randrange(1 << 40), producer_epoch=rng.randrange(5),
                          base_sequence=rng.randrange(1000), is_transactional=rng.random() < 0.5)
    if magic >= 1 and rng.random() < 0.3:
        kwargs["timestamp_type"] = 1
    builder = _codec_py.BatchBuilder(magic, codec, **kwargs)
    ts = rng.randrange(1 << 41) if magic else -1
    delta = -1
    for _ in range(rng.randrange(1, 7)):
        headers = None
        if magic == 2 and rng.random() < 0.6:
            headers = [(rng.choice(["trace", "ключ", "", "h"]), _value(rng)) for _ in range(rng.randrange(1, 4))]
        delta += rng.choice([1, 1, 1, 3])
        builder.append(ts + rng.randrange(-50, 500) if magic else -1, _value(rng), _value(rng), headers, offset_delta=delta)
    return builder.build()


def _peer_batches(rng: random.Random) -> list[tuple[str, bytes]]:
    """Batches written by kafka-python: other gzip levels, lz4 frame flags, snappy framing."""
    try:
        import kafka.codec
        from kafka.record.default_records import DefaultRecordBatchBuilder
        from kafka.record.legacy_records import LegacyRecordBatchBuilder
    except ImportError:  # pragma: no cover - the test extra has it
        return []
    out = []
    for magic in (0, 1, 2):
        for codec, name in ((1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")):
            if (codec == 4 and magic < 2) or not getattr(kafka.codec, f"has_{name}")():
                continue
            if magic == 2:
                builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 20)
            else:
                builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
            for i in range(rng.randrange(1, 5)):
                args = (i, 1_700_000_000_000 + i, _value(rng), _value(rng) or b"x" * 40)
                builder.append(*args, [("h", b"v")]) if magic == 2 else builder.append(*args)
            out.append((f"kafka-python v{magic} {name}", bytes(builder.build())))
    return out


def make_seeds(rng: random.Random) -> list[tuple[str, bytes]]:
    seeds = []
    for magic in (0, 1, 2):
        for codec in range(5):
            if codec == 4 and magic < 2:
                continue
            for _ in range(3):
                seeds.append((f"kproto v{magic} codec {codec}", _kproto_batch(rng, magic, codec, rng.randrange(1 << 30))))
    seeds.append(("commit marker", build_control_batch(ControlType.COMMIT, producer_id=7, producer_epoch=1, timestamp=5, base_offset=40)))
    seeds.append(("abort marker", build_control_batch(ControlType.ABORT, producer_id=7, producer_epoch=1, timestamp=5)))
    seeds.extend(_peer_batches(rng))
    singles = [raw for _, raw in seeds]
    for _ in range(12):  # record sets of several batches, as a fetch returns them
        seeds.append(("record set", b"".join(rng.choice(singles) for _ in range(rng.randrange(2, 4)))))
    return seeds


# ---------------------------------------------------------------------------
# a small independent parser: where the fields are
# ---------------------------------------------------------------------------


def log_entries(raw: bytes) -> list[tuple[int, int]]:
    """(position, size) of each whole batch or legacy message."""
    out = []
    pos = 0
    while len(raw) - pos >= 17:
        (length,) = struct.unpack_from(">i", raw, pos + 8)
        if length < 0 or pos + 12 + length > len(raw):
            break
        out.append((pos, 12 + length))
        pos += 12 + length
    return out


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    z, pos = read_uvarint(buf, pos)
    return (z >> 1) ^ -(z & 1), pos


def zigzag(value: int) -> bytes:
    z = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record_varints(plain: bytes, count: int) -> list[tuple[str, int, int, int]]:
    """(field, start, end, value) of every varint in the v2 records ``plain``."""
    out = []
    pos = 0
    for _ in range(count):
        for name in ("record_length", None, "timestamp_delta", "offset_delta", "key_length", "value_length", "header_count"):
            if name is None:  # the record's attributes byte
                pos += 1
                continue
            value, end = read_varint(plain, pos)
            out.append((name, pos, end, value))
            pos = end
            if name in ("key_length", "value_length"):
                pos += max(value, 0)
        for _h in range(out[-1][3]):
            for name in ("header_key_length", "header_value_length"):
                value, end = read_varint(plain, pos)
                out.append((name, pos, end, value))
                pos = end + max(value, 0)
    return out


def legacy_lengths(buf: bytes, pos: int) -> list[tuple[str, int]]:
    """(field, position) of the i32 key and value lengths of the legacy message at ``pos``."""
    key_at = pos + (26 if buf[pos + 16] == 1 else 18)
    (klen,) = struct.unpack_from(">i", buf, key_at)
    return [("key_length", key_at), ("value_length", key_at + 4 + max(klen, 0))]


# ---------------------------------------------------------------------------
# resealing: make an edited batch self-consistent again (length, CRC)
# ---------------------------------------------------------------------------


def seal_v2(header: bytes, payload: bytes, crc: bool = True) -> bytes:
    buf = bytearray(header[:V2_HEADER]) + payload
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    if crc:
        struct.pack_into(">I", buf, 17, ref_crc32c(bytes(buf[21:])))
    return bytes(buf)


def seal_legacy(message: bytes, crc: bool = True) -> bytes:
    buf = bytearray(message)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    if crc:
        struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])))
    return bytes(buf)


def reseal_crc(entry: bytes) -> bytes:
    """Recompute the CRC of an edited entry, whatever its magic says it is."""
    if len(entry) >= V2_HEADER and entry[16] == 2:
        return entry[:17] + struct.pack(">I", ref_crc32c(entry[21:])) + entry[21:]
    if len(entry) >= 17:
        return entry[:12] + struct.pack(">I", zlib.crc32(entry[16:])) + entry[16:]
    return entry


def legacy_wrapper_value(entry: bytes) -> tuple[int, int]:
    """(start, end) of a legacy message's value bytes."""
    _, value_len_at = (x[1] for x in legacy_lengths(entry, 0))
    (vlen,) = struct.unpack_from(">i", entry, value_len_at)
    return value_len_at + 4, value_len_at + 4 + max(vlen, 0)


# ---------------------------------------------------------------------------
# mutations: each takes (rng, entry bytes) and returns new entry bytes
# ---------------------------------------------------------------------------

INTERESTING_I32 = [I32_MIN, -2, -1, 0, 1, 2, 48, 49, 60, 61, 127, 128, 255, 4096, I32_MAX - 1, I32_MAX]
INTERESTING_I64 = [I64_MIN, -1, 0, 1, I64_MAX - 1, I64_MAX, 1 << 53, -(1 << 53)]


def _varint_garbage(rng: random.Random, old: int) -> bytes:
    choice = rng.random()
    if choice < 0.6:
        return zigzag(rng.choice([I32_MIN, -3, -2, -1, 0, 1, old - 1, old + 1, old * 2 + 7, old + 1000, I32_MAX, I32_MAX + 1, I64_MAX, rng.randrange(-300, 300)]))
    if choice < 0.75:
        return b"\xff" * rng.randrange(1, 12)  # over-long, too wide
    if choice < 0.85:
        return b"\x80" * rng.randrange(1, 10) + b"\x00"  # over-long zero
    if choice < 0.95:
        return b"\x80"  # unterminated
    return b""  # deleted


def mutate_truncate(rng, entry):
    return entry[: rng.randrange(len(entry))]


def mutate_bitflip(rng, entry):
    buf = bytearray(entry)
    for _ in range(rng.randrange(1, 5)):
        buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


def mutate_bytes(rng, entry):
    buf = bytearray(entry)
    for _ in range(rng.randrange(1, 5)):
        buf[rng.randrange(len(buf))] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, rng.getrandbits(8)])
    return bytes(buf)


def mutate_insert_delete(rng, entry):
    i = rng.randrange(len(entry))
    if rng.random() < 0.5:
        return entry[:i] + _random_bytes(rng, rng.randrange(1, 9)) + entry[i:]
    return entry[:i] + entry[i + rng.randrange(1, 9) :]


def mutate_batch_length(rng, entry):
    value = rng.choice(INTERESTING_I32 + [len(entry) - 12 + d for d in (-2, -1, 1, 2, 100)])
    return entry[:8] + struct.pack(">i", value) + entry[12:]


def mutate_magic(rng, entry):
    return entry[:16] + bytes([rng.choice([0, 1, 2, 3, 0x7F, 0x80, 0xFF])]) + entry[17:]


def mutate_codec(rng, entry):
    at = 22 if entry[16] == 2 else 17  # low byte of the attributes
    return entry[:at] + bytes([(entry[at] & ~0x07) | rng.randrange(8)]) + entry[at + 1 :]


def mutate_attribute_bits(rng, entry):
    at = 22 if entry[16] == 2 else 17
    return entry[:at] + bytes([entry[at] ^ rng.choice([0x08, 0x10, 0x20, 0x40, 0x80])]) + entry[at + 1 :]


V2_INT_FIELDS = [(0, "q"), (12, "i"), (23, "i"), (27, "q"), (35, "q"), (43, "q"), (51, "h"), (53, "i"), (57, "i")]


def mutate_v2_header_int(rng, entry):
    if entry[16] != 2 or len(entry) < V2_HEADER:
        return mutate_bytes(rng, entry)
    at, fmt = rng.choice(V2_INT_FIELDS)
    if fmt == "q":
        value = rng.choice(INTERESTING_I64)
    elif fmt == "h":
        value = rng.choice([-32768, -1, 0, 1, 32767])
    else:
        old = struct.unpack_from(">i", entry, at)[0]
        value = rng.choice(INTERESTING_I32 + [old - 1, old + 1])
    return entry[:at] + struct.pack(">" + fmt, value) + entry[at + struct.calcsize(fmt) :]


MUTATOR_MAX_SIZE = MiB  # mutators decompress seeds (small): refuse anything bigger quickly


def _v2_plain(entry: bytes) -> tuple[int, bytes]:
    codec = entry[22] & 0x07
    payload = entry[V2_HEADER:]
    return codec, (compression.decompress(codec, payload, max_size=MUTATOR_MAX_SIZE) if codec else payload)


def mutate_record_varint(rng, entry):
    """Edit one varint of the records (length, key/value length, header count...)."""
    if entry[16] != 2 or len(entry) < V2_HEADER:
        return mutate_legacy_length(rng, entry)
    codec, plain = _v2_plain(entry)
    fields = record_varints(plain, struct.unpack_from(">i", entry, 57)[0])
    if not fields:
        return mutate_v2_header_int(rng, entry)
    _name, start, end, old = rng.choice(fields)
    plain = plain[:start] + _varint_garbage(rng, old) + plain[end:]
    return seal_v2(entry, compression.compress(codec, plain) if codec else plain)


def mutate_record_bytes(rng, entry):
    """Random edits of the plain records of a compressed batch, compressed again."""
    if entry[16] != 2 or len(entry) <= V2_HEADER or not entry[22] & 0x07:
        return mutate_bytes(rng, entry)
    codec, plain = _v2_plain(entry)
    if plain:
        plain = rng.choice([mutate_bytes, mutate_truncate, mutate_insert_delete])(rng, plain)
    return seal_v2(entry, compression.compress(codec, plain))


def mutate_legacy_length(rng, entry):
    """Edit the key or value length of a legacy message, or of a message inside a wrapper."""
    if entry[16] not in (0, 1):
        return mutate_record_varint(rng, entry)
    codec = entry[17] & 0x07
    if codec and rng.random() < 0.7:
        start, end = legacy_wrapper_value(entry)
        inner = compression.decompress(codec, entry[start:end], magic=entry[16], max_size=MUTATOR_MAX_SIZE)
        positions = [(p, s) for p, s in log_entries(inner)]
        if positions:
            p, s = rng.choice(positions)
            msg = inner[p : p + s]
            op = rng.random()
            if op < 0.5:
                _, at = rng.choice(legacy_lengths(msg, 0))
                msg = msg[:at] + struct.pack(">i", rng.choice(INTERESTING_I32)) + msg[at + 4 :]
            elif op < 0.7:
                msg = mutate_codec(rng, msg)  # compression nested in compression
            elif op < 0.85:
                msg = mutate_magic(rng, msg)
            else:
                msg = mutate_batch_length(rng, msg)
            msg = reseal_crc(msg) if rng.random() < 0.7 else msg
            inner = inner[:p] + msg + inner[p + s :]
            if rng.random() < 0.2:
                inner = inner[: rng.randrange(len(inner) + 1)]
            packed = compression.compress(codec, inner, magic=entry[16])
            return seal_legacy(entry[: start - 4] + struct.pack(">i", len(packed)) + packed)
    _, at = rng.choice(legacy_lengths(entry, 0))
    return seal_legacy(entry[:at] + struct.pack(">i", rng.choice(INTERESTING_I32)) + entry[at + 4 :])


def mutate_payload(rng, entry):
    """Garbage or truncated compressed bytes behind a consistent header (reaches the decompressors)."""
    if entry[16] == 2 and len(entry) >= V2_HEADER:
        header, payload = entry[:V2_HEADER], entry[V2_HEADER:]
        if rng.random() < 0.5 and payload:
            payload = payload[: rng.randrange(len(payload))]
        else:
            payload = mutate_bitflip(rng, payload) if payload and rng.random() < 0.5 else _random_bytes(rng, rng.randrange(0, 64))
        if not entry[22] & 0x07:
            header = header[:22] + bytes([entry[22] | rng.randrange(1, 5)]) + header[23:]
        return seal_v2(header, payload)
    if entry[16] in (0, 1) and entry[17] & 0x07:
        start, end = legacy_wrapper_value(entry)
        value = entry[start:end]
        value = value[: rng.randrange(len(value))] if value and rng.random() < 0.5 else _random_bytes(rng, rng.randrange(0, 64))
        return seal_legacy(entry[: start - 4] + struct.pack(">i", len(value)) + value)
    return mutate_bytes(rng, entry)


MUTATIONS = [
    (mutate_truncate, 2),
    (mutate_bitflip, 3),
    (mutate_bytes, 3),
    (mutate_insert_delete, 1),
    (mutate_batch_length, 2),
    (mutate_magic, 1),
    (mutate_codec, 2),
    (mutate_attribute_bits, 1),
    (mutate_v2_header_int, 2),
    (mutate_record_varint, 5),
    (mutate_record_bytes, 2),
    (mutate_legacy_length, 3),
    (mutate_payload, 2),
]
_MUTATORS = [m for m, _ in MUTATIONS]
_WEIGHTS = [w for _, w in MUTATIONS]


def mutate(rng: random.Random, raw: bytes) -> tuple[bytes, list[str]]:
    """Apply one to three mutations to one entry of the record set ``raw``."""
    entries = log_entries(raw) or [(0, len(raw))]
    applied = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        entries = log_entries(raw) or [(0, len(raw))]
        pos, size = rng.choice(entries)
        entry = raw[pos : pos + size]
        if len(entry) < 22:
            mutator = mutate_bytes if entry else mutate_truncate
        else:
            mutator = rng.choices(_MUTATORS, _WEIGHTS)[0]
        if not entry:
            break
        try:
            new = mutator(rng, entry)
        except Exception:  # noqa: BLE001 - a mutator that cannot parse its input falls back
            new = mutate_bytes(rng, entry)
            mutator = mutate_bytes
        if rng.random() < 0.5:
            new = reseal_crc(new)
        applied.append(mutator.__name__.removeprefix("mutate_"))
        raw = raw[:pos] + new + raw[pos + size :]
    return raw, applied


# ---------------------------------------------------------------------------
# running the codec
# ---------------------------------------------------------------------------

BATCH_FIELDS = (
    "base_offset", "last_offset", "next_offset", "size", "magic", "crc", "attributes",
    "compression", "timestamp_type", "is_transactional", "is_control", "partition_leader_epoch",
    "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
    "records_count",
)


def _rec(r) -> tuple:
    return (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)


def call(backend, api: str, buf, check_crc: bool, fetch_offset: int):
    """One reader, fully consumed (every batch's records decoded or checked), as comparable data."""
    if api == "read_batches":
        out = []
        for batch in backend.read_batches(buf, check_crc):
            header = tuple(getattr(batch, f) for f in BATCH_FIELDS)
            out.append((header, [_rec(r) for r in batch.records()]))
        return out
    if api == "decode_record_set":
        records, next_offset, whole = backend.decode_record_set(buf, fetch_offset, check_crc)
        return [_rec(r) for r in records], next_offset, whole
    if api == "validate":
        out = []
        for batch in backend.read_batches(buf, check_crc):
            batch.validate()
            out.append(tuple(getattr(batch, f) for f in BATCH_FIELDS))
        return out
    cols = backend.decode_columnar(buf, fetch_offset, check_crc)
    return {name: getattr(cols, name) for name in _codec_py.Columns.__slots__}


READERS = ("read_batches", "decode_record_set", "decode_columnar")
APIS = (*READERS, "validate")


@dataclass
class Campaign:
    cases: int = 0
    calls: int = 0
    seconds: float = 0.0
    # Failures, each [signature, example]: the signature groups the same fault's cases.
    violations: list = field(default_factory=list)  # untyped exceptions
    overreads: list = field(default_factory=list)
    slow: list = field(default_factory=list)
    disagreements: list = field(default_factory=list)
    validate_mismatches: list = field(default_factory=list)  # validate() failed where records() did not, or the reverse
    crash: str = ""  # the child died, hung or ran out of time: what it was doing
    outcomes: dict = field(default_factory=dict)  # "ok" or error type name -> count
    mutations: dict = field(default_factory=dict)


def _show(buf) -> str:
    hexed = bytes(buf).hex()
    return hexed if len(hexed) <= 600 else hexed[:600] + f"... ({len(buf)} bytes)"


def make_case(case: int, seeds: list[tuple[str, bytes]]) -> tuple[str, bytes, list[str], int, bytes]:
    """Case number ``case`` of the campaign: (seed name, input, mutations, fetch offset, padding).

    Each case has its own generator, seeded from ``SEED`` and the case number, so any case
    can be rebuilt alone: ``make_case(n, make_seeds(random.Random(SEED)))``.
    """
    rng = random.Random(f"{SEED}:{case}")
    name, seed = rng.choice(seeds)
    buf, applied = mutate(rng, seed)
    fetch_offset = 0 if rng.random() < 0.8 else rng.randrange(1 << 31)
    return name, buf, applied, fetch_offset, _random_bytes(rng, 16) * 4


def run_campaign(progress=None) -> Campaign:
    """Run the seeded campaign in this process; ``progress(text)`` hears of each case first."""
    seeds = make_seeds(random.Random(SEED))
    report = Campaign()
    start = time.perf_counter()
    deadline = start + BUDGET_S
    for case in range(MAX_CASES):
        if time.perf_counter() > deadline:
            break
        name, buf, applied, fetch_offset, pad = make_case(case, seeds)
        for m in applied:
            report.mutations[m] = report.mutations.get(m, 0) + 1
        label = f"case {case} ({name}; {'+'.join(applied)})"
        if progress is not None:
            progress(f"{label}, fetch_offset={fetch_offset}\n  input: {_show(buf)}")
        for check_crc in (True, False):
            verdicts = {}  # (api, backend) -> "ok" or (error type, first, last)
            for api in APIS:
                seen = {}
                for bname, backend in BACKENDS.items():
                    where = f"{label}, {bname}.{api}(check_crc={check_crc}, fetch_offset={fetch_offset})"
                    result = _outcome(report, backend, api, buf, check_crc, fetch_offset, where)
                    seen[bname] = result
                    if bname == "cython" and result is not None:
                        padded = bytearray(buf + pad)
                        again = _outcome(report, backend, api, memoryview(padded)[: len(buf)], check_crc, fetch_offset, where + " on a padded view")
                        if again is not None and again != result:
                            report.overreads.append([f"cython.{api}", f"{where}: {result!r:.200} vs {again!r:.200}\n  input: {_show(buf)}"])
                    if result is not None:
                        kind = "ok" if result[0] == "ok" else result[1]
                        report.outcomes[kind] = report.outcomes.get(kind, 0) + 1
                        verdicts[api, bname] = "ok" if result[0] == "ok" else result[1:]
                py_seen, cy_seen = seen.get("python"), seen.get("cython")
                if py_seen is not None and cy_seen is not None and py_seen != cy_seen:
                    kinds = " vs ".join("ok" if x[0] == "ok" else x[1] for x in (py_seen, cy_seen))
                    report.disagreements.append([f"{api}: python {kinds} cython", (
                        f"{label}, {api}(check_crc={check_crc}, fetch_offset={fetch_offset}):\n"
                        f"  python: {py_seen!r:.300}\n  cython: {cy_seen!r:.300}\n  input: {_show(buf)}"
                    )])
            for bname in BACKENDS:
                decoded, checked = verdicts.get(("read_batches", bname)), verdicts.get(("validate", bname))
                if decoded is not None and checked is not None and decoded != checked:
                    report.validate_mismatches.append([f"{bname}: records() {decoded} vs validate() {checked}", (
                        f"{label}, {bname}(check_crc={check_crc}): records() {decoded}, validate() {checked}\n  input: {_show(buf)}"
                    )])
        report.cases += 1
    report.seconds = time.perf_counter() - start
    return report


def _outcome(report: Campaign, backend, api, buf, check_crc, fetch_offset, where):
    """("ok", value) or ("error", type name, first, last); None after an untyped exception."""
    report.calls += 1
    t0 = time.perf_counter()
    try:
        result = ("ok", call(backend, api, buf, check_crc, fetch_offset))
    except KafkaError as exc:
        result = ("error", type(exc).__name__, getattr(exc, "first_offset", None), getattr(exc, "last_offset", None))
    except Exception as exc:  # noqa: BLE001 - this is what the harness looks for
        tb = "".join(traceback.format_exception(exc)[-3:]).strip()
        backend_name = "cython" if backend is _codec_cy else "python"
        kind = type(exc).__qualname__ if type(exc).__module__ == "builtins" else f"{type(exc).__module__}.{type(exc).__qualname__}"
        report.violations.append([f"{backend_name}.{api}: {kind}: {str(exc)[:60]}", f"{where}: {kind}: {exc}\n  {tb}\n  input: {_show(buf)}"])
        result = None
    elapsed = time.perf_counter() - t0
    if elapsed > SLOW_CALL_S:
        report.slow.append([api, f"{where}: {elapsed:.1f} s\n  input: {_show(buf)}"])
    return result


# The campaign runs in a child process, so that a crash, a hang or a runaway allocation
# (a length field believed: gigabytes reserved from a few bytes) is a reported failure
# with its input, not a dead or swapping test run. Its address space is capped: an
# allocation past the cap is a MemoryError, which the harness reports as untyped.
CHILD_ADDRESS_SPACE = 1536 * MiB
CHILD_CODE = "import sys; from tests.codec.test_fuzz import child_main; child_main(*sys.argv[1:])"


def child_main(job: str, out_path: str, progress_path: str) -> None:
    """Entry point of a capped child process: run ``job``, write its result as JSON."""
    import json
    import resource

    faulthandler.enable()  # a segfault prints where it happened
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))

    def progress(text: str) -> None:
        with open(progress_path, "w") as f:
            f.write(text)

    result = CHILD_JOBS[job](progress)
    with open(out_path, "w") as f:
        json.dump(result, f)


def run_in_capped_child(job: str, tmp, timeout: float) -> tuple[object, str]:
    """Run ``CHILD_JOBS[job]`` in a child process: (its result, "") or (None, what went wrong)."""
    import json
    import subprocess
    import sys

    out_path, progress_path = tmp / f"{job}.json", tmp / f"{job}.progress"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD_CODE, job, str(out_path), str(progress_path)],
            cwd=root, capture_output=True, text=True, timeout=timeout,
        )
        failure = "" if proc.returncode == 0 else f"the child exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    except subprocess.TimeoutExpired:
        failure = f"the child ran {timeout:.0f} s: a hang"
    if failure or not out_path.exists():
        last = progress_path.read_text() if progress_path.exists() else "(nothing started)"
        return None, f"{failure}\nlast step started: {last}"
    return json.loads(out_path.read_text()), ""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Campaign:
    result, failure = run_in_capped_child("campaign", tmp_path_factory.mktemp("fuzz"), BUDGET_S + WATCHDOG_S)
    if failure:
        return Campaign(crash=failure)
    return Campaign(**result)


def _summary(report: Campaign) -> str:
    return (
        f"{report.cases} cases, {report.calls} calls in {report.seconds:.1f} s; "
        f"outcomes {dict(sorted(report.outcomes.items()))}; mutations {dict(sorted(report.mutations.items()))}"
    )


def _examples(items: list) -> str:
    """One example of each distinct fault (by signature), with how many cases showed it."""
    groups: dict[str, list] = {}
    for signature, example in items:
        groups.setdefault(signature, []).append(example)
    return "\n".join(f"- {sig} ({len(ex)} calls), e.g. {ex[0]}" for sig, ex in list(groups.items())[:REPORT * 2])


def test_only_typed_errors_no_overreads_no_hangs(campaign):
    print(_summary(campaign))
    assert not campaign.crash, campaign.crash
    assert campaign.cases >= 200, f"the budget allowed too few cases to mean anything: {_summary(campaign)}"
    assert not campaign.violations, f"{len(campaign.violations)} calls raised an untyped exception:\n{_examples(campaign.violations)}"
    assert not campaign.overreads, f"{len(campaign.overreads)} calls answered differently on a padded view:\n{_examples(campaign.overreads)}"
    assert not campaign.slow, f"{len(campaign.slow)} near-hangs:\n{_examples(campaign.slow)}"
    # The harness must reach the record parser, not only the CRC and header checks.
    assert campaign.outcomes.get("ok", 0) > 0 and campaign.outcomes.get("CorruptRecordError", 0) > 0


@pytest.mark.skipif(_codec_cy is None, reason="the Cython extension is not built")
def test_backends_agree_on_fuzzed_input(campaign):
    assert not campaign.disagreements, f"{len(campaign.disagreements)} differences between the backends:\n{_examples(campaign.disagreements)}"


def test_validate_fails_exactly_where_records_fails(campaign):
    assert not campaign.crash, campaign.crash
    assert not campaign.validate_mismatches, (
        f"{len(campaign.validate_mismatches)} inputs where validate() and records() disagree:\n{_examples(campaign.validate_mismatches)}"
    )


# ---------------------------------------------------------------------------
# decompression bombs: the cap holds inside a batch
# ---------------------------------------------------------------------------

CAP = compression.DEFAULT_MAX_DECOMPRESSED


def _bomb_batch(codec: int, payload: bytes) -> bytes:
    """A v2 batch at offset 1000 whose records are ``payload``, with a valid CRC."""
    builder = _codec_py.BatchBuilder(2, 0, base_offset=1000)
    builder.append(1, b"k", b"v", offset_delta=4)
    header = bytearray(builder.build()[:V2_HEADER])
    struct.pack_into(">h", header, 21, codec)
    return seal_v2(bytes(header), payload)


def _zstd_frames() -> bytes:
    # Concatenated frames are valid zstd; each declares 1 MiB, so the first guess is small
    # and only the growing buffer meets the cap.
    return bytes(cramjam.zstd.compress(bytes(MiB))) * (CAP // MiB + 1)


def _gzip_members() -> bytes:
    return bytes(cramjam.gzip.compress(bytes(MiB), level=9)) * (CAP // MiB + 1)


def _zstd_declared() -> bytes:
    # One frame whose header claims 1 TiB: rejected before any allocation.
    frame = bytearray(cramjam.zstd.compress(b"x" * 300))
    fhd = frame[4]
    assert fhd >> 6 and not fhd & 0x03, "expected a frame with a content size and no dict id"
    fcs_at = 5 + (0 if fhd & 0x20 else 1)
    width = (0, 2, 4, 8)[fhd >> 6]
    frame[4] = (fhd & 0x3F) | 0xC0  # 8-byte content size
    return bytes(frame[:fcs_at]) + (1 << 40).to_bytes(8, "little") + bytes(frame[fcs_at + width :])


def _snappy_declared() -> bytes:
    # A raw snappy block whose length preamble says 1 GiB.
    return bytes([0x80, 0x80, 0x80, 0x80, 0x04]) + b"\x00" * 32


BOMBS = {
    "zstd-frames": (compression.ZSTD, _zstd_frames),
    "gzip-members": (compression.GZIP, _gzip_members),
    "zstd-declared-1TiB": (compression.ZSTD, _zstd_declared),
    "snappy-declared-1GiB": (compression.SNAPPY, _snappy_declared),
}


@pytest.mark.parametrize("backend", [pytest.param(b, id=n) for n, b in BACKENDS.items()])
@pytest.mark.parametrize("bomb", list(BOMBS))
def test_decompression_bomb_is_capped(backend, bomb):
    """A small batch expanding past DEFAULT_MAX_DECOMPRESSED is a CorruptRecordError with its offsets."""
    codec, make = BOMBS[bomb]
    raw = _bomb_batch(codec, make())
    assert len(raw) < 2 * MiB
    # Each reader and the checker once (a bomb costs ~0.3 s to refuse), the CRC checked and not.
    with pytest.raises(CorruptRecordError) as info:
        backend.decode_record_set(raw, 0, True)
    assert (info.value.first_offset, info.value.last_offset) == (1000, 1004)
    with pytest.raises(CorruptRecordError):
        backend.decode_columnar(raw, 0, False)
    (batch,) = backend.read_batches(raw, False)
    with pytest.raises(CorruptRecordError):
        batch.records()
    with pytest.raises(CorruptRecordError) as info:
        batch.validate()
    assert (info.value.first_offset, info.value.last_offset) == (1000, 1004)


# ---------------------------------------------------------------------------
# regressions found by the campaign, pinned as plain tests
# ---------------------------------------------------------------------------


def huge_header_count_batch() -> bytes:
    """A v2 batch (offsets 500..500) whose only record says it has 2**31 - 1 headers.

    The record length counts the 5-byte header count and nothing after it, so the
    first header key length is already past the record.
    """
    builder = _codec_py.BatchBuilder(2, 0, base_offset=500)
    builder.append(1000, b"k", b"v")
    raw = builder.build()
    plain = raw[V2_HEADER:]
    assert plain[0] < 0x80 and plain[-1] == 0  # 1-byte record length; header count 0
    body = plain[1:-1] + zigzag(I32_MAX)
    return seal_v2(raw, zigzag(len(body)) + body)


def _huge_header_count_job(progress) -> dict:
    raw = huge_header_count_batch()
    out = {}
    for bname, backend in BACKENDS.items():
        for api in APIS:
            progress(f"{bname}.{api}")
            t0 = time.perf_counter()
            try:
                call(backend, api, raw, True, 0)
                kind = "returned records"
            except Exception as exc:  # noqa: BLE001 - the type is the result
                kind = type(exc).__name__
            out[f"{bname}.{api}"] = [kind, round(time.perf_counter() - t0, 3)]
    return out


CHILD_JOBS = {
    "campaign": lambda progress: run_campaign(progress).__dict__,
    "huge_header_count": _huge_header_count_job,
}


def test_huge_header_count_is_rejected_without_allocating(tmp_path):
    """A header count the record cannot hold is corrupt at once: no count-sized allocation.

    Each header takes at least 2 bytes (two varints), so a count above half the record's
    remaining bytes cannot be right. Run in a child with a capped address space: a reader
    that reserves ``count`` slots first (2**31 - 1 of them: 16 GiB) fails there with a
    MemoryError instead of swapping for half a minute.
    """
    result, failure = run_in_capped_child("huge_header_count", tmp_path, 120)
    assert not failure, failure
    bad = {name: r for name, r in result.items() if r[0] != "CorruptRecordError" or r[1] > 1.0}
    assert not bad, f"input {huge_header_count_batch().hex()}: expected CorruptRecordError within 1 s, got {bad}"


def _overflowing_batch(what: str) -> bytes:
    """A batch whose record offsets (or timestamps) run past the int64 range."""
    if what == "offset":
        builder = _codec_py.BatchBuilder(2, 0, base_offset=I64_MAX - 1)
        for i in range(3):  # offsets I64_MAX - 1, I64_MAX, I64_MAX + 1
            builder.append(1000 + i, b"k", b"v")
        return builder.build()
    builder = _codec_py.BatchBuilder(2, 0, base_offset=0)
    builder.append(0, b"k", b"v")
    builder.append(10, b"k", b"v")  # timestamp delta 10
    raw = bytearray(builder.build())
    struct.pack_into(">qq", raw, 27, I64_MAX - 5, I64_MAX)  # base and max timestamp
    return seal_v2(bytes(raw[:V2_HEADER]), bytes(raw[V2_HEADER:]))


@pytest.mark.parametrize("backend", [pytest.param(b, id=n) for n, b in BACKENDS.items()])
def test_int64_overflow_is_corrupt(backend):
    """Offsets and timestamps are int64 (Java longs): base + delta past the range is corrupt.

    Without a check the Python twin hands out ints above 2**63 (and decode_columnar fails
    with ``struct.error``), while the Cython codec wraps them to negative numbers (C
    signed overflow): then ``decode_record_set`` treats a wrapped last offset as "before
    the fetch offset", skips the batch and does not advance ``next_offset``.
    """
    got = {}
    for what in ("offset", "timestamp"):
        raw = _overflowing_batch(what)
        for api in APIS:
            try:
                result = call(backend, api, raw, True, 0)
                got[f"{what} {api}"] = f"returned {result!r:.160}"
            except CorruptRecordError:
                got[f"{what} {api}"] = "CorruptRecordError"
            except Exception as exc:  # noqa: BLE001 - the type is the result
                got[f"{what} {api}"] = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
    bad = {k: v for k, v in got.items() if v != "CorruptRecordError"}
    assert not bad, "expected CorruptRecordError, got:\n" + "\n".join(f"  {k}: {v}" for k, v in bad.items())


def _wrapper_at_int64_min() -> bytes:
    """A magic 1 snappy wrapper at offset -2**63 holding relative offsets 0 and 1."""
    encode = _codec_py._encode_legacy  # (magic, codec, ts_type, offset, timestamp, key, value)
    inner = encode(1, 0, 0, 0, 1000, b"k", b"v") + encode(1, 0, 0, 1, 1000, b"k", b"v")
    return encode(1, compression.SNAPPY, 0, I64_MIN, 1000, None, compression.compress(compression.SNAPPY, inner, magic=1))


@pytest.mark.parametrize("backend", [pytest.param(b, id=n) for n, b in BACKENDS.items()])
def test_legacy_wrapper_offset_below_int64_is_typed(backend):
    """absolute = wrapper offset - last relative + relative must not leave int64 untyped.

    Java keeps the relative offsets when ``wrapperOffset - lastRelative`` is negative
    (``AbstractLegacyRecordBatch``); rejecting the wrapper as corrupt is fine too. Found by
    the campaign as an ``OverflowError`` from the Cython codec (the twin returned offset
    -2**63 - 1).
    """
    raw = _wrapper_at_int64_min()
    got = {}
    for api in READERS:
        try:
            result = call(backend, api, raw, True, 0)
        except CorruptRecordError:
            got[api] = "CorruptRecordError"
            continue
        except Exception as exc:  # noqa: BLE001 - the type is the result
            got[api] = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
            continue
        if api == "read_batches":
            offsets = [r[0] for _, records in result for r in records]
        elif api == "decode_record_set":
            offsets = [r[0] for r in result[0]]
        else:
            offsets = list(struct.unpack(f"<{result['count']}q", bytes(result["offsets"])))
        got[api] = offsets
    bad = {k: v for k, v in got.items() if v not in ("CorruptRecordError", [0, 1])}
    assert not bad, f"input {raw.hex()}: expected CorruptRecordError or offsets [0, 1], got {bad}"
