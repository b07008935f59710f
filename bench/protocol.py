"""Benchmark: encode + decode of hot protocol messages, kproto vs kafka-python's protocol classes.

Messages (the shapes a producer and a consumer send all day):

* Produce request v9: one topic, 3 partitions, ~16 KiB of record bytes each, with header
  and size prefix, encoded by the client and decoded by the broker;
* Fetch response v12: the same shape, encoded by the broker and decoded by the client.

Records are opaque bytes to the protocol layer in both libraries, so this measures the
protocol codec, not the record codec. Prints the median of several runs (each the mean of
many iterations) in microseconds per encode+decode, and the ratio kafka-python / kproto.

Run: ``python bench/protocol.py`` (``KPROTO_NO_EXTENSIONS=1`` makes no difference here:
the protocol layer is pure Python either way, only varints come from the codec).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from kproto.protocol import ApiKey, decode_request, decode_response, encode_request, encode_response
from kproto.protocol import messages as m

RECORDS = [os.urandom(16 * 1024) for _ in range(3)]
TOPIC = "bench-topic"


def kproto_produce() -> Callable[[], object]:
    req = m.ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[m.ProduceRequest.TopicProduceData(
        name=TOPIC, partition_data=[m.ProduceRequest.PartitionProduceData(index=i, records=r)
                                    for i, r in enumerate(RECORDS)])])

    def run() -> object:
        wire = encode_request(ApiKey.PRODUCE, 9, 42, "bench", req)
        return decode_request(wire[4:])

    return run


def kproto_fetch() -> Callable[[], object]:
    R = m.FetchResponse
    resp = R(session_id=1, responses=[R.FetchableTopicResponse(topic=TOPIC, partitions=[
        R.PartitionData(partition_index=i, high_watermark=1000, last_stable_offset=1000, log_start_offset=0,
                        records=r) for i, r in enumerate(RECORDS)])])

    def run() -> object:
        wire = encode_response(ApiKey.FETCH, 12, 42, resp)
        return decode_response(ApiKey.FETCH, 12, wire[4:])

    return run


def kafka_python_produce() -> Callable[[], object]:
    from kafka.protocol.producer import ProduceRequest as P

    def run() -> object:
        req = P[9](transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[P.TopicProduceData(
            name=TOPIC, partition_data=[P.TopicProduceData.PartitionProduceData(index=i, records=r)
                                        for i, r in enumerate(RECORDS)])])
        req.with_header(correlation_id=42, client_id="bench")
        wire = bytes(req.encode(header=True, framed=True))
        return P.decode(wire, version=9, header=True, framed=True)

    return run


def kafka_python_fetch() -> Callable[[], object]:
    from kafka.protocol.consumer import FetchResponse as F

    resp = F[12](throttle_time_ms=0, error_code=0, session_id=1, responses=[F.FetchableTopicResponse(
        topic=TOPIC, partitions=[F.FetchableTopicResponse.PartitionData(
            partition_index=i, error_code=0, high_watermark=1000, last_stable_offset=1000, log_start_offset=0,
            aborted_transactions=None, preferred_read_replica=-1, records=r) for i, r in enumerate(RECORDS)])])

    def run() -> object:
        resp.with_header(correlation_id=42)
        wire = bytes(resp.encode(header=True, framed=True))
        return F.decode(wire, version=12, header=True, framed=True)

    return run


def kproto_produce_with_build() -> Callable[[], object]:
    """Like kproto_produce, but building the request object each time (as kafka-python's does)."""

    def run() -> object:
        req = m.ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[m.ProduceRequest.TopicProduceData(
            name=TOPIC, partition_data=[m.ProduceRequest.PartitionProduceData(index=i, records=r)
                                        for i, r in enumerate(RECORDS)])])
        wire = encode_request(ApiKey.PRODUCE, 9, 42, "bench", req)
        return decode_request(wire[4:])

    return run


def measure(fn: Callable[[], object], runs: int, min_time: float) -> float:
    """Median over ``runs`` of the mean time per call (µs), each run lasting >= ``min_time`` s."""
    fn()  # warm up: compiles the codecs
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t0 >= min_time / 4:
            break
        n *= 2
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(n * 4):
            fn()
        samples.append((time.perf_counter() - t0) / (n * 4) * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per run")
    args = parser.parse_args()

    from kproto import codec_backend

    print(f"kproto codec backend: {codec_backend()}  (median of {args.runs} runs, µs per encode+decode)")
    print(f"{'message':<44}{'kproto':>10}{'kafka-python':>14}{'ratio':>8}")
    rows = [
        ("Produce request v9 (3 x 16 KiB)", kproto_produce, kafka_python_produce),
        ("Produce request v9, object built per call", kproto_produce_with_build, kafka_python_produce),
        ("Fetch response v12 (3 x 16 KiB)", kproto_fetch, kafka_python_fetch),
    ]
    for label, ours, theirs in rows:
        a = measure(ours(), args.runs, args.min_time)
        try:
            b = measure(theirs(), args.runs, args.min_time)
        except ImportError:
            print(f"{label:<44}{a:>10.1f}{'n/a':>14}")
            continue
        print(f"{label:<44}{a:>10.1f}{b:>14.1f}{b / a:>7.1f}x")


if __name__ == "__main__":
    main()
