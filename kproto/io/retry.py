"""Retrying a request: Kafka clients' backoff, shared by every client.

:class:`Backoff` is the one backoff policy: exponential with KIP-580's jitter (Java's
``ExponentialBackoff``: ``min(initial * 2**attempts, max) * uniform(0.8, 1.2)``). Every
retry loop (reconnects, metadata, fetch, produce, coordinator requests) asks it how long
to wait, so no loop retries in lock-step with others after a broker comes back.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kproto._loop import wait_for
from kproto.errors import KafkaError, KafkaTimeoutError

__all__ = ["Backoff", "retrying"]

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter (KIP-580), in seconds.

    ``delay(attempts)`` is the wait after ``attempts`` failed attempts (the first wait is
    ``delay(1)`` = ``initial`` +/- jitter), doubling up to ``maximum``. Built from a client
    config's ``retry.backoff.ms``/``retry.backoff.max.ms`` by :meth:`retry` or its
    ``reconnect.backoff.ms``/``reconnect.backoff.max.ms`` by :meth:`reconnect`.
    """

    initial: float
    maximum: float
    jitter: float = 0.2  # Java's CommonClientConfigs.RETRY_BACKOFF_JITTER

    @classmethod
    def retry(cls, config: Mapping[str, Any]) -> Backoff:
        """The policy of ``retry.backoff.ms`` / ``retry.backoff.max.ms``."""
        return cls(config["retry.backoff.ms"] / 1000, max(config["retry.backoff.max.ms"], config["retry.backoff.ms"]) / 1000)

    @classmethod
    def reconnect(cls, config: Mapping[str, Any]) -> Backoff:
        """The policy of ``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms``."""
        return cls(config["reconnect.backoff.ms"] / 1000,
                   max(config["reconnect.backoff.max.ms"], config["reconnect.backoff.ms"]) / 1000)

    def delay(self, attempts: int = 1) -> float:
        """Seconds to wait after ``attempts`` (>= 1) failed attempts; 0 before any."""
        if attempts <= 0 or self.initial <= 0:
            return 0.0
        # The exponent is capped before it is used so that a long outage cannot overflow it.
        base = self.initial * 2 ** min(attempts - 1, 64)
        factor = random.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        return min(base, self.maximum) * factor


async def retrying(attempt: Callable[[], Awaitable[T]], *, deadline: float, backoff: Backoff,
                   on_retry: Callable[[KafkaError], Awaitable[None]] | None = None) -> T:
    """``attempt()`` until it does not raise a retriable error, or ``deadline`` passes.

    Waits as ``backoff`` says between attempts (``retry.backoff.ms`` doubling up to
    ``retry.backoff.max.ms``, with jitter); ``on_retry(error)`` runs before each wait,
    e.g. to forget a broker that moved. ``deadline`` is a ``time.monotonic()``.

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
    failures = 0
    while True:
        try:
            return await _until(attempt(), deadline, last)
        except KafkaError as exc:
            failures += 1
            wait = backoff.delay(failures)
            if not exc.retriable or time.monotonic() + wait > deadline:
                raise
            last = exc
            if on_retry is not None:
                await _until(on_retry(exc), deadline, exc)
            await asyncio.sleep(wait)


async def _until(step: Awaitable[T], deadline: float, last: KafkaError | None) -> T:
    """``step``, cancelled when ``deadline`` passes (KafkaTimeoutError, caused by ``last``)."""
    try:
        return await wait_for(step, max(deadline - time.monotonic(), 0))
    except TimeoutError:
        error = KafkaTimeoutError("no success before the call's deadline" + (f"; last error: {last}" if last else ""))
        raise error from last
