"""The controller on the wire: a broker process's way to the quorum in the parent process.

In ``MiniCluster(processes=True)`` each broker runs in a process of its own and the
:class:`~minibroker.cluster.quorum.Quorum` stays in the parent, served by a
:class:`~minibroker.cluster.controller_server.ControllerServer`. What a broker asks the
controller travels as Kafka's broker-to-controller RPCs (KIP-631): BrokerRegistration (62),
BrokerHeartbeat (63), AlterPartition (56), AllocateProducerIds (67), and the forwarded
CreateTopics, CreatePartitions, DeleteTopics, ElectLeaders (43), CreateAcls (30),
DeleteAcls (31; checked and authorized by the broker first) and config changes
(KIP-590): a change that replaces a resource's whole set (``AlterConfigsResource.replace``)
as AlterConfigs (33), the others as IncrementalAlterConfigs (44), so the controller gets
exactly what the broker was asked. This module owns both directions of that
mapping (the :mod:`~minibroker.cluster.api` dataclasses to and from kproto's messages) and
the broker's side:

- :class:`RemoteControllerChannel`, a :class:`~minibroker.cluster.api.ControllerChannel`
  over one kproto :class:`~kproto.io.connection.Connection`;
- :class:`MetadataFollower`: as a KRaft broker fetches ``__cluster_metadata`` from the
  controller quorum (KIP-595), it long-polls a Fetch of partition 0 of
  ``__cluster_metadata`` (topic id ``00000000-0000-0000-0000-000000000001``, Kafka's
  ``Uuid.METADATA_TOPIC_ID``) after the offset it applied, and hands the records to the
  same ``ReplicaManager.apply`` the in-process delivery calls. The response's
  ``current_leader`` names the active controller and its epoch. **The record values are
  minibroker's JSON** (:func:`~minibroker.cluster.metadata.encode_record`), not Kafka's
  metadata record format;
- :class:`RemoteQuorum`: what a :class:`~minibroker.cluster.node.ClusterNode` needs of a
  quorum (:class:`~minibroker.cluster.api.QuorumLink`), so the node runs unchanged.

Read your writes: in process the controller's commits reach every broker before the call
returns, and callers rely on that (a topic just created is in the image). Over the wire
the channel keeps that promise: after a call that commits (AlterPartition, CreateTopics,
CreatePartitions, DeleteTopics, AlterConfigs, IncrementalAlterConfigs, ElectLeaders, CreateAcls,
DeleteAcls) it fetches the metadata once more, without waiting, and
applies it before returning. Kafka's brokers do not; their clients retry instead.

An unreachable controller (the parent busy or gone) answers NOT_CONTROLLER, which the
node retries as it does during a failover; each call answers it as the in-process channel
does (an error code per item, or NotControllerError raised where that one raises it).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from kproto.errors import KafkaError, NotControllerError, for_code
from kproto.io.connection import Connection
from kproto.protocol import messages as m
from kproto.records import BatchBuilder, read_batches
from kproto.security.sasl import SaslClient
from minibroker.authorizer import AclBinding, AclBindingFilter, validate_binding, validate_filter
from minibroker.cluster.api import (
    AlterConfigsResource,
    AlterPartitionReply,
    AlterPartitionRequest,
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ConfigResult,
    ElectionResult,
    ElectionType,
    NewTopic,
    ReplicaBrokerEpoch,
    TopicResult,
    asked_partitions,
)
from minibroker.cluster.metadata import MetadataImage, Record, decode_record, encode_record
from minibroker.config import BrokerConfig
from minibroker.quotas import AlterEntry, AlterResult, entity_of
from minibroker.topic_configs import SET

__all__ = [
    "METADATA_FETCH_VERSION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "MetadataFollower",
    "RemoteControllerChannel",
    "RemoteQuorum",
    "VERSIONS",
    "metadata_records",
    "read_metadata_records",
]

log = logging.getLogger("minibroker.cluster")

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID
METADATA_FETCH_VERSION = 15  # topic ids (KIP-516), current_leader (KIP-595), replica_state (KIP-903)

#: The version each RPC is sent in (the controller endpoint serves these ranges and more).
VERSIONS: dict[int, int] = {
    m.ApiKey.BROKER_REGISTRATION: 4,
    m.ApiKey.BROKER_HEARTBEAT: 1,
    m.ApiKey.ALTER_PARTITION: 3,  # new_isr_with_epochs (KIP-903), topic ids
    m.ApiKey.ALLOCATE_PRODUCER_IDS: 0,
    m.ApiKey.CREATE_TOPICS: 7,  # topic_id in the answer
    m.ApiKey.CREATE_PARTITIONS: 3,
    m.ApiKey.DELETE_TOPICS: 6,  # topics by id
    m.ApiKey.ALTER_CONFIGS: 2,
    m.ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    m.ApiKey.ELECT_LEADERS: 2,  # election_type and the top-level error code (KIP-460)
    m.ApiKey.ALTER_CLIENT_QUOTAS: 1,
    m.ApiKey.CREATE_ACLS: 3,
    m.ApiKey.DELETE_ACLS: 3,
    m.ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
    m.ApiKey.FETCH: METADATA_FETCH_VERSION,
}

_ZERO = uuid.UUID(int=0)
_KEYS = {cls: key for key, cls in m.REQUESTS.items()}
_LISTENER = "PLAINTEXT"
#: Kafka's SecurityProtocol ids, as BrokerRegistration's listeners carry them.
_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
_PROTOCOL_NAMES = {code: name for name, code in _PROTOCOL_IDS.items()}


# -- the mapping: api dataclasses <-> kproto messages --------------------------------------------


def alter_client_quotas_to_wire(entries: Sequence[AlterEntry], validate_only: bool) -> Any:
    W = m.AlterClientQuotasRequest
    return W(validate_only=validate_only, entries=[W.EntryData(
        entity=[W.EntityData(entity_type=t, entity_name=n) for t, n in pairs],
        ops=[W.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])
        for pairs, ops in entries])


def alter_client_quotas_from_wire(w: Any) -> list[AlterEntry]:
    """The entries of an AlterClientQuotas request (a ``remove`` op as a None value)."""
    return [([(e.entity_type, e.entity_name) for e in entry.entity],
             [(op.key, None if op.remove else op.value) for op in entry.ops]) for entry in w.entries]


def quota_results_to_wire(results: Sequence[AlterResult]) -> Any:
    W = m.AlterClientQuotasResponse
    return W(entries=[W.EntryData(error_code=code, error_message=message,
                                  entity=[W.EntityData(entity_type=t, entity_name=n) for t, n in entity])
                      for entity, code, message in results])


def quota_results_from_wire(w: Any) -> list[AlterResult]:
    return [(entity_of((e.entity_type, e.entity_name) for e in entry.entity), entry.error_code, entry.error_message)
            for entry in w.entries]
# Each pair is used by the two ends: the broker's channel encodes requests and decodes
# replies, the ControllerServer the other way round.

def registration_to_wire(r: BrokerRegistrationRequest, cluster_id: str) -> Any:
    """Every listener of the broker, its first listener (``host:port``) first."""
    L = m.BrokerRegistrationRequest.Listener
    listeners = [L(name=name, host=host, port=port, security_protocol=_PROTOCOL_IDS[protocol])
                 for name, host, port, protocol in r.listeners] or [
        L(name=_LISTENER, host=r.host, port=r.port, security_protocol=0)]
    return m.BrokerRegistrationRequest(broker_id=r.broker_id, cluster_id=cluster_id, incarnation_id=r.incarnation_id,
                                       listeners=listeners, rack=r.rack)


def registration_from_wire(w: Any) -> BrokerRegistrationRequest:
    """Raises ValueError: no listener, or an unknown security protocol."""
    if not w.listeners:
        raise ValueError(f"broker {w.broker_id} registered no listener")
    if any(entry.security_protocol not in _PROTOCOL_NAMES for entry in w.listeners):
        raise ValueError(f"broker {w.broker_id} registered a listener of an unknown security protocol")
    listener = w.listeners[0]
    return BrokerRegistrationRequest(
        broker_id=w.broker_id, incarnation_id=w.incarnation_id, host=listener.host, port=listener.port, rack=w.rack,
        listeners=tuple((e.name, e.host, e.port, _PROTOCOL_NAMES[e.security_protocol]) for e in w.listeners))


def heartbeat_to_wire(r: BrokerHeartbeatRequest) -> Any:
    return m.BrokerHeartbeatRequest(broker_id=r.broker_id, broker_epoch=r.broker_epoch,
                                    current_metadata_offset=r.current_metadata_offset, want_fence=False,
                                    want_shut_down=r.want_shut_down)


def heartbeat_from_wire(w: Any) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=w.broker_id, broker_epoch=w.broker_epoch,
                                  current_metadata_offset=w.current_metadata_offset, want_shut_down=w.want_shut_down)


def alter_partition_to_wire(r: AlterPartitionRequest) -> Any:
    W = m.AlterPartitionRequest
    return W(broker_id=r.broker_id, broker_epoch=r.broker_epoch, topics=[W.TopicData(topic_id=r.topic_id, partitions=[
        W.PartitionData(partition_index=r.partition, leader_epoch=r.leader_epoch, partition_epoch=r.partition_epoch,
                        new_isr_with_epochs=[W.BrokerState(broker_id=b.broker_id, broker_epoch=b.broker_epoch)
                                             for b in r.new_isr])])])


def alter_partition_from_wire(w: Any) -> AlterPartitionRequest:
    """Raises ValueError: not exactly one partition (a MiniCluster leader sends one at a time)."""
    parts = [(t.topic_id, p) for t in w.topics for p in t.partitions]
    if len(parts) != 1:
        raise ValueError(f"AlterPartition with {len(parts)} partitions; minibroker's brokers send one")
    topic_id, p = parts[0]
    return AlterPartitionRequest(
        broker_id=w.broker_id, broker_epoch=w.broker_epoch, topic_id=topic_id, partition=p.partition_index,
        leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
        new_isr=tuple(ReplicaBrokerEpoch(broker_id=b.broker_id, broker_epoch=b.broker_epoch)
                      for b in p.new_isr_with_epochs))


def alter_partition_reply_to_wire(request: AlterPartitionRequest, reply: AlterPartitionReply) -> Any:
    W = m.AlterPartitionResponse
    reg = reply.registration
    part = W.PartitionData(partition_index=request.partition, error_code=reply.error_code)
    if reg is not None:
        part.leader_id, part.leader_epoch, part.isr, part.partition_epoch = (
            reg.leader, reg.leader_epoch, list(reg.isr), reg.partition_epoch)
    return W(topics=[W.TopicData(topic_id=request.topic_id, partitions=[part])])


def create_topics_to_wire(topics: Sequence[NewTopic], validate_only: bool) -> Any:
    W = m.CreateTopicsRequest
    return W(validate_only=validate_only, topics=[W.CreatableTopic(
        name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor,
        assignments=[W.CreatableReplicaAssignment(partition_index=i, broker_ids=list(b))
                     for i, b in sorted((t.assignments or {}).items())],
        configs=[W.CreatableTopicConfig(name=k, value=v) for k, v in (t.configs or {}).items()]) for t in topics])


def create_topics_from_wire(w: Any) -> list[NewTopic]:
    return [NewTopic(name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor,
                     assignments={a.partition_index: tuple(a.broker_ids) for a in t.assignments} or None,
                     configs={c.name: c.value for c in t.configs}) for t in w.topics]


def topic_results_to_wire(results: Sequence[TopicResult]) -> Any:
    W = m.CreateTopicsResponse
    return W(topics=[W.CreatableTopicResult(
        name=r.name, topic_id=r.topic_id or _ZERO, error_code=r.error_code, error_message=r.error_message,
        num_partitions=r.num_partitions, replication_factor=r.replication_factor) for r in results])


def topic_results_from_wire(w: Any) -> list[TopicResult]:
    return [TopicResult(name=r.name, topic_id=None if r.topic_id == _ZERO else r.topic_id, error_code=r.error_code,
                        error_message=r.error_message, num_partitions=r.num_partitions,
                        replication_factor=r.replication_factor) for r in w.topics]


def create_partitions_to_wire(name: str, count: int, assignments: Sequence[tuple[int, ...]] | None,
                              validate_only: bool) -> Any:
    W = m.CreatePartitionsRequest
    return W(validate_only=validate_only, topics=[W.CreatePartitionsTopic(
        name=name, count=count,
        assignments=None if assignments is None else [W.CreatePartitionsAssignment(broker_ids=list(a))
                                                      for a in assignments])])


def delete_topics_to_wire(topic_ids: Sequence[uuid.UUID]) -> Any:
    W = m.DeleteTopicsRequest
    return W(topics=[W.DeleteTopicState(topic_id=t) for t in topic_ids])


def deleted_to_wire(results: Sequence[TopicResult]) -> Any:
    W = m.DeleteTopicsResponse
    return W(responses=[W.DeletableTopicResult(name=r.name, topic_id=r.topic_id or _ZERO, error_code=r.error_code,
                                               error_message=r.error_message) for r in results])


def alter_configs_to_wire(resources: Sequence[AlterConfigsResource], validate_only: bool) -> Any:
    """AlterConfigs for ``replace`` resources (their ops are the whole new set, all SET),
    IncrementalAlterConfigs for the others.

    Raises:
        ValueError: both kinds in one call (they are one request each), or a ``replace``
            resource with another operation than SET (AlterConfigs has none).
    """
    kinds = {r.replace for r in resources}
    if len(kinds) > 1:
        raise ValueError("AlterConfigs and IncrementalAlterConfigs resources go in one request each")
    if kinds == {True}:
        W: Any = m.AlterConfigsRequest
        for r in resources:
            if any(op != SET for _, op, _ in r.ops):
                raise ValueError(f"AlterConfigs carries SET only: {r.resource_name!r} has {r.ops}")
        return W(validate_only=validate_only, resources=[W.AlterConfigsResource(
            resource_type=r.resource_type, resource_name=r.resource_name,
            configs=[W.AlterableConfig(name=name, value=value) for name, _, value in r.ops]) for r in resources])
    W = m.IncrementalAlterConfigsRequest
    return W(validate_only=validate_only, resources=[W.AlterConfigsResource(
        resource_type=r.resource_type, resource_name=r.resource_name,
        configs=[W.AlterableConfig(name=name, config_operation=op, value=value) for name, op, value in r.ops])
        for r in resources])


def acls_to_wire(acls: Sequence[AclBinding]) -> Any:
    return m.CreateAclsRequest(creations=[m.CreateAclsRequest.AclCreation(
        resource_type=a.resource_type, resource_name=a.resource_name, resource_pattern_type=a.pattern_type,
        principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission_type) for a in acls])


def acls_from_wire(w: Any) -> list[AclBinding]:
    return [validate_binding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                             c.operation, c.permission_type) for c in w.creations]


def acl_filters_to_wire(filters: Sequence[AclBindingFilter]) -> Any:
    return m.DeleteAclsRequest(filters=[m.DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=f.resource_type, resource_name_filter=f.resource_name, pattern_type_filter=f.pattern_type,
        principal_filter=f.principal, host_filter=f.host, operation=f.operation, permission_type=f.permission_type)
        for f in filters])


def acl_filters_from_wire(w: Any) -> list[AclBindingFilter]:
    return [validate_filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                            f.host_filter, f.operation, f.permission_type) for f in w.filters]


def deleted_acls_to_wire(deleted: Sequence[Sequence[AclBinding]], error_code: int = 0,
                         error_message: str | None = None) -> Any:
    R = m.DeleteAclsResponse
    return R(filter_results=[R.DeleteAclsFilterResult(
        error_code=error_code, error_message=error_message, matching_acls=[R.DeleteAclsMatchingAcl(
            error_code=0, error_message=None, resource_type=a.resource_type, resource_name=a.resource_name,
            pattern_type=a.pattern_type, principal=a.principal, host=a.host, operation=a.operation,
            permission_type=a.permission_type) for a in acls]) for acls in deleted])


def deleted_acls_from_wire(w: Any) -> list[list[AclBinding]]:
    return [[validate_binding(a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation,
                              a.permission_type) for a in r.matching_acls] for r in w.filter_results]


def alter_configs_from_wire(w: Any) -> list[AlterConfigsResource]:
    """An AlterConfigs (each resource ``replace``, its configs SET) or an
    IncrementalAlterConfigs request's resources."""
    if isinstance(w, m.AlterConfigsRequest):
        return [AlterConfigsResource(resource_type=r.resource_type, resource_name=r.resource_name,
                                     ops=tuple((c.name, SET, c.value) for c in r.configs), replace=True)
                for r in w.resources]
    return [AlterConfigsResource(resource_type=r.resource_type, resource_name=r.resource_name,
                                 ops=tuple((c.name, c.config_operation, c.value) for c in r.configs))
            for r in w.resources]


