"""``kproto topics``: each action against minibroker, checked through kproto's AdminClient
and kafka-python's admin client."""

from __future__ import annotations

import json

import pytest

from kproto import TopicPartition
from kproto.admin import ConfigResource
from kproto.cli.main import main

kafka = pytest.importorskip("kafka")


def test_create_with_partitions_and_configs(cli, broker, admin):
    result = cli("topics", "create", "tp-a", "tp-b", "--partitions", "3", "--config", "retention.ms=60000",
                 "--config", "cleanup.policy=compact")
    assert result.code == 0 and result.lines == ["Created topic tp-a.", "Created topic tp-b."]
    oracle = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        described = {t["name"]: t for t in oracle.describe_topics(["tp-a", "tp-b"])}
    finally:
        oracle.close()
    assert {name: len(t["partitions"]) for name, t in described.items()} == {"tp-a": 3, "tp-b": 3}
    configs = admin.describe_configs([ConfigResource.topic("tp-a")])[ConfigResource.topic("tp-a")]
    assert configs["retention.ms"].value == "60000" and configs["cleanup.policy"].value == "compact"


def test_create_if_not_exists_and_validate_only(cli, admin):
    assert cli("topics", "create", "tp-exists").code == 0
    result = cli("topics", "create", "tp-exists", "tp-new", "--if-not-exists")
    assert result.code == 0 and result.lines == ["Created topic tp-new."]
    result = cli("topics", "create", "tp-dry", "--validate-only")
    assert result.code == 0 and result.lines == ["Validated topic tp-dry."]
    assert "tp-dry" not in admin.list_topics()


def test_list_with_and_without_internal_topics(cli, admin):
    cli("topics", "create", "tp-listed")
    names = cli("topics", "list").lines
    assert "tp-listed" in names and names == sorted(names)
    admin.alter_group_offsets("tp-group", {TopicPartition("tp-listed", 0): 0})  # creates __consumer_offsets
    assert "__consumer_offsets" not in names
    assert "__consumer_offsets" in cli("topics", "list", "--include-internal").lines


def test_describe_shows_partitions_offsets_and_own_configs(cli, broker):
    cli("topics", "create", "tp-desc", "--partitions", "2", "--config", "retention.ms=60000")
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        for i in range(3):
            producer.send("tp-desc", b"v%d" % i, partition=1)
        producer.flush(10)
    finally:
        producer.close(5)
    text = cli("topics", "describe", "tp-desc")
    assert text.code == 0
    header, first, second = text.lines[:3]  # kafka-topics.sh --describe's layout (issue 13 step 2)
    assert header.startswith("Topic: tp-desc\tTopicId: ") and "\tPartitionCount: 2\tReplicationFactor: 1\t" in header
    assert header.endswith("\tConfigs: retention.ms=60000")
    assert first == "\tTopic: tp-desc\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: 0\tLogEndOffset: 0"
    assert second == "\tTopic: tp-desc\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: 0\tLogEndOffset: 3"
    as_json = json.loads(cli("topics", "describe", "tp-desc", "--json").out)
    assert as_json["configs"] == {"retention.ms": "60000"} and as_json["replication_factor"] == 1
    assert [p["log_end_offset"] for p in as_json["partitions"]] == [0, 3]
    assert as_json["partitions"][1] == {"partition": 1, "leader": 0, "leader_epoch": 0, "replicas": [0], "isr": [0],
                                        "offline_replicas": [], "log_start_offset": 0, "log_end_offset": 3}


def test_describe_of_every_topic_and_of_a_missing_one(cli):
    cli("topics", "create", "tp-all")
    everything = cli("topics", "describe")
    assert everything.code == 0 and "Topic: tp-all\t" in everything.out
    missing = cli("topics", "describe", "tp-missing")
    assert missing.code == 1 and missing.err.startswith("kproto: error: [UNKNOWN_TOPIC_OR_PARTITION]")


