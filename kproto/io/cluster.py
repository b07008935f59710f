"""What a client knows of the cluster: brokers, topics, leaders, and a connection to each.

:class:`Cluster` bootstraps from ``bootstrap.servers`` (each tried in turn until one
answers Metadata), then keeps a metadata cache that callers refresh when a broker says
it is stale (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ...) and that expires
after ``metadata.max.age.ms``. Connections are opened lazily, one per broker, and
reopened after a failure no sooner than the reconnect backoff allows
(``reconnect.backoff.ms`` doubling up to ``reconnect.backoff.max.ms``, as Java does).
Concurrent refreshes share one Metadata request.

Security (issue 15): the TLS context (:func:`kproto.security.tls.client_context`) and the
SASL client (:func:`kproto.security.sasl.client_sasl`) are made once, here, from the
client's settings, so that a bad file or a missing password fails the client's
constructor; every connection gets them. An :class:`~kproto.errors.AuthenticationError`
is not retried by the cluster: it goes to the caller at once (the same credentials fail
on every broker; Java's ``NetworkClient`` fails the call), and the broker's next
connection waits for the reconnect backoff, so that a client called in a loop does not
storm the broker with handshakes.

Leader epochs (KIP-320). Each partition's leader epoch (Metadata v7+) is remembered, and
an answer naming an older epoch than the one seen last is not taken for that partition
(Java's ``Metadata.updateLatestMetadata``): a broker that has not yet heard of an
election cannot move a partition back to its old leader. A topic recreated under a new
topic id starts over; an answer without an epoch (v0-6, or an error) forgets it.
:meth:`Cluster.leader_epoch` is what requests send as ``current_leader_epoch`` (Fetch,
ListOffsets, OffsetForLeaderEpoch), so a broker that is behind or ahead says so
(FENCED_LEADER_EPOCH: refresh; UNKNOWN_LEADER_EPOCH: retry) instead of answering from a
stale view. :meth:`Cluster.update_leader` takes KIP-951's hint, the ``current_leader``
(and ``node_endpoints``) of a Produce v10+ or Fetch v12+ error answer: a newer epoch moves
the leader at once, without a full refresh (Java's ``Metadata.updatePartitionLeadership``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kproto.config import CONFIGS, ssl_settings
from kproto.errors import (
    AuthenticationError,
    ClientClosedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoBrokersAvailableError,
    for_code,
)
from kproto.io.connection import Connection
from kproto.io.retry import Backoff
from kproto.protocol import ApiKey
from kproto.protocol.messages import FindCoordinatorRequest, MetadataRequest
from kproto.security.sasl import SASL_PROTOCOLS, client_sasl
from kproto.security.tls import TLS_PROTOCOLS, client_context

__all__ = ["BrokerInfo", "Cluster", "PartitionInfo", "TopicInfo", "parse_bootstrap_servers"]

log = logging.getLogger("kproto.cluster")

_NO_TOPIC_ID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int  # -1 while there is none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int = 0
    offline_replicas: tuple[int, ...] = ()  # Metadata v5+: replicas whose log directory is offline


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    error_code: int = 0


def parse_bootstrap_servers(value: str | Iterable[str]) -> list[tuple[str, int]]:
    """``"a:9092,b:9093"`` (or a list of them) as ``[(host, port)]``; port 9092 if omitted.

    Raises:
        ValueError: an empty list or a bad port.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    servers = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        if item.startswith("["):  # [IPv6]:port or [IPv6]
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":") or "9092"
        elif item.count(":") == 1:
            host, port = item.split(":")
        else:  # a host without a port, or a bare IPv6 address
            host, port = item, "9092"
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bad bootstrap server {item!r}: expected host:port")
        servers.append((host, int(port)))
    if not servers:
        raise ValueError("bootstrap.servers is empty")
    return servers


