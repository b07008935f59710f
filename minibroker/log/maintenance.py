"""Retention and compaction of a broker's logs, with their heavy work off the event loop.

Theory of operation: a :class:`~minibroker.log.PartitionLog` is not thread-safe; the
broker drives every log from its event loop, where appends, fetches, DeleteRecords and
topic deletion go on while maintenance runs. What takes time is kept off the loop, in
the loop's default executor (a worker thread), and every change of the log itself is
made on the loop:

- **Compaction** (:class:`~minibroker.log.cleaner.Cleaning`) plans on the loop (a
  snapshot of the inactive segments, read through descriptors of its own, and the
  output files created), builds in a worker thread (reading every batch, filtering,
  rewriting, fsyncing: nearly all of the work; inactive segments never change, so they
  can be read while the loop appends to the active one), then applies on the loop: each
  group is swapped in only if the log still holds it as it was, so a DeleteRecords,
  retention or topic deletion that came meanwhile wins and the cleaned copy is dropped.
- **Retention** decides and renames on the loop (``*.deleted``; the files go
  ``file.delete.delay.ms`` later, at once with 0): changing names is cheap while the
  files are still open. Freeing a deleted segment's blocks happens when its last
  descriptor closes, which for a big file takes a while: the loop hands its last
  references to a worker thread, where that close happens. (A fetch still sending from
  the segment holds a reference of its own, and the file lives until it is done.)
  Segments that compaction replaced are let go the same way.

When the broker stops during a compaction, the worker is told to stop at its next batch
and awaited, its output deleted: no thread outlives the broker's logs.

I/O errors: a log whose maintenance fails is logged and the other logs still get their
turn, and the next check tries again (the server's periodic loop outlives any failure).
A compaction that fails before its commit point (a full disk while the cleaned copy is
written) leaves the originals as they were, and the log online. A failure that leaves
the files and the log apart (a segment that retention or DeleteRecords removes from the
log but cannot unlink, a swap that fails after its commit point, the log start offset
checkpoint that cannot be written) takes the log offline, as Kafka's
``LogDirFailureChannel`` takes a log dir offline on an ``IOException``: KAFKA_STORAGE_ERROR
for it until the broker restarts and recovers it from its files (see
:meth:`offline_on_failure`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from kproto.errors import KafkaStorageError
from minibroker.log.cleaner import CleanerStats, Cleaning, cleanable
from minibroker.log.partition import PartitionLog
from minibroker.log.segment import LogSegment

__all__ = ["compact", "maintain", "offline_on_failure"]

log = logging.getLogger(__name__)


async def maintain(logs: Iterable[PartitionLog]) -> None:
    """Retention, then compaction, of each log in turn (``log.retention.check.interval.ms``).

    A log that fails is logged and the others still get their turn.
    """
    for plog in logs:
        if plog.closed:  # its topic was deleted while an earlier log was maintained
            continue
        try:
            # flush.ms, and the files of segments deleted file.delete.delay.ms ago
            removed = plog.run_scheduled()
            if removed:
                await asyncio.to_thread(_drop, removed)
            if plog.config.delete:
                await _apply_retention(plog)
            if plog.config.compact and not plog.closed:
                await compact(plog)
        except Exception:
            log.exception("maintenance of %r failed", plog)


@contextmanager
def offline_on_failure(plog: PartitionLog, what: str) -> Iterator[None]:
    """Run a change of ``plog``'s files that is not undone if it fails halfway: an
    ``OSError`` takes the log offline (see the module docstring) and is raised as
    :class:`~kproto.errors.KafkaStorageError`."""
    try:
        yield
    except OSError as exc:
        plog.go_offline(f"{what} failed: {exc}")
        raise KafkaStorageError(f"{plog!r}: {what} failed, the log is offline: {exc}") from exc


async def _apply_retention(plog: PartitionLog) -> None:
    before = {id(s): s for s in plog.segments}
    with offline_on_failure(plog, "retention"):
        plog.apply_retention()
    for segment in plog.segments:
        before.pop(id(segment), None)
    if before:
        gone = list(before.values())
        before.clear()
        await asyncio.to_thread(_drop, gone)


def _drop(segments: list[LogSegment]) -> None:
    """Drop the last references to deleted segments: their descriptors close here."""
    segments.clear()


async def compact(plog: PartitionLog, now_ms: int | None = None) -> CleanerStats:
    """Compact ``plog``'s cleanable segments if it is due (``min.cleanable.dirty.ratio``,
    ``max.compaction.lag.ms``: see :mod:`minibroker.log.cleaner`), the work in a worker
    thread (see above).

    Args:
        now_ms: the time compaction lags and tombstones are aged against; the log's clock
            by default.
    """
    now = plog.now_ms() if now_ms is None else now_ms
    if not cleanable(plog, now).due(plog.config):
        return CleanerStats()
    cleaning = Cleaning.plan(plog, now)
    if cleaning is None:
        return CleanerStats()
    build = asyncio.get_running_loop().run_in_executor(None, cleaning.build)
    try:
        await asyncio.shield(build)
    except asyncio.CancelledError:
        cleaning.aborted = True  # stops at the next batch
        await asyncio.gather(build, return_exceptions=True)
        cleaning.discard()
        raise
    except BaseException:
        cleaning.discard()  # nothing committed: the originals stay
        raise
    stats = cleaning.apply()
    replaced = [segment for group in cleaning.groups for segment in group]
    cleaning.groups.clear()
    await asyncio.to_thread(_drop, replaced)  # as retention's: the last descriptors close there
    return stats
