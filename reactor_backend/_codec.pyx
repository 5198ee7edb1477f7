# cython: language_level=3, boundscheck=False, wraparound=False
# cython: freethreading_compatible = True
"""The compiled hot paths of shared-memory slots (``transport.py`` lays values out in them).

Why this exists: an environment step's ``(obs, reward, terminated, truncated)`` crosses processes
every round, once per environment. Written with ``struct`` and numpy calls, each field costs
around a microsecond of interpreter work, more than the copy itself; here a write is one type check
and one store or ``memcpy`` per field, and a read builds the tuple straight from the bytes.

A ``RecordCodec`` is bound to one layout in one mapped segment: per field, its kind (None, float,
int, bool or array), its byte offset, and for arrays the dtype and shape. A bare float, int or bool
(an agent's action, a count) is a record of one field that is not wrapped (``BARE``): it crosses in
8 bytes instead of a pickle. The transport builds one
when it lays a record out (writer) or decodes the layout's descriptor (reader) and drops it when the
layout changes; a value that no longer fits the layout makes ``write`` return 0 and the transport
lays it out again.

``SlotHotWriter`` and ``SlotHotReader`` are a slot's ``write`` and ``round``/``read``: while a slot's
value keeps its layout (every round of a benchmark, every step of an environment) a write is a type
and shape check, the copy and the round stamp, and a read compares the header's layout counter and
returns the view, the copy or the record, with no Python frame; anything else goes to the
transport's Python (``slow``), which lays the value out or decodes the header and re-arms the hot
path.
"""
cimport numpy as cnp
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.stdint cimport int64_t
from libc.string cimport memcpy

cdef extern from *:
    """
    #include <string.h>
    /* a float object holding exactly the bits of x (so that refill keeps it) */
    static inline int rb_float_bits_equal(PyObject *o, double x) {
        return Py_IS_TYPE(o, &PyFloat_Type) && memcmp(&((PyFloatObject *)o)->ob_fval, &x, sizeof(double)) == 0;
    }
    """
    bint rb_float_bits_equal(PyObject *o, double x)

cdef extern from "Python.h":
    void Py_DecRef(PyObject *o)
    int PyObject_GC_IsTracked(object o)
    void PyObject_GC_Track(object o)

import numpy as np

from reactor_backend.readonly import ReadOnlyList

cdef type _ro_list = ReadOnlyList  # C-level names: no module-global and attribute lookup per write
cdef type _ndarray = np.ndarray

cnp.import_array()

cdef enum FieldKind:
    F_NONE = 0
    F_FLOAT = 1
    F_INT = 2
    F_BOOL = 3
    F_ARRAY = 4

_KIND_OF_TAG = {"n": F_NONE, "f": F_FLOAT, "i": F_INT, "b": F_BOOL, "a": F_ARRAY}

#: bytes a scalar field takes in the data area (every field starts 8-byte aligned)
SCALAR_BYTES = 8
cdef enum Container:  # C constants: a module global is a dict lookup and an int compare per use
    C_LIST = 0
    C_TUPLE = 1
    C_BARE = 2

#: what holds a record's fields: a list, a tuple, or nothing (one bare scalar is the value itself)
LIST, TUPLE, BARE = C_LIST, C_TUPLE, C_BARE


