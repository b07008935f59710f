"""The README's first command on a fresh clone: ``pip install .`` then ``python -m kproto...``
from the checkout, where the checkout's ``kproto/`` comes first on ``sys.path``.

Each test works on a copy of the source files as a fresh clone has them (no built
extension, no generated C), so the state of this work tree does not leak in.
"""

import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kproto

ROOT = Path(__file__).resolve().parents[1]
# What a fresh clone has: the tracked sources, none of the build's products.
SOURCES = ("setup.py", "pyproject.toml", "README.md", "pyspark_kproto.py", "pyspark_kproto_log.py",
           "kproto", "minibroker")
BUILD_PRODUCTS = shutil.ignore_patterns(*(f"*{s}" for s in importlib.machinery.EXTENSION_SUFFIXES),
                                        "*.c", "*.html", "__pycache__")
PRINT_BACKEND = "import kproto; print(kproto.codec_backend())"


def fresh_clone(dest: Path) -> Path:
    dest.mkdir()
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=BUILD_PRODUCTS)
        else:
            shutil.copy2(src, dest / name)
    return dest


def python_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KPROTO_NO_EXTENSIONS", "PYTHONPATH")}
    return {**env, **extra}


def run_from(cwd: Path, site: Path | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`python -c` in `cwd` (first on sys.path, as with `python -m`), with `site` standing for
    the environment's site-packages; `-S` keeps this interpreter's own installs (an editable
    kproto among them) out of the way, and a directory of kproto's dependencies stands in."""
    path = [str(_dependencies_only(tmp_path / "deps"))] + ([str(site)] if site else [])
    return subprocess.run([sys.executable, "-S", "-W", "default", "-c", PRINT_BACKEND], cwd=cwd,
                          env=python_env(PYTHONPATH=os.pathsep.join(path)), capture_output=True, text=True,
                          timeout=60)


def built_extension(package: Path) -> list[Path]:
    return [p for s in importlib.machinery.EXTENSION_SUFFIXES for p in package.glob(f"_codec{s}")]


def test_pip_install_then_running_from_the_checkout_uses_the_cython_codec(tmp_path):
    """Issue 11 item A: `pip install .` then `python -m kproto.pipeline` in the checkout ran
    on the pure-Python twin, because the checkout's kproto/ (no built extension) shadowed
    the installed package. The install must leave the extension in the checkout too."""
    pytest.importorskip("Cython", reason="building the extension needs Cython (in the test extra)")
    clone = fresh_clone(tmp_path / "clone")
    site = tmp_path / "site"
    # The README's `pip install .`, into a directory of its own instead of an environment;
    # no build isolation and no index, so the test needs no network.
    install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                              "--no-index", "--target", str(site), "."], cwd=clone, env=python_env(),
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    assert built_extension(site / "kproto"), "the installed package has its extension"
    assert (site / "kproto" / "py.typed").is_file() and (site / "minibroker" / "py.typed").is_file()
    # issue 12: the generated message classes' type stubs ship with the package
    assert (site / "kproto" / "protocol" / "messages" / "__init__.pyi").is_file()
    # `python -m ...` in the checkout: the current directory comes first on sys.path.
    run = run_from(clone, site, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "cython"
    assert "Warning" not in run.stderr


def test_warning_names_the_shadowing_checkout_and_the_fix(tmp_path):
    """Issue 11 item A: the warning blamed "a circular import". When the imported kproto has no
    extension and an installed copy with one is shadowed, it says where each is and what to do."""
    if not built_extension(Path(kproto.__file__).parent):
        pytest.skip("needs a built extension to stand for the installed copy")
    clone = fresh_clone(tmp_path / "clone")
    site = tmp_path / "site"
    shutil.copytree(Path(kproto.__file__).parent, site / "kproto", ignore=shutil.ignore_patterns("__pycache__"))
    run = run_from(clone, site, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "python"
    message = " ".join(run.stderr.split())
    assert "circular import" not in message
    assert f"kproto was imported from {clone / 'kproto'}, which has no built extension" in message
    assert f"installed copy in {site / 'kproto'} is shadowed" in message
    assert "build_ext --inplace" in message and "pip install -e ." in message


def test_warning_without_any_built_copy_says_how_to_build(tmp_path):
    """Issue 11 item A: with no built copy anywhere the warning says where kproto came from
    and how to build the extension, not "a circular import"."""
    clone = fresh_clone(tmp_path / "clone")
    run = run_from(clone, None, tmp_path)
    assert run.returncode == 0, run.stderr
    message = " ".join(run.stderr.split())
    assert run.stdout.strip() == "python"
    assert f"kproto was imported from {clone / 'kproto'}, which has no built extension" in message
    assert "shadowed" not in message
    assert "build_ext --inplace" in message and "KPROTO_NO_EXTENSIONS=1" in message


def _dependencies_only(dest: Path) -> Path:
    """A directory holding kproto's runtime dependencies and no kproto (for `python -S`)."""
    from importlib.metadata import distribution

    if not dest.exists():
        for name in ("cramjam", "crc32c"):
            dist = distribution(name)
            for file in dist.files or ():
                src = Path(dist.locate_file(file))
                if src.is_file() and "__pycache__" not in file.parts:
                    (dest / file).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dest / file)
    return dest
