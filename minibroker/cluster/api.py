"""What a broker asks the controller, and what it answers.

KRaft brokers talk to the controller with BrokerRegistration (62), BrokerHeartbeat (63),
AlterPartition (56) and AllocateProducerIds (67), and forward CreateTopics,
CreatePartitions, DeleteTopics, ElectLeaders, AlterConfigs and IncrementalAlterConfigs to
it (KIP-590). In a MiniCluster these are calls on a :class:`ControllerChannel`, with
dataclasses named and shaped after those RPCs: in-process
(:class:`~minibroker.cluster.quorum.Quorum`'s channel), or on the wire from a broker
process (:class:`~minibroker.cluster.remote.RemoteControllerChannel`), callers alike.
Error codes are Kafka's (``kproto.errors``).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from minibroker.authorizer import AclBinding, AclBindingFilter
from minibroker.cluster.metadata import BrokerEndpoint, MetadataImage, PartitionRegistration, Record

if TYPE_CHECKING:
    from minibroker.quotas import AlterEntry, AlterResult

__all__ = [
    "AlterConfigsResource",
    "AlterPartitionReply",
    "AlterPartitionRequest",
    "BrokerHeartbeatReply",
    "BrokerHeartbeatRequest",
    "BrokerRegistrationReply",
    "BrokerRegistrationRequest",
    "ClusterContext",
    "ConfigResult",
    "ControllerChannel",
    "ElectionResult",
    "ElectionType",
    "NewTopic",
    "QuorumLink",
    "ReplicaBrokerEpoch",
    "TopicResult",
    "asked_partitions",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationRequest:
    """BrokerRegistration (62): a broker starting (or restarting) joins the cluster."""

    broker_id: int
    incarnation_id: uuid.UUID
    host: str
    port: int
    rack: str | None
    #: every listener's advertised endpoint (Kafka's BrokerRegistrationRequest.Listeners);
    #: the first is ``host:port``
    listeners: tuple[BrokerEndpoint, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationReply:
    error_code: int
    broker_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatRequest:
    """BrokerHeartbeat (63): alive, and how far the broker has applied the metadata."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_shut_down: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatReply:
    error_code: int
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaBrokerEpoch:
    """An ISR member with the broker epoch its leader saw (AlterPartition v3's
    ``BrokerState``, KIP-903; renamed because minibroker has a ``BrokerState``)."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequest:
    """AlterPartition (56): a leader proposes a new ISR for one of its partitions."""

    broker_id: int
    broker_epoch: int
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[ReplicaBrokerEpoch, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionReply:
    """0 and the committed registration, or FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
    INELIGIBLE_REPLICA, STALE_BROKER_EPOCH, NOT_CONTROLLER, UNKNOWN_TOPIC_ID."""

    error_code: int
    registration: PartitionRegistration | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NewTopic:
    """One topic of a CreateTopics forwarded to the controller (-1: the broker defaults)."""

    name: str
    num_partitions: int
    replication_factor: int
    assignments: dict[int, tuple[int, ...]] | None = None
    configs: dict[str, str | None] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicResult:
    name: str
    topic_id: uuid.UUID | None
    error_code: int
    error_message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1


# -- config changes (AlterConfigs 33, IncrementalAlterConfigs 44, forwarded: KIP-590) ---------


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsResource:
    """One resource of an AlterConfigs or IncrementalAlterConfigs forwarded to the
    controller: its ``(name, operation, value)`` ops (``minibroker.topic_configs.SET``...),
    applied to its current configs, or to none when ``replace`` (AlterConfigs gives the
    resource's whole new set)."""

    resource_type: int
    resource_name: str
    ops: tuple[tuple[str, int, str | None], ...]
    replace: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigResult:
    """The answer for one :class:`AlterConfigsResource`."""

    error_code: int
    error_message: str | None = None


class ElectionType(enum.IntEnum):
    """ElectLeaders' ``election_type`` (Kafka's ``org.apache.kafka.common.ElectionType``, KIP-460)."""

    PREFERRED = 0  # the first replica of the assignment, if it is live and in the ISR
    UNCLEAN = 1  # only for a partition without a leader: a live replica, from outside the ISR if need be


def asked_partitions(topic_partitions: Sequence[Any] | None) -> dict[str, list[int]] | None:
    """An ElectLeaders request's ``topic_partitions`` as ``{topic: partitions}``; None
    (every partition) stays None. Read by the handler and by the controller endpoint."""
    if topic_partitions is None:
        return None
    asked: dict[str, list[int]] = {}
    for t in topic_partitions:
        asked.setdefault(t.topic, []).extend(t.partitions)
    return asked


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectionResult:
    """One partition's answer to an ElectLeaders (43): 0, or ELECTION_NOT_NEEDED,
    PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
    UNKNOWN_TOPIC_OR_PARTITION."""

    topic: str
    partition: int
    error_code: int
    error_message: str | None = None


class ControllerChannel(Protocol):
    """A broker's way to the active controller (one per broker)."""

    @property
    def active_controller_id(self) -> int: ...

    async def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationReply: ...

    async def heartbeat(self, request: BrokerHeartbeatRequest) -> BrokerHeartbeatReply: ...

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionReply: ...

    async def create_topics(self, topics: Sequence[NewTopic], *, validate_only: bool) -> list[TopicResult]: ...

    async def create_partitions(self, name: str, count: int, assignments: Sequence[tuple[int, ...]] | None, *,
                                validate_only: bool) -> TopicResult: ...

    async def delete_topics(self, topic_ids: Sequence[uuid.UUID]) -> list[TopicResult]: ...

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        """A block of producer ids for this broker: ``(first, count)``."""
        ...

    async def alter_configs(self, resources: Sequence[AlterConfigsResource], *,
                            validate_only: bool) -> list[ConfigResult]:
        """Validate and commit config changes (ConfigRecords): one result per resource."""
        ...

    async def alter_client_quotas(self, entries: Sequence[AlterEntry], *, validate_only: bool) -> list[AlterResult]:
        """AlterClientQuotas (49) forwarded to the controller: validate and commit the
        changes (ClientQuotaRecords); one ``(entity, error code, message)`` per distinct
        entity (NOT_CONTROLLER for each when there is no active controller)."""
        ...
    async def create_acls(self, acls: Sequence[AclBinding]) -> None: ...

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]: ...

    async def alter_user_scram_credentials(self, request: Any) -> list[tuple[str, int, str | None]]:
        """AlterUserScramCredentials (51, its wire request) forwarded to the controller:
        validate and commit the changes (UserScramCredentialRecords); one ``(user, error
        code, message)`` per user named (NOT_CONTROLLER for each when there is no active
        controller)."""
        ...

    async def elect_leaders(self, election_type: ElectionType,
                            partitions: Mapping[str, Sequence[int]] | None) -> list[ElectionResult]:
        """ElectLeaders (43) forwarded to the controller: one result per partition asked
        (None: every partition, only those where an election was needed answered).
        Raises NotControllerError when there is no active controller."""
        ...


class QuorumLink(Protocol):
    """What a :class:`~minibroker.cluster.node.ClusterNode` needs of the controller quorum:
    the :class:`~minibroker.cluster.quorum.Quorum` itself in process, or its wire face in a
    broker process (:class:`~minibroker.cluster.remote.RemoteQuorum`)."""

    def channel_for(self, node_id: int) -> ControllerChannel: ...

    def renew_lease(self, node_id: int) -> None: ...

    def subscribe(self, node_id: int, deliver: Callable[[int, Sequence[Record]], None],
                  from_offset: int = 0) -> None: ...

    def unsubscribe(self, node_id: int) -> None: ...


@dataclass(slots=True)
class ClusterContext:
    """What a broker of a cluster knows of it: its id, the channel to the controller, the
    metadata image it has applied, and the epoch its registration gave it."""

    node_id: int
    channel: ControllerChannel
    image: MetadataImage
    broker_epoch: int = -1  # set after registration
