"""On-disk fuzz: whatever file of a partition is cut or corrupted, the broker's state
restarts, serves only valid batches, and keeps every record and committed offset that
lay intact before the damage.

Each case copies a data dir written by a real :class:`~minibroker.state.BrokerState`
(a topic over several segments with a moved log start, and ``__consumer_offsets``
holding a group's commits), damages one file at one position (cut there, or the byte
there flipped), opens a new ``BrokerState`` on it (what a broker restart does) and checks:

- it opens (no exception);
- valid data only: reading the partition from its log start to its end gives whole
  batches, each passing its CRC, at strictly increasing offsets;
- nothing intact lost: a batch of the golden log that lies wholly before the damaged
  byte (or in another file than the damaged one) is still there, byte for byte, unless
  it is below the log start offset of the golden log;
- committed offsets: every group offset committed by a batch of ``__consumer_offsets``
  lying wholly before the damage is still committed (the latest such commit), and none
  is invented.

Damage to an index, ``partition.metadata`` or the log start checkpoint must lose nothing
at all. This module runs a bounded sample (every k-th position); ``bench/fuzz_disk.py``
runs every position of every file.

The broker's own files (topics, producer ids, dynamic broker configs) are damaged the same
way by ``check_state_file_case``: the start is refused with a message naming the file, or
nothing changed. Issue 10.
"""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kproto.errors import CorruptRecordError
from kproto.records import BatchBuilder, read_batches
from minibroker.config import BrokerConfig
from minibroker.coordinator.offsets import CommittedOffset
from minibroker.log.partition import CHECKPOINT_FILE
from minibroker.state import OFFSETS_TOPIC, BrokerState
from minibroker.storage import CorruptStateFileError

__all__ = ["Golden", "GoldenState", "build_golden", "build_golden_state", "check_case", "check_state_file_case",
           "damage_cases", "state_file_cases"]

TOPIC = "t"
GROUP = "g"


@dataclass
class Golden:
    """A data dir as written, and what it holds."""

    root: Path
    log_start: int
    batches: dict[str, list[tuple[int, int, int, bytes]]] = field(default_factory=dict)
    # partition dir name -> [(file position, base offset, last offset, bytes)] per segment file,
    # keyed "dir/segment.log"
    commits: list[tuple[str, int, int, int]] = field(default_factory=list)
    # (offsets segment file, end position in it, partition of t, committed offset), in order


def _config(root: Path) -> BrokerConfig:
    return BrokerConfig({"log.dirs": str(root), "offsets.topic.num.partitions": 1})


def build_golden(root: Path, batches: int = 24) -> Golden:
    """Write the data dir: topic ``t`` (2 partitions, small segments, dense indexes) with
    ``batches`` batches on partition 0, DeleteRecords to offset 4, and 6 commits of group
    ``g``; then describe every batch of every ``.log`` file."""
    state = BrokerState(_config(root), "127.0.0.1", 0)
    topic = state.create_topic(TOPIC, 2, {"segment.bytes": "700", "index.interval.bytes": "64"})
    log = topic.partitions[0].log
    for i in range(batches):
        builder = BatchBuilder()
        for j in range(3):
            builder.append(1_000 + 10 * i + j, b"k%d" % i, b"value-%d-%d" % (i, j))
        log.append(builder.build(), last_offset_delta=2, max_timestamp=1_002 + 10 * i, leader_epoch=0)
    assert len(log.segments) >= 4
    log.delete_records(4)
    for n in range(6):
        code = state.groups.commit_offsets(GROUP, member_id="", group_instance_id=None, generation_id=-1,
                                           offsets=[(TOPIC, n % 2, CommittedOffset(offset=10 * n + 1))])
        assert code == 0
    golden = Golden(root, log.log_start_offset)
    state.close()
    for path in sorted(root.glob("*/*.log")):
        data = path.read_bytes()
        described, pos = [], 0
        for batch in read_batches(data):
            described.append((pos, batch.base_offset, batch.last_offset, data[pos:pos + batch.size]))
            pos += batch.size
        assert pos == len(data)
        golden.batches[f"{path.parent.name}/{path.name}"] = described
    offsets_dir = root / f"{OFFSETS_TOPIC}-0"
    # The commits in log order: batch i of the offsets log holds commit i.
    (offsets_log,) = sorted(offsets_dir.glob("*.log"))
    described = golden.batches[f"{offsets_dir.name}/{offsets_log.name}"]
    assert len(described) == 6
    for n, (pos, _, _, data) in enumerate(described):
        golden.commits.append((f"{offsets_dir.name}/{offsets_log.name}", pos + len(data), n % 2, 10 * n + 1))
    return golden