cdef class RecordCodec:
    """Write or read one flat record layout at fixed offsets of a mapped segment.

    ``container``: ``LIST``, ``TUPLE`` or ``BARE`` (one float, int or bool field that is the value
    itself). ``fields``: per field ``("n",)``, ``("f",)``, ``("i",)``, ``("b",)`` or
    ``("a", dtype_str, shape, nbytes)``; ``offsets``: each field's byte offset in ``buf``.
    ``copy``: a reader that returns its own arrays instead of read-only views.
    """
    # attributes: _codec.pxd (descrs keeps the dtypes that cdescrs points to alive)

    def __cinit__(self):
        self.have_buf = False

    def __init__(self, buf, int container, fields, offsets, bint copy=False):
        cdef int i, d
        cdef Py_ssize_t end
        if len(fields) > MAX_FIELDS or len(fields) != len(offsets):
            raise ValueError(f"a record has at most {MAX_FIELDS} fields, each with an offset")
        if container not in (LIST, TUPLE, BARE):
            raise ValueError(f"unknown record container {container}")
        if container == BARE and (len(fields) != 1 or fields[0][0] not in ("f", "i", "b")):
            raise ValueError("a bare record is one float, int or bool field")
        PyObject_GetBuffer(buf, &self.pybuf, PyBUF_SIMPLE)
        self.have_buf = True
        self.base = <char*>self.pybuf.buf
        self.n = len(fields)
        self.container = container
        self.copy = copy
        self.descrs = [None] * self.n
        self.arrays = [None] * self.n
        for i, (f, off) in enumerate(zip(fields, offsets)):
            kind = _KIND_OF_TAG[f[0]]
            self.kinds[i] = kind
            self.offs[i] = off
            if kind == F_ARRAY:
                dtype = np.dtype(f[1])
                shape = tuple(f[2])
                if len(shape) > MAX_NDIM:
                    raise ValueError(f"an array field has at most {MAX_NDIM} dimensions")
                self.nbytes[i] = f[3]
                self.ndims[i] = len(shape)
                for d in range(len(shape)):
                    self.dims[i][d] = shape[d]
                self.descrs[i] = dtype
                self.cdescrs[i] = <cnp.PyArray_Descr*>dtype
                end = off + f[3]
            else:
                self.nbytes[i] = 0
                end = off + (SCALAR_BYTES if kind != F_NONE else 0)
            if off < 0 or end > self.pybuf.len:
                raise ValueError("a record field lies beyond the end of its segment")
            if kind == F_ARRAY:
                self.arrays[i] = _array_over(buf, self.descrs[i], tuple(f[2]), off)

    def __dealloc__(self):
        if self.have_buf:
            PyBuffer_Release(&self.pybuf)
            self.have_buf = False

    cpdef int write(self, value) except -2:
        """Store ``value`` at the layout's offsets. 1: written; 0: ``value`` does not have this
        layout (nothing to rely on was written); -1: an int beyond 64 bits (pickle it instead)."""
        cdef Py_ssize_t i
        cdef int done
        if self.container == C_BARE:
            return self._write_field(0, value)
        if self.container == C_TUPLE:
            if type(value) is not tuple:
                return 0
        elif type(value) is not list and type(value) is not _ro_list:  # a reader forwarding what it got
            return 0
        if len(value) != self.n:
            return 0
        for i in range(self.n):
            done = self._write_field(i, value[i])
            if done != 1:
                return done
        return 1

    cdef int _write_field(self, Py_ssize_t i, object x) except -2:
        """Field ``i`` of ``write``: 1 written, 0 not of its kind, -1 an int beyond 64 bits."""
        cdef int kind = self.kinds[i]
        cdef int overflow = 0
        cdef long long v
        if kind == F_FLOAT:
            if type(x) is not float:
                return 0
            (<double*>(self.base + self.offs[i]))[0] = PyFloat_AS_DOUBLE(x)
        elif kind == F_INT:
            if type(x) is not int:
                return 0
            v = PyLong_AsLongLongAndOverflow(x, &overflow)
            if overflow:
                return -1
            (<long long*>(self.base + self.offs[i]))[0] = v
        elif kind == F_BOOL:
            if type(x) is not bool:
                return 0
            (<long long*>(self.base + self.offs[i]))[0] = 1 if x is True else 0
        elif kind == F_NONE:
            if x is not None:
                return 0
        elif not self._write_array(i, x):
            return 0
        return 1

    cdef bint _write_array(self, Py_ssize_t i, object x) except -1:
        cdef cnp.ndarray a
        cdef cnp.PyArray_Descr* have
        cdef int d
        if type(x) is not _ndarray:
            return False
        a = <cnp.ndarray>x
        if cnp.PyArray_NDIM(a) != self.ndims[i]:
            return False
        for d in range(self.ndims[i]):
            if cnp.PyArray_DIMS(a)[d] != self.dims[i][d]:
                return False
        have = cnp.PyArray_DESCR(a)
        if have != self.cdescrs[i] and not cnp.PyArray_EquivTypes(a.dtype, <cnp.dtype>self.descrs[i]):
            return False
        if self.nbytes[i] == 0:
            return True
        if cnp.PyArray_IS_C_CONTIGUOUS(a):
            memcpy(self.base + self.offs[i], cnp.PyArray_DATA(a), self.nbytes[i])
        else:  # a strided view (a slice, a transpose): numpy gathers it into place
            np.copyto(self.arrays[i], a, casting="no")
        return True

    cpdef read(self):
        """The record as a tuple or list (a bare one: its scalar): scalars decoded, arrays as
        read-only arrays over the segment, the same objects on every read (or copies, for a ``copy`` reader)."""
        cdef Py_ssize_t i
        if self.container == C_BARE:
            return self._field(0)
        cdef bint as_tuple = self.container == C_TUPLE
        cdef object vals = PyTuple_New(self.n) if as_tuple else PyList_New(self.n)
        cdef object v
        for i in range(self.n):
            v = self._field(i)
            Py_INCREF(v)  # the SET_ITEM macros steal a reference
            if as_tuple:
                PyTuple_SET_ITEM(vals, i, v)
            else:
                PyList_SET_ITEM(vals, i, v)
        if as_tuple:
            self.last = vals
        return vals

    cpdef int refill(self, tuple t) except -1:
        """Store the record's current fields into ``t``, the tuple `read` returned last, in place: for a caller
        that knows nothing else references ``t`` (the core's import of a round's results: no tuple and no float
        to allocate and free per result and round). Items that are still right stay (the same array views, a
        float with the same bits, the bools)."""
        cdef Py_ssize_t i
        cdef PyObject *old
        cdef object v
        cdef double x
        if t is not self.last or self.container != C_TUPLE or PyTuple_GET_SIZE(t) != self.n:
            raise ValueError("refill takes the tuple this codec's read returned last")
        for i in range(self.n):
            old = PyTuple_GET_ITEM(t, i)
            if self.kinds[i] == F_FLOAT:
                x = (<double*>(self.base + self.offs[i]))[0]
                if rb_float_bits_equal(old, x):
                    continue
                v = x
            else:
                v = self._field(i)
                if <PyObject*> v == old:
                    continue
            Py_INCREF(v)
            PyTuple_SET_ITEM(t, i, v)
            Py_DecRef(old)
        if not PyObject_GC_IsTracked(t):  # the collector may untrack a tuple of atoms; an array may be in it now
            PyObject_GC_Track(t)
        return 0

    cdef object _field(self, Py_ssize_t i):
        """Field ``i`` decoded: a scalar from its 8 bytes, an array as the segment's own read-only array, the
        same object every round (a new view per read shows the same bytes and costs an allocation per field
        and round), or its copy for a ``copy`` reader."""
        cdef int kind = self.kinds[i]
        if kind == F_FLOAT:
            return (<double*>(self.base + self.offs[i]))[0]
        if kind == F_INT:
            return (<long long*>(self.base + self.offs[i]))[0]
        if kind == F_BOOL:
            return (<long long*>(self.base + self.offs[i]))[0] != 0
        if kind == F_ARRAY:
            return self.arrays[i].copy() if self.copy else self.arrays[i]
        return None