def config_results_to_wire(request: Any, results: Sequence[ConfigResult]) -> Any:
    """The answer to ``request`` (AlterConfigs or IncrementalAlterConfigs, its response
    type): one result per resource, in order."""
    W: Any = m.AlterConfigsResponse if isinstance(request, m.AlterConfigsRequest) else m.IncrementalAlterConfigsResponse
    return W(responses=[W.AlterConfigsResourceResponse(
        error_code=res.error_code, error_message=res.error_message, resource_type=r.resource_type,
        resource_name=r.resource_name) for r, res in zip(request.resources, results, strict=True)])


def config_results_from_wire(w: Any) -> list[ConfigResult]:
    return [ConfigResult(error_code=r.error_code, error_message=r.error_message) for r in w.responses]


def elect_leaders_to_wire(election_type: ElectionType, partitions: Mapping[str, Sequence[int]] | None) -> Any:
    W = m.ElectLeadersRequest
    return W(election_type=election_type, topic_partitions=None if partitions is None else [
        W.TopicPartitions(topic=topic, partitions=list(asked)) for topic, asked in partitions.items()])


def elect_leaders_from_wire(w: Any) -> tuple[ElectionType, dict[str, list[int]] | None]:
    """The election type as sent (an unknown one is the controller's to refuse,
    INVALID_REQUEST) and ``{topic: partitions}`` (None: every partition)."""
    return cast(ElectionType, w.election_type), asked_partitions(w.topic_partitions)


