"""What ``send`` returns: one future per record, cheap because it leans on its batch.

A producer sends records in batches, and a batch succeeds or fails as a whole, so the
state lives on :class:`BatchResult` (one lock, one outcome, one base offset) and each
:class:`RecordFuture` holds only its batch and its index in it. RecordFuture is a real
:class:`concurrent.futures.Future` (``result()``, ``add_done_callback()``,
``concurrent.futures.wait()`` and ``asyncio.wrap_future()`` all work) whose state
attributes are read from the batch instead of being stored per record; creating one
costs a small object rather than a lock and a condition, and a send whose caller dropped
the previous send's future at once reuses that object (the codec's appender, when nothing
else can see it: see :class:`~kproto.codec.RecordRef`). It is also awaitable, which is
what the asyncio producer hands out.

Completion runs on the producer's loop thread: :meth:`BatchResult.complete` records the
outcome, wakes threads blocked in ``result()``, then calls the batch's delivery callbacks
(``send(..., on_delivery=...)``: kept as three columns on the batch, no object per
record) and the callbacks of the records that registered any through the future
(records nobody watches cost nothing at completion).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from concurrent.futures._base import FINISHED, PENDING
from typing import Any, NamedTuple

from kproto._loop import check_loop
from kproto.codec import RecordRef

__all__ = ["BatchResult", "RecordFuture", "RecordMetadata"]

log = logging.getLogger("kproto.producer")


class RecordMetadata(NamedTuple):
    """Where a record was written. ``offset`` is -1 with acks=0 (the broker does not say)."""

    topic: str
    partition: int
    offset: int
    timestamp: int  # CreateTime as sent, or the broker's LogAppendTime


class BatchResult:
    """The outcome of one batch, shared by its records' futures."""

    __slots__ = ("topic", "partition", "base_offset", "log_append_time", "error", "done", "_condition",
                 "_watched", "_deliveries", "_waiter", "home")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self.done = False
        self._condition = threading.Condition()
        self._watched: list[RecordFuture] | None = None  # records with callbacks or waiters
        # Delivery callbacks: (indexes, timestamps, callbacks) of their records, in send order.
        self._deliveries: tuple[list[int], list[int], list[Any]] | None = None
        self._waiter: asyncio.Future | None = None  # for awaiting records, on the producer's loop
        self.home: asyncio.AbstractEventLoop | None = None  # the loop that settles it (the sender's)

    def watch(self, record: RecordFuture) -> None:
        if self._watched is None:
            self._watched = [record]
        else:
            self._watched.append(record)

    def on_delivery(self, index: int, timestamp: int, callback: Any) -> None:
        """Call ``callback(error, metadata)`` for the batch's record ``index`` once the batch
        is settled; at once (in this thread) if it is already, as a future's done callback."""
        with self._condition:
            if not self.done:
                if self._deliveries is None:
                    self._deliveries = ([index], [timestamp], [callback])
                else:
                    indexes, timestamps, callbacks = self._deliveries
                    indexes.append(index)
                    timestamps.append(timestamp)
                    callbacks.append(callback)
                return
        self._deliver([index], [timestamp], [callback])

    def _deliver(self, indexes: list[int], timestamps: list[int], callbacks: list[Any]) -> None:
        error, topic, partition = self.error, self.topic, self.partition
        base, appended = self.base_offset, self.log_append_time
        for index, timestamp, callback in zip(indexes, timestamps, callbacks):
            try:
                if error is not None:
                    callback(error, None)
                else:
                    callback(None, RecordMetadata(topic, partition, base + index if base >= 0 else -1,
                                                  appended if appended >= 0 else timestamp))
            except Exception:  # a user's callback must not stop the others
                log.exception("exception in a delivery callback of %s-%s", topic, partition)

    def complete(self, base_offset: int, log_append_time: int = -1, error: BaseException | None = None) -> None:
        """Settle the batch (called once, on the producer's loop)."""
        with self._condition:
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self.done = True
            self._condition.notify_all()
            watched, self._watched = self._watched, None
            deliveries, self._deliveries = self._deliveries, None
        if self._waiter is not None:
            _wake(self._waiter)
        if deliveries is not None:
            self._deliver(*deliveries)
        for record in watched or ():
            record._settled()

    def wait_async(self) -> asyncio.Future:
        """A future of the running loop that settles with the batch.

        Raises:
            RuntimeError: the loop that would settle it does not run (an asyncio producer
                used from a second loop after its first one ended): waiting would be forever.
        """
        home = self.home
        if not self.done and home is not None and not home.is_running():
            check_loop(home, "AIOProducer")
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
            if self.done:
                self._waiter.set_result(None)
        return self._waiter


def _wake(waiter: asyncio.Future) -> None:
    loop = waiter.get_loop()
    if loop.is_closed():
        return  # awaited on a loop that ended: nobody waits any more
    try:
        here = asyncio.get_running_loop() is loop
    except RuntimeError:
        here = False
    if here:
        if not waiter.done():
            waiter.set_result(None)
    else:  # awaited from another loop than the producer's (a sync producer's future)
        loop.call_soon_threadsafe(lambda: waiter.done() or waiter.set_result(None))


class RecordFuture(RecordRef, concurrent.futures.Future[RecordMetadata]):
    """The future of one sent record: resolves to :class:`RecordMetadata` or raises why not.

    It cannot be cancelled (the record may already be on the wire) and only the producer
    settles it. Made as ``RecordFuture(batch_result, index, timestamp)``; its
    :class:`~kproto.codec.RecordRef` base holds those (Future's ``__init__`` never runs:
    see the module doc).
    """

    # concurrent.futures.Future keeps these as attributes; here they derive from the batch.
    @property
    def _condition(self) -> threading.Condition:
        return self._batch._condition

    @property
    def _state(self) -> str:
        return FINISHED if self._batch.done else PENDING

    @property
    def _exception(self) -> BaseException | None:
        return self._batch.error

    @property
    def _result(self) -> RecordMetadata:
        b = self._batch
        offset = b.base_offset + self._index if b.base_offset >= 0 else -1
        timestamp = b.log_append_time if b.log_append_time >= 0 else self._timestamp
        return RecordMetadata(b.topic, b.partition, offset, timestamp)

    @property
    def _waiters(self) -> list:
        return self._watchers()[0]

    @property
    def _done_callbacks(self) -> list:
        return self._watchers()[1]

    def _watchers(self) -> tuple[list, list]:
        # Called with the batch's condition held (Future's methods take it first).
        lists = self.__dict__.get("_lists")
        if lists is None:
            lists = self.__dict__["_lists"] = ([], [])
            self._batch.watch(self)
        return lists

    def _settled(self) -> None:
        waiters, callbacks = self.__dict__["_lists"]
        for waiter in waiters:
            if self._batch.error is None:
                waiter.add_result(self)
            else:
                waiter.add_exception(self)
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # a user's callback must not stop the others
                log.exception("exception in a delivery callback of %r", self)

    def cancel(self) -> bool:
        return False

    def set_running_or_notify_cancel(self) -> bool:
        return not self._batch.done

    def set_result(self, result: Any) -> None:
        raise RuntimeError("only the producer settles a RecordFuture")

    set_exception = set_result

    def __await__(self):
        if not self._batch.done:
            yield from self._batch.wait_async().__await__()
        return self.result()