def _array_over(buf, dtype, tuple shape, Py_ssize_t offset):
    """An array of ``dtype``/``shape`` over ``buf`` at ``offset`` (read-only if ``buf`` is); an
    empty one owns its (empty) memory and is made read-only."""
    cdef Py_ssize_t size = 1
    for s in shape:
        size *= s
    if size == 0 or dtype.itemsize == 0:
        arr = np.empty(shape, dtype=dtype)
        arr.flags.writeable = False
        return arr
    return np.frombuffer(buf, dtype=dtype, count=size, offset=offset).reshape(shape)


cdef int64_t* _header_words(Py_buffer* view, object buf, Py_ssize_t offset) except NULL:
    """The slot header's first two words (round stamp, layout counter) at ``offset`` of ``buf``."""
    PyObject_GetBuffer(buf, view, PyBUF_WRITABLE)
    if offset < 0 or offset + 16 > view.len:
        PyBuffer_Release(view)
        raise ValueError("a slot header lies beyond the end of the header table")
    return <int64_t*>(<char*>view.buf + offset)


cdef class _SlotHeader:
    """What both hot paths hold: the slot header's words (a buffer on the header table), the
    transport's Python for everything else (``slow``) and what is laid out or decoded (``mode``)."""
    def __cinit__(self):
        self.have_hdr = False

    cdef int _attach(self, object hdr_buf, Py_ssize_t offset, object slow) except -1:
        self.words = _header_words(&self.hdr, hdr_buf, offset)
        self.have_hdr = True
        self.slow = slow
        self.mode = 0
        return 0

    def __dealloc__(self):
        if self.have_hdr:
            PyBuffer_Release(&self.hdr)
            self.have_hdr = False