def test_alter_partitions_and_configs(cli, admin):
    cli("topics", "create", "tp-alter", "--config", "cleanup.policy=compact")
    result = cli("topics", "alter", "tp-alter", "--partitions", "4", "--config", "retention.ms=1000",
                 "--delete-config", "cleanup.policy")
    assert result.code == 0
    assert result.lines == ["Topic tp-alter now has 4 partitions.", "Set retention.ms=1000 on topic tp-alter.",
                            "Returned cleanup.policy to its default on topic tp-alter."]
    assert len(admin.describe_topics(["tp-alter"])["tp-alter"].partitions) == 4
    configs = admin.describe_configs([ConfigResource.topic("tp-alter")])[ConfigResource.topic("tp-alter")]
    assert configs["retention.ms"].value == "1000" and configs["cleanup.policy"].is_default
    shrink = cli("topics", "alter", "tp-alter", "--partitions", "2")
    assert shrink.code == 1 and shrink.err.startswith("kproto: error: [INVALID_PARTITIONS]")


def test_delete_and_if_exists(cli, admin):
    cli("topics", "create", "tp-del")
    assert cli("topics", "delete", "tp-del").lines == ["Deleted topic tp-del."]
    assert "tp-del" not in admin.list_topics()
    assert cli("topics", "delete", "tp-del").code == 1
    result = cli("topics", "delete", "tp-del", "--if-exists")
    assert result.code == 0 and result.out == ""


def test_describe_on_a_cluster_shows_the_isr_shrink_and_the_new_leader_after_a_kill(cluster3, capsys, monkeypatch):
    """Issue 13 step 2, item 4.5: kafka-topics.sh's per-partition lines on a 3-broker
    MiniCluster, before and after the partition's leader is killed."""
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVERS", raising=False)

    def describe():
        capsys.readouterr()
        assert main(["--bootstrap-servers", cluster3.bootstrap_servers, "topics", "describe", "tp-rf3"]) == 0
        return capsys.readouterr().out.splitlines()

    cluster3.create_topic("tp-rf3", partitions=1, replication_factor=3)
    isr = cluster3.wait_for_isr("tp-rf3", 0, 3)
    leader = cluster3.leader_of("tp-rf3", 0)
    replicas = ",".join(map(str, cluster3.describe("tp-rf3")[0].replicas))
    header, line = describe()
    assert "\tPartitionCount: 1\tReplicationFactor: 3\t" in header
    assert line.startswith(f"\tTopic: tp-rf3\tPartition: 0\tLeader: {leader}\tReplicas: {replicas}\tIsr: ")
    assert sorted(line.split("\tIsr: ")[1].split("\t")[0].split(",")) == sorted(map(str, isr))
    cluster3.kill(leader)
    new = cluster3.wait_for_leader("tp-rf3", 0, not_in=(leader,))
    isr = cluster3.wait_for_isr("tp-rf3", 0, 2)
    _, line = describe()
    assert f"\tLeader: {new}\tReplicas: {replicas}\t" in line  # the replicas stay, the leader moved
    assert line.split("\tIsr: ")[1].split("\t")[0] == ",".join(map(str, isr)) and leader not in isr


def test_describe_shows_a_partition_without_a_leader_as_none(cluster3, capsys, monkeypatch):
    """Issue 13 step 2, item 4.5: an RF=1 partition whose only broker is killed has no
    leader; kafka-topics.sh prints ``Leader: none``, and the other partitions are still
    described (no log offsets can be asked of a partition without a leader)."""
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVERS", raising=False)
    cluster3.create_topic("tp-rf1", partitions=3, replication_factor=1)
    owner = cluster3.leader_of("tp-rf1", 0)
    cluster3.kill(owner)
    capsys.readouterr()
    code = main(["--bootstrap-servers", cluster3.bootstrap_servers, "topics", "describe", "tp-rf1"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()[1:]
    dead = [line for line in lines if "\tLeader: none\t" in line]
    assert f"\tTopic: tp-rf1\tPartition: 0\tLeader: none\tReplicas: {owner}\t" in lines[0]
    assert dead and all("\tLogStartOffset: -\tLogEndOffset: -" in line for line in dead)
    assert all("\tLogEndOffset: 0" in line for line in lines if line not in dead)
