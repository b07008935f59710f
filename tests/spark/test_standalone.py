"""The helpers of tests/spark/standalone.py that a Spark test relies on to check that nothing
listens beyond loopback (issue 13, step 2, item 6): they must see a socket bound to every
address, or the cluster test's check would pass whatever Spark did."""

from __future__ import annotations

import os
import socket

from tests.spark.standalone import descendants, listening, not_loopback


def test_a_listener_on_every_address_is_reported_and_one_on_loopback_is_not():
    with socket.socket() as anywhere, socket.socket() as loopback, \
            socket.socket(socket.AF_INET6) as anywhere6:
        anywhere.bind(("0.0.0.0", 0))
        loopback.bind(("127.0.0.1", 0))
        anywhere6.bind(("::", 0))
        for s in (anywhere, loopback, anywhere6):
            s.listen()
        me = os.getpid()
        assert {("0.0.0.0", anywhere.getsockname()[1]), ("127.0.0.1", loopback.getsockname()[1]),
                ("::", anywhere6.getsockname()[1])} <= set(listening([me])[me])
        bad = set(not_loopback(descendants(me))[me])
        assert ("0.0.0.0", anywhere.getsockname()[1]) in bad and ("::", anywhere6.getsockname()[1]) in bad
        assert all(port != loopback.getsockname()[1] for _, port in bad)