def elections_from_wire(w: Any) -> list[ElectionResult]:
    """Raises the top-level error (NotControllerError...), with a partition's message."""
    results = [ElectionResult(topic=t.topic, partition=p.partition_id, error_code=p.error_code,
                              error_message=p.error_message)
               for t in w.replica_election_results for p in t.partition_result]
    if w.error_code:
        raise for_code(w.error_code)(next((r.error_message for r in results if r.error_message), "ElectLeaders"))
    return results


# -- metadata records in a Fetch -------------------------------------------------------------

def metadata_records(entries: Sequence[tuple[int, Record]], controller_epoch: int) -> bytes | None:
    """The records ``entries`` (consecutive offsets) as one record batch, each value the
    record's JSON; None when there are none."""
    if not entries:
        return None
    batch = BatchBuilder(base_offset=entries[0][0], partition_leader_epoch=controller_epoch)
    for _, record in entries:
        batch.append(0, None, encode_record(record))
    return batch.build()  # type: ignore[no-any-return]


def read_metadata_records(data: Any) -> list[tuple[int, Record]]:
    """``(offset, record)`` of every record of a metadata Fetch's record set."""
    if not data:
        return []
    return [(r.offset, decode_record(bytes(r.value or b""))) for batch in read_batches(bytes(data))
            for r in batch.records()]


