"""Log maintenance off the event loop: while a big compaction runs, every connection is
still answered, and appends and fetches go on (issue 10, item 13c)."""

from __future__ import annotations

import asyncio
import os
import shutil
import time

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import CreateTopicsRequest, MetadataRequest
from kproto.records import BatchBuilder, decode_record_set, read_batches
from minibroker.log import PartitionLog
from minibroker.log.cleaner import Cleaning
from minibroker.log.maintenance import compact
from tests.minibroker.log.test_recovery import compacted_setup, records_at
from tests.minibroker.test_cli import run_cli
from tests.minibroker.test_server import fetch_request, produce
from tests.support.raw_client import RawClient

GZIP = 1
BATCHES = 200  # 800,000 records: the cleaner takes seconds over them
PER_BATCH = 4000
BOUND_S = 0.5


def gzip_batch(index: int, ts: int) -> bytes:
    """One gzip batch of small records with unique keys but one in ten ("dup"):
    compaction rebuilds (and recompresses) every batch, its slow path."""
    builder = BatchBuilder(2, GZIP)
    blob = os.urandom(PER_BATCH * 4).hex().encode()
    for i in range(PER_BATCH):
        key = b"dup" if i % 10 == 0 else b"k-%d-%d" % (index, i)
        builder.append(ts, key, blob[i * 8 : (i + 1) * 8])
    return builder.build()


def first_batch_records(client: RawClient, topic: str) -> int:
    response = client.request(ApiKey.FETCH, 12, fetch_request(topic, 0, partition_max_bytes=1))
    return len(next(read_batches(response.responses[0].partitions[0].records)).records())


def test_connections_are_answered_while_a_large_compaction_runs(tmp_path):
    """Issue 10, item 13c: a compaction that takes seconds runs in a worker thread of
    the broker (python -m minibroker); requests on another connection are answered
    within 0.5 s all along, and produces go on. Before: the cleaner ran on the event
    loop and every connection waited for it."""
    with run_cli(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"),
                 "--override", "log.retention.check.interval.ms=100") as (_, bootstrap):
        port = int(bootstrap.rsplit(":", 1)[1])
        client, probe = RawClient(port, timeout=60), RawClient(port, timeout=60)
        try:
            request = CreateTopicsRequest(timeout_ms=5000, validate_only=False, topics=[
                CreateTopicsRequest.CreatableTopic(
                    name="big", num_partitions=1, replication_factor=1, assignments=[], configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                        for k, v in {"cleanup.policy": "compact", "segment.ms": "60000"}.items()])])
            assert client.request(ApiKey.CREATE_TOPICS, 5, request).topics[0].error_code == 0
            ts = int(time.time() * 1000)
            for i in range(BATCHES):  # all in the active segment: nothing to clean yet
                assert produce(client, "big", gzip_batch(i, ts)).error_code == 0
            assert first_batch_records(client, "big") == PER_BATCH
            # A batch a minute younger rolls the segment (segment.ms): the next check
            # compacts all of the above in one go.
            assert produce(client, "big", gzip_batch(BATCHES, ts + 61_000)).error_code == 0
            rolled = time.monotonic()
            slowest = 0.0
            answered = 0
            while True:  # until the compaction shows, every request on probe is timed
                assert time.monotonic() - rolled < 120, "no compaction"
                started = time.monotonic()
                probe.request(ApiKey.METADATA, 9, MetadataRequest(topics=None))
                done = first_batch_records(probe, "big") < PER_BATCH
                slowest = max(slowest, time.monotonic() - started)
                if done:
                    break
                answered += 1
                if answered % 25 == 0:  # appends go on meanwhile
                    assert produce(client, "big", gzip_batch(BATCHES + answered, ts + 61_000)).error_code == 0
                time.sleep(0.02)
            took = time.monotonic() - rolled
            assert slowest < BOUND_S, f"a request waited {slowest:.2f} s during a {took:.1f} s compaction"
            assert answered > 0
            assert first_batch_records(probe, "big") == PER_BATCH - PER_BATCH // 10  # "dup" went
        finally:
            client.close()
            probe.close()


# -- what may happen to a log while its cleaning is built in a thread ------------------------


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap")))


def test_delete_records_during_a_cleaning_wins_over_its_swap(tmp_path):
    """Issue 10, item 13c: DeleteRecords removes segments while the cleaning of them is
    built: the cleaned copy is dropped at apply, and no deleted record comes back."""
    directory = tmp_path / "t-0"
    plog, config = compacted_setup(directory)
    try:
        cleaning = Cleaning.plan(plog, now_ms=0)
        cut = plog.segments[2].base_offset
        plog.delete_records(cut)  # the first groups' segments go
        cleaning.build()
        cleaning.apply()
        assert plog.log_start_offset == cut
        assert all(r.offset >= cut for r in decode_record_set(plog.read(cut, 1 << 30))[0])
        assert not leftovers(directory)
        plog.compact(now_ms=0)  # the next cleaning does the rest
        assert not leftovers(directory)
    finally:
        plog.close()
    assert records_at(directory, config)[0][0][0] >= cut


def test_a_topic_deleted_during_a_cleaning_is_left_deleted(tmp_path):
    """Issue 10, item 13c: the log is closed and its directory removed (DeleteTopics)
    while the cleaning is built: the build reads through descriptors of its own, writes
    only files that already existed, and apply leaves nothing behind."""
    directory = tmp_path / "t-0"
    plog, _ = compacted_setup(directory)
    cleaning = Cleaning.plan(plog, now_ms=0)
    plog.close()
    shutil.rmtree(directory)
    cleaning.build()
    cleaning.apply()
    assert not directory.exists()


def test_a_cancelled_compaction_stops_its_thread_and_keeps_the_originals(tmp_path):
    """Issue 10, item 13c: the broker stops during a compaction: the worker is stopped
    and awaited, its output deleted, the log as it was."""
    directory = tmp_path / "t-0"
    plog, config = compacted_setup(directory)
    plog.close()
    before = records_at(directory, config)
    plog = PartitionLog(directory, config=config)

    async def run():
        task = asyncio.create_task(compact(plog, now_ms=0))
        await asyncio.sleep(0)  # the plan is made, the build handed to a thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(run())
        assert not leftovers(directory)
    finally:
        plog.close()
    assert records_at(directory, config) == before
