# cython: language_level=3
# cython: freethreading_compatible = True
"""The checksum encoder compiled: the bytes of `scenarios.checksum.RunningChecksum`'s layout, built in one C
buffer.

Why: a server folds every value it receives into its checksum on the critical path of every round, in the
process that also gathers, and the Python encoder's per-value dispatch is a visible share of a cheap env step
(a CartPole result: an observation array, a float, a bool). This one writes the same bytes with exact-type
checks and C packing, and hands everything else (subclasses, numpy scalars, dicts, rare types) to the Python
encoder (`scenarios.checksum._encode`), so there is one definition of the layout and this is only its fast path.
``tests/scenarios/test_checksum_encoder.py`` checks both against hashlib over the documented bytes.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.string cimport memcpy
from libc.stdint cimport uint32_t

cimport numpy as cnp
import sys
import zlib

import numpy as np

cnp.import_array()

cdef object _crc32 = zlib.crc32
cdef type _ndarray = np.ndarray
cdef bint _little = sys.byteorder == "little"
#: the Python encoder for everything this module does not handle itself (set by scenarios.checksum)
cdef object _fallback = None

#: array headers (``f"{dtype.str}{shape}"``) of recently seen (dtype object, shape) pairs; the dtype objects
#: are held, so an identity match can never be a recycled address. One ``(dtype, shape, header)`` tuple per
#: slot, replaced whole: threads encoding at once (free-threaded builds) never see a torn entry
cdef enum:
    HEADER_SLOTS = 8
cdef list _heads = [(None, None, b"")] * HEADER_SLOTS
cdef int _head_next = 0


def set_fallback(encode) -> None:
    """Install the Python encoder ``encode(value, pieces: list)`` for values this module passes on."""
    global _fallback
    _fallback = encode


cdef class _Buffer:
    """A growable byte buffer (one allocation per few calls instead of one bytes object per piece)."""

    cdef char* data
    cdef Py_ssize_t size, cap

    def __cinit__(self):
        self.cap = 1024
        self.size = 0
        self.data = <char*>PyMem_Malloc(self.cap)
        if self.data == NULL:
            raise MemoryError()

    def __dealloc__(self):
        PyMem_Free(self.data)

    cdef int add(self, const char* src, Py_ssize_t n) except -1:
        cdef Py_ssize_t need = self.size + n
        cdef char* grown
        if need > self.cap:
            while self.cap < need:
                self.cap *= 2
            grown = <char*>PyMem_Realloc(self.data, self.cap)
            if grown == NULL:
                raise MemoryError()
            self.data = grown
        memcpy(self.data + self.size, src, n)
        self.size = need
        return 0

    cdef int add_bytes(self, bytes b) except -1:
        return self.add(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))

    cdef int add_u32(self, uint32_t v) except -1:
        cdef unsigned char le[4]
        le[0] = v & 0xFF
        le[1] = (v >> 8) & 0xFF
        le[2] = (v >> 16) & 0xFF
        le[3] = (v >> 24) & 0xFF
        return self.add(<char*>le, 4)


cdef bytes _header(cnp.ndarray arr):
    """``f"{dtype.str}{shape}"`` of a C-contiguous array, from the small identity cache when it repeats."""
    global _head_next
    cdef object obj = arr
    cdef object dtype = obj.dtype
    cdef tuple shape = obj.shape
    cdef int i
    cdef tuple entry
    for i in range(HEADER_SLOTS):
        entry = <tuple>_heads[i]
        if entry[0] is dtype and entry[1] == shape:
            return <bytes>entry[2]
    head = f"{dtype.str}{shape}".encode()
    i = _head_next % HEADER_SLOTS
    _heads[i] = (dtype, shape, head)
    _head_next = (i + 1) % HEADER_SLOTS
    return head


cdef int _enc_array(_Buffer buf, object value) except -1:
    cdef cnp.ndarray arr = <cnp.ndarray>value
    if not (cnp.PyArray_IS_C_CONTIGUOUS(arr) and cnp.PyArray_NDIM(arr) > 0):
        arr = np.ascontiguousarray(arr)
    buf.add_bytes(_header(arr))
    if cnp.PyArray_SIZE(arr) == 0:
        buf.add_u32(0)  # crc32(b"")
    else:
        buf.add_u32(<uint32_t>_crc32(arr))
    return 0


cdef int _enc_int(_Buffer buf, object value) except -1:
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(value, &overflow)
    cdef unsigned char out[17]
    cdef unsigned long long u
    cdef int i
    if overflow != 0:
        buf.add_bytes(b"i" + int(value).to_bytes(16, "little", signed=True))
        return 0
    out[0] = b"i"
    u = <unsigned long long>v
    for i in range(8):
        out[1 + i] = (u >> (8 * i)) & 0xFF
    for i in range(8):
        out[9 + i] = 0xFF if v < 0 else 0
    return buf.add(<char*>out, 17)


cdef int _enc_float(_Buffer buf, double v) except -1:
    cdef unsigned char out[9]
    cdef unsigned char* p = <unsigned char*>&v
    cdef int i
    out[0] = b"f"
    for i in range(8):
        out[1 + i] = p[i] if _little else p[7 - i]
    return buf.add(<char*>out, 9)


cdef int _enc_len(_Buffer buf, bytes tag, Py_ssize_t n) except -1:
    buf.add_bytes(tag)
    return buf.add_bytes(str(n).encode())


cdef int _enc(_Buffer buf, object value) except -1:
    cdef type t = type(value)
    cdef list pieces
    if t is _ndarray:
        return _enc_array(buf, value)
    if t is float:
        return _enc_float(buf, <double>value)
    if t is bool:
        return buf.add(b"?1" if value is True else b"?0", 2)
    if t is int:
        return _enc_int(buf, value)
    if t is tuple or t is list:
        _enc_len(buf, b"(", len(value))
        for item in value:
            _enc(buf, item)
        return 0
    if value is None:
        return buf.add(b"N", 1)
    if t is bytes:
        _enc_len(buf, b"s", len(<bytes>value))
        buf.add_bytes(b":")
        return buf.add_bytes(<bytes>value)
    if t is str:
        data = (<str>value).encode()
        _enc_len(buf, b"s", len(data))
        buf.add_bytes(b":")
        return buf.add_bytes(data)
    # dicts, subclasses, numpy scalars: the Python encoder (one definition of the layout)
    pieces = []
    _fallback(value, pieces)
    return buf.add_bytes(b"".join(pieces))


def encode_many(values) -> bytes:
    """The concatenated checksum bytes of ``values`` in order (exactly what the Python encoder gives)."""
    if _fallback is None:
        raise RuntimeError("scenarios._checksum: no fallback encoder installed (import scenarios.checksum)")
    cdef _Buffer buf = _Buffer()
    for value in values:
        _enc(buf, value)
    return PyBytes_FromStringAndSize(buf.data, buf.size)


def encode(value) -> bytes:
    """The checksum bytes of one value."""
    return encode_many((value,))


cdef int _add_piece(_Buffer buf, object piece) except -1:
    """One encoding of ``join``: a C-contiguous array's bytes copied straight from its data (without exporting a
    buffer, which costs about as much as the rest of a CartPole gather), anything else through
    ``bytes(memoryview(piece))``."""
    cdef cnp.ndarray arr
    if type(piece) is _ndarray and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>piece):
        arr = <cnp.ndarray>piece
        return buf.add(<const char*>cnp.PyArray_DATA(arr), cnp.PyArray_NBYTES(arr))
    if type(piece) is bytes:
        return buf.add_bytes(<bytes>piece)
    return buf.add_bytes(bytes(memoryview(piece)))


def join(pieces) -> bytes:
    """``b"".join(pieces)`` for the encodings a server folds (`scenarios.checksum.digest` results: read-only uint8
    arrays, often views over shared memory)."""
    cdef _Buffer buf = _Buffer()
    for piece in pieces:
        _add_piece(buf, piece)
    return PyBytes_FromStringAndSize(buf.data, buf.size)


def join_attached(results, Py_ssize_t width) -> bytes:
    """The encodings of ``results`` in order, where a result of ``width`` items carries its values' encoding as its
    last item (`scenarios.checksum.digest`, computed where it was produced) and any other result is a sequence of
    the values themselves, encoded here (``encode_many(result)``): the same bytes either way. Why compiled: a
    server gathers a whole bank's results on every round's critical path, and picking each result's last item
    in Python cost about as much as folding them."""
    cdef _Buffer buf = _Buffer()
    if width < 1:
        raise ValueError("a result carries its encoding as its last item: width at least 1")
    for result in results:
        if type(result) is tuple and PyTuple_GET_SIZE(result) == width:
            _add_piece(buf, <object>PyTuple_GET_ITEM(result, width - 1))
        elif type(result) is not tuple and len(result) == width:  # a list, a read-only list
            _add_piece(buf, result[width - 1])
        else:
            if _fallback is None:
                raise RuntimeError("scenarios._checksum: no fallback encoder installed (import scenarios.checksum)")
            for value in result:
                _enc(buf, value)
    return PyBytes_FromStringAndSize(buf.data, buf.size)
