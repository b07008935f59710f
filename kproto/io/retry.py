"""Retrying a request: Kafka clients' backoff, shared by every client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kproto.errors import KafkaError, KafkaTimeoutError

__all__ = ["retrying"]

T = TypeVar("T")


async def retrying(attempt: Callable[[], Awaitable[T]], *, deadline: float, backoff: float, max_backoff: float,
                   on_retry: Callable[[KafkaError], Awaitable[None]] | None = None) -> T:
    """``attempt()`` until it does not raise a retriable error, or ``deadline`` passes.

    Waits ``backoff`` seconds between attempts, doubling up to ``max_backoff`` (as
    ``retry.backoff.ms`` / ``retry.backoff.max.ms`` do); ``on_retry(error)`` runs before
    each wait, e.g. to forget a broker that moved. ``deadline`` is a ``time.monotonic()``.

    The deadline bounds the attempts too, as Java's clients bound a call's requests by
    its ``default.api.timeout.ms``: an attempt (or ``on_retry``) still running when it
    passes is cancelled, and :class:`~kproto.errors.KafkaTimeoutError` raised, so a broker
    that stops answering cannot stretch a call to its ``request.timeout.ms``
    (issue 10, item 14).

    Raises:
        KafkaTimeoutError: the deadline passed during an attempt.
        KafkaError: the attempt's non-retriable error, or its retriable one when no time
            is left for another attempt.
    """
    last: KafkaError | None = None
    while True:
        try:
            return await _until(attempt(), deadline, last)
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() + backoff > deadline:
                raise
            last = exc
            if on_retry is not None:
                await _until(on_retry(exc), deadline, exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, max_backoff)


async def _until(step: Awaitable[T], deadline: float, last: KafkaError | None) -> T:
    """``step``, cancelled when ``deadline`` passes (KafkaTimeoutError, caused by ``last``)."""
    try:
        return await asyncio.wait_for(step, max(deadline - time.monotonic(), 0))
    except asyncio.TimeoutError:
        error = KafkaTimeoutError("no success before the call's deadline" + (f"; last error: {last}" if last else ""))
        raise error from last
