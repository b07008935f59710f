"""The partition side of transactions, on one broker (issue 14 step 1, items 1-3): open and
completed transactions in the producer state, the marker checks, the last stable offset
and the ``.txnindex`` of each segment, on disk and across restarts."""

import asyncio
import signal
import socket
import struct

from kproto.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionalIdAuthorizationFailedError,
    TransactionCoordinatorFencedError,
)
from kproto.protocol.timestamps import OffsetTimestamp
from minibroker import MiniBroker
from tests.minibroker.txn.conftest import NO_VERIFICATION
from tests.minibroker.txn.txn_wire import fetch, list_offset, produce, txn_batch, write_markers
from tests.support.process import start_minibroker, wait_ready

READ_COMMITTED = 1


def _partition(broker, topic, index=0):
    return broker._server.state.topics[topic].partitions[index]


def _call(broker, fn):
    async def run():
        return fn()
    return asyncio.run_coroutine_threadsafe(run(), broker._loop).result(10)


def _lso(broker, topic, index=0):
    return _call(broker, lambda: _partition(broker, topic, index).last_stable_offset)


def _create(broker, topic, configs=None):
    _call(broker, lambda: broker._server.state.create_topic(topic, 1, configs))


def test_the_lso_stops_at_an_open_transaction_until_its_marker(broker):
    """Issue 14, items 1-2: a transactional batch opens its producer's transaction at its
    first offset; the LSO stays there (below the high watermark) until the COMMIT marker."""
    _create(broker, "t")
    assert produce(broker.port, "t", txn_batch(5, 0, 0, [b"a", b"b"], transactional=False)) == (0, 0)
    assert produce(broker.port, "t", txn_batch(7, 0, 0, [b"t1", b"t2"])) == (0, 2)
    assert produce(broker.port, "t", txn_batch(5, 0, 2, [b"c"], transactional=False)) == (0, 4)
    assert produce(broker.port, "t", txn_batch(7, 0, 2, [b"t3"])) == (0, 5)
    assert _lso(broker, "t") == 2
    assert _call(broker, lambda: _partition(broker, "t").high_watermark) == 6
    assert write_markers(broker.port, 7, 0, True, [("t", 0)]) == {("t", 0): 0}
    assert _lso(broker, "t") == 7  # the marker is offset 6, below the high watermark


def test_the_lso_is_the_earliest_of_several_open_transactions(broker):
    """Issue 14, item 2: two producers' transactions interleaved; closing the later one
    leaves the LSO at the earlier one's first offset."""
    _create(broker, "t")
    produce(broker.port, "t", txn_batch(1, 0, 0, [b"a"]))  # 0
    produce(broker.port, "t", txn_batch(2, 0, 0, [b"b"]))  # 1
    write_markers(broker.port, 2, 0, False, [("t", 0)])  # 2
    assert _lso(broker, "t") == 0
    write_markers(broker.port, 1, 0, True, [("t", 0)])  # 3
    assert _lso(broker, "t") == 4


def test_a_non_transactional_batch_during_an_open_transaction_is_invalid_txn_state(broker):
    """Issue 14, item 1 (Kafka's ProducerAppendInfo.appendDataBatch)."""
    _create(broker, "t")
    assert produce(broker.port, "t", txn_batch(7, 0, 0, [b"t1"])) == (0, 0)
    assert produce(broker.port, "t", txn_batch(7, 0, 1, [b"x"], transactional=False)) == (InvalidTxnStateError.code, -1)
    write_markers(broker.port, 7, 0, True, [("t", 0)])
    assert produce(broker.port, "t", txn_batch(7, 0, 1, [b"x"], transactional=False)) == (0, 2)


def test_marker_epoch_rules(broker):
    """Issue 14, item 1: a marker older than the producer's epoch is INVALID_PRODUCER_EPOCH,
    a coordinator epoch older than the last marker's is TRANSACTION_COORDINATOR_FENCED;
    a marker of a newer epoch (a coordinator's abort after an epoch bump) becomes the
    producer's epoch, and its batches start again at sequence 0."""
    _create(broker, "t")
    produce(broker.port, "t", txn_batch(7, 3, 0, [b"t1"]))
    assert write_markers(broker.port, 7, 2, False, [("t", 0)], coordinator_epoch=5) == {
        ("t", 0): InvalidProducerEpochError.code}
    assert write_markers(broker.port, 7, 4, False, [("t", 0)], coordinator_epoch=5) == {("t", 0): 0}
    assert write_markers(broker.port, 7, 4, True, [("t", 0)], coordinator_epoch=4) == {
        ("t", 0): TransactionCoordinatorFencedError.code}
    assert produce(broker.port, "t", txn_batch(7, 3, 1, [b"old"])) == (InvalidProducerEpochError.code, -1)
    assert produce(broker.port, "t", txn_batch(7, 4, 0, [b"new"])) == (0, 2)
    assert _lso(broker, "t") == 2


