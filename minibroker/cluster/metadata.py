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

import base64
import json
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from kproto.errors import NotControllerError
from kproto.security.scram import ScramCredential
from minibroker.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = [
    "AccessControlEntryRecord",
    "BROKER_RESOURCE",
    "BrokerRegistration",
    "BrokerRegistrationChangeRecord",
    "BrokerEndpoint",
    "ClientQuotaRecord",
    "ConfigRecord",
    "MetadataDelta",
    "MetadataImage",
    "MetadataLog",
    "NO_LEADER",
    "PartitionChangeRecord",
    "PartitionRecord",
    "PartitionRegistration",
    "ProducerIdsRecord",
    "Record",
    "RegisterBrokerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveTopicRecord",
    "RemoveUserScramCredentialRecord",
    "TopicImage",
    "TopicRecord",
    "UserScramCredentialRecord",
    "TOPIC_RESOURCE",
    "decode_record",
    "encode_record",
    "merge_partition_change",
]

NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER
log = logging.getLogger("minibroker.cluster")

TOPIC_RESOURCE = 2  # Kafka's ConfigResource.Type.TOPIC, the resource_type of a topic's ConfigRecord
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER: a broker's dynamic configs (name: its id; "": the cluster default)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRegistration:
    """A partition's replicas, in-sync replicas, leader (-1: none) and epochs."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int


#: One listener of a registered broker, as BrokerRegistration carries it in Kafka:
#: ``(name, host, port, security protocol)``.
BrokerEndpoint = tuple[str, str, int, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistration:
    """A registered broker: its epoch, endpoint, rack, and whether it is fenced.

    ``host``/``port`` are its first listener's; ``listeners`` every listener's advertised
    endpoint (Kafka's ``BrokerRegistration.listeners``), empty in a registration written
    before minibroker kept them."""

    broker_id: int
    broker_epoch: int
    incarnation_id: uuid.UUID
    host: str
    port: int
    rack: str | None
    fenced: bool
    listeners: tuple[BrokerEndpoint, ...] = ()

    def endpoint(self, listener_name: str) -> tuple[str, int] | None:
        """``(host, port)`` of the broker's listener of that name; None when it has none
        (Kafka's ``BrokerRegistration.node(listener)``: such a broker is left out of the
        answers of that listener's clients). A registration without listeners answers its
        one endpoint."""
        if not self.listeners:
            return self.host, self.port
        for name, host, port, _ in self.listeners:
            if name == listener_name:
                return host, port
        return None


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
    listeners: tuple[BrokerEndpoint, ...] = ()


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
class ClientQuotaRecord:
    """A client quota key set (``value``) or removed (``remove``) on an entity (KRaft's
    ``ClientQuotaRecord``): ``entity`` is ``((type, name or None), ...)`` sorted by type, as
    :data:`minibroker.quotas.Entity`."""

    entity: tuple[tuple[str, str | None], ...]
    key: str
    value: float = 0.0
    remove: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class UserScramCredentialRecord:
    """A SCRAM user's credential for one mechanism, set (KRaft's ``UserScramCredentialRecord``,
    KIP-554): the salt, StoredKey and ServerKey, never the password."""

    name: str
    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveUserScramCredentialRecord:
    """A SCRAM user's credential for one mechanism, deleted (KRaft's record of that name)."""

    name: str
    mechanism: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecord:
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdsRecord:
    """A block of producer ids handed to a broker: the next block starts at ``next_producer_id``."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryRecord:
    """An ACL (KRaft's ``AccessControlEntryRecord``): the controller's id for it, then the
    ACL's fields as Kafka's wire codes (:class:`~minibroker.authorizer.AclBinding`)."""

    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def of(cls, acl_id: uuid.UUID, acl: AclBinding) -> AccessControlEntryRecord:
        return cls(id=acl_id, resource_type=acl.resource_type, resource_name=acl.resource_name,
                   pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host, operation=acl.operation,
                   permission_type=acl.permission_type)

    def binding(self) -> AclBinding:
        return AclBinding(ResourceType(self.resource_type), self.resource_name, PatternType(self.pattern_type),
                          self.principal, self.host, AclOperation(self.operation),
                          AclPermissionType(self.permission_type))


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveAccessControlEntryRecord:
    """An ACL deleted (KRaft's ``RemoveAccessControlEntryRecord``), by its id."""

    id: uuid.UUID


Record = (RegisterBrokerRecord | BrokerRegistrationChangeRecord | TopicRecord | PartitionRecord
          | PartitionChangeRecord | ConfigRecord | RemoveTopicRecord | ProducerIdsRecord | ClientQuotaRecord
          | AccessControlEntryRecord | RemoveAccessControlEntryRecord | UserScramCredentialRecord
          | RemoveUserScramCredentialRecord)


