"""Codec test fixtures: ``zstd_decompressor`` runs a module once per zstd decompressor.

kproto.compression decompresses zstd with the zstandard package when it is installed and
with cramjam otherwise (issue 16); tests of zstd decoding use this fixture (directly or
with ``pytest.mark.usefixtures``) so that both paths are held to the same tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kproto import compression


@pytest.fixture(scope="module", params=["zstandard", "cramjam"])
def zstd_decompressor(request) -> Iterator[str]:
    """The zstd decompressor in use for this module's run ("zstandard" or "cramjam")."""
    if request.param == "zstandard":
        pytest.importorskip("zstandard", reason="the zstd extra (zstandard) is not installed")
    previous = compression._select_zstd(request.param)
    try:
        yield request.param
    finally:
        compression._select_zstd(previous)
