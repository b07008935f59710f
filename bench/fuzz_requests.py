"""Request-path fuzz: whatever bytes arrive on its sockets, minibroker never crashes, never
hangs, never answers with a malformed frame, and its memory stays bounded.

Invariant checked, against a real ``python -m minibroker`` process over loopback:

- crashes = 0: the process is alive after every frame batch;
- hangs = 0: after every ``--check-every`` frames a health check (ApiVersions, then
  Metadata, on a connection of its own) is answered within ``--check-timeout`` seconds;
- malformed = 0: every response frame decodes strictly (no trailing bytes) as the
  response of the API key and version in the header of a frame we sent with that
  correlation id (ApiVersions may answer in v0, KIP-511), and no response carries a
  correlation id we never sent on that connection;
- memory: the broker's peak RSS stays under ``--max-rss-mb``.

Frames: valid request frames of every API key and version the broker advertises, built
with :mod:`kproto.protocol` (each request both with its defaults and with every array
holding one populated element, records a valid batch), then mutated: bit flips,
interesting values (0, -1, 0x7f, 0x80...) over random 1, 2 or 4 bytes, truncation,
splices of two frames, random bytes, or a size prefix changed (such a frame is the last
on its connection, as the stream is no longer framed as we know it). Unmutated frames
are mixed in (``--valid``), so the broker also holds real state (topics, groups).
Several connections send in turn and reconnect when the broker closes one.

Printed: frames sent, bytes, answers, connections closed by the broker, connections we
dropped because they stalled (a long poll or a join the fuzz asked for, holding its
connection), health checks and their slowest answer, RSS at start and peak, crashes,
malformed answers, and frames per second. Exit status 1 when an invariant broke.

Usage::

    python bench/fuzz_requests.py [--frames 1000000] [--seconds 3600] [--connections 6]
"""

from __future__ import annotations

import argparse
import os
import random
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kproto.errors import ProtocolError
from kproto.protocol import (
    ApiKey,
    EncodeError,
    FrameReader,
    decode_response,
    encode_request,
    request_class,
)
from kproto.protocol.messages import APIS, ApiVersionsRequest, MetadataRequest
from kproto.records import BatchBuilder

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support import process  # noqa: E402  (python -m minibroker, as the tests run it)

INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x01", b"\x00\x00", b"\xff\xff", b"\x7f\xff", b"\x80\x00",
               b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x01"]
SHORT_WAITS = {"max_wait_ms", "timeout_ms", "session_timeout_ms", "rebalance_timeout_ms", "timeout",
               "transaction_timeout_ms"}


# -- valid frames ----------------------------------------------------------------------------

def _value(field, version, top, rng_name):
    t = field.type
    if t.startswith("[]"):
        inner = t[2:]
        if inner[:1].isupper():
            return [_struct(getattr(top, inner), field.fields, version, top, rng_name)]
        return [_primitive(inner, field.name, rng_name)]
    if t[:1].isupper():
        return _struct(getattr(top, t), field.fields, version, top, rng_name)
    return _primitive(t, field.name, rng_name)


def _primitive(t, name, rng_name):
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        if name in SHORT_WAITS:
            return 100
        if name in ("acks",):
            return -1
        if name in ("min_bytes", "num_partitions", "replication_factor", "count", "max_num_offsets"):
            return 1
        if name in ("max_bytes", "partition_max_bytes"):
            return 1 << 20
        if name in ("producer_id", "producer_epoch", "generation_id", "timestamp"):
            return -1
        return 0
    if t == "string":
        if "topic" in name or name == "name":
            return f"fuzz-{rng_name}"
        if "group" in name:
            return "fuzz-group"
        if name in ("member_id", "group_instance_id"):
            return ""
        if name == "protocol_type":
            return "consumer"
        return "x"
    if t == "bytes":
        return b"\x00\x01"
    if t == "records":
        builder = BatchBuilder()
        builder.append(1_000, b"k", b"fuzz")
        return builder.build()
    if t == "bool":
        return False
    if t == "uuid":
        return uuid.UUID(int=0)
    if t == "float64":
        return 0.0
    return None


def _struct(cls, fields, version, top, rng_name):
    kwargs = {f.name: _value(f, version, top, rng_name)
              for f in fields if version in f.versions and f.tag is None}
    return cls(**kwargs)


