"""Tests of kproto.protocol.messages: the table's shape, coverage and exported names."""

from __future__ import annotations

import pytest

import kproto.protocol as protocol
from kproto.protocol import messages as m
from kproto.protocol.messages import admin, connection, controller, data, groups, produce_fetch, txn
from kproto.protocol.spec import Route

#: The APIs the brief requires, with the lowest and highest version each must cover.
#: Lows: what kafka-python / aiokafka send (kafka-python: Produce v0-8, Fetch v0-11,
#: Metadata v0-8, ApiVersions v0-3), everything else from v0; highs: Kafka's JSON maxima.
REQUIRED = {
    "Produce": (0, 11), "Fetch": (0, 17), "ListOffsets": (0, 10), "Metadata": (0, 12),
    "OffsetCommit": (0, 9), "OffsetFetch": (0, 9), "FindCoordinator": (0, 6), "JoinGroup": (0, 9),
    "Heartbeat": (0, 4), "LeaveGroup": (0, 5), "SyncGroup": (0, 5), "DescribeGroups": (0, 5),
    "ListGroups": (0, 5), "SaslHandshake": (0, 1), "ApiVersions": (0, 4), "CreateTopics": (0, 7),
    "DeleteTopics": (0, 6), "DeleteRecords": (0, 2), "InitProducerId": (0, 5),
    "OffsetForLeaderEpoch": (0, 4), "AddPartitionsToTxn": (0, 5), "AddOffsetsToTxn": (0, 4),
    "EndTxn": (0, 5), "WriteTxnMarkers": (0, 1), "TxnOffsetCommit": (0, 4), "DescribeAcls": (0, 3),
    "CreateAcls": (0, 3), "DeleteAcls": (0, 3), "DescribeConfigs": (0, 4), "AlterConfigs": (0, 2),
    "DescribeLogDirs": (0, 4), "SaslAuthenticate": (0, 2), "CreatePartitions": (0, 3),
    "DeleteGroups": (0, 2), "ElectLeaders": (0, 2), "IncrementalAlterConfigs": (0, 1), "OffsetDelete": (0, 0),
    "DescribeClientQuotas": (0, 1), "AlterClientQuotas": (0, 1), "DescribeUserScramCredentials": (0, 0),
    "AlterUserScramCredentials": (0, 0), "DescribeCluster": (0, 1),
    "DescribeProducers": (0, 0), "DescribeTransactions": (0, 0), "ListTransactions": (0, 1),
    "ConsumerGroupHeartbeat": (0, 1), "ConsumerGroupDescribe": (0, 0),
    # broker -> controller (issue 13, MiniCluster(processes=True))
    "AlterPartition": (0, 3), "BrokerRegistration": (0, 4), "BrokerHeartbeat": (0, 1),
    "AllocateProducerIds": (0, 0),
}


def test_every_required_api_and_version_is_in_the_table() -> None:
    by_name = {a.name: a for a in m.TABLE}
    assert set(by_name) == set(REQUIRED)
    for name, (lo, hi) in REQUIRED.items():
        assert by_name[name].min_version <= lo and by_name[name].max_version >= hi, name


@pytest.mark.parametrize("module", [connection, produce_fetch, groups, txn, admin, controller], ids=lambda x: x.__name__)
def test_each_family_is_in_key_order(module) -> None:
    keys = [a.key for a in module.APIS]
    assert keys == sorted(keys)


def test_table_is_in_key_order_and_keys_are_unique() -> None:
    keys = [a.key for a in m.TABLE]
    assert keys == sorted(set(keys))


def test_every_entry_has_routing_and_notes() -> None:
    for a in m.TABLE:
        assert isinstance(a.route, Route)
        assert a.notes.strip(), a.name


def test_named_classes_match_the_table() -> None:
    for a in m.TABLE:
        assert getattr(m, a.name + "Request") is m.REQUESTS[a.key] is m.request_class(a.key)
        assert getattr(m, a.name + "Response") is m.RESPONSES[a.key] is m.response_class(a.key)
        assert a.name + "Request" in m.__all__ and a.name + "Response" in m.__all__
        assert m.ApiKey[_upper(a.name)] == a.key
    classes = [n for n in m.__all__ if n.endswith(("Request", "Response"))]
    assert len(classes) == 2 * len(m.TABLE)


def _upper(name: str) -> str:
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()


def test_public_names() -> None:
    for name in protocol.__all__:
        assert hasattr(protocol, name), name
    for mod in (m, connection, produce_fetch, groups, txn, admin, data):
        for name in mod.__all__:
            assert hasattr(mod, name), (mod.__name__, name)


def test_protocol_layer_does_no_io() -> None:
    """Sans-I/O: nothing under kproto.protocol imports sockets, asyncio or reads the clock."""
    import pathlib
    import re

    root = pathlib.Path(protocol.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(socket|asyncio|selectors|ssl|time)\b", text, re.M), path
