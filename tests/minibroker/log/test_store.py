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
    map and at a boundary, and an unlink, against a plain bytearray doing the same."""
    rng = random.Random(16)
    store, ref = MemoryStore(0), bytearray()
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
            assert store.slice(at, length).tobytes() == ref[at : at + length]
        assert store.size == len(ref)
        if len(ref) > 3 * CHUNK:  # keep the test's memory small
            store.truncate(0)
            del ref[:]