def valid_frames(supported):
    """Encoded request frames (size prefix included) for every advertised (key, version)."""
    frames = []
    for key, lo, hi in supported:
        cls = request_class(key)
        spec = APIS[key].request
        for version in range(lo, hi + 1):
            for body in (cls(), _struct(cls, spec.fields, version, cls, "t")):
                try:
                    frames.append(encode_request(key, version, 0, "fuzz", body))
                except (EncodeError, ValueError, TypeError):
                    pass
    return frames


# -- mutation --------------------------------------------------------------------------------

def _prefix(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def mutate(rng: random.Random, frames: list[bytes], frame: bytes) -> tuple[bytes, bool]:
    """A mutated copy of ``frame``; the flag says its size prefix no longer frames it."""
    body = bytearray(frame[4:])
    kind = rng.randrange(6) if rng.random() > 0.05 else 6  # a lying prefix ends its connection: rarer
    if kind == 0:  # bit flips
        for _ in range(rng.randrange(1, 9)):
            i = rng.randrange(len(body))
            body[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # interesting values
        for _ in range(rng.randrange(1, 4)):
            value = rng.choice(INTERESTING)
            i = rng.randrange(max(1, len(body) - len(value) + 1))
            body[i:i + len(value)] = value
    elif kind == 2:  # truncation
        del body[rng.randrange(len(body)):]
    elif kind == 3:  # splice with another frame
        other = rng.choice(frames)[4:]
        body = body[:rng.randrange(len(body) + 1)] + other[rng.randrange(len(other) + 1):]
    elif kind == 4:  # random bytes
        return _prefix(rng.randbytes(rng.randrange(0, 96))), False
    elif kind == 5:  # random bytes inserted
        i = rng.randrange(len(body) + 1)
        body[i:i] = rng.randbytes(rng.randrange(1, 16))
    else:  # a size prefix that lies
        size = rng.choice([0, 1, len(body) - 1, len(body) + 1, len(body) * 2, 0x7FFFFFFF, -1,
                           rng.randrange(-(2**31), 2**31)])
        return struct.pack(">i", size) + bytes(body), True
    return _prefix(bytes(body)), False


#: After each fuzzed frame: a valid ApiVersions v0 whose answer proves the frame was read.
PROBE = encode_request(ApiKey.API_VERSIONS, 0, 0, "probe", ApiVersionsRequest())


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    return frame[:8] + struct.pack(">i", correlation_id) + frame[12:]


# -- the broker and the connections --------------------------------------------------------------

def start_broker(log_path: str) -> tuple[subprocess.Popen, int]:
    with open(log_path, "ab") as log:
        proc = process.start_minibroker("--port", "0", "--stop-on-stdin-eof", stdin=subprocess.PIPE, stderr=log)
    bootstrap = process.wait_ready(proc, 60, Path(log_path))
    return proc, int(bootstrap.rsplit(":", 1)[1])


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Conn:
    """One fuzzing connection: what was sent on it, by correlation id, and what came back."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.reader = FrameReader(max_frame_size=1 << 30)
        # correlation id -> (api key, version, frame) as sent; None when two frames carried
        # the same id (a mutation can make one), so an answer cannot be matched
        self.sent: dict[int, tuple[int, int, bytes] | None] = {}
        self.ambiguous: set[int] = set()  # ids used twice on this connection: never checked
        self.next_id = 1
        self.framed = True  # False once a lying size prefix went out
        self.idle_since = time.monotonic()

    def expect(self, correlation_id: int, key: int, version: int, frame: bytes) -> None:
        if correlation_id in self.sent or correlation_id in self.ambiguous:
            self.ambiguous.add(correlation_id)
            self.sent[correlation_id] = None
        else:
            self.sent[correlation_id] = (key, version, frame)


class Stats:
    def __init__(self) -> None:
        self.frames = self.sent = self.bytes = self.answers = self.closed_by_broker = self.stalled = 0
        self.malformed: list[str] = []
        self.debug = False
        self.checks = 0
        self.slowest_check = 0.0


def check_response(conn: Conn, frame: bytes, stats: Stats) -> None:
    if len(frame) < 4:
        stats.malformed.append(f"response of {len(frame)} bytes")
        return
    (correlation_id,) = struct.unpack_from(">i", frame)
    if correlation_id in conn.ambiguous:
        conn.sent.pop(correlation_id, None)
        return
    if correlation_id not in conn.sent:
        if conn.framed:
            stats.malformed.append(f"unknown correlation id {correlation_id}: {frame[:64].hex()}")
        return  # after a lying size prefix the broker framed our bytes its own way
    asked = conn.sent.pop(correlation_id)
    if asked is None:
        return  # ambiguous
    key, version, sent = asked
    if sent is not None and sent[4:] == PROBE[4:8] + sent[8:12] + PROBE[12:]:
        stats.frames += 1  # a probe's answer: the fuzzed frame before it was processed
    if key == ApiKey.API_VERSIONS and not APIS[key].versions.lo <= version <= APIS[key].versions.hi:
        version = 0  # KIP-511: ApiVersions of a version not served is answered in v0
    detail = f"\n      sent {sent.hex()}\n      got  {frame.hex()}" if stats.debug else ""
    if key not in APIS or not APIS[key].versions.lo <= version <= APIS[key].versions.hi:
        stats.malformed.append(f"answer to unknown API {key} v{version}{detail}")
        return
    try:
        decode_response(key, version, frame)
    except ProtocolError as exc:
        stats.malformed.append(f"{APIS[key].name} v{version}: {exc}{detail}")


def drain(conn: Conn, stats: Stats) -> bool:
    """Read what is there; False when the broker closed the connection."""
    while True:
        try:
            data = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return True
        except (ConnectionResetError, OSError):
            return False
        if not data:
            return False
        conn.idle_since = time.monotonic()
        conn.reader.receive_data(data)
        try:
            while (frame := conn.reader.next_frame()) is not None:
                stats.answers += 1
                check_response(conn, frame, stats)
        except ProtocolError as exc:
            stats.malformed.append(f"response framing: {exc}")
            return False


def send(conn: Conn, frame: bytes) -> bool:
    view = memoryview(frame)
    deadline = time.monotonic() + 2
    while view:
        try:
            n = conn.sock.send(view)
            view = view[n:]
        except (BlockingIOError, InterruptedError):
            if time.monotonic() > deadline:
                return False
            select.select([], [conn.sock], [], 0.05)
        except OSError:
            return False
    return True


def health_check(port: int, timeout: float) -> float:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        reader = FrameReader()
        for cid, (key, version, body) in enumerate([
            (ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="fuzz", client_software_version="1")),
            (ApiKey.METADATA, 12, MetadataRequest(topics=None)),
        ]):
            s.sendall(encode_request(key, version, cid, "health", body))
            while (frame := reader.next_frame()) is None:
                if time.monotonic() - started > timeout:
                    raise TimeoutError("health check timed out")
                data = s.recv(1 << 20)
                if not data:
                    raise ConnectionError("broker closed the health check")
                reader.receive_data(data)
            got, _ = decode_response(key, version, frame)
            assert got == cid
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000, help="frames to send (default 1 M)")
    parser.add_argument("--seconds", type=float, default=3600, help="stop after this long (default 3600)")
    parser.add_argument("--connections", type=int, default=6)
    parser.add_argument("--batch", type=int, default=2, help="fuzzed frames (each with its probe) per turn")
    parser.add_argument("--hold", type=float, default=0.5,
                        help="seconds without an answer before a held connection (a long poll, a join) is dropped")
    parser.add_argument("--valid", type=float, default=0.1, help="share of frames sent unmutated")
    parser.add_argument("--check-every", type=int, default=5000, help="frames between health checks")
    parser.add_argument("--check-timeout", type=float, default=10.0, help="seconds a health check may take")
    parser.add_argument("--max-rss-mb", type=float, default=1024.0)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--debug", action="store_true", help="print the frames of malformed answers")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    tmp = tempfile.TemporaryDirectory(prefix="fuzz-requests-")
    log_path = os.path.join(tmp.name, "broker.log")
    proc, port = start_broker(log_path)
    from minibroker.handlers import supported_versions  # what the broker advertises
    frames = valid_frames(supported_versions())
    stats = Stats()
    stats.debug = args.debug
    crashed = hung = False
    rss_start = rss_mb(proc.pid)
    rss_peak = rss_start
    conns: list[Conn] = []
    began = time.monotonic()
    next_check = args.check_every
    try:
        conns = [Conn(port) for _ in range(args.connections)]
        while stats.frames < args.frames and time.monotonic() - began < args.seconds:
            # Each connection gets its frames, then all are waited on together.
            waiting: dict[int, list[int]] = {}  # connection index -> probe ids sent
            done: dict[int, str] = {}  # connection index -> "closed" / "unframed" / "stalled"
            for i, conn in enumerate(conns):
                probes = waiting[i] = []
                for _ in range(args.batch):
                    original = with_correlation_id(rng.choice(frames), conn.next_id)
                    conn.next_id += 1
                    if rng.random() < args.valid:
                        frame, lies = original, False
                    else:
                        frame, lies = mutate(rng, frames, original)
                    if len(frame) >= 12:
                        key, version, cid = struct.unpack_from(">hhi", frame, 4)
                        conn.expect(cid, key, version, frame)
                    probe = with_correlation_id(PROBE, conn.next_id)
                    if not lies:
                        conn.expect(conn.next_id, ApiKey.API_VERSIONS, 0, probe)
                    if not send(conn, frame if lies else frame + probe):
                        done[i] = "closed"
                        break
                    stats.sent += 1
                    stats.bytes += len(frame)
                    if lies:
                        stats.frames += 1  # it reached the broker's framing; nothing more is known
                        done[i] = "unframed"
                        break
                    probes.append(conn.next_id)
                    conn.next_id += 1
            # Each answered probe proves the frame before it was processed and the
            # connection kept (check_response counts it).
            while True:
                pending = [i for i in range(len(conns)) if i not in done
                           and any(p in conns[i].sent for p in waiting[i])]
                if not pending:
                    break
                readable, _, _ = select.select([conns[i].sock for i in pending], [], [], 0.2)
                for i in pending:
                    conn = conns[i]
                    if conn.sock in readable and not drain(conn, stats):
                        done[i] = "closed"
                    elif time.monotonic() - conn.idle_since > args.hold:
                        done[i] = "stalled"
            for i, why in done.items():
                if why == "closed":
                    stats.frames += 1  # the frame the broker closed on
                    stats.closed_by_broker += 1
                elif why == "stalled":
                    stats.stalled += 1
                conns[i].sock.close()
                conns[i] = Conn(port)
            if proc.poll() is not None:
                crashed = True
                break
            if stats.frames >= next_check:
                next_check += args.check_every
                try:
                    took = health_check(port, args.check_timeout)
                except (OSError, TimeoutError, ConnectionError, AssertionError) as exc:
                    print(f"health check failed after {stats.frames} frames: {exc!r}")
                    hung = True
                    break
                stats.checks += 1
                stats.slowest_check = max(stats.slowest_check, took)
                rss_peak = max(rss_peak, rss_mb(proc.pid))
                print(f"{stats.frames} frames, {stats.answers} answers, {stats.closed_by_broker} closed, "
                      f"rss {rss_peak:.0f} MB, check {took * 1000:.0f} ms", flush=True)
        if not crashed and not hung:
            stats.checks += 1
            stats.slowest_check = max(stats.slowest_check, health_check(port, args.check_timeout))
            rss_peak = max(rss_peak, rss_mb(proc.pid))
    finally:
        for conn in conns:
            conn.sock.close()
        if proc.poll() is None:
            proc.stdin.close()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        else:
            crashed = True
        proc.stdout.close()
    elapsed = time.monotonic() - began
    print()
    print(f"frames processed       {stats.frames} in {elapsed:.0f} s, {stats.frames / elapsed:.0f} frames/s "
          f"({stats.sent} sent, {stats.bytes / 1e6:.1f} MB; the rest followed one the broker closed on)")
    print(f"answers                {stats.answers} (probes included)")
    print(f"closed by the broker   {stats.closed_by_broker}")
    print(f"held, dropped by us    {stats.stalled}")
    print(f"health checks          {stats.checks}, slowest {stats.slowest_check * 1000:.0f} ms")
    print(f"broker RSS             {rss_start:.0f} MB at start, {rss_peak:.0f} MB peak")
    print(f"crashes                {int(crashed)}")
    print(f"hangs                  {int(hung)}")
    print(f"malformed answers      {len(stats.malformed)}")
    for line in stats.malformed[:30 if args.debug else 10]:
        print(f"    {line}")
    ok = not crashed and not hung and not stats.malformed and rss_peak < args.max_rss_mb
    print("invariants held" if ok else f"INVARIANT BROKEN (broker log: {log_path})")
    if not ok:
        tmp._finalizer.detach()
    else:
        tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
