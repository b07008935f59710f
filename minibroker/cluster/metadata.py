"""The cluster's metadata: the records the controller writes, and the image built from them.

As in KRaft (KIP-500, KIP-631), the controller owns the cluster's metadata as a log of
records; every broker applies them in order to its :class:`MetadataImage` and acts on
what changed (:class:`MetadataDelta`). The records carry Kafka's names and fields
(``RegisterBrokerRecord``, ``TopicRecord``, ``PartitionRecord``, ``PartitionChangeRecord``
...), in snake case.

Epochs (Kafka's rules): a broker's epoch is the offset of its ``RegisterBrokerRecord``; a
partition's leader epoch grows with every leader change, its partition epoch with every
change of its registration (leader or ISR).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "BrokerRegistration",
    "BrokerRegistrationChangeRecord",
    "ConfigRecord",
    "MetadataDelta",
    "MetadataImage",
    "NO_LEADER",
    "PartitionChangeRecord",
    "PartitionRecord",
    "PartitionRegistration",
    "ProducerIdsRecord",
    "Record",
    "RegisterBrokerRecord",
    "RemoveTopicRecord",
    "TopicImage",
    "TopicRecord",
]

NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRegistration:
    """A partition's replicas, in-sync replicas, leader (-1: none) and epochs."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistration:
    """A registered broker: its epoch, endpoint, rack, and whether it is fenced."""

    broker_id: int
    broker_epoch: int
    incarnation_id: uuid.UUID
    host: str
    port: int
    rack: str | None
    fenced: bool


# -- records ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecord:
    """A broker registered (or registered again after a restart); it starts fenced."""

    broker_id: int
    broker_epoch: int
    incarnation_id: uuid.UUID
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecord:
    """A broker fenced (its session expired) or unfenced (caught up with the metadata)."""

    broker_id: int
    broker_epoch: int
    fenced: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecord:
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecord:
    """A new partition with its first registration."""

    topic_id: uuid.UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecord:
    """A change of a partition's ISR and/or leader (None: unchanged). Applying it bumps the
    partition epoch, and the leader epoch too when the leader changed (Kafka's
    ``PartitionRegistration.merge``)."""

    topic_id: uuid.UUID
    partition_id: int
    isr: tuple[int, ...] | None = None
    leader: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRecord:
    """A config set (value) or removed (None) on a resource (Kafka's ConfigResource types)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecord:
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdsRecord:
    """A block of producer ids handed to a broker: the next block starts at ``next_producer_id``."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


Record = (RegisterBrokerRecord | BrokerRegistrationChangeRecord | TopicRecord | PartitionRecord
          | PartitionChangeRecord | ConfigRecord | RemoveTopicRecord | ProducerIdsRecord)


# -- the image ----------------------------------------------------------------------------


@dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MetadataDelta:
    """What one :meth:`MetadataImage.apply` changed."""

    changed: frozenset[tuple[uuid.UUID, int]]  # partitions whose registration changed (or are new)
    created_topics: frozenset[uuid.UUID]
    deleted_topics: dict[uuid.UUID, str]  # id -> name
    brokers: frozenset[int]  # brokers whose registration changed


@dataclass(slots=True)
class MetadataImage:
    """The cluster's metadata as of record ``offset`` (-1: none applied)."""

    offset: int = -1
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topics: dict[uuid.UUID, TopicImage] = field(default_factory=dict)
    next_producer_id: int = 0

    def apply(self, offset: int, records: Sequence[Record]) -> MetadataDelta:
        """Apply ``records``, the last of which is at ``offset``; return what changed."""
        raise NotImplementedError("filled in by the controller's work package (issue 13)")

    def topic_by_name(self, name: str) -> TopicImage | None:
        return next((t for t in self.topics.values() if t.name == name), None)

    def live_brokers(self) -> list[BrokerRegistration]:
        """The unfenced brokers, by id."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]
