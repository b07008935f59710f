"""``kproto groups``: listing, describing (offsets, lag, members), deleting, and resetting
offsets with a dry run first; groups made by kproto's Consumer and checked through the
AdminClient."""

from __future__ import annotations

import json

import pytest

from kproto import AdminClient, Consumer, Producer, TopicPartition
from kproto.admin import NewTopic

TOPIC = "gr-orders"


@pytest.fixture(scope="module")
def orders(broker, admin):
    """TOPIC: 2 partitions of 10 records each, timestamps 1000..1009 on both."""
    admin.create_topics([NewTopic(TOPIC, 2)])
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for p in (0, 1):
            for i in range(10):
                producer.send(TOPIC, b"v%d" % i, partition=p, timestamp_ms=1000 + i)
    return TOPIC


def commit(admin: AdminClient, group: str, offsets: dict[int, int]) -> None:
    admin.alter_group_offsets(group, {TopicPartition(TOPIC, p): o for p, o in offsets.items()})


def committed(admin: AdminClient, group: str) -> dict[int, int]:
    return {tp.partition: o.offset for tp, o in admin.list_group_offsets(group).items()}


@pytest.fixture
def member(broker, orders):
    """A live member of group "gr-live" holding both partitions."""
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="gr-live", client_id="live-client",
                  auto_offset_reset="earliest") as consumer:
        consumer.subscribe([orders])
        while len(consumer.assignment()) < 2:
            consumer.poll(0.2)
        yield consumer


