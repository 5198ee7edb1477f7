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
core), yields the core (``sched_yield``) for a while, and then sleeps in ``FUTEX_WAIT`` on the word (the
phases: the processes executor's `reactor_backend.waiting.Waiting`, read as its barrier reads them; the
primitives: ``_futex.pxi``, shared with that barrier),
announcing the sleep in a waiter count so that the publisher calls ``FUTEX_WAKE`` only when someone
sleeps (announce, re-check, sleep on the value read: no lost wake-ups). A waiting thread holds no
GIL and no thread state (``nogil``), so other threads, and a stop-the-world pause of a free-threaded
interpreter, proceed.
"""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free
from cpython.exc cimport PyErr_CheckSignals

include "_futex.pxi"

cdef extern from *:
    """
    #include <stdlib.h>
    #include <string.h>

    static inline int32_t *rbc_alloc_lines(int n) {
        void *p = NULL;
        if (posix_memalign(&p, 64, (size_t)n * 128) != 0) return NULL;
        memset(p, 0, (size_t)n * 128);
        return (int32_t *)p;
    }
    """
    int32_t *rbc_alloc_lines(int n) nogil

# int32 offsets within a worker's 128 bytes: its go word and go-waiter count on one cache line, its done
# word and done-waiter count on the next (written by different threads: no false sharing), each word followed
# by its publish stamp (int64, ``STAMP`` after the word: when its publisher stored it, timed crews only); on
# the done line also what only the worker's own thread writes while it waits (worker 0: the calling thread,
# which waits on the others' done words): its futex sleeps (int64), its current yield phase (int64, adapted
# between waits) and, in a timed crew, its waits' wall time, the CPU they used and their hand-offs (int64
# each). After the n workers' blocks, one more: the crew's total of futex sleeps (int64, added to atomically by
# every thread)
cdef enum:
    GO = 0
    GO_WAITERS = 1
    STAMP = 2                 # a word's publish stamp: at word + STAMP
    DONE = 16
    DONE_WAITERS = 17
    WAIT_NS = 20
    WAIT_CPU_NS = 22
    SLEEPS = 24
    YIELD_CUR = 26
    HANDOFF_NS = 28
    WORDS = 32
    YIELD_FLOOR_NS = 20000    # shortest adaptive yield phase (the processes executor's, _sync.pyx)
    YIELD_ALONE_NS = 5000     # a yield that returns sooner ran nothing else: the waiter kept its core (_sync.pyx)
    SPIN_CHECK = 31           # a spin reads the clock every SPIN_CHECK + 1 pauses (_sync.pyx)

cdef int32_t STOP = -1


cdef class Crew:
    """The meeting words of ``n`` workers (worker 0 is the calling thread and has none in use).

    ``waiting``: a `reactor_backend.waiting.Waiting` (None: its defaults), read as the processes executor's
    barrier reads it (``_sync.Barrier``), threads for processes: with a thread per core, ``spins`` pauses
    and ``yield_ns`` of yielding; with more threads than cores no spinning and ``yield_shared_ns``,
    adapted between waits; either way a ``sched_yield`` that returns after ``yield_gap_ns`` ends the
    yield phase, and sleeps last ``slice_ns`` each (Ctrl-C is seen between them). ``check_ns`` has no use
    here: a thread cannot die apart from its process. On an interpreter with a GIL no thread spins or
    yields (see ``__cinit__``).

    ``timed``: each thread also counts its waits (`counters`): their wall time, the part of it that was a
    hand-off (from the moment the awaited thread published, by its clock, to the moment this one saw it), and
    the CPU they used (spinning and yielding: their wall time where every thread has a core, the CPU clock
    read around each wait where threads outnumber cores) with the futex wakes its publishes made (a hand-off's
    cost: with a core per thread the waiters spin or yield and are rarely asleep), so that a thread's CPU clock
    less that CPU is what it spent running reactions and the tag loop (`reactor_backend.executors.ThreadBreakdown`).
    Costs a clock read per publish and two per wait that does not return at once.
    """

    cdef int32_t *_w
    cdef readonly int n
    cdef int32_t _seq
    cdef list _chunks                  # per worker: the reactions of the current level
    cdef list _errors                  # per worker: (reaction index, exception) of its first failure, or None
    cdef list _placed                  # reaction index -> worker
    cdef object _execute               # core.execute
    cdef readonly object waiting       # the Waiting the phases below came from
    cdef readonly long long spin_iters
    cdef readonly long long yield_ns
    cdef readonly long long yield_gap_ns
    cdef readonly long long slice_ns
    cdef readonly bint adapt
    cdef readonly bint own             # a core per thread
    cdef readonly bint timed

    def __cinit__(self, int n, execute, placed, waiting=None, bint timed=False):
        """``execute``: ``core.execute``; ``placed``: the worker of each reaction, by ``Reaction.index``;
        ``waiting``, ``timed``: see the class."""
        import os
        import sys
        from reactor_backend.waiting import Waiting

        if n < 1:
            raise ValueError("a crew needs at least one worker")
        w = Waiting() if waiting is None else waiting
        if not isinstance(w, Waiting):
            raise TypeError(f"waiting must be a reactor_backend.waiting.Waiting, not {type(w).__name__}")
        self._w = rbc_alloc_lines(n + 1)
        if self._w == NULL:
            raise MemoryError()
        self.n = n
        self._seq = 0
        self._chunks = [[] for _ in range(n)]
        self._errors = [None] * n
        self._placed = list(placed)
        self._execute = execute
        self.waiting = w
        own = n <= len(os.sched_getaffinity(0))
        self.own = own
        self.timed = timed
        if getattr(sys, "_is_gil_enabled", lambda: True)():
            # with a GIL a woken thread must still wait for the GIL, so spinning or yielding only takes a
            # core from the thread that holds it: sleep at once (measured on the overhead scenario's
            # fan-out, 2 threads: 1.3M reactions/s sleeping at once, 0.86M with the policy below)
            self.spin_iters = 0
            self.yield_ns = 0
            self.adapt = False
        else:
            self.spin_iters = w.spins if own else 0
            self.yield_ns = w.yield_ns if own else w.yield_shared_ns
            self.adapt = not own
        self.yield_gap_ns = w.yield_gap_ns
        self.slice_ns = w.slice_ns
        cdef int k
        for k in range(n):
            (<int64_t *> self._word(k, YIELD_CUR))[0] = self.yield_ns

    def __dealloc__(self):
        if self._w != NULL:
            free(self._w)

    cdef inline int32_t *_word(self, int k, int off) noexcept nogil:
        return self._w + k * WORDS + off

    @property
    def futex_sleeps(self) -> int:
        """Futex sleeps that ended with the word unchanged (a slice ran out), all threads together."""
        return rb_load64(<int64_t *> self._word(self.n, 0))

    @property
    def futex_sleeps_by_thread(self) -> list:
        """The same per waiting thread: worker 0 (the calling thread, waiting for the others' levels),
        then each worker (waiting for its next level); each counted by its own thread alone."""
        return [rb_load64(<int64_t *> self._word(k, SLEEPS)) for k in range(self.n)]

    def counters(self, int k) -> tuple:
        """Thread ``k``'s wait counters in a timed crew: ``(wait, handoff, wait_cpu)`` nanoseconds since the crew
        was built (``wait`` includes ``handoff``; ``wait_cpu``: the CPU of its waits and of its publishes' futex
        wakes; zeros in an untimed crew). Each only grows; readable from any
        thread while the crew runs."""
        if k < 0 or k >= self.n:
            raise IndexError(f"no thread {k} in a crew of {self.n}")
        return (rb_load64(<int64_t *> self._word(k, WAIT_NS)), rb_load64(<int64_t *> self._word(k, HANDOFF_NS)),
                rb_load64(<int64_t *> self._word(k, WAIT_CPU_NS)))

    cdef inline void _add_wait_cpu(self, int me, long long ns) noexcept nogil:
        cdef int64_t *c = <int64_t *> self._word(me, WAIT_CPU_NS)
        rb_store64(c, rb_load64(c) + ns)

    cdef void _publish(self, int me, int k, int off, int32_t value, bint count=True) noexcept nogil:
        """Thread ``me`` stores ``value`` into worker ``k``'s word at ``off`` and wakes its sleeper if any (in a
        timed crew: stamped, and with ``count`` the wake's CPU counted with ``me``'s waits, as a hand-off's cost;
        without, the caller counts it)."""
        cdef int32_t *word = self._word(k, off)
        cdef long long c0
        if self.timed:  # the stamp first: the word's seq_cst store publishes it with the word
            rb_store64(<int64_t *> self._word(k, off + STAMP), rb_now_ns())
        rb_store32(word, value)
        if rb_load32(self._word(k, off + 1)) > 0:
            if self.timed and count:  # the CPU clock: the woken thread may take this one's core within the call
                c0 = rb_thread_cpu_ns()
                rb_futex_wake_private(word)
                self._add_wait_cpu(me, rb_thread_cpu_ns() - c0)
            else:
                rb_futex_wake_private(word)

    cdef int32_t _wait_change(self, int me, int k, int off, int32_t old, bint check_signals,
                              bint outer=False) except? -2:
        """Thread ``me`` waits until worker ``k``'s word at ``off`` differs from ``old``; return its new
        value. Spin, yield, then sleep (the phases: the class). ``outer``: the caller counts the wait's CPU (around
        several waits: two reads of the CPU clock, a system call each, instead of two per wait)."""
        cdef int32_t *word = self._word(k, off)
        cdef int32_t *waiters = self._word(k, off + 1)
        cdef int64_t *yield_cur = <int64_t *> self._word(me, YIELD_CUR)
        cdef int64_t *my_sleeps = <int64_t *> self._word(me, SLEEPS)
        cdef int32_t v = rb_load32(word)
        cdef long long i, t0, t_prev, now
        cdef long long t_w0 = 0, c_w0 = -1, wall_cpu = 0
        cdef bint timed = self.timed
        cdef bint count = timed and not outer  # its CPU counted here
        cdef long long spins = self.spin_iters, gap = self.yield_gap_ns
        cdef long long yield_ns = yield_cur[0] if yield_cur[0] < self.yield_ns else self.yield_ns
        cdef long long slice_ns = self.slice_ns
        cdef bint yielded = 0
        if v != old:
            return v
        with nogil:
            # timed: the wait's CPU is its wall time while it kept its core (each yield, and each SPIN_CHECK + 1
            # pauses of the spin, came back within YIELD_ALONE_NS), from then on the CPU clock (c_w0: read there; at
            # once where threads outnumber cores)
            t_w0 = rb_now_ns()
            if count and not self.own:
                c_w0 = rb_thread_cpu_ns()
            t_prev = t_w0
            for i in range(spins):
                rb_pause()
                v = rb_load32(word)
                if v != old:
                    break
                if (i & SPIN_CHECK) == SPIN_CHECK:  # as the barrier's spin (_sync.pyx, Barrier._wait)
                    now = rb_now_ns()
                    if now - t_prev > YIELD_ALONE_NS:  # this stretch lost its core
                        if count and c_w0 < 0:
                            wall_cpu = t_prev - t_w0
                            c_w0 = rb_thread_cpu_ns()
                        if now - t_prev > gap:
                            break
                    t_prev = now
            if v == old and yield_ns > 0:
                yielded = 1
                t0 = rb_now_ns()
                if count and c_w0 < 0 and t0 - t_prev > YIELD_ALONE_NS:
                    wall_cpu = t_prev - t_w0
                    c_w0 = rb_thread_cpu_ns()  # it lost its core while spinning
                t_prev = t0
                while True:
                    v = rb_load32(word)
                    if v != old:
                        break
                    now = rb_now_ns()
                    if now - t0 > yield_ns or now - t_prev > gap:
                        break
                    if count and c_w0 < 0 and now - t_prev > YIELD_ALONE_NS:  # that yield ran something else
                        wall_cpu = t_prev - t_w0
                        c_w0 = rb_thread_cpu_ns()
                    sched_yield()
                    t_prev = now
            if count and c_w0 < 0:  # up to the end of its last stretch on its own core; a sleep: the CPU clock
                now = rb_now_ns()
                wall_cpu = (t_prev if now - t_prev > YIELD_ALONE_NS else now) - t_w0
                if v == old:
                    c_w0 = rb_thread_cpu_ns()
        if yielded and self.adapt:  # as the barrier's (_sync.pyx, Barrier._wait); this thread's own phase
            if v != old:
                yield_cur[0] = min(self.yield_ns, yield_cur[0] + self.yield_ns // 8)
            else:
                yield_cur[0] = max(YIELD_FLOOR_NS, min(yield_cur[0], self.yield_ns) // 2)
        while v == old:
            with nogil:
                rb_add32(waiters, 1)
                v = rb_load32(word)
                if v == old:
                    rb_futex_wait_private(word, old, slice_ns)
                    v = rb_load32(word)
                rb_add32(waiters, -1)
            if v == old:
                # this thread's count (only it writes it) and the crew's total, which every thread adds to
                rb_store64(my_sleeps, rb_load64(my_sleeps) + 1)
                rb_add64(<int64_t *> self._word(self.n, 0), 1)
                if check_signals:
                    PyErr_CheckSignals()
        if timed:
            self._count_wait(me, k, off, t_w0, c_w0, wall_cpu)
        return v

    cdef void _count_wait(self, int me, int k, int off, long long t_w0, long long c_w0,
                          long long wall_cpu) noexcept nogil:
        """Thread ``me``'s wait for worker ``k``'s word at ``off``, begun at ``t_w0``, ended now: its wall time, its
        hand-off (from the word's publish stamp, within the wait) and its CPU (``wall_cpu``, plus the CPU clock since
        ``c_w0`` where that was read) into ``me``'s counters (only ``me`` writes them)."""
        cdef long long now = rb_now_ns()
        cdef long long handoff = now - rb_load64(<int64_t *> self._word(k, off + STAMP))
        cdef long long waited = now - t_w0
        cdef int64_t *c
        if handoff < 0:
            handoff = 0
        elif handoff > waited:
            handoff = waited
        if c_w0 >= 0:
            wall_cpu += rb_thread_cpu_ns() - c_w0
        c = <int64_t *> self._word(me, WAIT_NS)
        rb_store64(c, rb_load64(c) + waited)
        c = <int64_t *> self._word(me, HANDOFF_NS)
        rb_store64(c, rb_load64(c) + handoff)
        c = <int64_t *> self._word(me, WAIT_CPU_NS)
        rb_store64(c, rb_load64(c) + wall_cpu)

    def serve(self, int k) -> None:
        """Worker ``k``'s thread: run each level's chunk handed to it until ``stop``."""
        cdef int32_t seen = 0
        cdef list chunk
        execute = self._execute
        while True:
            seen = self._wait_change(k, k, GO, seen, False)
            if seen == STOP:
                return
            chunk = <list> self._chunks[k]
            for r in chunk:
                try:
                    execute(r)
                except BaseException as exc:  # reported to the calling thread, in reaction order
                    self._errors[k] = (r.index, exc)
                    break
            self._publish(k, k, DONE, seen)

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
        # where threads outnumber cores a timed crew counts the CPU of the level's wakes and of its waits for
        # the others' chunks around each loop (`_wait_change`'s ``outer``); c0: the CPU clock, -1 unread
        cdef bint outer = self.timed and not self.own
        cdef long long c0 = -1
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
                if outer and c0 < 0 and rb_load32(self._word(k, GO_WAITERS)) > 0:
                    c0 = rb_thread_cpu_ns()
                self._publish(0, k, GO, seq, not outer)
        if c0 >= 0:
            self._add_wait_cpu(0, rb_thread_cpu_ns() - c0)
            c0 = -1
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
                done = rb_load32(self._word(k, DONE))
                if outer and c0 < 0 and done != seq:
                    c0 = rb_thread_cpu_ns()
                while done != seq:
                    done = self._wait_change(0, k, DONE, done, True, outer)
                chunks[k] = []
                err = self._errors[k]
                if err is not None:
                    self._errors[k] = None
                    if first is None or <long> err[0] < first_at:
                        first, first_at = err[1], err[0]
        if c0 >= 0:
            self._add_wait_cpu(0, rb_thread_cpu_ns() - c0)
        if first is not None:
            raise first

    def stop(self) -> None:
        """Ask every worker's thread to return (after the chunk it is running, if any)."""
        cdef int k
        for k in range(1, self.n):
            self._publish(0, k, GO, STOP)
