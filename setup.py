"""Build script: compiles kproto/_codec.pyx into the kproto._codec extension.

Set KPROTO_NO_EXTENSIONS=1 at build time to skip the extension; kproto then runs on its
pure-Python twin (kproto/_codec_py.py) and says so loudly when imported.

``pip install .`` in a checkout also leaves the built extension in the checkout's
``kproto/`` (as ``build_ext --inplace`` does), because the README's next command,
``python3 -m kproto.pipeline``, runs in the checkout: there the current directory comes
first on ``sys.path`` and its ``kproto/`` shadows the installed package, so without the
extension beside the sources the main job would run on the slow twin.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


class build_ext_into_checkout(build_ext):
    """``build_ext`` that also copies the extension into the source tree it was built from."""

    def run(self) -> None:
        super().run()
        if self.inplace or not self.extensions:
            return  # --inplace and editable installs have put it there already
        try:
            self.copy_extensions_to_source()
        except OSError as exc:  # a read-only source tree: the installed copy still works
            self.warn(f"could not copy the extension into {HERE}/kproto ({exc}); running "
                      "from this directory would use the pure-Python codec")


ext_modules = []
if os.environ.get("KPROTO_NO_EXTENSIONS") != "1":
    from Cython.Build import cythonize

    ext_modules = cythonize(
        [Extension("kproto._codec", ["kproto/_codec.pyx"], extra_compile_args=["-O3"])],
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )

setup(ext_modules=ext_modules, cmdclass={"build_ext": build_ext_into_checkout})
