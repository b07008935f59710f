"""``python -m kproto``: the ``kproto`` command line (see :mod:`kproto.cli`)."""

import sys

from kproto.cli.main import main

sys.exit(main())
