"""The sync ``Consumer.poll()`` next to ``AIOConsumer.poll()`` and confluent-kafka at its
best, on one topic filled once, interleaved runs (issue 16: the sync face's cost).

Usage: ``PYTHONPATH=. python bench/sync_poll.py [--messages N] [--runs R] [--brokers minibroker,tansu]``
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # noqa: E402
from broker import FILL_BATCH, create_topic, minibroker_process, raw_produce, tansu_process  # noqa: E402

ROWS = {
    "kproto sync poll": (peers.kproto_consume, peers.KPROTO["best"]),
    "kproto asyncio poll": (peers.kproto_async_consume, peers.KPROTO["best"]),
    "confluent-kafka (best)": (peers.confluent_consume, peers.CONFLUENT["best"]),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--brokers", default="minibroker,tansu")
    parser.add_argument("--rows", default=",".join(ROWS))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    n = args.messages // FILL_BATCH * FILL_BATCH
    rows = {name: ROWS[name] for name in args.rows.split(",")}
    launchers = {"minibroker": minibroker_process, "tansu": tansu_process}
    for broker in args.brokers.split(","):
        with launchers[broker]() as bootstrap:
            create_topic(bootstrap, "sync-poll")
            raw_produce(bootstrap, "sync-poll", n // FILL_BATCH, per_batch=FILL_BATCH)
            rates: dict[str, list[float]] = {name: [] for name in rows}
            for run in range(args.runs + 1):
                for name, (fn, settings) in (rows.items() if run % 2 else list(rows.items())[::-1]):
                    rate = n / fn(bootstrap, "sync-poll", n, settings)
                    if run:  # the first round warms up
                        rates[name].append(rate)
            medians = {name: statistics.median(r) for name, r in rates.items()}
            peer = medians.get("confluent-kafka (best)")
            print(f"{broker}: {n:,} x 100 B, median of {args.runs}")
            for name, rate in medians.items():
                ratio = f"  {rate / peer:5.2f}x confluent best" if peer else ""
                print(f"  {name:24} {rate:11,.0f} rec/s{ratio}   runs: " +
                      " ".join(f"{r / 1e6:.2f}M" for r in rates[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
