"""The transaction coordinator's state machine and its ``__transaction_state`` records
(issue 14 step 1, item 1): sans-I/O, no broker."""

import struct
from dataclasses import replace

import pytest

from kproto.errors import (
    ConcurrentTransactionsError,
    IllegalTransitionError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    ProducerFencedError,
)
from minibroker.coordinator.transactions import (
    TRANSITIONS,
    TransactionMetadata,
    TxnState,
    TxnTransit,
    prepare_add_partitions,
    prepare_complete,
    prepare_end_txn,
    prepare_init_producer_id,
)
from minibroker.coordinator.txn_log import (
    decode_txn_record,
    encode_txn_key,
    encode_txn_value,
    partition_for,
    read_txn_records,
    txn_batch,
)

S = TxnState


def _new(epoch=-1, state=S.Empty, pid=1000):
    return TransactionMetadata(transactional_id="tx", producer_id=pid, producer_epoch=epoch, txn_timeout_ms=60000,
                               state=state, txn_last_update_timestamp=0)


def _apply(md, transit):
    assert isinstance(transit, TxnTransit), transit
    md.complete_transition(transit)
    return md


# Kafka's TransactionState.validPreviousStates, written out as Kafka 4.0 lists them
# (PrepareAbort from Empty and the complete states: transaction version 2's abort, KIP-890).
KAFKA_PREVIOUS = {
    S.Empty: {S.Empty, S.CompleteCommit, S.CompleteAbort},
    S.Ongoing: {S.Ongoing, S.Empty, S.CompleteCommit, S.CompleteAbort},
    S.PrepareCommit: {S.Ongoing},
    S.PrepareAbort: {S.Ongoing, S.PrepareEpochFence, S.Empty, S.CompleteCommit, S.CompleteAbort},
    S.CompleteCommit: {S.PrepareCommit},
    S.CompleteAbort: {S.PrepareAbort},
    S.Dead: {S.Empty, S.CompleteAbort, S.CompleteCommit},
    S.PrepareEpochFence: {S.Ongoing},
}


def test_transitions_are_kafkas_valid_previous_states_turned_around():
    """issue 14, item 1: the one table of moves is Kafka's."""
    for target, previous in KAFKA_PREVIOUS.items():
        assert {s for s in S if target in TRANSITIONS[s]} == previous, target


def test_state_ids_are_kafkas():
    assert [(s.name, s.value) for s in S] == [
        ("Empty", 0), ("Ongoing", 1), ("PrepareCommit", 2), ("PrepareAbort", 3), ("CompleteCommit", 4),
        ("CompleteAbort", 5), ("Dead", 6), ("PrepareEpochFence", 7)]


def test_an_illegal_move_raises_and_changes_nothing():
    md = _new(epoch=0)
    with pytest.raises(IllegalTransitionError):
        md.prepare_abort_or_commit(S.PrepareCommit, 1)  # Empty -> PrepareCommit
    assert md.state is S.Empty and md.pending_state is None
    transit = md.prepare_add_partitions(frozenset({("t", 0)}), 5)
    with pytest.raises(IllegalTransitionError):  # one pending move at a time
        md.prepare_add_partitions(frozenset({("t", 1)}), 6)
    md.abort_transition()  # the write failed
    assert md.state is S.Empty and md.partitions == set()
    _apply(md, md.prepare_add_partitions(frozenset({("t", 0)}), 5))
    assert (md.state, md.partitions, md.txn_start_timestamp) == (S.Ongoing, {("t", 0)}, 5)
    with pytest.raises(IllegalTransitionError):
        md.complete_transition(transit)  # nothing pending


def test_a_whole_transaction_commit():
    md = _new()
    _apply(md, prepare_init_producer_id(md, 30000, None, None, now=1))
    assert (md.producer_epoch, md.txn_timeout_ms, md.state) == (0, 30000, S.Empty)
    _apply(md, prepare_add_partitions(md, 1000, 0, frozenset({("a", 0), ("b", 1)}), now=2))
    assert prepare_add_partitions(md, 1000, 0, frozenset({("a", 0)}), now=3) == 0  # already there
    _apply(md, prepare_end_txn(md, 1000, 0, True, now=4))
    assert md.state is S.PrepareCommit
    assert prepare_end_txn(md, 1000, 0, True, now=5) == ConcurrentTransactionsError.code
    assert prepare_end_txn(md, 1000, 0, False, now=5) == InvalidTxnStateError.code
    done = prepare_complete(md, 1000, 0, True, now=6)
    assert prepare_init_producer_id(md, 30000, None, None, 7) == ConcurrentTransactionsError.code  # markers go
    _apply(md, done)
    assert (md.state, md.partitions) == (S.CompleteCommit, set())
    assert prepare_end_txn(md, 1000, 0, True, now=8) == 0  # a retried commit
    assert prepare_end_txn(md, 1000, 0, False, now=8) == InvalidTxnStateError.code
    _apply(md, prepare_add_partitions(md, 1000, 0, frozenset({("a", 0)}), now=9))
    assert md.txn_start_timestamp == 9  # a new transaction


