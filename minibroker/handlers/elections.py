"""ElectLeaders v0-2 (KIP-183; v1's election types, KIP-460).

Behaviour: in a MiniCluster the request goes to the controller
(:meth:`minibroker.cluster.controller.Controller.elect_leaders`, Kafka's
``ReplicationControlManager.electLeaders``), which answers per partition: 0 (a new leader
was elected), ELECTION_NOT_NEEDED (PREFERRED: the preferred replica, the first of the
assignment, already leads; UNCLEAN: the partition has a leader), PREFERRED_LEADER_NOT_AVAILABLE
(the preferred replica is dead or not in the ISR), ELIGIBLE_LEADERS_NOT_AVAILABLE (UNCLEAN:
no live replica at all), UNKNOWN_TOPIC_OR_PARTITION. UNCLEAN elects a live ISR member when
there is one, and only then a live replica outside the ISR (whose ISR becomes just it),
whatever the topic's ``unclean.leader.election.enable``. Null ``topic_partitions`` is every
partition, and the answer lists only those where an election was needed. A single
MiniBroker's partitions are led by their only replica, so each is ELECTION_NOT_NEEDED,
as a one-broker Kafka answers.
Version notes: v0 has no election type (PREFERRED) and no top-level error code; an unknown
election type is INVALID_REQUEST there, as Kafka's controller answers; with no active
controller the top-level code is NOT_CONTROLLER and every partition asked carries it.
v2 is the first flexible version.
Not implemented: ``timeout_ms`` is not waited on (the controller commits at once and the
brokers apply it before the answer leaves); ALTER on the cluster is needed (Kafka's ``handleElectLeaders``), else
CLUSTER_AUTHORIZATION_FAILED for the request and each partition.
"""

from collections.abc import Mapping, Sequence

from kproto.errors import (
    ClusterAuthorizationFailedError,
    ElectionNotNeededError,
    InvalidRequestError,
    NotControllerError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import ElectLeadersResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.cluster.api import ElectionResult, ElectionType, asked_partitions
from minibroker.handlers import handles

Result = ElectLeadersResponse.ReplicaElectionResult
PartitionResult = ElectLeadersResponse.PartitionResult


def _single_broker(state, asked):
    """A single broker: every partition's only replica is its preferred leader."""
    results = []
    for name, partitions in (asked or {}).items():
        topic = state.topics.get(name)
        for index in partitions:
            if topic is None or not 0 <= index < len(topic.partitions):
                results.append(ElectionResult(topic=name, partition=index,
                                              error_code=UnknownTopicOrPartitionError.code,
                                              error_message=f"No such partition as {name}-{index}"))
            else:
                results.append(ElectionResult(topic=name, partition=index, error_code=ElectionNotNeededError.code,
                                              error_message=ElectionNotNeededError.name))
    return results


def elect_leaders_response(results: Sequence[ElectionResult], error_code: int = 0) -> ElectLeadersResponse:
    """The ElectLeaders answer: ``results`` grouped by topic, and the top-level
    ``error_code`` (a refused request). Also the controller endpoint's answer to a
    forwarded ElectLeaders (``MiniCluster(processes=True)``)."""
    by_topic: dict[str, list[PartitionResult]] = {}
    for r in results:
        by_topic.setdefault(r.topic, []).append(PartitionResult(
            partition_id=r.partition, error_code=r.error_code, error_message=r.error_message))
    return ElectLeadersResponse(error_code=error_code, replica_election_results=[
        Result(topic=topic, partition_result=partitions) for topic, partitions in by_topic.items()])


@handles(ApiKey.ELECT_LEADERS, 0, 2)
async def handle(state, header, request):
    election_type = request.election_type if header.api_version >= 1 else ElectionType.PREFERRED
    asked = asked_partitions(request.topic_partitions)
    if not state.authorizer.allows(header, AclOperation.ALTER, ResourceType.CLUSTER):  # KafkaApis: ALTER on the cluster
        return refused(asked, ClusterAuthorizationFailedError.code, "Authorization failed.")
    if election_type not in tuple(ElectionType):
        # ReplicationControlManager.electionType: "Unknown election type"
        return refused(asked, InvalidRequestError.code, f"Unknown election type {election_type}")
    if state.cluster is None:
        return elect_leaders_response(_single_broker(state, asked))
    try:
        results = await state.cluster.channel.elect_leaders(ElectionType(election_type), asked)
    except NotControllerError as exc:
        return refused(asked, NotControllerError.code, str(exc))
    return elect_leaders_response(results)


def refused(asked: Mapping[str, Sequence[int]] | None, code: int, message: str | None) -> ElectLeadersResponse:
    """The whole request refused: the top-level code, and each partition asked with it."""
    return elect_leaders_response([ElectionResult(topic=name, partition=index, error_code=code, error_message=message)
                      for name, partitions in (asked or {}).items() for index in partitions], code)
