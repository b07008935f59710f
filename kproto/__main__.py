"""``python -m kproto``: the ``kproto`` command line (see :mod:`kproto.cli`)."""

import sys

from kproto.cli.main import main

__all__: list[str] = []  # a script, not a module to import from

sys.exit(main())
