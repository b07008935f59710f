"""The one place that picks the codec backend: the Cython extension or its pure-Python twin.

Everything in kproto that needs varints, CRCs, murmur2 or record batches imports them
from here, never from ``kproto._codec`` or ``kproto._codec_py`` directly, so that the
choice is made once and can be asked about with :func:`codec_backend`.

``KPROTO_NO_EXTENSIONS=1`` in the environment selects the twin on purpose. When the
extension is missing (a failed build, an unsupported platform, or a source checkout without
a build that shadows an installed copy) the twin is used and a :class:`RuntimeWarning` says
so once, loudly, naming where kproto was imported from and what to do: the twin is correct
but several times slower, and a silent slow path is the kind of bug that takes weeks to
notice.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

__all__ = [
    "codec_backend",
    "encode_varint",
    "decode_varint",
    "encode_varlong",
    "decode_varlong",
    "encode_uvarint",
    "decode_uvarint",
    "size_of_varint",
    "size_of_varlong",
    "crc32c",
    "crc32",
    "murmur2",
    "murmur2_partition",
    "Record",
    "BatchHeader",
    "Batch",
    "BatchBuilder",
    "BATCH_HEADER_SIZE",
    "read_batches",
    "read_batch_header",
    "rewrite_batch",
    "empty_batch",
    "validate_batch",
    "stamped_head",
    "uninitialized_bytes",
    "millis_to_micros",
    "decode_record_set",
    "decode_columnar",
    "record_tuples",
    "Columns",
    "OpenBatch",
    "RecordRef",
    "Appender",
    "BinaryArray",
    "largest_record",
    "partition_rows",
]


def _no_extension_message(package: Path) -> str:
    """Say where kproto came from, why it has no extension there, and what to do."""
    here = f"kproto was imported from {package}, which has no built extension (kproto._codec)"
    fix = ("run from another directory, or build in place with `python setup.py build_ext "
           "--inplace` or `pip install -e .`")
    for entry in sys.path:  # another kproto on the path that has its extension
        other = Path(entry or os.curdir).resolve() / "kproto"
        if other != package and _has_extension(other):
            return (f"{here}; the installed copy in {other} is shadowed, most likely by the "
                    f"current directory (first on sys.path with `python -m` and `-c`): {fix}.")
    return (f"{here}. If kproto is installed elsewhere, the current directory may be "
            f"shadowing it: {fix}; or install with a C compiler and Cython available, or set "
            "KPROTO_NO_EXTENSIONS=1 to choose the twin deliberately.")


def _has_extension(package: Path) -> bool:
    return any((package / f"_codec{suffix}").is_file() for suffix in EXTENSION_SUFFIXES)


if os.environ.get("KPROTO_NO_EXTENSIONS") == "1":
    from kproto import _codec_py as _impl

    _BACKEND = "python"
else:
    _problem: str | None = None
    try:
        # Looked up first so that a missing file and a file that fails to load (another
        # Python's build, a missing symbol) get different messages; importing a missing
        # submodule of a package that is still initialising says "circular import".
        if importlib.util.find_spec("kproto._codec") is None:
            _problem = _no_extension_message(Path(__file__).resolve().parent)
        else:
            from kproto import _codec as _impl  # type: ignore[attr-defined,no-redef]
    except ImportError as exc:  # pragma: no cover - depends on the build
        _problem = (f"kproto's Cython codec (kproto._codec) failed to load ({exc}). Reinstall "
                    "kproto with a C compiler and Cython available, or set "
                    "KPROTO_NO_EXTENSIONS=1 to choose the twin deliberately.")
    if _problem is None:
        _BACKEND = "cython"
    else:
        from kproto import _codec_py as _impl

        _BACKEND = "python"
        warnings.warn("kproto is running on the pure-Python twin of its codec, several times "
                      f"slower: {_problem}", RuntimeWarning, stacklevel=2)


def codec_backend() -> str:
    """Return ``"cython"`` or ``"python"``: which codec implementation is in use."""
    return _BACKEND


encode_varint = _impl.encode_varint
decode_varint = _impl.decode_varint
encode_varlong = _impl.encode_varlong
decode_varlong = _impl.decode_varlong
encode_uvarint = _impl.encode_uvarint
decode_uvarint = _impl.decode_uvarint
size_of_varint = _impl.size_of_varint
size_of_varlong = _impl.size_of_varlong
crc32c = _impl.crc32c
crc32 = _impl.crc32
murmur2 = _impl.murmur2
murmur2_partition = _impl.murmur2_partition
Record = _impl.Record
BatchHeader = _impl.BatchHeader
Batch = _impl.Batch
BatchBuilder = _impl.BatchBuilder
BATCH_HEADER_SIZE = _impl.BATCH_HEADER_SIZE
read_batches = _impl.read_batches
read_batch_header = _impl.read_batch_header
rewrite_batch = _impl.rewrite_batch
empty_batch = _impl.empty_batch
validate_batch = _impl.validate_batch
stamped_head = _impl.stamped_head
decode_record_set = _impl.decode_record_set
decode_columnar = _impl.decode_columnar
record_tuples = _impl.record_tuples
Columns = _impl.Columns
OpenBatch = _impl.OpenBatch
RecordRef = _impl.RecordRef
Appender = _impl.Appender
BinaryArray = _impl.BinaryArray
largest_record = _impl.largest_record
partition_rows = _impl.partition_rows
uninitialized_bytes = _impl.uninitialized_bytes
millis_to_micros = _impl.millis_to_micros
