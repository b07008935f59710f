"""Faults a test injects into a broker: request controls, isolation, a slow disk.

Fault injection is public API for tests of any Kafka client (the role of franz-go's
``kfake.Cluster.ControlKey``). Each broker's :class:`~minibroker.server.Server` holds one
:class:`BrokerFaults`, consulted where requests are answered:

- **Request controls** (:class:`RequestControls`, a broker's ``requests``): a control
  matches requests by API key (and client id) and acts on them: :class:`Delay` (handled
  late), :class:`Fail` (answered with an error code, not handled), :class:`Drop` (never
  answered: the connection stays silent, the client times out) or :class:`Hold` (handled,
  its answer kept until :meth:`RequestControl.release`); with no action it only counts.
  ``times=N`` spends a control after N requests. Controls act in the order they were
  added: every counting control counts a request, the first acting one acts on it.
- **Isolation** (:meth:`BrokerFaults.isolate`, for a MiniCluster): the broker stops
  answering clients and/or brokers (followers' fetchers, known by the client id they send
  with every request, :func:`fetcher_client_id`). As a network partition drops packets,
  nothing is reset: requests are held unanswered, new connections are accepted and stay
  silent, and at :meth:`BrokerFaults.heal` held requests go on, as TCP would deliver
  them late (those whose peer has closed its connection meanwhile are not handled).
- **A slow disk** (:attr:`BrokerFaults.disk`, :class:`SlowDisk`): every log write (a
  request that appends, :data:`WRITE_APIS`, and a follower's append) first waits its turn
  on the disk and then ``delay_ms``, with ``asyncio.sleep``: one loop runs every broker of
  a MiniCluster, so nothing may block it.

Every change of a fault logs one INFO line on the ``minibroker.cluster`` logger.

:func:`error_response` is the one owner of "a request answered with an error": Kafka's
``AbstractRequest.getErrorResponse``, built generically from the protocol table.

Threads: a test may add, release and remove controls from its own thread while the
broker runs on a background loop; the loop is woken with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kproto.errors import KafkaCodeError, for_code
from kproto.protocol import APIS, ApiKey, response_class
from kproto.protocol.spec import PRIMITIVE_TYPES, Field

__all__ = [
    "Action",
    "BrokerFaults",
    "Delay",
    "Drop",
    "Fail",
    "Hold",
    "RequestControl",
    "RequestControls",
    "SlowDisk",
    "WRITE_APIS",
    "add_partitions_client_id",
    "broker_node",
    "error_response",
    "fetcher_client_id",
    "fetcher_node",
    "txn_markers_client_id",
]

log = logging.getLogger("minibroker.cluster")

#: Requests whose handling appends to a log: they wait for a slow disk first.
WRITE_APIS = frozenset({ApiKey.PRODUCE, ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT, ApiKey.END_TXN})

# The roles of a broker's connections to the other brokers, named in their client ids.
_FETCHER, _TXN_MARKERS, _ADD_PARTITIONS = "fetcher", "txn-markers", "add-partitions"
_BROKER_CLIENT_ID = re.compile(rf"broker-(\d+)-({'|'.join(map(re.escape, (_FETCHER, _TXN_MARKERS, _ADD_PARTITIONS)))})")


def fetcher_client_id(node_id: int) -> str:
    """The client id of broker ``node_id``'s replica fetchers (sent with every request,
    ApiVersions included): how a broker tells a follower's connection from a client's."""
    return f"broker-{node_id}-{_FETCHER}"


def txn_markers_client_id(node_id: int) -> str:
    """The client id of broker ``node_id``'s transaction coordinator when it sends
    WriteTxnMarkers to the partitions' leaders (``minibroker.cluster.txn_markers``)."""
    return f"broker-{node_id}-{_TXN_MARKERS}"


