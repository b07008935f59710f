"""``python -m kproto.pipeline [OPTIONS]``: exactly ``kproto pipeline [OPTIONS]``.

An entry point, as :mod:`kproto.__main__` is: the command lives in :mod:`kproto.cli`
(:mod:`kproto.cli.pipeline`) and the job in :mod:`kproto.pipeline`, which never imports
the command line.
"""

import sys

from kproto.cli.main import main

__all__: list[str] = []  # a script, not a module to import from

sys.exit(main(["pipeline", *sys.argv[1:]]))
