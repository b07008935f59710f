# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython hot paths of Kafka's record formats: varints, murmur2, v2 record batches.

The twin ``kproto/_codec_py.py`` holds the reference implementation, the docstrings and
the format drawings; this module must give the same results and raise the same exception
types (tests/codec/test_differential.py). Import through ``kproto.codec``.

Per-record work happens here in C: record batches are decoded in one loop into Record
objects, the consumer's record tuples or straight into Arrow-layout column buffers, and built by appending into one
growing C buffer. CRC-32C comes from the ``crc32c`` package (hardware instructions, GIL
released for large buffers); compression from ``kproto.compression`` (cramjam).

Legacy message sets (magic 0 and 1) are not a hot path: they are handed to the twin's
code, with this module's Record and Batch classes, so that they have one implementation.
"""

cimport cython
from cpython cimport array
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport Py_DECREF
from cpython.pythread cimport PyThread_get_thread_ident
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcmp, memcpy
from posix.time cimport CLOCK_REALTIME, clock_gettime, timespec

import array as _array
import zlib

from crc32c import crc32c as _crc32c

from kproto import _codec_py as _twin
from kproto import compression
from kproto.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL
    bint PyBytes_CheckExact(object o)
    bint PyUnicode_Check(object o)

__all__ = _twin.__all__

# Byte positions in a v2 batch header (see the drawing in _codec_py.py).
cdef enum:
    BASE_OFFSET = 0
    LENGTH = BASE_OFFSET + 8
    LEADER_EPOCH = LENGTH + 4
    MAGIC = LEADER_EPOCH + 4
    CRC = MAGIC + 1
    ATTRIBUTES = CRC + 4
    LAST_OFFSET_DELTA = ATTRIBUTES + 2
    BASE_TIMESTAMP = LAST_OFFSET_DELTA + 4
    MAX_TIMESTAMP = BASE_TIMESTAMP + 8
    PRODUCER_ID = MAX_TIMESTAMP + 8
    PRODUCER_EPOCH = PRODUCER_ID + 8
    BASE_SEQUENCE = PRODUCER_EPOCH + 2
    RECORDS_COUNT = BASE_SEQUENCE + 4
    V2_HEADER = RECORDS_COUNT + 4
    LOG_OVERHEAD = LEADER_EPOCH
    V2_MIN_LENGTH = V2_HEADER - LOG_OVERHEAD

cdef enum:
    CODEC_MASK = 0x07
    TIMESTAMP_TYPE_BIT = 0x08
    TRANSACTIONAL_BIT = 0x10
    CONTROL_BIT = 0x20
    DELETE_HORIZON_BIT = 0x40

cdef tuple _EMPTY = ()
cdef array.array _INT64_ARRAY = _array.array("q")  # the template of partition_rows' arrays
cdef int64_t INT32_MAX = 2147483647
cdef int64_t INT64_MAX = 0x7FFFFFFFFFFFFFFF
cdef int64_t INT64_MIN = -INT64_MAX - 1


cdef inline object _corrupt(str message, object first=None, object last=None):
    return CorruptRecordError(message, first, last)


cdef inline object _keyless(int64_t offset):
    return InvalidRecordError(f"record at offset {offset} has no key")


# ---------------------------------------------------------------------------
# big-endian helpers
# ---------------------------------------------------------------------------

cdef inline int64_t _ld64(const uint8_t* p) noexcept nogil:
    return <int64_t>(
        (<uint64_t>p[0] << 56) | (<uint64_t>p[1] << 48) | (<uint64_t>p[2] << 40) | (<uint64_t>p[3] << 32)
        | (<uint64_t>p[4] << 24) | (<uint64_t>p[5] << 16) | (<uint64_t>p[6] << 8) | <uint64_t>p[7])

cdef inline int32_t _ld32(const uint8_t* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3])

cdef inline int16_t _ld16(const uint8_t* p) noexcept nogil:
    return <int16_t>((<uint32_t>p[0] << 8) | <uint32_t>p[1])

cdef inline void _st64(uint8_t* p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    cdef int i
    for i in range(8):
        p[7 - i] = <uint8_t>(u >> (8 * i))

cdef inline void _st32(uint8_t* p, int64_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <uint8_t>(u >> 24)
    p[1] = <uint8_t>(u >> 16)
    p[2] = <uint8_t>(u >> 8)
    p[3] = <uint8_t>u

cdef inline void _st16(uint8_t* p, int64_t v) noexcept nogil:
    p[0] = <uint8_t>(<uint32_t>v >> 8)
    p[1] = <uint8_t>v


# ---------------------------------------------------------------------------
# varints
# ---------------------------------------------------------------------------

cdef inline int _read_unsigned(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t end, int max_bytes, int bits, uint64_t* out) except -1:
    cdef Py_ssize_t i = pos[0]
    cdef uint64_t result = 0
    cdef uint64_t b
    cdef int shift = 0
    cdef int n
    for n in range(max_bytes):
        if i >= end:
            raise _corrupt("truncated varint")
        b = p[i]
        i += 1
        if n == max_bytes - 1 and (b >> (bits - shift)):
            raise _corrupt(f"varint wider than {bits} bits")
        result |= (b & 0x7F) << shift
        if not (b & 0x80):
            pos[0] = i
            out[0] = result
            return 0
        shift += 7
    raise _corrupt(f"varint longer than {max_bytes} bytes")


# Varints of up to 3 bytes (lengths, small deltas: most of them) in C alone; False for a
# longer or truncated one, left to _read_unsigned (which raises). The Produce path's record
# walk uses it as it is (no exception machinery there).
cdef inline bint _short_varint(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t end, int64_t* out) noexcept nogil:
    cdef Py_ssize_t i = pos[0]
    cdef uint64_t z
    if i < end and p[i] < 0x80:
        z = p[i]
        pos[0] = i + 1
    elif i + 1 < end and p[i + 1] < 0x80:
        z = (p[i] & 0x7F) | (<uint64_t>p[i + 1] << 7)
        pos[0] = i + 2
    elif i + 2 < end and p[i + 2] < 0x80:
        z = (p[i] & 0x7F) | (<uint64_t>(p[i + 1] & 0x7F) << 7) | (<uint64_t>p[i + 2] << 14)
        pos[0] = i + 3
    else:
        return False
    out[0] = <int64_t>((z >> 1) ^ (-(<int64_t>(z & 1))))
    return True


cdef inline int _read_varint(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t end, int32_t* out) except -1:
    cdef int64_t v
    cdef uint64_t z
    if _short_varint(p, pos, end, &v):
        out[0] = <int32_t>v
        return 0
    _read_unsigned(p, pos, end, 5, 32, &z)
    out[0] = <int32_t>((z >> 1) ^ (-(<int64_t>(z & 1))))
    return 0


# The record loop's varints, returned by value with the position after them, so that the
# loop's position never has its address taken and stays in a register (issue 16: with
# ``&pos`` every varint stored it to the stack and loaded it back, on the chain of
# dependent loads that the walk from one record to the next is). The one- and two-byte
# ones (nearly every length and delta) in the loop itself; ``next`` is -1 for the rest,
# which _var_at reads (a fallback inlined here would make this too large to inline).
cdef struct _Var:
    Py_ssize_t next
    int64_t value


cdef inline _Var _loop_var(const uint8_t* p, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    cdef _Var v
    cdef uint32_t z
    v.next = -1
    v.value = 0
    if pos + 1 < end:
        if p[pos] < 0x80:
            z = p[pos]
            v.next = pos + 1
        elif p[pos + 1] < 0x80:
            z = (p[pos] & 0x7F) | (<uint32_t>p[pos + 1] << 7)
            v.next = pos + 2
        else:
            return v
        v.value = <int32_t>((z >> 1) ^ (-(z & 1)))
    return v


cdef inline int _read_varlong(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t end, int64_t* out) except -1:
    cdef uint64_t z
    if _short_varint(p, pos, end, out):
        return 0
    _read_unsigned(p, pos, end, 10, 64, &z)
    out[0] = <int64_t>((z >> 1) ^ (-(<int64_t>(z & 1))))
    return 0


cdef _Var _var_at(const uint8_t* p, Py_ssize_t pos, Py_ssize_t end, bint wide) except *:
    """Any varint at ``pos`` (a varlong when ``wide``), raising as _read_varint and _read_varlong do."""
    cdef _Var v
    cdef int32_t n
    if wide:
        _read_varlong(p, &pos, end, &v.value)
    else:
        _read_varint(p, &pos, end, &n)
        v.value = n
    v.next = pos
    return v


cdef inline int _uvarint_size(uint64_t z) noexcept nogil:
    cdef int n = 1
    while z > 0x7F:
        z >>= 7
        n += 1
    return n


cdef inline int _varint_size(int64_t v) noexcept nogil:
    return _uvarint_size((<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


cdef inline uint8_t* _write_uvarint(uint8_t* p, uint64_t z) noexcept nogil:
    while z > 0x7F:
        p[0] = <uint8_t>((z & 0x7F) | 0x80)
        p += 1
        z >>= 7
    p[0] = <uint8_t>z
    return p + 1


cdef inline uint8_t* _write_varint(uint8_t* p, int64_t v) noexcept nogil:
    return _write_uvarint(p, (<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


cdef inline Py_ssize_t _record_body_len(int64_t ts_delta, int64_t offset_delta, Py_ssize_t klen,
                                         Py_ssize_t vlen) noexcept nogil:
    """A v2 record's body up to its headers: attributes, the two deltas, key and value."""
    cdef Py_ssize_t n = 1 + _varint_size(ts_delta) + _varint_size(offset_delta)
    n += (_varint_size(klen) + klen) if klen >= 0 else 1
    n += (_varint_size(vlen) + vlen) if vlen >= 0 else 1
    return n


cdef inline uint8_t* _write_record_head(uint8_t* w, Py_ssize_t body_len, int64_t ts_delta, int64_t offset_delta,
                                        const uint8_t* kp, Py_ssize_t klen, const uint8_t* vp,
                                        Py_ssize_t vlen) noexcept nogil:
    """Write a v2 record up to its header count (BatchBuilder._append and _append_cells):
    its length, attributes, deltas, key and value; returns where the header count goes."""
    w = _write_varint(w, body_len)
    w[0] = 0
    w = _write_varint(w + 1, ts_delta)
    w = _write_varint(w, offset_delta)
    return _write_nullable(_write_nullable(w, kp, klen), vp, vlen)


cdef inline uint8_t* _write_nullable(uint8_t* w, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """A key's or value's length and bytes (length -1: null, no bytes)."""
    if n < 0:
        return _write_varint(w, -1)
    w = _write_varint(w, n)
    memcpy(w, p, n)
    return w + n


@cython.final
cdef class _View:
    """A borrowed C view of any bytes-like object, released when dropped."""
    cdef Py_buffer view
    cdef const uint8_t* ptr
    cdef Py_ssize_t size
    cdef bint held

    def __cinit__(self, object obj):
        PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE)
        self.held = True
        self.ptr = <const uint8_t*>self.view.buf
        self.size = self.view.len

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)


def encode_uvarint(long long value):
    if value < 0 or value > 0xFFFFFFFF:
        raise OverflowError(f"unsigned varint out of range: {value}")
    cdef uint8_t tmp[10]
    cdef uint8_t* end = _write_uvarint(tmp, <uint64_t>value)
    return PyBytes_FromStringAndSize(<char*>tmp, end - tmp)


def decode_uvarint(buf, Py_ssize_t pos=0):
    cdef _View v = _View(buf)
    cdef uint64_t z
    if pos < 0:
        raise _corrupt("negative position")
    _read_unsigned(v.ptr, &pos, v.size, 5, 32, &z)
    return z, pos


def encode_varint(long long value):
    if value < -2147483648 or value > 2147483647:
        raise OverflowError(f"varint out of range: {value}")
    cdef uint8_t tmp[10]
    cdef uint8_t* end = _write_varint(tmp, value)
    return PyBytes_FromStringAndSize(<char*>tmp, end - tmp)


def decode_varint(buf, Py_ssize_t pos=0):
    cdef _View v = _View(buf)
    cdef uint64_t z
    if pos < 0:
        raise _corrupt("negative position")
    _read_unsigned(v.ptr, &pos, v.size, 5, 32, &z)
    return <int32_t>((z >> 1) ^ (-(<int64_t>(z & 1)))), pos


def encode_varlong(value):
    cdef long long v
    try:
        v = value
    except OverflowError:
        raise OverflowError(f"varlong out of range: {value}") from None
    cdef uint8_t tmp[10]
    cdef uint8_t* end = _write_varint(tmp, v)
    return PyBytes_FromStringAndSize(<char*>tmp, end - tmp)


def decode_varlong(buf, Py_ssize_t pos=0):
    cdef _View v = _View(buf)
    cdef uint64_t z
    if pos < 0:
        raise _corrupt("negative position")
    _read_unsigned(v.ptr, &pos, v.size, 10, 64, &z)
    return <int64_t>((z >> 1) ^ (-(<int64_t>(z & 1)))), pos


def size_of_varint(long long value):
    if value < -2147483648 or value > 2147483647:
        raise OverflowError(f"varint out of range: {value}")
    return _varint_size(value)


def size_of_varlong(value):
    cdef long long v
    try:
        v = value
    except OverflowError:
        raise OverflowError(f"varlong out of range: {value}") from None
    return _varint_size(v)


# ---------------------------------------------------------------------------
# checksums and hashing
# ---------------------------------------------------------------------------

# The crc32c package's own function: no wrapper between the caller and the hardware CRC.
crc32c = _crc32c


def crc32(data, crc=0):
    return zlib.crc32(data, crc)