def add_partitions_client_id(node_id: int) -> str:
    """The client id of broker ``node_id``'s AddPartitionsToTxn v4+ to the transaction
    coordinator (KIP-890 verification, ``minibroker.cluster.txn_markers``)."""
    return f"broker-{node_id}-{_ADD_PARTITIONS}"


def fetcher_node(client_id: str | None) -> int | None:
    """The broker whose fetcher sent a request with this client id; None for a client."""
    m = _BROKER_CLIENT_ID.fullmatch(client_id or "")
    return int(m.group(1)) if m and m.group(2) == _FETCHER else None


def broker_node(client_id: str | None) -> int | None:
    """The broker that sent a request with this client id, one of its connections to the
    other brokers (:func:`fetcher_client_id`, :func:`txn_markers_client_id`,
    :func:`add_partitions_client_id`); None for a client."""
    m = _BROKER_CLIENT_ID.fullmatch(client_id or "")
    return int(m.group(1)) if m else None


# -- actions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Delay:
    """Handle the request ``seconds`` later (the connection's later requests wait too)."""

    seconds: float

    def __post_init__(self) -> None:
        if self.seconds < 0:
            raise ValueError(f"Delay needs seconds >= 0, not {self.seconds}")

    def __str__(self) -> str:
        return f"Delay({self.seconds:g} s)"


@dataclass(frozen=True, slots=True)
class Fail:
    """Answer with ``error_code`` in every error field of the response, without handling
    the request (:func:`error_response`). A Produce with acks=0 has no response: its
    connection is closed, as Kafka closes it on any error of such a request.

    Args:
        error: a Kafka error code, or a :mod:`kproto.errors` class (``NotLeaderOrFollowerError``).
    """

    error: int | type[KafkaCodeError]

    @property
    def error_code(self) -> int:
        return self.error if isinstance(self.error, int) else self.error.code

    def __post_init__(self) -> None:
        if self.error_code <= 0:
            raise ValueError(f"Fail needs a Kafka error code > 0, not {self.error_code}")

    def __str__(self) -> str:
        return f"Fail({for_code(self.error_code).__name__}, code {self.error_code})"


@dataclass(frozen=True, slots=True)
class Drop:
    """Never answer: the request is not handled, and its connection answers nothing more
    (answers go in order), so the client times out and reconnects."""

    def __str__(self) -> str:
        return "Drop()"


@dataclass(frozen=True, slots=True)
class Hold:
    """Handle the request but keep its answer until :meth:`RequestControl.release` (or the
    control's removal); the connection's later requests wait behind it."""

    def __str__(self) -> str:
        return "Hold()"


Action = Delay | Fail | Drop | Hold


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class RequestControl:
    """One control of a broker's requests (made by :meth:`RequestControls.control`).

    Attributes:
        api: the API key it matches (None: every API).
        action: what it does (None: it only counts).
        times: how many requests it acts on before it is spent (None: no limit).
        client_id: the client id it matches (None: any).
        count: how many requests it matched so far.
    """

    def __init__(self, owner: RequestControls, api: int | None, action: Action | None, times: int | None,
                 client_id: str | None) -> None:
        self._owner = owner
        self.api = api
        self.action = action
        self.times = times
        self.client_id = client_id
        self.count = 0
        self._released = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lock = threading.Lock()  # the waiters list is shared by the loop and the test's thread

    def __repr__(self) -> str:
        api = "every API" if self.api is None else ApiKey(self.api).name
        what = "count" if self.action is None else str(self.action)
        limit = "" if self.times is None else f" x{self.times}"
        client = "" if self.client_id is None else f" from client {self.client_id!r}"
        return f"<{api} -> {what}{limit}{client}, {self.count} matched>"

    @property
    def active(self) -> bool:
        """Still in its broker's controls (not removed, not spent)."""
        return self in self._owner.controls

    @property
    def held(self) -> int:
        """Answers held now (:class:`Hold`)."""
        with self._lock:
            return sum(1 for w in self._waiters if not w.done())

    def matches(self, api_key: int, client_id: str | None) -> bool:
        return (self.api is None or self.api == api_key) and (self.client_id is None or self.client_id == client_id)

    async def wait_released(self) -> None:
        """Wait until :meth:`release` (at once if already released)."""
        future = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._released:
                return
            self._waiters.append(future)
        try:
            await future
        finally:
            with self._lock:
                if future in self._waiters:
                    self._waiters.remove(future)

    def release(self) -> None:
        """Answer every held request, and hold no more (a :class:`Hold` control stays,
        matching and counting, until removed)."""
        with self._lock:
            self._released = True
            waiters, self._waiters = self._waiters, []
        for future in waiters:
            future.get_loop().call_soon_threadsafe(_wake, future)

    def remove(self) -> None:
        """Remove the control; requests it holds are answered (idempotent)."""
        self._owner._remove(self, "removed")


