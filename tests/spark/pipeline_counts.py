"""What the pipeline (kproto.pipeline) must write, counted in plain Python from its generated
events, and what it did write, read back from its Parquet and its results topic: the one
place for both, used by the local run's test (test_pipeline.py) and the cluster run's
(test_pipeline_cluster.py)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime

import pyarrow.parquet as pq

from kproto import Consumer, TopicPartition
from kproto.pipeline import RESULTS_TOPIC, TOP_USERS, WINDOW_MS, Event, UserTotal

__all__ = ["minute", "parquet_rows", "per_page", "per_user", "results", "results_per_page", "top_users",
           "want_rows"]

PageCounts = dict[tuple[int, str], tuple[int, int, int, int]]


def minute(ms: int) -> int:
    return ms - ms % WINDOW_MS


def per_user(events: Iterable[Event]) -> Counter:
    """(minute, page, user, kind) -> events."""
    return Counter((minute(e.event_ms), e.page, e.user, e.kind) for e in events)


def per_page(users: Counter) -> PageCounts:
    """(minute, page) -> (events, views, clicks, distinct users), from :func:`per_user`."""
    totals: dict[tuple[int, str], list] = defaultdict(lambda: [0, 0, 0, set()])
    for (start, page, user, kind), n in users.items():
        row = totals[(start, page)]
        row[0] += n
        row[1 if kind == "view" else 2] += n
        row[3].add(user)
    return {k: (events, views, clicks, len(users)) for k, (events, views, clicks, users) in totals.items()}


def want_rows(users: Counter) -> dict[tuple[int, str, str], tuple[int, int]]:
    """(minute, page, user) -> (events, clicks): the Parquet's rows, from :func:`per_user`."""
    want: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for (start, page, user, kind), n in users.items():
        want[(start, page, user)][0] += n
        if kind == "click":
            want[(start, page, user)][1] += n
    return {k: (events, clicks) for k, (events, clicks) in want.items()}


def top_users(events: Iterable[Event]) -> list[UserTotal]:
    totals: dict[str, list] = defaultdict(lambda: [0, 0, set()])
    for e in events:
        totals[e.user][0] += 1
        totals[e.user][1] += e.kind == "click"
        totals[e.user][2].add(minute(e.event_ms))
    return sorted((UserTotal(user, n, clicks, len(minutes)) for user, (n, clicks, minutes) in totals.items()),
                  key=lambda u: (-u.events, u.user))[:TOP_USERS]


def parquet_rows(path: str) -> dict[tuple[int, str, str], tuple[int, int]]:
    """The Parquet's rows as :func:`want_rows` has them; each (minute, page, user) must be there once."""
    got = {}
    for row in pq.read_table(path).to_pylist():
        key = (int(row["window_start"].timestamp() * 1000), row["page"], row["user"])
        assert key not in got, f"{key} written twice"  # each closed window written once
        assert (row["window_end"] - row["window_start"]).total_seconds() * 1000 == WINDOW_MS
        got[key] = (row["events"], row["clicks"])
    return got


def results(bootstrap_servers: str, start: Mapping[int, int], expected: int) -> list[tuple[bytes, dict]]:
    """The records of :data:`RESULTS_TOPIC` past ``start`` (offsets by partition) as (key, JSON
    value): polled until ``expected`` are read, then a while longer for any beyond."""
    partitions = [TopicPartition(RESULTS_TOPIC, p) for p in start]
    records = []
    with Consumer(bootstrap_servers=bootstrap_servers) as consumer:
        consumer.assign(partitions)
        for tp in partitions:
            consumer.seek(tp, start[tp.partition])
        for _ in range(100):
            batch = consumer.poll(0.2)
            records += batch
            if len(records) >= expected and not batch:
                break
    return [(r.key, json.loads(r.value)) for r in records]


def results_per_page(records: Iterable[tuple[bytes, dict]]) -> PageCounts:
    """:func:`results` as :func:`per_page` has them; each (minute, page) must be there once."""
    got: PageCounts = {}
    for key, value in records:
        start = datetime.fromisoformat(value["window_start"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(value["window_end"].replace("Z", "+00:00"))
        assert (end - start).total_seconds() * 1000 == WINDOW_MS
        assert key == value["page"].encode()  # keyed by page: a page's minutes stay in order
        page = (int(start.timestamp() * 1000), value["page"])
        assert page not in got, f"{page} written twice"
        got[page] = (value["events"], value["views"], value["clicks"], value["users"])
    return got
