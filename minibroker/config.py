"""Broker configuration: Kafka's broker config names, their defaults, and validation.

Only the keys minibroker implements are accepted; any other key is an error that names
the closest known key, so a typo never silently does nothing.

Listeners. ``listeners`` and ``advertised.listeners`` take Kafka's syntax,
``NAME://host:port``, with one listener, named ``PLAINTEXT`` (SSL and SASL are not
supported yet). Facts, from Kafka's ``KafkaConfig`` and ``BrokerServer``:

- an empty host (``PLAINTEXT://:9092``) binds every interface, and is advertised as
  this machine's canonical host name; an IPv6 host goes in brackets (``[::1]``);
- ``advertised.listeners`` defaults to ``listeners``, and may not advertise the
  non-routable meta-address 0.0.0.0;
- an advertised port of 0 means the bound port. minibroker also accepts an advertised
  listener without a port, with the same meaning.

Topic defaults. The broker synonym of every topic config (``log.segment.bytes`` for
``segment.bytes``, ``message.max.bytes`` for ``max.message.bytes``..., Kafka's
``ServerTopicConfigSynonyms``) is a broker config here, with the topic config's type,
default and validator (:mod:`minibroker.topic_configs`): a topic without its own setting
takes the broker's.

Dynamic broker configs (KIP-226). Those synonyms, and only they (Kafka's
``DynamicLogConfig``), may also be changed while the broker runs, by AlterConfigs or
IncrementalAlterConfigs on the BROKER resource: for this broker (its id as the name) or
as the cluster-wide default (the empty name). A value is looked up in that order: this
broker's dynamic value, the cluster default's, the static one (given at start), Kafka's
default; DescribeConfigs reports the first as the source and the rest as synonyms.
Other keys are read-only: "Cannot update these configs dynamically". Storage keeps the
dynamic values in the first log directory, so they survive a restart.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minibroker.authorizer import AUTHORIZER_CLASSES
from minibroker.topic_configs import TOPIC_CONFIGS, ConfigKey, ConfigSource, ConfigType

__all__ = ["BrokerConfig", "DEFAULTS", "DYNAMIC", "LEADER_SELECTOR", "RACK_AWARE_SELECTOR", "REPLICA_SELECTORS", "Listener",
           "parse_listener"]

log = logging.getLogger("minibroker")

# name -> (default, type, doc). Defaults are Kafka's unless said otherwise.
DEFAULTS: dict[str, tuple[Any, type, str]] = {
    "broker.id": (0, int, "This broker's node id."),
    "num.partitions": (1, int, "Partitions of an auto-created topic, or of a CreateTopics with -1."),
    "default.replication.factor": (1, int, "Replication factor used when a CreateTopics asks for -1."),
    "auto.create.topics.enable": (True, bool, "Create unknown topics asked for in Metadata."),
    "socket.request.max.bytes": (104857600, int, "Largest request frame; a larger one closes the connection."),
    "listeners": ("PLAINTEXT://127.0.0.1:0", str, "The one listener to bind, as PLAINTEXT://host:port; an empty host binds every interface, port 0 a free port. Kafka's default is PLAINTEXT://:9092; minibroker's is loopback and an ephemeral port."),
    "advertised.listeners": ("", str, "The listener that Metadata and DescribeCluster tell clients, as PLAINTEXT://host:port; port 0 (or none) is the bound port. Empty: the same as listeners."),
    "cluster.id": ("minibroker-cluster", str, "Cluster id reported in Metadata (minibroker's own default)."),
    "log.dirs": ("", str, "Comma-separated directories for the partition logs; empty keeps everything in memory (minibroker's default)."),
    "log.retention.check.interval.ms": (300000, int, "How often retention and compaction run."),
    "group.initial.rebalance.delay.ms": (0, int, "How long a new group's first rebalance waits for more members. Kafka's default is 3000; minibroker uses 0 so that tests do not wait 3 s for every new group."),
    "group.min.session.timeout.ms": (6000, int, "Smallest session.timeout.ms a member may ask for (INVALID_SESSION_TIMEOUT below)."),
    "group.max.session.timeout.ms": (1800000, int, "Largest session.timeout.ms a member may ask for (INVALID_SESSION_TIMEOUT above)."),
    "offsets.topic.num.partitions": (50, int, "Partitions of __consumer_offsets, created on the first offset commit; fixed once it exists."),
    "offsets.topic.segment.bytes": (104857600, int, "segment.bytes of __consumer_offsets (compacted, so old commits are cleaned once segments roll)."),
    "producer.id.expiration.ms": (86400000, int, "How long an idempotent producer's state on a partition is kept after its last write; then its next batch is accepted at any sequence (KIP-854). At least 1."),
    # The transaction coordinator (Kafka's TransactionStateManagerConfig and TransactionLogConfig).
    "transactional.id.expiration.ms": (604800000, int, "How long a transactional id is kept without use (Empty or its last transaction complete); then it is removed with a tombstone in __transaction_state, and its next InitProducerId gets a new producer id."),
    "transaction.max.timeout.ms": (900000, int, "Largest transaction.timeout.ms a producer may ask for in InitProducerId (INVALID_TRANSACTION_TIMEOUT above)."),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (10000, int, "How often ongoing transactions older than their transaction.timeout.ms are looked for and aborted (their producer fenced by an epoch bump). At least 1."),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (3600000, int, "How often transactional ids unused for transactional.id.expiration.ms are looked for. At least 1."),
    "transaction.state.log.num.partitions": (50, int, "Partitions of __transaction_state, created on the first use of a transactional id; fixed once it exists."),
    "transaction.state.log.segment.bytes": (104857600, int, "segment.bytes of __transaction_state (compacted)."),
    "transaction.state.log.replication.factor": (3, int, "Replication factor of __transaction_state (a MiniCluster uses at most its number of brokers). Used by a MiniCluster only."),
    "add.partitions.to.txn.retry.backoff.ms": (20, int, "With transaction version 2, how long a partition leader waits before asking the transaction coordinator again to add a partition that answered CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being written). At least 1."),
    "add.partitions.to.txn.retry.backoff.max.ms": (100, int, "With transaction version 2, how long in all a partition leader keeps asking the coordinator to add a partition that answers CONCURRENT_TRANSACTIONS before the Produce gets NOT_ENOUGH_REPLICAS (which the producer retries). At least 1."),
    "transaction.partition.verification.enable": (True, bool, "KIP-890 part 1: a leader appends a transactional batch that would open a transaction on a partition only once the transaction coordinator confirms the partition is in the producer's ongoing transaction (AddPartitionsToTxn v4+ verify_only); otherwise INVALID_TXN_STATE."),
    "transaction.version": (2, int, "The transaction.version feature finalized (KIP-584 features; Kafka finalizes it with kafka-storage format --feature or kafka-features upgrade, not a broker config): 0 as Kafka 3.x, 1 flexible __transaction_state records, 2 KIP-890 part 2 (an epoch bump at every EndTxn v5, partitions added by the leader on Produce v12). ApiVersions advertises it, and EndTxn v5 and Produce v12 only with 2."),
    "transaction.state.log.min.isr": (2, int, "min.insync.replicas of __transaction_state (capped at its replication factor). Used by a MiniCluster only."),
    "offsets.retention.minutes": (10080, int, "How long an empty group's committed offsets are kept (KIP-211: counted from when the group became empty; for a standalone consumer, from the commit); then they and the group go. Kafka's minimum is 1; minibroker also takes 0 (expire at the next check), for tests."),
    "offsets.retention.check.interval.ms": (600000, int, "How often expired offsets and empty groups are looked for."),
    "request.timeout.ms": (30000, int, "How long a broker's own acks=all append waits for the ISR: a transaction marker's (WriteTxnMarkers)."),
    "connections.max.idle.ms": (600000, int, "Close a connection that has received and sent nothing for this long."),
    # Replication and the controller: read by a MiniCluster's brokers (minibroker.cluster);
    # a single MiniBroker accepts them and has nothing to replicate.
    "broker.rack": ("", str, "This broker's rack (KIP-36): replicas of a partition go to distinct racks where they can. Empty: no rack. Used by a MiniCluster only."),
    "replica.lag.time.max.ms": (30000, int, "A follower that has not caught up with the leader's log end for this long leaves the ISR. Used by a MiniCluster only."),
    "replica.fetch.wait.max.ms": (500, int, "How long a follower's Fetch waits at the leader for data. Used by a MiniCluster only."),
    "replica.fetch.min.bytes": (1, int, "Bytes a follower's Fetch waits for. Used by a MiniCluster only."),
    "replica.fetch.max.bytes": (1048576, int, "Bytes a follower fetches per partition (at least one batch). Used by a MiniCluster only."),
    "replica.fetch.response.max.bytes": (10485760, int, "Bytes a follower's Fetch answer may hold in all (at least one batch). Used by a MiniCluster only."),
    "replica.fetch.backoff.ms": (1000, int, "How long a follower waits after a failed Fetch. Used by a MiniCluster only."),
    "replica.high.watermark.checkpoint.interval.ms": (5000, int, "How often the high watermarks are written to replication-offset-checkpoint. Used by a MiniCluster only."),
    "broker.heartbeat.interval.ms": (2000, int, "How often a broker heartbeats to the controller. Used by a MiniCluster only."),
    "broker.session.timeout.ms": (9000, int, "A broker without a heartbeat for this long is fenced by the controller: it leaves every ISR and its partitions get new leaders. Used by a MiniCluster only."),
    "controller.quorum.fetch.timeout.ms": (2000, int, "A controller silent for this long is replaced by another broker's (combined mode). Used by a MiniCluster only."),
    "offsets.commit.timeout.ms": (5000, int, "How long an offset commit waits for every ISR member of its __consumer_offsets partition to have it (acks=all); then it is answered COORDINATOR_NOT_AVAILABLE. Used by a MiniCluster only (a single broker's commit is on its ISR once appended)."),
    "auto.leader.rebalance.enable": (True, bool, "The controller moves leadership back to each partition's preferred replica (the first of its replicas) once that replica is live and in the ISR, checked every leader.imbalance.check.interval.seconds. Used by a MiniCluster only."),
    "leader.imbalance.check.interval.seconds": (300, int, "How often the controller checks for partitions led by another replica than their preferred one (at least 1). Used by a MiniCluster only."),
    "leader.imbalance.per.broker.percentage": (10, int, "The share of a broker's preferred partitions (in percent) that may be led by others before the controller moves them back (ZooKeeper-mode Kafka's rule; KRaft accepts the key and moves every such partition, as 0 does here). Used by a MiniCluster only."),
    "replica.selector.class": ("", str, "Which replica a consumer that names its rack (client.rack, Fetch v11+) is sent to read from (KIP-392): empty, Kafka's default, is always the leader; org.apache.kafka.common.replica.RackAwareReplicaSelector is an in-sync replica in the consumer's rack. Used by a MiniCluster only."),
    "offsets.topic.replication.factor": (3, int, "Replication factor of __consumer_offsets (a MiniCluster uses at most its number of brokers). Used by a MiniCluster only."),
    "queued.max.request.bytes": (104857600, int, "Bytes of requests being received, across connections, beyond which no new request is read until memory frees up (-1: no limit). Kafka's default is -1; minibroker's is 100 MB so that half-sent huge requests cannot take all memory."),
    # The authorizer (minibroker.authorizer: Kafka's StandardAuthorizer rules).
    "authorizer.class.name": ("", str, "The authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer, taken as the same) checks every request against the ACLs made by CreateAcls; empty, Kafka's default, allows everything and answers the ACL requests SECURITY_DISABLED."),
    "super.users": ("", str, "Principals that may do anything whatever the ACLs say, separated by semicolons (User:admin;User:broker)."),
    "allow.everyone.if.no.acl.found": (False, bool, "With the authorizer on: whether a resource no ACL applies to is open to everyone (true) or to super users only (false, Kafka's default)."),
}

#: replica.selector.class values (KIP-392): Kafka's two ReplicaSelector classes, by their
#: Java names, and "" (Kafka's default, null: the leader serves every fetch).
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderReplicaSelector"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
REPLICA_SELECTORS = frozenset({"", LEADER_SELECTOR, RACK_AWARE_SELECTOR})

_PYTHON_TYPES: dict[int, type] = {ConfigType.BOOLEAN: bool, ConfigType.INT: int, ConfigType.LONG: int,
                                  ConfigType.DOUBLE: float, ConfigType.STRING: str, ConfigType.LIST: str}
# Broker synonym -> its topic config, which gives the type, default and validator.
_SYNONYM_OF: dict[str, ConfigKey] = {key.synonym: key for key in TOPIC_CONFIGS.values() if key.synonym}
for _name, _key in sorted(_SYNONYM_OF.items()):
    DEFAULTS[_name] = (_key.check(_key.default), _PYTHON_TYPES[_key.type], f"Default {_key.name} of topics: {_key.doc}.")

#: The broker configs that AlterConfigs may change while the broker runs.
DYNAMIC: frozenset[str] = frozenset(_SYNONYM_OF)


# Kafka's security protocols that need TLS or SASL on the connection.
_SECURED = frozenset({"SSL", "SASL_PLAINTEXT", "SASL_SSL"})
# Kafka's EndPoint syntax, but an IPv6 host must be in brackets, which keeps the port
# optional (an advertised listener may leave it to the bound port) without ambiguity.
_LISTENER = re.compile(r"(?P<name>[A-Za-z0-9_]+)://(?:\[(?P<ipv6>[0-9a-fA-F:.%]*)\]|(?P<host>[0-9a-zA-Z\-%._]*))"
                       r"(?::(?P<port>-?[0-9]+))?")
# Addresses that mean "every interface": a client cannot connect to them.
_META_ADDRESSES = frozenset({"0.0.0.0", "::"})


@dataclass(frozen=True, slots=True)
class Listener:
    """One ``listeners`` / ``advertised.listeners`` entry: ``PLAINTEXT://host:port``.

    Attributes:
        host: an address or name; "" binds every interface and is advertised as this
            machine's canonical host name.
        port: 0 binds a free port; for an advertised listener, 0 or None is the bound port.
    """

    host: str
    port: int | None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"PLAINTEXT://{host}" if self.port is None else f"PLAINTEXT://{host}:{self.port}"


def parse_listener(key: str, value: str) -> Listener | None:
    """The one listener in ``value``, in Kafka's syntax; None when ``value`` is empty.

    Args:
        key: the config key that holds ``value``, named in errors.
        value: e.g. ``PLAINTEXT://127.0.0.1:9092``, ``PLAINTEXT://:9092`` or
            ``PLAINTEXT://[::1]:0``; the listener name is case-insensitive, as in Kafka.

    Raises:
        ValueError: more than one listener, SSL or SASL, a listener name other than
            PLAINTEXT, a malformed listener, or a port above 65535.
    """
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        return None
    if len(items) > 1:
        raise ValueError(f"{key}: minibroker serves one listener, not {len(items)} ({value!r})")
    match = _LISTENER.fullmatch(items[0])
    if match is None:
        raise ValueError(f"{key} must look like PLAINTEXT://host:port, not {items[0]!r}")
    name = match["name"].upper()
    if name in _SECURED:
        raise ValueError(f"{key}: minibroker supports only PLAINTEXT listeners; {name} (TLS or SASL) is not supported yet")
    if name != "PLAINTEXT":
        raise ValueError(f"{key}: the listener must be named PLAINTEXT, not {match['name']!r} "
                         "(minibroker has no listener.security.protocol.map)")
    port = None if match["port"] is None else int(match["port"])
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"{key}: port {port} is not between 0 and 65535")
    return Listener(match["host"] if match["ipv6"] is None else match["ipv6"], port)


def _coerce(name: str, value: Any, kind: type) -> Any:
    if name in _SYNONYM_OF:
        return _SYNONYM_OF[name].check(value, name)
    if kind is bool and isinstance(value, str):
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError(f"{name} must be true or false, not {value!r}")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {kind.__name__}, not {value!r}") from None


class BrokerConfig:
    """Validated broker settings; read them as ``config["num.partitions"]``.

    Args:
        values: settings under Kafka's names; the others keep their defaults.

    Attributes:
        listener: where to bind, from ``listeners``.
        advertised_listener: what to tell clients, from ``advertised.listeners``, else
            ``listener``.

    Raises:
        ValueError: an unknown key (naming the closest known one) or an invalid value,
            naming its key.
    """

    def __init__(self, values: Mapping[str, Any] | None = None):
        values = dict(values or {})
        self._static = {name: default for name, (default, _, _) in DEFAULTS.items()}
        for name, value in values.items():
            if name not in DEFAULTS:
                close = difflib.get_close_matches(name, list(DEFAULTS), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"unknown or not yet supported broker config {name!r}{hint}")
            self._static[name] = _coerce(name, value, DEFAULTS[name][1])
        self._given = frozenset(values)
        if self._static["replica.selector.class"] not in REPLICA_SELECTORS:
            raise ValueError(f"replica.selector.class {self._static['replica.selector.class']!r} is not one minibroker "
                             f"has: use one of {sorted(REPLICA_SELECTORS)}")
        if self._static["leader.imbalance.check.interval.seconds"] < 1:
            raise ValueError("leader.imbalance.check.interval.seconds must be at least 1")  # Kafka's atLeast(1)
        if self._static["transaction.version"] not in (0, 1, 2):
            raise ValueError("transaction.version must be 0, 1 or 2 (Kafka's TransactionVersion TV_0, TV_1, TV_2)")
        for name in ("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                     "transaction.remove.expired.transaction.cleanup.interval.ms",
                     "add.partitions.to.txn.retry.backoff.ms", "add.partitions.to.txn.retry.backoff.max.ms"):
            if self._static[name] < 1:
                raise ValueError(f"{name} must be at least 1")  # Kafka's atLeast(1)
        if self._static["authorizer.class.name"] not in {"", *AUTHORIZER_CLASSES}:
            raise ValueError(f"authorizer.class.name {self._static['authorizer.class.name']!r} is not an authorizer "
                             f"minibroker has: use one of {sorted(AUTHORIZER_CLASSES)}, or leave it empty")
        # Dynamic layers (KIP-226): "" the cluster-wide default, "broker" this broker's own.
        self._dynamic: dict[str, dict[str, Any]] = {"": {}, "broker": {}}
        listener = parse_listener("listeners", self._static["listeners"])
        if listener is None or listener.port is None:
            raise ValueError("listeners must name a host and port, as PLAINTEXT://host:port (port 0 picks a free one)")
        self.listener: Listener = listener
        self.advertised_listener: Listener = parse_listener("advertised.listeners", self._static["advertised.listeners"]) or listener
        if self.advertised_listener.host in _META_ADDRESSES:
            raise ValueError(f"advertised.listeners cannot use the non-routable meta-address {self.advertised_listener.host} "
                             "(it defaults to listeners); advertise an address clients can reach, such as 127.0.0.1")

    def __getitem__(self, name: str) -> Any:
        for layer in (self._dynamic["broker"], self._dynamic[""]):
            if name in layer:
                return layer[name]
        return self._static[name]

    def is_set(self, name: str) -> bool:
        """Whether ``name`` was given, even as its default (Kafka's STATIC_BROKER_CONFIG)."""
        return name in self._given

    def synonyms(self, name: str) -> list[tuple[Any, int]]:
        """``(value, source)`` of every layer that sets ``name``, the one in force first:
        this broker's dynamic value, the cluster default's, the static one, the default
        (sources are :class:`~minibroker.topic_configs.ConfigSource` codes)."""
        out = []
        if name in self._dynamic["broker"]:
            out.append((self._dynamic["broker"][name], ConfigSource.DYNAMIC_BROKER_CONFIG))
        if name in self._dynamic[""]:
            out.append((self._dynamic[""][name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
        if name in self._given:
            out.append((self._static[name], ConfigSource.STATIC_BROKER_CONFIG))
        out.append((DEFAULTS[name][0], ConfigSource.DEFAULT_CONFIG))
        return out

    def dynamic(self, per_broker: bool) -> dict[str, Any]:
        """The dynamic values of this broker (``per_broker``) or of the cluster default."""
        return dict(self._dynamic["broker" if per_broker else ""])

    @staticmethod
    def check_dynamic(values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` for a dynamic layer, each checked by its topic config's validator.

        Raises:
            ValueError: a key that cannot change while the broker runs (Kafka's "Cannot
                update these configs dynamically"), an unknown key, or an invalid value.
        """
        # Kafka stores names it does not know (for plugins); minibroker has none, so an
        # unknown name is a typo, refused with the closest known one.
        unknown = sorted(name for name in values if name not in DEFAULTS)
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(DEFAULTS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"Unknown broker configs: {unknown}{hint}")
        static = sorted(name for name in values if name not in DYNAMIC)
        if static:
            raise ValueError(f"Cannot update these configs dynamically: {static}")
        return {name: _SYNONYM_OF[name].check(value, name) for name, value in values.items()}

    def set_dynamic(self, per_broker: bool, values: Mapping[str, Any]) -> None:
        """Replace this broker's (``per_broker``) or the cluster default's dynamic values.

        Raises:
            ValueError: as :meth:`check_dynamic`; nothing changes then.
        """
        self._dynamic["broker" if per_broker else ""] = self.check_dynamic(values)

    def stored_dynamic(self) -> dict[str, dict[str, str]]:
        """Both dynamic layers as strings, to be written to disk (see :meth:`load_dynamic`)."""
        return {layer: {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in values.items()}
                for layer, values in (("default", self._dynamic[""]), ("broker", self._dynamic["broker"]))}

    def load_dynamic(self, stored: Mapping[str, Mapping[str, Any]]) -> None:
        """Take back the dynamic layers that :meth:`stored_dynamic` gave.

        A value that is no longer valid (written by another version, or edited by hand)
        is logged as an error and left out: Kafka's ``DynamicBrokerConfig`` too logs a
        stored dynamic config it cannot apply and starts with the others.
        """
        for layer, per_broker in (("default", False), ("broker", True)):
            kept = {}
            for name, value in stored.get(layer, {}).items():
                try:
                    kept.update(self.check_dynamic({name: value}))
                except ValueError as exc:
                    log.error("ignoring the stored dynamic broker config %s=%r: %s", name, value, exc)
            self._dynamic["broker" if per_broker else ""] = kept