cdef inline int32_t _murmur2(const uint8_t* data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t m = 0x5BD1E995
    cdef uint32_t h = 0x9747B28C
    h ^= <uint32_t>length
    cdef uint32_t k
    cdef Py_ssize_t whole = length & ~3
    cdef Py_ssize_t i = 0
    while i < whole:
        k = data[i] | (<uint32_t>data[i + 1] << 8) | (<uint32_t>data[i + 2] << 16) | (<uint32_t>data[i + 3] << 24)
        k *= m
        k ^= k >> 24
        k *= m
        h *= m
        h ^= k
        i += 4
    cdef int tail = length & 3
    if tail == 3:
        h ^= <uint32_t>data[whole + 2] << 16
    if tail >= 2:
        h ^= <uint32_t>data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return <int32_t>h


def murmur2(data):
    cdef _View v = _View(data)
    return _murmur2(v.ptr, v.size)


def murmur2_partition(key, long long num_partitions):
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    cdef _View v = _View(key)
    return (_murmur2(v.ptr, v.size) & 0x7FFFFFFF) % num_partitions


# ---------------------------------------------------------------------------
# records and batches
# ---------------------------------------------------------------------------

# Not tracked by the cyclic GC: a record holds only ints, bytes, None and a tuple of
# (str, bytes) pairs, so it cannot be part of a cycle; tracking a million of them made the
# collector run a fifth of the decode time.
@cython.freelist(256)
@cython.no_gc
@cython.final
cdef class Record:
    """One decoded record (offset, timestamp, timestamp_type, key, value, headers); see ``_codec_py.Record``."""
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly int timestamp_type
    cdef readonly object key
    cdef readonly object value
    cdef readonly tuple headers

    def __init__(self, int64_t offset, int64_t timestamp, int timestamp_type, key, value, headers=()):
        if not (key is None or isinstance(key, bytes)) or not (value is None or isinstance(value, bytes)):
            raise TypeError("key and value must be bytes or None")
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers

    def __eq__(self, other):
        if not hasattr(other, "timestamp_type") or not hasattr(other, "headers"):
            return NotImplemented
        return (self.offset, self.timestamp, self.timestamp_type, self.key, self.value, self.headers) == (
            other.offset, other.timestamp, other.timestamp_type, other.key, other.value, other.headers)

    __hash__ = None

    def __repr__(self):
        return (
            f"Record(offset={self.offset!r}, timestamp={self.timestamp!r}, timestamp_type={self.timestamp_type!r}, "
            f"key={self.key!r}, value={self.value!r}, headers={self.headers!r})"
        )


# ---------------------------------------------------------------------------
# Record's object attributes as member descriptors (issue 16)
# ---------------------------------------------------------------------------
# Cython gives ``cdef readonly object`` attributes getset descriptors (a C getter per
# attribute). CPython 3.11's adaptive interpreter does not specialize LOAD_ATTR for a
# getset of an extension type, but does for a T_OBJECT_EX member descriptor
# (LOAD_ATTR_SLOT, as for a __slots__ class): reading r.key / r.value on 1000 records
# took 26.6 us through the getsets and 10.3 us as members. So at import we replace the
# getsets of the object fields (key, value, headers) with read-only member descriptors
# at the same struct offsets. The int fields keep Cython's getsets: CPython specializes
# only T_OBJECT_EX members, so a T_LONGLONG member would gain nothing.
# Behaviour is unchanged: the same values, read-only (assignment and deletion raise
# AttributeError, as Cython's readonly does), pickling and ``==`` go through the struct.
# The offsets come from offsetof() on the struct Cython generates for Record; its name
# is Cython's mangling of kproto._codec.Record. A different name fails the C compile,
# and _install_record_members() checks the result at import (ImportError otherwise).
cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
        int flags
        const char* doc
    int T_OBJECT_EX
    int READONLY

cdef extern from "Python.h":
    # Only the slots read here (a private name: the module declares PyTypeObject below too).
    ctypedef struct _MemberType "PyTypeObject":
        Py_ssize_t tp_basicsize
        void* tp_dict
    object PyDescr_NewMember(_MemberType* type, PyMemberDef* member)
    void PyType_Modified(_MemberType* type)

cdef extern from *:
    """
    #define KPROTO_RECORD_OFFSET(field) \
        ((Py_ssize_t)offsetof(struct __pyx_obj_6kproto_6_codec_Record, field))
    """
    Py_ssize_t KPROTO_RECORD_KEY "KPROTO_RECORD_OFFSET(key)"
    Py_ssize_t KPROTO_RECORD_VALUE "KPROTO_RECORD_OFFSET(value)"
    Py_ssize_t KPROTO_RECORD_HEADERS "KPROTO_RECORD_OFFSET(headers)"
    Py_ssize_t KPROTO_OBJECT_HEAD "((Py_ssize_t)sizeof(PyObject))"

# Static: the descriptors point into this array for the life of the process.
cdef PyMemberDef _record_members[3]


cdef _install_record_members():
    cdef _MemberType* tp = <_MemberType*>Record
    cdef Py_ssize_t offsets[3]
    offsets[:] = [KPROTO_RECORD_KEY, KPROTO_RECORD_VALUE, KPROTO_RECORD_HEADERS]
    cdef const char* names[3]
    names[:] = [b"key", b"value", b"headers"]  # C string literals: static
    sample = Record(7, 8, 1, b"k", b"v", (("h", b"x"),))
    expected = {name: getattr(sample, name) for name in ("key", "value", "headers")}
    type_dict = <object>tp.tp_dict
    cdef int i
    for i in range(3):
        if not (KPROTO_OBJECT_HEAD <= offsets[i] <= tp.tp_basicsize - <Py_ssize_t>sizeof(void*)):
            raise ImportError(f"kproto._codec: Record.{names[i].decode()} offset {offsets[i]} is "
                              f"outside the object ({tp.tp_basicsize} bytes)")
        _record_members[i].name = names[i]
        _record_members[i].type = T_OBJECT_EX
        _record_members[i].offset = offsets[i]
        _record_members[i].flags = READONLY
        _record_members[i].doc = NULL
        type_dict[names[i].decode()] = PyDescr_NewMember(tp, &_record_members[i])
    PyType_Modified(tp)
    # Fail loudly, never silently: each attribute must read what the getset read.
    for name, value in expected.items():
        if type(Record.__dict__[name]).__name__ != "member_descriptor" or getattr(sample, name) is not value:
            raise ImportError(f"kproto._codec: Record.{name} member descriptor reads the wrong field")


_install_record_members()


cdef class BatchHeader:
    """The header of one batch (v2 or legacy); see ``_codec_py.BatchHeader``."""
    cdef public int64_t base_offset
    cdef public int32_t last_offset_delta
    cdef public Py_ssize_t size
    cdef public int magic
    cdef public uint32_t crc
    cdef public int attributes
    cdef public int32_t partition_leader_epoch
    cdef public int64_t base_timestamp
    cdef public int64_t max_timestamp
    cdef public int64_t producer_id
    cdef public int producer_epoch
    cdef public int32_t base_sequence
    cdef public int32_t records_count

    @property
    def last_offset(self):
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self):
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self):
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self):
        if self.magic == 0:
            return -1
        return 1 if self.attributes & TIMESTAMP_TYPE_BIT else 0

    @property
    def is_transactional(self):
        return self.magic == 2 and bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self):
        return self.magic == 2 and bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self):
        return self.magic == 2 and bool(self.attributes & DELETE_HORIZON_BIT)

    def __repr__(self):
        return (f"{type(self).__name__}(magic={self.magic}, base_offset={self.base_offset}, "
                f"last_offset={self.last_offset}, records_count={self.records_count}, size={self.size})")


cdef class Batch(BatchHeader):
    """One batch of a record set, its records decoded on demand; see ``_codec_py.Batch``."""
    cdef public object _buf
    cdef public Py_ssize_t _start
    cdef public object _legacy

    def records(self):
        if self._legacy is not None:
            return list(self._legacy)
        cdef list out = []
        _decode_v2(self, INT64_MIN, out, None, False)
        return out

    def validate(self, require_keys=False):
        if self._legacy is None:
            _decode_v2(self, INT64_MIN, None, None, require_keys)
        elif require_keys:
            # Legacy records were parsed when the batch was read, by the twin's code.
            _twin._require_keys(self._legacy)

    def __iter__(self):
        return iter(self.records())




# Column buffers for decode_columnar, filled from the decode loop below.

# Raw write positions into a _Columns' buffers, for the decode loop: the record writer
# below works on C locals, not on the objects. Valid between _Columns.begin (after its
# ensure) and _Columns.commit; indexes are absolute (record i's offset is offsets[i]).
cdef struct _BinCursor:
    uint8_t* data
    int32_t* offsets
    uint8_t* validity
    Py_ssize_t n
    Py_ssize_t used
    Py_ssize_t nulls
    Py_ssize_t limit  # data may be put up to here (the buffer's spare room lies past it)

cdef struct _Cursor:
    int64_t* offsets
    int64_t* timestamps
    int32_t* ts_types
    int32_t* header_offsets
    Py_ssize_t count
    int32_t nheaders
    _BinCursor keys
    _BinCursor values


# Bytes a _BinCol's data buffer keeps spare past what it was asked to hold: room for the
# fixed-size copies of _put_value, which may write past a value's end.
cdef enum:
    _SPARE = 128

cdef extern from *:
    """
    /* n bytes copied in 16-byte moves: up to 15 more are read and written. */
    static inline __attribute__((always_inline)) void kproto_copy16(uint8_t* dst, const uint8_t* src, Py_ssize_t n) {
        for (Py_ssize_t k = 0; k < n; k += 16) memcpy(dst + k, src + k, 16);
    }
    """
    void _copy16 "kproto_copy16"(uint8_t* dst, const uint8_t* src, Py_ssize_t n) noexcept nogil
    void _prefetch_write "__builtin_prefetch"(const void* addr, int rw, int locality) noexcept nogil


cdef inline void _put_value(_BinCursor* c, const uint8_t* p, Py_ssize_t n, Py_ssize_t readable) noexcept nogil:
    """Append a value (n < 0: null); ``readable`` bytes from ``p`` may be read (>= n).

    The int32 offset may wrap past 2 GiB: commit refuses that.
    """
    cdef Py_ssize_t i = c.n
    cdef uint8_t* dst
    if i & 7 == 0:
        c.validity[i >> 3] = 0
    if n < 0:
        c.nulls += 1
    else:
        dst = c.data + c.used
        # Ask for the column's lines a kilobyte on, for writing: in a Spark task the column
        # buffers are out of the caches when a Fetch answer's decode starts (the JVM ran in
        # between), and each store to a line not there waits for it to be read in (a
        # decode of a 2 MiB answer after the caches were flushed: 6-9% less time).
        _prefetch_write(dst + 1024, 1, 3)
        # Keys and values are mostly short: 16-byte moves inline cost less than a call of
        # memcpy with a variable size (issue 16: memcpy had 8% of a source task's samples).
        # The bytes copied past the value land in the spare room, or where the next value
        # goes; the source bytes past it are checked readable.
        if n <= _SPARE and readable >= n + 16:
            _copy16(dst, p, n)
        else:
            memcpy(dst, p, n)
        c.used += n
        c.validity[i >> 3] |= <uint8_t>(1 << (i & 7))
    c.offsets[i + 1] = <int32_t>c.used
    c.n = i + 1


cdef inline void _put_record(_Cursor* c, int64_t offset, int64_t timestamp, int32_t ts_type, const uint8_t* key,
                             Py_ssize_t klen, const uint8_t* value, Py_ssize_t vlen, int32_t nheaders,
                             Py_ssize_t key_readable, Py_ssize_t value_readable) noexcept nogil:
    """Append a record (its headers went to the header columns before); ``*_readable``
    bytes may be read from ``key`` and ``value`` (see _put_value)."""
    cdef Py_ssize_t i = c.count
    c.offsets[i] = offset
    c.timestamps[i] = timestamp
    c.ts_types[i] = ts_type
    _put_value(&c.keys, key, klen, key_readable)
    _put_value(&c.values, value, vlen, value_readable)
    c.nheaders += nheaders
    c.header_offsets[i + 1] = c.nheaders
    c.count = i + 1


@cython.final
cdef class _Growable:
    """A bytearray filled from C through a raw pointer; trimmed to its length at the end.

    Callers ``ensure`` room once (per batch, from the batch header's bounds) and then
    write without further checks; the pointer is only valid until the next ``ensure``.
    """
    cdef bytearray buf
    cdef uint8_t* ptr
    cdef Py_ssize_t used
    cdef Py_ssize_t cap

    def __cinit__(self, Py_ssize_t cap):
        if cap < 64:
            cap = 64
        # Uninitialised storage: every byte up to ``used`` is written before it is read.
        self.buf = PyByteArray_FromStringAndSize(NULL, cap)
        self.ptr = <uint8_t*>PyByteArray_AS_STRING(self.buf)
        self.cap = cap
        self.used = 0

    cdef inline int ensure(self, Py_ssize_t n) except -1:
        cdef Py_ssize_t need = self.used + n
        cdef Py_ssize_t cap = self.cap
        if need > cap:
            while cap < need:
                cap *= 2
            PyByteArray_Resize(self.buf, cap)
            self.ptr = <uint8_t*>PyByteArray_AS_STRING(self.buf)
            self.cap = cap
        return 0

    cdef inline void put(self, const void* src, Py_ssize_t n) noexcept:
        memcpy(self.ptr + self.used, src, n)
        self.used += n

    cdef bytearray finish(self):
        PyByteArray_Resize(self.buf, self.used)
        self.cap = self.used
        return self.buf


