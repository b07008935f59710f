"""On-disk fuzz, full run: whatever file of a partition or of ``__consumer_offsets`` is cut
or corrupted at whatever position, the broker's state restarts, serves only valid
batches, and keeps every record and committed offset that lay intact before the damage.

The invariant and the damage are those of ``tests/minibroker/log/test_disk_fuzz.py`` (its
docstring states them; this script uses its ``build_golden``, ``damage_cases`` and
``check_case``), which runs a bounded sample; here every position of every file is cut
and flipped, or every ``--step``-th.

With ``--state-files``, the broker's own files (topics, producer ids, dynamic broker
configs) are damaged the same way instead, each case checked by the test module's
``check_state_file_case``: the broker refuses to start naming the file, or loses nothing.

Printed: cases run per file kind, then each failure class (file, damage, what broke)
with its count and the first positions, then the total. Exit status 1 when any case broke.

Usage::

    python bench/fuzz_disk.py [--step 1] [--batches 24] [--kinds old-segment,active-segment,...]
    python bench/fuzz_disk.py --state-files [--step 1]
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

from tests.minibroker.log.test_disk_fuzz import (  # noqa: E402
    build_golden,
    build_golden_state,
    check_case,
    check_state_file_case,
    damage_cases,
    kind_of,
    state_file_cases,
)

KINDS = ("active-segment", "old-segment", "index", "small-file", "offsets-log")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", type=int, default=1, help="damage every STEP-th position (default 1: all)")
    parser.add_argument("--batches", type=int, default=24, help="batches written to the fuzzed partition")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"file kinds to damage, of {', '.join(KINDS)}")
    parser.add_argument("--state-files", action="store_true",
                        help="damage the topics, producer ids and broker configs files instead")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    logging.disable(logging.CRITICAL)  # recovery warns about every damaged file, by design

    tmp = Path(tempfile.mkdtemp(prefix="fuzz-disk-"))
    try:
        if args.state_files:
            golden_state = build_golden_state(tmp / "data")
            cases = [(name, pos, how, name) for name, pos, how in state_file_cases(golden_state, args.step)]
        else:
            golden = build_golden(tmp / "data", batches=args.batches)
            cases = [(relative, pos, how, kind_of(golden, relative))
                     for relative, pos, how in damage_cases(golden, args.step)]
        ran: collections.Counter[str] = collections.Counter()
        failures: dict[tuple[str, str, str], list[int]] = collections.defaultdict(list)
        began = time.monotonic()
        for relative, pos, how, kind in cases:
            if not args.state_files and kind not in kinds:
                continue
            ran[kind] += 1
            try:
                if args.state_files:
                    check_state_file_case(golden_state, tmp / "case", relative, pos, how)
                else:
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