def test_request_errors():
    md = _new(epoch=3)
    assert prepare_add_partitions(None, 1000, 3, frozenset(), 0) == InvalidProducerIdMappingError.code
    assert prepare_add_partitions(md, 999, 3, frozenset(), 0) == InvalidProducerIdMappingError.code
    assert prepare_add_partitions(md, 1000, 2, frozenset(), 0) == ProducerFencedError.code
    assert prepare_end_txn(md, 1000, 3, True, 0) == InvalidTxnStateError.code  # Empty
    assert prepare_end_txn(md, 1000, 4, True, 0) == ProducerFencedError.code  # a client's epoch must match


def test_init_producer_id_of_an_ongoing_transaction_fences_it_with_a_bumped_epoch():
    """Kafka's prepareInitProducerIdTransit: Ongoing -> PrepareEpochFence, the abort is
    written with epoch + 1, and the retried InitProducerId bumps once more."""
    md = _new(epoch=5)
    _apply(md, md.prepare_add_partitions(frozenset({("t", 0)}), 1))
    fence = prepare_init_producer_id(md, 60000, None, None, 2)
    assert fence.state is S.PrepareEpochFence and fence.producer_epoch == 6
    abort = prepare_end_txn(md, 1000, 6, False, 3, from_client=False)
    assert (abort.state, abort.producer_epoch, abort.partitions) == (S.PrepareAbort, 6, frozenset({("t", 0)}))
    _apply(md, abort)
    _apply(md, prepare_complete(md, 1000, 6, False, 4))
    assert md.state is S.CompleteAbort
    assert prepare_end_txn(md, 1000, 5, True, 5) == ProducerFencedError.code  # the zombie
    _apply(md, prepare_init_producer_id(md, 60000, None, None, 6))
    assert (md.producer_epoch, md.state) == (7, S.Empty)


def test_kip_360_epoch_bump_rules():
    """Kafka's prepareIncrementProducerEpoch with an expected epoch (InitProducerId v3+)."""
    md = _new(epoch=4)
    _apply(md, prepare_init_producer_id(md, 60000, (1000, 4), None, 1))  # resume after an error
    assert (md.producer_epoch, md.last_producer_epoch) == (5, 4)
    again = prepare_init_producer_id(md, 60000, (1000, 4), None, 2)  # a retry of that bump
    assert (again.producer_epoch, again.last_producer_epoch) == (5, 4)
    md.abort_transition()
    assert prepare_init_producer_id(md, 60000, (1000, 2), None, 3) == ProducerFencedError.code
    assert prepare_init_producer_id(md, 60000, (77, 5), None, 3) == ProducerFencedError.code
    _apply(md, prepare_init_producer_id(md, 60000, None, None, 4))  # a new producer: last epoch forgotten
    assert (md.producer_epoch, md.last_producer_epoch) == (6, -1)
    assert prepare_init_producer_id(md, 60000, (1000, 5), None, 5) == ProducerFencedError.code


def test_an_exhausted_epoch_moves_to_a_new_producer_id():
    md = _new(epoch=0x7FFE)
    with pytest.raises(ValueError):
        prepare_init_producer_id(md, 60000, None, None, 1)
    _apply(md, prepare_init_producer_id(md, 60000, (1000, 0x7FFE), 2000, 1))
    assert (md.producer_id, md.producer_epoch, md.last_producer_id, md.last_producer_epoch) == (2000, 0, 1000, 0x7FFE)
    # The old producer's retry with its exhausted epoch is not fenced (case 3 of Kafka's
    # isValidProducerId): it gets the new id's epoch again.
    retry = prepare_init_producer_id(md, 60000, (1000, 0x7FFE), None, 2)
    assert (retry.producer_id, retry.producer_epoch) == (2000, 0)
    md.abort_transition()
    # Without an expected epoch the rotation forgets the old one.
    md = _new(epoch=0x7FFE)
    _apply(md, prepare_init_producer_id(md, 60000, None, 2000, 1))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (2000, 0, -1)


