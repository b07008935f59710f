"""The child of the crash tests (issue 14, "exactly-once under crashes"): one instance of the
consume-transform-produce recipe of docs/examples/exactly_once.py, the very function the
producer guide shows, as a real process that the parent SIGKILLs and starts again.

Usage: ``python -m tests.eos.worker BOOTSTRAP SOURCE SINK GROUP TRANSACTIONAL_ID``.
It prints ``started`` once its imports are done (so the parent's kill clock excludes
them), runs the recipe until the source is idle for ``IDLE_TIMEOUT`` seconds, prints
``done`` and exits 0.

Every instance uses the same ``transactional.id`` (its ``init_transactions()`` fences the
dead one and aborts its open transaction) and the same ``group.instance.id`` (a static
member, KIP-345: it takes the dead member's partitions back without waiting for its
session to expire). ``max.poll.records`` bounds a transaction to ``MAX_POLL_RECORDS``.
"""

import runpy
import sys
from pathlib import Path

__all__ = ["IDLE_TIMEOUT", "MAX_POLL_RECORDS", "recipe"]

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "exactly_once.py"
IDLE_TIMEOUT = 2.0
MAX_POLL_RECORDS = 100


def recipe():
    """``upper_case_exactly_once`` of docs/examples/exactly_once.py (its one owner)."""
    return runpy.run_path(str(EXAMPLE))["upper_case_exactly_once"]


def main(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> None:
    run = recipe()
    print("started", flush=True)
    run(bootstrap, source, sink, group, transactional_id, idle_timeout=IDLE_TIMEOUT,
        group_instance_id=f"{group}-worker", max_poll_records=MAX_POLL_RECORDS, fetch_max_wait_ms=100)
    print("done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
