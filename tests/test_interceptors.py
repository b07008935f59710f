"""kproto.interceptors against a real minibroker: interceptor.classes on the producer and
the consumer (order, what they may change, errors logged and ignored as Java's, close),
and the OpenTelemetry example's spans linked across produce -> consume (issue 16,
"Observability": hooks where OpenTelemetry instrumentation can attach, with a tested
example)."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from pathlib import Path

import pytest

from kproto import Consumer, Producer, TopicPartition
from kproto.aio import AIOConsumer, AIOProducer
from kproto.errors import ConfigError, InvalidTopicError
from kproto.interceptors import ConsumerInterceptor, ProducerInterceptor
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)

ROOT = Path(__file__).resolve().parents[1]


class Tagging(ProducerInterceptor):
    """Adds a header naming itself; records what it saw."""

    def __init__(self, name: str = "tag", calls: list | None = None) -> None:
        self.name = name
        self.calls = [] if calls is None else calls

    def on_send(self, record):
        self.calls.append((self.name, "send", tuple(record.headers or ())))
        return record._replace(headers=[*(record.headers or ()), ("seen-by", self.name.encode())])

    def on_acknowledgement(self, metadata, exception):
        self.calls.append((self.name, "ack", metadata, exception))

    def close(self):
        self.calls.append((self.name, "close"))


class Failing(ProducerInterceptor, ConsumerInterceptor):
    """Raises from every hook."""

    def on_send(self, record):
        raise RuntimeError("on_send broke")

    def on_acknowledgement(self, metadata, exception):
        raise RuntimeError("on_acknowledgement broke")

    def on_consume(self, records):
        raise RuntimeError("on_consume broke")

    def on_commit(self, offsets):
        raise RuntimeError("on_commit broke")

    def close(self):
        raise RuntimeError("close broke")


class Counting:
    """A producer interceptor made from an import path (no base class: the methods count)."""

    made: list = []

    def __init__(self) -> None:
        Counting.made.append(self)
        self.config = None
        self.sent = 0

    def configure(self, config):
        self.config = config

    def on_send(self, record):
        self.sent += 1
        return record

    def on_acknowledgement(self, metadata, exception):
        pass


class Keeping(ConsumerInterceptor):
    """Keeps the records whose value passes ``keep``; records what it saw."""

    def __init__(self, name: str, calls: list, keep=lambda value: True) -> None:
        self.name, self.calls, self.keep = name, calls, keep

    def on_consume(self, records):
        self.calls.append((self.name, "consume", [r.value for r in records]))
        return [r for r in records if self.keep(r.value)]

    def on_commit(self, offsets):
        self.calls.append((self.name, "commit", dict(offsets)))

    def close(self):
        self.calls.append((self.name, "close"))


def _consume(bootstrap: str, topic: str, count: int, **settings) -> list:
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **settings) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        out: list = []
        for _ in range(50):
            out += consumer.poll(0.2)
            if len(out) >= count:
                break
        return out


def test_producer_interceptors_run_in_order_and_change_what_is_sent(broker):
    """issue 16, interceptors: on_send of each interceptor gets what the one before returned;
    on_acknowledgement gets each record's metadata; close() runs at the producer's close."""
    calls: list = []
    delivered: list = []
    with Producer(bootstrap_servers=broker.bootstrap_servers,
                  interceptor_classes=[Tagging("first", calls), Tagging("second", calls)]) as producer:
        futures = [producer.send("icpt-order", b"v%d" % i, on_delivery=lambda e, m: delivered.append((e, m)))
                   for i in range(3)]
        offsets = [f.result(10).offset for f in futures]
    sends = [c for c in calls if c[1] == "send"]
    assert sends[:2] == [("first", "send", ()), ("second", "send", (("seen-by", b"first"),))]
    acks = [c for c in calls if c[1] == "ack"]
    assert [(name, m.offset, e) for name, _, m, e in acks] == [
        (name, o, None) for o in offsets for name in ("first", "second")]
    assert [m.offset for e, m in delivered] == offsets and all(e is None for e, m in delivered)
    assert calls[-2:] == [("first", "close"), ("second", "close")]
    records = _consume(broker.bootstrap_servers, "icpt-order", 3)
    assert [r.headers for r in records] == [(("seen-by", b"first"), ("seen-by", b"second"))] * 3


def test_a_failing_producer_interceptor_is_logged_and_ignored(broker, caplog):
    """issue 16, interceptors' errors: Java logs an interceptor's exception and goes on with
    the record the failing interceptor was given; the delivery callback still runs."""
    calls: list = []
    delivered: list = []
    with caplog.at_level(logging.WARNING, logger="kproto.interceptors"):
        with Producer(bootstrap_servers=broker.bootstrap_servers,
                      interceptor_classes=[Tagging("first", calls), Failing(), Tagging("third", calls)]) as producer:
            producer.send("icpt-fail", b"x", on_delivery=lambda e, m: delivered.append(e)).result(10)
    assert ("third", "send", (("seen-by", b"first"),)) in calls
    assert delivered == [None]
    text = caplog.text
    assert "on_send failed" in text and "on_acknowledgement failed" in text and "close failed" in text
    assert _consume(broker.bootstrap_servers, "icpt-fail", 1)[0].headers == (
        ("seen-by", b"first"), ("seen-by", b"third"))


def test_a_send_refused_at_once_is_acknowledged_with_its_error(broker):
    """issue 16, interceptors: Java's onSendError: a send that raises before it is queued
    calls on_acknowledgement with the error (and the topic)."""
    calls: list = []
    with Producer(bootstrap_servers=broker.bootstrap_servers, interceptor_classes=[Tagging("t", calls)]) as producer:
        with pytest.raises(InvalidTopicError):
            producer.send("no/slash", b"x")
    (_, _, metadata, error), = [c for c in calls if c[1] == "ack"]
    assert isinstance(error, InvalidTopicError) and metadata.topic == "no/slash" and metadata.offset == -1


def test_interceptors_by_import_path_are_made_and_configured(broker):
    """issue 16, interceptor.classes: an import path (a comma-separated str, as Java's
    property) names a class, made once per client and configured with its settings."""
    Counting.made.clear()
    with Producer(bootstrap_servers=broker.bootstrap_servers, client_id="pathy",
                  interceptor_classes="tests.test_interceptors.Counting, tests.test_interceptors.Counting") as producer:
        producer.send("icpt-path", b"x").result(10)
    assert len(Counting.made) == 2 and [c.sent for c in Counting.made] == [1, 1]
    assert Counting.made[0].config["client.id"] == "pathy"


@pytest.mark.parametrize(("kind", "classes", "words"), [
    ("producer", lambda: "no.such.module.Interceptor", "cannot import"),
    ("producer", lambda: [Keeping("k", [])], "is not a ProducerInterceptor"),
    ("consumer", lambda: [Tagging], "is not a ConsumerInterceptor"),
])
def test_interceptor_classes_that_cannot_serve_are_config_errors(broker, kind, classes, words):
    """issue 16, config validation of interceptor.classes: an import path that does not
    import, or an object without the methods of the client's kind of interceptor."""
    client = Producer if kind == "producer" else Consumer
    with pytest.raises(ConfigError, match=words):
        client(bootstrap_servers=broker.bootstrap_servers, interceptor_classes=classes())


