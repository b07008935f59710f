"""The controller RPCs on the wire (issue 13, step 2, processes=True): each
:mod:`minibroker.cluster.api` request survives its trip through kproto's encoding at the
version the broker sends (and the answers it gets), and the metadata records through a
Fetch's record batch; without a controller the endpoint answers as the in-process channel."""

import asyncio
import uuid

import pytest

from kproto.errors import ElectionNotNeededError, InvalidConfigError, NotControllerError
from kproto.protocol.messages import REQUESTS, RESPONSES
from minibroker.cluster import remote
from minibroker.cluster.api import (
    AlterConfigsResource,
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ConfigResult,
    ElectionResult,
    ElectionType,
    NewTopic,
    ReplicaBrokerEpoch,
)
from minibroker.cluster.controller_server import ControllerServer
from minibroker.cluster.metadata import (
    MetadataLog,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from minibroker.cluster.quorum import Quorum
from minibroker.config import BrokerConfig
from minibroker.handlers.elections import elect_leaders_response, refused

_KEYS = {cls: key for key, cls in REQUESTS.items()}
_RESPONSE_KEYS = {cls: key for key, cls in RESPONSES.items()}


def _trip(message):
    """``message`` encoded at the version the broker sends it in (a request, or the
    answer to one), and decoded again."""
    cls = type(message)
    version = remote.VERSIONS[_KEYS[cls] if cls in _KEYS else _RESPONSE_KEYS[cls]]
    return cls.decode(message.encode(version), version)


def test_registration_heartbeat_and_alter_partition_survive_the_wire():
    reg = BrokerRegistrationRequest(broker_id=2, incarnation_id=uuid.uuid4(), host="127.0.0.1", port=9092, rack="b",
                                    listeners=(("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),
                                               ("SASL_SSL", "127.0.0.1", 9093, "SASL_SSL")))  # issue 15: every listener
    assert remote.registration_from_wire(_trip(remote.registration_to_wire(reg, "c"))) == reg
    beat = BrokerHeartbeatRequest(broker_id=2, broker_epoch=7, current_metadata_offset=40, want_shut_down=True)
    assert remote.heartbeat_from_wire(_trip(remote.heartbeat_to_wire(beat))) == beat
    alter = AlterPartitionRequest(broker_id=1, broker_epoch=3, topic_id=uuid.uuid4(), partition=4, leader_epoch=2,
                                  partition_epoch=5, new_isr=(ReplicaBrokerEpoch(broker_id=1, broker_epoch=3),
                                                              ReplicaBrokerEpoch(broker_id=0, broker_epoch=-1)))
    assert remote.alter_partition_from_wire(_trip(remote.alter_partition_to_wire(alter))) == alter


def test_forwarded_create_topics_survive_the_wire():
    topics = [NewTopic(name="a", num_partitions=3, replication_factor=2, configs={"cleanup.policy": "compact"}),
              NewTopic(name="b", num_partitions=-1, replication_factor=-1, assignments={0: (1, 2), 1: (2, 0)},
                       configs={})]
    assert remote.create_topics_from_wire(_trip(remote.create_topics_to_wire(topics, False))) == topics


def test_metadata_records_travel_in_one_batch_at_their_offsets():
    topic_id = uuid.uuid4()
    entries = [(7, RegisterBrokerRecord(broker_id=0, broker_epoch=7, incarnation_id=uuid.uuid4(), host="h",
                                        port=1, rack=None)),
               (8, TopicRecord(name="t", topic_id=topic_id)),
               (9, PartitionRecord(topic_id=topic_id, partition_id=0, replicas=(0, 1), isr=(0, 1), leader=0,
                                   leader_epoch=0, partition_epoch=0))]
    assert remote.read_metadata_records(remote.metadata_records(entries, controller_epoch=3)) == entries
    assert remote.metadata_records([], controller_epoch=3) is None


def test_forwarded_config_changes_survive_the_wire_each_kind_in_its_own_api():
    """Issue 13 step 2 (processes=True): a ``replace`` resource travels as AlterConfigs
    (33, the whole new set), the others as IncrementalAlterConfigs (44, their operations);
    the answers keep their codes and messages, in order."""
    replace = [AlterConfigsResource(resource_type=2, resource_name="t", ops=(("retention.ms", 0, "1000"),
                                                                            ("cleanup.policy", 0, None)),
                                    replace=True)]
    incremental = [AlterConfigsResource(resource_type=2, resource_name="t", ops=(("segment.ms", 0, "5"),
                                                                                ("retention.ms", 1, None),
                                                                                ("cleanup.policy", 2, "compact"))),
                   AlterConfigsResource(resource_type=4, resource_name="", ops=(("log.retention.ms", 3, "9"),))]
    for resources, api in ((replace, "AlterConfigsRequest"), (incremental, "IncrementalAlterConfigsRequest")):
        wire = remote.alter_configs_to_wire(resources, validate_only=True)
        assert type(wire).__name__ == api and wire.validate_only
        assert remote.alter_configs_from_wire(_trip(wire)) == resources
        results = [ConfigResult(error_code=0)] + [
            ConfigResult(error_code=InvalidConfigError.code, error_message="Invalid value x")] * (len(resources) - 1)
        answer = remote.config_results_to_wire(wire, results)
        assert type(answer).__name__ == api.replace("Request", "Response")
        assert [(r.resource_type, r.resource_name) for r in answer.responses] == [
            (r.resource_type, r.resource_name) for r in resources]
        assert remote.config_results_from_wire(_trip(answer)) == results
    with pytest.raises(ValueError, match="AlterConfigs"):  # AlterConfigs has no operations
        remote.alter_configs_to_wire([AlterConfigsResource(resource_type=2, resource_name="t",
                                                           ops=(("retention.ms", 1, None),), replace=True)], False)
    with pytest.raises(ValueError, match="one request"):
        remote.alter_configs_to_wire(replace + incremental, False)


def test_forwarded_elect_leaders_survives_the_wire():
    """Issue 13 step 2 (processes=True): ElectLeaders (43) both ways, every partition
    (None) included, per-partition errors and the top-level one with their messages."""
    for kind, partitions in ((ElectionType.PREFERRED, {"a": [0, 2], "b": [1]}), (ElectionType.UNCLEAN, None)):
        assert remote.elect_leaders_from_wire(_trip(remote.elect_leaders_to_wire(kind, partitions))) == (
            kind, partitions)
    results = [ElectionResult(topic="a", partition=0, error_code=0),
               ElectionResult(topic="a", partition=2, error_code=ElectionNotNeededError.code,
                              error_message="Leader election not needed for topic partition."),
               ElectionResult(topic="b", partition=1, error_code=0)]
    answer = _trip(elect_leaders_response(results))
    assert answer.error_code == 0 and remote.elections_from_wire(answer) == results
    answer = refused({"a": [0]}, NotControllerError.code, "no active controller")
    with pytest.raises(NotControllerError, match="no active controller"):
        remote.elections_from_wire(_trip(answer))


def test_config_changes_and_elections_without_a_controller_answer_as_in_process():
    """Issue 13 step 2 (processes=True): with no active controller, a broker process's
    alter_configs answers NOT_CONTROLLER per resource and elect_leaders raises
    NotControllerError, with the in-process channel's message; an unreachable endpoint
    answers NOT_CONTROLLER too."""
    resources = [AlterConfigsResource(resource_type=2, resource_name="t", ops=(("retention.ms", 0, "1"),)),
                 AlterConfigsResource(resource_type=2, resource_name="u", ops=(("retention.ms", 0, "2"),),
                                      replace=True)]

    async def outcomes(channel):
        configs = await channel.alter_configs(resources, validate_only=False)
        with pytest.raises(NotControllerError) as caught:
            await channel.elect_leaders(ElectionType.PREFERRED, {"t": [0]})
        return configs, str(caught.value)

    async def main():
        config = BrokerConfig({})
        quorum = Quorum(log=MetadataLog(None), config=config, clock_ms=lambda: 0)  # no lease: no controller
        server = ControllerServer(quorum, config)
        await server.start()
        remote_quorum = remote.RemoteQuorum(server.host, server.port, node_id=0, config=config,
                                            sasl=server.client_sasl)
        try:
            over_the_wire = await outcomes(remote_quorum.channel_for(0))
            in_process = await outcomes(quorum.channel_for(0))
            assert over_the_wire == in_process
            assert [r.error_code for r in over_the_wire[0]] == [NotControllerError.code] * 2
            await server.stop()  # unreachable
            configs, _ = await outcomes(remote_quorum.channel_for(0))
            assert [r.error_code for r in configs] == [NotControllerError.code] * 2
        finally:
            await remote_quorum.close()
            await server.stop()

    asyncio.run(main())
