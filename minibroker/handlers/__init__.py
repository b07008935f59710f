"""Request handlers, one module per API family, and the one registry of them.

A handler is ``async def handle(state, header, request) -> response | None`` (None:
no response, as for acks=0 Produce), registered with :func:`handles` for a version
range. ApiVersions answers from this registry, so what is advertised is exactly what
is handled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["HANDLERS", "handles", "supported_versions"]

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
    api_versions,
    cluster,
    configs,
    delete_records,
    fetch,
    groups,
    list_offsets,
    metadata,
    offsets,
    produce,
    producer_ids,
    topics,
)
