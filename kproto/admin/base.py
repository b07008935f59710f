"""What the parts of :class:`~kproto.admin.AIOAdminClient` share: its state, the calls the
parts make to each other, and how a call on several items reports them.

The client is one object made of parts, as the consumer is (:mod:`kproto.consumer.state`):
:mod:`~kproto.admin.client` (topics, configs, groups, offsets, the cluster, and the
plumbing: retries, coordinators, leaders), :mod:`~kproto.admin.transactions` and
:mod:`~kproto.admin.quotas`. Each part derives from :class:`AdminState`, which declares, for
readers and type checkers, what ``AIOAdminClient.__init__`` sets and the parts call; at run
time it adds nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from kproto.config import ClientConfig
from kproto.errors import KafkaCodeError, for_code
from kproto.io import Cluster
from kproto.structs import TopicPartition

__all__ = ["AdminState", "item_error", "outcome"]

K = TypeVar("K")


def outcome(results: dict[K, Any]) -> dict[K, Any]:
    """``results`` if no value is an exception, else raise the first with all attached."""
    for value in results.values():
        if isinstance(value, BaseException):
            value.results = results
            raise value
    return results


def item_error(code: int, message: str | None = None, item: Any = None) -> KafkaCodeError | None:
    """The error of one item's answer (None for code 0), its message or the item in the text."""
    if not code:
        return None
    detail = message or (f"{item}" if item is not None else "")
    return for_code(code)(detail)


class AdminState:
    """The admin client's shared state (set by ``AIOAdminClient.__init__``; see there)."""

    config: ClientConfig
    _cluster: Cluster
    _home: asyncio.AbstractEventLoop | None
    _closed: bool

    if TYPE_CHECKING:  # one part calling another (each is defined once, in kproto.admin.client)
        async def _retrying(self, attempt: Callable[[], Awaitable[K]]) -> K: ...
        async def _leaders(self, partitions: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]: ...