def test_interceptors_are_not_an_admin_setting(broker):
    from kproto import AdminClient
    with pytest.raises(ConfigError, match="producer"):
        AdminClient(bootstrap_servers=broker.bootstrap_servers, interceptor_classes=[Tagging()])


def test_consumer_interceptors_filter_in_order_see_commits_and_close(broker):
    """issue 16, interceptors: on_consume in order, each getting what the one before
    returned, and poll returns the last one's; on_commit after a commit; close at close."""
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for i in range(6):
            producer.send("icpt-consume", b"%d" % i)
    calls: list = []
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="icpt", auto_offset_reset="earliest",
                  interceptor_classes=[Keeping("even", calls, lambda v: int(v) % 2 == 0),
                                       Keeping("all", calls)]) as consumer:
        consumer.subscribe(["icpt-consume"])
        got: list = []
        for _ in range(50):
            got += consumer.poll(0.2)
            if consumer.position(TopicPartition("icpt-consume", 0)) >= 6:
                break
        consumer.commit()
    assert [r.value for r in got] == [b"0", b"2", b"4"]
    seen_even = [v for name, what, *rest in calls if name == "even" and what == "consume" for v in rest[0]]
    seen_all = [v for name, what, *rest in calls if name == "all" and what == "consume" for v in rest[0]]
    assert seen_even == [b"%d" % i for i in range(6)] and seen_all == [b"0", b"2", b"4"]
    commits = [rest[0] for name, what, *rest in calls if what == "commit" and name == "even"]
    assert commits and commits[-1][TopicPartition("icpt-consume", 0)].offset == 6
    assert calls[-2:] == [("even", "close"), ("all", "close")]


