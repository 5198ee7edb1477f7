# cython: language_level=3
"""Declarations of the slot hot paths (``_codec.pyx``), so that the core (``_core.pyx``, its meetings in
``_link.pxi``) reads and writes a slot with C calls instead of Python method calls: a round at
``workers=16`` imports 15 results in process 0, two calls each."""
cimport cython
cimport numpy as cnp
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int64_t

cdef enum:
    MAX_FIELDS = 16
    MAX_NDIM = 8


@cython.final
cdef class RecordCodec:
    cdef int n
    cdef int container
    cdef bint copy
    cdef int kinds[MAX_FIELDS]
    cdef Py_ssize_t offs[MAX_FIELDS]
    cdef Py_ssize_t nbytes[MAX_FIELDS]
    cdef int ndims[MAX_FIELDS]
    cdef cnp.npy_intp dims[MAX_FIELDS][MAX_NDIM]
    cdef list descrs
    cdef cnp.PyArray_Descr* cdescrs[MAX_FIELDS]
    cdef list arrays
    cdef Py_buffer pybuf
    cdef bint have_buf
    cdef char* base
    cdef readonly object last  # the tuple `read` returned last (`refill` refills it)

    cpdef int write(self, value) except -2
    cdef int _write_field(self, Py_ssize_t i, object x) except -2
    cdef bint _write_array(self, Py_ssize_t i, object x) except -1
    cpdef read(self)
    cpdef int refill(self, tuple t) except -1
    cdef object _field(self, Py_ssize_t i)


cdef class _SlotHeader:
    cdef Py_buffer hdr
    cdef bint have_hdr
    cdef int64_t* words
    cdef object slow
    cdef int mode

    cdef int _attach(self, object hdr_buf, Py_ssize_t offset, object slow) except -1


@cython.final
cdef class SlotHotWriter(_SlotHeader):
    cdef object dst
    cdef object descr
    cdef int ndim
    cdef cnp.npy_intp dims[MAX_NDIM]
    cdef char* data
    cdef Py_ssize_t nbytes
    cdef RecordCodec rec

    cpdef write(self, value, int64_t round_)


@cython.final
cdef class SlotHotReader(_SlotHeader):
    cdef int64_t layout
    cdef object arr
    cdef bint copy
    cdef RecordCodec rec

    cpdef int64_t round(self)
    cpdef read(self)
