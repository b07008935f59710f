"""The consumer's iteration: ``for record in consumer`` and ``async for`` (:class:`Iteration`,
a part of :class:`~kproto.consumer.AIOConsumer`).

Iteration polls batches and yields their records one by one. A record counts as consumed
once yielded: a commit inside the loop commits up to it, and after leaving the loop
early, the next poll starts each partition at its first record not yet yielded (the
consumer seeks back), so nothing is skipped. Both faces yield through
:meth:`Iteration._yielding`, which keeps that count.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from operator import length_hint

from kproto.consumer.state import ConsumerState
from kproto.consumer.structs import ConsumerRecord
from kproto.errors import ClientClosedError
from kproto.structs import OffsetAndMetadata, TopicPartition

__all__ = ["Batch", "Iteration"]


class Batch:
    """A polled batch that ``for``/``async for`` hands out one record at a time."""

    __slots__ = ("records", "_left")

    def __init__(self, records: list[ConsumerRecord]) -> None:
        self.records = records
        # The iterator the records are yielded from: what it has given out is what was
        # yielded, so nothing is counted per record.
        self._left = iter(records)

    @property
    def consumed(self) -> int:
        """Records yielded so far."""
        return len(self.records) - length_hint(self._left)


class Iteration(ConsumerState):
    """Iteration over records; :class:`~kproto.consumer.AIOConsumer` holds the batch
    being handed out (``_iteration``)."""

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        if self._closed:  # a close during the iteration ends it; iterating a closed one is a mistake
            raise ClientClosedError("the consumer is closed")
        return self._records()

    async def _records(self) -> AsyncIterator[ConsumerRecord]:
        while True:
            try:
                batch = await self._poll(None)
            except ClientClosedError:
                return
            for record in self._yielding(batch):
                yield record

    def _yielding(self, batch: list[ConsumerRecord]) -> Iterator[ConsumerRecord]:
        """Hand out ``batch`` one record at a time, counting what was yielded (both faces)."""
        iteration = self._iteration = Batch(batch)
        yield from iteration._left

    def _unconsumed(self) -> dict[TopicPartition, ConsumerRecord]:
        """First record per partition that iteration handed out of a batch but not yet yielded."""
        iteration = self._iteration
        if iteration is None:
            return {}
        return _first_per_partition(iteration.records[iteration.consumed:])

    def _abandon_iteration(self) -> None:
        """An iteration was left early: its records not yet yielded are to be polled again."""
        unconsumed = self._unconsumed()
        self._iteration = None
        self._seek_back(unconsumed)

    def _poll_abandoned(self, records: list[ConsumerRecord] | None) -> None:
        """A sync poll's records that its caller never received (Ctrl-C while the quick call
        ran: :meth:`~kproto._loop.Portal.call_plain`'s ``on_abandoned``): they are to be
        polled again, as an iteration's left early."""
        self._seek_back(_first_per_partition(records or ()))

    def _seek_back(self, first: dict[TopicPartition, ConsumerRecord]) -> None:
        for tp, record in first.items():
            if self._subscriptions.get(tp) is not None:  # still assigned
                self.seek(tp, OffsetAndMetadata(record.offset, "", record.leader_epoch))


def _first_per_partition(records: Iterable[ConsumerRecord]) -> dict[TopicPartition, ConsumerRecord]:
    first: dict[TopicPartition, ConsumerRecord] = {}
    for record in records:
        first.setdefault(TopicPartition(record.topic, record.partition), record)
    return first