class RequestControls:
    """A broker's request controls (``MiniBroker.requests``, ``MiniCluster.requests(i)``).

    Args:
        name: the broker, as the log lines name it.

    Attributes:
        controls: the controls in force, in the order they act.
    """

    def __init__(self, name: str = "minibroker") -> None:
        self.name = name
        self.controls: list[RequestControl] = []
        self._lock = threading.Lock()  # a test's thread and the broker's loop both change the list

    def __repr__(self) -> str:
        return f"RequestControls({self.name}: {self.controls})"

    def control(self, api: ApiKey | int | None = None, action: Action | None = None, *, times: int | None = None,
                client_id: str | None = None) -> RequestControl:
        """Add a control of requests of API ``api`` (None: all).

        Args:
            api: the API key to match (``ApiKey.PRODUCE``); None matches every request.
            action: :class:`Delay`, :class:`Fail`, :class:`Drop` or :class:`Hold`; None
                only counts the requests (:attr:`RequestControl.count`).
            times: act on this many requests, then the control is spent and removed;
                None: until removed (or, in a MiniCluster, ``heal()``).
            client_id: match only requests with this client id.

        Raises:
            ValueError: an unknown API key, a bad action or ``times`` < 1.
        """
        if api is not None and int(api) not in APIS:
            raise ValueError(f"no API key {api}")
        if action is not None and not isinstance(action, (Delay, Fail, Drop, Hold)):
            raise ValueError(f"action must be Delay, Fail, Drop, Hold or None, not {action!r}")
        if times is not None and times < 1:
            raise ValueError(f"times must be >= 1 (or None), not {times}")
        ctl = RequestControl(self, None if api is None else int(api), action, times, client_id)
        with self._lock:
            self.controls = [*self.controls, ctl]  # a new list: the loop may be iterating the old one
        log.info("%s: request control added: %s", self.name, ctl)
        return ctl

    def _remove(self, ctl: RequestControl, why: str, *, release: bool = True) -> None:
        with self._lock:
            removed = ctl in self.controls
            if removed:
                self.controls = [c for c in self.controls if c is not ctl]
        if removed:
            log.info("%s: request control %s: %s", self.name, why, ctl)
        if release:
            ctl.release()

    def clear(self) -> int:
        """Remove every control (held requests are answered); returns how many there were."""
        removed = self.controls
        for ctl in removed:
            self._remove(ctl, "removed")
        return len(removed)

    def match(self, api_key: int, client_id: str | None) -> RequestControl | None:
        """Count a request against the controls; the control that acts on it, or None.
        Called by the server for every request."""
        acting = None
        for ctl in self.controls:
            if (acting is not None and ctl.action is not None) or not ctl.matches(api_key, client_id):
                continue
            ctl.count += 1
            if ctl.action is not None:
                acting = ctl
            if ctl.times is not None and ctl.count >= ctl.times:
                # Spent: it matches no more, but a Hold keeps what it holds (the last one
                # included) until release(), remove() or the broker's stop.
                self._remove(ctl, f"spent after {ctl.count} request(s)", release=False)
        return acting


