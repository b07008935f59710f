"""minibroker.log.store: a log in memory across the boundaries of its chunks (issue 16).

A :class:`~minibroker.log.store.MemoryStore` keeps a segment's first bytes in a
``bytearray`` and the rest in fixed-size maps; batches land across those boundaries as
they come. These tests write real record batches of the producer's sizes through a
:class:`~minibroker.log.PartitionLog` in memory and read them back byte for byte, and
check the store alone against a plain ``bytearray`` doing the same writes, reads and
truncations.
"""

from __future__ import annotations

import random
import struct

from kproto.records import BatchBuilder, read_batches
from minibroker.log import LogConfig, PartitionLog
from minibroker.log.store import CHUNK, FIRST_CHUNK, MemoryStore


def big_batch(records: int, value_size: int = 100, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    builder = BatchBuilder()
    for i in range(records):
        builder.append(1_700_000_000_000 + i, None, rng.randbytes(value_size))
    return builder.build()


def test_batches_across_chunk_boundaries_read_back_whole():
    """Issue 16 (broker produce, the store in memory): 1 MB batches, as send_batch makes
    them, fill the bytearray and two maps; every batch, the ones split over a boundary
    included, reads back as appended (with the offsets and epoch written in), and a
    read of everything returns them in order."""
    plog = PartitionLog(None, config=LogConfig())
    sent = [big_batch(9_000, seed=i) for i in range(20)]  # ~20 MB: past FIRST_CHUNK + 2 * CHUNK
    bases = [plog.append(b, last_offset_delta=8_999, max_timestamp=1_700_000_008_999, leader_epoch=7) for b in sent]
    assert bases == [9_000 * i for i in range(20)]
    assert plog.size_in_bytes == sum(map(len, sent)) > FIRST_CHUNK + 2 * CHUNK
    for i, batch in enumerate(sent):
        want = bytearray(batch)
        struct.pack_into(">q", want, 0, bases[i])  # the base offset and the leader epoch written in
        struct.pack_into(">i", want, 12, 7)
        got = plog.read(bases[i], len(batch), at_least_one=True)
        assert got[: len(batch)] == want
    everything = b"".join(s.tobytes() for s in plog.read_slices(0, 1 << 30))  # as Fetch reads
    assert [b.base_offset for b in read_batches(everything, True)] == bases  # CRCs checked too
    plog.close()


def test_memory_store_matches_a_bytearray():
    """Issue 16 (the store in memory): writes in pieces of every size, reads anywhere
    (past the end too: short, as a file's pread), truncations into the bytearray, into a
    map and at a boundary, and an unlink, against a plain bytearray doing the same; the
    slices taken keep the bytes they had whatever comes after."""
    rng = random.Random(16)
    store, ref = MemoryStore(0), bytearray()
    lent = []
    sizes = [0, 1, 100, 4_095, 65_536, FIRST_CHUNK - 1, CHUNK // 2, CHUNK + 3]
    for step in range(200):
        action = rng.random()
        if action < 0.55:
            parts = [rng.randbytes(rng.choice(sizes)) for _ in range(rng.randrange(1, 3))]
            assert store.append(*(memoryview(p) if rng.random() < 0.5 else p for p in parts)) == len(ref)
            ref += b"".join(parts)
        elif action < 0.7:
            at = rng.choice([0, rng.randrange(len(ref) + 1), min(len(ref), FIRST_CHUNK),
                             min(len(ref), FIRST_CHUNK + CHUNK)])
            store.truncate(at)
            del ref[at:]
        elif action < 0.72:
            store.unlink()
            ref = bytearray()
        else:
            at = rng.randrange(len(ref) + 10)
            length = rng.choice(sizes)
            assert store.pread(at, length) == ref[at : at + length], (step, at, length)
            pieces = store.slices(at, length)
            assert b"".join(p.tobytes() for p in pieces) == ref[at : at + length]
            assert all(p.length == len(p.source) > 0 for p in pieces)
            lent.extend((p, p.tobytes()) for p in pieces)
        assert store.size == len(ref)
        for piece, was in lent[-5:]:  # what a slice lent stays as it was read (a view too)
            assert piece.tobytes() == was, step
        if len(ref) > 3 * CHUNK:  # keep the test's memory small
            store.truncate(0)
            del ref[:]


def test_a_slice_of_a_map_is_a_view_whose_bytes_never_change():
    """Issue 16 (raw Fetch from a log in memory): a slice within one map is lent as a
    read-only view (no 2 MiB copy per Fetch, no fresh pages); a truncation into it and
    appends after that write into a copy, not under the view, and dropping the maps
    (truncate, unlink: DeleteTopics, retention) while a view is out neither fails nor
    changes the view's bytes."""
    store = MemoryStore(0)
    first = random.Random(1).randbytes(FIRST_CHUNK + CHUNK // 2)
    store.append(first)
    [piece] = store.slices(FIRST_CHUNK + 100, 2 << 20)
    assert type(piece.source) is memoryview and piece.source.readonly
    assert piece.length == len(piece.source) == 2 << 20
    assert piece.tobytes() == first[FIRST_CHUNK + 100 : FIRST_CHUNK + 100 + (2 << 20)]

    store.truncate(FIRST_CHUNK + 1000)  # into the lent bytes
    store.append(b"\xff" * CHUNK)  # written after the cut, and into the next map
    assert piece.tobytes() == first[FIRST_CHUNK + 100 : FIRST_CHUNK + 100 + (2 << 20)]
    assert store.pread(FIRST_CHUNK, 1000) == first[FIRST_CHUNK : FIRST_CHUNK + 1000]
    assert store.pread(FIRST_CHUNK + 1000, 10) == b"\xff" * 10

    # Across a boundary: a view of each map, not a copy (a quarter of the 2 MiB Fetches of
    # a long partition cross one); from the first chunk (a bytearray that grows): bytes.
    across = store.slices(FIRST_CHUNK + CHUNK - 10, 100)
    assert [(type(p.source), p.length) for p in across] == [(memoryview, 10), (memoryview, 90)]
    assert b"".join(p.tobytes() for p in across) == b"\xff" * 100
    head = store.slices(FIRST_CHUNK - 10, 20)
    assert [(type(p.source), p.length) for p in head] == [(bytes, 10), (memoryview, 10)]
    assert b"".join(p.tobytes() for p in head) == first[FIRST_CHUNK - 10 : FIRST_CHUNK] + first[FIRST_CHUNK : FIRST_CHUNK + 10]
    store.unlink()  # the maps go while views of them are out
    assert store.size == 0
    assert piece.tobytes() == first[FIRST_CHUNK + 100 : FIRST_CHUNK + 100 + (2 << 20)]
