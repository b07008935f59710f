"""Retrying a request: Kafka clients' backoff, shared by every client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kproto.errors import KafkaError

__all__ = ["retrying"]

T = TypeVar("T")


async def retrying(attempt: Callable[[], Awaitable[T]], *, deadline: float, backoff: float, max_backoff: float,
                   on_retry: Callable[[KafkaError], Awaitable[None]] | None = None) -> T:
    """``attempt()`` until it does not raise a retriable error, or ``deadline`` passes.

    Waits ``backoff`` seconds between attempts, doubling up to ``max_backoff`` (as
    ``retry.backoff.ms`` / ``retry.backoff.max.ms`` do); ``on_retry(error)`` runs before
    each wait, e.g. to forget a broker that moved. ``deadline`` is a ``time.monotonic()``.
    """
    while True:
        try:
            return await attempt()
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() + backoff > deadline:
                raise
            if on_retry is not None:
                await on_retry(exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, max_backoff)