def _unused_security_settings(config: Mapping[str, Any]) -> list[str]:
    """The ``ssl.*``/``sasl.*`` settings given other than their defaults that
    ``security.protocol`` does not use (Java ignores them, and its
    ``AbstractConfig.logUnused`` names them in a warning)."""
    protocol, client = config["security.protocol"], getattr(config, "client", "admin")
    unused = []
    for name in sorted(getattr(config, "explicit", ())):
        key = CONFIGS.get(name)
        if key is None or config.get(name) == key.default_for(client):
            continue  # a default passed on (a config copied as a dict) is not a setting
        if (name.startswith("ssl.") and protocol not in TLS_PROTOCOLS) or (
                name.startswith("sasl.") and protocol not in SASL_PROTOCOLS):
            unused.append(name)
    return unused


class Cluster:
    """Brokers, topic metadata and connections for one client.

    Args:
        config: the client's settings; reads ``bootstrap.servers``, ``client.id``,
            ``request.timeout.ms``, ``socket.connection.setup.timeout.ms``,
            ``metadata.max.age.ms``, ``reconnect.backoff.ms``,
            ``reconnect.backoff.max.ms``, ``retry.backoff.ms``, ``send.buffer.bytes``,
            ``receive.buffer.bytes``, ``connections.max.idle.ms``, and the security
            settings (``security.protocol``, ``ssl.*``, ``sasl.*``).
        allow_auto_topic_creation: ask brokers to create topics named in Metadata.

    Raises:
        ConfigError: security settings that contradict each other or cannot be loaded.
    """

    def __init__(self, config: Mapping[str, Any], *, allow_auto_topic_creation: bool = False) -> None:
        self.config = config
        self.bootstrap = parse_bootstrap_servers(config["bootstrap.servers"])
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self._ssl = client_context(config)
        self._sasl = client_sasl(config, ssl_settings=ssl_settings)
        unused = _unused_security_settings(config)
        if unused:  # Java's AbstractConfig.logUnused
            log.warning("security.protocol=%s does not use the settings %s: ignored", config["security.protocol"],
                        ", ".join(unused))
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.partition_counts: dict[str, int] = {}  # topics usable now; read per record by producers
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.updated_at = 0.0  # monotonic time of the last full answer
        self._epochs: dict[tuple[str, int], int] = {}  # last leader epoch seen per partition (KIP-320)
        self._connections: dict[int, Connection] = {}
        self._opening: dict[int, asyncio.Task] = {}
        self._failures: dict[int, tuple[int, float]] = {}  # node -> (failures in a row, when the last was)
        self._bootstrap_connection: Connection | None = None
        self._bootstrap_lock: asyncio.Lock | None = None
        self._refresh: asyncio.Task | None = None
        self._wanted: set[str] = set()  # topics the client cares about (refreshed together)
        self._closed = False
        self.metrics: Any = None  # the client's kproto.metrics.Metrics: connections record into it

    # -- connections ----------------------------------------------------------------------

    def _new_connection(self, host: str, port: int, node_id: int) -> Connection:
        c = self.config
        conn = Connection(
            host, port, node_id=node_id, client_id=c["client.id"], request_timeout_ms=c["request.timeout.ms"],
            connect_timeout_ms=c["socket.connection.setup.timeout.ms"],
            send_buffer_bytes=c["send.buffer.bytes"], receive_buffer_bytes=c["receive.buffer.bytes"],
            max_idle_ms=c["connections.max.idle.ms"], ssl_context=self._ssl, sasl=self._sasl,
        )
        if self.metrics is not None:  # observability (kproto.metrics)
            conn.metrics = self.metrics.node(node_id)
            self.metrics.connection_creation.record()
        return conn

    def open_connections(self) -> int:
        """How many broker connections are open now (``connection-count``)."""
        return sum(not c.closed for c in self._connections.values())

    def _backoff(self, node_id: int) -> float:
        """Seconds to wait before connecting to ``node_id`` again (0 if it may go now)."""
        failures, at = self._failures.get(node_id, (0, 0.0))
        if not failures:
            return 0.0
        return max(0.0, at + Backoff.reconnect(self.config).delay(failures) - time.monotonic())

    async def connection(self, node_id: int) -> Connection:
        """An open connection to broker ``node_id`` (opened, or reopened after a backoff).

        Raises:
            KafkaConnectionError: the broker is unknown or cannot be reached.
        """
        self._check_open()
        conn = self.connected(node_id)
        if conn is not None:
            return conn
        return await asyncio.shield(self._opening_task(node_id))

    def connected(self, node_id: int) -> Connection | None:
        """The open connection to broker ``node_id``, if there is one now (nothing is started)."""
        conn = self._connections.get(node_id)
        return conn if conn is not None and not conn.closed and not self._closed else None

    def ready(self, node_id: int, wake: Callable[[BaseException | None], None]) -> Connection | None:
        """The open connection to ``node_id`` now, without waiting; or None, having started
        to open one, and ``wake(error)`` is called when that attempt ends (error None: it
        succeeded).

        For callers whose requests to a broker must go out in the order they are made
        (the producer's): they send only on a connection that is already open, since
        callers awaiting :meth:`connection` resume in no particular order with others.
        """
        self._check_open()
        conn = self.connected(node_id)
        if conn is not None:
            return conn

        def opened(task: asyncio.Task) -> None:
            if not task.cancelled():  # cancelled: the cluster is closing
                wake(task.exception())

        self._opening_task(node_id).add_done_callback(opened)
        return None

    def _opening_task(self, node_id: int) -> asyncio.Task:
        task = self._opening.get(node_id)
        if task is None:
            task = self._opening[node_id] = asyncio.get_running_loop().create_task(self._open(node_id))
            task.add_done_callback(lambda _: self._opening.pop(node_id, None))
        return task

    async def _open(self, node_id: int) -> Connection:
        broker = self.brokers.get(node_id)
        if broker is None:
            raise KafkaConnectionError(f"broker {node_id} is not in the cluster's metadata")
        await asyncio.sleep(self._backoff(node_id))
        conn = self._new_connection(broker.host, broker.port, node_id)
        try:
            await conn.open()
        except (KafkaConnectionError, KafkaTimeoutError, AuthenticationError):
            failures = self._failures.get(node_id, (0, 0.0))[0] + 1
            self._failures[node_id] = (failures, time.monotonic())
            raise
        self._failures.pop(node_id, None)
        self._connections[node_id] = conn
        return conn

    async def any_connection(self) -> Connection:
        """A connection to some broker: an open one with the fewest requests in flight."""
        self._check_open()
        ready = [c for c in self._connections.values() if not c.closed]
        if ready:
            return min(ready, key=lambda c: c.in_flight)
        errors = []
        for node_id in random.sample(list(self.brokers), len(self.brokers)):
            try:
                return await self.connection(node_id)
            except AuthenticationError:
                raise  # the same credentials fail on every broker
            except KafkaError as exc:
                errors.append(exc)
        return await self._bootstrap_any(errors)

    async def _bootstrap_any(self, errors: list[BaseException]) -> Connection:
        if self._bootstrap_lock is None:
            self._bootstrap_lock = asyncio.Lock()
        async with self._bootstrap_lock:  # concurrent callers share one bootstrap connection
            return await self._bootstrap_locked(errors)

    async def _bootstrap_locked(self, errors: list[BaseException]) -> Connection:
        conn = self._bootstrap_connection
        if conn is not None and not conn.closed:
            return conn
        for host, port in self.bootstrap:
            await asyncio.sleep(self._backoff(-1))  # after a refusal, no storm of handshakes
            conn = self._new_connection(host, port, -1)
            try:
                await conn.open()
            except AuthenticationError:
                self._failures[-1] = (self._failures.get(-1, (0, 0.0))[0] + 1, time.monotonic())
                raise
            except KafkaError as exc:
                errors.append(exc)
                continue
            self._failures.pop(-1, None)
            self._bootstrap_connection = conn
            return conn
        servers = ",".join(f"{h}:{p}" for h, p in self.bootstrap)
        raise NoBrokersAvailableError(f"no broker of {servers} could be reached: {errors[-1] if errors else 'none tried'}")

    async def request(self, node_id: int | None, body: Any, **kwargs: Any) -> Any:
        """Send ``body`` to broker ``node_id`` (None: any broker) and return the response."""
        conn = await (self.any_connection() if node_id is None else self.connection(node_id))
        return await conn.request(body, **kwargs)

    async def find_coordinator(self, key: str, key_type: int = 0) -> int:
        """The node id of the coordinator of a group (``key_type`` 0) or transactional id (1).

        Raises:
            KafkaCodeError: the broker's answer (COORDINATOR_NOT_AVAILABLE is retriable).
        """
        conn = await self.any_connection()
        version = conn.version_for(ApiKey.FIND_COORDINATOR)
        if version >= 4:  # KIP-699: batched keys
            response = await conn.request_versioned(FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), version)
            c = response.coordinators[0]
            code, message, node, host, port = c.error_code, c.error_message, c.node_id, c.host, c.port
        else:
            response = await conn.request_versioned(FindCoordinatorRequest(key=key, key_type=key_type), version)
            code, message = response.error_code, response.error_message
            node, host, port = response.node_id, response.host, response.port
        if code:
            raise for_code(code)(message or f"finding the coordinator of {key!r}")
        if node not in self.brokers:
            self.brokers[node] = BrokerInfo(node, host, port)  # newer than our metadata
        return node

    # -- metadata -------------------------------------------------------------------------

    def want(self, topics: Iterable[str]) -> None:
        """Remember topics to keep in the cache (refreshes ask for all of them)."""
        self._wanted.update(topics)

    @property
    def stale(self) -> bool:
        return time.monotonic() - self.updated_at > self.config["metadata.max.age.ms"] / 1000

    async def refresh(self, topics: Iterable[str] | None = (), *, all_topics: bool = False) -> None:
        """Ask a broker for metadata of ``topics`` plus every wanted topic (or all topics).

        Concurrent calls share one request when it covers what they asked for.
        """
        self._check_open()
        names = set(topics or ()) | self._wanted
        running = self._refresh
        if running is not None and not running.done() and (running.all_topics or names <= running.names):
            return await asyncio.shield(running)
        task = asyncio.get_running_loop().create_task(self._fetch_metadata(None if all_topics else sorted(names)))
        task.names, task.all_topics = names, all_topics
        self._refresh = task
        await asyncio.shield(task)

    async def _fetch_metadata(self, names: list[str] | None) -> None:
        request = MetadataRequest(
            topics=None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names],
            allow_auto_topic_creation=self.allow_auto_topic_creation,
        )
        deadline = time.monotonic() + self.config["request.timeout.ms"] / 1000
        backoff, failures = Backoff.retry(self.config), 0
        while True:
            conn = await self.any_connection()
            try:
                response = await conn.request(request)
                break
            except KafkaConnectionError:
                if time.monotonic() > deadline:
                    raise
                failures += 1
                await asyncio.sleep(backoff.delay(failures))
        self._apply(response, full=names is None)

    def _apply(self, response: Any, *, full: bool) -> None:
        self.brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        for node_id in list(self._connections):
            broker = self.brokers.get(node_id)
            conn = self._connections[node_id]
            if broker is None or (broker.host, broker.port) != (conn.host, conn.port):
                asyncio.get_running_loop().create_task(conn.close())  # gone or moved
                del self._connections[node_id]
        seen = {}
        for t in response.topics:
            topic_id = t.topic_id if t.topic_id and t.topic_id != _NO_TOPIC_ID else None
            old = self.topics.get(t.name)
            recreated = topic_id is not None and old is not None and old.topic_id is not None and old.topic_id != topic_id
            partitions = {}
            for p in t.partitions:
                info = PartitionInfo(p.partition_index, p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                                     tuple(p.isr_nodes), p.error_code, tuple(p.offline_replicas or ()))
                partitions[info.partition] = self._latest(t.name, info, old, recreated)
            seen[t.name] = TopicInfo(t.name, topic_id, bool(t.is_internal), partitions, t.error_code)
        if full:
            self.topics = seen
        else:
            self.topics.update(seen)
        # In place, and never dropping a topic that is still usable: producers on other
        # threads read it without a lock.
        counts = {n: len(t.partitions) for n, t in self.topics.items() if not t.error_code and t.partitions}
        for gone in self.partition_counts.keys() - counts.keys():
            del self.partition_counts[gone]
        self.partition_counts.update(counts)
        self.updated_at = time.monotonic()

    def _latest(self, topic: str, info: PartitionInfo, old: TopicInfo | None, recreated: bool) -> PartitionInfo:
        """The partition's metadata to keep from an answer ``info``: Java's
        ``Metadata.updateLatestMetadata`` (KIP-320)."""
        key = (topic, info.partition)
        if info.leader_epoch < 0 or info.error_code:  # an old version, or an error: no epoch to trust
            self._epochs.pop(key, None)
            return info
        seen = self._epochs.get(key)
        if seen is None or recreated or info.leader_epoch >= seen:
            self._epochs[key] = info.leader_epoch
            return info
        cached = old.partitions.get(info.partition) if old is not None else None
        log.debug("%s-%d: metadata of leader epoch %d is older than %d; keeping the newer",
                  topic, info.partition, info.leader_epoch, seen)
        return cached if cached is not None else info

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The leader epoch of the partition's leader as the cache knows it, -1 when
        unknown: what requests send as ``current_leader_epoch`` (KIP-320)."""
        info = self.topics.get(topic)
        p = info.partitions.get(partition) if info is not None else None
        return p.leader_epoch if p is not None and p.leader >= 0 else -1

    def update_leader(self, topic: str, partition: int, leader_id: int, leader_epoch: int,
                      endpoints: Iterable[Any] = ()) -> bool:
        """Take a broker's hint that ``leader_id`` leads the partition at ``leader_epoch``
        (KIP-951's ``current_leader``, with the answer's ``node_endpoints``: anything with
        ``node_id``, ``host``, ``port``, ``rack``).

        Taken only when the epoch is newer than the cached one and the leader's endpoint
        is known (Java's ``Metadata.updatePartitionLeadership``); ISR and replicas stay
        as they were until the next refresh.

        Returns:
            True when the cache now names the hinted leader.
        """
        for e in endpoints or ():
            if e.node_id not in self.brokers:
                self.brokers[e.node_id] = BrokerInfo(e.node_id, e.host, e.port, e.rack)
        info = self.topics.get(topic)
        cached = info.partitions.get(partition) if info is not None else None
        if leader_id < 0 or leader_epoch < 0 or cached is None or leader_id not in self.brokers:
            return False
        if leader_epoch <= max(cached.leader_epoch, self._epochs.get((topic, partition), -1)):
            return leader_epoch == cached.leader_epoch and leader_id == cached.leader
        info.partitions[partition] = PartitionInfo(partition, leader_id, leader_epoch, cached.replicas, cached.isr,
                                                   0, cached.offline_replicas)
        self._epochs[(topic, partition)] = leader_epoch
        log.debug("%s-%d: leader %d at epoch %d (the broker's hint, KIP-951)", topic, partition, leader_id, leader_epoch)
        return True

    def leader(self, topic: str, partition: int) -> int:
        """The leader's node id of a partition, or -1 when unknown."""
        info = self.topics.get(topic)
        p = info.partitions.get(partition) if info is not None else None
        return p.leader if p is not None else -1

    def partitions_for(self, topic: str) -> int | None:
        """How many partitions ``topic`` has, or None when it is unknown (or in error)."""
        return self.partition_counts.get(topic)

    # -- closing --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("the client is closed")

    async def close(self, timeout: float | None = None) -> None:
        """Close every connection; unsent bytes get ``timeout`` seconds at most (None:
        ``request.timeout.ms``; see :meth:`Connection.close`)."""
        if self._closed:
            return
        self._closed = True
        tasks = [t for t in (*self._opening.values(), self._refresh) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        conns = list(self._connections.values())
        if self._bootstrap_connection is not None:
            conns.append(self._bootstrap_connection)
        self._connections.clear()
        await asyncio.gather(*(c.close(timeout) for c in conns), return_exceptions=True)
