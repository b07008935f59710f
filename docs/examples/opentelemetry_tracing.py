"""Tracing produce -> consume with OpenTelemetry through kproto's interceptors.

The producer interceptor starts a PRODUCER span per record sent and writes its context
into the record's ``traceparent`` header (W3C Trace Context); the consumer interceptor
reads that header from each record a poll returns and starts a CONSUMER span whose parent
is the producer's span, so one trace joins the producing and the consuming application.

Needs ``opentelemetry-api`` and ``opentelemetry-sdk`` (kproto itself does not). Run it
as a script to see the spans of three records go through a minibroker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from kproto.consumer import ConsumerRecord
from kproto.interceptors import ConsumerInterceptor, ProducerInterceptor, ProducerRecord

_PROPAGATOR = TraceContextTextMapPropagator()  # the W3C traceparent / tracestate headers


def _header_list(headers: Sequence[tuple[str, Any]] | Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    if headers is None:
        return []
    return list(headers.items()) if isinstance(headers, Mapping) else list(headers)


class TracingProducerInterceptor(ProducerInterceptor):
    """A ``{topic} publish`` PRODUCER span per record, its context in the record's headers."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer("kproto.examples.opentelemetry", tracer_provider=tracer_provider)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        span = self.tracer.start_span(f"{record.topic} publish", kind=trace.SpanKind.PRODUCER, attributes={
            "messaging.system": "kafka", "messaging.operation.type": "publish",
            "messaging.destination.name": record.topic})
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        span.end()  # the span is the hand-over to the producer; the broker's answer comes later
        headers = [(k, v) for k, v in _header_list(record.headers) if k not in carrier]
        headers += [(k, v.encode()) for k, v in carrier.items()]
        return record._replace(headers=headers)


class TracingConsumerInterceptor(ConsumerInterceptor):
    """A ``{topic} process`` CONSUMER span per record polled, child of the span whose
    context its ``traceparent`` header carries (a new trace for a record without one)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer("kproto.examples.opentelemetry", tracer_provider=tracer_provider)

    def on_consume(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        for record in records:
            carrier = {k: v.decode() for k, v in record.headers if k in _PROPAGATOR.fields and v is not None}
            parent = _PROPAGATOR.extract(carrier)
            span = self.tracer.start_span(f"{record.topic} process", context=parent, kind=trace.SpanKind.CONSUMER,
                                          attributes={"messaging.system": "kafka",
                                                      "messaging.operation.type": "process",
                                                      "messaging.destination.name": record.topic,
                                                      "messaging.destination.partition.id": str(record.partition),
                                                      "messaging.kafka.offset": record.offset})
            span.end()
        return records


def main() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from kproto import Consumer, Producer, TopicPartition
    from minibroker import MiniBroker

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with MiniBroker() as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers,
                      interceptor_classes=[TracingProducerInterceptor(provider)]) as producer:
            for i in range(3):
                producer.send("traced", f"event {i}".encode())
        with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                      interceptor_classes=[TracingConsumerInterceptor(provider)]) as consumer:
            consumer.assign([TopicPartition("traced", 0)])
            got = 0
            while got < 3:
                got += len(consumer.poll(5))
    for span in exporter.get_finished_spans():
        parent = f" (child of {span.parent.span_id:016x})" if span.parent else ""
        print(f"{span.name:16} {span.kind.name:8} trace {span.context.trace_id:032x} span "
              f"{span.context.span_id:016x}{parent}")


if __name__ == "__main__":
    main()
