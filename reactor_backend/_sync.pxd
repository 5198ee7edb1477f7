# cython: language_level=3
"""Declarations of the barrier (``_sync.pyx``), so that the core (``_core.pyx``, its meetings and tag advance in
``_link.pxi``) calls its meetings, waits and reduction as C calls instead of Python method calls: process 0 makes
several a round at ``workers=16``, every other process three or more."""
cimport cython
from libc.stdint cimport int32_t, int64_t


@cython.final
cdef class Barrier:
    cdef object _buf
    cdef char *_base
    cdef int32_t *_stop
    cdef int32_t *_count
    cdef int32_t *_gen
    cdef int32_t *_waiters
    cdef int32_t *_signal
    cdef int64_t *_cells
    cdef int64_t *_counters
    cdef char *_lines
    cdef long long _nred
    cdef readonly int nproc
    cdef readonly int index
    cdef public object check
    cdef public long long spin_iters
    cdef public long long yield_ns
    cdef public long long slice_ns
    cdef public long long check_ns
    cdef public long long yield_gap_ns
    cdef public bint adapt
    cdef readonly long long futex_sleeps
    cdef readonly long long yield_gaps
    cdef long long _yield_cur
    cdef public bint stamp
    cdef readonly long long handoff_ns
    cdef readonly long long handoffs
    cdef long long _npub
    cdef int _handoff_counter
    cdef public bint count_cpu
    cdef long long _cpu[2]
    cdef bint _own
    cdef int64_t **_many  # `wait_any`'s progress words (nproc pointers)
    cdef int *_ranks      # `wait_any`'s ranks (nproc)

    cdef int _wait(self, int32_t *gen, int32_t old, int64_t *prog, int64_t position, int32_t *seq,
                   int32_t *waiters, int64_t **many=*, const char *pending=*, Py_ssize_t n=*) except -1
    cdef long long _outer_cpu(self) noexcept nogil
    cdef void _count_wait(self, long long c_w0, long long wall_part) noexcept nogil
    cdef int _arrive(self) except -1
    cdef void _write_cell(self, int parity, int64_t t, int64_t m, int64_t st, int64_t sm,
                          int64_t flags) noexcept nogil
    cdef void _minima(self, int parity, int64_t *out) noexcept nogil
    cdef int64_t *_progress(self, int p) noexcept nogil
    cdef int32_t *_seq(self, int p) noexcept nogil
    cdef int32_t *_pwaiters(self, int p) noexcept nogil
    cdef int64_t *_pring(self, int p) noexcept nogil
    cdef void _publish(self, int64_t position) noexcept nogil
    cdef int _wait_for(self, int p, int64_t position) except -1
    cdef void _count_handoff(self, int p, int64_t position) noexcept
    cdef int c_wait_any(self, int64_t position, tuple ranks, bytearray pending) except -1
    cdef int c_wait_ready(self, int64_t position, const int *ranks, int64_t **prog, const char *pend,
                          Py_ssize_t n) except -1
    cdef int c_sync(self, int64_t position, bint publish, tuple wait) except -1
    cdef int c_reduce_into(self, int64_t position, int64_t t, int64_t m, int64_t st, int64_t sm, int64_t flags,
                           int64_t *out) except -1


cpdef long long meeting_position(long long epoch, long long level) except? -1
cpdef long long advance_position(long long epoch, long long count) except? -1
