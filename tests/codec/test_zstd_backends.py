"""zstd through the zstandard package and through cramjam: the same bytes, the same errors.

issue 16, item "decode zstd, values touched": kproto.compression decompresses zstd with
one reused zstandard context per thread when the package is installed (cramjam opens a
new decoder per call), falling back to its cramjam path for whatever one zstandard call
cannot do right. These tests hold the two to the same results on the same inputs, and
pin the zstandard pitfalls: decompress() reads only the first frame, returns b"" for a
first frame declaring content size 0, and needs a bound for frames without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import compression
from kproto.errors import CorruptRecordError
from tests.codec.test_compression import _streamed_zstd

zstandard = pytest.importorskip("zstandard", reason="the zstd extra (zstandard) is not installed")

pytestmark = pytest.mark.codec

FAST = compression._zstd_decompress_zstandard
CRAMJAM = compression._zstd_decompress_cramjam
MAX = compression.DEFAULT_MAX_DECOMPRESSED


def _outcome(decompress, payload: bytes, max_size: int = MAX):
    try:
        return "ok", bytes(decompress(payload, max_size))
    except CorruptRecordError as exc:
        return "corrupt", str(exc)


def _alike(payload: bytes, max_size: int = MAX):
    """Both decompressors' outcome on ``payload``, asserted equal; returns it."""
    fast = _outcome(FAST, payload, max_size)
    assert fast == _outcome(CRAMJAM, payload, max_size)
    return fast


def _skippable(content: bytes) -> bytes:
    return (0x184D2A50).to_bytes(4, "little") + len(content).to_bytes(4, "little") + content


def _declared(data: bytes) -> bytes:
    return bytes(cramjam.zstd.compress(data))


TEXT = b"".join(b'{"id": %d, "page": "/items/%d"}\n' % (i, i % 97) for i in range(3000))


@pytest.mark.parametrize("shape", [
    "declared + declared", "empty declared + declared", "streamed + streamed",
    "declared + streamed", "streamed + declared", "streamed + skippable", "declared + skippable",
    "skippable + streamed",
])
def test_several_frames_are_all_read(shape):
    """zstandard's one-shot decompress() stops after the first frame (and after an empty
    first frame returns b""): every frame must still be read, by both alike."""
    make = {"declared": _declared, "streamed": _streamed_zstd, "skippable": lambda d: _skippable(b"xyz")}
    payload = b""
    expected = b""
    for i, part in enumerate(shape.split(" + ")):
        kind = part.removeprefix("empty ")
        data = b"" if part.startswith("empty") or kind == "skippable" else TEXT[i * 1000 : (i + 2) * 1000]
        payload += make[kind](data)
        expected += data
    assert _alike(payload) == ("ok", expected)


@pytest.mark.parametrize("make", [_declared, _streamed_zstd], ids=["declared", "streamed"])
def test_max_size_caps_both(make):
    frame = make(TEXT)
    assert _alike(frame, len(TEXT)) == ("ok", TEXT)
    kind, message = _alike(frame, len(TEXT) - 1)
    assert kind == "corrupt" and "max_size" in message


def test_bomb_stops_at_max_size():
    """64 MiB of zeros in a ~2 KB streamed frame, refused at a 1 MiB cap by both."""
    compressor = cramjam.zstd.Compressor()
    for _ in range(64):
        compressor.compress(bytes(1 << 20))
    bomb = bytes(compressor.finish())
    assert len(bomb) < 64 * 1024
    kind, message = _alike(bomb, 1 << 20)
    assert kind == "corrupt" and "max_size" in message


@pytest.mark.parametrize("make", [_declared, _streamed_zstd], ids=["declared", "streamed"])
@pytest.mark.parametrize("cut", [1, 4, 100])
def test_truncated_frames_are_corrupt_alike(make, cut):
    kind, message = _alike(make(TEXT)[:-cut])
    assert kind == "corrupt" and "does not decompress" in message


frames = st.tuples(st.binary(max_size=3000), st.sampled_from(["declared", "streamed", "skippable"]))


@st.composite
def payloads(draw):
    """1-3 frames of any kind, then maybe bytes flipped, cut or appended."""
    parts = draw(st.lists(frames, min_size=1, max_size=3))
    payload = bytearray()
    for data, kind in parts:
        if kind == "declared":
            payload += _declared(data)
        elif kind == "streamed":
            payload += _streamed_zstd(data)
        else:
            payload += _skippable(data[:20])
    damage = draw(st.sampled_from(["none", "flip", "cut", "append"]))
    if damage == "flip" and payload:
        at = draw(st.integers(0, len(payload) - 1))
        payload[at] ^= draw(st.integers(1, 255))
    elif damage == "cut":
        del payload[draw(st.integers(0, len(payload))):]
    elif damage == "append":
        payload += draw(st.binary(min_size=1, max_size=16))
    return bytes(payload)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads(), st.one_of(st.just(MAX), st.integers(0, 10_000)))
