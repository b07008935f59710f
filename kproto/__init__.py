"""kproto: a Kafka toolkit for Python with a Cython codec at its core.

The public API fits on this screen; see the documentation for each name.
"""

from kproto.codec import codec_backend

__all__ = ["codec_backend", "__version__"]

__version__ = "0.1.0.dev0"