# -- the broker's side ---------------------------------------------------------------------------

Deliver = Callable[[int, Sequence[Record]], None]


class MetadataFollower:
    """Fetches the metadata log from the controller endpoint and delivers it in offset order.

    Attributes:
        image: the metadata as applied (the follower's own copy: AlterPartition's answer
            carries no replicas, and the reply's registration is read from here).
        applied: the offset of the last record delivered (-1: none).
        leader_id, leader_epoch: the active controller and its epoch, from the last answer
            (``current_leader``; -1 before the first).
    """

    def __init__(self, quorum: RemoteQuorum, node_id: int, deliver: Deliver, from_offset: int):
        self._quorum = quorum
        self.node_id = node_id
        self._deliver = deliver
        self.image = MetadataImage()
        self.applied = from_offset - 1
        self.leader_id = -1
        self.leader_epoch = -1

    def _request(self, max_wait_ms: int) -> Any:
        W = m.FetchRequest
        return W(replica_state=W.ReplicaState(replica_id=self.node_id, replica_epoch=-1), max_wait_ms=max_wait_ms,
                 min_bytes=1, max_bytes=self._quorum.config["replica.fetch.response.max.bytes"], isolation_level=0,
                 session_id=0, session_epoch=-1, topics=[W.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=[
                     W.FetchPartition(partition=0, current_leader_epoch=self.leader_epoch,
                                      fetch_offset=self.applied + 1,
                                      partition_max_bytes=self._quorum.config["replica.fetch.max.bytes"])])])

    async def fetch_once(self, conn: Connection, max_wait_ms: int) -> None:
        """One Fetch (parked up to ``max_wait_ms`` by the controller when there is nothing
        new), its records delivered.

        Raises:
            KafkaError: the controller endpoint answered with an error.
        """
        response = await conn.request_versioned(self._request(max_wait_ms), METADATA_FETCH_VERSION,
                                                timeout=max_wait_ms / 1000 + conn.request_timeout)
        if response.error_code:  # refused whole (e.g. an unknown topic id): no partition
            raise for_code(response.error_code)(f"metadata fetch at offset {self.applied + 1}")
        [part] = [p for t in response.responses for p in t.partitions]
        if part.error_code:
            raise for_code(part.error_code)(f"metadata fetch at offset {self.applied + 1}")
        if part.current_leader is not None:
            self.leader_id, self.leader_epoch = part.current_leader.leader_id, part.current_leader.leader_epoch
        self._apply(read_metadata_records(part.records))

    def _apply(self, entries: list[tuple[int, Record]]) -> None:
        # Two fetches may overlap (the long poll and a read-your-writes catch-up): what is
        # applied already is skipped; the rest is contiguous, as each fetch started at or
        # before applied + 1.
        fresh = [r for offset, r in entries if offset > self.applied]
        if not fresh:
            return
        last = entries[-1][0]
        self.image.apply(last, fresh)
        self.applied = last
        try:
            self._deliver(last, fresh)
        except Exception:  # as the Quorum's delivery: logged, the next records still come
            log.exception("node %d failed to apply metadata up to offset %d", self.node_id, last)

    async def run(self) -> None:
        """Long-poll until cancelled; on a failure, reconnect after
        ``replica.fetch.backoff.ms``."""
        config = self._quorum.config
        wait = int(config["broker.heartbeat.interval.ms"]) * 4
        conn: Connection | None = None
        try:
            while True:
                try:
                    if conn is None or conn.closed:
                        conn = self._quorum.connection(f"broker-{self.node_id}-metadata")
                        await conn.open()
                    await self.fetch_once(conn, wait)
                except Exception as exc:  # also a bug (an undecodable record): never a silent end
                    expected = isinstance(exc, (OSError, KafkaError, asyncio.TimeoutError))
                    log.log(logging.INFO if expected else logging.ERROR, "node %d: metadata fetch failed (%s); "
                            "retrying", self.node_id, exc, exc_info=not expected)
                    if conn is not None:
                        await conn.close(timeout=1.0)
                        conn = None
                    await asyncio.sleep(int(config["replica.fetch.backoff.ms"]) / 1000)
        finally:
            if conn is not None:
                await conn.close(timeout=1.0)


