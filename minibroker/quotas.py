"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546): what a client may use, how
much it used, and how long it must wait.

Entities and precedence (Kafka's ``ClientQuotaManager``, KIP-55). A quota is set on an
*entity*: a user, a client id, or both, each a name or the default (``None``, Kafka's
``<default>``). A request's user is its principal's name (``ctx.principal``
``"User:alice"`` gives ``alice``; a connection that has not authenticated is ``ANONYMOUS``,
Kafka's ``KafkaPrincipal.ANONYMOUS``: KIP-55, "for PLAINTEXT, the principal is anonymous by
default and quotas will be applied for that principal", so user quotas match it like any
other name, the user default included); its client id is the request header's (null
counts as ``""``). For each quota type the most specific entity that sets it applies, in
this order:

1. ``/users/<u>/clients/<c>``
2. ``/users/<u>/clients/<default>``
3. ``/users/<u>``
4. ``/users/<default>/clients/<c>``
5. ``/users/<default>/clients/<default>``
6. ``/users/<default>``
7. ``/clients/<c>``
8. ``/clients/<default>``

Usage is shared by the clients the matching level groups together (Kafka's metric
tags): levels 1, 2, 4 and 5 count each (user, client id) pair apart, 3 and 6 each user
(all its client ids together), 7 and 8 each client id (all users together). Kafka first
picks those tags and then looks up the limit for them (``quotaMetricTags`` then
``quotaLimit``), and so does :meth:`ClientQuotas.quota`, quirks included: an empty client
id shares its user's usage and is limited only by user-level quotas.

Quota types (Kafka's ``QuotaConfig``): ``producer_byte_rate`` (bytes/s of Produce
requests, each charged its whole size), ``consumer_byte_rate`` (bytes/s of Fetch
responses), ``request_percentage`` (the time handlers spend on the client's requests, in
percent of one thread; KIP-124) and ``controller_mutation_rate`` (KIP-599: stored and
described, not enforced by minibroker).

