"""Fixtures for the ``kproto`` command's tests: two ways to run the command against ``broker``
(one per module, tests/conftest.py), and ``admin`` to check what it did.

``cli`` runs :func:`kproto.cli.main.main` in this process (stdin given as bytes, stdout
and stderr captured); ``run_process`` runs ``python -m kproto`` as a real subprocess.
Every test also checks that it left no client thread running.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from kproto.admin import AdminClient
from kproto.cli.main import main
from minibroker import MiniBroker
from tests.cli.helpers import ROOT, TIMEOUT, command, process_env
from tests.minibroker.cluster.conftest import cluster3  # noqa: F401  (a MiniCluster fixture)
from tests.support.leaks import no_thread_left  # noqa: F401  (a fixture)


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@pytest.fixture(scope="module")
def admin(broker: MiniBroker) -> Iterator[AdminClient]:
    """kproto's AdminClient on ``broker``, to check what a command did."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client


@pytest.fixture
def cli(broker: MiniBroker, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
        ) -> Callable[..., Result]:
    """``cli("topics", "list", stdin=b"...")``: run the command against ``broker``."""
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVERS", raising=False)

    def run(*args: str, stdin: bytes = b"", bootstrap: str | None = broker.bootstrap_servers) -> Result:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        capsys.readouterr()
        argv = [*(["--bootstrap-servers", bootstrap] if bootstrap else []), *args]
        code = main(argv)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def run_process() -> Callable[..., subprocess.CompletedProcess]:
    """``run_process(*args, input=b"...")``: ``python -m kproto ARGS`` to its end."""
    def run(*args: str, input: bytes = b"", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(command(*args), input=input, capture_output=True, cwd=ROOT,
                              env={**process_env(), **(env or {})}, timeout=TIMEOUT)
    return run


@pytest.fixture(autouse=True)
def _no_leaked_threads(request: pytest.FixtureRequest) -> None:
    """Every CLI test: no client thread left running."""
    request.getfixturevalue("no_thread_left")
