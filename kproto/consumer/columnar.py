"""The consumer's columnar poll: :meth:`Columnar.poll_arrow` returns what poll would, as one
``pyarrow.RecordBatch`` in the schema of Spark's Kafka source (a part of
:class:`~kproto.consumer.AIOConsumer`).

Theory of operation. The fetcher keeps each partition's share of a Fetch response as it
came (:mod:`~kproto.consumer.fetcher`); :meth:`~kproto.consumer.fetcher.Fetcher.drain_columns`
hands the batches to return to the codec's columnar decoder in one call per partition
(one slice of the response, when no control or aborted batch lies between them), which
writes the records straight into Arrow-layout buffers; :mod:`kproto.arrow` wraps those
buffers as Arrow arrays without a copy. No Python object is made per record. Records of
several partitions are joined into one batch (``pa.concat_batches``: one copy of the
columns), so ``topic`` and ``partition`` are columns like the others. A ``max_records``
that ends inside what was decoded leaves the rest decoded, with its Arrow arrays, for the
next polls to slice: each record is decoded and wrapped once, however small the limit.

The rest is poll's: the same loop (group, positions, auto-commit, waiting), the same
positions advanced past what is returned (so commit and auto-commit see them), seeks and
pauses respected, control batches and (read_committed) aborted transactions skipped, and
the same errors. pyarrow is imported at the first call, so the consumer needs it only
for this (``pip install kproto[arrow]``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from kproto.consumer.state import ConsumerState
from kproto.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

    from kproto.codec import Columns
    from kproto.structs import TopicPartition

__all__ = ["Columnar"]


class Columnar(ConsumerState):
    """``poll_arrow``: records as one Arrow record batch."""

    async def poll_arrow(self, timeout: float | None = None, *, max_records: int | None = None,
                         include_headers: bool = True) -> pa.RecordBatch:
        """Records from the assigned partitions as one ``pyarrow.RecordBatch``, decoded
        straight into Arrow columns (no Python object per record).

        Like :meth:`poll` in all but the form: it returns as soon as records are buffered,
        or after ``timeout`` seconds (None: wait until there are records) a batch of no
        rows; positions move past the records returned, so ``commit()`` and auto-commit
        count them consumed; paused partitions give nothing; control batches and, under
        ``isolation.level=read_committed``, aborted transactions are skipped.

        The columns are those of Spark's Kafka source, :func:`kproto.arrow.arrow_schema`:
        ``key`` and ``value`` (binary: no deserializer is applied), ``topic``,
        ``partition`` (int32), ``offset`` (int64), ``timestamp`` (UTC, microseconds),
        ``timestampType`` (int32: 0 create time, 1 log append time) and, unless
        ``include_headers`` is false, ``headers`` (``list<struct<key: string, value:
        binary>>``). Rows of one partition are in offset order; one batch may hold several
        partitions. The consumer's metrics count the rows; ``interceptor.classes``'
        ``on_consume`` is not called (it takes and returns records, which this does not make).

        Args:
            timeout: seconds to wait for records (None: until there are some).
            max_records: at most this many rows (default: all records fetched so far,
                which is at most two Fetch responses' worth per partition).
            include_headers: add the ``headers`` column.

        Raises:
            ImportError: pyarrow is not installed (``pip install kproto[arrow]``).
            ConfigError: ``key.deserializer`` or ``value.deserializer`` is set (Arrow
                columns hold the bytes as they are; use :meth:`poll` for objects).
            RuntimeError, KafkaError: as :meth:`poll`.
        """
        arrow = self._arrow_ready()
        fetcher = self._started()
        parts = await self._poll(timeout, sys.maxsize if max_records is None else max_records,
                                 drain=fetcher.drain_columns)
        # Counted as poll's records are (len of a RecordBatch is its rows); interceptors'
        # on_consume takes records, so it sees poll()'s only.
        return self._metrics.polled(_record_batch(arrow, parts, include_headers, self._arrow_built))


    def _poll_arrow_now(self, max_records: int | None, include_headers: bool) -> pa.RecordBatch | None:
        """:meth:`poll_arrow` finishing at once (the sync face's quick path, as
        :meth:`~kproto.consumer.AIOConsumer._poll_now` is poll's): the buffered records, or
        None when the full poll_arrow is due."""
        arrow = self._arrow_ready()
        parts = self._poll_now(sys.maxsize if max_records is None else max_records, columns=True)
        if parts is None:
            return None
        return self._metrics.polled(_record_batch(arrow, parts, include_headers, self._arrow_built))

    def _poll_arrow_abandoned(self, batch: pa.RecordBatch | None) -> None:
        """A sync poll_arrow's rows that its caller never received (Ctrl-C while the quick
        call ran: :meth:`~kproto._loop.Portal.call_plain`'s ``on_abandoned``): each
        partition is sought back to its first row, to be polled again, as poll's are."""
        if batch is None:
            return
        from kproto.structs import TopicPartition

        first: dict[TopicPartition, int] = {}
        for topic, partition, offset in zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                                            batch.column("offset").to_pylist()):
            first.setdefault(TopicPartition(topic, partition), offset)
        for tp, offset in first.items():
            if self._subscriptions.get(tp) is not None:  # still assigned
                self.seek(tp, offset)

    def _arrow_ready(self) -> Any:
        """:mod:`kproto.arrow`, once the consumer is seen to have no deserializers."""
        arrow = _arrow()
        if self.config["key.deserializer"] is not None or self.config["value.deserializer"] is not None:
            raise ConfigError("poll_arrow() returns keys and values as bytes in Arrow columns, and the consumer has "
                              "key.deserializer/value.deserializer set: use poll() for deserialized records, or a "
                              "consumer without deserializers for poll_arrow()")
        return arrow


def _arrow() -> Any:
    """:mod:`kproto.arrow`, which imports pyarrow (ImportError naming the extra without it)."""
    import kproto.arrow

    return kproto.arrow


def _record_batch(arrow: Any, parts: list[tuple[TopicPartition, Columns, int, int]], include_headers: bool,
                  built: dict[TopicPartition, tuple[Columns, bool, pa.RecordBatch]]) -> pa.RecordBatch:
    """One record batch of ``parts`` (each a partition's columns, the first of them to take and
    how many: a slice, no copy). Columns taken part way (``max_records`` cut them) come back
    in later polls: their Arrow batch, kept in ``built`` until its last record is taken, is
    made once, so that taking them a few at a time stays linear."""
    import pyarrow as pa  # present: kproto.arrow imported it

    schema = arrow.arrow_schema(include_headers)
    batches = []
    for tp, cols, start, taken in parts:
        kept = built.pop(tp, None)
        if kept is not None and kept[0] is cols and kept[1] == include_headers:
            batch = kept[2]
        else:
            batch = arrow.record_batch(cols, tp.topic, tp.partition, schema)
        if start + taken < cols.count:
            built[tp] = (cols, include_headers, batch)
        batches.append(batch if taken == cols.count else batch.slice(start, taken))
    if len(batches) == 1:
        return batches[0]
    if not batches:
        return _empty(pa, schema)
    return pa.concat_batches(batches)


_EMPTY: dict[Any, pa.RecordBatch] = {}


def _empty(pa: Any, schema: pa.Schema) -> pa.RecordBatch:
    """A batch of no rows of ``schema``, made once (batches are immutable): a poll that times
    out costs no ``from_pylist`` (which reads the environment), about half an empty poll."""
    batch = _EMPTY.get(schema)
    if batch is None:
        batch = _EMPTY[schema] = pa.RecordBatch.from_pylist([], schema=schema)
    return batch
