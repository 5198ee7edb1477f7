# cython: language_level=3, boundscheck=False, wraparound=False
# cython: freethreading_compatible = True
"""The threads executor's hot path: hand a level's reactions to a fixed crew of threads and meet when
they are done, through one pair of words per worker instead of a lock.

Why: the executor meets its threads once per parallel level, many thousand times a second. A
``threading.Event``/``Condition`` pair costs a lock round trip and a wake-up per worker and level; on a
free-threaded interpreter that lock is the only thing the workers contend on. Here each worker ``k`` owns
two 32-bit words on cache lines of their own (the processes executor's progress words, in-process):

* ``go[k]``: the number of the last level handed to ``k`` (written by the calling thread, after it
  stored the worker's chunk; a worker with nothing to do at a level is not woken at all);
* ``done[k]``: the number of the last level ``k`` finished (written by the worker, after its
  reactions' effects and its error slot).

Both are sequentially consistent stores and loads, so everything a side wrote before publishing is
visible to the side that saw the word change. Waiting spins briefly (only when every thread has a
core), yields the core (``sched_yield``) for a while, and then sleeps in ``FUTEX_WAIT`` on the word,
announcing the sleep in a waiter count so that the publisher calls ``FUTEX_WAKE`` only when someone
sleeps (announce, re-check, sleep on the value read: no lost wake-ups). A waiting thread holds no
GIL and no thread state (``nogil``), so other threads, and a stop-the-world pause of a free-threaded
interpreter, proceed.
"""
from libc.stdint cimport int32_t
from libc.stdlib cimport free
from cpython.exc cimport PyErr_CheckSignals

cdef extern from *:
    """
    #include <stdint.h>
    #include <errno.h>
    #include <limits.h>
    #include <sched.h>
    #include <stdlib.h>
    #include <string.h>
    #include <time.h>
    #include <unistd.h>
    #include <sys/syscall.h>
    #include <linux/futex.h>

    static inline int rbc_futex_wait(int32_t *addr, int32_t val, long long timeout_ns) {
        struct timespec ts;
        ts.tv_sec = (time_t)(timeout_ns / 1000000000LL);
        ts.tv_nsec = (long)(timeout_ns % 1000000000LL);
        long r = syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
        return r == 0 ? 0 : errno;
    }
    static inline void rbc_futex_wake(int32_t *addr) {
        syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
    static inline int32_t rbc_load(int32_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
    static inline void rbc_store(int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
    static inline void rbc_add(int32_t *p, int32_t v) { __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
    static inline void rbc_pause(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    static inline long long rbc_now_ns(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    }
    static inline int32_t *rbc_alloc_lines(int n) {
        void *p = NULL;
        if (posix_memalign(&p, 64, (size_t)n * 128) != 0) return NULL;
        memset(p, 0, (size_t)n * 128);
        return (int32_t *)p;
    }
    """
    int rbc_futex_wait(int32_t *addr, int32_t val, long long timeout_ns) nogil
    void rbc_futex_wake(int32_t *addr) nogil
    int32_t rbc_load(int32_t *p) nogil
    void rbc_store(int32_t *p, int32_t v) nogil
    void rbc_add(int32_t *p, int32_t v) nogil
    void rbc_pause() nogil
    long long rbc_now_ns() nogil
    int32_t *rbc_alloc_lines(int n) nogil
    int sched_yield() nogil

# int32 offsets within a worker's 128 bytes: its go word and go-waiter count on one cache line, its done
# word and done-waiter count on the next (written by different threads: no false sharing)
cdef enum:
    GO = 0
    GO_WAITERS = 1
    DONE = 16
    DONE_WAITERS = 17
    WORDS = 32

cdef int32_t STOP = -1