# -- __transaction_state records --------------------------------------------------------------


def _kafka_string(s):
    return struct.pack(">h", len(s)) + s.encode()


def test_key_bytes_are_kafkas():
    """TransactionLogKey v0: version int16 0, then the id as a Kafka string."""
    assert encode_txn_key("my-txn") == b"\x00\x00" + _kafka_string("my-txn")
    assert decode_txn_record(encode_txn_key("my-txn"), None) == ("my-txn", None)  # tombstone


def _kafka_value_v0(pid, epoch, timeout, status, partitions, last_update, start):
    """TransactionLogValue v0 laid out by hand from Kafka's TransactionLogValue.json."""
    out = struct.pack(">hqhib", 0, pid, epoch, timeout, status)
    if partitions is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(partitions))
        for topic, ids in partitions:
            out += _kafka_string(topic) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    return out + struct.pack(">qq", last_update, start)


def test_value_bytes_are_kafkas_v0():
    transit = TxnTransit(producer_id=42, last_producer_id=-1, producer_epoch=3, last_producer_epoch=-1,
                         txn_timeout_ms=60000, state=S.Ongoing, partitions=frozenset({("b", 2), ("a", 1), ("a", 0)}),
                         txn_start_timestamp=1700000000000, txn_last_update_timestamp=1700000000123)
    kafka = _kafka_value_v0(42, 3, 60000, 1, [("a", [0, 1]), ("b", [2])], 1700000000123, 1700000000000)
    assert encode_txn_value(transit) == kafka
    assert decode_txn_record(encode_txn_key("x"), kafka) == ("x", transit)
    empty = TxnTransit(producer_id=42, last_producer_id=-1, producer_epoch=4, last_producer_epoch=-1,
                       txn_timeout_ms=60000, state=S.Empty, partitions=frozenset(), txn_start_timestamp=-1,
                       txn_last_update_timestamp=5)
    assert encode_txn_value(empty) == _kafka_value_v0(42, 4, 60000, 0, None, 5, -1)  # null partitions in Empty
    assert encode_txn_value(replace(empty, state=S.Dead)) is None  # a removed id: a tombstone


def test_value_v1_with_tagged_fields_is_read():
    """A flexible v1 value as Kafka 4 writes it (KIP-890): compact strings and arrays, and
    tagged previous_producer_id (0), next_producer_id (1), client_transaction_version (2)."""
    def uvarint(n):
        out = b""
        while n >= 0x80:
            out += bytes([n & 0x7F | 0x80])
            n >>= 7
        return out + bytes([n])
    body = struct.pack(">hqhib", 1, 42, 7, 1000, 2)
    body += uvarint(2) + uvarint(2) + b"t" + uvarint(2) + struct.pack(">i", 3) + uvarint(0)  # [{t, [3]}]
    body += struct.pack(">qq", 20, 10)
    tags = [(0, struct.pack(">q", 41)), (1, struct.pack(">q", -1)), (2, struct.pack(">h", 2))]
    body += uvarint(len(tags)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in tags)
    txn_id, transit = decode_txn_record(encode_txn_key("x"), body)
    assert (transit.state, transit.producer_id, transit.last_producer_id, transit.producer_epoch) == (
        S.PrepareCommit, 42, 41, 7)
    assert (transit.partitions, transit.txn_start_timestamp, transit.txn_last_update_timestamp) == (
        frozenset({("t", 3)}), 10, 20)


def test_unknown_key_versions_are_skipped_and_garbage_refused():
    assert decode_txn_record(b"\x00\x07whatever", b"") is None
    with pytest.raises(ValueError):
        decode_txn_record(encode_txn_key("x"), b"\x00\x00\x01")
    with pytest.raises(ValueError):
        decode_txn_record(None, b"")


def test_records_round_trip_through_a_batch():
    md = _new(epoch=0)
    one = md.prepare_add_partitions(frozenset({("t", 0)}), 5)
    builder = txn_batch([("tx", one), ("old", replace(one, state=S.Dead))], 9)
    builder.append(9, encode_txn_key("bad"), b"\x00\x00\x01")  # a malformed value: skipped
    raw = builder.build()
    assert list(read_txn_records(lambda offset, max_bytes: raw, 0, 3)) == [("tx", one), ("old", None)]


def test_partition_for_is_kafkas_hash():
    """Kafka's partitionFor: Utils.abs(transactionalId.hashCode) % partitions."""
    assert partition_for("my-txn", 50) == abs(_java_hash("my-txn")) % 50


def _java_hash(s):
    h = 0
    for c in s:
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h
