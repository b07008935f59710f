"""The consumer's positions: where each partition's next poll starts, and the offsets
of partitions (:class:`Positions`, a part of :class:`~kproto.consumer.AIOConsumer`).

A partition's position is the offset of the next record poll returns. A new partition
gets one from a seek, else (with ``group.id``) from its committed offset, else from
``auto.offset.reset``; these lookups run in the background, started by poll, so a poll
with a short timeout never abandons one half way. Calls that move positions
(:meth:`~Positions.seek`, :meth:`~Positions.seek_to_beginning`...) are lazy as in Java:
they take effect by the next poll. The positions themselves live in
:class:`~kproto.consumer.subscription.SubscriptionState`; this part decides when to look
them up and answers the public calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from kproto.consumer.errors import NoOffsetForPartitionError
from kproto.consumer.state import ConsumerState
from kproto.consumer.structs import OffsetAndTimestamp
from kproto.errors import KafkaError, KafkaTimeoutError
from kproto.protocol.timestamps import OffsetTimestamp
from kproto.structs import OffsetAndMetadata, TopicPartition

__all__ = ["Positions"]


class Positions(ConsumerState):
    """Positions and partition offsets; :class:`~kproto.consumer.AIOConsumer` holds the
    state (``_subscriptions``, ``_fetcher``, the lookup task ``_positions``)."""

    def _step_positions(self) -> None:
        """Start looking up missing positions; raise what the last lookup could not resolve."""
        task = self._positions
        if task is not None and task.done():
            self._positions = None
            error = task.exception()
            if error is not None and not (isinstance(error, KafkaError) and error.retriable):
                raise error
        subscriptions = self._subscriptions
        if self._positions is None and (subscriptions.missing_positions() or subscriptions.awaiting_reset()):
            self._positions = asyncio.get_running_loop().create_task(self._update_positions())
            self._positions.add_done_callback(lambda _: self._event.set())

    async def _update_positions(self) -> None:
        deadline = self._deadline(None)
        subscriptions = self._subscriptions
        missing = subscriptions.missing_positions()
        if missing and self._group is not None:
            versions = {tp: subscriptions.state(tp).version for tp in missing}
            committed = await self._group.committed(missing, deadline)
            missing = []
            for tp, offset in committed.items():
                state = subscriptions.get(tp)
                if state is None or state.version != versions[tp] or state.position is not None:
                    continue  # moved while we asked
                if offset is not None:
                    subscriptions.seek(tp, offset.offset, offset.leader_epoch)
                else:
                    missing.append(tp)
        if missing and subscriptions.default_reset == "none":
            raise NoOffsetForPartitionError(missing)
        for tp in missing:
            subscriptions.request_reset(tp)
        self._fetcher.wakeup()
        await self._fetcher.reset_positions(deadline)

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record :meth:`poll` returns from ``partition``.

        Looks the position up (committed offset or ``auto.offset.reset``) if it is not
        known yet, for at most ``timeout`` seconds (None: ``default.api.timeout.ms``).

        Raises:
            ValueError: the partition is not assigned.
            KafkaTimeoutError: the position could not be found in time.
        """
        self._started()
        state = self._subscriptions.state(partition)
        unconsumed = self._unconsumed().get(partition)
        if unconsumed is not None:
            return unconsumed.offset
        deadline = self._deadline(timeout)
        while state.position is None:
            self._event.clear()
            self._step_positions()
            if state.position is None and not await self._wait(deadline):
                raise KafkaTimeoutError(f"no position for {partition.topic}-{partition.partition} in time")
        return state.position

    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Make the next poll of ``partition`` start at ``offset``.

        Raises:
            ValueError: the partition is not assigned, or the offset is negative.
        """
        fetcher = self._started()
        if isinstance(offset, OffsetAndMetadata):
            self._subscriptions.seek(partition, offset.offset, offset.leader_epoch)
        else:
            self._subscriptions.seek(partition, offset)
        fetcher.forget([partition])
        self._sought([partition])

    def _rewind(self, partition: TopicPartition, offset: int, leader_epoch: int) -> None:
        """Move ``partition`` (if still assigned) back to a record this client fetched and
        no poll returned (records drained ahead, an iteration left early). Not validated
        again: the fetch just now was (Java's ``SubscriptionState.seekValidated`` with the
        current leader), and a leader change since is still caught (``maybe_validate``)."""
        state = self._subscriptions.get(partition)
        if state is None:
            return
        current, validating = state.current_leader_epoch, state.awaiting_validation
        self._subscriptions.seek(partition, offset, leader_epoch, validate=validating)
        state.current_leader_epoch = current
        self._fetcher.forget([partition])  # what it holds starts past the position now

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Move ``partitions`` (default: all assigned) to their first offset, by the next poll."""
        self._reset(partitions, "earliest")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Move ``partitions`` (default: all assigned) to their end (the last stable offset
        under read_committed), by the next poll."""
        self._reset(partitions, "latest")

    def _reset(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        fetcher = self._started()
        partitions = self._subscriptions.assigned() if partitions is None else list(partitions)
        for tp in partitions:
            self._subscriptions.request_reset(tp, strategy)
        fetcher.forget(partitions)
        self._sought(partitions)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching and returning ``partitions`` until :meth:`resume`; what was
        fetched already is kept."""
        fetcher = self._started()
        partitions = list(partitions)
        self._drop_ahead(partitions)  # the sync face's records drained ahead of them: polled after resume
        self._subscriptions.pause(partitions)
        fetcher.wakeup()  # what they hold no longer holds back the others' fetches

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch and return paused ``partitions`` again."""
        fetcher = self._started()
        self._subscriptions.resume(partitions)
        fetcher.wakeup()
        self._event.set()

    def paused(self) -> set[TopicPartition]:
        """The partitions paused now."""
        return set(self._subscriptions.paused())

    async def beginning_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                                ) -> dict[TopicPartition, int]:
        """The first offset of each partition (its log start offset)."""
        self._started()
        found = await self._fetcher.list_offsets({tp: OffsetTimestamp.EARLIEST for tp in partitions}, self._deadline(timeout))
        return {tp: f.offset for tp, f in found.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                          ) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition: the high watermark, or the
        last stable offset under read_committed.

        Raises:
            KafkaTimeoutError: not every partition answered within ``timeout`` seconds
                (None: ``default.api.timeout.ms``).
        """
        self._started()
        found = await self._fetcher.list_offsets({tp: OffsetTimestamp.LATEST for tp in partitions}, self._deadline(timeout))
        return {tp: f.offset for tp, f in found.items()}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the first offset whose timestamp is at or after the given
        one (ms), with that timestamp; None when every record is older."""
        self._started()
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"timestamp of {tp.topic}-{tp.partition} must be >= 0, got {ts}")
        found = await self._fetcher.list_offsets(dict(timestamps), self._deadline(timeout))
        return {tp: f if f.offset >= 0 else None for tp, f in found.items()}