def test_zstandard_and_cramjam_agree_on_any_payload(payload, max_size):
    """Differential: valid, damaged and capped payloads give both the same bytes or the
    same CorruptRecordError message."""
    _alike(payload, max_size)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_zstandard_and_cramjam_agree_on_garbage(blob):
    _alike(compression._ZSTD_MAGIC + blob)
    _alike(blob)


def test_each_thread_has_its_own_context():
    """A ZstdDecompressor is not thread-safe: one per thread, each decoding correctly."""
    payloads = [_declared(TEXT[i * 100 :]) for i in range(4)] + [_streamed_zstd(TEXT[i * 100 :]) for i in range(4)]
    errors: list = []
    contexts: set = set()
    lock = threading.Lock()

    def work(i):
        try:
            for _ in range(30):
                for j, payload in enumerate(payloads):
                    assert FAST(payload, MAX) == TEXT[(j % 4) * 100 :]
            with lock:
                contexts.add(id(compression._zstd_local.decompressor))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(contexts) == 4


def _decompressor_in_subprocess(**env) -> subprocess.CompletedProcess:
    code = "from kproto import compression; print(compression.zstd_decompressor())"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if k != "KPROTO_ZSTD"}, **env})


def test_kproto_zstd_env_selects_the_decompressor():
    assert _decompressor_in_subprocess().stdout.strip() == "zstandard"
    assert _decompressor_in_subprocess(KPROTO_ZSTD="cramjam").stdout.strip() == "cramjam"
    assert _decompressor_in_subprocess(KPROTO_ZSTD="zstandard").stdout.strip() == "zstandard"
    bad = _decompressor_in_subprocess(KPROTO_ZSTD="zlib")
    assert bad.returncode != 0 and "unknown zstd decompressor 'zlib'" in bad.stderr


def test_kproto_zstd_env_ignores_case_and_spaces():
    """Issue 16 (left from step 2): ``KPROTO_ZSTD=CramJam`` or a stray space is the name a user
    meant, not an import-time ValueError."""
    assert _decompressor_in_subprocess(KPROTO_ZSTD=" CramJam ").stdout.strip() == "cramjam"
    assert _decompressor_in_subprocess(KPROTO_ZSTD="ZSTANDARD").stdout.strip() == "zstandard"


def test_select_zstd_switches_and_reports():
    previous = compression._select_zstd("cramjam")
    try:
        assert compression.zstd_decompressor() == "cramjam"
        assert compression.decompress(compression.ZSTD, _streamed_zstd(TEXT)) == TEXT
    finally:
        compression._select_zstd(previous)
    assert compression.zstd_decompressor() == previous
    with pytest.raises(ValueError, match="unknown zstd decompressor"):
        compression._select_zstd("lz4")


@pytest.mark.parametrize("make", [_declared, _streamed_zstd], ids=["declared", "streamed"])
def test_one_frame_takes_one_zstandard_call_without_cramjam(monkeypatch, make):
    """The common shapes (kproto's and librdkafka's declared frame, Java's streamed one)
    are the fast path: no fallback to cramjam."""
    def no_cramjam(*args):
        raise AssertionError("fell back to cramjam")

    monkeypatch.setattr(compression, "_zstd_decompress_cramjam", no_cramjam)
    assert FAST(make(TEXT), MAX) == TEXT


def test_without_zstandard_cramjam_decompresses():
    """Without the zstd extra: cramjam, and KPROTO_ZSTD=zstandard fails loudly at import."""
    code = ("import sys; sys.modules['zstandard'] = None\n"
            "from kproto import compression\n"
            "import cramjam\n"
            "assert compression.decompress(4, bytes(cramjam.zstd.compress(b'abc'))) == b'abc'\n"
            "print(compression.zstd_decompressor())")
    env = {k: v for k, v in os.environ.items() if k != "KPROTO_ZSTD"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0 and run.stdout.strip() == "cramjam", run.stderr
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**env, "KPROTO_ZSTD": "zstandard"})
    assert run.returncode != 0 and "zstandard package is not installed" in run.stderr
