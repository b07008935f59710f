"""Build script: compiles kproto/_codec.pyx into the kproto._codec extension.

Set KPROTO_NO_EXTENSIONS=1 at build time to skip the extension; kproto then runs on its
pure-Python twin (kproto/_codec_py.py) and says so loudly when imported.
"""

import os

from setuptools import Extension, setup

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

setup(ext_modules=ext_modules)
