"""Which codec runs: the extension by default, the twin on request, and never silently."""

import inspect
import os
import subprocess
import sys

import pytest

from kproto import _codec_py

pytestmark = pytest.mark.codec


def run_python(code, **env):
    result = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=60)
    assert result.returncode == 0, result.stderr
    return result


def test_no_extensions_env_selects_the_twin_quietly():
    result = run_python("import kproto; print(kproto.codec_backend())", KPROTO_NO_EXTENSIONS="1")
    assert result.stdout.strip() == "python"
    assert "RuntimeWarning" not in result.stderr


def test_missing_extension_warns_loudly_once():
    # Hide the extension as a failed build would, then import kproto twice.
    code = """
import sys, importlib.abc
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "kproto._codec":
            raise ImportError("simulated: extension not built")
sys.meta_path.insert(0, Hide())
import kproto, kproto.records
print(kproto.codec_backend())
"""
    env = {k: v for k, v in os.environ.items() if k != "KPROTO_NO_EXTENSIONS"}
    result = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "python"
    assert result.stderr.count("RuntimeWarning") == 1
    assert "pure-Python twin" in result.stderr


def test_extension_has_the_twins_names_and_parameters():
    cy = pytest.importorskip("kproto._codec", reason="the Cython extension is not built")
    assert cy.__all__ == _codec_py.__all__
    for name in _codec_py.__all__:
        ours, twin = getattr(cy, name), getattr(_codec_py, name)
        if inspect.isfunction(twin):
            assert list(inspect.signature(ours).parameters) == list(inspect.signature(twin).parameters), name
    for cls, methods in (("BatchBuilder", ("append", "append_columns", "build", "size_in_bytes", "reuse")),
                         ("Batch", ("records", "validate")), ("Appender", ("send", "try_send", "append"))):
        for method in methods:
            ours = inspect.signature(getattr(getattr(cy, cls), method))
            twin = inspect.signature(getattr(getattr(_codec_py, cls), method))
            assert list(ours.parameters) == list(twin.parameters), f"{cls}.{method}"


def test_public_api_fits_on_a_screen():
    import kproto
    assert set(kproto.__all__) == {"AdminClient", "Consumer", "ConsumerGroupMetadata", "ConsumerRecord",
                                   "OffsetAndMetadata", "Producer", "RecordMetadata", "TopicPartition",
                                   "codec_backend", "__version__"}
    assert all(getattr(kproto, name).__doc__ for name in kproto.__all__ if name != "__version__")
