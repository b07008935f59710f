"""The admin client's own calls (topics, configs, groups, offsets, the cluster), its
thread face, and the value types of those calls; see :mod:`kproto.admin`."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kproto._habits import missing
from kproto._loop import Portal, blocking, check_loop, refuse_when_closed
from kproto.admin.acls import Acls
from kproto.admin.base import item_error as _error
from kproto.admin.base import outcome as _outcome
from kproto.admin.quotas import Quotas
from kproto.admin.scram import ScramUsers
from kproto.admin.transactions import Transactions
from kproto.config import ClientConfig
from kproto.errors import (
    KafkaCodeError,
    KafkaConnectionError,
    KafkaError,
    NotControllerError,
    UnknownTopicOrPartitionError,
    for_code,
)
from kproto.group_offsets import offset_fetch_request, offset_fetch_topics
from kproto.io import BrokerInfo, Cluster, PartitionInfo
from kproto.io.list_offsets import list_offsets, timestamp_of
from kproto.io.retry import Backoff, retrying
from kproto.metrics import AdminMetrics, MetricName, Statistics
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterConfigsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
)
from kproto.structs import OffsetAndMetadata, TopicPartition, by_topic

__all__ = [
    "AIOAdminClient",
    "AdminClient",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "GroupDescription",
    "GroupListing",
    "ListedOffset",
    "MemberDescription",
    "NewTopic",
    "OffsetSpec",
    "TopicDescription",
]

K = TypeVar("K")

TOPIC, BROKER = 2, 4  # Kafka's ConfigResource types
_OPERATIONS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}


# -- what goes in ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create; -1 partitions or replication factor take the broker's defaults."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A topic (``ConfigResource.topic("t")``) or a broker (``ConfigResource.broker(0)``)."""

    type: int
    name: str

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(TOPIC, name)

    @classmethod
    def broker(cls, node_id: int | str = "") -> ConfigResource:
        return cls(BROKER, str(node_id))


OffsetSpec = int | str  # "earliest", "latest", "max_timestamp", or a timestamp in ms


# -- what comes out --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: list[PartitionInfo]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int  # Kafka's ConfigSource: 1 dynamic topic, 4 static broker, 5 default...
    is_default: bool
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[tuple[str, str | None, int], ...] = ()


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription]
    coordinator: int


@dataclass(frozen=True, slots=True)
class ListedOffset:
    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerInfo]


@refuse_when_closed("admin client", lambda self: self._closed, bind=True,
                    before=lambda self: self._reach_cluster())
