"""The TCP connections of this process, found through ``/proc/self/fd``: for tests that
look at what a client holds open (its connections to a broker, their receive buffers)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

__all__ = ["tcp_connections"]


def tcp_connections() -> Iterator[tuple[int, int, socket.socket]]:
    """``(inode, descriptor, socket)`` for each connected IPv4 TCP socket of this process;
    the socket is over a duplicate of the descriptor, closed once the caller moves on."""
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
            copy = os.dup(fd)
        except OSError:
            continue  # closed since listed (the listing's own descriptor, for one)
        try:
            sock = socket.socket(fileno=copy)
        except OSError:
            os.close(copy)
            continue  # not a socket
        with sock:
            try:
                connected = sock.family == socket.AF_INET and bool(sock.getpeername())
            except OSError:
                connected = False  # a listening socket, or one not connected yet
            if connected:
                yield int(link[len("socket:["):-1]), fd, sock