def _entries(path):
    data = path.read_bytes()
    assert len(data) % 34 == 0
    return [struct.unpack(">hqqqq", data[i:i + 34]) for i in range(0, len(data), 34)]


def _abort_two_interleaved(port, topic):
    """Producer 1 at 0-1, producer 2 at 2, producer 1's ABORT at 3 (producer 2 still open:
    LSO 2), producer 2's ABORT at 4 (nothing open: LSO 5)."""
    assert produce(port, topic, txn_batch(1, 0, 0, [b"a", b"b"])) == (0, 0)
    assert produce(port, topic, txn_batch(2, 0, 0, [b"c"])) == (0, 2)
    assert write_markers(port, 1, 0, False, [(topic, 0)]) == {(topic, 0): 0}
    assert write_markers(port, 2, 0, False, [(topic, 0)]) == {(topic, 0): 0}


def test_the_txnindex_holds_kafkas_entries(tmp_path):
    """Issue 14, item 3: one 34-byte entry per aborted transaction in the segment of its
    marker: version 0, producer id, first offset, marker offset, and the LSO after the
    marker (the earliest other open transaction's first offset, else marker + 1); a
    committed transaction and an empty abort write none."""
    with MiniBroker(data_dir=tmp_path, config=NO_VERIFICATION) as broker:
        _create(broker, "t")
        _abort_two_interleaved(broker.port, "t")
        produce(broker.port, "t", txn_batch(3, 0, 0, [b"d"]))  # 5
        write_markers(broker.port, 3, 0, True, [("t", 0)])  # 6: a commit, no entry
        write_markers(broker.port, 4, 0, False, [("t", 0)])  # 7: an abort of nothing, no entry
        index = tmp_path / "t-0" / "00000000000000000000.txnindex"
        assert _entries(index) == [(0, 1, 0, 3, 2), (0, 2, 2, 4, 5)]


def test_fetch_read_committed_lists_the_aborted_transactions_of_the_range(broker):
    """Issue 14, item 4: aborted_transactions from the index, for the fetched range only."""
    _create(broker, "t")
    _abort_two_interleaved(broker.port, "t")
    answer = fetch(broker.port, "t", 0, isolation_level=READ_COMMITTED)
    assert answer.last_stable_offset == answer.high_watermark == 5
    assert sorted((a.producer_id, a.first_offset) for a in answer.aborted_transactions) == [(1, 0), (2, 2)]
    answer = fetch(broker.port, "t", 4, isolation_level=READ_COMMITTED)
    assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == [(2, 2)]
    assert fetch(broker.port, "t", 0, isolation_level=0).aborted_transactions is None


def test_a_restart_keeps_the_lso_of_an_open_transaction_and_the_aborted_list(tmp_path):
    """Issue 14, items 1 and 3: MiniBroker(data_dir=...) closed and opened again: the open
    transaction still holds the LSO (rebuilt from the log, markers included), the index
    is read back, and a producer's later marker closes the transaction."""
    with MiniBroker(data_dir=tmp_path, config=NO_VERIFICATION) as broker:
        _create(broker, "t")
        _abort_two_interleaved(broker.port, "t")
        produce(broker.port, "t", txn_batch(3, 0, 0, [b"open"]))  # 5, left open
        assert _lso(broker, "t") == 5
    with MiniBroker(data_dir=tmp_path, config=NO_VERIFICATION) as broker:
        assert _lso(broker, "t") == 5
        assert list_offset(broker.port, "t", OffsetTimestamp.LATEST, isolation_level=READ_COMMITTED) == (0, 5)
        answer = fetch(broker.port, "t", 0, isolation_level=READ_COMMITTED)
        assert sorted((a.producer_id, a.first_offset) for a in answer.aborted_transactions) == [(1, 0), (2, 2)]
        assert write_markers(broker.port, 3, 0, True, [("t", 0)]) == {("t", 0): 0}
        assert _lso(broker, "t") == 7


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigkill_then_restart_rebuilds_a_lost_txnindex_and_keeps_the_lso(tmp_path):
    """Issue 14, item 3 (recovery): a ``python -m minibroker`` process killed with SIGKILL
    after two aborts and with a transaction open; its ``.txnindex`` cut short as a crash
    may leave it (a torn last entry). The restart cuts the torn entry, adds the lost one by
    replaying the log, and keeps the open transaction's LSO."""
    port = _free_port()
    proc = start_minibroker("--port", str(port), "--data-dir", str(tmp_path),
                            "--override", "transaction.partition.verification.enable=false")
    try:
        wait_ready(proc)
        from kproto import AdminClient
        from kproto.admin import NewTopic
        with AdminClient(bootstrap_servers=f"127.0.0.1:{port}") as admin:
            admin.create_topics([NewTopic("t", 1)])
        _abort_two_interleaved(port, "t")
        produce(port, "t", txn_batch(3, 0, 0, [b"open"]))  # 5
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
        proc.wait(10)
    index = tmp_path / "t-0" / "00000000000000000000.txnindex"
    whole = index.read_bytes()
    assert len(whole) == 68
    index.write_bytes(whole[:50])  # the second entry torn
    proc = start_minibroker("--port", str(port), "--data-dir", str(tmp_path),
                            "--override", "transaction.partition.verification.enable=false")
    try:
        wait_ready(proc)
        assert list_offset(port, "t", OffsetTimestamp.LATEST, isolation_level=READ_COMMITTED) == (0, 5)
        assert list_offset(port, "t", OffsetTimestamp.LATEST, isolation_level=0) == (0, 6)
        answer = fetch(port, "t", 0, isolation_level=READ_COMMITTED)
        assert sorted((a.producer_id, a.first_offset) for a in answer.aborted_transactions) == [(1, 0), (2, 2)]
        assert index.read_bytes() == whole
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)


