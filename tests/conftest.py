"""Shared test setup: in CI the Cython codec must have been built (no silent slow path)."""

import os

import pytest

from kproto import codec_backend


def pytest_report_header(config):
    return f"kproto codec backend: {codec_backend()}"


@pytest.fixture(scope="session", autouse=True)
def _extension_built_in_ci():
    if os.environ.get("CI") and os.environ.get("KPROTO_NO_EXTENSIONS") != "1":
        assert codec_backend() == "cython", "CI must test the built Cython extension"
