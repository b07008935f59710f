"""Tests for kproto.log_files: Kafka's on-disk file names and formats, byte for byte
(issue 12: one owner for every Kafka byte format)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto.log_files import (
    DELETE_DIR_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    OFFSET_INDEX_ENTRY,
    STRAY_DIR_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_ENTRY,
    TIME_INDEX_SUFFIX,
    SegmentFileName,
    format_checkpoint,
    format_epoch_checkpoint,
    format_meta_properties,
    format_partition_metadata,
    kafka_uuid,
    pack_offset_entry,
    pack_time_entry,
    parse_checkpoint,
    parse_epoch_checkpoint,
    parse_meta_properties,
    parse_partition_dir,
    parse_partition_metadata,
    parse_segment_file,
    parse_set_aside_dir,
    partition_dir_name,
    segment_name,
    set_aside_dir_name,
    unpack_offset_entries,
    unpack_time_entries,
)

pytestmark = pytest.mark.codec

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def test_segment_names_are_the_base_offset_in_20_digits():
    assert segment_name(0) == "00000000000000000000"
    assert segment_name(368769) == "00000000000000368769"  # the example in Kafka's docs
    assert segment_name(2**63 - 1) == "09223372036854775807"


@pytest.mark.parametrize("name, parsed", [
    ("00000000000000000000.log", SegmentFileName(0, LOG_SUFFIX, "")),
    ("00000000000000000042.index", SegmentFileName(42, INDEX_SUFFIX, "")),
    ("00000000000000000042.timeindex.deleted", SegmentFileName(42, TIME_INDEX_SUFFIX, ".deleted")),
    ("00000000000000000042.log.cleaned", SegmentFileName(42, LOG_SUFFIX, ".cleaned")),
    ("00000000000000000042.index.swap", SegmentFileName(42, INDEX_SUFFIX, SWAP_SUFFIX)),
    ("42.log", None),
    ("00000000000000000042.log.tmp", None),
    ("00000000000000000042.snapshot", None),
    ("leader-epoch-checkpoint", None),
    ("partition.metadata", None),
])
def test_segment_file_names_parse(name, parsed):
    assert parse_segment_file(name) == parsed


@given(st.integers(0, 2**63 - 1), st.sampled_from([LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX]),
       st.sampled_from(["", ".deleted", ".cleaned", ".swap"]))
def test_segment_file_names_round_trip(base, kind, suffix):
    assert parse_segment_file(segment_name(base) + kind + suffix) == (base, kind, suffix)


def test_index_entries_are_kafkas_bytes():
    # OffsetIndex: relativeOffset i32, position i32; TimeIndex: timestamp i64, relativeOffset i32.
    assert OFFSET_INDEX_ENTRY.size == 8 and TIME_INDEX_ENTRY.size == 12
    assert pack_offset_entry(5, 4096) == bytes.fromhex("00000005" "00001000")
    assert pack_time_entry(1_700_000_000_000, 7) == bytes.fromhex("0000018bcfe56800" "00000007")


@given(st.lists(st.tuples(INT32, INT32)))
def test_offset_index_entries_round_trip(entries):
    data = b"".join(pack_offset_entry(r, p) for r, p in entries)
    assert list(unpack_offset_entries(data)) == entries
    assert list(unpack_offset_entries(memoryview(data))) == entries


@given(st.lists(st.tuples(INT64, INT32)))
def test_time_index_entries_round_trip(entries):
    data = b"".join(pack_time_entry(t, r) for t, r in entries)
    assert list(unpack_time_entries(data)) == entries


def test_a_partial_index_entry_is_refused():
    with pytest.raises(ValueError):
        unpack_offset_entries(bytes(12))
    with pytest.raises(ValueError):
        unpack_time_entries(bytes(8))


@pytest.mark.parametrize("name, parsed", [
    ("orders-0", ("orders", 0)),
    ("my-topic-12", ("my-topic", 12)),  # the partition follows the last "-"
    ("__consumer_offsets-49", ("__consumer_offsets", 49)),
    ("orders", None),
    ("orders-", None),
    ("-3", None),
    ("orders-3.0123456789abcdef0123456789abcdef-delete", None),
    ("orders-x", None),
])
def test_partition_directory_names_parse(name, parsed):
    assert parse_partition_dir(name) == parsed


@given(st.text(st.sampled_from("abcXYZ09._-"), min_size=1, max_size=40), st.integers(0, 2**31 - 1))
def test_partition_directory_names_round_trip(topic, partition):
    assert parse_partition_dir(partition_dir_name(topic, partition)) == (topic, partition)


def test_set_aside_directory_names_are_kafkas():
    unique = "0123456789abcdef0123456789abcdef"
    name = set_aside_dir_name("my-topic-3", DELETE_DIR_SUFFIX, unique)
    assert name == f"my-topic-3.{unique}-delete"
    assert parse_set_aside_dir(name) == ("my-topic", 3, DELETE_DIR_SUFFIX)
    stray = set_aside_dir_name("my-topic-3", STRAY_DIR_SUFFIX)
    assert parse_set_aside_dir(stray) == ("my-topic", 3, STRAY_DIR_SUFFIX)
    assert stray != set_aside_dir_name("my-topic-3", STRAY_DIR_SUFFIX)  # a fresh uuid each time
    assert parse_set_aside_dir("my-topic-3") is None


def test_set_aside_directory_names_fit_in_255_characters():
    # Kafka's LocalLog.logDirNameWithSuffixCappedLength cuts the topic, never the rest.
    name = set_aside_dir_name("t" * 249 + "-12345", DELETE_DIR_SUFFIX)
    assert len(name) == 255
    assert name.endswith("-12345." + name[-39:-7] + "-delete")
    assert parse_set_aside_dir(name)[1:] == (12345, DELETE_DIR_SUFFIX)


def test_checkpoint_text_is_kafkas():
    assert format_checkpoint([("orders", 3, 42)]) == "0\n1\norders 3 42\n"
    assert format_checkpoint([]) == "0\n0\n"
    text = "0\n2\norders 0 5\nmy-topic 1 7\n"
    assert parse_checkpoint(text) == [("orders", 0, 5), ("my-topic", 1, 7)]
    assert format_checkpoint(parse_checkpoint(text)) == text


@pytest.mark.parametrize("text", [
    "",
    "1\n1\norders 0 5\n",  # unknown version
    "0\n2\norders 0 5\n",  # fewer entries than it says
    "0\n1\norders 5\n",  # an entry without its partition
    "0\n1\norders 0 5 6\n",
    "0\n1\norders x 5\n",
    "0\nx\n",
])
def test_malformed_checkpoints_are_refused(text):
    with pytest.raises(ValueError):
        parse_checkpoint(text)


def test_topic_ids_are_written_as_kafka_writes_them():
    # Kafka's Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID (Uuid(0, 1)), as Uuid.toString prints them.
    assert kafka_uuid(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert kafka_uuid(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_partition_metadata_is_kafkas():
    text = format_partition_metadata(uuid.UUID(int=1))
    assert text == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
    assert parse_partition_metadata(text.encode()) == "AAAAAAAAAAAAAAAAAAAAAQ"


@given(st.uuids())
def test_partition_metadata_round_trips(topic_id):
    assert parse_partition_metadata(format_partition_metadata(topic_id).encode()) == kafka_uuid(topic_id)


@pytest.mark.parametrize("data", [
    b"",
    b"version: 0\n",
    b"version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n",
    b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAA\n",  # 21 characters
    b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAR\n",  # stray bits past the 16 bytes
    b"version: 0\ntopic_id AAAAAAAAAAAAAAAAAAAAAQ\n",
    b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAA\xffQ\n",
])
def test_malformed_partition_metadata_is_refused(data):
    with pytest.raises(ValueError):
        parse_partition_metadata(data)


# -- the replication files (issue 13, step 1, WP1) --------------------------------------


def test_leader_epoch_checkpoint_text_is_kafkas():
    """LeaderEpochCheckpointFile: version 0, the count, ``epoch start_offset`` lines."""
    assert format_epoch_checkpoint([(0, 0), (3, 1520)]) == "0\n2\n0 0\n3 1520\n"
    assert format_epoch_checkpoint([]) == "0\n0\n"
    assert parse_epoch_checkpoint("0\n2\n0 0\n3  1520\n") == [(0, 0), (3, 1520)]  # any whitespace


@given(st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 10**6)), max_size=20))
def test_leader_epoch_checkpoints_round_trip(steps):
    entries, epoch, start = [], -1, 0
    for de, ds in steps:
        epoch, start = epoch + de, start + ds
        entries.append((epoch, start))
    assert parse_epoch_checkpoint(format_epoch_checkpoint(entries)) == entries


@pytest.mark.parametrize("text", [
    "", "1\n0\n", "0\n2\n0 0\n", "0\n1\n0\n", "0\n1\n0 0 0\n",
    "0\n2\n3 10\n2 20\n",  # epochs going backwards
    "0\n2\n2 10\n3 5\n",  # start offsets going backwards
    "0\n1\n-1 0\n",
])
def test_malformed_leader_epoch_checkpoints_are_refused(text):
    with pytest.raises(ValueError):
        parse_epoch_checkpoint(text)


def test_meta_properties_are_a_java_properties_file():
    text = format_meta_properties(node_id=2, cluster_id="MkU3OEVBNTcwNTJENDM2Qk", directory_id="AAAAAAAAAAAAAAAAAAAAAQ")
    assert text.endswith("cluster.id=MkU3OEVBNTcwNTJENDM2Qk\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ\n"
                         "node.id=2\nversion=1\n")
    assert parse_meta_properties(text) == {"cluster.id": "MkU3OEVBNTcwNTJENDM2Qk", "directory.id": "AAAAAAAAAAAAAAAAAAAAAQ",
                                           "node.id": "2", "version": "1"}


def test_meta_properties_written_by_kafka_parse():
    """What Kafka 3.7+ writes (Properties.store: a comment, the date, keys in hash order)."""
    text = ("#\n#Tue Nov 25 01:02:03 UTC 2026\nnode.id=1\ndirectory.id=J8Bna5qgTWWdVzMGXwqE8A\n"
            "version=1\ncluster.id=4L6g3nShT-eMCtK--X86sw\n")
    props = parse_meta_properties(text)
    assert (props["node.id"], props["cluster.id"], props["version"]) == ("1", "4L6g3nShT-eMCtK--X86sw", "1")
    assert parse_meta_properties("version=0\nbroker.id=3\ncluster.id=x\n")["broker.id"] == "3"  # ZooKeeper's


@pytest.mark.parametrize("text", [
    "", "node.id=1\ncluster.id=x\n", "version=2\nnode.id=1\ncluster.id=x\n",
    "version=1\ncluster.id=x\n", "version=1\nnode.id=1\n", "version=1\nnode.id=one\ncluster.id=x\n",
    "version=1\nnode.id 1\ncluster.id=x\n".replace(" ", ""),
])
def test_malformed_meta_properties_are_refused(text):
    with pytest.raises(ValueError):
        parse_meta_properties(text)
