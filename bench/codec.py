"""Side-by-side codec benchmark: kproto against aiokafka and kafka-python, in one run.

Prints one table of records per second (median of ``--runs`` runs) and the ratio
kproto / aiokafka next to the goal it should meet:

- encode 1000 records (10 B key, 100 B value), uncompressed, lz4 and zstd: kproto's
  ``BatchBuilder`` vs aiokafka's Cython ``DefaultRecordBatchBuilder`` vs kafka-python's
  ``DefaultRecordBatchBuilder`` (append loop + build). Goal >= 3x aiokafka uncompressed
  (issue 16), >= 2x compressed (where the compressor, the same cramjam call in kproto and
  aiokafka, takes most of the time).
- encode from columns: kproto's fastest way to the same batch, one
  ``BatchBuilder.append_columns`` call for the keys, values and timestamps (what
  ``Producer.send_batch`` does), against the same peers' append loops (they have no such
  call). No goal: a second view, not a replacement of the row above.
- decode the same batches with the CRC checked, into records whose key and value are
  bytes: kproto ``decode_record_set`` vs ``MemoryRecords(buf).next_batch()``,
  ``validate_crc()``, ``list(batch)`` in each peer (the peers decode a record as the
  iteration reaches it, so materialising the list is their decode). A second line,
  "+ touch", also iterates the records and reads ``.key`` and ``.value``. Goal >= 2.5x;
  issue 16's goal is the zstd "+ touch" line (values touched).
- the zstd batch again as Java's producer writes it (zstd-jni's streaming
  ZstdOutputStream: one frame that declares no content size, so kproto's bounded
  decompression sizes its output from the frame's block headers): decode and "+ touch"
  rows, no goal.
- 1000 log lines, which zstd compresses far past 4:1, in the same Java framing: decode and
  "+ touch" rows, no goal (kproto sizes its buffer from the frame's block headers).
- what bounds the zstd rows: the zstd decompression alone, timed in the same run as the
  decodes (kproto's ``compression.decompress_view``: one reused ``zstandard`` context when
  that package is installed, the ``zstd`` extra, else cramjam's ``zstd.decompress_into``;
  aiokafka's ``codec.zstd_decode``, cramjam's ``zstd.decompress`` and a copy to bytes),
  its share of each library's "+ touch" decode, and the ratio kproto would reach if all
  its other work were free (aiokafka's time / kproto's decompression time).
- the same for one 1 MiB batch of 1 KiB values (uncompressed).
- columnar: kproto ``decode_columnar`` vs aiokafka's decode above. Goal >= 5x.
- validate: kproto ``read_batches`` + ``Batch.validate()`` (CRC and every record checked,
  none built: what minibroker's Produce does) vs aiokafka's decode above, the least a
  broker built on it could do to check every record. No goal.
- CRC-32C: ``kproto.codec.crc32c`` vs the ``crc32c`` package, 1 MiB and 100 B. Goal >= 0.9x.

The last lines repeat issue 16's goals, each "met" or "MISSED".

The header says which zstd decompressor kproto used (``compression.zstd_decompressor()``:
"zstandard" or "cramjam"); ``KPROTO_ZSTD=cramjam`` in the environment measures cramjam's.

Method: for each case every library's operation is first checked to give the same
records (encoders: the same batch bytes from kproto's two ways), then timed in interleaved runs (kproto, aiokafka, kafka-python, kproto, ...) so
that they share the machine's noise; before each timed run ``gc.collect()``. A run repeats
the operation enough times to last about ``--run-ms`` (calibrated once), and its time per
operation is the run's time divided by the repeats. The reported rate is the median over
runs. Load average and CPU count are printed, as other work on the machine shows up here.

Runs are timed by the thread's CPU time (``time.thread_time``) unless ``--clock wall``:
on a machine shared with other work, wall-clock runs measure the others' load as much as
the code (a run that loses the CPU for 10 ms looks 10 ms slower), and the interleaving
does not cancel that out when the load comes and goes within a round.

The cyclic GC stays on during timed runs (``--no-gc`` turns it off, as ``timeit`` does).
This matters: aiokafka's and kafka-python's record objects are tracked by the collector
and kproto's are not, so the peers pay collections that grow with the run; measured here,
aiokafka's decode of 1000 small records runs ~2.3 M records/s in short runs or without GC
and ~1.3 M/s in 100 ms runs with it. The default (100 ms runs, GC on) is closer to a
consumer's steady state; both views are one flag away.

Run from the repository root after ``python setup.py build_ext --inplace``::

    python bench/codec.py            # 7 runs
    python bench/codec.py --quick    # fewer, shorter runs: a smoke test
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import statistics
import struct
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kproto  # noqa: E402
from kproto import codec, compression  # noqa: E402

GOALS = {"encode": 3.0, "encode compressed": 2.0, "decode": 2.5, "columnar": 5.0, "crc": 0.9}
# Issue 16's goals: (row label, goal), repeated at the end with met / MISSED.
ISSUE16 = (("encode none", 3.0), ("decode zstd + touch key/value", 2.5))
CODECS = {"none": 0, "lz4": 3, "zstd": 4}
V2_HEADER = 61  # bytes of a v2 batch before its records


# ---------------------------------------------------------------------------
# workloads
# ---------------------------------------------------------------------------


def make_records(n: int, key_size: int, value_size: int, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """Keys and values shaped like real payloads: JSON-ish text, partly random, so
    lz4 and zstd compress it (about 2-3x) without it being a string of zeros."""
    rng = random.Random(seed)
    words = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf", b"hotel"]
    out = []
    for i in range(n):
        key = (b"k%09d" % i)[:key_size].ljust(key_size, b"_")
        parts = [b'{"id":%d,"user":"u%05d","event":"' % (i, rng.randrange(100000))]
        while sum(map(len, parts)) < value_size:
            parts.append(rng.choice(words) + b"-%d," % rng.randrange(1000))
        value = b"".join(parts)[: value_size - 2] + b'"}'
        out.append((key, value))
    return out


def make_log_records(n: int) -> list[tuple[bytes, bytes]]:
    """Log lines: repetitive enough that zstd compresses them far past 4:1."""
    return [
        ((b"k%09d" % i), b'{"ts":"2026-11-25T15:%02d:%02d","level":"INFO","service":"orders","msg":"order %d ok"}'
         % (i // 60 % 60, i % 60, i))
        for i in range(n)
    ]


TS0 = 1_700_000_000_000


def encode_kproto(records, codec_id):
    def run():
        builder = codec.BatchBuilder(2, codec_id)
        append = builder.append
        ts = TS0
        for key, value in records:
            append(ts, key, value)
            ts += 1
        return builder.build()
    return run


def encode_kproto_columns(records, codec_id):
    import array

    keys = [k for k, _ in records]
    values = [v for _, v in records]
    timestamps = array.array("q", range(TS0, TS0 + len(records)))

    def run():
        builder = codec.BatchBuilder(2, codec_id)
        builder.append_columns(values, keys, None, timestamps)
        return builder.build()
    return run


def encode_peer(builder_cls, records, codec_id):
    def run():
        builder = builder_cls(2, codec_id, 0, -1, -1, -1, 1 << 30)
        append = builder.append
        ts = TS0
        for offset, (key, value) in enumerate(records):
            append(offset, ts, key, value, [])
            ts += 1
        return builder.build()
    return run


def decode_kproto(buf):
    decode = codec.decode_record_set

    def run():
        return decode(buf)[0]
    return run


def decode_kproto_touch(buf):
    decode = codec.decode_record_set

    def run():
        records = decode(buf)[0]
        for r in records:
            _ = r.key
            _ = r.value
        return records
    return run


def decode_columnar(buf):
    decode = codec.decode_columnar

    def run():
        return decode(buf)
    return run


def validate_kproto(buf):
    read_batches = codec.read_batches

    def run():
        for batch in read_batches(buf):
            batch.validate()
    return run


def decode_peer(memory_records_cls, buf):
    def run():
        batch = memory_records_cls(buf).next_batch()
        if not batch.validate_crc():
            raise RuntimeError("CRC mismatch")
        return list(batch)
    return run


def decode_peer_touch(memory_records_cls, buf):
    def run():
        batch = memory_records_cls(buf).next_batch()
        if not batch.validate_crc():
            raise RuntimeError("CRC mismatch")
        records = list(batch)
        for r in records:
            _ = r.key
            _ = r.value
        return records
    return run


def restream_zstd(batch: bytes) -> bytes:
    """The same zstd batch as Java's producer writes it: its records in one streamed frame
    that declares no content size (zstd-jni's ZstdOutputStream), length and CRC resealed."""
    import cramjam

    compressor = cramjam.zstd.Compressor(level=3)
    compressor.compress(bytes(cramjam.zstd.decompress(batch[V2_HEADER:])))
    buf = bytearray(batch[:V2_HEADER]) + bytes(compressor.finish())
    struct.pack_into(">i", buf, 8, len(buf) - 12)  # batchLength: what follows it
    struct.pack_into(">I", buf, 17, codec.crc32c(bytes(buf[21:])))  # CRC from attributes on
    return bytes(buf)


def zstd_decompress_kproto(batch: bytes):
    decompress_view = compression.decompress_view
    payload = memoryview(batch)[V2_HEADER:]  # as the record codec passes it

    def run():
        return decompress_view(compression.ZSTD, payload)
    return run


def zstd_decompress_peer(zstd_decode, batch: bytes):
    payload = batch[V2_HEADER:]

    def run():
        return zstd_decode(payload)
    return run


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------


class Bench:
    """Times named operations in interleaved runs and keeps the median per operation.

    ``clock``: ``time.thread_time`` (the CPU time of this thread: what other processes on
    a shared machine do does not count, so ratios hold under load) or ``time.perf_counter``
    (wall clock). Every operation here runs on the calling thread alone.
    """

    def __init__(self, runs: int, run_seconds: float, gc_off: bool = False, clock: Callable[[], float] = time.thread_time):
        self.runs = runs
        self.run_seconds = run_seconds
        self.gc_off = gc_off
        self.clock = clock

    def _repeats(self, fn: Callable[[], object]) -> int:
        fn()  # warm up
        n = 1
        while True:
            gc.collect()
            t0 = self.clock()
            for _ in range(n):
                fn()
            elapsed = self.clock() - t0
            if elapsed >= self.run_seconds / 4 or n >= 1 << 20:
                return max(1, int(n * self.run_seconds / max(elapsed, 1e-9)))
            n *= 4

    def measure(self, contenders: dict[str, Callable[[], object]]) -> dict[str, float]:
        """Median seconds per call of each contender, timed round-robin."""
        repeats = {name: self._repeats(fn) for name, fn in contenders.items()}
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(self.runs):
            for name, fn in contenders.items():
                n = repeats[name]
                gc.collect()
                if self.gc_off:
                    gc.disable()
                t0 = self.clock()
                for _ in range(n):
                    fn()
                samples[name].append((self.clock() - t0) / n)
                gc.enable()
        return {name: statistics.median(s) for name, s in samples.items()}


# ---------------------------------------------------------------------------
# checks: every contender must do the same work
# ---------------------------------------------------------------------------


def keys_values(records) -> list[tuple]:
    return [(bytes(r.key), bytes(r.value)) for r in records]


def check_same(expected: list[tuple[bytes, bytes]], **decoded) -> None:
    for name, records in decoded.items():
        got = keys_values(records)
        if got != expected:
            sys.exit(f"bench/codec.py: {name} decodes to different records ({len(got)} vs {len(expected)})")


def columns_keys_values(cols) -> list[tuple[bytes, bytes]]:
    ko = memoryview(cols.key_offsets).cast("i")
    vo = memoryview(cols.value_offsets).cast("i")
    kd, vd = bytes(cols.key_data), bytes(cols.value_data)
    return [(kd[ko[i] : ko[i + 1]], vd[vo[i] : vo[i + 1]]) for i in range(cols.count)]


# ---------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------

W = 44  # width of the case column
HEADER = f"{'case':<{W}} {'kproto':>13} {'aiokafka':>13} {'kafka-python':>13} {'kproto/aiokafka':>16}  goal"


def fmt_rate(x: float | None) -> str:
    if x is None:
        return f"{'-':>13}"
    if x >= 1e6:
        return f"{x / 1e6:>11.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:>11.1f} k"
    return f"{x:>13.1f}"


def row(name: str, ours: float, aio: float | None, kp: float | None, goal: float | None, base: float | None = None) -> str:
    """One table line; rates are per second. ``base`` overrides the ratio's denominator."""
    denom = base if base is not None else aio
    ratio = ours / denom if denom else None
    ratio_s = f"{ratio:>15.2f}x" if ratio is not None else f"{'-':>16}"
    if goal is None:
        verdict = ""
    else:
        verdict = f">= {goal:g}x " + ("met" if ratio is not None and ratio >= goal else "MISSED")
    RATIOS[name.strip()] = ratio
    return f"{name:<{W}} {fmt_rate(ours)} {fmt_rate(aio)} {fmt_rate(kp)} {ratio_s}  {verdict}"


RATIOS: dict[str, float | None] = {}  # row label -> kproto / aiokafka, for the goal lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per operation (median reported; default 7)")
    parser.add_argument("--quick", action="store_true", help="5 short runs: a smoke test, noisier")
    parser.add_argument("--run-ms", type=float, default=None, help="target length of one timed run (default 100 ms, 20 ms with --quick)")
    parser.add_argument("--allow-python", action="store_true", help="run even on the pure-Python codec")
    parser.add_argument("--no-gc", action="store_true", help="disable the cyclic GC during timed runs (as timeit does)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="time by this thread's CPU time (default: other load on the machine does not count) "
                             "or by the wall clock")
    args = parser.parse_args(argv)

    backend = kproto.codec_backend()
    print(f"kproto codec backend: {backend}; zstd decompressor: {compression.zstd_decompressor()}")
    if backend != "cython" and not args.allow_python:
        print("bench/codec.py: the Cython codec is not in use (build it: python setup.py build_ext --inplace); "
              "pass --allow-python to benchmark the pure-Python twin anyway", file=sys.stderr)
        return 1

    import aiokafka
    import aiokafka.codec as aio_codec
    import crc32c as crc32c_pkg
    import kafka
    import kafka.record.default_records as kp_default
    import kafka.record.memory_records as kp_memory
    from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

    if "_crecords" not in AioBuilder.__module__ or "_crecords" not in AioMemoryRecords.__module__:
        print(f"warning: aiokafka is not using its Cython records ({AioBuilder.__module__})", file=sys.stderr)

    runs = max(5, args.runs if not args.quick else min(args.runs, 5))
    run_s = (args.run_ms or (20 if args.quick else 100)) / 1000
    bench = Bench(runs, run_s, gc_off=args.no_gc, clock=time.thread_time if args.clock == "cpu" else time.perf_counter)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(
        f"python {platform.python_version()}, kproto {kproto.__version__}, aiokafka {aiokafka.__version__}, "
        f"kafka-python {kafka.__version__}; {runs} runs of ~{run_s * 1000:.0f} ms each, median; "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print("rates are records per second unless marked; ratio = kproto / aiokafka; "
          + ("timed by this thread's CPU time (--clock cpu)" if args.clock == "cpu" else "timed by the wall clock"))
    if args.no_gc:
        print("the cyclic GC is OFF during timed runs (--no-gc)")
    else:
        print("the cyclic GC is on during timed runs, as in an application: the peers' records are")
        print("GC-tracked and kproto's are not, so the peers' decode rates fall as runs get longer")
        print("(compare --no-gc, or --run-ms 20)")
    print()
    print(HEADER)
    print("-" * len(HEADER))

    small = make_records(1000, 10, 100)
    print("1000 records, 10 B key + 100 B value (JSON-like, compressible)")
    batches = {}
    for cname, cid in CODECS.items():
        if encode_kproto_columns(small, cid)() != encode_kproto(small, cid)():
            sys.exit("bench/codec.py: append_columns builds another batch than the append loop")
        t = bench.measure({
            "kproto": encode_kproto(small, cid),
            "aiokafka": encode_peer(AioBuilder, small, cid),
            "kafka-python": encode_peer(kp_default.DefaultRecordBatchBuilder, small, cid),
            "columns": encode_kproto_columns(small, cid),
        })
        n = len(small)
        goal = GOALS["encode"] if cid == 0 else GOALS["encode compressed"]
        print(row(f"  encode {cname}", n / t["kproto"], n / t["aiokafka"], n / t["kafka-python"], goal))
        print(row(f"  encode {cname}, columns (one call)", n / t["columns"], n / t["aiokafka"], n / t["kafka-python"],
                  None))
        batches[cname] = bytes(encode_kproto(small, cid)())
    sizes = ", ".join(f"{c} {len(b)} B (codec bits {b[22] & 7})" for c, b in batches.items())
    print(f"  (batches: {sizes})")

    def decode_rows(label: str, buf: bytes, expected: list[tuple[bytes, bytes]], *, goal: float | None = GOALS["decode"],
                    columnar: bool = True, zstd_bound: bool = False) -> None:
        check_same(
            expected,
            kproto=decode_kproto(buf)(),
            aiokafka=decode_peer(AioMemoryRecords, buf)(),
            kafka_python=decode_peer(kp_memory.MemoryRecords, buf)(),
        )
        if columnar and columns_keys_values(decode_columnar(buf)()) != expected:
            sys.exit("bench/codec.py: decode_columnar gives different keys/values")
        n = len(expected)
        contenders = {
            "kproto": decode_kproto(buf),
            "aiokafka": decode_peer(AioMemoryRecords, buf),
            "kafka-python": decode_peer(kp_memory.MemoryRecords, buf),
            "kproto+touch": decode_kproto_touch(buf),
            "aiokafka+touch": decode_peer_touch(AioMemoryRecords, buf),
            "kafka-python+touch": decode_peer_touch(kp_memory.MemoryRecords, buf),
        }
        if columnar:
            contenders["columnar"] = decode_columnar(buf)
            contenders["validate"] = validate_kproto(buf)
        if zstd_bound:
            contenders["kproto zstd"] = zstd_decompress_kproto(buf)
            contenders["aiokafka zstd"] = zstd_decompress_peer(aio_codec.zstd_decode, buf)
        t = bench.measure(contenders)
        aio = n / t["aiokafka"]
        print(row(f"  decode {label}", n / t["kproto"], aio, n / t["kafka-python"], goal))
        print(row(f"  decode {label} + touch key/value", n / t["kproto+touch"], n / t["aiokafka+touch"], n / t["kafka-python+touch"], goal))
        if columnar:
            print(row(f"  columnar {label} vs aio decode", n / t["columnar"], aio, None, GOALS["columnar"]))
            print(row(f"  validate {label} vs aio decode", n / t["validate"], aio, None, None))
        if zstd_bound:
            ours, theirs = t["kproto zstd"], t["aiokafka zstd"]
            print(f"  what bounds it: the zstd decompression alone (kproto {compression.zstd_decompressor()}, "
                  f"aiokafka cramjam) takes kproto {ours * 1e6:.0f} us,"
                  f" aiokafka {theirs * 1e6:.0f} us per batch:")
            print(f"    {ours / t['kproto+touch']:.0%} of kproto's decode + touch, {theirs / t['aiokafka+touch']:.0%} of"
                  f" aiokafka's; were the rest free, kproto's + touch ratio would be {t['aiokafka+touch'] / ours:.2f}x")

    for cname, buf in batches.items():
        decode_rows(cname, buf, small, zstd_bound=cname == "zstd")
    java_zstd = restream_zstd(batches["zstd"])
    if compression._zstd_content_size(memoryview(java_zstd)[V2_HEADER:]) is not None:
        sys.exit("bench/codec.py: the streamed zstd frame declares a content size")
    print(f"the zstd batch as Java's producer writes it: one streamed frame, no content size ({len(java_zstd)} B)")
    decode_rows("zstd (Java)", java_zstd, small, goal=None, columnar=False, zstd_bound=True)
    logs = make_log_records(1000)
    log_batch = encode_kproto(logs, CODECS["zstd"])()
    java_logs = restream_zstd(log_batch)
    plain_size = len(encode_kproto(logs, CODECS["none"])()) - V2_HEADER
    print(f"1000 log lines (10 B key + ~80 B value), in the same streamed zstd frame: {plain_size} B of records "
          f"compressed to {len(java_logs) - V2_HEADER} B")
    decode_rows("zstd logs (Java)", java_logs, logs, goal=None, columnar=False)

    big = make_records(1024, 10, 1024, seed=2)  # 1024 x 1 KiB values: ~1 MiB
    builder = codec.BatchBuilder(2, 0)
    for i, (key, value) in enumerate(big):
        builder.append(TS0 + i, key, value)
    big_batch = builder.build()
    print(f"one 1 MiB batch: {len(big)} records, 10 B key + 1 KiB value, uncompressed ({len(big_batch)} B)")
    decode_rows("none", big_batch, big)

    print()
    crc_header = f"{'CRC-32C':<{W}} {'kproto':>13} {'crc32c pkg':>13} {'':>13} {'kproto/crc32c':>16}  goal"
    print(crc_header)
    print("-" * len(crc_header))
    for label, size in (("1 MiB buffer (GB/s)", 1 << 20), ("100 B buffer (M calls/s)", 100)):
        data = random.Random(3).randbytes(size)
        if codec.crc32c(data) != crc32c_pkg.crc32c(data):
            sys.exit("bench/codec.py: kproto.codec.crc32c disagrees with the crc32c package")
        ours_fn, theirs_fn = codec.crc32c, crc32c_pkg.crc32c
        t = bench.measure({"kproto": lambda d=data, f=ours_fn: f(d), "crc32c": lambda d=data, f=theirs_fn: f(d)})
        scale = size / 1e9 if size > 100 else 1 / 1e6
        ours, theirs = scale / t["kproto"], scale / t["crc32c"]
        ratio = ours / theirs
        verdict = f">= {GOALS['crc']:g}x " + ("met" if ratio >= GOALS["crc"] else "MISSED")
        print(f"  {label:<{W - 2}} {ours:>13.2f} {theirs:>13.2f} {'':>13} {ratio:>15.2f}x  {verdict}")
    print()
    for label, goal in ISSUE16:
        ratio = RATIOS.get(label)
        verdict = "met" if ratio is not None and ratio >= goal else "MISSED"
        shown = f"{ratio:.2f}x" if ratio is not None else "-"
        print(f"goal (issue 16): {label} >= {goal:g}x aiokafka: {shown} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
