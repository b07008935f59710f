"""Exactly-once soak: however often the consume-transform-produce worker is SIGKILLed, its
output read with read_committed holds every input exactly once.

The longer run of tests/eos/test_crash.py, with the same harness (tests/eos/crash.py: the
worker is the recipe of docs/examples/exactly_once.py in a process of its own, each kill
aimed at a transaction of its own open with records in the log) against a
``python -m minibroker`` process with a data dir. Not in the test suite.

Invariants checked, printed at the end:

- read_committed, by kproto's consumer and by confluent-kafka's: missing = 0,
  duplicated = 0, unexpected = 0;
- read_uncommitted (kproto's consumer): missing = 0, unexpected = 0; its duplicates are
  what the aborted transactions wrote (counted: > 0 shows the kills hit open transactions);
- the group's committed offsets are the end of the input.

Figures printed: inputs, kills (aimed, blind), worker starts, seconds. Exit status 1 when
an invariant broke. Loopback only; bounded by ``--kills`` and the inputs. Usage::

    python bench/soak_eos.py [--inputs 50000] [--kills 40] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.eos.crash import Run, check, kill_and_restart, make_topics, read_output, run_to_the_end  # noqa: E402
from tests.support.process import minibroker_process  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=50_000)
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="soak-eos-") as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        with minibroker_process("--port", "0", "--data-dir", str(Path(tmp) / "data"),
                                log=Path(tmp) / "broker.log") as (_, bootstrap):
            run = Run(bootstrap, f"soak-{uuid.uuid4().hex[:6]}", args.inputs, logs=logs)
            make_topics(run)
            kill_and_restart(run, args.kills, rng)
            run_to_the_end(run)  # raises unless the group's offsets reach the input's end
            outcomes = {f"{client} {isolation}": check(run, read_output(run, client, isolation))
                        for client, isolation in (("kproto", "read_committed"), ("confluent", "read_committed"),
                                                  ("kproto", "read_uncommitted"))}
    print(f"seed {args.seed}: {run.inputs} inputs, {run.kills_aimed + run.kills_blind} kills "
          f"({run.kills_aimed} aimed at an open transaction, {run.kills_blind} blind), {run.restarts} worker starts, "
          f"{time.monotonic() - started:.1f} s")
    broken = False
    for reader, outcome in outcomes.items():
        extra = sum(outcome.duplicated.values()) - len(outcome.duplicated)
        print(f"{reader:28} missing {len(outcome.missing):6}  duplicated {extra:6}  unexpected {len(outcome.unexpected):6}")
        allowed_duplicates = reader.endswith("read_uncommitted")
        broken |= bool(outcome.missing or outcome.unexpected or (outcome.duplicated and not allowed_duplicates))
    print("invariants:", "BROKEN" if broken else "held")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
