"""On-disk fuzz, full run: whatever file of a partition or of ``__consumer_offsets`` is cut
or corrupted at whatever position, the broker's state restarts, serves only valid
batches, and keeps every record and committed offset that lay intact before the damage.

The invariant and the damage are those of ``tests/minibroker/test_disk_fuzz.py`` (its
docstring states them; this script uses its ``build_golden``, ``damage_cases`` and
``check_case``), which runs a bounded sample; here every position of every file is cut
and flipped, or every ``--step``-th.

Printed: cases run per file kind, then each failure class (file, damage, what broke)
with its count and the first positions, then the total. Exit status 1 when any case broke.

Usage::

    python bench/fuzz_disk.py [--step 1] [--batches 24] [--kinds old-segment,active-segment,...]
"""

from __future__ import annotations

import argparse
import collections
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.minibroker.test_disk_fuzz import build_golden, check_case, damage_cases, kind_of  # noqa: E402

KINDS = ("active-segment", "old-segment", "index", "small-file", "offsets-log")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", type=int, default=1, help="damage every STEP-th position (default 1: all)")
    parser.add_argument("--batches", type=int, default=24, help="batches written to the fuzzed partition")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"file kinds to damage, of {', '.join(KINDS)}")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    logging.disable(logging.CRITICAL)  # recovery warns about every damaged file, by design

    tmp = Path(tempfile.mkdtemp(prefix="fuzz-disk-"))
    try:
        golden = build_golden(tmp / "data", batches=args.batches)
        ran: collections.Counter[str] = collections.Counter()
        failures: dict[tuple[str, str, str], list[int]] = collections.defaultdict(list)
        began = time.monotonic()
        for relative, pos, how in damage_cases(golden, args.step):
            kind = kind_of(golden, relative)
            if kind not in kinds:
                continue
            ran[kind] += 1
            try:
                check_case(golden, tmp / "case", relative, pos, how)
            except AssertionError as exc:
                what = str(exc).split(":")[0]
                failures[(relative, how, what)].append(pos)
        elapsed = time.monotonic() - began
    finally:
        shutil.rmtree(tmp)

    total = sum(ran.values())
    print(f"cases: {total} in {elapsed:.0f} s ({', '.join(f'{k} {n}' for k, n in ran.items())})")
    broken = 0
    for (relative, how, what), positions in sorted(failures.items()):
        broken += len(positions)
        print(f"  {len(positions):5d}  {how:4s} {relative}: {what}; at {positions[:8]}{' ...' if len(positions) > 8 else ''}")
    print(f"broken: {broken} of {total}" if broken else "invariants held")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
