"""Shared test setup: in CI the Cython codec must have been built (no silent slow path),
and the brokers the tests get: ``broker`` (minibroker) and ``tansu_broker``.

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


@pytest.fixture(scope="session", autouse=True)
def _extension_built_in_ci():
    if os.environ.get("CI") and os.environ.get("KPROTO_NO_EXTENSIONS") != "1":
        assert codec_backend() == "cython", "CI must test the built Cython extension"