class RemoteControllerChannel:
    """A :class:`~minibroker.cluster.api.ControllerChannel` over the wire (see the module
    docstring); one per broker process."""

    def __init__(self, quorum: RemoteQuorum, node_id: int):
        self._quorum = quorum
        self.node_id = node_id
        self._conn: Connection | None = None
        self._opening = asyncio.Lock()

    @property
    def active_controller_id(self) -> int:
        follower = self._quorum.follower
        return -1 if follower is None else follower.leader_id

    async def _connection(self) -> Connection:
        async with self._opening:
            if self._conn is None or self._conn.closed:
                conn = self._quorum.connection(f"broker-{self.node_id}-controller")
                try:
                    await conn.open()
                except BaseException:
                    await conn.close(timeout=1.0)
                    raise
                self._conn = conn
            return self._conn

    async def _call(self, body: Any) -> Any:
        """The answer to ``body``; NotControllerError when the endpoint cannot be reached."""
        try:  # the endpoint answers errors in the body: anything raised here is the transport's
            conn = await self._connection()
            return await conn.request_versioned(body, VERSIONS[_KEYS[type(body)]])
        except (TimeoutError, OSError, KafkaError) as exc:
            await self.close()
            raise NotControllerError(f"the controller endpoint is unreachable: {exc}") from exc

    async def _caught_up(self) -> None:
        """Read your writes (see the module docstring): what the controller committed before
        its answer is applied here before the call returns."""
        follower = self._quorum.follower
        if follower is None:
            return
        try:
            await follower.fetch_once(await self._connection(), 0)
        except (TimeoutError, OSError, KafkaError) as exc:
            # The change is committed: answering it as failed would be a lie. The long poll
            # applies it shortly; only read-your-writes is lost for this once.
            log.info("node %d: catching up after a committed change failed (%s)", follower.node_id, exc)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close(timeout=1.0)

    async def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        try:
            w = await self._call(registration_to_wire(request, self._quorum.config["cluster.id"]))
        except NotControllerError:
            return BrokerRegistrationReply(error_code=NotControllerError.code, broker_epoch=-1)
        return BrokerRegistrationReply(error_code=w.error_code, broker_epoch=w.broker_epoch)

    async def heartbeat(self, request: BrokerHeartbeatRequest) -> BrokerHeartbeatReply:
        try:
            w = await self._call(heartbeat_to_wire(request))
        except NotControllerError:
            return BrokerHeartbeatReply(error_code=NotControllerError.code, is_caught_up=False, is_fenced=True,
                                        should_shut_down=False)
        return BrokerHeartbeatReply(error_code=w.error_code, is_caught_up=w.is_caught_up, is_fenced=w.is_fenced,
                                    should_shut_down=w.should_shut_down)

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionReply:
        try:
            w = await self._call(alter_partition_to_wire(request))
        except NotControllerError:
            return AlterPartitionReply(error_code=NotControllerError.code, registration=None)
        [part] = [p for t in w.topics for p in t.partitions] or [None]
        code = w.error_code or (part.error_code if part is not None else 0)
        if code:
            return AlterPartitionReply(error_code=code, registration=None)
        await self._caught_up()
        follower = self._quorum.follower
        topic = None if follower is None else follower.image.topics.get(request.topic_id)
        return AlterPartitionReply(error_code=0,
                                   registration=None if topic is None else topic.partitions.get(request.partition))

    async def create_topics(self, topics: Sequence[NewTopic], *, validate_only: bool) -> list[TopicResult]:
        try:
            w = await self._call(create_topics_to_wire(topics, validate_only))
        except NotControllerError as exc:
            return [TopicResult(name=t.name, topic_id=None, error_code=NotControllerError.code,
                                error_message=str(exc)) for t in topics]
        await self._caught_up()
        return topic_results_from_wire(w)

    async def create_partitions(self, name: str, count: int, assignments: Sequence[tuple[int, ...]] | None, *,
                                validate_only: bool) -> TopicResult:
        try:
            w = await self._call(create_partitions_to_wire(name, count, assignments, validate_only))
        except NotControllerError as exc:
            return TopicResult(name=name, topic_id=None, error_code=NotControllerError.code, error_message=str(exc))
        await self._caught_up()
        [r] = w.results
        return TopicResult(name=r.name, topic_id=None, error_code=r.error_code, error_message=r.error_message)

    async def delete_topics(self, topic_ids: Sequence[uuid.UUID]) -> list[TopicResult]:
        try:
            w = await self._call(delete_topics_to_wire(topic_ids))
        except NotControllerError as exc:
            return [TopicResult(name="", topic_id=t, error_code=NotControllerError.code, error_message=str(exc))
                    for t in topic_ids]
        await self._caught_up()
        return [TopicResult(name=r.name or "", topic_id=None if r.topic_id == _ZERO else r.topic_id,
                            error_code=r.error_code, error_message=r.error_message) for r in w.responses]

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        """Raises NotControllerError (no controller, or none reachable) or StaleBrokerEpochError."""
        w = await self._call(m.AllocateProducerIdsRequest(broker_id=broker_id, broker_epoch=broker_epoch))
        if w.error_code:
            raise for_code(w.error_code)(f"AllocateProducerIds for broker {broker_id}")
        return w.producer_id_start, w.producer_id_len

    async def alter_configs(self, resources: Sequence[AlterConfigsResource], *,
                            validate_only: bool) -> list[ConfigResult]:
        """One request per run of resources of a kind (AlterConfigs for ``replace``,
        IncrementalAlterConfigs otherwise), in order; NOT_CONTROLLER per resource when the
        controller cannot be reached."""
        results: list[ConfigResult] = []
        for _, run in itertools.groupby(resources, key=lambda r: r.replace):
            batch = list(run)
            try:
                w = await self._call(alter_configs_to_wire(batch, validate_only))
            except NotControllerError as exc:
                results += [ConfigResult(error_code=NotControllerError.code, error_message=str(exc)) for _ in batch]
                continue
            results += config_results_from_wire(w)
        if any(r.error_code == 0 for r in results) and not validate_only:
            await self._caught_up()
        return results

    async def alter_client_quotas(self, entries: Sequence[AlterEntry], *, validate_only: bool) -> list[AlterResult]:
        """NOT_CONTROLLER per entity when the controller cannot be reached."""
        try:
            results = quota_results_from_wire(await self._call(alter_client_quotas_to_wire(entries, validate_only)))
        except NotControllerError as exc:
            return [(entity, NotControllerError.code, str(exc)) for entity in dict.fromkeys(entity_of(p) for p, _ in entries)]
        if any(code == 0 for _, code, _ in results) and not validate_only:
            await self._caught_up()
        return results
    async def create_acls(self, acls: Sequence[AclBinding]) -> None:
        """Raises NotControllerError (no controller, or none reachable)."""
        w = await self._call(acls_to_wire(acls))
        if any(r.error_code for r in w.results):
            raise NotControllerError(next(r.error_message for r in w.results if r.error_code) or "CreateAcls")
        await self._caught_up()

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Raises NotControllerError (no controller, or none reachable)."""
        w = await self._call(acl_filters_to_wire(filters))
        if any(r.error_code for r in w.filter_results):
            raise NotControllerError(next(r.error_message for r in w.filter_results if r.error_code) or "DeleteAcls")
        await self._caught_up()
        return deleted_acls_from_wire(w)

    async def alter_user_scram_credentials(self, request: Any) -> list[tuple[str, int, str | None]]:
        """The request as it came (AlterUserScramCredentials v0); NOT_CONTROLLER per user
        when the controller cannot be reached."""
        try:
            w = await self._call(request)
        except NotControllerError as exc:
            return [(name, NotControllerError.code, str(exc))
                    for name in dict.fromkeys([*(d.name for d in request.deletions),
                                               *(u.name for u in request.upsertions)])]
        results = [(r.user, r.error_code, r.error_message) for r in w.results]
        if any(code == 0 for _, code, _ in results):
            await self._caught_up()
        return results

    async def elect_leaders(self, election_type: ElectionType,
                            partitions: Mapping[str, Sequence[int]] | None) -> list[ElectionResult]:
        """Raises NotControllerError (no controller, or none reachable)."""
        results = elections_from_wire(await self._call(elect_leaders_to_wire(election_type, partitions)))
        await self._caught_up()
        return results


class RemoteQuorum:
    """The controller quorum as a broker process sees it: the endpoint at ``host:port``
    (a :class:`~minibroker.cluster.api.QuorumLink` for its one
    :class:`~minibroker.cluster.node.ClusterNode`).

    The controller lease is renewed by the endpoint itself whenever this broker's
    registration or heartbeat arrives, so :meth:`renew_lease` has nothing to do here.
    """

    def __init__(self, host: str, port: int, *, node_id: int, config: BrokerConfig, sasl: SaslClient | None = None):
        self.host, self.port = host, port
        self.sasl = sasl  # how the endpoint is authenticated to (ControllerServer.client_sasl)
        self.node_id = node_id
        self.config = config
        self.follower: MetadataFollower | None = None
        self._channel = RemoteControllerChannel(self, node_id)
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None  # an unsubscribed fetch, for close() to await

    def connection(self, client_id: str) -> Connection:
        """A new (unopened) connection to the controller endpoint."""
        return Connection(self.host, self.port, client_id=client_id, request_timeout_ms=10000,
                          connect_timeout_ms=5000, sasl=self.sasl)

    def channel_for(self, node_id: int) -> RemoteControllerChannel:
        if node_id != self.node_id:
            raise ValueError(f"this process runs broker {self.node_id}, not {node_id}")
        return self._channel

    def renew_lease(self, node_id: int) -> None:
        """Nothing: the endpoint renews the lease on every registration and heartbeat."""

    def subscribe(self, node_id: int, deliver: Deliver, from_offset: int = 0) -> None:
        """Fetch the metadata log from ``from_offset`` on and deliver it, until
        :meth:`unsubscribe`."""
        if self._task is not None:
            raise RuntimeError(f"broker {node_id} is subscribed already")
        self.follower = MetadataFollower(self, node_id, deliver, from_offset)
        self._task = asyncio.get_running_loop().create_task(self.follower.run(), name=f"broker-{node_id}-metadata")

    def unsubscribe(self, node_id: int) -> None:
        """Stop fetching (the task ends at its next await; :meth:`close` waits for it)."""
        if self._task is not None:
            self._task.cancel()
            self._stopping, self._task = self._task, None

    async def close(self) -> None:
        """Stop fetching and close the connections."""
        self.unsubscribe(-1)
        if self._stopping is not None:
            await asyncio.gather(self._stopping, return_exceptions=True)
            self._stopping = None
        await self._channel.close()