Measurement (Kafka's ``Rate`` over a ``SampledStat``): usage is summed in
``quota.window.num`` samples of ``quota.window.size.seconds`` each (11 of 1 s); the rate
is their sum over the time from the oldest sample's start to now, and as long as fewer
than ``quota.window.num - 1`` whole windows have passed, the missing ones count as empty
windows (so a new client does not look fast after one request). A value is recorded
first and the rate then compared with the limit (``Sensor.record`` then
``checkQuotas``): above it, the client is throttled for

    throttle = (rate - limit) / limit * window      (QuotaUtils.throttleTime)

milliseconds, rounded, ``window`` being the span the rate was measured over: the time
that brings the rate back to the limit if nothing more is recorded. Byte-rate throttles
are not bounded (``ClientQuotaManager.throttleTime``); request-time throttles are bounded
by one window, ``quota.window.size.seconds`` (``ClientRequestQuotaManager``). Nothing is
recorded for a quota type while no entity sets it (``quotasEnabled``).

Enforcement (KIP-219, Kafka's ``KafkaApis`` and ``SocketServer``), in :func:`serve`, the
one hook the server calls for every request: the answer goes out at once with
``throttle_time_ms`` set, and the connection then reads nothing more until the throttle
ends (:class:`ChannelMute`: the channel is muted). A Produce charges its request's size
to the produce quota (acks=0 too: no answer, but the channel is muted all the same) and,
unless acks=0, its handler time to the request quota; a consumer's Fetch charges its
response's size to the fetch quota, asks for at most what the quota allows in a window
(``maxValueInQuotaWindow``), and when throttled is answered empty (its usage taken back,
``unrecordQuotaSensor``), to be asked again later. Replica fetches and the brokers' own
requests are exempt. The larger of the byte-rate and request throttles is the one answered.

Persistence is :mod:`minibroker.quota_store`'s: a single broker keeps its quotas in a file
beside the logs; a broker of a MiniCluster enforces its metadata image's quotas, which the
controller's ClientQuotaRecords change (KRaft's way), and keeps no file.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from typing import Any

from kproto.errors import InvalidRequestError, UnsupportedVersionError
from kproto.protocol import ApiKey, RequestHeader
from kproto.protocol.frames import encode_response_parts
from kproto.protocol.messages import FetchResponse

__all__ = [
    "CLIENT_ID", "IP", "QUOTA_KEYS", "USER", "AlterEntry", "AlterResult", "ChannelMute", "ClientQuotas", "Entity",
    "QuotaError", "Rate", "entity_of", "plan_alter", "serve", "throttle_time",
]

log = logging.getLogger("minibroker")

USER, CLIENT_ID, IP = "user", "client-id", "ip"  # Kafka's ClientQuotaEntity types
PRODUCE, FETCH, REQUEST, MUTATION = "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"
#: The quota keys of user and client-id entities, with their config types (Kafka's
#: ``QuotaConfig.userAndClientQuotaConfigs``); LONG values must be whole numbers.
QUOTA_KEYS: dict[str, str] = {PRODUCE: "LONG", FETCH: "LONG", REQUEST: "DOUBLE", MUTATION: "DOUBLE"}
_MAX_LONG = 2**63 - 1

#: An entity: ``((type, name or None for the default), ...)`` sorted by type.
Entity = tuple[tuple[str, str | None], ...]
#: One AlterClientQuotas entry: the entity's ``(type, name)`` pairs and ``(key, value or None)`` ops.
AlterEntry = tuple[Iterable[tuple[str, str | None]], Iterable[tuple[str, float | None]]]
#: One entity's outcome: ``(entity, error code, message)``.
AlterResult = tuple[Entity, int, str | None]

_ANONYMOUS = "ANONYMOUS"
_INACTIVE_MS = 3600 * 1000  # ClientQuotaManager: sensors unused for an hour are dropped
_MAX_INT32 = 2**31 - 1
_PERCENT = 100.0  # seconds of handler time -> percent of one thread (NANOS_TO_PERCENTAGE_PER_SECOND)

# The brokers' own requests, exempt from the request quota (Kafka's ClusterAction APIs,
# sendResponseExemptThrottle); a follower's Fetch is exempt too (see _is_replica_fetch).
_EXEMPT = frozenset({ApiKey.WRITE_TXN_MARKERS, ApiKey.ALTER_PARTITION, ApiKey.BROKER_REGISTRATION,
                     ApiKey.BROKER_HEARTBEAT, ApiKey.ALLOCATE_PRODUCER_IDS})


class QuotaError(Exception):
    """A request about quotas that Kafka answers with an error: ``code`` and ``message``."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


_MIN_LONG = -(2**63)


def _java_round(x: float) -> int:
    """Java's ``Math.round(double)``: halves go up, NaN is 0, and what is beyond a long's
    range is its bound (a NaN quota, a 0 ms window: Kafka computes on, it never fails)."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return _MAX_LONG if x > 0 else _MIN_LONG
    return max(_MIN_LONG, min(_MAX_LONG, math.floor(x + 0.5)))


def _java_divide(a: float, b: float) -> float:
    """``a / b`` as Java's doubles divide: by zero gives an infinity, or NaN for 0 / 0."""
    if b:
        return a / b
    return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)


def throttle_time(rate: float, limit: float, window_ms: int) -> int:
    """Kafka's ``QuotaUtils.throttleTime``: how long a client whose measured ``rate`` is
    above ``limit`` must wait so that, with nothing more recorded, the rate over the
    ``window_ms`` it was measured on comes back to the limit: ``O*W/(W+X) = T`` gives
    ``X = (O - T) / T * W`` (ms, rounded)."""
    return _java_round((rate - limit) / limit * window_ms)


class _Sample:
    __slots__ = ("events", "last_ms", "start_ms", "value")

    def __init__(self, now_ms: int):
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.events = 0
        self.start_ms = now_ms
        self.last_ms = now_ms