def test_a_failing_consumer_interceptor_is_logged_and_its_records_go_on(broker, caplog):
    """issue 16, interceptors' errors on the consumer side: logged, ignored."""
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send("icpt-consume-fail", b"x")
    with caplog.at_level(logging.WARNING, logger="kproto.interceptors"):
        with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="icpt-fail", auto_offset_reset="earliest",
                      interceptor_classes=[Failing]) as consumer:
            consumer.subscribe(["icpt-consume-fail"])
            got: list = []
            for _ in range(50):
                got += consumer.poll(0.2)
                if got:
                    break
            consumer.commit()
    assert [r.value for r in got] == [b"x"]
    assert "on_consume failed" in caplog.text and "on_commit failed" in caplog.text


def test_asyncio_clients_call_interceptors_too_even_for_a_send_that_waits_for_metadata(broker):
    """issue 16, interceptors on AIOProducer / AIOConsumer: the first send of a new topic
    waits for metadata (the asyncio producer's queue), and is acknowledged all the same."""
    calls: list = []

    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers,
                               interceptor_classes=[Tagging("aio", calls)]) as producer:
            metadata = await producer.send("icpt-aio-new", b"x")
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               interceptor_classes=[Keeping("aio", calls)]) as consumer:
            consumer.assign([TopicPartition("icpt-aio-new", 0)])
            records = []
            for _ in range(50):
                records += await consumer.poll(0.2)
                if records:
                    break
        return metadata, records

    metadata, records = asyncio.run(main())
    assert [c[2].offset for c in calls if c[1] == "ack"] == [metadata.offset]
    assert records[0].headers == (("seen-by", b"aio"),)
    assert ("aio", "consume", [b"x"]) in calls


# -- the OpenTelemetry example (docs/examples/opentelemetry_tracing.py) -----------------------

def _example():
    spec = importlib.util.spec_from_file_location("opentelemetry_tracing",
                                                  ROOT / "docs" / "examples" / "opentelemetry_tracing.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_opentelemetry_example_links_consumer_spans_to_producer_spans(broker):
    """issue 16, the tested OpenTelemetry example: a PRODUCER span per record sent, its
    context carried in a W3C traceparent header, and a CONSUMER span per record polled whose
    parent is that producer span (same trace), with opentelemetry-sdk's in-memory exporter."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    example = _example()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("request") as outer:  # the producer's span joins the caller's trace
        with Producer(bootstrap_servers=broker.bootstrap_servers,
                      interceptor_classes=[example.TracingProducerInterceptor(provider)]) as producer:
            for i in range(3):
                producer.send("otel-traced", b"%d" % i, headers=[("app", b"kept")]).result(10)
    records = _consume(broker.bootstrap_servers, "otel-traced", 3,
                       interceptor_classes=[example.TracingConsumerInterceptor(provider)])
    assert len(records) == 3
    spans = exporter.get_finished_spans()
    produced = [s for s in spans if s.kind is trace.SpanKind.PRODUCER]
    consumed = [s for s in spans if s.kind is trace.SpanKind.CONSUMER]
    assert [s.name for s in produced] == ["otel-traced publish"] * 3
    assert [s.name for s in consumed] == ["otel-traced process"] * 3
    for p in produced:
        assert p.parent.span_id == outer.get_span_context().span_id
    for record, p, c in zip(records, produced, consumed):
        headers = dict(record.headers)
        assert headers["app"] == b"kept"
        trace_id, span_id = headers["traceparent"].decode().split("-")[1:3]
        assert (int(trace_id, 16), int(span_id, 16)) == (p.context.trace_id, p.context.span_id)
        assert c.parent.span_id == p.context.span_id and c.context.trace_id == p.context.trace_id
        assert c.attributes["messaging.kafka.offset"] == record.offset


class OnlySend(ProducerInterceptor):
    """Overrides on_send only: the producer watches no acknowledgement for it."""

    def on_send(self, record):
        return record._replace(value=record.value.upper())


def test_an_interceptor_of_on_send_only_keeps_delivery_callbacks_and_errors(broker):
    """issue 16, interceptors' cost: without an on_acknowledgement of its own, an interceptor
    costs its on_send only, and sends still deliver their callbacks and raise their errors."""
    delivered: list = []
    with Producer(bootstrap_servers=broker.bootstrap_servers, interceptor_classes=[OnlySend]) as producer:
        future = producer.send("icpt-send-only", b"abc", on_delivery=lambda e, m: delivered.append((e, m.offset)))
        offset = future.result(10).offset
        with pytest.raises(InvalidTopicError):
            producer.send("no/slash", b"x")
    assert delivered == [(None, offset)]
    assert [r.value for r in _consume(broker.bootstrap_servers, "icpt-send-only", 1)] == [b"ABC"]