def merge_partition_change(current: PartitionRegistration, change: PartitionChangeRecord) -> PartitionRegistration:
    """``current`` with ``change`` applied (Kafka's ``PartitionRegistration.merge``): a new
    leader (-1 included) bumps the leader epoch; any change bumps the partition epoch."""
    leader = current.leader if change.leader is None else change.leader
    return PartitionRegistration(
        replicas=current.replicas,
        isr=current.isr if change.isr is None else tuple(change.isr),
        leader=leader,
        leader_epoch=current.leader_epoch + (leader != current.leader),
        partition_epoch=current.partition_epoch + 1)


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
    configs: frozenset[uuid.UUID] = frozenset()  # topics whose configs changed (ConfigRecord)
    broker_configs: frozenset[str] = frozenset()  # BROKER resources whose configs changed ("": the default)
    client_quotas: bool = False  # a ClientQuotaRecord was applied
    acls: bool = False  # an ACL was created or removed


@dataclass(slots=True)
class MetadataImage:
    """The cluster's metadata as of record ``offset`` (-1: none applied)."""

    offset: int = -1
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topics: dict[uuid.UUID, TopicImage] = field(default_factory=dict)
    next_producer_id: int = 0
    # Dynamic broker configs (KIP-226) by BROKER resource name: a broker id, or "" for the
    # cluster-wide default.
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    # Client quotas (KIP-546): entity -> key -> value. Changed in place: a broker's
    # minibroker.quotas.ClientQuotas enforces this very dict.
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    # The cluster's ACLs by the controller's id for each (KRaft's AclsImage).
    acls: dict[uuid.UUID, AccessControlEntryRecord] = field(default_factory=dict)
    # SCRAM users (KIP-554): (user, mechanism) -> credential. Changed in place: a broker's
    # minibroker.scram_credentials.ScramCredentials authenticates against this very dict.
    scram_credentials: dict[tuple[str, str], ScramCredential] = field(default_factory=dict)

    def apply(self, offset: int, records: Sequence[Record]) -> MetadataDelta:
        """Apply ``records``, the last of which is at ``offset``; return what changed.

        Every record is applied as KRaft's image builders apply theirs: a registration
        replaces the broker's (fenced), a partition change merges into the registration
        and bumps its epochs (:func:`merge_partition_change`), a topic removal drops its
        partitions, a config record sets or removes (value None) a topic's config or a
        broker's dynamic config (KRaft's ``ConfigRecord``), a client quota record sets or removes a key
        of an entity's quotas, an ACL record adds or removes an ACL by id
        (``AccessControlEntryRecord``, ``RemoveAccessControlEntryRecord``), a
        (Remove)UserScramCredentialRecord sets or deletes a SCRAM user's credential. A record naming
        something the image does not hold (a change of a
        removed topic) is ignored, as the controller never writes one.
        """
        changed: set[tuple[uuid.UUID, int]] = set()
        created: set[uuid.UUID] = set()
        deleted: dict[uuid.UUID, str] = {}
        brokers: set[int] = set()
        configs: set[uuid.UUID] = set()
        broker_configs: set[str] = set()
        client_quotas = False
        acls = False
        for record in records:
            match record:
                case RegisterBrokerRecord():
                    self.brokers[record.broker_id] = BrokerRegistration(
                        broker_id=record.broker_id, broker_epoch=record.broker_epoch,
                        incarnation_id=record.incarnation_id, host=record.host, port=record.port,
                        rack=record.rack, fenced=True, listeners=record.listeners)
                    brokers.add(record.broker_id)
                case BrokerRegistrationChangeRecord():
                    broker = self.brokers.get(record.broker_id)
                    if broker is not None and broker.broker_epoch == record.broker_epoch:
                        self.brokers[record.broker_id] = replace(broker, fenced=record.fenced)
                        brokers.add(record.broker_id)
                case TopicRecord():
                    self.topics[record.topic_id] = TopicImage(name=record.name, topic_id=record.topic_id)
                    created.add(record.topic_id)
                case PartitionRecord():
                    topic = self.topics.get(record.topic_id)
                    if topic is not None:
                        topic.partitions[record.partition_id] = PartitionRegistration(
                            replicas=tuple(record.replicas), isr=tuple(record.isr), leader=record.leader,
                            leader_epoch=record.leader_epoch, partition_epoch=record.partition_epoch)
                        changed.add((record.topic_id, record.partition_id))
                case PartitionChangeRecord():
                    topic = self.topics.get(record.topic_id)
                    current = topic.partitions.get(record.partition_id) if topic is not None else None
                    if topic is not None and current is not None:
                        topic.partitions[record.partition_id] = merge_partition_change(current, record)
                        changed.add((record.topic_id, record.partition_id))
                case ConfigRecord() if record.resource_type == BROKER_RESOURCE:
                    held = self.broker_configs.setdefault(record.resource_name, {})
                    if record.value is None:
                        held.pop(record.name, None)
                    else:
                        held[record.name] = record.value
                    broker_configs.add(record.resource_name)
                case ConfigRecord():
                    topic = self.topic_by_name(record.resource_name) if record.resource_type == TOPIC_RESOURCE else None
                    if topic is not None:
                        if record.value is None:
                            topic.configs.pop(record.name, None)
                        else:
                            topic.configs[record.name] = record.value
                        configs.add(topic.topic_id)
                case RemoveTopicRecord():
                    topic = self.topics.pop(record.topic_id, None)
                    if topic is not None:
                        deleted[record.topic_id] = topic.name
                        created.discard(record.topic_id)
                        configs.discard(record.topic_id)
                        changed.difference_update({(record.topic_id, p) for p in topic.partitions})
                case ProducerIdsRecord():
                    self.next_producer_id = record.next_producer_id
                case ClientQuotaRecord():  # ClientQuotaControlManager.replay
                    quotas = self.client_quotas.setdefault(record.entity, {})
                    if record.remove:
                        quotas.pop(record.key, None)
                        if not quotas:
                            del self.client_quotas[record.entity]
                    else:
                        quotas[record.key] = record.value
                    client_quotas = True
                case AccessControlEntryRecord():
                    self.acls[record.id] = record
                    acls = True
                case RemoveAccessControlEntryRecord():
                    acls = self.acls.pop(record.id, None) is not None or acls
                case UserScramCredentialRecord():  # ScramControlManager.replay
                    self.scram_credentials[(record.name, record.mechanism)] = ScramCredential(
                        record.salt, record.stored_key, record.server_key, record.iterations)
                case RemoveUserScramCredentialRecord():
                    self.scram_credentials.pop((record.name, record.mechanism), None)
                case _:
                    raise TypeError(f"not a metadata record: {record!r}")
        self.offset = offset
        return MetadataDelta(changed=frozenset(changed), created_topics=frozenset(created),
                             deleted_topics=deleted, brokers=frozenset(brokers), configs=frozenset(configs),
                             broker_configs=frozenset(broker_configs), client_quotas=client_quotas, acls=acls)

    def topic_by_name(self, name: str) -> TopicImage | None:
        return next((t for t in self.topics.values() if t.name == name), None)

    def live_brokers(self) -> list[BrokerRegistration]:
        """The unfenced brokers, by id."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]


# -- the log ------------------------------------------------------------------------------

_RECORD_TYPES: dict[str, type] = {t.__name__: t for t in (
    RegisterBrokerRecord, BrokerRegistrationChangeRecord, TopicRecord, PartitionRecord,
    PartitionChangeRecord, ConfigRecord, RemoveTopicRecord, ProducerIdsRecord, ClientQuotaRecord,
    AccessControlEntryRecord, RemoveAccessControlEntryRecord, UserScramCredentialRecord,
    RemoveUserScramCredentialRecord)}
_UUID_FIELDS = frozenset({"topic_id", "incarnation_id", "id"})
_TUPLE_FIELDS = frozenset({"replicas", "isr"})
_BYTES_FIELDS = frozenset({"salt", "stored_key", "server_key"})  # a UserScramCredentialRecord's, in base64


def _encode(record: Record) -> dict[str, object]:
    data: dict[str, object] = {"type": type(record).__name__}
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name in _BYTES_FIELDS:
            data[f.name] = base64.b64encode(value).decode("ascii")
            continue
        data[f.name] = str(value) if isinstance(value, uuid.UUID) else list(value) if isinstance(value, tuple) else value
    return data


def _decode(data: dict[str, object]) -> Record:
    kind = _RECORD_TYPES[str(data.pop("type"))]
    for name in _UUID_FIELDS & data.keys():
        data[name] = uuid.UUID(str(data[name]))
    for name in _TUPLE_FIELDS & data.keys():
        if data[name] is not None:
            data[name] = tuple(data[name])  # type: ignore[arg-type]
    for name in _BYTES_FIELDS & data.keys():
        data[name] = base64.b64decode(str(data[name]))
    endpoints = data.get("listeners")
    if isinstance(endpoints, list):  # a RegisterBrokerRecord's endpoints
        data["listeners"] = tuple(tuple(e) for e in endpoints)
    if "entity" in data:  # a ClientQuotaRecord's (type, name) pairs
        data["entity"] = tuple(tuple(pair) for pair in data["entity"])  # type: ignore[union-attr]
    return kind(**data)  # type: ignore[no-any-return]


def encode_record(record: Record) -> bytes:
    """``record`` as the JSON object the log writes (minibroker's encoding, not Kafka's
    metadata record format): the value of a record in a metadata Fetch (process mode)."""
    return json.dumps(_encode(record), separators=(",", ":")).encode()


def decode_record(data: bytes) -> Record:
    """The record :func:`encode_record` wrote.

    Raises:
        ValueError: ``data`` is not such a record.
    """
    try:
        return _decode(dict(json.loads(data)))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a metadata record: {exc}") from exc


class MetadataLog:
    """The cluster's metadata log: records at consecutive offsets from 0, each written by a
    controller epoch.

    Kafka keeps this log in ``__cluster_metadata``, replicated by Raft among the controllers
    (KIP-500, KIP-595). A MiniCluster keeps one shared log instead (its controllers are
    objects in one process); what a client can see of Raft is kept: every controller has an
    epoch, a new one claims the log with :meth:`begin_epoch`, and from then on an append by
    an older epoch (a deposed controller whose coroutine still runs) raises
    :class:`~kproto.errors.NotControllerError`.

    On disk (``path``, else in memory) it is JSON lines, one per append (its records, all
    or none: ``{"offset", "epoch", "records": [{"type", ...fields}]}``) and one per epoch
    claimed (``{"epoch"}``), each written and fsynced before the call returns. **Not**
    Kafka's ``__cluster_metadata`` format. A torn last line (a crash mid-write, so a commit
    that never returned) is dropped when the file is opened again, and the file cut back to
    its last whole line; a damaged whole line is corruption, and opening refuses with
    ValueError naming the line.
    """

    def __init__(self, path: Path | None):
        self.path = path
        self._entries: list[tuple[int, Record]] = []  # (controller epoch, record); offset = index
        self.epoch = 0  # the newest controller epoch that claimed the log
        self._file = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._load(path)
            self._file = open(path, "ab")  # noqa: SIM115 - kept open, closed by close()

    def _load(self, path: Path) -> None:
        if not path.exists():
            return
        raw = path.read_bytes()
        *lines, tail = raw.split(b"\n")  # every line written ends with its newline
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                entry = json.loads(line)
                epoch = int(entry["epoch"])
                if "records" in entry:
                    if int(entry["offset"]) != len(self._entries):
                        raise ValueError(f"offset {entry['offset']}, expected {len(self._entries)}")
                    records = [_decode(dict(r)) for r in entry["records"]]
                    self._entries.extend((epoch, r) for r in records)
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}: line {number} is not a metadata log entry: {exc}") from exc
            self.epoch = max(self.epoch, epoch)
        if tail:  # a crash mid-write: that commit never returned, so nothing lost is acknowledged
            log.warning("%s: dropping a torn last line of %d bytes", path, len(tail))
            with open(path, "r+b") as f:
                f.truncate(len(raw) - len(tail))

    @property
    def end_offset(self) -> int:
        """The offset the next record gets."""
        return len(self._entries)

    def _write(self, line: dict[str, object]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def begin_epoch(self, controller_epoch: int) -> None:
        """A new controller claims the log: appends of older epochs are refused from now on."""
        if controller_epoch <= self.epoch:
            raise NotControllerError(f"controller epoch {controller_epoch} is not newer than {self.epoch}")
        self._write({"epoch": controller_epoch})
        self.epoch = controller_epoch

    def append(self, controller_epoch: int, records: Sequence[Record]) -> int:
        """Append ``records`` (committed once this returns); the offset of the last one.

        Raises:
            NotControllerError: ``controller_epoch`` is not the newest (a deposed controller).
        """
        if controller_epoch != self.epoch:
            raise NotControllerError(
                f"controller epoch {controller_epoch} was deposed; the active controller's is {self.epoch}")
        if not records:
            return self.end_offset - 1
        first = self.end_offset
        self._write({"offset": first, "epoch": controller_epoch, "records": [_encode(r) for r in records]})
        self._entries.extend((controller_epoch, r) for r in records)
        return self.end_offset - 1

    def read(self, from_offset: int) -> list[tuple[int, Record]]:
        """``(offset, record)`` of every record from ``from_offset`` on."""
        start = max(from_offset, 0)
        return [(offset, record) for offset, (_, record) in enumerate(self._entries[start:], start)]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
