"""Interceptors (``interceptor.classes``): Java's ``ProducerInterceptor`` and
``ConsumerInterceptor``, where tracing (OpenTelemetry) and auditing attach.

A producer calls each interceptor's :meth:`ProducerInterceptor.on_send` with the record
before it is serialized and partitioned (what it returns goes on), and
:meth:`~ProducerInterceptor.on_acknowledgement` when the record is settled, on the
producer's loop (keep it quick, as Java says of its I/O thread). A consumer calls
:meth:`ConsumerInterceptor.on_consume` with the records a poll is about to return (what it
returns is returned) and :meth:`~ConsumerInterceptor.on_commit` after offsets are
committed. Both call ``close()`` when the client closes.

Facts (Java's ``ProducerInterceptors`` / ``ConsumerInterceptors``): interceptors run in the
configured order, each getting what the one before returned; an exception from an
interceptor is logged and ignored (``on_send``'s next interceptor gets the record the
failing one was given); a send that fails before it is queued is acknowledged with the
error at once (``onSendError``). ``configure(config)`` is called when defined (Java's
``Configurable``) with the client's settings.

Cost: a client without interceptors calls nothing of this module per record or per poll
(the producer's ``send`` is the codec's own unless interceptors are set).
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from kproto.errors import ConfigError

__all__ = ["ConsumerInterceptor", "ConsumerInterceptors", "ProducerInterceptor", "ProducerInterceptors",
           "ProducerRecord", "load"]

log = logging.getLogger("kproto.interceptors")


class ProducerRecord(NamedTuple):
    """A record as ``send`` was given it (Java's ``ProducerRecord``): what ``on_send``
    receives and returns (``record._replace(headers=...)`` makes a changed one)."""

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    timestamp_ms: int | None = None
    headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None = None


class ProducerInterceptor:
    """Base of producer interceptors (subclassing it is optional: the methods are what
    count). Every method's default does nothing."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        """Called by ``send`` before the record is serialized; returns the record to send."""
        return record

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        """Called when the record is settled: ``metadata`` is its
        :class:`~kproto.producer.RecordMetadata` (on failure: its topic and partition, -1
        where unknown, offset -1) and ``exception`` None on success."""

    def close(self) -> None:
        """Called when the producer closes."""


class ConsumerInterceptor:
    """Base of consumer interceptors (optional, as :class:`ProducerInterceptor`)."""

    def on_consume(self, records: list[Any]) -> list[Any]:
        """Called with the records a poll returns (a list of
        :class:`~kproto.consumer.ConsumerRecord`); returns the records to return."""
        return records

    def on_commit(self, offsets: Mapping[Any, Any]) -> None:
        """Called after ``offsets`` (``{TopicPartition: OffsetAndMetadata}``) were committed."""

    def close(self) -> None:
        """Called when the consumer closes."""


def _instance(item: Any, config: Mapping[str, Any]) -> Any:
    if isinstance(item, str):
        module, _, name = item.rpartition(".")
        try:
            item = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"interceptor.classes: cannot import {item!r}: {exc}") from None
    if isinstance(item, type):
        item = item()
    configure = getattr(item, "configure", None)
    if callable(configure):
        configure(dict(config))
    return item


def load(config: Mapping[str, Any], kind: type) -> list[Any]:
    """The interceptors ``interceptor.classes`` names, made and configured, in order.

    Raises:
        ConfigError: an import path that does not import, or an object without the
            methods of ``kind`` (:class:`ProducerInterceptor` or :class:`ConsumerInterceptor`).
    """
    out = [_instance(item, config) for item in config["interceptor.classes"]]
    needs = ("on_send", "on_acknowledgement") if kind is ProducerInterceptor else ("on_consume", "on_commit")
    for item in out:
        if not all(callable(getattr(item, name, None)) for name in needs):
            raise ConfigError(f"interceptor.classes: {item!r} is not a {kind.__name__} (needs {' and '.join(needs)})")
    return out