cdef class SlotHotWriter(_SlotHeader):
    """``transport.SlotWriter.write``: the layout laid out last (``lay_none``, ``lay_array``,
    ``lay_record``) written in place and stamped; anything else to ``slow(value, round_)``.
    ``mode``: 0 nothing laid out, 1 None, 2 array, 3 record."""
    # attributes (_codec.pxd): dst, the array over the segment for an array (None when it has no bytes), and
    # descr, its dtype; ndim, dims, data, nbytes: its layout; rec: a record's codec

    def __init__(self, hdr_buf, Py_ssize_t offset, slow):
        self._attach(hdr_buf, offset, slow)

    def clear(self) -> None:
        """Nothing is laid out (a new segment, a pickled value, or the writer closes)."""
        self.mode = 0
        self.dst = self.descr = self.rec = None

    def lay_none(self) -> None:
        self.clear()
        self.mode = 1

    def lay_array(self, cnp.ndarray like, dst) -> None:
        """Arrays of ``like``'s dtype and shape, copied into ``dst`` (C-contiguous, over the segment;
        None when they have no bytes)."""
        cdef int d
        if cnp.PyArray_NDIM(like) > MAX_NDIM:
            raise ValueError(f"at most {MAX_NDIM} dimensions")
        self.clear()
        self.descr = like.dtype
        self.ndim = cnp.PyArray_NDIM(like)
        for d in range(self.ndim):
            self.dims[d] = cnp.PyArray_DIMS(like)[d]
        self.nbytes = cnp.PyArray_NBYTES(like)
        if self.nbytes:
            if dst is None or not cnp.PyArray_IS_C_CONTIGUOUS(dst) or cnp.PyArray_NBYTES(dst) != self.nbytes:
                raise ValueError("dst must be a C-contiguous array of the same size")
            self.dst = dst
            self.data = <char*>cnp.PyArray_DATA(dst)
        self.mode = 2

    def lay_record(self, RecordCodec rec) -> None:
        self.clear()
        self.rec = rec
        self.mode = 3

    cpdef write(self, value, int64_t round_):
        """Publish ``value`` as the slot's value for ``round_``."""
        cdef cnp.ndarray a
        cdef int d
        cdef bint same
        if self.mode == 2:
            if type(value) is _ndarray:
                a = <cnp.ndarray>value
                same = cnp.PyArray_NDIM(a) == self.ndim and cnp.PyArray_IS_C_CONTIGUOUS(a)
                if same:
                    for d in range(self.ndim):
                        if cnp.PyArray_DIMS(a)[d] != self.dims[d]:
                            same = False
                            break
                if same and (<object>cnp.PyArray_DESCR(a) is self.descr or
                             cnp.PyArray_EquivTypes(a.dtype, <cnp.dtype>self.descr)):
                    if self.nbytes and <char*>cnp.PyArray_DATA(a) != self.data:  # else: the lent buffer
                        memcpy(self.data, cnp.PyArray_DATA(a), self.nbytes)
                    self.words[0] = round_
                    return
        elif self.mode == 3:
            if self.rec.write(value) == 1:   # it checks the container and every field's type
                self.words[0] = round_
                return
        elif self.mode == 1:
            if value is None:
                self.words[0] = round_
                return
        self.slow(value, round_)


cdef class SlotHotReader(_SlotHeader):
    """``transport.SlotReader.round`` and ``read``: while the header's layout counter is the one
    decoded last (``set_none``, ``set_array``, ``set_record``), the value straight from the slot;
    otherwise ``slow()`` decodes the header (and re-arms this). ``mode``: 0 nothing decoded, 1 None,
    2 array, 3 record."""
    def __init__(self, hdr_buf, Py_ssize_t offset, bint copy, slow):
        self._attach(hdr_buf, offset, slow)
        self.copy = copy

    def clear(self) -> None:
        self.mode = 0
        self.arr = self.rec = None

    def set_none(self, int64_t layout) -> None:
        self.clear()
        self.layout = layout
        self.mode = 1

    def set_array(self, cnp.ndarray arr, int64_t layout) -> None:
        """``arr``: the read-only array over the segment (a view or a copy of it is returned)."""
        self.clear()
        self.arr = arr
        self.layout = layout
        self.mode = 2

    def set_record(self, RecordCodec rec, int64_t layout) -> None:
        self.clear()
        self.rec = rec
        self.layout = layout
        self.mode = 3

    cpdef int64_t round(self):
        """The round the slot's value was written for."""
        return self.words[0]

    cpdef read(self):
        """The slot's current value (see ``transport.SlotReader``)."""
        if self.mode != 0 and self.words[1] == self.layout:
            if self.mode == 2:
                return self.arr.copy() if self.copy else self.arr
            if self.mode == 3:
                return self.rec.read()
            return None
        return self.slow()
