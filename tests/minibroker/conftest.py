"""Fixtures for minibroker's own tests: a fresh broker, a raw protocol client, and a
small real disk (a tmpfs) that a test fills up."""

import errno
import os
import socket
import struct
import subprocess
from pathlib import Path

import pytest

from kproto.protocol import FrameReader, decode_response, encode_request
from minibroker import MiniBroker


@pytest.fixture
def broker():
    with MiniBroker() as b:
        yield b


class RawClient:
    """A blocking socket speaking kproto.protocol: for tests that need exact requests."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.frames = FrameReader()
        self.correlation_id = 0

    def send(self, api_key, version, body) -> int:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, "raw-test", body))
        return self.correlation_id

    def send_raw(self, payload: bytes) -> None:
        self.sock.sendall(payload)

    def receive_frame(self) -> bytes | None:
        """The next response frame, or None when the broker closed the connection."""
        while (frame := self.frames.next_frame()) is None:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.frames.receive_data(data)
        return frame

    def receive(self, api_key, version):
        frame = self.receive_frame()
        assert frame is not None, "the broker closed the connection"
        return decode_response(api_key, version, frame)

    def request(self, api_key, version, body):
        sent = self.send(api_key, version, body)
        correlation_id, response = self.receive(api_key, version)
        assert correlation_id == sent
        return response

    def is_closed_by_peer(self) -> bool:
        try:
            return self.receive_frame() is None
        except (ConnectionResetError, TimeoutError):
            return False

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(broker):
    clients = []

    def connect():
        c = RawClient(broker.port)
        clients.append(c)
        return c

    yield connect
    for c in clients:
        c.close()


def size_prefixed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class SmallDisk:
    """A tmpfs of ``size`` bytes at ``path``; :meth:`fill` takes every free page."""

    def __init__(self, path: Path):
        self.path = path
        self.filler = path / "filler"

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            while True:
                os.write(fd, bytes(4096))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink()


@pytest.fixture
def small_disk(tmp_path):
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mountpoint)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip() or mounted.returncode}); "
                    "tests that inject the failures at the file layer cover these paths")
    try:
        yield SmallDisk(mountpoint)
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)