class SlowDisk:
    """A broker's disk latency: each write waits for the writes before it, then ``delay_ms``."""

    def __init__(self) -> None:
        self.delay_ms = 0
        self._lock: asyncio.Lock | None = None

    async def write(self) -> None:
        """Wait as one log write does (at once when the disk is not slow)."""
        if self.delay_ms <= 0:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one disk: writes queue behind each other
            if self.delay_ms > 0:
                await asyncio.sleep(self.delay_ms / 1000)


class BrokerFaults:
    """Every fault of one broker (see the module docstring).

    Attributes:
        requests: its request controls.
        disk: its disk latency.
        silent_to_clients: requests from clients are held unanswered.
        silent_to_brokers: requests from other brokers' fetchers are held, and this
            broker's own fetchers send nothing.
    """

    def __init__(self, name: str = "minibroker") -> None:
        self.requests = RequestControls(name)
        self.disk = SlowDisk()
        self.silent_to_clients = False
        self.silent_to_brokers = False
        self._changed: asyncio.Event | None = None

    @property
    def name(self) -> str:
        return self.requests.name

    @name.setter
    def name(self, value: str) -> None:
        self.requests.name = value

    def silent_to(self, client_id: str | None) -> bool:
        """Whether a request with this client id goes unanswered now (isolation)."""
        if not (self.silent_to_brokers or self.silent_to_clients):
            return False  # the common case, on every request: no parsing
        return self.silent_to_brokers if fetcher_node(client_id) is not None else self.silent_to_clients

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        """Wait until ``ready()`` holds; it is checked again at every isolation change."""
        while not ready():
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()

    async def reachable(self, client_id: str | None) -> None:
        """Wait while requests with this client id are silenced."""
        await self.wait_until(lambda: not self.silent_to(client_id))

    def isolate(self, *, clients: bool, brokers: bool) -> None:
        """Start silencing clients and/or brokers (on the broker's loop)."""
        self.silent_to_clients |= clients
        self.silent_to_brokers |= brokers

    def heal(self) -> list[str]:
        """End isolation, remove every control and clear the slow disk (on the broker's
        loop); returns what changed, as words for a log line."""
        changed = []
        if self.silent_to_clients or self.silent_to_brokers:
            cut = [w for w, on in (("clients", self.silent_to_clients), ("brokers", self.silent_to_brokers)) if on]
            changed.append(f"reachable again by {' and '.join(cut)}")
        self.silent_to_clients = self.silent_to_brokers = False
        if self._changed is not None:
            self._changed.set()  # every waiter checks again
            self._changed = None
        if removed := self.requests.clear():
            changed.append(f"{removed} request control(s) removed")
        if self.disk.delay_ms:
            changed.append(f"slow disk ({self.disk.delay_ms} ms) cleared")
            self.disk.delay_ms = 0
        return changed


# -- error responses ---------------------------------------------------------------------

# A response's partition id where the request names it otherwise (Fetch, Produce).
_ALIASES = {"partition_index": ("partition", "index")}


def _exists(f: Field, version: int) -> bool:
    return version in f.versions


def _is_error_code(f: Field) -> bool:
    return f.type == "int16" and f.name in ("error_code", "partition_error_code")


def _has_error(f: Field, version: int) -> bool:
    return any(_is_error_code(c) or _has_error(c, version) for c in f.fields if _exists(c, version))


