"""The codec demo: what ``python -m kproto.demo`` runs until the pipeline demo exists.

It makes a stream of page-view events (user ids as keys, JSON values, a header), writes
it in Kafka's record-batch format with every codec, reads it back three ways (batches,
records, Arrow-layout columns), checks that nothing changed, and prints sizes and decode
rates. No broker and no network: the broker, clients and Spark pipeline come later.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

from kproto import codec_backend
from kproto.compression import codec_name
from kproto.records import BatchBuilder, decode_columnar, decode_record_set, read_batches

__all__ = ["main"]

PAGES = ["/", "/pricing", "/docs", "/blog", "/signup", "/login", "/docs/consumer", "/docs/producer"]


def page_views(n: int, seed: int = 7) -> list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]]:
    """``n`` page-view events as (timestamp ms, key, value, headers), reproducibly random."""
    rng = random.Random(seed)
    start = 1_700_000_000_000
    events = []
    for i in range(n):
        user = f"user-{rng.randrange(500):04d}"
        value = {"user": user, "page": rng.choice(PAGES), "action": rng.choice(["view", "view", "click"]),
                 "duration_ms": rng.randrange(20, 20_000)}
        events.append((start + i * 37, user.encode(), json.dumps(value).encode(), [("source", b"demo")]))
    return events


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds / 1e6:6.2f} M rec/s"


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the exit status (non-zero if any check failed)."""
    parser = argparse.ArgumentParser(prog="python -m kproto.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000, help="events to generate (default 200000)")
    parser.add_argument("--batch-size", type=int, default=1_000, help="records per batch (default 1000)")
    args = parser.parse_args(argv)

    events = page_views(args.records)
    raw_bytes = sum(len(k) + len(v) for _, k, v, _ in events)
    print(f"kproto codec backend: {codec_backend()}; {len(events):,} page views, {raw_bytes / 1e6:.1f} MB of keys and values\n")
    print(f"{'codec':8} {'batches':>8} {'bytes':>12} {'ratio':>6}  {'encode':>15}  {'decode records':>15}  {'decode columns':>15}")
    ok = True
    for codec in range(5):
        t0 = time.perf_counter()
        batches = []
        for start in range(0, len(events), args.batch_size):
            builder = BatchBuilder(2, codec, base_offset=start)
            for ts, key, value, headers in events[start:start + args.batch_size]:
                builder.append(ts, key, value, headers)
            batches.append(builder.build())
        encode_s = time.perf_counter() - t0
        stream = b"".join(batches)

        t0 = time.perf_counter()
        records, next_offset, _ = decode_record_set(stream)
        records_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        columns = decode_columnar(stream)
        columns_s = time.perf_counter() - t0

        same = (
            next_offset == len(events)
            and [(r.timestamp, r.key, r.value, list(r.headers)) for r in records] == events
            and columns.count == len(events)
            and bytes(columns.value_data) == b"".join(v for _, _, v, _ in events)
            and sum(b.records_count for b in read_batches(stream)) == len(events)
        )
        ok &= same
        print(f"{codec_name(codec):8} {len(batches):8,} {len(stream):12,} {raw_bytes / len(stream):6.2f}  "
              f"{_rate(len(events), encode_s):>15}  {_rate(len(events), records_s):>15}  {_rate(len(events), columns_s):>15}"
              f"{'' if same else '  MISMATCH'}")
    print("\nall round trips identical" if ok else "\nround-trip MISMATCH: this is a bug, please report it")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
