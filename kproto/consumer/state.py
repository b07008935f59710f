"""What the parts of :class:`~kproto.consumer.AIOConsumer` share: its state, and the calls
the parts make to each other.

The consumer is one object made of parts, one job each (:mod:`~kproto.consumer.positions`,
:mod:`~kproto.consumer.rebalance`, :mod:`~kproto.consumer.commits`,
:mod:`~kproto.consumer.iteration`, :mod:`~kproto.consumer.columnar`), and every part derives from :class:`ConsumerState`.
It declares, for readers and type checkers, the attributes that
``AIOConsumer.__init__`` sets and the parts read; at run time it adds nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kproto.config import ClientConfig
from kproto.consumer.coordinator import GroupCoordinator
from kproto.consumer.fetcher import Fetcher
from kproto.consumer.membership import Membership
from kproto.consumer.structs import ConsumerRecord
from kproto.consumer.subscription import SubscriptionState
from kproto.io import Cluster
from kproto.metrics import ConsumerMetrics
from kproto.structs import OffsetAndMetadata, TopicPartition

__all__ = ["ConsumerState"]


class ConsumerState:
    """The consumer's shared state (set by ``AIOConsumer.__init__``; see there)."""

    config: ClientConfig
    _cluster: Cluster
    _subscriptions: SubscriptionState  # what is consumed, and positions
    _fetcher: Fetcher | None  # with the background tasks, once started
    _event: asyncio.Event | None  # something for poll happened
    _metadata_wanted: asyncio.Event | None
    _closed: bool
    _closing_by: float | None  # set while closing: no wait goes past it
    _retry_backoff: float
    _face: Any  # what callbacks get as their consumer
    _metrics: ConsumerMetrics  # observability (kproto.metrics)
    # positions
    _positions: asyncio.Task | None  # the lookup of missing positions
    # the group and rebalances
    _membership: Membership | None
    _group: GroupCoordinator | None
    _join: asyncio.Task | None
    _callbacks: dict[str, Callable[[Any, list[TopicPartition]], Any] | None]
    _snapshot: dict[str, int | None] | None
    _matched: bool
    # commits
    _auto_commit: bool
    _auto_commit_interval: float
    _next_auto_commit: float
    _commits: set[asyncio.Task]
    _commit_results: list[tuple[Callable[..., Any], dict, BaseException | None]]
    # iteration
    _iteration: Any  # the iteration.Batch being handed out
    _ahead: Any  # the sync face's records drained ahead of its polls (an iteration.Ahead)
    # poll_arrow (columnar): per partition, the Arrow batch made of columns still being taken
    _arrow_built: dict[TopicPartition, tuple[Any, bool, Any]]

    if TYPE_CHECKING:  # one part calling another (each is defined once, in its part)
        def _started(self) -> Fetcher: ...
        def _deadline(self, timeout: float | None) -> float: ...
        async def _wait(self, deadline: float | None) -> bool: ...
        async def _poll(self, timeout: float | None, max_records: int | None = None,
                        drain: Callable[[int], list] | None = None) -> list: ...
        def _abandon_iteration(self) -> None: ...
        def _drop_ahead(self, partitions: Iterable[TopicPartition] | None = None) -> None: ...
        def _sought(self, partitions: Iterable[TopicPartition]) -> None: ...
        def _rewind(self, partition: TopicPartition, offset: int, leader_epoch: int) -> None: ...
        def _group_idle(self) -> bool: ...
        def _poll_now(self, max_records: int | None, columns: bool = False, ahead: int = 1) -> Any: ...
        def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None: ...
        def _unconsumed(self) -> dict[TopicPartition, ConsumerRecord]: ...
        def _consumed(self) -> dict[TopicPartition, OffsetAndMetadata]: ...
        async def _commit_logged(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None: ...
        def _commit_in_background(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                                  callback: Callable[..., Any] | None, *, auto: bool = False) -> None: ...
        async def _commit_before_rebalance(self) -> None: ...
        async def _run_commit_callbacks(self) -> None: ...
