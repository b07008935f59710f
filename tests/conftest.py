"""Shared test setup: in CI the Cython codec must have been built (no silent slow path),
the brokers the tests get: ``broker`` (minibroker) and ``tansu_broker``, and ``pki``, the
test certificates for TLS.

``broker`` is minibroker's own ``kafka_broker_module`` (minibroker/pytest_plugin.py, the
fixtures users get too): one broker per test module. A module gives its broker Kafka's
settings by overriding ``minibroker_config`` with a module-scoped fixture; tests/minibroker
makes ``broker`` one per test (``kafka_broker``). ``tansu_broker`` is Tansu, a
Kafka-compatible broker by others, one per module (tests/support/tansu.py).
"""

import os
from collections.abc import Iterator

import pytest

from kproto import codec_backend
from tests.support.certs import CertificateAuthority, Issued
from tests.support.tansu import Tansu, require_tansu, tansu


def pytest_report_header(config):
    return f"kproto codec backend: {codec_backend()}"


@pytest.fixture(scope="module")
def broker(kafka_broker_module):
    """A started minibroker shared by this module's tests, configured by ``minibroker_config``."""
    return kafka_broker_module


@pytest.fixture(scope="module")
def tansu_broker() -> Iterator[Tansu]:
    """A started Tansu shared by this module's tests, killed after them; skipped without
    its binary (failed in CI, see :func:`tests.support.tansu.require_tansu`)."""
    require_tansu()
    with tansu() as running:
        yield running


class Pki:
    """The session's test certificates (tests/support/certs.py): ``ca`` (its PEM at
    ``ca.cert_path``), ``server`` for localhost and 127.0.0.1, ``client`` (CN=client) for
    mutual TLS; ``ca.issue(...)`` makes more."""

    def __init__(self, ca: CertificateAuthority) -> None:
        self.ca = ca
        self.server: Issued = ca.issue("localhost", hosts=("localhost", "127.0.0.1"))
        self.client: Issued = ca.issue("client", client=True)


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    """A private CA and a server and client certificate it signed, for the TLS tests."""
    return Pki(CertificateAuthority.create(tmp_path_factory.mktemp("pki")))


@pytest.fixture(scope="session", autouse=True)
def _extension_built_in_ci():
    if os.environ.get("CI") and os.environ.get("KPROTO_NO_EXTENSIONS") != "1":
        assert codec_backend() == "cython", "CI must test the built Cython extension"
