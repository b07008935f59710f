"""Request handlers, one module per API family, and the one registry of them.

A handler is ``async def handle(state, header, request) -> response | None`` (None:
no response, as for acks=0 Produce), registered with :func:`handles` for a version
range; ``header`` is a :class:`RequestContext`: the request header's fields and the
peer's address. ApiVersions answers from this registry, so what is advertised is
exactly what is handled.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from kproto.protocol import RequestHeader

__all__ = ["ANONYMOUS", "HANDLERS", "RequestContext", "client_host", "handles", "supported_versions"]

#: The principal of a connection that has not authenticated (Kafka's ``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS = "User:ANONYMOUS"


class RequestContext(NamedTuple):
    """What a handler knows of a request besides its body (Kafka's ``RequestContext``).

    The fields of :class:`~kproto.protocol.RequestHeader`, in its order, then the peer's.

    Attributes:
        client_host: the client's address as Kafka reports it (DescribeGroups): Java's
            ``InetAddress.toString()`` of an unresolved address, ``"/127.0.0.1"``; see
            :func:`client_host`.
        principal: who sent the request, as Kafka's ``KafkaPrincipal.toString()``
            (``"User:alice"``): the SASL user or the TLS client certificate's name once the
            connection authenticated, ``"User:ANONYMOUS"`` before or without either. The
            authorizer and quotas read it.
        listener_name: the listener the request came in on (``"PLAINTEXT"``, ``"SASL_SSL"``,
            a custom name from ``listener.security.protocol.map``).
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    tagged_fields: dict[int, bytes] | None
    client_host: str
    principal: str = ANONYMOUS
    listener_name: str = "PLAINTEXT"

    @classmethod
    def of(cls, header: RequestHeader, client_host: str, principal: str = ANONYMOUS,
           listener_name: str = "PLAINTEXT") -> RequestContext:
        return cls(*header, client_host, principal, listener_name)


def client_host(peername: Any) -> str:
    """A socket's peer address as Kafka shows it: ``"/"`` and Java's ``getHostAddress()``.

    Java writes IPv6 without ``::`` shortening or leading zeros (``"/0:0:0:0:0:0:0:1"``)
    and an IPv4-mapped IPv6 address as the IPv4 one; a link-local scope is left out. An
    address that is not IP (a Unix socket, or none) gives ``""``.
    """
    if not isinstance(peername, tuple) or not peername:
        return ""
    try:
        ip = ipaddress.ip_address(peername[0].partition("%")[0])
    except ValueError:
        return ""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return f"/{ip.ipv4_mapped}"
        return "/" + ":".join(f"{int(group, 16):x}" for group in ip.exploded.split(":"))
    return f"/{ip}"

Handler = Callable[[Any, Any, Any], Awaitable[Any]]

# api_key -> (min_version, max_version, handler)
HANDLERS: dict[int, tuple[int, int, Handler]] = {}


def handles(api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    """Register the decorated coroutine as the handler of ``api_key`` in that range."""

    def register(fn: Handler) -> Handler:
        if api_key in HANDLERS:
            raise RuntimeError(f"API key {api_key} has two handlers")
        HANDLERS[api_key] = (min_version, max_version, fn)
        return fn

    return register


def supported_versions() -> list[tuple[int, int, int]]:
    """``(api_key, min_version, max_version)`` for every handled API, in key order."""
    return sorted((key, lo, hi) for key, (lo, hi, _) in HANDLERS.items())


# Importing the modules registers their handlers.
from minibroker.handlers import (  # noqa: E402,F401
    acls,
    api_versions,
    cluster,
    configs,
    delete_records,
    elections,
    fetch,
    groups,
    list_offsets,
    metadata,
    offsets,
    produce,
    producer_ids,
    producers,
    quotas,
    sasl,
    scram,
    topics,
    txn,
    txn_markers,
)