cdef class Crew:
    """The meeting words of ``n`` workers (worker 0 is the calling thread and has none in use)."""

    cdef int32_t *_w
    cdef readonly int n
    cdef int32_t _seq
    cdef list _chunks                  # per worker: the reactions of the current level
    cdef list _errors                  # per worker: (reaction index, exception) of its first failure, or None
    cdef list _placed                  # reaction index -> worker
    cdef object _execute               # core.execute
    cdef public long long spin_iters
    cdef public long long yield_ns
    cdef public long long yield_gap_ns
    cdef public long long slice_ns
    cdef readonly long long futex_sleeps

    def __cinit__(self, int n, execute, placed):
        """``execute``: ``core.execute``; ``placed``: the worker of each reaction, by ``Reaction.index``."""
        import os
        if n < 1:
            raise ValueError("a crew needs at least one worker")
        self._w = rbc_alloc_lines(n)
        if self._w == NULL:
            raise MemoryError()
        self.n = n
        self._seq = 0
        self._chunks = [[] for _ in range(n)]
        self._errors = [None] * n
        self._placed = list(placed)
        self._execute = execute
        import sys
        ncpu = len(os.sched_getaffinity(0))
        if getattr(sys, "_is_gil_enabled", lambda: True)():
            # with a GIL a woken thread must still wait for the GIL, so spinning or yielding only takes a
            # core from the thread that holds it: sleep at once (measured on the overhead scenario's
            # fan-out, 2 threads: 1.3M reactions/s sleeping at once, 0.86M with the policy below)
            self.spin_iters = 0
            self.yield_ns = 0
        else:
            # the processes executor's waiting policy (reactor_backend/_sync.pyx, Barrier): spin only when
            # every thread owns a core, yield for long then (a sleeper's core goes idle and comes back
            # cold), briefly otherwise; a yield that returns late (others ran) ends the phase; then sleep
            self.spin_iters = 50 if n <= ncpu else 0
            self.yield_ns = 20_000_000 if n <= ncpu else 50_000
        self.yield_gap_ns = 30_000
        self.slice_ns = 50_000_000
        self.futex_sleeps = 0

    def __dealloc__(self):
        if self._w != NULL:
            free(self._w)

    cdef inline int32_t *_word(self, int k, int off) noexcept nogil:
        return self._w + k * WORDS + off

    cdef void _publish(self, int k, int off, int32_t value) noexcept nogil:
        cdef int32_t *word = self._word(k, off)
        rbc_store(word, value)
        if rbc_load(self._word(k, off + 1)) > 0:
            rbc_futex_wake(word)

    cdef int32_t _wait_change(self, int k, int off, int32_t old, bint check_signals) except? -2:
        """Wait until worker ``k``'s word at ``off`` differs from ``old``; return its new value."""
        cdef int32_t *word = self._word(k, off)
        cdef int32_t *waiters = self._word(k, off + 1)
        cdef int32_t v = rbc_load(word)
        cdef long long i, t0, t_prev, now
        cdef long long spins = self.spin_iters, yield_ns = self.yield_ns, gap = self.yield_gap_ns
        cdef long long slice_ns = self.slice_ns
        if v != old:
            return v
        with nogil:
            for i in range(spins):
                rbc_pause()
                v = rbc_load(word)
                if v != old:
                    break
            if v == old:
                t0 = rbc_now_ns()
                t_prev = t0
                while True:
                    v = rbc_load(word)
                    if v != old:
                        break
                    now = rbc_now_ns()
                    if now - t0 > yield_ns or now - t_prev > gap:
                        break
                    sched_yield()
                    t_prev = now
        while v == old:
            with nogil:
                rbc_add(waiters, 1)
                v = rbc_load(word)
                if v == old:
                    rbc_futex_wait(word, old, slice_ns)
                    v = rbc_load(word)
                rbc_add(waiters, -1)
            if v == old:
                self.futex_sleeps += 1
                if check_signals:
                    PyErr_CheckSignals()
        return v

    def serve(self, int k) -> None:
        """Worker ``k``'s thread: run each level's chunk handed to it until ``stop``."""
        cdef int32_t seen = 0
        cdef list chunk
        execute = self._execute
        while True:
            seen = self._wait_change(k, GO, seen, False)
            if seen == STOP:
                return
            chunk = <list> self._chunks[k]
            for r in chunk:
                try:
                    execute(r)
                except BaseException as exc:  # reported to the calling thread, in reaction order
                    self._errors[k] = (r.index, exc)
                    break
            self._publish(k, DONE, seen)

    def run_level(self, int level, list reactions) -> None:
        """Run one level's reactions, each on its placed worker (worker 0: here); return when all are
        done; raise the first failure in reaction order."""
        cdef int n = self.n, k, busy = 0
        cdef list chunks = self._chunks
        cdef list placed = self._placed
        cdef list mine = []
        cdef list chunk
        cdef int32_t seq, done
        cdef object first = None
        cdef long first_at = -1
        for r in reactions:
            k = <int> placed[r.index]
            if k == 0:
                mine.append(r)
            else:
                chunk = <list> chunks[k]
                if not chunk:
                    busy += 1
                chunk.append(r)
        if busy == 0:
            execute = self._execute
            for r in mine:
                execute(r)
            return
        self._seq = seq = (self._seq + 1) & 0x3FFFFFFF
        if seq == 0:
            self._seq = seq = 1
        for k in range(1, n):
            if chunks[k]:
                self._publish(k, GO, seq)
        execute = self._execute
        for r in mine:
            try:
                execute(r)
            except BaseException as exc:
                first, first_at = exc, r.index
                break
        # (interrupted here by Ctrl-C: the exception propagates; the workers finish their chunks and
        # ``stop`` ends them)
        for k in range(1, n):
            chunk = <list> chunks[k]
            if chunk:
                done = rbc_load(self._word(k, DONE))
                while done != seq:
                    done = self._wait_change(k, DONE, done, True)
                chunks[k] = []
                err = self._errors[k]
                if err is not None:
                    self._errors[k] = None
                    if first is None or <long> err[0] < first_at:
                        first, first_at = err[1], err[0]
        if first is not None:
            raise first

    def stop(self) -> None:
        """Ask every worker's thread to return (after the chunk it is running, if any)."""
        cdef int k
        for k in range(1, self.n):
            self._publish(k, GO, STOP)