def test_describe_offsets_and_lag_of_an_inactive_group(cli, admin, orders):
    commit(admin, "gr-lag", {0: 4, 1: 10})
    result = cli("groups", "describe", "gr-lag")
    assert result.code == 0
    assert result.lines[0] == "Consumer group 'gr-lag' has no active members."
    assert result.lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                       "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert result.lines[2].split() == ["gr-lag", TOPIC, "0", "4", "10", "6", "-", "-", "-"]
    assert result.lines[3].split() == ["gr-lag", TOPIC, "1", "10", "10", "0", "-", "-", "-"]
    rows = [json.loads(line) for line in cli("groups", "describe", "gr-lag", "--json").lines]
    assert [(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"]) for r in rows] == [(0, 4, 10, 6), (1, 10, 10, 0)]


def test_describe_members_and_state_of_a_live_group(cli, member):
    offsets = [json.loads(line) for line in cli("groups", "describe", "gr-live", "--json").lines]
    assert [r["partition"] for r in offsets] == [0, 1]
    assert {r["client_id"] for r in offsets} == {"live-client"} and all(r["consumer_id"] for r in offsets)
    members = cli("groups", "describe", "gr-live", "--members")
    assert members.lines[0].split()[:2] == ["GROUP", "CONSUMER-ID"]
    assert members.lines[1].endswith(f"live-client  2           {TOPIC}:0,{TOPIC}:1")
    (state,) = [json.loads(line) for line in cli("groups", "describe", "gr-live", "--state", "--json").lines]
    assert state == {"group": "gr-live", "coordinator": 0, "assignment_strategy": "range", "state": "Stable", "members": 1}


def test_list_and_filter_by_state(cli, admin, member):
    commit(admin, "gr-listed", {0: 1})
    rows = {r["group"]: r for r in map(json.loads, cli("groups", "list", "--json").lines)}
    assert rows["gr-live"]["state"] == "Stable" and rows["gr-listed"]["state"] == "Empty"
    empty = cli("groups", "list", "--state", "Empty")
    assert empty.lines[0].split() == ["GROUP", "STATE", "PROTOCOL-TYPE"]
    assert "gr-listed" in empty.out and "gr-live" not in empty.out


def test_a_live_group_can_be_neither_reset_nor_deleted(cli, member):
    reset = cli("groups", "reset-offsets", "gr-live", "--all-topics", "--to-earliest", "--execute")
    assert reset.code == 1 and reset.err.startswith("kproto: error: [NON_EMPTY_GROUP] offsets of group 'gr-live'")
    delete = cli("groups", "delete", "gr-live")
    assert delete.code == 1 and delete.err.startswith("kproto: error: [NON_EMPTY_GROUP]")


def test_unknown_groups(cli):
    described = cli("groups", "describe", "gr-nobody")
    assert described.code == 1 and described.err == "kproto: error: [GROUP_ID_NOT_FOUND] group 'gr-nobody' does not exist\n"
    assert cli("groups", "delete", "gr-nobody").err.startswith("kproto: error: [GROUP_ID_NOT_FOUND]")
    reset = cli("groups", "reset-offsets", "gr-nobody", "--all-topics", "--to-latest")
    assert reset.code == 2 and "has no committed offsets" in reset.err


def test_reset_is_a_dry_run_until_execute(cli, admin, orders):
    commit(admin, "gr-reset", {0: 7, 1: 3})
    dry = cli("groups", "reset-offsets", "gr-reset", "--all-topics", "--to-earliest")
    assert dry.code == 0 and dry.err == "Dry run: nothing was committed; add --execute to commit these offsets.\n"
    assert dry.lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]
    assert [line.split()[2:] for line in dry.lines[1:]] == [["0", "7", "0"], ["1", "3", "0"]]
    assert committed(admin, "gr-reset") == {0: 7, 1: 3}
    assert cli("groups", "reset-offsets", "gr-reset", "--all-topics", "--to-earliest", "--dry-run").code == 0
    assert committed(admin, "gr-reset") == {0: 7, 1: 3}
    done = cli("groups", "reset-offsets", "gr-reset", "--all-topics", "--to-earliest", "--execute")
    assert done.code == 0 and done.err == "" and done.out == dry.out
    assert committed(admin, "gr-reset") == {0: 0, 1: 0}


@pytest.mark.parametrize(("target", "expected"), [
    (["--to-latest"], {0: 10, 1: 10}),
    (["--to-offset", "8"], {0: 8, 1: 8}),
    (["--to-offset", "99"], {0: 10, 1: 10}),  # clamped to the end, as Kafka's tool does
    (["--shift-by", "-3"], {0: 2, 1: 0}),  # 5-3, and 2-3 clamped to the start
    (["--shift-by", "4"], {0: 9, 1: 6}),
    (["--to-datetime", "1004"], {0: 4, 1: 4}),  # milliseconds: the first record at or after
    (["--to-datetime", "1970-01-01T00:00:01.007+00:00"], {0: 7, 1: 7}),
    (["--to-datetime", "2100-01-01T00:00:00Z"], {0: 10, 1: 10}),  # after every record: the end
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_reset_targets(cli, admin, orders, target, expected):
    group = f"gr-target-{abs(hash(tuple(target)))}"
    commit(admin, group, {0: 5, 1: 2})
    result = cli("groups", "reset-offsets", group, "--topic", TOPIC, *target, "--execute", "--json")
    assert result.code == 0, result.err
    assert {r["partition"]: r["new_offset"] for r in map(json.loads, result.lines)} == expected
    assert committed(admin, group) == expected


def test_reset_some_partitions_of_a_topic(cli, admin, orders):
    commit(admin, "gr-some", {0: 5, 1: 5})
    assert cli("groups", "reset-offsets", "gr-some", "--topic", f"{TOPIC}:1", "--to-offset", "1", "--execute").code == 0
    assert committed(admin, "gr-some") == {0: 5, 1: 1}


def test_shift_needs_a_committed_offset(cli, admin, orders):
    commit(admin, "gr-shift", {0: 5})
    result = cli("groups", "reset-offsets", "gr-shift", "--topic", TOPIC, "--shift-by", "1")
    assert result.code == 1 and result.err == (
        f"kproto: error: group 'gr-shift' has no committed offset to shift on {TOPIC}:1\n")


def test_delete(cli, admin, orders):
    commit(admin, "gr-del-1", {0: 1})
    commit(admin, "gr-del-2", {0: 1})
    result = cli("groups", "delete", "gr-del-1", "gr-del-2")
    assert result.code == 0 and result.lines == ["Deleted group gr-del-1.", "Deleted group gr-del-2."]
    assert committed(admin, "gr-del-1") == {}


def test_describe_as_a_subprocess(run_process, broker, admin, orders):
    commit(admin, "gr-sub", {0: 9})
    done = run_process("groups", "describe", "gr-sub", "--bootstrap-servers", broker.bootstrap_servers)
    assert done.returncode == 0
    assert done.stdout.decode().splitlines()[2].split()[:6] == ["gr-sub", TOPIC, "0", "9", "10", "1"]
