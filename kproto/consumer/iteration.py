"""The consumer's iteration: ``for record in consumer`` and ``async for`` (:class:`Iteration`,
a part of :class:`~kproto.consumer.AIOConsumer`), and the sync face's records drained ahead.

Iteration polls batches and yields their records one by one. A record counts as consumed
once yielded: a commit inside the loop commits up to it, and after leaving the loop
early, the next poll starts each partition at its first record not yet yielded (the
consumer seeks back), so nothing is skipped, unless the application sought the partition
since: the last seek says where it starts (:meth:`Iteration._sought`). Both faces yield
through :meth:`Iteration._yielding`, which keeps that count.

Records drained ahead (issue 16). Each trip of the sync :class:`~kproto.consumer.Consumer`
to the loop thread costs about twice the decoding of the ``max.poll.records`` records it
fetches (two thread wake-ups and two hand-overs of the GIL), so its poll drains a few
polls' worth in one trip and hands them out from :attr:`Iteration._ahead` (an :class:`Ahead`)
in its own thread, ``max.poll.records`` at a time, without the trip. Records drained ahead
count as not consumed, exactly as an iteration's records not yet yielded, from the moment
they leave the loop (the trip puts them in ``_ahead`` there) until a poll returns them
(one interrupted while handing them out gives them back): ``position`` and commits
stop at the first of them (:meth:`Iteration._unconsumed`), any poll made on the loop
seeks back to them first (:meth:`Iteration._abandon_iteration`), a call that changes
the assignment (assign, subscribe, unsubscribe) or closes seeks back to them before it
acts (:meth:`Iteration._drop_ahead`), pause does for its partitions only (the others
keep their records ahead and what the fetcher holds), and a seek drops those of its
partition; so the records a poll returns are those that a poll without read-ahead would
return. Seeking back to them is not validated again (:meth:`Positions._rewind
<kproto.consumer.positions.Positions._rewind>`): they were just fetched. Only the
application's thread (in poll) takes from it, and only calls made from that thread
(through the loop, while it waits) replace or drop it, so it needs no lock; another
thread's commit or position reads it on the loop (:meth:`Ahead.records`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from itertools import chain, islice
from operator import length_hint

from kproto.consumer.state import ConsumerState
from kproto.consumer.structs import ConsumerRecord
from kproto.errors import ClientClosedError
from kproto.structs import TopicPartition

__all__ = ["Ahead", "Batch", "Iteration"]


class Batch:
    """A polled batch that ``for``/``async for`` hands out one record at a time."""

    __slots__ = ("records", "_left", "sought")

    def __init__(self, records: list[ConsumerRecord]) -> None:
        self.records = records
        # The iterator the records are yielded from: what it has given out is what was
        # yielded, so nothing is counted per record.
        self._left = iter(records)
        # Partitions sought since (Iteration._sought): their records not yet yielded are
        # no longer pending (the seek wins).
        self.sought: frozenset[TopicPartition] = frozenset()

    @property
    def consumed(self) -> int:
        """Records yielded so far."""
        return len(self.records) - length_hint(self._left)


class Ahead:
    """The sync face's records drained ahead: one list per poll's worth, in offset order.

    A poll takes the first list in two steps, :meth:`peek` then :meth:`advance` once
    nothing can fail any more (its metrics counted), so that a poll interrupted in between
    (Ctrl-C) leaves them here, still not consumed. A list handed out is let go of (the
    application may have dropped its records). Another thread's call reads the lists on
    the loop (:meth:`records`) while this thread advances: each change is one store or one
    ``popleft`` (atomic under the GIL), and a list is never changed once made.
    """

    __slots__ = ("_polls",)

    def __init__(self, records: list[ConsumerRecord], limit: int) -> None:
        self._polls = deque([records] if len(records) <= limit else
                            (records[i:i + limit] for i in range(0, len(records), limit)))

    def __bool__(self) -> bool:
        return bool(self._polls)

    def peek(self, limit: int) -> list[ConsumerRecord]:
        """The next poll's records (at most ``limit``; none when all were handed out)."""
        polls = self._polls
        if not polls:
            return []
        first = polls[0]
        return first if len(first) <= limit else first[:limit]

    def advance(self, count: int) -> None:
        """The ``count`` records :meth:`peek` gave were returned by a poll."""
        polls = self._polls
        if not count:
            return
        if count >= len(polls[0]):
            polls.popleft()
        else:
            polls[0] = polls[0][count:]

    def records(self) -> Iterator[ConsumerRecord]:
        """The records not yet handed out, in order (from any thread)."""
        return chain.from_iterable(list(self._polls))  # list(): a snapshot, taken at once

    def without(self, partitions: set[TopicPartition]) -> Ahead:
        """The records not yet handed out but those of ``partitions``, as a new one (a poll
        handing out from this one meanwhile, in another thread, changes only this one)."""
        ahead = Ahead.__new__(Ahead)
        kept = ([r for r in poll if TopicPartition(r.topic, r.partition) not in partitions] for poll in list(self._polls))
        ahead._polls = deque(poll for poll in kept if poll)
        return ahead


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
        """First record per partition that iteration handed out of a batch but not yet
        yielded, or else that the sync face drained ahead but no poll returned yet."""
        first: dict[TopicPartition, ConsumerRecord] = {}
        assigned = set(self._subscriptions.assigned())
        # In offset order: an iteration's batch was taken before what is still ahead.
        iteration, ahead = self._iteration, self._ahead
        if iteration is not None:
            first = _first_per_partition(islice(iteration.records, iteration.consumed, None),
                                         assigned - iteration.sought)
        if ahead:
            first.update(_first_per_partition(ahead.records(), assigned - first.keys()))
        return first

    def _abandon_iteration(self) -> None:
        """An iteration was left early, or the sync face's records drained ahead are still
        there (a poll on the loop comes first): they are to be polled again."""
        unconsumed = self._unconsumed()
        self._iteration = self._ahead = None
        self._seek_back(unconsumed)

    def _drop_ahead(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """The sync face's records drained ahead (of ``partitions``; None: all) are to be
        polled again (the partitions are paused, or the assignment is about to change); an
        iteration's batch is left as it is. The other partitions' stay, with what the
        fetcher holds for them."""
        ahead, self._ahead = self._ahead, None
        if ahead:
            wanted = set(self._subscriptions.assigned())
            if partitions is not None:
                wanted &= set(partitions)
                self._ahead = ahead.without(wanted)
            self._seek_back(_first_per_partition(ahead.records(), wanted))

    def _sought(self, partitions: Iterable[TopicPartition]) -> None:
        """The application moved the positions of ``partitions`` (seek): their records not
        yet yielded by an iteration left early, or drained ahead, are pending no more, so
        the next poll does not seek them back (issue 16): the last seek says where a
        partition's next record comes from, as Java's ``SubscriptionState.seek``."""
        partitions = set(partitions)
        iteration, ahead = self._iteration, self._ahead
        if iteration is not None:
            iteration.sought = iteration.sought | partitions
        if ahead:
            self._ahead = ahead.without(partitions)

    def _ahead_due(self) -> bool:
        """The sync face may hand out records drained ahead now, in its own thread: no group
        step is waiting for a poll on the loop (a rebalance polls them again first), and no
        iteration was left part way (its records come first). Reads only. Commit callbacks
        and an auto-commit due meanwhile are the face's to run first (they leave the
        records drained ahead as they are: commits count only what polls returned)."""
        iteration = self._iteration
        return self._group_idle() and (iteration is None or not length_hint(iteration._left))

    def _poll_abandoned(self, records: list[ConsumerRecord] | None) -> None:
        """A sync poll's records that its caller never received (Ctrl-C while the quick call
        ran: :meth:`~kproto._loop.Portal.call_plain`'s ``on_abandoned``): they are to be
        polled again, as an iteration's left early."""
        self._seek_back(_first_per_partition(records or ()))

    def _seek_back(self, first: dict[TopicPartition, ConsumerRecord]) -> None:
        for tp, record in first.items():
            self._rewind(tp, record.offset, record.leader_epoch)


def _first_per_partition(records: Iterable[ConsumerRecord], wanted: Iterable[TopicPartition] | None = None
                         ) -> dict[TopicPartition, ConsumerRecord]:
    """The first of ``records`` of each partition (of those ``wanted``, None: any); with
    ``wanted``, the walk stops once each of those is found (records drained ahead are
    thousands: position() and commit() after each poll must not walk them all)."""
    first: dict[TopicPartition, ConsumerRecord] = {}
    if wanted is not None:
        wanted = set(wanted)
        if not wanted:
            return first
    for record in records:
        tp = TopicPartition(record.topic, record.partition)
        if tp not in first and (wanted is None or tp in wanted):
            first[tp] = record
            if wanted is not None:
                wanted.discard(tp)
                if not wanted:
                    break
    return first