def _fill(cls: type, top: type, fields: tuple[Field, ...], version: int, request: Any,
          request_fields: tuple[Field, ...], code: int, message: str, keys: bool) -> Any:
    """A response struct of ``cls`` (``fields``) mirroring ``request`` (a struct of
    ``request_fields``, or None); ``keys``: copy the request's same-named scalars."""
    req = {f.name: f for f in request_fields if _exists(f, version)}
    arrays = [f for f in fields if _exists(f, version) and f.is_array and f.is_struct and _has_error(f, version)]
    pairs: dict[str, Field] = {}
    for f in arrays:  # by name first
        if (r := req.get(f.name)) is not None and r.is_array:
            pairs[f.name] = r
    spare = [r for r in req.values() if r.is_array and r not in pairs.values()]
    for f in arrays:  # then in order: Produce's topic_data answers as responses
        if f.name not in pairs and spare:
            pairs[f.name] = spare.pop(0)
    values: dict[str, Any] = {}
    for f in fields:
        if not _exists(f, version):
            continue
        if _is_error_code(f):
            values[f.name] = code
        elif f.name == "error_message" and f.type == "string":
            values[f.name] = message
        elif f.type == "records":
            values[f.name] = b""  # empty, never null: librdkafka refuses a whole answer with null records
        elif _unknown_value(f) and not (keys and f.name == "producer_id" and f.name in req):
            # (an answer to an item that names its producer, a WriteTxnMarkers marker, keeps
            # it: Kafka's WriteTxnMarkersRequest.getErrorResponse)
            values[f.name] = -1
        elif f in arrays:
            source = pairs.get(f.name)
            items = (getattr(request, source.name) if source is not None else None) or ()
            element = getattr(top, f.element_type)
            if source is not None and not source.is_struct:  # names or ids: one item per value
                values[f.name] = [_keyed(_fill(element, top, f.fields, version, None, (), code, message, False),
                                         f.fields, version, source.element_type, item) for item in items]
            else:
                values[f.name] = [_fill(element, top, f.fields, version, item,
                                        source.fields if source is not None else (), code, message, True)
                                  for item in items]
        elif keys and f.type in PRIMITIVE_TYPES:
            for name in (f.name, *_ALIASES.get(f.name, ())):
                r = req.get(name)
                if r is not None and r.type == f.type:
                    values[f.name] = getattr(request, name)
                    break
    return cls(**values)


def _unknown_value(f: Field) -> bool:
    """A field Kafka's error answers fill with -1 (``FetchResponse.partitionResponse``,
    ``ProduceResponse.PartitionResponse``, ListOffsets, InitProducerId): offsets,
    watermarks, timestamps, producer id and epoch, leader epochs, a read replica."""
    name = f.name
    return ((f.type == "int64" and (name.endswith(("offset", "watermark", "timestamp", "time_ms")) or name == "producer_id"))
            or (f.type in ("int16", "int32") and name in ("producer_epoch", "leader_epoch", "preferred_read_replica")))


def _keyed(item: Any, fields: tuple[Field, ...], version: int, type_: str, value: Any) -> Any:
    """``item`` with ``value`` in its first field of type ``type_`` (a coordinator's key,
    a partition's index)."""
    for f in fields:
        if _exists(f, version) and f.type == type_ and not _is_error_code(f):
            setattr(item, f.name, value)
            break
    return item


def error_response(api_key: int, version: int, request: Any, error_code: int, message: str | None = None) -> Any:
    """The response of ``request`` answered with an error, as Kafka's
    ``AbstractRequest.getErrorResponse`` builds it: ``error_code`` in every error field
    (top-level and per item), one item per item of the request (its topics, partitions,
    groups... named as the request names them), everything else the table's defaults.

    The response's arrays of items are paired with the request's: by name, else in order
    (Produce's ``topic_data`` answers as ``responses``); an item copies the request item's
    fields of the same name and type (``name``, ``topic_id``, ``partition_index`` from
    ``partition`` or ``index``), and an array of names or partition ids in the request
    (``coordinator_keys``, ``partition_indexes``) answers one item per value.

    Args:
        api_key: the request's API key.
        version: the version to answer at (the request's).
        request: the decoded request.
        error_code: the Kafka error code.
        message: for ``error_message`` fields; default: the error's name.
    """
    spec = APIS[api_key]
    top = response_class(api_key)
    text = message if message is not None else f"{for_code(error_code).__name__} (a minibroker request control)"
    return _fill(top, top, spec.response.fields, version, request, spec.request.fields, error_code, text, False)
