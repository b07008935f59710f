"""``nothing_left_behind``: a client test must leave nothing behind, no kproto thread and
no socket outlives it. ``no_thread_left``: no thread of any name outlives the test (for
tests of code that runs its own threads: the CLI, OAuth token and key fetchers).

An autouse fixture for the clients' tests: the conftest.py of tests/producer, tests/consumer,
tests/admin and tests/io imports it, as do the top-level modules that drive every client.
Module-scoped brokers are set up before this fixture counts, so their sockets are not
counted; a broker serving in this process closes its side of a connection a moment
after the client does, hence the short grace period.
"""

import os
import threading
import time

import pytest

__all__ = ["no_thread_left", "nothing_left_behind"]

GRACE = 2.0  # seconds for closed connections and peers' threads to wind down


def _sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # closed while we looked (listdir's own fd, for one)
    return count


@pytest.fixture(autouse=True)
def nothing_left_behind():
    threads, sockets = set(threading.enumerate()), _sockets()
    yield
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and (
            [t for t in set(threading.enumerate()) - threads if t.name.startswith("kproto")] or _sockets() > sockets):
        time.sleep(0.05)
    assert not [t for t in set(threading.enumerate()) - threads if t.name.startswith("kproto")]
    assert _sockets() <= sockets, "a socket outlived the test"


@pytest.fixture
def no_thread_left():
    """No thread started during the test is still running after it (a few seconds' grace
    for threads that were told to stop)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5.0
    while (left := [t for t in set(threading.enumerate()) - before if t.is_alive()]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"threads left running: {left}"