@cython.final
cdef class _BinCol:
    """An Arrow binary column: int32 offsets, data, validity bitmap (LSB first)."""
    cdef _Growable offsets
    cdef _Growable data
    cdef _Growable validity
    cdef Py_ssize_t n
    cdef Py_ssize_t nulls

    def __cinit__(self, Py_ssize_t rows, Py_ssize_t data_cap):
        self.offsets = _Growable(4 * (rows + 1))
        self.data = _Growable(data_cap)
        self.validity = _Growable(rows // 8 + 1)
        cdef int32_t zero = 0
        self.offsets.put(&zero, 4)
        self.n = 0
        self.nulls = 0

    cdef inline int ensure(self, Py_ssize_t rows, Py_ssize_t data) except -1:
        self.offsets.ensure(4 * rows)
        self.data.ensure(data + _SPARE)
        self.validity.ensure(rows // 8 + 1)
        return 0

    cdef inline void begin(self, _BinCursor* c) noexcept:
        c.data = self.data.ptr
        c.offsets = <int32_t*>self.offsets.ptr
        c.validity = self.validity.ptr
        c.n = self.n
        c.used = self.data.used
        c.nulls = self.nulls
        c.limit = self.data.cap - _SPARE

    cdef inline int commit(self, _BinCursor* c) except -1:
        if c.used > INT32_MAX:
            raise OverflowError("record set too large for int32 Arrow offsets: decode it in parts")
        self.n = c.n
        self.nulls = c.nulls
        self.data.used = c.used
        self.offsets.used = 4 * (c.n + 1)
        self.validity.used = (c.n + 7) >> 3
        return 0

    cdef inline int add(self, const uint8_t* p, Py_ssize_t n) except -1:
        """Append a value (n < 0: null); room must have been ensured."""
        cdef _BinCursor c
        self.begin(&c)
        _put_value(&c, p, n, n)
        return self.commit(&c)


@cython.final
cdef class _Columns:
    cdef _BinCol keys, values, hkeys, hvals
    cdef _Growable offsets, timestamps, ts_types, header_offsets
    cdef Py_ssize_t count
    cdef int32_t nheaders

    def __cinit__(self, Py_ssize_t rows, Py_ssize_t data_cap):
        self.keys = _BinCol(rows, data_cap // 8)
        self.values = _BinCol(rows, data_cap)
        self.hkeys = _BinCol(0, 64)
        self.hvals = _BinCol(0, 64)
        self.offsets = _Growable(8 * rows)
        self.timestamps = _Growable(8 * rows)
        self.ts_types = _Growable(4 * rows)  # int32: Arrow's (and Spark's) timestampType, no cast
        self.header_offsets = _Growable(4 * (rows + 1))
        cdef int32_t zero = 0
        self.header_offsets.put(&zero, 4)
        self.count = 0
        self.nheaders = 0

    cdef int ensure(self, Py_ssize_t rows, Py_ssize_t data) except -1:
        """Room for ``rows`` more records whose keys and values total at most ``data`` bytes
        (with ``data`` 0, see :meth:`room`)."""
        self.offsets.ensure(8 * rows)
        self.timestamps.ensure(8 * rows)
        self.ts_types.ensure(4 * rows)
        self.header_offsets.ensure(4 * rows)
        self.keys.ensure(rows, data)
        self.values.ensure(rows, data)
        return 0

    cdef int room(self, _Cursor* c, Py_ssize_t klen, Py_ssize_t vlen) except -1:
        """Room in the key and value data for one more record, ``c`` pointed anew."""
        self.commit(c)
        self.keys.ensure(0, klen if klen > 0 else 0)
        self.values.ensure(0, vlen if vlen > 0 else 0)
        self.begin(c)
        return 0

    cdef inline int add_header(self, const uint8_t* key, Py_ssize_t klen, const uint8_t* value, Py_ssize_t vlen) except -1:
        self.hkeys.ensure(1, klen)
        self.hkeys.add(key, klen)
        self.hvals.ensure(1, vlen if vlen > 0 else 0)
        self.hvals.add(value, vlen)
        return 0

    cdef inline void begin(self, _Cursor* c) noexcept:
        """Point ``c`` at the ends of the buffers: room must have been ensured for what
        ``c`` will write (the pointers hold until the next ``ensure``)."""
        c.offsets = <int64_t*>self.offsets.ptr
        c.timestamps = <int64_t*>self.timestamps.ptr
        c.ts_types = <int32_t*>self.ts_types.ptr
        c.header_offsets = <int32_t*>self.header_offsets.ptr
        c.count = self.count
        c.nheaders = self.nheaders
        self.keys.begin(&c.keys)
        self.values.begin(&c.values)

    cdef inline int commit(self, _Cursor* c) except -1:
        """Take in what ``c`` wrote since :meth:`begin`."""
        self.count = c.count
        self.nheaders = c.nheaders
        self.offsets.used = 8 * c.count
        self.timestamps.used = 8 * c.count
        self.ts_types.used = 4 * c.count
        self.header_offsets.used = 4 * (c.count + 1)
        self.keys.commit(&c.keys)
        self.values.commit(&c.values)
        return 0

    cdef int add_object(self, Record r) except -1:
        cdef _View kv, vv
        cdef const uint8_t* kp = NULL
        cdef const uint8_t* vp = NULL
        cdef Py_ssize_t kn = -1, vn = -1
        if r.key is not None:
            kv = _View(r.key)
            kp, kn = kv.ptr, kv.size
        if r.value is not None:
            vv = _View(r.value)
            vp, vn = vv.ptr, vv.size
        cdef _Cursor c
        self.ensure(1, (kn if kn > 0 else 0) + (vn if vn > 0 else 0))
        self.begin(&c)
        _put_record(&c, r.offset, r.timestamp, r.timestamp_type, kp, kn, vp, vn, 0, kn, vn)
        return self.commit(&c)


cdef class _RecordTuples  # the consumer's records, below


cdef object _payload(Batch batch):
    # The record bytes of a v2 batch: a view of the input, or the decompressed bytes.
    view = memoryview(batch._buf)[batch._start + V2_HEADER: batch._start + batch.size]
    cdef int codec = batch.attributes & CODEC_MASK
    if codec == 0:
        return view
    try:
        return compression.decompress_view(codec, view, magic=2)
    except CorruptRecordError as exc:
        raise _corrupt(f"cannot decompress batch: {exc}", batch.base_offset, batch.base_offset + batch.last_offset_delta) from None




cdef extern from *:
    void __builtin_prefetch(const void* addr) noexcept nogil


cdef int _decode_v2(Batch batch, int64_t fetch_offset, list out, _Columns cols, bint require_keys,
                    _RecordTuples tuples=None) except -1:
    """Decode a v2 batch's records with offset >= fetch_offset into ``out`` or ``cols``.

    With both None nothing is built and every record is only checked (Batch.validate):
    checking and decoding are one walk, so they cannot disagree on what parses. Then
    ``require_keys`` refuses a null key, but only once the whole batch has parsed.
    """
    cdef _View v = _View(_payload(batch))
    cdef const uint8_t* p = v.ptr
    cdef Py_ssize_t end = v.size
    cdef Py_ssize_t pos = 0, rec_end
    cdef int32_t length, off_delta, klen, vlen, count, hklen, hvlen, i, h
    cdef int64_t ts_delta, offset, timestamp
    cdef bint log_append = batch.attributes & TIMESTAMP_TYPE_BIT
    cdef int ts_type = 1 if log_append else 0
    cdef int64_t base_offset = batch.base_offset
    cdef int64_t base_ts = batch.base_timestamp
    cdef int64_t max_ts = batch.max_timestamp
    cdef bint keyless = False  # a record with a null key was seen (only checking)
    cdef int64_t keyless_offset = 0  # the first such record's
    cdef object key, value, headers, hkey, hval, pair
    cdef _HeaderKeys keys = _HeaderKeys()
    cdef _Cursor cur
    if cols is not None:
        # A record takes at least 7 bytes: a bound on the rows of the whole batch, so the
        # loop below writes the fixed-width columns without checks. Keys and values are
        # given room as they come: the payload bounds their sum, but room for it in both
        # would regrow (and copy) the keys' buffer, which is mostly far smaller.
        cols.ensure(min(<Py_ssize_t>batch.records_count, end // 7 + 1), 0)
        cols.begin(&cur)
    cdef Record rec
    cdef Py_ssize_t key_pos, value_pos, hkey_pos
    cdef _Var vr
    try:
        for i in range(batch.records_count):
            # Ask for the bytes a dozen records on: the walk from one record to the next is a
            # chain of dependent loads (each length says where the next field starts), and
            # the hardware prefetcher falls behind it when the answer is not in the cache
            # (20-30% of the decode time of a fresh 2 MiB Fetch answer, issue 16). A hint
            # past the end of the batch is harmless: a prefetch never faults.
            __builtin_prefetch(p + pos + 1024)
            vr = _loop_var(p, pos, end)
            if vr.next < 0: vr = _var_at(p, pos, end, False)
            length = <int32_t>vr.value
            pos = vr.next
            if length < 0 or length > end - pos:
                raise _corrupt("record length runs past the batch")
            rec_end = pos + length
            pos += 1  # record attributes: unused
            vr = _loop_var(p, pos, end)
            if vr.next < 0: vr = _var_at(p, pos, end, True)
            ts_delta = vr.value
            pos = vr.next
            vr = _loop_var(p, pos, end)
            if vr.next < 0: vr = _var_at(p, pos, end, False)
            off_delta = <int32_t>vr.value
            pos = vr.next
            vr = _loop_var(p, pos, end)
            if vr.next < 0: vr = _var_at(p, pos, end, False)
            klen = <int32_t>vr.value
            pos = vr.next
            if klen < -1 or klen > rec_end - pos:
                raise _corrupt("bad key length")
            key_pos = pos
            if klen > 0:
                pos += klen
            vr = _loop_var(p, pos, end)
            if vr.next < 0: vr = _var_at(p, pos, end, False)
            vlen = <int32_t>vr.value
            pos = vr.next
            if vlen < -1 or vlen > rec_end - pos:
                raise _corrupt("bad value length")
            value_pos = pos
            if vlen > 0:
                pos += vlen
            vr = _loop_var(p, pos, end)
            if vr.next < 0: vr = _var_at(p, pos, end, False)
            count = <int32_t>vr.value
            pos = vr.next
            # A header takes at least 2 bytes (two length varints): a larger count is a lie,
            # and must be caught before anything is sized by it. (No division: cdivision
            # truncates a negative room towards 0, where the twin's // floors it.)
            if count < 0 or 2 * <int64_t>count > rec_end - pos:
                raise _corrupt("bad header count")
            if (off_delta > 0 and base_offset > INT64_MAX - off_delta) or (off_delta < 0 and base_offset < INT64_MIN - off_delta):
                raise _corrupt("record offset or timestamp overflows 64 bits")
            offset = base_offset + off_delta
            if log_append:
                timestamp = max_ts
            elif (ts_delta > 0 and base_ts > INT64_MAX - ts_delta) or (ts_delta < 0 and base_ts < INT64_MIN - ts_delta):
                raise _corrupt("record offset or timestamp overflows 64 bits")
            else:
                timestamp = base_ts + ts_delta
            if out is None:
                # Columnar (copy straight into the column buffers) or only checking: no objects.
                for h in range(count):
                    vr = _loop_var(p, pos, end)
                    if vr.next < 0: vr = _var_at(p, pos, end, False)
                    hklen = <int32_t>vr.value
                    pos = vr.next
                    if hklen < 0 or hklen > rec_end - pos:
                        raise _corrupt("bad header key length")
                    _check_utf8(p + pos, hklen)
                    hkey_pos = pos
                    pos += hklen
                    vr = _loop_var(p, pos, end)
                    if vr.next < 0: vr = _var_at(p, pos, end, False)
                    hvlen = <int32_t>vr.value
                    pos = vr.next
                    if hvlen < -1 or hvlen > rec_end - pos:
                        raise _corrupt("bad header value length")
                    if cols is not None and offset >= fetch_offset:
                        cols.add_header(p + hkey_pos, hklen, p + pos, hvlen)
                    if hvlen > 0:
                        pos += hvlen
                if pos != rec_end:
                    raise _corrupt("record length does not match its fields")
                if cols is None:
                    if klen < 0 and not keyless:
                        keyless = True
                        keyless_offset = offset
                elif offset >= fetch_offset:
                    if klen > cur.keys.limit - cur.keys.used or vlen > cur.values.limit - cur.values.used:
                        cols.room(&cur, klen, vlen)
                    _put_record(&cur, offset, timestamp, ts_type, p + key_pos, klen, p + value_pos, vlen, count,
                                end - key_pos, end - value_pos)
                continue
            headers = _EMPTY
            if count:
                headers = PyTuple_New(count)
                for h in range(count):
                    vr = _loop_var(p, pos, end)
                    if vr.next < 0: vr = _var_at(p, pos, end, False)
                    hklen = <int32_t>vr.value
                    pos = vr.next
                    if hklen < 0 or hklen > rec_end - pos:
                        raise _corrupt("bad header key length")
                    hkey = keys.get(p + pos, hklen)
                    pos += hklen
                    vr = _loop_var(p, pos, end)
                    if vr.next < 0: vr = _var_at(p, pos, end, False)
                    hvlen = <int32_t>vr.value
                    pos = vr.next
                    if hvlen < -1 or hvlen > rec_end - pos:
                        raise _corrupt("bad header value length")
                    if hvlen < 0:
                        hval = None
                    else:
                        hval = PyBytes_FromStringAndSize(<const char*>(p + pos), hvlen)
                        pos += hvlen
                    pair = (hkey, hval)
                    Py_INCREF(pair)
                    PyTuple_SET_ITEM(headers, h, pair)
            if pos != rec_end:
                raise _corrupt("record length does not match its fields")
            if offset < fetch_offset:
                continue
            if tuples is not None:  # the consumer's records (record_tuples below)
                tuples.add(out, offset, timestamp, ts_type,
                           None if klen < 0 else PyBytes_FromStringAndSize(<const char*>(p + key_pos), klen),
                           None if vlen < 0 else PyBytes_FromStringAndSize(<const char*>(p + value_pos), vlen),
                           headers)
                continue
            rec = Record.__new__(Record)
            rec.offset = offset
            rec.timestamp = timestamp
            rec.timestamp_type = ts_type
            rec.key = None if klen < 0 else PyBytes_FromStringAndSize(<const char*>(p + key_pos), klen)
            rec.value = None if vlen < 0 else PyBytes_FromStringAndSize(<const char*>(p + value_pos), vlen)
            rec.headers = headers
            PyList_Append(out, rec)
    except CorruptRecordError as exc:
        if exc.first_offset is None:
            raise _corrupt(str(exc.args[0]), batch.base_offset, batch.base_offset + batch.last_offset_delta) from None
        raise
    if pos != end:
        raise _corrupt("bytes left after the last record of the batch", batch.base_offset, batch.base_offset + batch.last_offset_delta)
    if cols is not None:
        cols.commit(&cur)
    if require_keys and keyless:
        raise _keyless(keyless_offset)
    return 0


@cython.final
cdef class _HeaderKeys:
    """The header-key strings of one batch, reused: records of a batch repeat their keys."""
    cdef list strs

    def __cinit__(self):
        self.strs = []

    cdef object get(self, const uint8_t* p, Py_ssize_t n):
        cdef const char* known
        cdef Py_ssize_t known_n
        for s in self.strs:
            known = PyUnicode_AsUTF8AndSize(s, &known_n)
            if known_n == n and memcmp(known, p, n) == 0:
                return s
        try:
            s = PyUnicode_DecodeUTF8(<const char*>p, n, NULL)
        except UnicodeDecodeError:
            raise _corrupt("header key is not UTF-8") from None
        if len(self.strs) < 16:
            self.strs.append(s)
        return s


cdef int _check_utf8(const uint8_t* p, Py_ssize_t n) except -1:
    # Plain ASCII (nearly every header key) needs no decoder call.
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] >= 0x80:
            try:
                PyUnicode_DecodeUTF8(<const char*>p, n, NULL)
            except UnicodeDecodeError:
                raise _corrupt("header key is not UTF-8") from None
            return 0
    return 0


cdef int _v2_fields(BatchHeader header, const uint8_t* b, Py_ssize_t size) except -1:
    """Fill ``header`` from the v2 header at ``b`` and check what needs no other byte: the
    one reader of the v2 header layout here (``_codec_py._v2_fields``)."""
    header.base_offset = _ld64(b + BASE_OFFSET)
    header.partition_leader_epoch = _ld32(b + LEADER_EPOCH)
    header.magic = b[MAGIC]
    header.crc = <uint32_t>_ld32(b + CRC)
    header.attributes = _ld16(b + ATTRIBUTES)
    header.last_offset_delta = _ld32(b + LAST_OFFSET_DELTA)
    header.base_timestamp = _ld64(b + BASE_TIMESTAMP)
    header.max_timestamp = _ld64(b + MAX_TIMESTAMP)
    header.producer_id = _ld64(b + PRODUCER_ID)
    header.producer_epoch = _ld16(b + PRODUCER_EPOCH)
    header.base_sequence = _ld32(b + BASE_SEQUENCE)
    header.records_count = _ld32(b + RECORDS_COUNT)
    header.size = size
    if header.records_count < 0:
        raise _corrupt(f"negative record count {header.records_count}", header.base_offset,
                       header.base_offset + header.last_offset_delta)
    if ((header.last_offset_delta >= 0 and header.base_offset > INT64_MAX - 1 - header.last_offset_delta)
            or (header.last_offset_delta < 0 and header.base_offset < INT64_MIN - 1 - header.last_offset_delta)):
        raise _corrupt("batch offsets overflow 64 bits", header.base_offset)
    if header.attributes & CODEC_MASK > 4:
        raise UnsupportedCompressionTypeError(f"compression codec id {header.attributes & CODEC_MASK}")
    return 0


cdef Batch _read_v2_header(object buf, const uint8_t* p, Py_ssize_t start, Py_ssize_t size, bint check_crc):
    cdef Batch batch = Batch.__new__(Batch)
    batch._buf = buf
    batch._start = start
    batch._legacy = None
    _v2_fields(batch, p + start, size)
    if check_crc and _crc32c(memoryview(buf)[start + ATTRIBUTES: start + size]) != batch.crc:
        raise _corrupt("CRC-32C mismatch", batch.base_offset, batch.base_offset + batch.last_offset_delta)
    return batch


@cython.final
cdef class _BatchIter:
    """Walks the batches of a record set; shared by every reader below."""
    cdef object buf
    cdef _View view
    cdef Py_ssize_t pos
    cdef bint check_crc

    def __cinit__(self, object buf, bint check_crc):
        self.buf = buf
        self.view = _View(buf)
        self.pos = 0
        self.check_crc = check_crc

    cdef object next_batch(self):
        """The next whole batch, or None at the end or before a partial batch."""
        cdef const uint8_t* p = self.view.ptr
        cdef Py_ssize_t end = self.view.size
        cdef Py_ssize_t pos = self.pos
        if end - pos <= LEADER_EPOCH + 4:  # nothing up to and including the magic byte
            return None
        cdef int64_t base_offset = _ld64(p + pos)
        cdef int32_t length = _ld32(p + pos + LENGTH)
        if length < 0:
            raise _corrupt(f"negative batch length {length}", base_offset)
        cdef Py_ssize_t size = <Py_ssize_t>length + LOG_OVERHEAD
        if size > end - pos:
            return None
        cdef int magic = p[pos + MAGIC]
        if magic == 2:
            if length < V2_MIN_LENGTH:
                raise _corrupt(f"batch length {length} below the v2 minimum", base_offset)
            batch = _read_v2_header(self.buf, p, pos, size, self.check_crc)
        elif magic == 0 or magic == 1:
            batch = _twin._read_legacy(self.buf, pos, size, self.check_crc, Record, Batch)
        else:
            raise _corrupt(f"unknown magic byte {magic}", base_offset)
        self.pos = pos + size
        return batch

    def __iter__(self):
        return self

    def __next__(self):
        batch = self.next_batch()
        if batch is None:
            raise StopIteration
        return batch


def read_batches(buf, check_crc=True):
    return _BatchIter(buf, check_crc)


cdef tuple _decode_set(object buf, int64_t fetch_offset, bint check_crc, list out, _Columns cols):
    """Decode the data records of a record set into ``out`` or ``cols``.

    Returns (next_offset, whole_bytes); control batches and records below fetch_offset
    are skipped and a partial trailing batch ignored, as decode_record_set documents.
    """
    cdef _BatchIter it = _BatchIter(buf, check_crc)
    cdef int64_t next_offset = fetch_offset
    cdef Py_ssize_t consumed = 0
    cdef Batch batch
    cdef Record r
    while True:
        obj = it.next_batch()
        if obj is None:
            break
        batch = <Batch>obj
        consumed += batch.size
        if batch.base_offset + batch.last_offset_delta + 1 > next_offset:
            next_offset = batch.base_offset + batch.last_offset_delta + 1
        if (batch.magic == 2 and batch.attributes & CONTROL_BIT) or batch.base_offset + batch.last_offset_delta < fetch_offset:
            continue
        if batch._legacy is None:
            _decode_v2(batch, fetch_offset, out, cols, False)
            continue
        for r in batch._legacy:
            if r.offset < fetch_offset:
                continue
            if cols is None:
                out.append(r)
            else:
                cols.add_object(r)
    return next_offset, consumed


def decode_record_set(buf, int64_t fetch_offset=0, check_crc=True):
    cdef list out = []
    next_offset, consumed = _decode_set(buf, fetch_offset, check_crc, out, None)
    return out, next_offset, consumed


# ---------------------------------------------------------------------------
# the consumer's records: a batch's records made as the consumer's tuples (issue 16)
# ---------------------------------------------------------------------------

cdef extern from "Python.h":
    object PyType_GenericAlloc(type t, Py_ssize_t nitems)
    void PyObject_GC_Track(void* o)
    void PyObject_GC_UnTrack(void* o)
    ctypedef struct PyTypeObject:
        Py_ssize_t tp_basicsize

cdef Py_ssize_t _TUPLE_SIZE = (<PyTypeObject*>tuple).tp_basicsize


cdef _check_record_class(type cls):
    # As _codec_py._check_record_class: tp_basicsize read from the type itself (a class can
    # shadow __basicsize__), and tuple.__new__ refuses a class whose C constructor is not
    # tuple's (a struct sequence: time.struct_time's instances hold more slots than
    # their visible fields, which its dealloc frees; 9 allocated here would crash).
    if issubclass(cls, tuple) and (<PyTypeObject*>cls).tp_basicsize == _TUPLE_SIZE:
        try:
            tuple.__new__(cls, ())
            return
        except TypeError:
            pass
    raise TypeError(f"record_tuples needs a tuple subclass without instance fields, not {cls!r}")


@cython.final
cdef class _RecordTuples:
    """Makes one batch's records as ``cls`` tuples (for _decode_v2 and legacy batches)."""
    cdef type cls
    cdef object topic, partition, epoch
    cdef object timestamp  # the last record's, shared by the next ones with the same
    cdef int64_t last_ts

    def __cinit__(self, type cls, topic, partition, epoch):
        self.cls, self.topic, self.partition, self.epoch = cls, topic, partition, epoch
        self.timestamp = None

    cdef int add(self, list out, int64_t offset, int64_t timestamp, int ts_type, object key, object value,
                 object headers) except -1:
        # As tuple.__new__(cls, fields) but in one allocation: cls adds no fields to tuple's.
        cdef object t = PyType_GenericAlloc(self.cls, 9)
        cdef object item
        Py_INCREF(self.topic)
        PyTuple_SET_ITEM(t, 0, self.topic)
        Py_INCREF(self.partition)
        PyTuple_SET_ITEM(t, 1, self.partition)
        item = offset
        Py_INCREF(item)
        PyTuple_SET_ITEM(t, 2, item)
        if self.timestamp is None or timestamp != self.last_ts:
            self.timestamp, self.last_ts = timestamp, timestamp
        Py_INCREF(self.timestamp)
        PyTuple_SET_ITEM(t, 3, self.timestamp)
        item = ts_type
        Py_INCREF(item)
        PyTuple_SET_ITEM(t, 4, item)
        Py_INCREF(key)
        PyTuple_SET_ITEM(t, 5, key)
        Py_INCREF(value)
        PyTuple_SET_ITEM(t, 6, value)
        Py_INCREF(headers)
        PyTuple_SET_ITEM(t, 7, headers)
        Py_INCREF(self.epoch)
        PyTuple_SET_ITEM(t, 8, self.epoch)
        # Not tracked by the cyclic GC (as Record): str, ints, bytes, None and a tuple of
        # (str, bytes) pairs cannot form a cycle, and tracking a tuple per record made the
        # collector walk every record of a poll again and again.
        PyObject_GC_UnTrack(<void*>t)
        PyList_Append(out, t)
        return 0


def record_tuples(Batch batch, type cls, topic, partition, int64_t fetch_offset=INT64_MIN):
    """``batch``'s records at or after ``fetch_offset`` as ``cls`` tuples; see ``_codec_py.record_tuples``."""
    _check_record_class(cls)
    if not isinstance(topic, str) or not isinstance(partition, int):
        raise TypeError("topic must be a str and partition an int")
    cdef _RecordTuples tuples = _RecordTuples(cls, topic, partition, batch.partition_leader_epoch)
    cdef list out = []
    cdef Record r
    # Each allocation counts towards a young-generation collection, which would walk the
    # list again every 700 records: it is out of the collector's sight meanwhile (holding
    # nothing it must see) and comes back into it when filled.
    PyObject_GC_UnTrack(<void*>out)
    try:
        if batch._legacy is None:
            _decode_v2(batch, fetch_offset, out, None, False, tuples)
        else:
            for r in batch._legacy:
                if r.offset >= fetch_offset:
                    tuples.add(out, r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)
    finally:
        PyObject_GC_Track(<void*>out)
    return out


# ---------------------------------------------------------------------------
# one batch header: read, rewrite, empty, validate (see the twin's docstrings)
# ---------------------------------------------------------------------------

BATCH_HEADER_SIZE = V2_HEADER


def read_batch_header(buf, Py_ssize_t pos=0):
    cdef _View v = _View(buf)
    cdef const uint8_t* p = v.ptr
    cdef Py_ssize_t end = v.size
    if pos < 0:
        raise ValueError(f"negative position {pos}")
    if end - pos <= MAGIC:
        return None
    cdef int64_t base_offset = _ld64(p + pos)
    cdef int32_t length = _ld32(p + pos + LENGTH)
    if length < 0:
        raise _corrupt(f"negative batch length {length}", base_offset)
    cdef int magic = p[pos + MAGIC]
    cdef BatchHeader header = BatchHeader.__new__(BatchHeader)
    if magic == 2:
        if length < V2_MIN_LENGTH:
            raise _corrupt(f"batch length {length} below the v2 minimum", base_offset)
        if end - pos < V2_HEADER:
            return None
        _v2_fields(header, p + pos, <Py_ssize_t>length + LOG_OVERHEAD)
    elif magic == 0 or magic == 1:
        # Legacy formats are not a hot path: the twin's reader of their head.
        # offset, size, crc u32, magic, attributes (+ timestamp i64 with magic 1)
        if end - pos < LOG_OVERHEAD + 6 + (8 if magic == 1 else 0):
            return None
        _twin._legacy_fields(header, buf, pos, <Py_ssize_t>length + LOG_OVERHEAD)
        if base_offset == INT64_MAX:
            raise _corrupt("message offset leaves no next offset", base_offset)
    else:
        raise _corrupt(f"unknown magic byte {magic}", base_offset)
    return header


cdef Py_ssize_t _whole_v2(const uint8_t* p, Py_ssize_t end) except -1:
    if end < V2_HEADER or p[MAGIC] != 2 or <Py_ssize_t>_ld32(p + LENGTH) + LOG_OVERHEAD != end:
        raise _corrupt("not one whole v2 record batch")
    return end


def rewrite_batch(buf, *, base_offset=None, partition_leader_epoch=None, attributes=None,
                  last_offset_delta=None, max_timestamp=None, producer_id=None, producer_epoch=None,
                  base_sequence=None):
    cdef _View v = _View(buf)
    cdef Py_ssize_t end = _whole_v2(v.ptr, v.size)
    # Range checks (and their messages) are the twin's: once per call, not per byte.
    field = _twin._field
    if base_offset is not None:
        field("base_offset", base_offset, 64)
    if partition_leader_epoch is not None:
        field("partition_leader_epoch", partition_leader_epoch, 32)
    if attributes is not None:
        field("attributes", attributes, 16)
    if last_offset_delta is not None:
        field("last_offset_delta", last_offset_delta, 32)
    if max_timestamp is not None:
        field("max_timestamp", max_timestamp, 64)
    if producer_id is not None:
        field("producer_id", producer_id, 64)
    if producer_epoch is not None:
        field("producer_epoch", producer_epoch, 16)
    if base_sequence is not None:
        field("base_sequence", base_sequence, 32)
    out = PyBytes_FromStringAndSize(<const char*>v.ptr, end)
    cdef uint8_t* b = <uint8_t*>PyBytes_AS_STRING(out)
    cdef bint under_crc = False
    if base_offset is not None:
        _st64(b + BASE_OFFSET, base_offset)
    if partition_leader_epoch is not None:
        _st32(b + LEADER_EPOCH, partition_leader_epoch)
    if attributes is not None:
        _st16(b + ATTRIBUTES, attributes)
        under_crc = True
    if last_offset_delta is not None:
        _st32(b + LAST_OFFSET_DELTA, last_offset_delta)
        under_crc = True
    if max_timestamp is not None:
        _st64(b + MAX_TIMESTAMP, max_timestamp)
        under_crc = True
    if producer_id is not None:
        _st64(b + PRODUCER_ID, producer_id)
        under_crc = True
    if producer_epoch is not None:
        _st16(b + PRODUCER_EPOCH, producer_epoch)
        under_crc = True
    if base_sequence is not None:
        _st32(b + BASE_SEQUENCE, base_sequence)
        under_crc = True
    if base_offset is not None or last_offset_delta is not None:
        _twin._offsets_fit(_ld64(b + BASE_OFFSET), _ld32(b + LAST_OFFSET_DELTA))
    if under_crc:
        _st32(b + CRC, _crc32c(memoryview(out)[ATTRIBUTES:]))
    return out


def empty_batch(header):
    if header.magic != 2:
        raise ValueError(f"an empty batch is a v2 batch, not magic {header.magic}")
    out = PyBytes_FromStringAndSize(NULL, V2_HEADER)
    cdef uint8_t* b = <uint8_t*>PyBytes_AS_STRING(out)
    _st64(b + BASE_OFFSET, header.base_offset)
    _st32(b + LENGTH, V2_MIN_LENGTH)
    _st32(b + LEADER_EPOCH, header.partition_leader_epoch)
    b[MAGIC] = 2
    _st16(b + ATTRIBUTES, header.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT))
    _st32(b + LAST_OFFSET_DELTA, header.last_offset_delta)
    _st64(b + BASE_TIMESTAMP, header.max_timestamp)
    _st64(b + MAX_TIMESTAMP, header.max_timestamp)
    _st64(b + PRODUCER_ID, header.producer_id)
    _st16(b + PRODUCER_EPOCH, header.producer_epoch)
    _st32(b + BASE_SEQUENCE, header.base_sequence)
    _st32(b + RECORDS_COUNT, 0)
    _st32(b + CRC, _crc32c(memoryview(out)[ATTRIBUTES:]))
    return out


def validate_batch(buf):
    cdef _BatchIter it = _BatchIter(buf, True)
    obj = it.next_batch()
    if obj is None or (<Batch>obj).size != it.view.size:
        raise _corrupt("expected exactly one whole record batch")
    cdef Batch batch = <Batch>obj
    _twin._check_produced(batch)
    cdef int quick = _walk_produced(batch)  # a record walk in C alone; -1: let _decode_v2 say why
    if quick >= 0:
        return batch, quick == 1
    try:
        _decode_v2(batch, INT64_MIN, None, None, True)
    except InvalidRecordError:  # a null key, raised only once every record parsed
        return batch, True
    return batch, False


# ---------------------------------------------------------------------------
# columnar decode
# ---------------------------------------------------------------------------

def decode_columnar(buf, int64_t fetch_offset=0, check_crc=True):
    cdef Py_ssize_t total = memoryview(buf).nbytes
    # Rows: a first guess (a record of this shape is ~64 bytes on the wire), not a bound.
    cdef _Columns cols = _Columns(total // 64 + 16, total)
    next_offset, consumed = _decode_set(buf, fetch_offset, check_crc, None, cols)
    out = _twin.Columns()
    out.count = cols.count
    out.next_offset = next_offset
    out.whole_bytes = consumed
    out.offsets = cols.offsets.finish()
    out.timestamps = cols.timestamps.finish()
    out.timestamp_types = cols.ts_types.finish()
    out.key_offsets, out.key_data, out.key_validity, out.key_nulls = cols.keys.offsets.finish(), cols.keys.data.finish(), cols.keys.validity.finish(), cols.keys.nulls
    out.value_offsets, out.value_data, out.value_validity, out.value_nulls = cols.values.offsets.finish(), cols.values.data.finish(), cols.values.validity.finish(), cols.values.nulls
    out.header_offsets = cols.header_offsets.finish()
    out.header_count = cols.nheaders
    out.header_key_offsets, out.header_key_data = cols.hkeys.offsets.finish(), cols.hkeys.data.finish()
    out.header_value_offsets, out.header_value_data = cols.hvals.offsets.finish(), cols.hvals.data.finish()
    out.header_value_validity, out.header_value_nulls = cols.hvals.validity.finish(), cols.hvals.nulls
    return out


Columns = _twin.Columns


# ---------------------------------------------------------------------------
# builder
# ---------------------------------------------------------------------------

cdef inline bint _bytes_view(object obj, str name, const uint8_t** ptr, Py_ssize_t* size, Py_buffer* held) except -1:
    """Point at the bytes of a key/value (size -1 for None); True when ``held`` must be released."""
    if obj is None:
        ptr[0] = NULL
        size[0] = -1
    elif PyBytes_CheckExact(obj):
        ptr[0] = <const uint8_t*>PyBytes_AS_STRING(obj)
        size[0] = PyBytes_GET_SIZE(obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        PyObject_GetBuffer(obj, held, PyBUF_SIMPLE)
        ptr[0] = <const uint8_t*>held.buf
        size[0] = held.len
        return True
    else:
        raise _twin._not_bytes(name, obj)
    return False


cdef extern from "Python.h":
    ctypedef struct _BytesObject "PyObject"
    # Grows or shrinks a bytes object that has no other reference (realloc: in place when it can).
    int _PyBytes_Resize(_BytesObject** bytes, Py_ssize_t newsize) except -1


@cython.final  # direct (inlinable) calls of _append and _reserve, no vtable
cdef class BatchBuilder:
    """Builds one record batch or legacy message set; see ``_codec_py.BatchBuilder``."""
    cdef readonly int magic
    cdef readonly int compression
    cdef readonly object compression_level
    cdef public int64_t base_offset
    cdef public int64_t producer_id
    cdef public int producer_epoch
    cdef public int32_t base_sequence
    cdef readonly bint is_transactional
    cdef readonly bint is_control
    cdef public int32_t partition_leader_epoch
    cdef readonly int timestamp_type
    cdef public Py_ssize_t max_bytes
    # The batch is written in place in one bytes object: header space, then the records.
    # build() fills the header and hands the object out (no copy of the records when they
    # are not compressed); a builder used again after that copies it first (_own).
    cdef object buf  # bytes of V2_HEADER + cap, owned by the builder alone (refcount 1), or None
    cdef object built  # what build() handed out last (then buf is None), or None
    cdef uint8_t* body  # the records: PyBytes_AS_STRING(buf) + V2_HEADER
    cdef Py_ssize_t used
    cdef Py_ssize_t cap
    cdef int32_t count
    cdef int64_t last_delta
    cdef int64_t first_ts
    cdef int64_t max_ts
    cdef object _legacy  # the twin's builder, for magic 0/1
    cdef uint8_t* faulted_body  # send_batch's path: body[:faulted] was faulted in (_fault_in)
    cdef Py_ssize_t faulted

    def __init__(self, int magic=2, int compression=0, compression_level=None, *, int64_t base_offset=0,
                 int64_t producer_id=-1, int producer_epoch=-1, int32_t base_sequence=-1,
                 bint is_transactional=False, bint is_control=False, int32_t partition_leader_epoch=-1,
                 int timestamp_type=0, Py_ssize_t max_bytes=0):
        if magic != 2:
            self._legacy = _twin.BatchBuilder(
                magic, compression, compression_level, base_offset=base_offset, producer_id=producer_id,
                producer_epoch=producer_epoch, base_sequence=base_sequence, is_transactional=is_transactional,
                is_control=is_control, partition_leader_epoch=partition_leader_epoch,
                timestamp_type=timestamp_type, max_bytes=max_bytes)
        if not 0 <= compression <= 4:
            raise UnsupportedCompressionTypeError(f"compression codec id {compression}")
        if timestamp_type not in (0, 1):
            raise ValueError(f"bad timestamp_type {timestamp_type} for magic {magic}")
        self.magic = magic
        self.compression = compression
        self.compression_level = compression_level
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self.timestamp_type = timestamp_type
        self.max_bytes = max_bytes
        self.used = 0
        self.count = 0
        self.last_delta = -1
        self.first_ts = -1
        self.max_ts = -1

    @property
    def record_count(self):
        if self._legacy is not None:
            return self._legacy.record_count
        return self.count

    def size_in_bytes(self):
        if self._legacy is not None:
            return self._legacy.size_in_bytes()
        return V2_HEADER + self.used

    @property
    def capacity(self):
        if self._legacy is not None:
            return self._legacy.capacity
        return V2_HEADER + self.cap

    cdef inline uint8_t* _reserve(self, Py_ssize_t n) except NULL:
        cdef Py_ssize_t need = self.used + n
        cdef Py_ssize_t cap = self.cap
        if need > cap or self.buf is None:
            if need > cap:
                cap = cap * 2 if cap else 1024
                while cap < need:
                    cap *= 2
                if self.max_bytes > 0:  # never past max_bytes, or the first record if bigger (see the twin)
                    cap = min(cap, max(self.max_bytes - V2_HEADER, need))
            self._own(cap)
        return self.body + self.used

    cdef int _own(self, Py_ssize_t cap) except -1:
        """Make ``buf`` hold ``cap`` bytes of records, the builder's alone: grown in place
        (realloc), or a copy of what build() handed out."""
        cdef _BytesObject* raw
        if self.buf is None:
            self.buf = PyBytes_FromStringAndSize(NULL, V2_HEADER + cap)
            if self.built is not None and self.used:
                memcpy(PyBytes_AS_STRING(self.buf) + V2_HEADER, PyBytes_AS_STRING(self.built) + V2_HEADER, self.used)
            self.built = None
        elif cap != self.cap:
            # _PyBytes_Resize needs the only reference: take it from self.buf.
            raw = <_BytesObject*><void*>self.buf
            Py_INCREF(self.buf)
            self.buf = None
            try:
                _PyBytes_Resize(&raw, V2_HEADER + cap)
            except MemoryError:
                self.body = NULL  # the old buffer is gone (freed by _PyBytes_Resize)
                self.cap = self.used = self.count = 0
                raise
            self.buf = <object><void*>raw
            Py_DECREF(self.buf)
        self.body = <uint8_t*>PyBytes_AS_STRING(self.buf) + V2_HEADER
        self.cap = cap
        return 0

    @cython.binding(False)  # a plain method: called without the cyfunction layer (the per-record call)
    @cython.embedsignature(True)
    @cython.embedsignature.format("clinic")  # so that inspect.signature still reads it
    def append(self, int64_t timestamp, key, value, headers=None, int64_t offset_delta=-1):
        if self._legacy is not None:
            return self._legacy.append(timestamp, key, value, headers, offset_delta)
        # The common case, bytes or None: no buffers to acquire and release.
        if (key is None or PyBytes_CheckExact(key)) and (value is None or PyBytes_CheckExact(value)):
            return self._append(
                timestamp,
                NULL if key is None else <const uint8_t*>PyBytes_AS_STRING(key), -1 if key is None else PyBytes_GET_SIZE(key),
                NULL if value is None else <const uint8_t*>PyBytes_AS_STRING(value), -1 if value is None else PyBytes_GET_SIZE(value),
                headers, offset_delta)
        cdef Py_buffer kbuf, vbuf
        cdef const uint8_t* kp
        cdef const uint8_t* vp
        cdef Py_ssize_t klen, vlen
        cdef bint kheld = _bytes_view(key, "key", &kp, &klen, &kbuf)
        cdef bint vheld = False
        try:
            vheld = _bytes_view(value, "value", &vp, &vlen, &vbuf)
            return self._append(timestamp, kp, klen, vp, vlen, headers, offset_delta)
        finally:
            if vheld:
                PyBuffer_Release(&vbuf)
            if kheld:
                PyBuffer_Release(&kbuf)

    cdef int64_t _append(self, int64_t timestamp, const uint8_t* kp, Py_ssize_t klen, const uint8_t* vp,
                         Py_ssize_t vlen, object headers, int64_t offset_delta) except -2:
        if offset_delta < 0:
            offset_delta = self.last_delta + 1
        elif offset_delta <= self.last_delta:
            raise ValueError(f"offset_delta {offset_delta} does not increase (last {self.last_delta})")
        if offset_delta > INT32_MAX:
            raise OverflowError(f"varint out of range: {offset_delta}")
        cdef int64_t base_ts = timestamp if self.count == 0 else self.first_ts
        cdef Py_ssize_t nheaders = 0
        cdef Py_ssize_t body_len = _record_body_len(timestamp - base_ts, offset_delta, klen, vlen)
        cdef list prepared = None
        cdef Py_ssize_t hklen, hvlen
        cdef const char* hkp
        if headers:
            prepared = []
            for hkey, hval in headers:
                if not PyUnicode_Check(hkey):
                    raise TypeError(f"header key must be str, not {type(hkey).__name__}")
                if hval is not None and not isinstance(hval, (bytes, bytearray, memoryview)):
                    raise _twin._not_bytes("header value", hval)
                hkp = PyUnicode_AsUTF8AndSize(hkey, &hklen)
                hval = None if hval is None else bytes(hval)
                hvlen = -1 if hval is None else PyBytes_GET_SIZE(hval)
                body_len += _varint_size(hklen) + hklen + ((_varint_size(hvlen) + hvlen) if hvlen >= 0 else 1)
                prepared.append((hkey, hval))
            nheaders = len(prepared)
        body_len += _varint_size(nheaders)
        if body_len > INT32_MAX:
            raise OverflowError("record too large for a varint length")
        cdef Py_ssize_t total = _varint_size(body_len) + body_len
        if self.max_bytes > 0 and self.count and V2_HEADER + self.used + total > self.max_bytes:
            return -1
        cdef uint8_t* w = _write_record_head(self._reserve(total), body_len, timestamp - base_ts, offset_delta,
                                             kp, klen, vp, vlen)
        w = _write_varint(w, nheaders)
        if nheaders:
            for hkey, hval in prepared:
                hkp = PyUnicode_AsUTF8AndSize(hkey, &hklen)
                w = _write_varint(w, hklen)
                memcpy(w, hkp, hklen)
                w += hklen
                if hval is None:
                    w = _write_varint(w, -1)
                else:
                    hvlen = PyBytes_GET_SIZE(hval)
                    w = _write_varint(w, hvlen)
                    memcpy(w, PyBytes_AS_STRING(hval), hvlen)
                    w += hvlen
        self.used += total
        if self.count == 0:
            self.first_ts = timestamp
            self.max_ts = timestamp
        elif timestamp > self.max_ts:
            self.max_ts = timestamp
        self.count += 1
        self.last_delta = offset_delta
        return offset_delta

    def append_columns(self, values, keys=None, headers=None, timestamps=None, int64_t timestamp=0, rows=None,
                       Py_ssize_t start=0, Py_ssize_t stop=-1):
        if self._legacy is not None:
            return self._legacy.append_columns(values, keys, headers, timestamps, timestamp, rows, start, stop)
        cdef _Cells vcol = _Cells(values, "value")
        cdef _Cells kcol = _Cells(keys, "key")
        cdef const int64_t[::1] ts_view
        cdef const int64_t[::1] row_view
        cdef bint has_ts = timestamps is not None
        cdef bint has_rows = rows is not None
        if has_ts:
            ts_view = timestamps
        if has_rows:
            row_view = rows
        if stop < 0:
            stop = row_view.shape[0] if has_rows else vcol.length
        cdef Py_ssize_t pos = start, i
        cdef int64_t ts, index
        cdef const uint8_t* kp
        cdef const uint8_t* vp
        cdef Py_ssize_t klen, vlen
        cdef object hdr = None
        cdef object kobj, vobj
        cdef bint full = False
        while pos < stop:
            if headers is None:
                # The records without headers whose key and value are bytes or None: in C,
                # without a call per record. It stops before any other record (the code
                # below takes that one, and says why it fails if it does).
                pos = self._append_cells(vcol, kcol, has_ts, &ts_view[0] if has_ts and ts_view.shape[0] else NULL,
                                         ts_view.shape[0] if has_ts else 0, timestamp, has_rows,
                                         &row_view[0] if has_rows and row_view.shape[0] else NULL,
                                         row_view.shape[0] if has_rows else 0, pos, stop, &full)
                if full or pos >= stop:
                    break
            i = _column_row(pos, has_rows, row_view.shape[0] if has_rows else 0, vcol.length, has_ts,
                            ts_view.shape[0] if has_ts else 0, &row_view[0] if has_rows and row_view.shape[0] else NULL)
            if has_ts:
                ts = ts_view[i]
            else:
                ts = timestamp
            if headers is not None:
                hdr = headers[i]
            if vcol.get(i, &vp, &vlen) and kcol.get(i, &kp, &klen):
                index = self._append(ts, kp, klen, vp, vlen, hdr, -1)
            else:  # an element that is not bytes or None: the general path, which also says why
                kobj = None if keys is None else keys[i]
                vobj = values[i]
                index = self.append(ts, kobj, vobj, hdr)
            if index < 0:
                break
            pos += 1
        return pos

    def reuse(self, list spares):
        if self._legacy is not None or self.count or self.used or not spares:
            return False
        cdef Py_ssize_t i = PyList_GET_SIZE(spares) - 1, size
        cdef _Cell* x
        while i >= 0:
            x = <_Cell*>PyList_GET_ITEM(spares, i)
            # Held by the list alone: no request, connection or caller can see it any more.
            if _cell_is_bytes(x) and _cell_refcnt(x) == 1 and _cell_size(x) > V2_HEADER:
                break
            i -= 1
        if i < 0:
            return False
        self.buf = spares.pop(i)
        self.built = None
        _forget_hash(self.buf)  # a bytes object caches its hash: it is new bytes now
        size = PyBytes_GET_SIZE(self.buf)
        self.body = <uint8_t*>PyBytes_AS_STRING(self.buf) + V2_HEADER
        self.cap = size - V2_HEADER
        return True

    cdef void _fault_in(self, Py_ssize_t end) noexcept:
        """Fault in the records' pages up to ``end`` and a step beyond it (_populate), as the
        records are about to be written there: only what is written, whatever was reserved."""
        if self.body != self.faulted_body:  # a new buffer (or one moved by realloc)
            self.faulted_body = self.body
            self.faulted = self.used
        cdef Py_ssize_t target = min(self.cap, max(end, self.faulted) + FAULT_STEP)
        if target > self.faulted:
            _populate(self.body + self.faulted, target - self.faulted)
            self.faulted = target

    cdef Py_ssize_t _append_cells(self, _Cells vcol, _Cells kcol, bint has_ts, const int64_t* ts, Py_ssize_t nts,
                                  int64_t timestamp, bint has_rows, const int64_t* rows, Py_ssize_t nrows,
                                  Py_ssize_t pos, Py_ssize_t stop, bint* full) except -1:
        """append_columns' loop for records without headers: rows[pos:stop] (pos:stop
        without rows) as _append would write them, until one is not bytes or None (or is
        too large for a varint length), the batch is full (``full`` set), or ``stop``.
        Returns the position reached. Raises append_columns' IndexErrors."""
        cdef Py_ssize_t i, klen, vlen, body_len, total, need
        cdef const uint8_t* kp
        cdef const uint8_t* vp
        cdef int64_t t, delta
        cdef uint8_t* w
        while pos < stop:
            i = _column_row(pos, has_rows, nrows, vcol.length, has_ts, nts, rows)
            if has_ts:
                t = ts[i]
            else:
                t = timestamp
            if not vcol.get(i, &vp, &vlen) or not kcol.get(i, &kp, &klen):
                return pos
            delta = self.last_delta + 1
            if self.count == 0:
                self.first_ts = self.max_ts = t
            body_len = _record_body_len(t - self.first_ts, delta, klen, vlen) + 1  # 1: no headers
            if delta > INT32_MAX or body_len > INT32_MAX:
                return pos  # _append raises OverflowError
            total = _varint_size(body_len) + body_len
            if self.max_bytes > 0 and self.count and V2_HEADER + self.used + total > self.max_bytes:
                full[0] = True
                return pos
            need = self.used + total
            if need > self.cap or self.buf is None:
                if self.count == 0 and self.max_bytes > 0:
                    # A batch's first record: room for as many more as the batch takes (one
                    # allocation, not a realloc per doubling) when the rows left fill it.
                    need = max(need, min(self.max_bytes - V2_HEADER, total * (stop - pos)))
                self._reserve(need - self.used)
            if self.used + total > self.faulted or self.body != self.faulted_body:
                self._fault_in(self.used + total)
            w = _write_record_head(self.body + self.used, body_len, t - self.first_ts, delta, kp, klen, vp, vlen)
            w[0] = 0  # no headers
            self.used += total
            if t > self.max_ts:
                self.max_ts = t
            self.count += 1
            self.last_delta = delta
            pos += 1
        return pos

    def build(self):
        if self._legacy is not None:
            return self._legacy.build()
        cdef object payload = None
        cdef int codec = self.compression if self.count else 0  # nothing to compress: say "none"
        cdef Py_ssize_t plen = self.used
        self._reserve(0)  # buf is ours (even when empty, or after an earlier build)
        if codec:
            packed = compression.compress(
                codec, memoryview(self.buf)[V2_HEADER:V2_HEADER + self.used], self.compression_level)
            if len(packed) < plen:
                payload = packed
                plen = PyBytes_GET_SIZE(payload)
            else:
                codec = 0
        cdef int attributes = codec
        if self.timestamp_type:
            attributes |= TIMESTAMP_TYPE_BIT
        if self.is_transactional:
            attributes |= TRANSACTIONAL_BIT
        if self.is_control:
            attributes |= CONTROL_BIT
        cdef object out
        if payload is None:
            # In place: the header goes before the records, and the object is handed out.
            self._own(self.used)  # no spare bytes (a shrinking realloc, in place)
            out = self.buf
            self.buf = None
            self.built = out
        else:
            out = PyBytes_FromStringAndSize(NULL, V2_HEADER + plen)
            memcpy(PyBytes_AS_STRING(out) + V2_HEADER, PyBytes_AS_STRING(payload), plen)
        cdef uint8_t* b = <uint8_t*>PyBytes_AS_STRING(out)
        _st64(b + BASE_OFFSET, self.base_offset)
        _st32(b + LENGTH, V2_HEADER - LOG_OVERHEAD + plen)
        _st32(b + LEADER_EPOCH, self.partition_leader_epoch)
        b[MAGIC] = 2
        _st16(b + ATTRIBUTES, attributes)
        _st32(b + LAST_OFFSET_DELTA, self.last_delta if self.last_delta > 0 else 0)
        _st64(b + BASE_TIMESTAMP, self.first_ts)
        _st64(b + MAX_TIMESTAMP, self.max_ts)
        _st64(b + PRODUCER_ID, self.producer_id)
        _st16(b + PRODUCER_EPOCH, self.producer_epoch)
        _st32(b + BASE_SEQUENCE, self.base_sequence)
        _st32(b + RECORDS_COUNT, self.count)
        _st32(b + CRC, _crc32c(memoryview(out)[ATTRIBUTES:]))
        return out


# -- send_batch: records from columns (issue 16, part "batch"; see the twin) ------------------

@cython.final
cdef class BinaryArray:
    """A column of bytes in Arrow's binary layout; see ``_codec_py.BinaryArray``."""
    cdef readonly Py_ssize_t length
    cdef readonly Py_ssize_t offset
    cdef readonly bint large
    cdef Py_buffer _o, _d, _v
    cdef bint _held_o, _held_d, _held_v
    cdef const uint8_t* op
    cdef const uint8_t* dp
    cdef const uint8_t* vp
    cdef Py_ssize_t dlen

    def __init__(self, Py_ssize_t length, offsets, data, validity=None, Py_ssize_t offset=0, bint large=False):
        if length < 0 or offset < 0:
            raise ValueError(f"bad length {length} or offset {offset}")
        cdef Py_ssize_t width = 8 if large else 4
        PyObject_GetBuffer(offsets, &self._o, PyBUF_SIMPLE)
        self._held_o = True
        if self._o.len < (offset + length + 1) * width:
            raise ValueError(f"the offsets buffer holds fewer than {offset + length + 1} offsets")
        PyObject_GetBuffer(data, &self._d, PyBUF_SIMPLE)
        self._held_d = True
        if validity is not None:
            PyObject_GetBuffer(validity, &self._v, PyBUF_SIMPLE)
            self._held_v = True
            if self._v.len * 8 < offset + length:
                raise ValueError(f"the validity bitmap holds fewer than {offset + length} bits")
            self.vp = <const uint8_t*>self._v.buf
        self.op = <const uint8_t*>self._o.buf
        self.dp = <const uint8_t*>self._d.buf
        self.dlen = self._d.len
        self.length = length
        self.offset = offset
        self.large = large

    def __dealloc__(self):
        if self._held_o:
            PyBuffer_Release(&self._o)
        if self._held_d:
            PyBuffer_Release(&self._d)
        if self._held_v:
            PyBuffer_Release(&self._v)

    cdef inline int64_t _at(self, Py_ssize_t j) noexcept:
        # Arrow buffers are little-endian.
        cdef const uint8_t* q
        cdef uint64_t x = 0
        cdef int k
        if self.large:
            q = self.op + 8 * j
            for k in range(7, -1, -1):
                x = (x << 8) | q[k]
            return <int64_t>x
        q = self.op + 4 * j
        return <int32_t>(<uint32_t>q[0] | (<uint32_t>q[1] << 8) | (<uint32_t>q[2] << 16) | (<uint32_t>q[3] << 24))

    cdef int get(self, Py_ssize_t i, const uint8_t** p, Py_ssize_t* n) except -1:
        """Point at row ``i`` (which the caller checked): NULL and -1 for a null."""
        cdef Py_ssize_t j = self.offset + i
        if self.vp != NULL and not (self.vp[j >> 3] & (1 << (j & 7))):
            p[0] = NULL
            n[0] = -1
            return 0
        cdef int64_t begin = self._at(j), end = self._at(j + 1)
        if not 0 <= begin <= end <= self.dlen:
            raise ValueError(f"row {i}'s offsets [{begin}, {end}) are outside the data buffer ({self.dlen} bytes)")
        p[0] = self.dp + begin
        n[0] = end - begin
        return 0

    def __len__(self):
        return self.length

    def __getitem__(self, Py_ssize_t i):
        if not 0 <= i < self.length:
            raise IndexError(f"row {i} is outside the column ({self.length} rows)")
        cdef const uint8_t* p
        cdef Py_ssize_t n
        self.get(i, &p, &n)
        return None if n < 0 else PyBytes_FromStringAndSize(<const char*>p, n)


cdef extern from *:
    """
    #include <sys/mman.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23  /* Linux 5.14+; elsewhere madvise refuses it (EINVAL) */
    #endif
    """
    int MADV_POPULATE_WRITE
    int _madvise "madvise"(void* addr, size_t length, int advice) nogil


cdef extern from *:
    """
    #if defined(__GNUC__)
    #pragma GCC diagnostic push
    #pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    #endif
    static inline void kproto_forget_hash(PyObject* o) { ((PyBytesObject*)o)->ob_shash = -1; }
    #if defined(__GNUC__)
    #pragma GCC diagnostic pop
    #endif
    """
    void _forget_hash "kproto_forget_hash"(object o)


cdef Py_ssize_t FAULT_STEP = 256 << 10  # bytes of a batch buffer faulted in ahead of its records


cdef inline void _populate(uint8_t* p, Py_ssize_t n) noexcept:
    """Fault in the whole pages of a new batch buffer at once, before the records are written
    into it: a fresh megabyte otherwise takes a page fault per 4 KiB as it is first written
    (in a VM, 30-50 ns per 100-B record; with madvise per 256 KiB, a third less). Only a
    hint: failure (an old kernel) changes nothing."""
    cdef uintptr_t start = (<uintptr_t>p + 4095) & ~(<uintptr_t>4095)
    cdef uintptr_t end = (<uintptr_t>p + <uintptr_t>n) & ~(<uintptr_t>4095)
    if n >= (64 << 10) and end > start:
        # With the GIL held: the caller holds borrowed pointers into a column another
        # thread could change meanwhile.
        _madvise(<void*>start, end - start, MADV_POPULATE_WRITE)


cdef extern from "Python.h":
    # A column's element by its borrowed pointer (the column holds it), without reference counting.
    ctypedef struct _Cell "PyObject"
    bint _cell_is_bytes "PyBytes_CheckExact"(_Cell*)
    char* _cell_bytes "PyBytes_AS_STRING"(_Cell*)
    Py_ssize_t _cell_size "PyBytes_GET_SIZE"(_Cell*)
    Py_ssize_t _cell_refcnt "Py_REFCNT"(_Cell*)


cdef enum _CellKind:
    CELLS_NONE, CELLS_LIST, CELLS_TUPLE, CELLS_ARROW, CELLS_OTHER


cdef inline Py_ssize_t _column_row(Py_ssize_t pos, bint has_rows, Py_ssize_t nrows, Py_ssize_t length,
                                   bint has_ts, Py_ssize_t nts, const int64_t* rows) except -1:
    """The column row of append_columns' position ``pos`` (``rows[pos]``, or ``pos`` without
    rows), checked against the rows, the columns' ``length`` and the timestamps: the one
    place both of its loops (the C one and the general one) raise their IndexErrors."""
    cdef Py_ssize_t i
    if has_rows:
        if not 0 <= pos < nrows:
            raise IndexError(f"position {pos} is outside rows ({nrows})")
        i = <Py_ssize_t>rows[pos]
    else:
        i = pos
    if not 0 <= i < length:
        raise IndexError(f"row {i} is outside the columns ({length} records)")
    if has_ts and i >= nts:
        raise IndexError(f"row {i} is outside timestamps ({nts})")
    return i


@cython.final
cdef class _Cells:
    """One key or value column, read row by row without Python calls where it can be."""
    cdef object column
    cdef str name
    cdef _CellKind kind
    cdef Py_ssize_t length
    cdef BinaryArray arrow

    def __cinit__(self, column, str name):
        self.column = column
        self.name = name
        if column is None:
            self.kind = CELLS_NONE
            self.length = 0
        else:
            self.length = len(column)
            if type(column) is list:
                self.kind = CELLS_LIST
            elif type(column) is tuple:
                self.kind = CELLS_TUPLE
            elif type(column) is BinaryArray:
                self.kind = CELLS_ARROW
                self.arrow = <BinaryArray>column
            else:
                self.kind = CELLS_OTHER

    cdef inline int get(self, Py_ssize_t i, const uint8_t** p, Py_ssize_t* n) except -1:
        """Point at row ``i``'s bytes (NULL, -1: None); 0 when it is another type (the caller
        takes the general path), 1 otherwise. IndexError past the column's end. The pointer
        is borrowed from the column: valid while it holds the element."""
        cdef _Cell* x
        if self.kind == CELLS_NONE:
            p[0] = NULL
            n[0] = -1
            return 1
        if i >= self.length:
            raise IndexError(f"row {i} is outside the {self.name} column ({self.length} entries)")
        if self.kind == CELLS_ARROW:
            self.arrow.get(i, p, n)
            return 1
        if self.kind == CELLS_LIST:
            x = <_Cell*>PyList_GET_ITEM(self.column, i)  # borrowed: no reference counting per row
        elif self.kind == CELLS_TUPLE:
            x = <_Cell*>PyTuple_GET_ITEM(self.column, i)
        else:
            return 0
        if x == <_Cell*><void*>None:
            p[0] = NULL
            n[0] = -1
            return 1
        if _cell_is_bytes(x):
            p[0] = <const uint8_t*>_cell_bytes(x)
            n[0] = _cell_size(x)
            return 1
        return 0

    cdef Py_ssize_t size(self, Py_ssize_t i) except -2:
        """Row ``i``'s length in bytes, -1 for None; TypeError for what is not bytes-like."""
        cdef const uint8_t* p
        cdef Py_ssize_t n
        if self.get(i, &p, &n):
            return n
        x = self.column[i]
        return -1 if x is None else _twin._length(self.name, x)


def largest_record(values, keys=None, headers=None):
    cdef _Cells vcol = _Cells(values, "value")
    cdef _Cells kcol = _Cells(keys, "key")
    cdef Py_ssize_t n = vcol.length, i, size, best = -1, best_size = -1
    if keys is not None and kcol.length != n:
        raise ValueError(f"keys has {kcol.length} entries for {n} values")
    if headers is not None and len(headers) != n:
        raise ValueError(f"headers has {len(headers)} entries for {n} values")
    for i in range(n):
        size = max(vcol.size(i), 0)
        if keys is not None:
            size += max(kcol.size(i), 0)
        if headers is not None:
            hdr = headers[i]
            if hdr:
                for hkey, hval in hdr:
                    if not PyUnicode_Check(hkey):
                        raise TypeError(f"header key must be str, not {type(hkey).__name__}")
                    size += len((<str>hkey).encode("utf-8"))
                    if hval is not None:
                        size += _twin._length("header value", hval)
        if size > best_size:
            best, best_size = i, size
    if n == 0:
        return (-1, 0)
    return (best, best_size)


def partition_rows(Py_ssize_t count, Py_ssize_t num_partitions, keys=None, partitions=None,
                   Py_ssize_t null_partition=-1):
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    cdef _Cells kcol = _Cells(keys, "key")
    cdef array.array chosen = array.clone(_INT64_ARRAY, count, zero=False)
    cdef long long* c = chosen.data.as_longlongs
    cdef Py_ssize_t i, p
    cdef const uint8_t* kp
    cdef Py_ssize_t klen
    for i in range(count):
        if partitions is not None:
            p = partitions[i]
        elif kcol.get(i, &kp, &klen):
            p = null_partition if kp == NULL else (_murmur2(kp, klen) & 0x7FFFFFFF) % num_partitions
        else:
            key = keys[i]
            if key is None:
                p = null_partition
            else:
                _twin._length("key", key)
                p = murmur2_partition(key, num_partitions)
        if not 0 <= p < num_partitions:
            raise ValueError(f"row {i}'s partition {p} is not in [0, {num_partitions})")
        c[i] = p
    counts = array.clone(_INT64_ARRAY, num_partitions, zero=True)
    cdef long long* cnt = (<array.array>counts).data.as_longlongs
    for i in range(count):
        cnt[c[i]] += 1
    fill = array.clone(_INT64_ARRAY, num_partitions, zero=False)
    cdef long long* f = (<array.array>fill).data.as_longlongs
    cdef int64_t total = 0
    runs = []
    for p in range(num_partitions):
        f[p] = total
        if cnt[p]:
            runs.append((p, total, total + cnt[p]))
        total += cnt[p]
    cdef array.array rows = array.clone(_INT64_ARRAY, count, zero=False)
    cdef long long* r = rows.data.as_longlongs
    for i in range(count):
        r[f[c[i]]] = i
        f[c[i]] += 1
    return rows, runs


for _name in ("encode_uvarint", "decode_uvarint", "encode_varint", "decode_varint", "encode_varlong",
              "decode_varlong", "size_of_varint", "size_of_varlong", "crc32", "murmur2",
              "murmur2_partition", "read_batches", "decode_record_set", "decode_columnar",
              "read_batch_header", "rewrite_batch", "empty_batch", "validate_batch", "largest_record",
              "partition_rows"):
    globals()[_name].__doc__ = getattr(_twin, _name).__doc__
del _name


# ---------------------------------------------------------------------------
# the producer's per-record path (issue 16 "produce": lock, bound, futures)
# ---------------------------------------------------------------------------

cdef extern from "Python.h":
    ctypedef struct PyObject
    # Only the slot we call: a type's __new__ in C, without the type call's __init__.
    ctypedef struct _NewSlot "PyTypeObject":
        object (*tp_new)(_NewSlot*, object, PyObject*)

cdef extern from *:
    """
    /* Whether ``o``, a record's future the appender made, is seen by nobody else: no
       reference but the appender's, no weak reference, no attribute set on it, still of
       the class it was made as (``t``), no finalizer. Then handing it out again for the
       next record is invisible to anyone. */
    static int kproto_unseen(PyObject *o, void *t_) {
        PyTypeObject *t = (PyTypeObject *)t_;
        if (Py_REFCNT(o) != 1 || Py_TYPE(o) != t || t->tp_finalize != NULL || t->tp_del != NULL)
            return 0;
        if (t->tp_weaklistoffset != 0 && *(PyObject **)((char *)o + t->tp_weaklistoffset) != NULL)
            return 0;
        if (t->tp_dictoffset != 0) {
            PyObject **dict = _PyObject_GetDictPtr(o);
            if (dict == NULL) {
                PyErr_Clear();
                return 0;
            }
            if (*dict != NULL)
                return 0;
        }
        return 1;
    }
    """
    bint _unseen "kproto_unseen"(PyObject* o, void* t)  # o borrowed: a reference of ours would count


cdef bint _reusable(type future_class):
    """Whether a future of ``future_class`` nobody sees any more may be handed out again:
    only when a fresh one would be no different. Not when the class makes its own
    (``__new__``: it runs per future) or has slots (_unseen cannot see their values)."""
    if (<_NewSlot*>future_class).tp_new != (<_NewSlot*>RecordRef).tp_new:
        return False
    for klass in future_class.__mro__:
        if klass is not RecordRef and klass is not object:
            slots = vars(klass).get("__slots__", ())
            names = {slots} if isinstance(slots, str) else set(slots)
            if not names <= {"__dict__", "__weakref__"}:
                return False
    return True


cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    int pthread_mutex_init(pthread_mutex_t* mutex, const void* attr)
    int pthread_mutex_destroy(pthread_mutex_t* mutex)
    int pthread_mutex_lock(pthread_mutex_t* mutex)
    int pthread_mutex_trylock(pthread_mutex_t* mutex)
    int pthread_mutex_unlock(pthread_mutex_t* mutex)

# A record's bytes beyond its key, value and headers, at most: its length, attributes,
# timestamp and offset deltas, key and value lengths and header count as varints (5 + 1 +
# 10 + 5 + 5 + 5 + 5); each header adds at most 10 to its key and value (two lengths).
cdef enum:
    RECORD_BOUND = 36
    HEADER_BOUND = 10

cdef tuple _NO_ARGS = ()


@cython.final
cdef class _AppendLock:
    """The appender's lock: a mutex the per-record path takes in C (a ``threading.Lock``
    is a Python call each way, and on Python 3.11 reads the clock at every acquire), with
    the ``threading.Lock`` methods its owner and a ``threading.Condition`` use."""
    cdef pthread_mutex_t _mutex
    cdef bint _held

    def __cinit__(self):
        pthread_mutex_init(&self._mutex, NULL)

    def __dealloc__(self):
        pthread_mutex_destroy(&self._mutex)

    cdef inline void take(self):
        if pthread_mutex_trylock(&self._mutex) != 0:
            with nogil:  # the holder may need the GIL to let go
                pthread_mutex_lock(&self._mutex)
        self._held = True

    cdef inline void give(self):
        self._held = False
        pthread_mutex_unlock(&self._mutex)

    def acquire(self, bint blocking=True, double timeout=-1):
        if timeout != -1:
            raise ValueError("the appender's lock takes no timeout")
        if not blocking:
            if pthread_mutex_trylock(&self._mutex) != 0:
                return False
            self._held = True
            return True
        self.take()
        return True

    def release(self):
        if not self._held:
            raise RuntimeError("release unlocked lock")
        self.give()

    def locked(self):
        return self._held

    def __enter__(self):
        self.take()
        return True

    def __exit__(self, *exc_info):
        self.give()


cdef class RecordRef:
    """A record's place in its batch; see ``_codec_py.RecordRef``."""
    cdef readonly object _batch
    cdef readonly int64_t _index
    cdef readonly int64_t _timestamp

    def __init__(self, batch, int64_t index, int64_t timestamp):
        # The Appender makes its futures without calling this (it sets the fields itself).
        self._batch = batch
        self._index = index
        self._timestamp = timestamp


cdef class OpenBatch:
    """What the Appender needs of a producer's batch; see ``_codec_py.OpenBatch``."""
    cdef public BatchBuilder builder
    cdef public object result
    cdef public Py_ssize_t size
    cdef public bint closed

    def __init__(self, BatchBuilder builder, result):
        self.builder = builder
        self.result = result
        self.size = 0
        self.closed = False


cdef inline OpenBatch _open_batch(list opened, Py_ssize_t partition):
    return <OpenBatch>opened[partition] if partition < len(opened) else None


cdef Py_ssize_t _headers_bound(object headers) except -1:
    """At most what ``headers`` add to a record (0 for a key or value of a wrong type:
    the builder refuses those)."""
    cdef Py_ssize_t n = 0
    cdef Py_ssize_t length
    for hkey, hval in headers:
        n += HEADER_BOUND
        if PyUnicode_Check(hkey):
            PyUnicode_AsUTF8AndSize(hkey, &length)
            n += length
        if hval is not None and isinstance(hval, (bytes, bytearray, memoryview)):
            n += len(hval)
    return n


@cython.final
cdef class Appender:
    """The producer's per-record path; see ``_codec_py.Appender``."""
    cdef object _policy
    cdef object _new_batch
    cdef object _future_class  # holds a reference, so that _future_type stays valid
    cdef _NewSlot* _future_type  # the same class, whose tp_new makes each record's future
    cdef object _wake
    cdef object _full
    cdef _AppendLock _lock
    cdef public Py_ssize_t buffer_memory
    cdef public Py_ssize_t used
    cdef public bint idle
    cdef public bint closed
    cdef public bint exhausted
    cdef dict _open
    cdef str _last_topic  # the topic of the last append and its list in _open: a run of sends
    cdef list _last_opened  # to one topic skips the dict lookup (lists are never replaced)
    cdef object _partitioner
    cdef object _chooser
    cdef bint _hash_keys
    cdef dict _sticky
    cdef dict _counts
    cdef object _key_serializer
    cdef object _value_serializer
    cdef Py_ssize_t _max_record
    cdef Py_ssize_t _batch_size
    cdef public object waiting
    cdef object _register
    cdef public bint hold
    cdef public unsigned long owner_thread  # 0, or the one thread that appends: no lock then (see the twin)
    cdef RecordRef _last  # the last record's future, handed out again when nobody else holds it (_unseen)
    cdef bint _reuse  # future_class allows that (_reusable)

    def __init__(self, policy):
        future_class = policy.future_class
        if not (isinstance(future_class, type) and issubclass(future_class, RecordRef)):
            raise TypeError(f"future_class must be a RecordRef subclass, not {future_class!r}")
        self._policy = policy
        self._future_class = future_class
        self._future_type = <_NewSlot*>future_class
        self._reuse = _reusable(future_class)
        self._new_batch = policy.new_batch
        self._wake = policy.wake
        self._full = policy.full
        self._lock = _AppendLock()
        self.buffer_memory = policy.buffer_memory
        self._partitioner = partitioner = policy.partitioner
        self._chooser = partitioner.chooser
        self._hash_keys = partitioner.hash_keys
        self._sticky = partitioner.sticky
        self._counts = policy.counts
        self._key_serializer = policy.key_serializer
        self._value_serializer = policy.value_serializer
        self._max_record = policy.max_record
        self._batch_size = policy.batch_size
        self.waiting = policy.waiting
        self._register = policy.register
        self.used = 0
        self.idle = True
        self.closed = False
        self.exhausted = False
        self.hold = False
        self.owner_thread = 0
        self._open = {}

    @property
    def lock(self):
        return self._lock

    @cython.binding(False)  # a plain method: called without the cyfunction layer (a producer's send)
    @cython.embedsignature(True)
    @cython.embedsignature.format("clinic")  # so that inspect.signature still reads it
    def send(self, str topic, value=None, key=None, partition=None, timestamp_ms=None, headers=None,
             on_delivery=None):
        record = None if self.hold else self.try_send(topic, value, key, partition, timestamp_ms, headers)
        if record is None:
            return self.waiting(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        if on_delivery is not None:
            self._register(record, on_delivery)
        return record

    cpdef object try_send(self, str topic, value=None, key=None, partition=None, timestamp_ms=None, headers=None):
        if self.closed:
            raise self._policy.closed_error()
        if key is not None and self._key_serializer is not None:
            key = self._key_serializer(key)
        if value is not None and self._value_serializer is not None:
            value = self._value_serializer(value)
        found = self._counts.get(topic)
        if found is None:
            return None
        cdef Py_ssize_t partitions = found
        cdef Py_ssize_t p
        if partition is None:
            p = -1 if self._chooser is None else self._chooser(topic, key, partitions)
        else:
            p = partition
            if not 0 <= p < partitions:
                raise self._partitioner.refuse(topic, partition, partitions)
        if headers is not None and not isinstance(headers, (list, tuple)):
            headers = list(headers.items())
        cdef timespec now
        cdef int64_t timestamp
        if timestamp_ms is None:
            clock_gettime(CLOCK_REALTIME, &now)  # time.time() without a Python call
            timestamp = <int64_t>now.tv_sec * 1000 + now.tv_nsec // 1000000
        else:
            timestamp = timestamp_ms
        return self._append_record(topic, p, partitions, timestamp, key, value, headers, self._need(key, value, headers))

    def append(self, str topic, Py_ssize_t partition, Py_ssize_t partitions, int64_t timestamp, key, value,
               headers=None):
        return self._append_record(topic, partition, partitions, timestamp, key, value, headers,
                                   self._need(key, value, headers))

    cdef Py_ssize_t _need(self, object key, object value, object headers) except -1:
        """The memory a record may take at most (with a new batch's header), checked
        against the largest record the policy allows."""
        cdef Py_ssize_t need = RECORD_BOUND + V2_HEADER
        # The bytes case in C alone: a conditional expression with the twin's call in it
        # would box both sides and add them as Python ints (two int objects per record).
        if value is not None:
            if PyBytes_CheckExact(value):
                need += PyBytes_GET_SIZE(value)
            else:
                need += <Py_ssize_t>_twin._length("value", value)
        if key is not None:
            if PyBytes_CheckExact(key):
                need += PyBytes_GET_SIZE(key)
            else:
                need += <Py_ssize_t>_twin._length("key", key)
        if headers:
            need += _headers_bound(headers)
        if need > self._max_record:
            self._policy.check_size(need)
        return need

    cdef object _append_record(self, str topic, Py_ssize_t partition, Py_ssize_t partitions, int64_t timestamp,
                               object key, object value, object headers, Py_ssize_t need):
        cdef bint sticky = False
        cdef bint wake
        cdef bint full = False
        cdef bint no_room = False
        cdef OpenBatch batch
        cdef BatchBuilder b
        cdef Py_ssize_t grown
        cdef object found
        cdef list opened
        cdef int64_t index = -1
        cdef bint locked = self.owner_thread == 0
        if locked:
            self._lock.take()
        elif PyThread_get_thread_ident() != self.owner_thread:
            raise self._policy.thread_error()
        try:
            if partition < 0:
                if key is not None and self._hash_keys:
                    if PyBytes_CheckExact(key):
                        if partitions <= 0:
                            raise ValueError(f"num_partitions must be positive, got {partitions}")
                        partition = (_murmur2(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
                                     & 0x7FFFFFFF) % partitions
                    else:
                        partition = murmur2_partition(key, partitions)
                else:
                    sticky = True
                    found = self._sticky.get(topic)
                    partition = -1 if found is None else <Py_ssize_t>found
                    if not 0 <= partition < partitions:
                        partition = self._partitioner.stick(topic, partitions)
            # A chooser's, a direct caller's or the partitioner's: the list below is indexed by it.
            if not 0 <= partition < partitions:
                raise self._partitioner.refuse(topic, partition, partitions)
            # Open batches by topic, then by partition in a list: no (topic, partition) tuple per record.
            if topic is self._last_topic:
                opened = self._last_opened
            else:
                opened = self._open.get(topic)
                if opened is None:
                    opened = self._open[topic] = []
                self._last_topic = topic
                self._last_opened = opened
            batch = _open_batch(opened, partition)
            if batch is not None and not batch.closed:
                index = self._try(batch, timestamp, key, value, headers)
                full = index < 0
            if index < 0:
                if sticky:
                    partition = self._partitioner.next_sticky(topic, partition, partitions)
                    if not 0 <= partition < partitions:
                        raise self._partitioner.refuse(topic, partition, partitions)
                    batch = _open_batch(opened, partition)
                    if batch is not None and not batch.closed:
                        index = self._try(batch, timestamp, key, value, headers)
                        full = full or index < 0
                if index < 0:
                    # A new batch takes max(batch.size, the record) (see the twin).
                    if self.used + (need if need > self._batch_size else self._batch_size) > self.buffer_memory:
                        no_room = self.exhausted = True
                    else:
                        batch = self._new_batch(topic, partition)
                        while len(opened) <= partition:
                            opened.append(None)
                        opened[partition] = batch
                        index = self._try(batch, timestamp, key, value, headers)
                        # It holds up to max(batch.size, this record): counted now, whole.
                        b = batch.builder
                        grown = V2_HEADER + (b.cap if b._legacy is None else b._legacy.capacity)
                        if grown < self._batch_size:
                            grown = self._batch_size
                        batch.size = grown
                        self.used += grown
            wake = self.idle and not no_room
            if wake:
                self.idle = False
        finally:
            if locked:
                self._lock.give()
        if full or no_room:
            self._full()  # a full batch need not linger; nor do open ones while memory is exhausted
        elif wake:
            self._wake()
        if no_room:
            return None  # it waits for room: buffer.memory is never exceeded
        # The last record's future again when nobody else can see it (its caller dropped it,
        # as a loop of sends does): no allocation and no deallocation per record. Safe
        # because the GIL is held from the check to the incref (the module declares that it
        # needs the GIL, so a free-threaded build turns it on). Else a new
        # one: tp_new alone, with no arguments to box and parse; the fields are set here.
        cdef RecordRef record
        if self._last is not None and self._reuse and _unseen(<PyObject*>self._last, self._future_type):
            record = self._last
        else:
            record = <RecordRef>self._future_type.tp_new(self._future_type, _NO_ARGS, NULL)
            self._last = record
        record._batch = batch.result
        record._index = index
        record._timestamp = timestamp
        return record

    cdef int64_t _try(self, OpenBatch batch, int64_t timestamp, object key, object value, object headers) except -2:
        cdef BatchBuilder b = batch.builder
        cdef int64_t index
        if b._legacy is None and (key is None or PyBytes_CheckExact(key)) and (value is None or PyBytes_CheckExact(value)):
            index = b._append(
                timestamp,
                NULL if key is None else <const uint8_t*>PyBytes_AS_STRING(key), -1 if key is None else PyBytes_GET_SIZE(key),
                NULL if value is None else <const uint8_t*>PyBytes_AS_STRING(value), -1 if value is None else PyBytes_GET_SIZE(value),
                headers, -1)
        else:
            index = b.append(timestamp, key, value, headers)
        if index < 0:
            batch.closed = True
            return -1
        return index


# ---------------------------------------------------------------------------
# broker produce validation (issue 16 "broker produce"): a stored batch without a copy,
# and the record walk of validate_batch
# ---------------------------------------------------------------------------

def stamped_head(buf, base_offset, partition_leader_epoch):
    cdef _View v = _View(buf)
    _whole_v2(v.ptr, v.size)
    _twin._offsets_fit(_twin._field("base_offset", base_offset, 64), _ld32(v.ptr + LAST_OFFSET_DELTA))
    _twin._field("partition_leader_epoch", partition_leader_epoch, 32)
    out = PyBytes_FromStringAndSize(<const char*>v.ptr, MAGIC)
    cdef uint8_t* b = <uint8_t*>PyBytes_AS_STRING(out)
    _st64(b + BASE_OFFSET, base_offset)
    _st32(b + LEADER_EPOCH, partition_leader_epoch)
    return out


stamped_head.__doc__ = _twin.stamped_head.__doc__


def uninitialized_bytes(Py_ssize_t size):
    if size < 0:
        raise ValueError(f"negative size {size}")
    return PyBytes_FromStringAndSize(NULL, size)


uninitialized_bytes.__doc__ = _twin.uninitialized_bytes.__doc__


def millis_to_micros(buf):
    cdef _View v = _View(buf)
    if v.size % 8:
        raise ValueError(f"{v.size} bytes are not int64 values")
    cdef Py_ssize_t n = v.size // 8, i
    cdef int64_t hi = _twin._MICROS_MAX_MS, lo = _twin._MICROS_MIN_MS  # the twin's bounds, Arrow's
    out = PyByteArray_FromStringAndSize(NULL, v.size)
    cdef int64_t* o = <int64_t*>PyByteArray_AS_STRING(out)
    cdef int64_t t
    cdef bint out_of_range = False
    # No branch in the loop (the compiler may vectorise it); which value, only on an error.
    for i in range(n):
        memcpy(&t, v.ptr + 8 * i, 8)
        out_of_range |= (t > hi) | (t < lo)
        o[i] = <int64_t>(<uint64_t>t * 1000u)  # unsigned: no undefined behaviour when it wraps
    if out_of_range:
        for i in range(n):
            memcpy(&t, v.ptr + 8 * i, 8)
            if t > hi or t < lo:
                raise OverflowError(f"timestamp {t} ms does not fit int64 microseconds")
    return out


millis_to_micros.__doc__ = _twin.millis_to_micros.__doc__


# The Produce path's record walk (validate_batch): the checks of _decode_v2's checking pass
# on an uncompressed batch, in C alone with no exception machinery, for the common shapes
# (varints of up to 3 bytes, ASCII header keys). Anything else, valid or not, is -1:
# _decode_v2 then walks the batch again and gives the verdict and its error, so that the
# two walks never disagree on what is accepted (tests/codec/test_differential.py).

cdef int _walk_produced(Batch batch) except -2:
    """1 when every record of an uncompressed v2 batch parses and one has a null key, 0
    when they parse and none has, -1 when this walk cannot tell (see above)."""
    if batch.attributes & CODEC_MASK:
        return -1
    cdef _View v = _View(batch._buf)
    cdef const uint8_t* p = v.ptr + batch._start + V2_HEADER
    cdef Py_ssize_t end = batch.size - V2_HEADER
    cdef int32_t count = batch.records_count
    cdef int64_t base_offset = batch.base_offset
    cdef int64_t base_ts = batch.base_timestamp
    cdef bint log_append = batch.attributes & TIMESTAMP_TYPE_BIT
    cdef int result
    with nogil:
        result = _walk_records(p, end, count, base_offset, base_ts, log_append)
    return result


cdef int _walk_records(const uint8_t* p, Py_ssize_t end, int32_t count, int64_t base_offset, int64_t base_ts,
                       bint log_append) noexcept nogil:
    cdef Py_ssize_t pos = 0, rec_end, j
    cdef int64_t length, ts_delta, off_delta, klen, vlen, headers, hklen, hvlen
    cdef int32_t i, h
    cdef int keyless = 0
    for i in range(count):
        if not _short_varint(p, &pos, end, &length) or length < 0 or length > end - pos:
            return -1
        rec_end = pos + length
        pos += 1  # record attributes: unused
        if not _short_varint(p, &pos, end, &ts_delta) or not _short_varint(p, &pos, end, &off_delta):
            return -1
        if not _short_varint(p, &pos, end, &klen) or klen < -1 or klen > rec_end - pos:
            return -1
        if klen > 0:
            pos += klen
        elif klen < 0:
            keyless = 1
        if not _short_varint(p, &pos, end, &vlen) or vlen < -1 or vlen > rec_end - pos:
            return -1
        if vlen > 0:
            pos += vlen
        if not _short_varint(p, &pos, end, &headers) or headers < 0 or 2 * headers > rec_end - pos:
            return -1
        if (off_delta > 0 and base_offset > INT64_MAX - off_delta) or (off_delta < 0 and base_offset < INT64_MIN - off_delta):
            return -1
        if not log_append and ((ts_delta > 0 and base_ts > INT64_MAX - ts_delta) or (ts_delta < 0 and base_ts < INT64_MIN - ts_delta)):
            return -1
        for h in range(headers):
            if not _short_varint(p, &pos, end, &hklen) or hklen < 0 or hklen > rec_end - pos:
                return -1
            for j in range(pos, pos + hklen):
                if p[j] >= 0x80:
                    return -1  # maybe UTF-8, maybe not: _decode_v2 decodes it
            pos += hklen
            if not _short_varint(p, &pos, end, &hvlen) or hvlen < -1 or hvlen > rec_end - pos:
                return -1
            if hvlen > 0:
                pos += hvlen
        if pos != rec_end:
            return -1
    if pos != end:
        return -1
    return keyless