class Rate:
    """Kafka's ``Rate`` over a ``WindowedSum``: a sum per time window, ``samples`` of them
    (plus one spare, as ``SampledStat`` keeps), measured per second. Sans-I/O: every
    method takes the time in milliseconds.

    Args:
        window_ms: the span of one sample (``quota.window.size.seconds`` in ms).
        samples: how many samples make the measured window (``quota.window.num``).
    """

    def __init__(self, window_ms: int, samples: int):
        self.window_ms = window_ms
        self.samples = samples
        self._samples: list[_Sample] = []
        self._current = 0
        self.last_record_ms = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` at ``now_ms`` (``SampledStat.record``)."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:  # isComplete (no event-count window)
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_ms = now_ms
        self.last_record_ms = now_ms

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _purge(self, now_ms: int) -> None:
        """Reset samples with no event within the whole window (``purgeObsoleteSamples``)."""
        expire_age = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_ms >= expire_age:
                sample.reset(now_ms)

    def window_size(self, now_ms: int) -> int:
        """The span the rate is measured over (``Rate.windowSize``): from the oldest
        sample's start to now, with the windows missing to ``samples - 1`` whole ones
        counted as empty."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        oldest = min(self._samples, key=lambda s: s.start_ms)
        elapsed = now_ms - oldest.start_ms
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms`` (``Rate.measure``)."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return _java_divide(total, self.window_size(now_ms) / 1000)  # 0 ms with quota.window.num=1


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """An :data:`Entity` from ``(type, name)`` pairs; a type given twice keeps the last
    (as Kafka's ``AlterClientQuotasRequest`` builds its map)."""
    return tuple(sorted(dict(pairs).items()))


def describe_entity(entity: Entity) -> str:
    """Java's ``ClientQuotaEntity.toString()``, for error texts."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity) + "})"


class ChannelMute:
    """One connection's mute (KIP-219): after a throttled answer the server reads nothing
    more from the connection until the throttle ends (Kafka's ``ThrottledChannel``: the
    time counts from when the throttle was decided, not from when the answer left)."""

    __slots__ = ("until",)

    def __init__(self) -> None:
        self.until = 0.0  # time.monotonic() at which the channel may read again

    def throttle(self, throttle_ms: int) -> None:
        if throttle_ms > 0:
            self.until = max(self.until, time.monotonic() + throttle_ms / 1000)

    async def wait(self) -> None:
        """Sleep until the throttle ends (at once if there is none)."""
        delay = self.until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


class ClientQuotas:
    """A broker's client quotas: the configured ones (AlterClientQuotas,
    DescribeClientQuotas) and every client's usage.

    Args:
        window_num: ``quota.window.num`` (at least 1).
        window_size_s: ``quota.window.size.seconds`` (at least 1).
        entities: the quotas to start with (entity -> key -> value), kept and changed in
            place: a cluster broker's are its metadata image's
            (``MetadataImage.client_quotas``), which the controller's ClientQuotaRecords
            change; None starts without quotas.
        save: called with the new quotas before a change counts, to keep them
            (:mod:`minibroker.quota_store`); what it raises leaves the quotas as they were.

    Raises:
        ValueError: a window setting below 1.
    """

    def __init__(self, window_num: int = 11, window_size_s: int = 1, *,
                 entities: dict[Entity, dict[str, float]] | None = None,
                 save: Callable[[Mapping[Entity, dict[str, float]]], None] | None = None):
        for name, value in (("quota.window.num", window_num), ("quota.window.size.seconds", window_size_s)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1")  # Kafka's atLeast(1)
        self.window_num = window_num
        self.window_ms = window_size_s * 1000
        self.entities: dict[Entity, dict[str, float]] = {} if entities is None else entities
        self._save = save
        # (quota key, (user tag, client-id tag)) -> its usage
        self._sensors: dict[tuple[str, tuple[str, str]], Rate] = {}
        self._swept_ms = 0

    # -- configuration (AlterClientQuotas, DescribeClientQuotas) --------------------------

    def alter(self, entries: Iterable[AlterEntry], *, validate_only: bool = False) -> list[AlterResult]:
        """Apply quota changes (see :func:`plan_alter`), kept by ``save`` first.

        Raises:
            OSError: ``save`` could not keep them (a full disk); nothing changed.
        """
        results, new = plan_alter(self.entities, entries)
        if not validate_only and new != self.entities:
            if self._save is not None:
                self._save(new)
            self.entities.clear()  # in place: a cluster broker shares the dict with its image
            self.entities.update(new)
            log.info("client quotas are now %s", self.entities)
        return results

    def describe(self, components: Iterable[tuple[str, int, str | None]], strict: bool) -> dict[Entity, dict[str, float]]:
        """The entities matching a filter, as Kafka's ``ClientQuotasImage.describe``.

        Args:
            components: ``(entity type, match type, match)``: match type 0 is that name
                exactly, 1 the default entity, 2 any name of that type (including the default).
            strict: only entities with exactly the filtered types; else those having at
                least them (no component and not strict: every entity).

        Raises:
            QuotaError: an invalid filter (INVALID_REQUEST, or UNSUPPORTED_VERSION for an
                unknown entity type), with Kafka's text.
        """
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for entity_type, match_type, match in components:
            if not entity_type:
                raise QuotaError(InvalidRequestError.code, "Invalid empty entity type.")
            if entity_type in exact or entity_type in typed:
                raise QuotaError(InvalidRequestError.code,
                                 f"Entity type {entity_type} cannot appear more than once in the filter.")
            if entity_type not in (IP, USER, CLIENT_ID):
                raise QuotaError(UnsupportedVersionError.code, f"Unsupported entity type {entity_type}")
            if match_type == 0:
                if match is None:
                    raise QuotaError(InvalidRequestError.code,
                                     "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[entity_type] = match
            elif match_type == 1:
                if match is not None:
                    raise QuotaError(InvalidRequestError.code,
                                     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[entity_type] = None
            elif match_type == 2:
                if match is not None:
                    raise QuotaError(InvalidRequestError.code,
                                     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                typed.add(entity_type)
            else:
                raise QuotaError(InvalidRequestError.code, f"Unknown match type {match_type}")
        if IP in exact or IP in typed:
            if {USER, CLIENT_ID} & (set(exact) | typed):
                raise QuotaError(InvalidRequestError.code, "Invalid entity filter component combination. IP filter "
                                                           "component should not be used with user or clientId filter component.")
        out: dict[Entity, dict[str, float]] = {}
        for entity, quotas in self.entities.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(typed):
                continue
            if all(t in names and names[t] == n for t, n in exact.items()) and all(t in names for t in typed):
                out[entity] = dict(quotas)
        return out

    # -- enforcement ----------------------------------------------------------------------

    def enabled(self, key: str) -> bool:
        """Whether any entity sets ``key`` (Kafka's ``quotasEnabled``: nothing is recorded before)."""
        return any(key in q for q in self.entities.values())

    def _set(self, key: str, user: str | None, client_id: str | None, with_user: bool, with_client: bool) -> bool:
        entity: list[tuple[str, str | None]] = []
        if with_client:
            entity.append((CLIENT_ID, client_id))
        if with_user:
            entity.append((USER, user))
        quotas = self.entities.get(tuple(entity))
        return quotas is not None and key in quotas

    def tags(self, key: str, user: str, client_id: str) -> tuple[str, str]:
        """Whose usage a request counts to, as ``(user, client id)`` with "" for a part not
        counted apart (Kafka's ``DefaultQuotaCallback.quotaMetricTags``)."""
        s = self._set
        if s(key, user, client_id, True, True) or s(key, user, None, True, True):
            return user, client_id
        if s(key, user, None, True, False):
            return user, ""
        if s(key, None, client_id, True, True) or s(key, None, None, True, True):
            return user, client_id
        if s(key, None, None, True, False):
            return user, ""
        return "", client_id

    def limit(self, key: str, tags: tuple[str, str]) -> float | None:
        """The quota of the usage named by ``tags`` (Kafka's ``DefaultQuotaCallback.quotaLimit``);
        None: unlimited."""
        user, client_id = tags
        levels: list[tuple[str | None, str | None, bool, bool]]
        if user and client_id:
            levels = [(user, client_id, True, True), (user, None, True, True), (None, client_id, True, True),
                      (None, None, True, True)]
        elif user:
            levels = [(user, None, True, False), (None, None, True, False)]
        elif client_id:
            levels = [(None, client_id, False, True), (None, None, False, True)]
        else:
            return None
        for u, c, with_user, with_client in levels:
            entity: list[tuple[str, str | None]] = []
            if with_client:
                entity.append((CLIENT_ID, c))
            if with_user:
                entity.append((USER, u))
            quotas = self.entities.get(tuple(entity))
            if quotas is not None and key in quotas:
                return quotas[key]
        return None

    def quota(self, key: str, user: str, client_id: str) -> float | None:
        """The limit that applies to a client, None for none (Kafka's ``ClientQuotaManager.quota``)."""
        return self.limit(key, self.tags(key, user, client_id))

    def _rate(self, key: str, tags: tuple[str, str], now_ms: int) -> Rate:
        if now_ms - self._swept_ms >= _INACTIVE_MS:  # drop usage nobody recorded for an hour
            self._swept_ms = now_ms
            self._sensors = {k: r for k, r in self._sensors.items() if now_ms - r.last_record_ms < _INACTIVE_MS}
        rate = self._sensors.get((key, tags))
        if rate is None:
            rate = self._sensors[(key, tags)] = Rate(self.window_ms, self.window_num)
        return rate

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record usage and return the throttle time in ms, 0 if within quota
        (``ClientQuotaManager.maybeRecordAndGetThrottleTimeMs``)."""
        if not self.enabled(key):
            return 0
        tags = self.tags(key, user, client_id)
        rate = self._rate(key, tags, now_ms)
        rate.record(value, now_ms)
        limit = self.limit(key, tags)
        if limit is None:
            return 0
        observed = rate.measure(now_ms)
        if observed <= limit:  # Quota.acceptable of an upper bound
            return 0
        throttle = throttle_time(observed, limit, rate.window_size(now_ms))
        if key == REQUEST:  # ClientRequestQuotaManager: boundedThrottleTime
            throttle = min(throttle, self.window_ms)
        return max(0, min(throttle, _MAX_INT32))

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back usage recorded (``unrecordQuotaSensor``: a throttled Fetch is answered empty)."""
        if self.enabled(key):
            self._rate(key, self.tags(key, user, client_id), now_ms).record(-value, now_ms)

    def max_value_in_window(self, key: str, user: str, client_id: str) -> float:
        """The most one request may use without being throttled for sure
        (``maxValueInQuotaWindow``: limit times the ``quota.window.num - 1`` whole windows)."""
        if not self.enabled(key):
            return math.inf
        limit = self.quota(key, user, client_id)
        return math.inf if limit is None else limit * (self.window_num - 1) * self.window_ms / 1000


def plan_alter(current: Mapping[Entity, Mapping[str, float]], entries: Iterable[AlterEntry]
               ) -> tuple[list[AlterResult], dict[Entity, dict[str, float]]]:
    """What AlterClientQuotas makes of ``current``, as Kafka's
    ``ClientQuotaControlManager.alterClientQuotas``; changes nothing.

    Args:
        current: entity -> quota key -> value.
        entries: ``(entity pairs, ops)``; an op is ``(key, value)``, a value of None
            removing the key (removing what is not set is no error).

    Returns:
        ``(entity, error code, message)`` per distinct entity, in the order first given (an
        entity given twice answers once, "Ignoring duplicate entity ..."), and the quotas
        once the valid entities' changes are made.
    """
    results: dict[Entity, tuple[int, str | None]] = {}
    new = {e: dict(q) for e, q in current.items()}
    for pairs, ops in entries:
        entity = entity_of(pairs)
        changes: dict[str, float | None] = {}
        for key, value in ops:
            if key in changes:
                results[entity] = (InvalidRequestError.code, f"Duplicate quota key {key} not updating quota "
                                                             f"for this entity {describe_entity(entity)}")
            else:
                changes[key] = value
        if entity in results:
            results[entity] = (InvalidRequestError.code, f"Ignoring duplicate entity {describe_entity(entity)}")
            continue
        try:
            keys = _keys_for(entity)
            for key, value in changes.items():
                if value is not None:
                    _check_value(keys, key, value)
        except QuotaError as exc:
            results[entity] = (exc.code, exc.message)
            continue
        results[entity] = (0, None)
        quotas = new.setdefault(entity, {})
        for key, value in changes.items():
            if value is None:
                quotas.pop(key, None)
            else:
                quotas[key] = float(value)
        if not quotas:
            del new[entity]
    return [(entity, code, message) for entity, (code, message) in results.items()], new


def _keys_for(entity: Entity) -> dict[str, str]:
    """Check an entity's types and names; its valid keys (``validateEntity`` and
    ``configKeysForEntityType``)."""
    if not entity:
        raise QuotaError(InvalidRequestError.code, "Invalid empty client quota entity")
    for entity_type, name in entity:
        if entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaError(InvalidRequestError.code, f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaError(InvalidRequestError.code, f"Empty {entity_type} not supported")
    types = {t for t, _ in entity}
    if IP in types:
        if len(types) > 1:  # Kafka's text, its missing space included
            raise QuotaError(InvalidRequestError.code,
                             "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
        raise QuotaError(InvalidRequestError.code, "minibroker does not implement IP connection rate quotas (KIP-612)")
    return QUOTA_KEYS


def _check_value(keys: Mapping[str, str], key: str, value: float) -> None:
    """``validateQuotaKeyValue``: a known key, above 0, and for a LONG a whole number that fits."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(InvalidRequestError.code, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaError(InvalidRequestError.code, f"Quota {key} must be greater than 0")
    if kind == "LONG":
        if value > _MAX_LONG:
            raise QuotaError(InvalidRequestError.code, f"Proposed value for {key} is too large for a LONG.")
        if abs(math.fmod(value, 1.0)) > 1e-6:
            raise QuotaError(InvalidRequestError.code, f"{key} cannot be a fractional value.")


# -- the server's hook ---------------------------------------------------------------------


def _user(principal: str) -> str:
    """The quota user of a principal (``KafkaPrincipal.getName``): ``User:alice`` is ``alice``."""
    return principal.partition(":")[2] or _ANONYMOUS


def _is_replica_fetch(request: Any) -> bool:
    replica = getattr(request, "replica_id", -1)
    state = getattr(request, "replica_state", None)
    return replica >= 0 or (state is not None and state.replica_id >= 0)


class _Timed:
    """Await a coroutine and add up the time it runs (not the time it waits): the
    request handler thread's time Kafka charges to the request quota
    (``requestThreadTimeNanos``), here each step of the coroutine on the event loop."""

    def __init__(self, coro: Awaitable[Any]):
        self.coro = coro.__await__()
        self.seconds = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        send: Any = None
        error: BaseException | None = None
        while True:
            start = time.perf_counter()
            try:
                step = self.coro.throw(error) if error is not None else self.coro.send(send)
            except StopIteration as stop:
                return stop.value
            finally:
                self.seconds += time.perf_counter() - start
            try:
                send, error = (yield step), None
            except BaseException as exc:  # noqa: BLE001 - cancellation and the rest go to the coroutine
                send, error = None, exc


async def serve(quotas: ClientQuotas, handler: Callable[..., Awaitable[Any]], state: Any, header: RequestHeader,
                ctx: Any, request: Any, request_size: int, mute: ChannelMute) -> list[Any] | None:
    """Run a request's handler under the client's quotas and encode its answer (KIP-219).

    The server's one call per request: charges the request (see the module docstring),
    sets ``throttle_time_ms`` in the answer, and throttles ``mute`` when the client went
    over a quota.

    Returns:
        The answer's frame pieces (:func:`~kproto.protocol.frames.encode_response_parts`),
        None when there is none (acks=0 Produce).
    """
    api_key = header.api_key
    client_id = header.client_id or ""
    user = _user(ctx.principal)
    fetch_key = api_key == ApiKey.FETCH and not _is_replica_fetch(request)
    if fetch_key and quotas.enabled(FETCH):  # KafkaApis.handleFetchRequest: at most a window's worth
        cap = quotas.max_value_in_window(FETCH, user, client_id)
        if cap < request.max_bytes:
            request.max_bytes = max(0, int(cap))
            request.min_bytes = min(request.min_bytes, request.max_bytes)
    charge_request = (quotas.enabled(REQUEST) and api_key not in _EXEMPT and not (api_key == ApiKey.FETCH and not fetch_key)
                      and not (api_key == ApiKey.PRODUCE and request.acks == 0))
    if charge_request:
        timed = _Timed(handler(state, ctx, request))
        response = await timed
    else:
        response = await handler(state, ctx, request)
    now_ms = int(time.monotonic() * 1000)
    throttle = quotas.record(REQUEST, user, client_id, timed.seconds * _PERCENT, now_ms) if charge_request else 0
    if api_key == ApiKey.PRODUCE:  # the larger of the two is answered (KafkaApis.handleProduceRequest)
        throttle = max(throttle, quotas.record(PRODUCE, user, client_id, request_size, now_ms))
    if response is None:
        mute.throttle(throttle)
        return None
    if throttle > 0 and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms, throttle)
    parts = encode_response_parts(api_key, header.api_version, header.correlation_id, response)
    if fetch_key:
        size = 0
        if quotas.enabled(FETCH):
            size = sum(map(len, parts)) - 4  # the response as sent, less its size prefix
            throttle = max(throttle, quotas.record(FETCH, user, client_id, size, now_ms))
        if throttle > 0:  # over either quota: FullFetchContext.getThrottledResponse, answered empty
            quotas.unrecord(FETCH, user, client_id, size, now_ms)  # its bytes were not sent
            response = FetchResponse(throttle_time_ms=throttle, error_code=0, session_id=0, responses=[])
            parts = encode_response_parts(api_key, header.api_version, header.correlation_id, response)
    mute.throttle(throttle)
    return parts