def damage_cases(golden: Golden, step: int = 1):
    """``(file relative to the root, position, "cut" | "flip")`` for every file of
    ``t-0`` and ``__consumer_offsets-0``, every ``step``-th position (and the last)."""
    for directory in (f"{TOPIC}-0", f"{OFFSETS_TOPIC}-0"):
        for path in sorted((golden.root / directory).iterdir()):
            size = path.stat().st_size
            positions = sorted(set(range(0, size, step)) | ({size - 1} if size else set()))
            for pos in positions:
                for how in ("cut", "flip"):
                    yield f"{directory}/{path.name}", pos, how


def _damage(path: Path, pos: int, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "cut":
        del data[pos:]
    else:
        data[pos] ^= 0xFF
    path.write_bytes(bytes(data))


def _served(log) -> list[tuple[int, int, bytes]]:
    """Every batch from the log start to the end, as a fetch would get them; raises
    AssertionError on invalid data (a CRC, a partial batch, offsets not increasing)."""
    out, offset, last = [], log.log_start_offset, -1
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        try:
            batches = list(read_batches(data))
        except CorruptRecordError as exc:
            raise AssertionError(f"served a corrupt batch at offset {offset}: {exc}") from None
        assert batches, f"nothing served at offset {offset} below the log end {log.log_end_offset}"
        assert sum(b.size for b in batches) == len(data), f"served a partial batch at offset {offset}"
        pos = 0
        for b in batches:
            assert b.base_offset > last, f"offsets not increasing: {b.base_offset} after {last}"
            out.append((b.base_offset, b.last_offset, bytes(data[pos:pos + b.size])))
            pos += b.size
            last = b.last_offset
        offset = last + 1
    return out


def check_case(golden: Golden, scratch: Path, relative: str, pos: int, how: str) -> None:
    """Copy the golden dir to ``scratch``, damage it, restart the state on it, check.

    Raises:
        AssertionError: an invariant of this module's docstring broke (the message says which).
    """
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(golden.root, scratch)
    _damage(scratch / relative, pos, how)
    try:
        state = BrokerState(_config(scratch), "127.0.0.1", 0)
    except Exception as exc:
        raise AssertionError(f"did not restart: {type(exc).__name__}: {exc}") from exc
    try:
        log = state.topics[TOPIC].partitions[0].log
        served = {base: data for base, _, data in _served(log)}
        damaged_dir, damaged_file = relative.split("/")
        for key, batches in golden.batches.items():
            if not key.startswith(f"{TOPIC}-0/"):
                continue
            for start, base, last, data in batches:
                if last < golden.log_start:
                    continue  # deleted before the damage
                if key == relative and start + len(data) > pos:
                    continue  # at or after the damaged byte
                assert served.get(base) == data, f"lost intact batch {base}-{last} of {key}"
        committed = state.groups.offsets.committed(GROUP)
        expected: dict[int, int] = {}
        for file, end, partition, offset in golden.commits:
            if file == relative and end > pos:
                break  # this commit's batch, and all later ones, touch the damage
            expected[partition] = offset
        for partition, offset in expected.items():
            got = committed.get((TOPIC, partition))
            # Damage may spare a later commit (a flip outside the CRC, in the leader epoch).
            assert got is not None and got.offset >= offset, f"commit of partition {partition} at {offset} lost: {got}"
        made = {(p, o) for _, _, p, o in golden.commits}
        for (topic, partition), got in committed.items():
            assert topic == TOPIC and (partition, got.offset) in made, f"invented commit {got}"
    finally:
        state.close()


# -- the bounded run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    return build_golden(tmp_path_factory.mktemp("golden") / "data")


def kind_of(golden: Golden, relative: str) -> str:
    """The damaged file's kind: ``old-segment`` (a ``.log`` that is not the last of its
    partition), ``active-segment``, ``index``, ``small-file`` or ``offsets-log``."""
    directory, name = relative.split("/")
    if directory.startswith(OFFSETS_TOPIC):
        return "offsets-log"
    if name.endswith(".log"):
        last = max(k for k in golden.batches if k.startswith(f"{directory}/"))
        return "active-segment" if relative == last else "old-segment"
    if name.endswith((".index", ".timeindex")):
        return "index"
    return "small-file"


# Sizes of the samples: about 60 damaged copies each, a few seconds in all.
BUDGET = 60


@pytest.mark.parametrize("kind", ["active-segment", "old-segment", "index", "small-file", "offsets-log"])
def test_damaged_files_restart_with_valid_data_and_nothing_intact_lost(golden, tmp_path, kind):
    """Issue 10 (on-disk fuzz, bounded): a sample of cut and flipped positions of the
    active and the old segments, the indexes, the log start checkpoint and
    partition.metadata, and of the offsets log."""
    cases = [c for c in damage_cases(golden) if kind_of(golden, c[0]) == kind]
    failures = []
    for relative, pos, how in cases[::max(1, len(cases) // BUDGET)]:
        try:
            check_case(golden, tmp_path / "case", relative, pos, how)
        except AssertionError as exc:
            failures.append(f"{how} {relative} at {pos}: {exc}")
    assert not failures, "\n".join(failures[:20])


OLD_SEGMENT = "t-0/00000000000000000000.log"  # 6 batches of 115 bytes: offsets 0-17


def test_a_flipped_batch_length_in_an_old_segment_does_not_stop_the_broker(golden, tmp_path):
    """Issue 10 (on-disk fuzz finding): byte 11 of the second batch's header (its length)
    flipped in an old segment: the broker must still start."""
    check_case(golden, tmp_path / "case", OLD_SEGMENT, 115 + 11, "flip")


def test_a_flipped_record_byte_in_an_old_segment_is_never_served(golden, tmp_path):
    """Issue 10 (on-disk fuzz finding): a byte inside the second batch's records flipped
    in an old segment: the batch fails its CRC and must not be served."""
    check_case(golden, tmp_path / "case", OLD_SEGMENT, 115 + 35, "flip")


def test_an_old_segment_cut_inside_its_last_batch_is_never_served(golden, tmp_path):
    """Issue 10 (on-disk fuzz finding): an old segment cut in the middle of its last batch
    (the index's last entry still points at a whole batch): the torn batch must not be
    served."""
    check_case(golden, tmp_path / "case", OLD_SEGMENT, 575 + 55, "cut")


def test_a_flipped_base_offset_in_an_old_segment_does_not_break_offset_order(golden, tmp_path):
    """Issue 10 (on-disk fuzz finding): a byte of the first batch's base offset flipped in
    an old segment: offsets served must still increase."""
    check_case(golden, tmp_path / "case", OLD_SEGMENT, 6, "flip")


def test_golden_files_are_what_the_fuzz_expects(golden):
    """The golden data dir has every file kind the fuzz damages."""
    names = {p.name for p in (golden.root / f"{TOPIC}-0").iterdir()}
    assert CHECKPOINT_FILE in names and "partition.metadata" in names
    assert sum(n.endswith(".log") for n in names) >= 4
    assert any(n.endswith(".index") for n in names) and any(n.endswith(".timeindex") for n in names)
    assert struct.unpack(">q", (golden.root / f"{TOPIC}-0" / sorted(n for n in names if n.endswith(".log"))[0])
                         .read_bytes()[:8])[0] <= golden.log_start


# -- partition.metadata: rewritten from the topics file, or the directory set aside --------------


@pytest.mark.parametrize("how, pos", [("flip", 0), ("flip", 30), ("cut", 24), ("cut", 0)])
def test_a_damaged_partition_metadata_of_a_known_partition_is_rewritten_from_the_topics_file(
        golden, tmp_path, caplog, how, pos):
    """Issue 10 (on-disk fuzz finding): a flipped byte in ``t-0/partition.metadata`` stopped
    the broker from starting (UnicodeDecodeError), and a cut one made ``t-0`` stray, its
    records lost to the topic. The topics file names the partition: the file is rewritten
    from it with a warning, and every record stays."""
    check_case(golden, tmp_path / "case", f"{TOPIC}-0/partition.metadata", pos, how)
    assert (tmp_path / "case" / f"{TOPIC}-0" / "partition.metadata").read_bytes() == \
        (golden.root / f"{TOPIC}-0" / "partition.metadata").read_bytes()
    assert "rewritten from" in caplog.text
    assert not list((tmp_path / "case").glob("*-stray"))


def test_a_damaged_partition_metadata_no_topic_names_is_set_aside_as_stray(tmp_path):
    """Issue 10: a directory with an unparseable ``partition.metadata`` that no topic of the
    topics file names (on start), or whose name a topic being created takes, is not adopted:
    it is set aside as stray, its files kept, and the topic starts empty."""

    def foreign(name: str) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "partition.metadata").write_bytes(b"version: 0\ntopic_id: \xff\xfe\n")
        (tmp_path / name / "00000000000000000000.log").write_bytes(b"not ours")

    first = BrokerState(BrokerConfig({"log.dirs": str(tmp_path)}), "127.0.0.1", 0)
    first.create_topic("t", 1)  # a topics file
    first.close()
    foreign("u-0")
    state = BrokerState(BrokerConfig({"log.dirs": str(tmp_path)}), "127.0.0.1", 0)
    try:
        foreign("v-0")
        assert state.create_topic("v", 1).partitions[0].log.log_end_offset == 0
    finally:
        state.close()
    for name in ("u-0", "v-0"):
        (stray,) = tmp_path.glob(f"{name}.*-stray")
        assert (stray / "00000000000000000000.log").read_bytes() == b"not ours"
    assert (tmp_path / "v-0" / "00000000000000000000.log").read_bytes() == b""


# -- the broker's own files: the topics, producer ids and dynamic broker configs files -----------

STATE_FILES = ("minibroker-topics.json", "minibroker-producer-ids.json", "minibroker-broker-configs.json")


@dataclass
class GoldenState:
    """A data dir with the three files of the broker's own, and what they hold."""

    root: Path
    topics: dict[str, tuple[object, int, dict]]
    issued_producer_id: int
    dynamic: dict


def build_golden_state(root: Path) -> GoldenState:
    state = BrokerState(_config(root), "127.0.0.1", 0)
    try:
        state.create_topic(TOPIC, 2, {"retention.ms": "86400000"})
        state.create_topic("u", 1)
        issued = state.new_producer_id()
        state.config.set_dynamic(False, {"message.max.bytes": "2000000"})
        state.storage.save_broker_configs()
        topics = {t.name: (t.topic_id, len(t.partitions), t.configs) for t in state.topics.values()}
        return GoldenState(root, topics, issued, state.config.stored_dynamic())
    finally:
        state.close()


def state_file_cases(golden: GoldenState, step: int = 1):
    """``(file name, position, "cut" | "flip")`` for every ``step``-th position of each file."""
    for name in STATE_FILES:
        size = (golden.root / name).stat().st_size
        for pos in sorted(set(range(0, size, step)) | {size - 1}):
            for how in ("cut", "flip"):
                yield name, pos, how


def check_state_file_case(golden: GoldenState, scratch: Path, name: str, pos: int, how: str) -> None:
    """Damage one of the broker's own files in a copy; the restart must either refuse with
    :class:`~minibroker.storage.CorruptStateFileError` naming the file, or keep every
    topic, config and the producer id floor exactly.

    Raises:
        AssertionError: neither happened (the message says what).
    """
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(golden.root, scratch)
    _damage(scratch / name, pos, how)
    try:
        state = BrokerState(_config(scratch), "127.0.0.1", 0)
    except CorruptStateFileError as exc:
        assert str(scratch / name) in str(exc), f"the refusal does not name the file: {exc}"
        return
    except Exception as exc:
        raise AssertionError(f"did not restart, nor refuse clearly: {type(exc).__name__}: {exc}") from exc
    try:
        topics = {t.name: (t.topic_id, len(t.partitions), t.configs) for t in state.topics.values()}
        assert topics == golden.topics, f"topics changed: {topics}"
        assert state.new_producer_id() > golden.issued_producer_id, "a producer id may be reissued"
        assert state.config.stored_dynamic() == golden.dynamic, "dynamic broker configs changed"
    finally:
        state.close()


def test_a_damaged_state_file_refuses_the_start_naming_it_or_loses_nothing(tmp_path):
    """Issue 10: the topics, producer ids or dynamic broker configs file cut or flipped
    anywhere (a sample; ``bench/fuzz_disk.py --state-files`` runs every position): the broker
    refuses to start with a message naming the file (as Kafka refuses a corrupt metadata log)
    rather than silently lose topics, reissue producer ids or forget configs."""
    golden = build_golden_state(tmp_path / "golden")
    cases = list(state_file_cases(golden))
    failures = []
    for name, pos, how in cases[::max(1, len(cases) // BUDGET)]:
        try:
            check_state_file_case(golden, tmp_path / "case", name, pos, how)
        except AssertionError as exc:
            failures.append(f"{how} {name} at {pos}: {exc}")
    assert not failures, "\n".join(failures[:20])
