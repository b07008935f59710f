"""Sphinx configuration for kproto's documentation (built by `tox -e docs`, warnings are errors)."""

import os
import sys

# The API pages document the pure-Python twin of the codec: it carries the docstrings and
# type hints, and the extension is held to the same API by tests.
os.environ.setdefault("KPROTO_NO_EXTENSIONS", "1")
sys.path.insert(0, os.path.abspath(".."))
sys.path.insert(0, os.path.abspath("_ext"))

project = "kproto"
author = "the kproto developers"
copyright = "2026, the kproto developers"
release = "0.1.0.dev0"

# No intersphinx: builds run offline (CI reaches only package registries).
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "config_table", "txn_error_table", "metrics_table"]
autodoc_member_order = "bysource"
# The Spark pages document kproto.spark without making the docs build install Spark.
autodoc_mock_imports = ["pyspark", "pyarrow", "pandas", "numpy"]
suppress_warnings = ["autodoc.mocked_object"]  # Spark types shown by name, built from the mocks
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "furo"
exclude_patterns = ["_build"]
nitpicky = False