def test_the_txnindex_is_truncated_and_deleted_with_its_segment(tmp_path):
    """Issue 14, item 3: a truncation drops the entries of markers cut off; DeleteRecords
    past a segment deletes its ``.txnindex`` with it."""
    with MiniBroker(data_dir=tmp_path, config=NO_VERIFICATION) as broker:
        _create(broker, "t", {"file.delete.delay.ms": "0"})
        _abort_two_interleaved(broker.port, "t")
        directory = tmp_path / "t-0"
        partition = _partition(broker, "t")
        _call(broker, lambda: partition.log.truncate_to(4))
        _call(broker, lambda: broker._server.state._rebuild_producers(partition))
        assert _entries(directory / "00000000000000000000.txnindex") == [(0, 1, 0, 3, 2)]
        assert _lso(broker, "t") == 2  # producer 2's transaction is open again
        _call(broker, lambda: partition.log.roll())
        produce(broker.port, "t", txn_batch(9, 0, 0, [b"x"], transactional=False))
        _call(broker, lambda: partition.log.delete_records(4))
        assert not (directory / "00000000000000000000.txnindex").exists()
        assert not list(directory.glob("*.txnindex*"))


def test_kproto_dump_log_shows_the_txnindex(tmp_path, capsys):
    """Issue 14, item 3: ``kproto dump-log`` prints a ``.txnindex`` entry by entry, as
    Kafka's DumpLogSegments does."""
    from kproto.cli import main

    with MiniBroker(data_dir=tmp_path, config=NO_VERIFICATION) as broker:
        _create(broker, "t")
        _abort_two_interleaved(broker.port, "t")
    index = tmp_path / "t-0" / "00000000000000000000.txnindex"
    capsys.readouterr()
    assert main(["dump-log", str(index)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "version: 0 producerId: 1 firstOffset: 0 lastOffset: 3 lastStableOffset: 2",
        "version: 0 producerId: 2 firstOffset: 2 lastOffset: 4 lastStableOffset: 5",
    ]


def test_the_lso_is_never_below_the_log_start(broker):
    """Issue 14, item 2 (Kafka's maybeIncrementFirstUnstableOffset): DeleteRecords past an
    open transaction's first batch moves the LSO up to the new log start."""
    _create(broker, "t")
    produce(broker.port, "t", txn_batch(7, 0, 0, [b"t1"]))  # 0, left open
    produce(broker.port, "t", txn_batch(5, 0, 0, [b"a", b"b"], transactional=False))  # 1-2
    assert _lso(broker, "t") == 0
    _call(broker, lambda: _partition(broker, "t").log.delete_records(2))
    assert _lso(broker, "t") == 2
    assert list_offset(broker.port, "t", OffsetTimestamp.LATEST, isolation_level=READ_COMMITTED) == (0, 2)


def test_transactional_records_without_a_transactional_id_are_refused(broker):
    """Issue 14, item 1 (Kafka's handleProduceRequest): a Produce whose records are
    transactional must name its transactional id; every partition gets
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is written."""
    _create(broker, "t")
    code = TransactionalIdAuthorizationFailedError.code
    assert produce(broker.port, "t", txn_batch(7, 0, 0, [b"t1"]), transactional_id=None) == (code, -1)
    assert _call(broker, lambda: _partition(broker, "t").log.log_end_offset) == 0
    assert produce(broker.port, "t", txn_batch(7, 0, 0, [b"x"], transactional=False), transactional_id=None) == (0, 0)
