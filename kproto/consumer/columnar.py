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
columns), so ``topic`` and ``partition`` are columns like the others.

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
        arrow = _arrow()
        if self.config["key.deserializer"] is not None or self.config["value.deserializer"] is not None:
            raise ConfigError("poll_arrow() returns keys and values as bytes in Arrow columns, and the consumer has "
                              "key.deserializer/value.deserializer set: use poll() for deserialized records, or a "
                              "consumer without deserializers for poll_arrow()")
        fetcher = self._started()
        parts = await self._poll(timeout, sys.maxsize if max_records is None else max_records,
                                 drain=fetcher.drain_columns)
        # Counted as poll's records are (len of a RecordBatch is its rows); interceptors'
        # on_consume takes records, so it sees poll()'s only.
        return self._metrics.polled(_record_batch(arrow, parts, include_headers))


def _arrow() -> Any:
    """:mod:`kproto.arrow`, which imports pyarrow (ImportError naming the extra without it)."""
    import kproto.arrow

    return kproto.arrow


def _record_batch(arrow: Any, parts: list[tuple[TopicPartition, Columns, int]], include_headers: bool
                  ) -> pa.RecordBatch:
    """One record batch of ``parts`` (each a partition's columns and how many of them to take)."""
    import pyarrow as pa  # present: kproto.arrow imported it

    schema = arrow.arrow_schema(include_headers)
    batches = []
    for tp, cols, taken in parts:
        batch = arrow.record_batch(cols, tp.topic, tp.partition, schema)
        batches.append(batch if taken == cols.count else batch.slice(0, taken))
    if len(batches) == 1:
        return batches[0]
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=schema)
    return pa.concat_batches(batches)
