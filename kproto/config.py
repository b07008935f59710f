"""Client configuration: Kafka's key names, the Java client's defaults, one table.

Every client takes its settings as a dict with Kafka's names (``{"linger.ms": 5}``) or as
keyword arguments with dots as underscores (``linger_ms=5``), or both (keywords win).
Values are checked and converted here, once: ``"5"`` and ``5`` are the same, ``acks``
accepts ``"all"``/``-1``/``0``/``1``, booleans accept ``"true"``/``"false"``. A key the
client does not know is a :class:`~kproto.errors.ConfigError` naming the closest one;
a key that belongs to another kind of client (``linger.ms`` given to a consumer) is an
error too, so that a misplaced setting never silently does nothing.

:data:`CONFIGS` is the table: the documentation's configuration reference is built from
it.
"""

from __future__ import annotations

import difflib
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kproto.compression import GZIP, LZ4, ZSTD, check_level
from kproto.errors import ConfigError

__all__ = ["CONFIGS", "ClientConfig", "ConfigKey", "settings_of_kind", "ssl_settings"]

PRODUCER, CONSUMER, ADMIN = "producer", "consumer", "admin"
ALL = frozenset({PRODUCER, CONSUMER, ADMIN})


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError("expected true or false")


def _int(value: Any) -> int:
    expected = f"expected an integer (an int or a str of digits), not {type(value).__name__}"
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(expected)
    try:
        return int(value)
    except (TypeError, ValueError):  # int()'s own words ("invalid literal for int()...") name no setting
        raise ValueError(expected) from None


def _non_negative(value: Any) -> int:
    n = _int(value)
    if n < 0:
        raise ValueError("must be >= 0")
    return n


def _positive(value: Any) -> int:
    n = _int(value)
    if n <= 0:
        raise ValueError("must be > 0")
    return n