class AIOAdminClient(Transactions, Quotas, Acls, ScramUsers):
    """The admin client for asyncio code.

    Args:
        config: Kafka admin client settings (``bootstrap.servers`` is required).
        **kwargs: the same, with dots written as underscores.

    Use ``async with AIOAdminClient(...) as admin:`` or call :meth:`close`.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = ClientConfig("admin", config, **kwargs)
        self._cluster = Cluster(self.config)
        self._home: asyncio.AbstractEventLoop | None = None  # the loop of its connections (first call's)
        self._closed = False
        # -- observability: metrics (always on, as Java's) and statistics --------------------
        self._metrics = AdminMetrics(self.config)
        self._metrics.attach(self._cluster)
        self._statistics = Statistics(self.config, self._metrics)

    _habit_kind = "admin"
    __getattr__ = missing  # a peer's method name gets an error naming kproto's call

    async def __aenter__(self) -> AIOAdminClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection. Idempotent."""
        if self._closed:
            return
        if self._home is None or not self._home.is_closed():  # else its loop ended, with its connections
            check_loop(self._home, "AIOAdminClient")
            await self._cluster.close()
            await self._statistics.stop()
        self._closed = True

    def metrics(self) -> dict[MetricName, float]:
        """The admin client's metrics now, with Java's names (``admin-client-metrics``,
        ``admin-client-node-metrics``): ``{MetricName: value}``; see :mod:`kproto.metrics`."""
        return self._metrics.snapshot()

    # -- plumbing -------------------------------------------------------------------------

    async def _reach_cluster(self) -> None:
        """Before the first call's request: wait up to ``default.api.timeout.ms`` for a broker.

        The client is made without one (as Java's, which connects lazily), so a broker that
        starts a moment after the client is fine (issue 11).
        """
        self._statistics.start()  # from the first call, on its loop (observability)
        if self._cluster.brokers:
            return
        c = self.config
        await retrying(self._cluster.refresh, deadline=time.monotonic() + c["default.api.timeout.ms"] / 1000,
                       backoff=Backoff.retry(c))

    async def _retrying(self, attempt: Callable[[], Awaitable[K]]) -> K:
        """Run ``attempt`` until it does not raise a retriable error, within the API timeout."""
        async def moved(exc: KafkaError) -> None:
            if isinstance(exc, (KafkaConnectionError, NotControllerError)) or getattr(exc, "code", 0) in (14, 15, 16):
                await self._cluster.refresh()  # the broker we relied on may have moved
        c = self.config
        return await retrying(attempt, deadline=time.monotonic() + c["default.api.timeout.ms"] / 1000,
                              backoff=Backoff.retry(c), on_retry=moved)

    async def _controller(self):
        if self._cluster.controller_id < 0:
            await self._cluster.refresh()
        if self._cluster.controller_id in self._cluster.brokers:
            return await self._cluster.connection(self._cluster.controller_id)
        return await self._cluster.any_connection()

    async def _coordinator(self, group_id: str) -> int:
        return await self._retrying(lambda: self._cluster.find_coordinator(group_id))

    async def _leaders(self, partitions: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        partitions = list(partitions)
        topics = {tp.topic for tp in partitions}
        await self._cluster.refresh(topics)
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            by_leader.setdefault(self._cluster.leader(tp.topic, tp.partition), []).append(tp)
        return by_leader

    # -- topics ---------------------------------------------------------------------------

    async def create_topics(self, topics: Iterable[NewTopic | str] | str, *, validate_only: bool = False,
                            timeout_ms: int | None = None) -> dict[str, uuid.UUID | None]:
        """Create topics; returns each one's topic id (None with ``validate_only`` or old brokers).

        A name alone stands for ``NewTopic(name)``: the broker's default partitions and
        replication factor (kafka-python's and Java's ``NewTopic`` defaults, -1).
        """
        topics = [NewTopic(t) if isinstance(t, str) else t for t in ([topics] if isinstance(topics, str) else topics)]
        request = CreateTopicsRequest(
            topics=[CreateTopicsRequest.CreatableTopic(
                name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor, assignments=[],
                configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()])
                for t in topics],
            timeout_ms=self.config["request.timeout.ms"] if timeout_ms is None else timeout_ms,
            validate_only=validate_only,
        )
        conn = await self._controller()
        response = await conn.request(request)
        results: dict[str, Any] = {}
        for r in response.topics:
            error = _error(r.error_code, r.error_message, r.name)
            results[r.name] = error or (r.topic_id if r.topic_id and r.topic_id.int else None)
        return _outcome(results)

    async def delete_topics(self, topics: Iterable[str], *, timeout_ms: int | None = None) -> dict[str, None]:
        """Delete topics by name."""
        names = list(topics)
        conn = await self._controller()
        version = conn.version_for(ApiKey.DELETE_TOPICS)
        timeout = self.config["request.timeout.ms"] if timeout_ms is None else timeout_ms
        if version >= 6:
            request = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names], timeout_ms=timeout)
        else:
            request = DeleteTopicsRequest(topic_names=names, timeout_ms=timeout)
        response = await conn.request_versioned(request, version)
        return _outcome({r.name: _error(r.error_code, r.error_message, r.name) for r in response.responses})

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Names of every topic, sorted."""
        await self._cluster.refresh(all_topics=True)
        return sorted(n for n, t in self._cluster.topics.items() if include_internal or not t.is_internal)

    async def describe_topics(self, topics: Iterable[str]) -> dict[str, TopicDescription]:
        """Partitions, topic id and internal flag of topics (Java's ``TopicDescription``).

        Each partition is a :class:`~kproto.io.cluster.PartitionInfo` (Java's
        ``TopicPartitionInfo``): its ``leader`` (-1 while it has none), ``leader_epoch``,
        ``replicas``, ``isr`` and ``offline_replicas``, as the metadata answer gives them;
        an answer of an older leader epoch than one seen before is not taken (KIP-320).
        """
        names = list(topics)
        await self._cluster.refresh(names)
        results: dict[str, Any] = {}
        for name in names:
            info = self._cluster.topics.get(name)
            if info is None or info.error_code:
                results[name] = _error(info.error_code if info else UnknownTopicOrPartitionError.code, None, name)
            else:
                results[name] = TopicDescription(name, info.topic_id, info.is_internal,
                                                 [info.partitions[i] for i in sorted(info.partitions)])
        return _outcome(results)

    async def create_partitions(self, counts: Mapping[str, int], *, validate_only: bool = False) -> dict[str, None]:
        """Grow topics to the given partition counts."""
        request = CreatePartitionsRequest(
            topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=c, assignments=None) for n, c in counts.items()],
            timeout_ms=self.config["request.timeout.ms"], validate_only=validate_only)
        response = await (await self._controller()).request(request)
        return _outcome({r.name: _error(r.error_code, r.error_message, r.name) for r in response.results})

    # -- configs --------------------------------------------------------------------------

    async def describe_configs(self, resources: Iterable[ConfigResource], *, include_synonyms: bool = False
                               ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Every config of topics and brokers, with its source (and synonyms if asked)."""
        resources = list(resources)
        request = DescribeConfigsRequest(resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=r.type, resource_name=r.name, configuration_keys=None)
            for r in resources], include_synonyms=include_synonyms)
        response = await self._retrying(lambda: self._cluster.request(None, request))
        results: dict[ConfigResource, Any] = {}
        for r in response.results:
            resource = ConfigResource(r.resource_type, r.resource_name)
            results[resource] = _error(r.error_code, r.error_message, resource) or {
                c.name: ConfigEntry(
                    c.name, c.value, c.config_source, bool(c.is_default) or c.config_source == 5, c.read_only, c.is_sensitive,
                    tuple((s.name, s.value, s.source) for s in (c.synonyms or ())))
                for c in r.configs}
        return _outcome(results)

    async def alter_configs(self, configs: Mapping[ConfigResource, Mapping[str, str | None]], *,
                            validate_only: bool = False) -> dict[ConfigResource, None]:
        """Replace whole config sets (keys left out return to their defaults), as AlterConfigs does."""
        request = AlterConfigsRequest(resources=[
            AlterConfigsRequest.AlterConfigsResource(resource_type=r.type, resource_name=r.name, configs=[
                AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in values.items()])
            for r, values in configs.items()], validate_only=validate_only)
        response = await self._cluster.request(None, request)
        return _outcome({ConfigResource(r.resource_type, r.resource_name): _error(r.error_code, r.error_message)
                         for r in response.responses})

    async def incremental_alter_configs(
        self, changes: Mapping[ConfigResource, Iterable[tuple[str, str, str | None]]], *, validate_only: bool = False,
    ) -> dict[ConfigResource, None]:
        """Change single keys: ``{resource: [(name, "set"|"delete"|"append"|"subtract", value)]}``."""
        request = IncrementalAlterConfigsRequest(resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=r.type, resource_name=r.name, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name=name, config_operation=_OPERATIONS[op], value=value)
                for name, op, value in ops])
            for r, ops in changes.items()], validate_only=validate_only)
        response = await self._cluster.request(None, request)
        return _outcome({ConfigResource(r.resource_type, r.resource_name): _error(r.error_code, r.error_message)
                         for r in response.responses})

    # -- groups ---------------------------------------------------------------------------

    async def list_groups(self, *, states: Iterable[str] | None = None) -> list[GroupListing]:
        """Every group of every broker (optionally only those in ``states``)."""
        await self._cluster.refresh()
        listings = []
        wanted = list(states) if states is not None else []
        for node_id in list(self._cluster.brokers):
            conn = await self._cluster.connection(node_id)
            version = conn.version_for(ApiKey.LIST_GROUPS)
            response = await conn.request_versioned(ListGroupsRequest(states_filter=wanted), version)
            if response.error_code:
                raise for_code(response.error_code)(f"ListGroups on broker {node_id}")
            listings += [GroupListing(g.group_id, g.protocol_type, g.group_state or "")
                         for g in response.groups if version >= 4 or not wanted or g.group_state in wanted]
        return sorted(listings, key=lambda g: g.group_id)

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """State, protocol and members (ids, hosts, raw metadata and assignments) of groups."""
        results: dict[str, Any] = {}
        for group_id in group_ids:
            node = await self._coordinator(group_id)
            response = await self._cluster.request(node, DescribeGroupsRequest(groups=[group_id]))
            g = response.groups[0]
            results[group_id] = _error(g.error_code, None, group_id) or GroupDescription(
                g.group_id, g.group_state, g.protocol_type, g.protocol_data,
                [MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                   bytes(m.member_metadata), bytes(m.member_assignment)) for m in g.members],
                node)
        return _outcome(results)

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, None]:
        """Delete empty groups and their committed offsets."""
        results: dict[str, Any] = {}
        for group_id in group_ids:
            node = await self._coordinator(group_id)
            response = await self._cluster.request(node, DeleteGroupsRequest(groups_names=[group_id]))
            results[group_id] = _error(response.results[0].error_code, None, group_id)
        return _outcome(results)

    async def list_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None
                                 ) -> dict[TopicPartition, OffsetAndMetadata]:
        """A group's committed offsets (all of them, or of ``partitions``; -1 where none)."""
        node = await self._coordinator(group_id)
        conn = await self._cluster.connection(node)
        version = conn.version_for(ApiKey.OFFSET_FETCH, min_version=2)  # 2: null topics = all
        response = await conn.request_versioned(offset_fetch_request(version, group_id, partitions), version)
        error_code, topics = offset_fetch_topics(response)
        if error_code:
            raise for_code(error_code)(f"offsets of group {group_id!r}")
        results: dict[TopicPartition, Any] = {}
        for t in topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                results[tp] = _error(p.error_code, None, tp) or OffsetAndMetadata(
                    p.committed_offset, p.metadata or "", p.committed_leader_epoch)
        return _outcome(results)

    async def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
                                  ) -> dict[TopicPartition, None]:
        """Set a group's committed offsets (the group must have no active members)."""
        topics = {}
        for tp, value in offsets.items():
            value = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
            topics.setdefault(tp.topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=value.offset,
                committed_leader_epoch=value.leader_epoch, committed_metadata=value.metadata))
        request = OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
                                      topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p)
                                              for t, p in topics.items()])
        node = await self._coordinator(group_id)
        response = await self._cluster.request(node, request, min_version=2)  # v0-1 commit to ZooKeeper
        return _outcome({TopicPartition(t.name, p.partition_index): _error(p.error_code, None, t.name)
                         for t in response.topics for p in t.partitions})

    async def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, None]:
        """Delete committed offsets of partitions the group no longer consumes."""
        request = OffsetDeleteRequest(group_id=group_id, topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(name=t, partitions=[
                OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in ps])
            for t, ps in by_topic(partitions).items()])
        node = await self._coordinator(group_id)
        response = await self._cluster.request(node, request)
        if response.error_code:
            raise for_code(response.error_code)(f"deleting offsets of group {group_id!r}")
        return _outcome({TopicPartition(t.name, p.partition_index): _error(p.error_code, None, t.name)
                         for t in response.topics for p in t.partitions})

    # -- partitions' offsets and records --------------------------------------------------

    async def list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec], *,
                           isolation_level: str = "read_uncommitted") -> dict[TopicPartition, ListedOffset]:
        """Offsets by spec: ``"earliest"``, ``"latest"``, ``"max_timestamp"`` or a timestamp (ms).

        A timestamp gives the first offset whose timestamp is at or after it (offset -1
        when there is none). A partition whose leader cannot be reached or answers a
        retriable error (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, OFFSET_NOT_AVAILABLE...
        during a failover) is asked again, with fresh metadata, until
        ``default.api.timeout.ms``, as Java's ``KafkaAdminClient.listOffsets`` retries.
        """
        timestamps = {tp: timestamp_of(s) for tp, s in specs.items()}
        results: dict[TopicPartition, Any] = {}

        async def attempt() -> None:
            retry: KafkaError | None = None
            pending = [tp for tp in timestamps if tp not in results]
            for leader, tps in (await self._leaders(pending)).items():
                if leader < 0:
                    for tp in tps:
                        results[tp] = UnknownTopicOrPartitionError(f"{tp.topic}-{tp.partition} has no leader")
                    continue
                found = await list_offsets(self._cluster, leader, {tp: timestamps[tp] for tp in tps},
                                           read_committed=isolation_level == "read_committed")
                for tp, p in found.items():
                    error = _error(p.error_code, None, tp)
                    if error is not None and error.retriable:
                        retry = error  # the leader moved: ask again after a refresh
                        continue
                    results[tp] = error or ListedOffset(p.offset, p.timestamp, p.leader_epoch)
            if retry is not None:
                raise retry

        await self._retrying(attempt)
        return _outcome(results)

    async def delete_records(self, before: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Delete records before the given offsets (-1: the high watermark); returns the new low watermarks."""
        results: dict[TopicPartition, Any] = {}
        for leader, tps in (await self._leaders(before)).items():
            if leader < 0:
                for tp in tps:
                    results[tp] = UnknownTopicOrPartitionError(f"{tp.topic}-{tp.partition} has no leader")
                continue
            request = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=[
                DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=before[TopicPartition(t, p)])
                for p in ps]) for t, ps in by_topic(tps).items()], timeout_ms=self.config["request.timeout.ms"])
            response = await self._cluster.request(leader, request)
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    results[tp] = _error(p.error_code, None, tp) or p.low_watermark
        return _outcome(results)

    # -- cluster --------------------------------------------------------------------------

    async def describe_cluster(self) -> ClusterDescription:
        """Cluster id, controller and brokers."""
        conn = await self._cluster.any_connection()
        try:
            version = conn.version_for(ApiKey.DESCRIBE_CLUSTER)
        except KafkaCodeError:  # brokers before 2.8 have no DescribeCluster: Metadata says the same
            await self._cluster.refresh()
            c = self._cluster
            return ClusterDescription(c.cluster_id, c.controller_id, sorted(c.brokers.values(), key=lambda b: b.node_id))
        response = await conn.request_versioned(DescribeClusterRequest(), version)
        if response.error_code:
            raise for_code(response.error_code)(response.error_message or "DescribeCluster")
        return ClusterDescription(response.cluster_id, response.controller_id, sorted(
            (BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in response.brokers), key=lambda b: b.node_id))

    # -- leader elections (ElectLeaders, KIP-183 / KIP-460) -------------------------------

    async def elect_leaders(self, election_type: str | int = "preferred",
                            partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, None]:
        """Elect leaders: ``"preferred"`` (0) moves each partition's leadership to its
        preferred replica (the first of its replicas) when that one is live and in the
        ISR; ``"unclean"`` (1) gives a leaderless partition a live replica, from outside
        the ISR if need be (records only the old ISR had are lost).

        ``partitions`` None asks for every partition; the broker then answers only those
        where an election was needed, and so does the result. As other multi-item calls,
        it raises the first partition's error with ``.results`` holding every
        partition's outcome (None for elected): ``ElectionNotNeededError`` (the preferred
        replica already leads; the partition has a leader, for unclean),
        ``PreferredLeaderNotAvailableError`` (it is dead or out of the ISR),
        ``EligibleLeadersNotAvailableError`` (unclean: no live replica),
        ``UnknownTopicOrPartitionError``.

        Raises:
            ValueError: an unknown election type.
            UnsupportedVersionError: an unclean election asked of a broker with only
                ElectLeaders v0 (before Kafka 2.4).
        """
        types = {"preferred": 0, "unclean": 1}
        kind = types.get(election_type.lower()) if isinstance(election_type, str) else election_type
        if kind not in (0, 1):
            raise ValueError(f"election_type must be 'preferred' (0) or 'unclean' (1), not {election_type!r}")
        asked = None if partitions is None else [
            ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic(partitions).items()]

        async def attempt() -> Any:
            conn = await self._controller()
            version = conn.version_for(ApiKey.ELECT_LEADERS, min_version=0 if kind == 0 else 1)
            request = ElectLeadersRequest(election_type=kind if version >= 1 else 0, topic_partitions=asked,
                                          timeout_ms=self.config["request.timeout.ms"])
            response = await conn.request_versioned(request, version)
            if response.error_code:  # the whole request (v1+): e.g. NOT_CONTROLLER, retried
                raise for_code(response.error_code)("ElectLeaders")
            return response

        response = await self._retrying(attempt)
        return _outcome({TopicPartition(t.topic, p.partition_id): _error(p.error_code, p.error_message,
                                                                          f"{t.topic}-{p.partition_id}")
                         for t in response.replica_election_results for p in t.partition_result})


@refuse_when_closed("admin client", lambda self: self._core._closed)
class AdminClient:
    """The admin client for threads: :class:`AIOAdminClient` on a background loop.

    Every method blocks until done and has the same arguments, results and errors as
    its :class:`AIOAdminClient` namesake. Use ``with AdminClient(...) as admin:`` or call
    :meth:`close`.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._core = AIOAdminClient(config, **kwargs)  # validates the config before a thread starts
        self.config = self._core.config
        self._portal = Portal("admin client")  # the shared loop thread (kproto._loop)

    _habit_kind = "admin"
    __getattr__ = missing

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection and let go of the background loop (which the sync
        clients share; the last one closed stops it). Idempotent."""
        self._portal.close_after(self._core.close)

    def metrics(self) -> dict[MetricName, float]:
        """The admin client's metrics now; see :meth:`AIOAdminClient.metrics`."""
        return self._core.metrics()

    create_topics = blocking(AIOAdminClient.create_topics)
    delete_topics = blocking(AIOAdminClient.delete_topics)
    list_topics = blocking(AIOAdminClient.list_topics)
    describe_topics = blocking(AIOAdminClient.describe_topics)
    create_partitions = blocking(AIOAdminClient.create_partitions)
    describe_configs = blocking(AIOAdminClient.describe_configs)
    alter_configs = blocking(AIOAdminClient.alter_configs)
    incremental_alter_configs = blocking(AIOAdminClient.incremental_alter_configs)
    list_groups = blocking(AIOAdminClient.list_groups)
    describe_groups = blocking(AIOAdminClient.describe_groups)
    delete_groups = blocking(AIOAdminClient.delete_groups)
    list_group_offsets = blocking(AIOAdminClient.list_group_offsets)
    alter_group_offsets = blocking(AIOAdminClient.alter_group_offsets)
    delete_group_offsets = blocking(AIOAdminClient.delete_group_offsets)
    list_offsets = blocking(AIOAdminClient.list_offsets)
    delete_records = blocking(AIOAdminClient.delete_records)
    describe_cluster = blocking(AIOAdminClient.describe_cluster)
    elect_leaders = blocking(AIOAdminClient.elect_leaders)
    list_transactions = blocking(AIOAdminClient.list_transactions)
    describe_transactions = blocking(AIOAdminClient.describe_transactions)
    describe_producers = blocking(AIOAdminClient.describe_producers)
    abort_transaction = blocking(AIOAdminClient.abort_transaction)
    describe_client_quotas = blocking(AIOAdminClient.describe_client_quotas)
    alter_client_quotas = blocking(AIOAdminClient.alter_client_quotas)
    create_acls = blocking(AIOAdminClient.create_acls)
    describe_acls = blocking(AIOAdminClient.describe_acls)
    delete_acls = blocking(AIOAdminClient.delete_acls)
    describe_user_scram_credentials = blocking(AIOAdminClient.describe_user_scram_credentials)
    alter_user_scram_credentials = blocking(AIOAdminClient.alter_user_scram_credentials)
