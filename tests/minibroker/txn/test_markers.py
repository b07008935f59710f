"""Transaction markers: the one entry point that writes them (issue 14)."""

import asyncio

import pytest

from kproto import AdminClient, Producer
from kproto.records import ControlType, parse_control_record, read_batches
from kproto.admin import NewTopic


def _write(broker, **kwargs):
    state = broker._server.state
    return asyncio.run_coroutine_threadsafe(state.write_txn_markers(**kwargs), broker._loop).result(10)


def _batches(broker, topic, index=0):
    log = broker._server.state.topics[topic].partitions[index].log
    return list(read_batches(log.read(log.log_start_offset, 1 << 20)))


@pytest.mark.parametrize("commit", [True, False])
def test_a_marker_is_a_control_batch_at_the_log_end(broker, commit):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("t", 2)])
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send("t", b"v", partition=0).result(10)
    codes = _write(broker, producer_id=7, producer_epoch=3, coordinator_epoch=5, commit=commit,
                   partitions=[("t", 0), ("t", 1), ("t", 9), ("nope", 0)])
    assert codes == {("t", 0): 0, ("t", 1): 0, ("t", 9): 3, ("nope", 0): 3}
    for index, offset in ((0, 1), (1, 0)):
        marker = _batches(broker, "t", index)[-1]
        assert (marker.base_offset, marker.is_control, marker.is_transactional) == (offset, True, True)
        assert (marker.producer_id, marker.producer_epoch) == (7, 3)
        [record] = list(marker.records())
        assert parse_control_record(record) == (0, ControlType.COMMIT if commit else ControlType.ABORT)
        assert record.value == (5).to_bytes(6, "big")  # version 0 (int16), coordinator epoch (int32)
