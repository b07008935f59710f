"""A cluster broker's per-log-directory files: ``meta.properties`` and the high watermark
and recovery point checkpoints (issue 13, step 1, WP1; KIP-631, KIP-858)."""

from __future__ import annotations

import uuid

import pytest

from kproto.log_files import (
    META_PROPERTIES,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    parse_meta_properties,
)
from minibroker.config import BrokerConfig
from minibroker.log.leader_epochs import LeaderEpochCache
from minibroker.storage import CorruptStateFileError, InconsistentBrokerMetadataError, Storage

CLUSTER = "4L6g3nShT-eMCtK--X86sw"


@pytest.fixture
def storage(tmp_path):
    opened = []

    def factory(*dirs):
        s = Storage(BrokerConfig(), [tmp_path / d for d in dirs] or [tmp_path / "logs"])
        opened.append(s)
        return s

    yield factory
    for s in opened:
        s.close()


def test_meta_properties_are_written_on_first_start_and_accepted_after(storage, tmp_path):
    s = storage("a", "b")
    s.check_meta_properties(1, CLUSTER)
    ids = set()
    for d in ("a", "b"):
        props = parse_meta_properties((tmp_path / d / META_PROPERTIES).read_text())
        assert (props["version"], props["node.id"], props["cluster.id"]) == ("1", "1", CLUSTER)
        ids.add(props["directory.id"])
    assert len(ids) == 2 and all(len(i) == 22 for i in ids)  # one Kafka uuid per directory (KIP-858)
    before = (tmp_path / "a" / META_PROPERTIES).read_text()
    s.close()
    storage("a", "b").check_meta_properties(1, CLUSTER)
    assert (tmp_path / "a" / META_PROPERTIES).read_text() == before


@pytest.mark.parametrize("node_id, cluster_id, named", [(2, CLUSTER, "node.id 1"), (1, "other", f"cluster.id {CLUSTER}")])
def test_another_nodes_or_clusters_directory_refuses_to_start(storage, tmp_path, node_id, cluster_id, named):
    s = storage()
    s.check_meta_properties(1, CLUSTER)
    s.close()
    with pytest.raises(InconsistentBrokerMetadataError, match=named) as info:
        storage().check_meta_properties(node_id, cluster_id)
    assert str(tmp_path / "logs" / META_PROPERTIES) in str(info.value)


def test_a_damaged_meta_properties_refuses_to_start(storage, tmp_path):
    s = storage()
    (tmp_path / "logs" / META_PROPERTIES).write_text("version=1\nnode.id=\n")
    with pytest.raises(CorruptStateFileError, match=META_PROPERTIES):
        s.check_meta_properties(0, CLUSTER)


def test_a_kafka_written_meta_properties_is_accepted(storage, tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / META_PROPERTIES).write_text(
        f"#\n#Tue Nov 25 01:02:03 UTC 2026\nnode.id=3\ndirectory.id=J8Bna5qgTWWdVzMGXwqE8A\nversion=1\ncluster.id={CLUSTER}\n")
    storage().check_meta_properties(3, CLUSTER)


def test_memory_only_storage_writes_nothing(tmp_path):
    s = Storage(BrokerConfig(), [])
    s.check_meta_properties(0, CLUSTER)
    s.save_offset_checkpoints({("t", 0): 5}, {("t", 0): 5})
    assert s.load_hw_checkpoint() == {}


def test_offset_checkpoints_are_per_directory_and_round_trip(storage, tmp_path):
    s = storage("a", "b")
    tid = uuid.uuid4()
    logs = [s.open_partition("t", tid, i, {}, replicated=True) for i in range(3)]
    try:
        homes = {i: logs[i].directory.parent.name for i in range(3)}
        hw = {("t", i): 10 + i for i in range(3)}
        s.save_offset_checkpoints(hw, {("t", i): 20 + i for i in range(3)})
        for d in ("a", "b"):
            mine = sorted(i for i in range(3) if homes[i] == d)
            assert (tmp_path / d / REPLICATION_OFFSET_CHECKPOINT).read_text() == (
                f"0\n{len(mine)}\n" + "".join(f"t {i} {10 + i}\n" for i in mine))
            assert (tmp_path / d / RECOVERY_POINT_OFFSET_CHECKPOINT).read_text() == (
                f"0\n{len(mine)}\n" + "".join(f"t {i} {20 + i}\n" for i in mine))
        assert s.load_hw_checkpoint() == hw
        (tmp_path / "a" / REPLICATION_OFFSET_CHECKPOINT).write_text("0\n5\nt 0")
        assert s.load_hw_checkpoint() == {k: v for k, v in hw.items() if homes[k[1]] == "b"}
    finally:
        for plog in logs:
            plog.close()


def test_replicated_partitions_keep_their_leader_epoch_checkpoint(storage):
    s = storage()
    tid = uuid.uuid4()
    plog = s.open_partition("t", tid, 0, {}, replicated=True)
    plog.epochs.assign(4, 0)
    plog.close()
    assert LeaderEpochCache.load(plog.directory / "leader-epoch-checkpoint").entries == ((4, 0),)
    single = s.open_partition("u", uuid.uuid4(), 0, {})
    single.epochs.assign(4, 0)
    single.close()
    assert not (single.directory / "leader-epoch-checkpoint").exists()
