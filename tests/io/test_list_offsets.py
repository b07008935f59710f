"""ListOffsets, one owner (kproto.io.list_offsets) and its special timestamps named once
(kproto.protocol.timestamps), against a real broker (issue 12)."""

import asyncio

import pytest

from kproto.config import ClientConfig
from kproto.io import Cluster
from kproto.io.list_offsets import list_offsets, timestamp_of
from kproto.producer import Producer
from kproto.protocol.timestamps import OffsetTimestamp, list_offsets_min_version
from kproto.structs import TopicPartition
from minibroker import MiniBroker

TP = TopicPartition("listed", 0)


@pytest.fixture(scope="module")
def broker():
    with MiniBroker() as b:
        with Producer(bootstrap_servers=b.bootstrap_servers) as producer:
            for i, ts in enumerate((1000, 3000, 2000)):
                producer.send(TP.topic, b"%d" % i, partition=0, timestamp_ms=ts)
            producer.flush()
        yield b


def test_the_special_timestamps_are_kafkas():
    """Java's ListOffsetsRequest: LATEST_TIMESTAMP -1, EARLIEST_TIMESTAMP -2, MAX_TIMESTAMP -3."""
    assert (OffsetTimestamp.LATEST, OffsetTimestamp.EARLIEST, OffsetTimestamp.MAX_TIMESTAMP) == (-1, -2, -3)
    assert timestamp_of("earliest") == -2 and timestamp_of("LATEST") == -1 and timestamp_of("max_timestamp") == -3
    assert timestamp_of(1234) == 1234
    with pytest.raises(KeyError):
        timestamp_of("newest")


def test_max_timestamp_needs_version_7():
    """KIP-734: a broker before ListOffsets v7 does not know -3."""
    assert list_offsets_min_version([-1, -2, 5000]) == 0
    assert list_offsets_min_version([-1, OffsetTimestamp.MAX_TIMESTAMP]) == 7


def test_list_offsets_answers_each_timestamp(broker):
    async def main():
        cluster = Cluster(ClientConfig("consumer", {"bootstrap.servers": broker.bootstrap_servers}))
        try:
            await cluster.refresh([TP.topic])
            leader = cluster.leader(TP.topic, 0)
            found = {}
            for ts in (OffsetTimestamp.EARLIEST, OffsetTimestamp.LATEST, OffsetTimestamp.MAX_TIMESTAMP, 2500, 9999):
                found[ts] = (await list_offsets(cluster, leader, {TP: ts}, read_committed=False))[TP]
            missing = TopicPartition("listed", 7)
            unknown = (await list_offsets(cluster, leader, {missing: -1}, read_committed=True))[missing]
        finally:
            await cluster.close()
        return found, unknown

    found, unknown = asyncio.run(main())
    assert [(found[ts].error_code, found[ts].offset) for ts in found] == [(0, 0), (0, 3), (0, 1), (0, 1), (0, -1)]
    assert found[OffsetTimestamp.MAX_TIMESTAMP].timestamp == 3000
    assert unknown.error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
