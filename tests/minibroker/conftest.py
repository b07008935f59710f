"""Fixtures for minibroker's own tests: a fresh broker for each test, a raw protocol client,
and a small real disk (a tmpfs) that a test fills up."""

import errno
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.raw_client import RawClient


@pytest.fixture
def broker(kafka_broker):
    """A fresh broker for each test here (the plugin's ``kafka_broker``): minibroker's tests
    look at its whole state. A module that shares one overrides this with module scope."""
    return kafka_broker


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