def _level(codec: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        n = _int(value)
        check_level(codec, n)
        return n
    return check


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _optional_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _one_of(*choices: str, upper: bool = False) -> Callable[[Any], str]:
    """A parser taking one of ``choices``, in any case: lower-cased (``upper``: upper-cased)."""
    def check(value: Any) -> str:
        text = str(value).upper() if upper else str(value).lower()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return text
    return check


def _acks(value: Any) -> int:
    text = str(value).lower()
    if text in ("all", "-1"):
        return -1
    if text in ("0", "1"):
        return int(text)
    raise ValueError("expected all, -1, 0 or 1")


def _servers(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = ",".join(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected host:port[,host:port...]")
    return value


def _strategies(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    known = ("range", "roundrobin", "cooperative-sticky")
    out = []
    for item in items:
        name = item.strip().lower() if isinstance(item, str) else item
        if isinstance(name, str) and name not in known:
            raise ValueError(f"unknown assignor {item!r}; known: {', '.join(known)}")
        out.append(name)
    if not out:
        raise ValueError("at least one assignor is needed")
    return tuple(out)


def _callable_or_none(value: Any) -> Any:
    if value is not None and not callable(value):
        raise ValueError("expected a callable or None")
    return value


def _interceptors(value: Any) -> tuple[Any, ...]:
    # loaded and made by kproto.interceptors when the client is made, as Java's getConfiguredInstances
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else [value] if not isinstance(value, (list, tuple)) else value
    out = tuple(i.strip() if isinstance(i, str) else i for i in items)
    return tuple(i for i in out if i != "")


def _partitioner(value: Any) -> Any:
    if value is None or value == "round_robin" or callable(value):
        return value
    raise ValueError("expected None (Java's default), \"round_robin\" or a callable")


def _store_type(value: Any) -> str | None:
    # KIP-651's PEM only: Java's JKS and PKCS12 stores need a JVM's keytool to read
    if value is None:
        return None
    text = str(value).upper()
    if text != "PEM":
        raise ValueError(f"kproto reads PEM only (KIP-651); convert the {text} store to PEM "
                         "(keytool -exportcert -rfc, openssl pkcs12 -nodes) and set type PEM")
    return text


def _endpoint_identification(value: Any) -> str:
    # Java: "https" (the default) or empty; librdkafka: "https" or "none". None is Python's
    # "not set": the default, so that a missing value never turns the check off.
    text = "https" if value is None else str(value).strip().lower()
    if text not in ("https", "", "none"):
        raise ValueError("expected https (verify the broker's host name) or empty (do not)")
    return "" if text == "none" else text


_TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")


def _tls_protocols(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    out = tuple(str(i).strip() for i in items if str(i).strip())
    for item in out:
        if item not in _TLS_VERSIONS:
            raise ValueError(f"{item!r}: kproto speaks {' and '.join(_TLS_VERSIONS)}")
    if not out:
        raise ValueError("at least one protocol is needed")
    return out


def _tls_protocol(value: Any) -> str:
    text = str(value).strip()
    if text not in ("TLS", *_TLS_VERSIONS):
        raise ValueError(f"expected TLS, {' or '.join(_TLS_VERSIONS)}")
    return text


def _optional_non_negative(value: Any) -> int | None:
    return None if value is None else _non_negative(value)


def _between(low: float, high: float, kind: Callable[[Any], Any] = float) -> Callable[[Any], Any]:
    # SaslConfigs' ConfigDef.Range of the sasl.login.refresh.* settings
    def check(value: Any) -> Any:
        try:
            n = kind(value)
        except (TypeError, ValueError):
            raise ValueError("expected a number") from None
        if not low <= n <= high:
            raise ValueError(f"must be between {low:g} and {high:g}")
        return n
    return check


def _ssl_context(value: Any) -> Any:
    if value is not None and not isinstance(value, ssl.SSLContext):
        raise ValueError("expected an ssl.SSLContext or None")
    return value


def _token_provider(value: Any) -> Any:
    # a callable, or an object whose token() method is one (kproto.security.sasl)
    if value is None or callable(value) or callable(getattr(value, "token", None)):
        return value
    raise ValueError("expected a callable returning a token, an object with a token() method, or None")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One setting: its Kafka name, default, parser, which clients take it, and its meaning."""

    name: str
    default: Any
    parse: Callable[[Any], Any]
    clients: frozenset[str]
    doc: str
    defaults_by_client: tuple[tuple[str, Any], ...] = ()  # where Java's default differs per client

    def default_for(self, client: str) -> Any:
        return dict(self.defaults_by_client).get(client, self.default)


def _key(name: str, default: Any, parse: Callable[[Any], Any], clients: frozenset[str] | str, doc: str,
         **by_client: Any) -> ConfigKey:
    clients = frozenset({clients}) if isinstance(clients, str) else clients
    return ConfigKey(name, default, parse, clients, doc, tuple(by_client.items()))


_KEYS = [
    # -- every client ---------------------------------------------------------------------
    _key("bootstrap.servers", None, _servers, ALL, "host:port pairs to learn the cluster from (required)."),
    _key("client.id", "kproto", _str, ALL, "Sent with every request; shows in broker logs and quotas."),
    _key("request.timeout.ms", 30000, _positive, ALL, "How long one request may wait for its response."),
    _key("default.api.timeout.ms", 60000, _positive, ALL - {PRODUCER},
         "Bound of blocking calls that take no timeout argument."),
    _key("socket.connection.setup.timeout.ms", 10000, _positive, ALL, "How long connecting to a broker may take."),
    _key("metadata.max.age.ms", 300000, _non_negative, ALL, "Metadata older than this is refreshed."),
    _key("reconnect.backoff.ms", 50, _non_negative, ALL, "First wait before reconnecting to a broker."),
    _key("reconnect.backoff.max.ms", 1000, _non_negative, ALL, "Largest wait between reconnects (doubling)."),
    _key("retry.backoff.ms", 100, _non_negative, ALL, "Wait before retrying a failed request."),
    _key("retry.backoff.max.ms", 1000, _non_negative, ALL, "Largest wait between retries (doubling)."),
    _key("send.buffer.bytes", 131072, _int, ALL, "SO_SNDBUF of sockets (-1: the OS default)."),
    _key("receive.buffer.bytes", 32768, _int, ALL, "SO_RCVBUF of sockets (-1: the OS default).",
         consumer=65536, admin=65536),
    _key("connections.max.idle.ms", 540000, _int, ALL, "Close connections idle this long (-1: never).", admin=300000),
    # -- observability (kproto.metrics, kproto.interceptors) ------------------------------
    _key("metrics.sample.window.ms", 30000, _positive, ALL, "The window of one metrics sample (rates, averages)."),
    _key("metrics.num.samples", 2, _positive, ALL, "How many sample windows metrics keep."),
    _key("statistics.interval.ms", 0, _non_negative, ALL,
         "librdkafka's: how often statistics.callback gets the metrics (0: never)."),
    _key("statistics.callback", None, _callable_or_none, ALL,
         "Called every statistics.interval.ms with the client's metrics() snapshot, on the client's "
         "event loop (librdkafka's stats_cb; kproto.metrics.metrics_json makes its JSON)."),
    _key("interceptor.classes", (), _interceptors, frozenset({PRODUCER, CONSUMER}),
         "Interceptors (Java's ProducerInterceptor, ConsumerInterceptor): classes, instances or "
         "import paths ('package.module.Class'), a list or a comma-separated str; called in order."),
    # -- security (kproto.security.tls and kproto.security.sasl check them together) --------
    _key("security.protocol", "PLAINTEXT", _one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", upper=True), ALL,
         "How to talk to brokers: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT (SASL without TLS) or SASL_SSL."),
    _key("ssl.context", None, _ssl_context, ALL,
         "A ready ssl.SSLContext (Python only; keyword ssl_context=): used as it is, the other ssl.* "
         "settings are not read."),
    _key("ssl.truststore.type", None, _store_type, ALL, "PEM (KIP-651); JKS and PKCS12 are not read."),
    _key("ssl.truststore.location", None, _optional_str, ALL,
         "PEM file of the CA certificates that sign the brokers' (None: the system's CAs)."),
    _key("ssl.truststore.certificates", None, _optional_str, ALL, "The same CA certificates, inline PEM."),
    _key("ssl.truststore.password", None, _optional_str, ALL, "Not for PEM (an error if set, as in Java)."),
    _key("ssl.ca.location", None, _optional_str, ALL, "librdkafka's name for ssl.truststore.location."),
    _key("ssl.keystore.type", None, _store_type, ALL, "PEM (KIP-651); JKS and PKCS12 are not read."),
    _key("ssl.keystore.location", None, _optional_str, ALL,
         "Mutual TLS: one PEM file with the client's private key and its certificate chain."),
    _key("ssl.keystore.certificate.chain", None, _optional_str, ALL,
         "Mutual TLS: the client's certificate chain, inline PEM (with ssl.keystore.key)."),
    _key("ssl.keystore.key", None, _optional_str, ALL, "Mutual TLS: the client's private key, inline PEM."),
    _key("ssl.keystore.password", None, _optional_str, ALL,
         "Not for PEM (an error if set, as in Java): a PEM key's password is ssl.key.password."),
    _key("ssl.certificate.location", None, _optional_str, ALL,
         "librdkafka's name: PEM file of the client's certificate (with ssl.key.location)."),
    _key("ssl.key.location", None, _optional_str, ALL, "librdkafka's name: PEM file of the client's private key."),
    _key("ssl.key.password", None, _optional_str, ALL, "Password of an encrypted private key."),
    _key("ssl.endpoint.identification.algorithm", "https", _endpoint_identification, ALL,
         "https: check that the broker's certificate names the host connected to; empty (or none): do not; "
         "None is the default."),
    _key("ssl.enabled.protocols", ("TLSv1.2", "TLSv1.3"), _tls_protocols, ALL, "TLS versions allowed."),
    _key("ssl.protocol", "TLSv1.3", _tls_protocol, ALL,
         "The highest TLS version used (Java's SSLContext protocol): TLSv1.2 keeps to TLSv1.2."),
    _key("sasl.mechanism", "GSSAPI", _one_of("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
                                                     "OAUTHBEARER", upper=True), ALL,
         "SASL mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (GSSAPI, Java's default, is "
         "not supported: set one of the others)."),
    _key("sasl.jaas.config", None, _optional_str, ALL,
         "Credentials as Java clients write them: PlainLoginModule or ScramLoginModule with username and "
         "password, OAuthBearerLoginModule with unsecuredLoginStringClaim_sub (unsecured tokens)."),
    _key("sasl.username", None, _optional_str, ALL, "librdkafka's way: the PLAIN or SCRAM user name..."),
    _key("sasl.password", None, _optional_str, ALL, "...and password (instead of sasl.jaas.config)."),
    _key("sasl.oauthbearer.token.provider", None, _token_provider, ALL,
         "OAUTHBEARER: a callable (or an object with a token() method), sync or async, answering a token: "
         "a str, a (token, expiry epoch seconds) tuple or an OAuthBearerToken; see the security guide."),
    # -- OAUTHBEARER from an OAuth 2 provider (KIP-768; kproto.security.oidc reads them) ---------
    _key("sasl.oauthbearer.token.endpoint.url", None, _optional_str, ALL,
         "OAUTHBEARER: the OAuth 2 token endpoint (https://, http:// or file://); tokens come from it by "
         "the client-credentials grant, with clientId/clientSecret/scope from sasl.jaas.config "
         "(OAuthBearerLoginModule) or the sasl.oauthbearer.client.credentials.* keys."),
    _key("sasl.login.callback.handler.class", None, _optional_str, ALL,
         "As Java clients write it for the OAuth flow: OAuthBearerLoginCallbackHandler (with "
         "sasl.oauthbearer.token.endpoint.url, which alone suffices in kproto); kproto runs no other Java class."),
    _key("sasl.oauthbearer.client.credentials.client.id", None, _optional_str, ALL,
         "The OAuth client id (Kafka 4.1, KIP-1139; wins over sasl.jaas.config's clientId)."),
    _key("sasl.oauthbearer.client.credentials.client.secret", None, _optional_str, ALL,
         "The OAuth client secret (Kafka 4.1, KIP-1139; wins over sasl.jaas.config's clientSecret)."),
    _key("sasl.oauthbearer.scope", None, _optional_str, ALL,
         "The scope asked for (Kafka 4.1, KIP-1139; wins over sasl.jaas.config's scope)."),
    _key("sasl.oauthbearer.scope.claim.name", "scope", _str, ALL, "The token's claim that holds its scope."),
    _key("sasl.oauthbearer.sub.claim.name", "sub", _str, ALL, "The token's claim that holds its principal."),
    _key("sasl.oauthbearer.header.urlencode", False, _bool, ALL,
         "URL-encode the client id and secret in the Authorization header (KIP-1025)."),
    _key("sasl.login.connect.timeout.ms", None, _optional_non_negative, ALL,
         "Bound of connecting to the token endpoint (None: none, as Java's)."),
    _key("sasl.login.read.timeout.ms", None, _optional_non_negative, ALL,
         "Bound of each read from the token endpoint (None: none, as Java's)."),
    _key("sasl.login.retry.backoff.ms", 100, _non_negative, ALL,
         "First wait before asking the token endpoint again after a retriable failure (doubling)."),
    _key("sasl.login.retry.backoff.max.ms", 10000, _non_negative, ALL,
         "How long retries of the token endpoint may go on, from the first attempt."),
    _key("sasl.login.refresh.window.factor", 0.8, _between(0.5, 1.0), ALL,
         "A token is refreshed at this share of its lifetime..."),
    _key("sasl.login.refresh.window.jitter", 0.05, _between(0.0, 0.25), ALL,
         "...plus a random share up to this..."),
    _key("sasl.login.refresh.min.period.seconds", 60, _between(0, 900, _int), ALL,
         "...but no sooner than this after the last refresh..."),
    _key("sasl.login.refresh.buffer.seconds", 300, _between(0, 3600, _int), ALL,
         "...and no later than this before it expires."),
    # -- producer -------------------------------------------------------------------------
    _key("acks", -1, _acks, PRODUCER, "Acknowledgements: all (-1), 1 or 0."),
    _key("batch.size", 16384, _non_negative, PRODUCER, "Largest batch per partition, in bytes before compression."),
    _key("linger.ms", 5, _non_negative, PRODUCER, "How long a batch may wait for more records (Kafka 4.0's default)."),
    _key("buffer.memory", 33554432, _positive, PRODUCER, "Memory for unsent records; send blocks when full."),
    _key("max.block.ms", 60000, _non_negative, PRODUCER, "How long send and flush may block (metadata, memory)."),
    _key("max.request.size", 1048576, _positive, PRODUCER, "Largest record or request the producer sends."),
    _key("compression.type", "none", _one_of("none", "gzip", "snappy", "lz4", "zstd"), PRODUCER,
         "Codec of produced batches."),
    _key("compression.gzip.level", -1, _level(GZIP), PRODUCER, "gzip level 1-9 (-1: the codec's default)."),
    _key("compression.lz4.level", 9, _level(LZ4), PRODUCER, "lz4 level 1-17."),
    _key("compression.zstd.level", 3, _level(ZSTD), PRODUCER, "zstd level -131072 to 22."),
    _key("enable.idempotence", True, _bool, PRODUCER, "Exactly-once per partition: producer id and sequences."),
    _key("max.in.flight.requests.per.connection", 5, _positive, PRODUCER,
         "Unanswered Produce requests per broker (at most 5 with idempotence)."),
    _key("retries", 2147483647, _non_negative, PRODUCER, "Retries of a failed batch, within delivery.timeout.ms."),
    _key("delivery.timeout.ms", 120000, _positive, PRODUCER, "Bound on the time from send to success or failure."),
    _key("partitioner.class", None, _partitioner, PRODUCER,
         "None: Java's default (murmur2 of keys, sticky batches for null keys); or "
         "\"round_robin\"; or a callable (key, num_partitions, topic) -> partition, where "
         "num_partitions is the topic's partition count."),
    _key("partitioner.ignore.keys", False, _bool, PRODUCER, "Spread keyed records like null-keyed ones."),
    _key("key.serializer", None, _callable_or_none, PRODUCER, "Callable turning keys into bytes."),
    _key("value.serializer", None, _callable_or_none, PRODUCER, "Callable turning values into bytes."),
    _key("transactional.id", None, _optional_str, PRODUCER,
         "Transactions: the producer's id across restarts (needs idempotence; None: no transactions)."),
    _key("transaction.timeout.ms", 60000, _positive, PRODUCER,
         "How long the coordinator lets a transaction stay open before aborting it."),
    _key("allow.auto.create.topics", True, _bool, frozenset({PRODUCER, CONSUMER}),
         "Let the broker create unknown topics when asked for their metadata."),
    # -- consumer -------------------------------------------------------------------------
    _key("group.id", None, _optional_str, CONSUMER, "Consumer group; None for assign()-only use without commits."),
    _key("group.instance.id", None, _optional_str, CONSUMER, "Static membership id (KIP-345)."),
    _key("enable.auto.commit", True, _bool, CONSUMER, "Commit consumed positions in the background."),
    _key("auto.commit.interval.ms", 5000, _non_negative, CONSUMER, "How often auto-commit runs."),
    _key("auto.offset.reset", "latest", _one_of("earliest", "latest", "none"), CONSUMER,
         "Where to start without a valid committed offset."),
    _key("session.timeout.ms", 45000, _positive, CONSUMER, "A member silent this long leaves the group."),
    _key("heartbeat.interval.ms", 3000, _positive, CONSUMER, "How often members heartbeat."),
    _key("max.poll.interval.ms", 300000, _positive, CONSUMER, "Longest time between polls before leaving the group."),
    _key("max.poll.records", 500, _positive, CONSUMER, "Most records one poll returns."),
    _key("fetch.min.bytes", 1, _non_negative, CONSUMER, "A fetch waits for this many bytes..."),
    _key("fetch.max.wait.ms", 500, _non_negative, CONSUMER, "...or this long."),
    _key("fetch.max.bytes", 52428800, _positive, CONSUMER, "Most bytes one fetch response holds."),
    _key("max.partition.fetch.bytes", 1048576, _positive, CONSUMER, "Most bytes per partition per fetch."),
    _key("isolation.level", "read_uncommitted", _one_of("read_uncommitted", "read_committed"), CONSUMER,
         "read_committed skips aborted transactions' records."),
    _key("partition.assignment.strategy", ("range", "cooperative-sticky"), _strategies, CONSUMER,
         "Assignors, in preference order: range, roundrobin, cooperative-sticky."),
    _key("exclude.internal.topics", True, _bool, CONSUMER, "Patterns never match internal topics."),
    _key("check.crcs", True, _bool, CONSUMER, "Verify record batch CRCs."),
    _key("client.rack", "", _str, CONSUMER, "The consumer's rack, for fetching from the closest replica."),
    _key("key.deserializer", None, _callable_or_none, CONSUMER, "Callable turning key bytes into objects."),
    _key("value.deserializer", None, _callable_or_none, CONSUMER, "Callable turning value bytes into objects."),
]

CONFIGS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}

# Java's Type.PASSWORD settings (and the JAAS entry that holds one): shown as [hidden]
_SECRETS = frozenset({"sasl.jaas.config", "sasl.password", "ssl.key.password", "ssl.keystore.key",
                      "ssl.keystore.password", "ssl.truststore.password",
                      "sasl.oauthbearer.client.credentials.client.secret"})


def _shown(name: str, value: Any) -> str:
    """A value for an error text: a secret's is never shown (Java's Password: [hidden])."""
    return "[hidden]" if name in _SECRETS else repr(value)


def ssl_settings(options: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ssl.*`` settings made of ``options`` (Kafka's names, values as written in a
    ``sasl.jaas.config`` entry), parsed with the table, the others at their defaults: the
    TLS settings of an OAuth token endpoint, which Java reads from the OAuthBearerLoginModule
    options (``JaasOptionsUtils.getSslClientConfig``), not from the client's own.

    Raises:
        ConfigError: an ``ssl.`` name the table does not have, or a bad value.
    """
    settings = {k.name: k.default for k in _KEYS if k.name.startswith("ssl.")}
    for name, value in options.items():
        key = CONFIGS.get(name)
        if key is None or not name.startswith("ssl."):
            raise ConfigError(f"{name} is not an ssl setting kproto knows")
        try:
            settings[name] = key.parse(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{name}={_shown(name, value)}: {exc}") from None
    return settings


class ClientConfig(Mapping[str, Any]):
    """Validated settings of one client (``producer``, ``consumer`` or ``admin``).

    Args:
        client: which kind of client.
        config: settings with Kafka's names.
        **kwargs: settings with dots written as underscores; they override ``config``.

    Raises:
        ConfigError: an unknown key, a key of another kind of client, a bad value, or a
            missing ``bootstrap.servers``.
    """

    def __init__(self, client: str, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.client = client
        given = dict(config or {})
        given.update({name.replace("_", "."): value for name, value in kwargs.items()})
        self.explicit = frozenset(given)  # keys the user set (some defaults depend on them)
        self._values = {k.name: k.default_for(client) for k in _KEYS if client in k.clients}
        for name, value in given.items():
            key = CONFIGS.get(name)
            if key is None or client not in key.clients:
                raise ConfigError(self._unknown(name, key))
            try:
                self._values[name] = key.parse(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{name}={_shown(name, value)}: {exc}") from None
        if self._values["bootstrap.servers"] is None:
            raise ConfigError("bootstrap.servers is required, e.g. \"127.0.0.1:9092\"")

    def _unknown(self, name: str, key: ConfigKey | None) -> str:
        if key is not None:
            return f"{name} is a {'/'.join(sorted(key.clients))} setting; a {self.client} does not take it"
        mine = [k.name for k in _KEYS if self.client in k.clients]
        close = difflib.get_close_matches(name, mine, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown {self.client} config {name!r}{hint}"

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        shown = {k: "[hidden]" if k in _SECRETS and v is not None else v for k, v in self._values.items()}
        return f"ClientConfig({self.client!r}, {shown!r})"


def settings_of_kind(client: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``config`` that one kind of ``client`` (``"admin"``, ``"producer"``,
    ``"consumer"``) takes, so that one settings file (a ``--command-config``, a pipeline's
    config, a Spark source's ``kafka.`` options) serves every client made from it.

    A key that belongs to other kinds only is left out; a key no client knows stays, for
    :class:`ClientConfig` to refuse with the closest name. The order of ``config`` is kept.
    """
    return {name: value for name, value in config.items()
            if (key := CONFIGS.get(name)) is None or client in key.clients}