def _close_all(interceptors: Iterable[Any]) -> None:
    for interceptor in interceptors:
        close = getattr(interceptor, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                log.warning("interceptor %r: close failed", interceptor, exc_info=True)


class ProducerInterceptors:
    """A producer's interceptors, in order (Java's ``ProducerInterceptors``)."""

    def __init__(self, interceptors: Sequence[Any]) -> None:
        self.interceptors = list(interceptors)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        for interceptor in self.interceptors:
            try:
                record = interceptor.on_send(record)
            except Exception:
                log.warning("interceptor %r: on_send failed (the record goes on as it was)", interceptor,
                            exc_info=True)
        return record

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        for interceptor in self.interceptors:
            try:
                interceptor.on_acknowledgement(metadata, exception)
            except Exception:
                log.warning("interceptor %r: on_acknowledgement failed", interceptor, exc_info=True)

    def wrap(self, send: Callable[..., Any], metadata_type: Callable[..., Any]) -> Callable[..., Any]:
        """``send`` (the codec's per-record path) with the interceptors around it;
        ``metadata_type(topic, partition, offset, timestamp)`` makes a failed record's metadata.

        Interceptors that do not override :meth:`ProducerInterceptor.on_acknowledgement`
        cost only their ``on_send`` calls. Acknowledgements are watched per batch, not per record: the first record of a batch
        registers one callback on its future (records of a batch settle together, see
        :mod:`kproto.producer.futures`), which acknowledges every record of the batch sent
        through here, in order, before their own delivery callbacks run (as Java's
        ``InterceptorCallback`` does).
        """
        batches: dict[Any, list[Any]] = {}  # a batch's result -> its records' futures, not settled yet
        lock = threading.Lock()  # sends (any thread) add to a batch's list, its settling takes it
        on_send, on_acknowledgement = self.on_send, self.on_acknowledgement

        def settled(future: Any) -> None:
            batch = future._batch  # settled: its outcome is read without the futures' locks
            with lock:
                futures = batches.pop(batch, ())
            error = batch.error
            if error is None:
                for f in futures:
                    on_acknowledgement(f._result, None)
            else:
                failed = metadata_type(batch.topic, batch.partition, -1, -1)
                for _ in futures:
                    on_acknowledgement(failed, error)

        def appended(future: Any, on_delivery: Any) -> None:
            batch = future._batch
            with lock:
                futures = batches.get(batch)
                if futures is None:
                    futures = batches[batch] = []
                    first = True
                else:
                    first = False
                futures.append(future)
            if first:
                future.add_done_callback(settled)  # at once if the batch is settled already
            if on_delivery is not None:
                future.add_done_callback(
                    lambda f: on_delivery(f.exception(), f.result() if f.exception() is None else None))

        def intercepted(topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                        timestamp_ms: int | None = None, headers: Any = None, on_delivery: Any = None) -> Any:
            record = on_send(ProducerRecord(topic, value, key, partition, timestamp_ms, headers))
            try:
                result = send(*record)
            except Exception as exc:  # Java's onSendError: refused before it was queued
                on_acknowledgement(metadata_type(record.topic, -1 if record.partition is None else record.partition,
                                                 -1, -1), exc)
                raise
            waiting = getattr(result, "appended", None)  # an asyncio send waiting for metadata or memory
            if waiting is None:
                appended(result, on_delivery)
            else:
                def when_appended(f: Any) -> None:
                    if f.cancelled():
                        return
                    error = f.exception()
                    if error is None:
                        appended(f.result(), on_delivery)
                    else:
                        failed = metadata_type(record.topic, -1 if record.partition is None else record.partition,
                                               -1, -1)
                        on_acknowledgement(failed, error)
                        if on_delivery is not None:
                            on_delivery(error, None)
                waiting.add_done_callback(when_appended)
            return result

        def sent_only(topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                      timestamp_ms: int | None = None, headers: Any = None, on_delivery: Any = None) -> Any:
            return send(*on_send(ProducerRecord(topic, value, key, partition, timestamp_ms, headers)), on_delivery)

        # Interceptors that all keep ProducerInterceptor's on_acknowledgement (it does nothing)
        # are not told of acknowledgements: nothing is watched for them.
        quiet = all(getattr(type(i), "on_acknowledgement", None) is ProducerInterceptor.on_acknowledgement
                    for i in self.interceptors)
        return sent_only if quiet else intercepted

    def close(self) -> None:
        _close_all(self.interceptors)


class ConsumerInterceptors:
    """A consumer's interceptors, in order (Java's ``ConsumerInterceptors``)."""

    def __init__(self, interceptors: Sequence[Any]) -> None:
        self.interceptors = list(interceptors)

    def on_consume(self, records: list[Any]) -> list[Any]:
        for interceptor in self.interceptors:
            try:
                records = interceptor.on_consume(records)
            except Exception:
                log.warning("interceptor %r: on_consume failed", interceptor, exc_info=True)
        return records

    def on_commit(self, offsets: Mapping[Any, Any]) -> None:
        for interceptor in self.interceptors:
            try:
                interceptor.on_commit(offsets)
            except Exception:
                log.warning("interceptor %r: on_commit failed", interceptor, exc_info=True)

    def close(self) -> None:
        _close_all(self.interceptors)
