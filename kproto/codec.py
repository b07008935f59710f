"""The one place that picks the codec backend: the Cython extension or its pure-Python twin.

Everything in kproto that needs varints, CRCs, murmur2 or record batches imports them
from here, never from ``kproto._codec`` or ``kproto._codec_py`` directly, so that the
choice is made once and can be asked about with :func:`codec_backend`.

``KPROTO_NO_EXTENSIONS=1`` in the environment selects the twin on purpose. When the
extension is missing (a failed build, an unsupported platform) the twin is used and a
:class:`RuntimeWarning` says so once, loudly: the twin is correct but several times slower,
and a silent slow path is the kind of bug that takes weeks to notice.
"""

from __future__ import annotations

import os
import warnings

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
    "Batch",
    "BatchBuilder",
    "read_batches",
    "decode_record_set",
    "decode_columnar",
    "Columns",
    "OpenBatch",
    "RecordRef",
    "Appender",
]

if os.environ.get("KPROTO_NO_EXTENSIONS") == "1":
    from kproto import _codec_py as _impl

    _BACKEND = "python"
else:
    try:
        from kproto import _codec as _impl  # type: ignore[attr-defined,no-redef]

        _BACKEND = "cython"
    except ImportError as exc:  # pragma: no cover - depends on the build
        from kproto import _codec_py as _impl

        _BACKEND = "python"
        warnings.warn(
            "kproto's Cython codec (kproto._codec) is not built, so kproto is running on its "
            f"pure-Python twin, several times slower ({exc}). Reinstall with a C compiler and "
            "Cython available, or set KPROTO_NO_EXTENSIONS=1 to choose the twin deliberately.",
            RuntimeWarning,
            stacklevel=2,
        )


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
Batch = _impl.Batch
BatchBuilder = _impl.BatchBuilder
read_batches = _impl.read_batches
decode_record_set = _impl.decode_record_set
decode_columnar = _impl.decode_columnar
Columns = _impl.Columns
OpenBatch = _impl.OpenBatch
RecordRef = _impl.RecordRef
Appender = _impl.Appender
