"""Broker configuration: Kafka's broker config names, their defaults, and validation.

Only the keys minibroker implements are accepted; any other key is an error that names
the closest known key, so a typo never silently does nothing.

Listeners. ``listeners`` and ``advertised.listeners`` take Kafka's syntax, a comma-separated
list of ``NAME://host:port``; each name's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT,
SASL_SSL) comes from ``listener.security.protocol.map``, whose default maps each of the four
names to itself. Facts, from Kafka's ``KafkaConfig``, ``EndPoint`` and ``BrokerServer``:

- listener names are case-insensitive (upper-cased); each listener has its own name and, but
  for port 0, its own port ("Each listener must have a different name/port"); a name
  missing from the map is refused ("No security protocol defined for listener X");
- an empty host (``PLAINTEXT://:9092``) binds every interface, and is advertised as
  this machine's canonical host name; an IPv6 host goes in brackets (``[::1]``);
- ``advertised.listeners`` defaults to ``listeners``; its names must be among those of
  ``listeners``, and it may not advertise the non-routable meta-address 0.0.0.0;
- an advertised port of 0 means the bound port. minibroker also accepts an advertised
  listener without a port, with the same meaning, and advertises a listener that
  ``advertised.listeners`` does not name at its bound address (Kafka would leave it out of
  the Metadata that its own clients get).

Security settings per listener (Kafka's ``ListenerName.configPrefix``): every ``ssl.*`` key,
``sasl.enabled.mechanisms`` and ``connections.max.reauth.ms`` may also be given as
``listener.name.<name>.<key>`` (the name in lower case), which wins for that listener; the
SASL users of a mechanism come from ``listener.name.<name>.<mechanism>.sasl.jaas.config``
(e.g. ``listener.name.sasl_ssl.plain.sasl.jaas.config``), or from ``<mechanism>.sasl.jaas.config``
for every listener. OAUTHBEARER's validator of signed tokens takes the ``sasl.oauthbearer.*``
keys, also as ``listener.name.<name>.oauthbearer.<key>``, and is chosen by
``listener.name.<name>.oauthbearer.sasl.server.callback.handler.class`` (:mod:`minibroker.sasl`).
:mod:`minibroker.listeners` reads them.

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

__all__ = ["BrokerConfig", "DEFAULTS", "DYNAMIC", "LEADER_SELECTOR", "LISTENER_KEYS", "RACK_AWARE_SELECTOR",
           "OAUTHBEARER_KEYS", "REPLICA_SELECTORS", "SASL_MECHANISMS", "SECURITY_PROTOCOLS", "SENSITIVE",
           "SERVER_CALLBACK_HANDLER", "Listener", "parse_listeners"]

log = logging.getLogger("minibroker")

# name -> (default, type, doc). Defaults are Kafka's unless said otherwise.
DEFAULTS: dict[str, tuple[Any, type, str]] = {
    "broker.id": (0, int, "This broker's node id."),
    "num.partitions": (1, int, "Partitions of an auto-created topic, or of a CreateTopics with -1."),
    "default.replication.factor": (1, int, "Replication factor used when a CreateTopics asks for -1."),
    "auto.create.topics.enable": (True, bool, "Create unknown topics asked for in Metadata."),
    "socket.request.max.bytes": (104857600, int, "Largest request frame; a larger one closes the connection."),
    "listeners": ("PLAINTEXT://127.0.0.1:0", str, "The listeners to bind, comma-separated, as NAME://host:port (e.g. PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0); each name's security protocol comes from listener.security.protocol.map. An empty host binds every interface, port 0 a free port. The first listener is the broker's bootstrap address. Kafka's default is PLAINTEXT://:9092; minibroker's is loopback and an ephemeral port."),
    "advertised.listeners": ("", str, "What Metadata, DescribeCluster and FindCoordinator tell clients, per listener name, as NAME://host:port; port 0 (or none) is the bound port. Each name must be one of listeners; a listener not named here is advertised at its bound address. Empty: the same as listeners."),
    "listener.security.protocol.map": ("PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", str, "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), as NAME:PROTOCOL pairs, comma-separated. Kafka's default."),
    # TLS (Kafka's SslConfigs and BrokerSecurityConfigs, PEM form of KIP-651). Each may be
    # given per listener as listener.name.<name>.<key> (see the module docstring).
    "ssl.keystore.type": ("PEM", str, "The format of the broker's key and certificate: PEM only (KIP-651). Kafka's default is JKS, which minibroker does not read."),
    "ssl.keystore.location": ("", str, "A PEM file holding the broker's private key and its certificate chain (KIP-651), for SSL and SASL_SSL listeners."),
    "ssl.keystore.certificate.chain": ("", str, "The broker's certificate chain in PEM, inline (instead of ssl.keystore.location)."),
    "ssl.keystore.key": ("", str, "The broker's private key in PEM (PKCS#8, encrypted with ssl.key.password if given), inline (instead of ssl.keystore.location)."),
    "ssl.key.password": ("", str, "The password of the broker's encrypted private key."),
    "ssl.truststore.type": ("PEM", str, "The format of the trusted certificates: PEM only (KIP-651). Kafka's default is JKS."),
    "ssl.truststore.location": ("", str, "A PEM file of the CA certificates that client certificates are checked against (ssl.client.auth)."),
    "ssl.truststore.certificates": ("", str, "The trusted CA certificates in PEM, inline (instead of ssl.truststore.location)."),
    "ssl.client.auth": ("none", str, "Client certificates: none (not asked for), requested (checked if given) or required (a connection without one fails its TLS handshake). A client's certificate subject becomes its principal on an SSL listener. A SASL_SSL listener takes it only as listener.name.<name>.ssl.client.auth (KIP-684)."),
    "ssl.protocol": ("TLSv1.3", str, "The newest TLS version to speak: TLSv1.3, TLSv1.2 or TLS (any enabled one)."),
    "ssl.enabled.protocols": ("TLSv1.2,TLSv1.3", str, "The TLS versions a client may use, comma-separated (TLSv1.2, TLSv1.3)."),
    "ssl.endpoint.identification.algorithm": ("https", str, "On a MiniCluster's SSL or SASL_SSL inter-broker listener: https checks that another broker's certificate is for the host it is reached at (Kafka's broker default); empty: the chain is checked, not the name."),
    "ssl.principal.mapping.rules": ("DEFAULT", str, "How a client certificate's subject (RFC 2253, CN=alice,O=example) becomes the principal's name: DEFAULT keeps it whole; RULE:pattern/replacement/[LU] rules, comma-separated, are tried in order (Kafka's SslPrincipalMapper)."),
    # SASL (Kafka's BrokerSecurityConfigs).
    "sasl.enabled.mechanisms": ("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", str, "The SASL mechanisms of SASL_PLAINTEXT and SASL_SSL listeners, comma-separated: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER. Kafka's default is GSSAPI, which minibroker does not have; minibroker's enables the mechanisms whose users must be provisioned (PLAIN users in the JAAS config, SCRAM users by AlterUserScramCredentials). OAUTHBEARER, whose default validator accepts any unsecured JWT, must be enabled explicitly."),
    "connections.max.reauth.ms": (0, int, "KIP-368: the longest SASL session; a client that does not authenticate again within it is disconnected at its next request. The session ends earlier when the credential does (an OAUTHBEARER token's expiry). 0: no limit but the credential's."),
    "sasl.server.max.receive.size": (524288, int, "The largest frame a connection on a SASL listener may send before it has authenticated; a larger one closes it (Kafka's default)."),
    "connection.failed.authentication.delay.ms": (100, int, "How long the answer to a failed authentication is held back before the connection closes, so that a client with a wrong password cannot spin (Kafka's default)."),
    # OAUTHBEARER against a JWKS (KIP-768; Kafka's SaslConfigs, read by BrokerJwtValidator):
    # in force on a listener whose listener.name.<name>.oauthbearer.sasl.server.callback.handler.class
    # is OAuthBearerValidatorCallbackHandler. Each may be given per listener, also with the
    # mechanism prefix: listener.name.<name>.oauthbearer.<key>.
    "sasl.oauthbearer.jwks.endpoint.url": ("", str, "Where the OAUTHBEARER validator gets the identity provider's signature keys (a JWKS): an http(s):// URL, fetched when the broker starts and every sasl.oauthbearer.jwks.endpoint.refresh.ms, or a file:// path. Used with listener.name.<name>.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler (KIP-768)."),
    "sasl.oauthbearer.expected.audience": ("", str, "Comma-separated audiences a signed OAUTHBEARER token's aud must name one of; empty: a token with an aud is refused (Kafka's rule)."),
    "sasl.oauthbearer.expected.issuer": ("", str, "The iss a signed OAUTHBEARER token must have; empty: not checked."),
    "sasl.oauthbearer.clock.skew.seconds": (30, int, "Leeway for a signed OAUTHBEARER token's exp, nbf and iat, in seconds."),
    "sasl.oauthbearer.sub.claim.name": ("sub", str, "The claim of a signed OAUTHBEARER token that names the principal."),
    "sasl.oauthbearer.scope.claim.name": ("scope", str, "The claim of a signed OAUTHBEARER token that holds its scope."),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": (3600000, int, "How often the JWKS of an http(s):// sasl.oauthbearer.jwks.endpoint.url is fetched again (a token naming an unknown key id asks for an earlier refresh)."),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": (100, int, "The first wait before fetching the JWKS again after a failure; doubled up to sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms."),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": (10000, int, "The longest wait between attempts to fetch the JWKS."),
    # Broker-to-broker traffic (Kafka's KafkaConfig): read by a MiniCluster's brokers.
    "inter.broker.listener.name": ("", str, "The listener the brokers of a MiniCluster use to reach each other (replica fetches, transaction markers); one of listeners. Empty: the listener named after security.inter.broker.protocol. Give one of the two only (Kafka's rule). Used by a MiniCluster only."),
    "security.inter.broker.protocol": ("PLAINTEXT", str, "Without inter.broker.listener.name, the brokers of a MiniCluster reach each other on the listener of this name (PLAINTEXT, Kafka's default). Used by a MiniCluster only."),
    "sasl.mechanism.inter.broker.protocol": ("", str, "The SASL mechanism of a MiniCluster's brokers on a SASL_PLAINTEXT or SASL_SSL inter-broker listener: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, enabled on that listener. Kafka's default is GSSAPI, which minibroker does not have; empty: PLAIN if the listener enables it, else its first enabled mechanism. The broker's user name and password are the username and password options of the listener's <mechanism>.sasl.jaas.config."),
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
    # Client quotas (Kafka's ClientQuotaManagerConfig; minibroker.quotas).
    "quota.window.num": (11, int, "How many samples a client's usage is measured over, for its quotas (10 whole windows and the current one). At least 1."),
    "quota.window.size.seconds": (1, int, "The span of each sample of a client's usage, for its quotas; a request-time throttle is at most this long. At least 1."),
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


#: Kafka's security protocols (SecurityProtocol).
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The SASL mechanisms minibroker serves (GSSAPI is not one).
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: The keys that ``listener.name.<name>.<key>`` may set for one listener.
LISTENER_KEYS = frozenset({name for name in DEFAULTS if name.startswith(("ssl.", "sasl.oauthbearer."))}
                          | {"sasl.enabled.mechanisms", "connections.max.reauth.ms"})
#: Kafka's ``sasl.server.callback.handler.class``, given only as
#: ``listener.name.<name>.<mechanism>.sasl.server.callback.handler.class`` (BrokerSecurityConfigs).
SERVER_CALLBACK_HANDLER = "sasl.server.callback.handler.class"
#: The keys that ``listener.name.<name>.oauthbearer.<key>`` may set (SaslChannelBuilder's
#: mechanism prefix, which ConfigurationUtils reads first).
OAUTHBEARER_KEYS = frozenset({name for name in DEFAULTS if name.startswith("sasl.oauthbearer.")}
                             | {SERVER_CALLBACK_HANDLER})
#: Keys whose values DescribeConfigs hides (Kafka's PASSWORD type): any key ending so.
SENSITIVE = ("ssl.key.password", "ssl.keystore.key", "sasl.jaas.config")
# A JAAS config of one mechanism: <mechanism>.sasl.jaas.config (JaasContext.loadServerContext).
_JAAS_KEY = re.compile(r"(?P<mechanism>[a-z0-9-]+)\.sasl\.jaas\.config")
_LISTENER_PREFIX = "listener.name."
# Kafka's EndPoint syntax, but an IPv6 host must be in brackets, which keeps the port
# optional (an advertised listener may leave it to the bound port) without ambiguity.
_LISTENER = re.compile(r"(?P<name>[A-Za-z0-9_]+)://(?:\[(?P<ipv6>[0-9a-fA-F:.%]*)\]|(?P<host>[0-9a-zA-Z\-%._]*))"
                       r"(?::(?P<port>-?[0-9]+))?")
# Addresses that mean "every interface": a client cannot connect to them.
_META_ADDRESSES = frozenset({"0.0.0.0", "::"})


@dataclass(frozen=True, slots=True)
class Listener:
    """One ``listeners`` / ``advertised.listeners`` entry: ``NAME://host:port``.

    Attributes:
        host: an address or name; "" binds every interface and is advertised as this
            machine's canonical host name.
        port: 0 binds a free port; for an advertised listener, 0 or None is the bound port.
        name: the listener name, upper case (Kafka's ``ListenerName.normalised``).
    """

    host: str
    port: int | None
    name: str = "PLAINTEXT"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}" if self.port is None else f"{self.name}://{host}:{self.port}"


def parse_listeners(key: str, value: str) -> list[Listener]:
    """The listeners in ``value``, in Kafka's syntax and order; empty when ``value`` is.

    Args:
        key: the config key that holds ``value``, named in errors.
        value: e.g. ``PLAINTEXT://127.0.0.1:9092,SASL_SSL://:9093`` or
            ``PLAINTEXT://[::1]:0``; listener names are case-insensitive, as in Kafka.

    Raises:
        ValueError: a malformed listener, a port above 65535, or two listeners of one name
            (Kafka's "Each listener must have a different name").
    """
    listeners = []
    for item in (item.strip() for item in value.split(",")):
        if not item:
            continue
        match = _LISTENER.fullmatch(item)
        if match is None:
            raise ValueError(f"{key} must look like NAME://host:port, not {item!r}")
        port = None if match["port"] is None else int(match["port"])
        if port is not None and not 0 <= port <= 65535:
            raise ValueError(f"{key}: port {port} is not between 0 and 65535")
        listeners.append(Listener(match["host"] if match["ipv6"] is None else match["ipv6"], port, match["name"].upper()))
    names = [listener.name for listener in listeners]
    if len(set(names)) != len(names):  # CoreUtils.listenerListToEndPoints
        raise ValueError(f"{key}: Each listener must have a different name, listeners: {value}")
    return listeners


def _protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map`` as {listener name: security protocol}."""
    protocols = {}
    for item in (item.strip() for item in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"listener.security.protocol.map must be NAME:PROTOCOL pairs, not {item!r}")
        protocol = protocol.strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"listener.security.protocol.map: {protocol!r} for listener {name.strip()} is not a "
                             f"security protocol ({', '.join(SECURITY_PROTOCOLS)})")
        protocols[name.strip().upper()] = protocol
    return protocols


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
        #: listener.name.<name>.<key> and <mechanism>.sasl.jaas.config values, by key
        self._security: dict[str, Any] = {}
        for name, value in values.items():
            if name not in DEFAULTS and self._security_key(name, value):
                continue
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
        self._listeners()

    def _listeners(self) -> None:
        """Check ``listeners``, ``advertised.listeners`` and the protocol map (KafkaConfig's rules)."""
        #: Listener name -> security protocol, from listener.security.protocol.map.
        self.security_protocols: dict[str, str] = _protocol_map(self._static["listener.security.protocol.map"])
        listeners = parse_listeners("listeners", self._static["listeners"])
        if not listeners or any(listener.port is None for listener in listeners):
            raise ValueError("listeners must name a host and port, as PLAINTEXT://host:port (port 0 picks a free one)")
        ports = [listener.port for listener in listeners if listener.port != 0]  # port 0: each its own free port
        if len(set(ports)) != len(ports):
            raise ValueError(f"listeners: Each listener must have a different port, listeners: {self._static['listeners']}")
        for listener in listeners:
            if listener.name not in self.security_protocols:  # EndPoint.createEndPoint
                raise ValueError(f"listeners: No security protocol defined for listener {listener.name}")
        advertised = {a.name: a for a in parse_listeners("advertised.listeners", self._static["advertised.listeners"])}
        names = [listener.name for listener in listeners]
        if not set(advertised) <= set(names):
            raise ValueError("advertised.listeners listener names must be equal to or a subset of the ones defined in "
                             f"listeners. Found {','.join(advertised)}. The valid options based on the current "
                             f"configuration are {','.join(names)}")
        #: The listeners to bind, in order; the first is the broker's bootstrap address.
        self.listeners: list[Listener] = listeners
        #: What each listener advertises, by name (its own address unless advertised.listeners names it).
        self.advertised_listeners: dict[str, Listener] = {listener.name: advertised.get(listener.name, listener)
                                                          for listener in listeners}
        for a in self.advertised_listeners.values():
            if a.host in _META_ADDRESSES:
                raise ValueError(f"advertised.listeners cannot use the non-routable meta-address {a.host} "
                                 "(it defaults to listeners); advertise an address clients can reach, such as 127.0.0.1")
        self.listener: Listener = listeners[0]
        self.advertised_listener: Listener = self.advertised_listeners[listeners[0].name]

    def _security_key(self, name: str, value: Any) -> bool:
        """Keep ``name`` if it is a per-listener override or a mechanism's JAAS config."""
        key = name
        if name.startswith(_LISTENER_PREFIX):
            listener, _, key = name[len(_LISTENER_PREFIX):].partition(".")
            if not listener:
                return False
        if key in LISTENER_KEYS and key != name:
            self._security[name] = _coerce(name, value, DEFAULTS[key][1])
            return True
        mechanism, _, setting = key.partition(".")
        if key != name and mechanism == "oauthbearer" and setting in OAUTHBEARER_KEYS:
            self._security[name] = _coerce(name, value, DEFAULTS[setting][1] if setting in DEFAULTS else str)
            return True
        jaas = _JAAS_KEY.fullmatch(key)
        if jaas is not None:
            if jaas["mechanism"].upper() not in SASL_MECHANISMS:
                raise ValueError(f"{name}: minibroker has no SASL mechanism {jaas['mechanism'].upper()} "
                                 f"(one of {', '.join(SASL_MECHANISMS)})")
            self._security[name] = str(value)
            return True
        return False

    def for_listener(self, listener_name: str, key: str, *, inherit: bool = True, mechanism: str | None = None) -> Any:
        """``key``'s value for one listener: ``listener.name.<name>.<key>`` if given, else
        ``key``'s (Kafka's ``valuesWithPrefixOverride``); None for a JAAS key given nowhere.
        With ``inherit`` false, only the listener's own value counts (else the default).
        With a SASL ``mechanism``, ``listener.name.<name>.<mechanism>.<key>`` comes first
        (Kafka's ConfigurationUtils reads the mechanism's prefix first)."""
        if mechanism is not None:
            own = f"{_LISTENER_PREFIX}{listener_name.lower()}.{mechanism.lower()}.{key}"
            if own in self._security:
                return self._security[own]
        prefixed = f"{_LISTENER_PREFIX}{listener_name.lower()}.{key}"
        if prefixed in self._security:
            return self._security[prefixed]
        if not inherit:
            return DEFAULTS[key][0]
        if key in DEFAULTS:
            return self[key]
        return self._security.get(key)

    @property
    def inter_broker_listener_name(self) -> str:
        """The listener of broker-to-broker traffic (Kafka's
        ``KafkaConfig.interBrokerListenerName``): ``inter.broker.listener.name``, else the
        listener named after ``security.inter.broker.protocol``."""
        return (self["inter.broker.listener.name"] or self["security.inter.broker.protocol"]).strip().upper()

    def check_inter_broker_listener(self) -> str:
        """:attr:`inter_broker_listener_name`, checked as KafkaConfig checks a broker's.

        Raises:
            ValueError: both keys given, or the name is none of the listeners.
        """
        if self.is_set("inter.broker.listener.name") and self.is_set("security.inter.broker.protocol"):
            raise ValueError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
        name = self.inter_broker_listener_name
        if name not in self.advertised_listeners:
            raise ValueError(f"inter.broker.listener.name must be a listener name defined in advertised.listeners. The "
                             f"valid options based on currently configured listeners are "
                             f"{','.join(self.advertised_listeners)}")
        return name

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
