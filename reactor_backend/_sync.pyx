# cython: language_level=3, boundscheck=False, wraparound=False
# cython: freethreading_compatible = True
"""Lock-free synchronization between worker processes over one shared-memory control block.

Why this exists: the multi-process executor must meet N processes once or a few times per tag.
A pipe or a queue costs tens of microseconds per message; a barrier on an atomic counter in
shared memory costs well under a microsecond when the others are already spinning. So every
process runs the same precomputed schedule and meets the others only here:

* ``Barrier.arrive()``: a sense-reversing (generation-counting) barrier. The last arriver resets
  the counter and bumps the generation word; the others wait for that word to change.
* Waiting spins briefly (``pause``), then yields the core (``sched_yield``; by default for up to 20 ms
  when every process has a core of its own, 50 us otherwise, and no longer once a yield came back
  late, i.e. other processes ran meanwhile: the core is contended; the phases are the options of
  `reactor_backend.waiting.Waiting`, passed as ``waiting``), then sleeps in
  ``FUTEX_WAIT`` on the generation word with a time slice, so it never starves a process that
  needs the core when workers outnumber cores. The releaser calls ``FUTEX_WAKE`` only when a
  waiter has announced itself (Dekker-style handshake on seq_cst atomics: no lost wake-ups).
* Point-to-point progress (the executor's hot path): each process owns a 64-bit *progress* word
  that only grows (``publish``). A process that needs another's data waits only for that
  process's progress to reach a position (``wait_for``; ``wait_any``: until the first of several does, so
  that a reader of many takes each one's data as it comes), so a writer never waits for its readers
  and processes with nothing to exchange at a level do not meet at all. ``reduce_at`` publishes a
  reduction cell with the position and waits for every process: the tag advance.
* A shared stop word: the first process to fail (or the parent on interrupt) sets it with a
  compare-and-swap; every waiter checks it and raises ``Aborted``. Between futex slices waiters
  call a liveness ``check`` callable (the parent reaps dead children, a child checks its parent)
  and ``PyErr_CheckSignals`` so that Ctrl-C is seen within one slice.

Layout of the control block (bytes; each hot word on its own cache line, except the futex waiter count
and the signal word, which share one: both change only when a process goes to sleep or a physical
event arrives)::

    0     stop word (int32)            64   barrier count (int32)
    128   barrier generation (int32)   192  futex waiter count (int32)
    224   signal word (int32): "something happened" (a physical event) for timed waits
    256   reduction cells: 2 parities x nproc x 8 int64 (64 bytes per cell)
    then  per-process int64 counters (``COUNTERS`` each)
    then  per-process progress lines, two cache lines each (``LINE``): int64 progress, int32 seq,
          int32 waiters; then, on the next line and only while ``stamp`` is on, a ring of the last 3
          publishes (int64 position, int64 CLOCK_MONOTONIC time). The ring has a line of its own so that
          stamping a publish does not make the waiter, which spins on the progress word, re-read
          that word's line three more times (measured: with the ring beside the word the breakdown
          made the empty actors round 1.4-1.8 us slower, 15-25%)
    then  free space for the caller
"""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc
from cpython.exc cimport PyErr_CheckSignals

include "_futex.pxi"

cdef extern from *:
    """
    #include <signal.h>
    #include <sys/prctl.h>

    static inline int rb_set_pdeathsig(int sig) { return prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0); }
    """
    int rb_set_pdeathsig(int sig) nogil

cdef enum:
    OFF_STOP = 0
    OFF_COUNT = 64
    OFF_GEN = 128
    OFF_WAITERS = 192
    OFF_SIGNAL = 224
    OFF_CELLS = 256
    CELL_WORDS = 8            # int64 words per reduction cell (one cache line)
    COUNTERS = 16             # int64 counters per process (two cache lines)
    LINE = 128                # bytes per process: its progress line, then its stamp ring's line
    RING = 64                 # offset of the stamp ring within them
    YIELD_FLOOR_NS = 20000    # shortest adaptive yield phase
    STAMPS = 3                # publishes remembered per process for the hand-off timing (48 bytes of its ring line)
    YIELD_ALONE_NS = 5000     # a yield that returns sooner ran nothing else: the waiter kept its core (CPU = wall)
    SPIN_CHECK = 31           # a spin reads the clock every SPIN_CHECK + 1 pauses (a power of two, minus one)

cdef int64_t _NEVER = 0x7FFFFFFFFFFFFFFF  # the compiled code's (a module global is a dict lookup per use)
#: Largest int64: the "no event" tag component in reductions.
NEVER = _NEVER


class Aborted(Exception):
    """Raised in a waiting process when another process set the shared stop word."""

    def __init__(self, code: int):
        super().__init__(f"stopped by another process (stop code {code})")
        self.code = code


def control_size(int nproc) -> int:
    """Bytes of the control block for ``nproc`` processes (callers may use space past it)."""
    return OFF_CELLS + 2 * nproc * CELL_WORDS * 8 + nproc * COUNTERS * 8 + nproc * LINE


def set_parent_death_signal(int sig) -> None:
    """In a forked child: ask the kernel to send ``sig`` when the parent thread dies (Linux)."""
    if rb_set_pdeathsig(sig) != 0:
        raise OSError("prctl(PR_SET_PDEATHSIG) failed")


def now_ns() -> int:
    """CLOCK_MONOTONIC in nanoseconds (the same clock the waits use)."""
    return rb_now_ns()


# ---- progress positions ------------------------------------------------------------------------
# A progress word holds a *position* within the run: the tag counter (``core.epoch``, equal in every
# process) in the high 32 bits, the place within that tag in the low 32 bits. Places below
# ``END_OF_TAG`` are meeting levels (level + 1, so that level 0 is after the tag's start); places from
# ``END_OF_TAG`` on number the tag-advance reductions of that tag. Positions only grow, so a waiter
# compares with ``>=``. These helpers are the one definition of that layout (the executor builds
# positions only through them).
cdef long long _PLACE_BITS = 32
cdef long long _END_OF_TAG = 1LL << 31
cdef long long _MAX_EPOCH = (1LL << 31) - 1
POSITION_PLACE_BITS = _PLACE_BITS
END_OF_TAG = _END_OF_TAG
MAX_EPOCH = _MAX_EPOCH


cpdef long long meeting_position(long long epoch, long long level) except? -1:
    """Position of the meeting at ``level`` of the tag numbered ``epoch``."""
    if epoch < 0 or epoch > _MAX_EPOCH or level < -1 or level + 1 >= _END_OF_TAG:
        raise OverflowError(f"position out of range: epoch {epoch}, level {level}")
    return (epoch << _PLACE_BITS) | (level + 1)


cpdef long long advance_position(long long epoch, long long count) except? -1:
    """Position of the tag advance's ``count``-th reduction (0, 1, ...) of the tag ``epoch``."""
    if epoch < 0 or epoch > _MAX_EPOCH or count < 0 or count >= _END_OF_TAG:
        raise OverflowError(f"position out of range: epoch {epoch}, reduction {count}")
    return (epoch << _PLACE_BITS) | _END_OF_TAG | count


def split_position(long long position):
    """``(epoch, kind, n)`` of a position: kind ``"level"`` (n = level) or ``"advance"`` (n = count)."""
    cdef long long epoch = position >> _PLACE_BITS
    cdef long long place = position & ((1LL << _PLACE_BITS) - 1)
    if place >= _END_OF_TAG:
        return epoch, "advance", place - _END_OF_TAG
    return epoch, "level", place - 1


cdef inline bint _reached(int32_t *gen, int32_t old, int64_t *prog, int64_t position, int64_t **many,
                          const char *pending, Py_ssize_t n) noexcept nogil:
    """The condition ``Barrier._wait`` waits for: any of ``many`` progress words whose ``pending`` byte is set at
    ``position`` (``many`` not NULL: `Barrier.wait_any`), else the progress word ``prog`` at ``position``, or a
    changed generation."""
    cdef Py_ssize_t g
    if many != NULL:
        for g in range(n):
            if pending[g] and rb_load64(many[g]) >= position:
                return 1
        return 0
    if prog != NULL:
        return rb_load64(prog) >= position
    return rb_load32(gen) != old


cdef class Barrier:
    """One process's handle on the shared barrier, reduction cells, stop word and counters.

    ``buf`` is a writable buffer (an ``mmap`` of the control block) shared by all ``nproc``
    processes; ``index`` is this process's rank. ``check`` is called (with the GIL) every
    ``check_ns`` while waiting in the futex phase; it raises to abandon the wait.
    """
    # attributes and C methods: _sync.pxd (the core calls the meetings and the reduction without Python calls)

    def __cinit__(self, buf, int nproc, int index, check=None, waiting=None):
        cdef char[::1] view = buf
        if nproc < 1 or index < 0 or index >= nproc:
            raise ValueError("need 0 <= index < nproc")
        if view.shape[0] < control_size(nproc):
            raise ValueError("control buffer too small")
        self._many = <int64_t **> malloc(nproc * sizeof(int64_t *))
        self._ranks = <int *> malloc(nproc * sizeof(int))
        if self._many == NULL or self._ranks == NULL:
            raise MemoryError()
        self._buf = buf
        self._base = &view[0]
        self._stop = <int32_t *>(self._base + OFF_STOP)
        self._count = <int32_t *>(self._base + OFF_COUNT)
        self._gen = <int32_t *>(self._base + OFF_GEN)
        self._waiters = <int32_t *>(self._base + OFF_WAITERS)
        self._signal = <int32_t *>(self._base + OFF_SIGNAL)
        self._cells = <int64_t *>(self._base + OFF_CELLS)
        self._counters = <int64_t *>(self._base + OFF_CELLS + 2 * nproc * CELL_WORDS * 8)
        self._lines = self._base + OFF_CELLS + 2 * nproc * CELL_WORDS * 8 + nproc * COUNTERS * 8
        self._nred = 0
        self.nproc = nproc
        self.index = index
        self.check = check
        self.futex_sleeps = 0
        import os
        from reactor_backend.waiting import Waiting

        w = waiting if waiting is not None else Waiting()
        ncpu = len(os.sched_getaffinity(0))
        # the phases and their reasons: `reactor_backend.waiting.Waiting`. With a core per process the yield
        # phase is long and does not adapt (``adapt``): on a VM a yield also comes back late when the host
        # ran another tenant on this vCPU, and shrinking the phase for that put the waiter back to sleep
        # every round (simple_spread: wake-ups 64 us per round again).
        own = nproc <= ncpu
        self._own = own
        self.spin_iters = w.spins if own else 0
        self.yield_ns = w.yield_ns if own else w.yield_shared_ns
        self.adapt = not own
        self.slice_ns = w.slice_ns
        self.check_ns = w.check_ns
        self.yield_gap_ns = w.yield_gap_ns
        self.yield_gaps = 0
        self._yield_cur = self.yield_ns
        # Hand-off timing (the executor's breakdown turns it on): each publish records its position and
        # time in a small ring on the cache line after its progress word's, and a wait that had to wait
        # adds (when it saw the position) - (when the first position at or past it was published) to
        # ``handoff_ns``: the latency of the hand-off itself (spin, yield or futex wake-up, and any time
        # the waiter's core ran something else), as opposed to waiting for the partner's work.
        # CLOCK_MONOTONIC is one clock for all processes.
        self.stamp = 0
        self.handoff_ns = 0
        self.handoffs = 0
        self._npub = 0
        self._handoff_counter = -1
        # CPU accounting of the meetings and reductions (the executor's breakdown turns it on): ``wait_cpu_ns``
        # grows by the CPU this thread spends in ``sync`` and ``reduce_at``, so that the breakdown's ``cpu`` (the
        # thread's CPU outside them) needs the CPU clock, a system call, only once per tag instead of around every
        # meeting. With a core per process a waiter that spins or yields keeps its core, so a wait's CPU is its
        # wall time, and the CPU clock is read only from the moment that stops holding: a yield that came back
        # late (something else ran), the futex sleep, a wake-up of sleepers. With more processes than cores a
        # waiter may lose its core at any moment: there each meeting and reduction reads the clock around itself.
        self.count_cpu = 0
        self._cpu[0] = 0   # ``wait_cpu_ns``
        self._cpu[1] = -1  # the CPU clock as the last `reduce_at` read it on leaving, -1: not read there

    def __dealloc__(self):
        free(self._many)
        free(self._ranks)

    @property
    def handoff_counter(self) -> int:
        """The counter slot (0..15) where this process keeps ``handoff_ns`` as it grows, or -1 for none:
        readable by every process like the executor's other breakdown totals, with no call per tag."""
        return self._handoff_counter

    @handoff_counter.setter
    def handoff_counter(self, int slot) -> None:
        if slot < -1 or slot >= COUNTERS:
            raise IndexError("counter slots out of range")
        self._handoff_counter = slot

    @property
    def wait_cpu_ns(self) -> int:
        """The CPU this thread spent in meetings, reductions and wake-ups since ``count_cpu`` was turned on."""
        return self._cpu[0]

    def wait_cpu_address(self) -> int:
        """The address of two int64 this object owns, for compiled code that reads them once per tag without a
        Python call (``_core.ProcessLink``; valid while this object lives): ``wait_cpu_ns``, then the CPU clock
        as the last `reduce_at` read it on leaving (-1 where it did not: a core per process), which the caller
        may take for its own reading of the clock at that moment."""
        return <size_t> &self._cpu[0]

    @property
    def yield_phase_ns(self) -> int:
        """How long the next wait yields before it sleeps (adapted between waits, at most ``yield_ns``)."""
        return min(self._yield_cur, self.yield_ns)

    # ---- stop word -------------------------------------------------------------------------
    def request_stop(self, int code) -> bool:
        """Set the stop word to ``code`` (non-zero) if nobody did; wake every waiter.

        Returns True when this call won (its code is the recorded one).
        """
        if code == 0:
            raise ValueError("stop code must be non-zero")
        cdef bint won = rb_cas32(self._stop, 0, code)
        cdef int p
        rb_futex_wake(self._gen)
        rb_futex_wake(self._signal)
        for p in range(self.nproc):
            rb_futex_wake(self._seq(p))
        return won

    @property
    def stop_code(self) -> int:
        """0 while running; otherwise the code of the first stop request."""
        return rb_load32(self._stop)

    # ---- signal word (timed waits that any process can cut short) ---------------------------
    @property
    def signal_value(self) -> int:
        return rb_load32(self._signal)

    def signal(self) -> None:
        """Bump the signal word and wake every process sleeping in ``wait_signal``."""
        rb_add32(self._signal, 1)
        rb_futex_wake(self._signal)

    def wait_signal(self, int seen, long long timeout_ns) -> bool:
        """Sleep up to ``timeout_ns`` until the signal word differs from ``seen``: True if it does.

        Raises ``Aborted`` if the stop word is set; sees Ctrl-C (``PyErr_CheckSignals``).
        """
        cdef int32_t old = seen
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        if rb_load32(self._signal) != old:
            return True
        if timeout_ns > 0:
            with nogil:
                rb_futex_wait(self._signal, old, timeout_ns)
        PyErr_CheckSignals()
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        return rb_load32(self._signal) != old

    # ---- counters -------------------------------------------------------------------------
    def add_counter(self, int slot, long long value) -> None:
        """Add to this process's counter ``slot`` (0..15); read by anyone with ``counter``."""
        rb_add64(&self._counters[self.index * COUNTERS + slot], value)

    def counter(self, int proc, int slot) -> int:
        return rb_load64(&self._counters[proc * COUNTERS + slot])

    def counters_address(self) -> int:
        """The address of this process's first counter (``COUNTERS`` int64 words): for compiled code
        that stores counters every tag without a Python call (``_core.ProcessLink``); valid while this
        barrier's buffer is mapped."""
        return <size_t> &self._counters[self.index * COUNTERS]

    # ---- waiting ---------------------------------------------------------------------------
    cdef int _wait(self, int32_t *gen, int32_t old, int64_t *prog, int64_t position, int32_t *seq,
                   int32_t *waiters, int64_t **many=NULL, const char *pending=NULL, Py_ssize_t n=0) except -1:
        """Wait until ``*gen != old`` (``prog`` NULL: the generation barrier) or ``*prog >= position``
        (a progress word), or with ``many`` until any of its ``n`` progress words whose ``pending`` byte is set is
        at ``position``; raise on stop/check. Spin, then yield, then sleep in FUTEX_WAIT on
        ``seq`` (the word whose change announces progress: ``gen`` itself, or the process's
        sequence word), announcing the sleep in ``waiters`` first so the publisher knows to wake it
        (Dekker handshake: announce, re-read ``seq``, re-check, sleep on the value read). With ``count_cpu``
        and a core per process, adds the CPU the wait used to ``wait_cpu_ns`` (``__cinit__``): ``t_w0`` is
        when it began, ``c_w0`` the CPU clock from where it is read (-1: never), ``wall_part`` the wall time counted as CPU
        before that: the stretch from ``t_w0`` in which each yield, and each ``SPIN_CHECK + 1`` pauses of the spin,
        came back within ``YIELD_ALONE_NS`` (``t_prev``: when the last such stretch began). A spin that loses its core
        for longer than ``yield_gap_ns`` ends: the yield phase then hands the core to whoever wants it."""
        cdef long long i, t0, t_check, now
        cdef bint count = self.count_cpu and self._own  # (else `sync` and `reduce_at` read the CPU clock)
        cdef long long t_w0 = 0, c_w0 = -1, wall_part = 0
        cdef int32_t *stop = self._stop
        cdef long long spins = self.spin_iters
        cdef long long yield_ns = self._yield_cur if self._yield_cur < self.yield_ns else self.yield_ns
        cdef long long slice_ns = self.slice_ns
        cdef long long yield_gap_ns = self.yield_gap_ns
        cdef long long t_prev
        cdef bint yielded = 0
        cdef int32_t s
        cdef bint done = _reached(gen, old, prog, position, many, pending, n)
        if done:
            return 0
        with nogil:
            t_w0 = rb_now_ns()
            t_prev = t_w0
            for i in range(spins):
                rb_pause()
                if _reached(gen, old, prog, position, many, pending, n):
                    done = 1
                    break
                if (i & SPIN_CHECK) == SPIN_CHECK:
                    now = rb_now_ns()
                    if now - t_prev > YIELD_ALONE_NS:
                        # this stretch of the spin lost its core: the wall time no longer counts as CPU
                        if count and c_w0 < 0:
                            wall_part = t_prev - t_w0
                            c_w0 = rb_thread_cpu_ns()
                        if now - t_prev > yield_gap_ns:
                            break  # others want this core: yield it (the yield phase sees whether they still do)
                    t_prev = now
            if not done:
                yielded = 1
                t0 = rb_now_ns()
                if count and c_w0 < 0 and t0 - t_prev > YIELD_ALONE_NS:
                    wall_part = t_prev - t_w0
                    c_w0 = rb_thread_cpu_ns()  # it lost its core while spinning: the CPU clock from here
                t_prev = t0
                while True:
                    if _reached(gen, old, prog, position, many, pending, n):
                        done = 1
                        break
                    now = rb_now_ns()
                    if rb_load32(stop) != 0 or now - t0 > yield_ns:
                        break
                    if now - t_prev > yield_gap_ns:
                        # the last yield let other processes run for a while: the core is contended,
                        # and a yielding waiter only queues behind them; sleep instead (the publisher
                        # wakes a sleeper directly, and the kernel favours a woken sleeper)
                        self.yield_gaps += 1
                        break
                    if count and c_w0 < 0 and now - t_prev > YIELD_ALONE_NS:
                        # that yield let something else run: the wall time no longer counts as CPU
                        wall_part = t_prev - t_w0
                        c_w0 = rb_thread_cpu_ns()
                    sched_yield()
                    t_prev = now
            if count and c_w0 < 0:
                # the wall time counts up to the end of the waiter's last stretch on its own core
                now = rb_now_ns()
                wall_part = (t_prev if now - t_prev > YIELD_ALONE_NS else now) - t_w0
                if not done:  # to the futex sleep: from here the CPU clock
                    c_w0 = rb_thread_cpu_ns()
        # Adapt the yield phase (``adapt``: when processes outnumber cores): a wait that ends while
        # yielding lengthens the next one (up to ``yield_ns``), one that had to sleep halves it (down
        # to ``YIELD_FLOOR_NS``), so that waiters go to sleep early instead of queueing behind
        # others' time slices.
        if yielded and self.adapt:
            if done:
                self._yield_cur = min(self.yield_ns, self._yield_cur + self.yield_ns // 8)
            else:
                self._yield_cur = max(YIELD_FLOOR_NS, min(self._yield_cur, self.yield_ns) // 2)
        if done:
            if count:
                self._count_wait(c_w0, wall_part)
            return 0
        t_check = rb_now_ns()
        while True:
            if rb_load32(stop) != 0:
                raise Aborted(rb_load32(stop))
            with nogil:
                rb_add32(waiters, 1)
                s = rb_load32(seq)
                done = _reached(gen, old, prog, position, many, pending, n)
                if not done:
                    rb_futex_wait(seq, s, slice_ns)
                    done = _reached(gen, old, prog, position, many, pending, n)
                rb_add32(waiters, -1)
            if done:
                if count:
                    self._count_wait(c_w0, wall_part)
                return 0
            self.futex_sleeps += 1
            PyErr_CheckSignals()
            now = rb_now_ns()
            if self.check is not None and now - t_check >= self.check_ns:
                t_check = now
                self.check()

    cdef long long _outer_cpu(self) noexcept nogil:
        """With ``count_cpu`` where processes outnumber cores: the CPU clock now (a meeting or reduction then
        counts its whole CPU, two reads, instead of each of its waits), else -1 (its waits count themselves)."""
        return rb_thread_cpu_ns() if self.count_cpu and not self._own else -1

    cdef void _count_wait(self, long long c_w0, long long wall_part) noexcept nogil:
        """A wait ended now: add its CPU to ``wait_cpu_ns``: ``wall_part``, plus the CPU clock since ``c_w0``
        where it was read (`_wait`)."""
        self._cpu[0] += wall_part
        if c_w0 >= 0:
            self._cpu[0] += rb_thread_cpu_ns() - c_w0

    cdef int _arrive(self) except -1:
        cdef int32_t g = rb_load32(self._gen)
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        if rb_add32(self._count, 1) == self.nproc - 1:
            rb_store32(self._count, 0)
            rb_store32(self._gen, g + 1)
            if rb_load32(self._waiters) > 0:
                rb_futex_wake(self._gen)
            return 0
        self._wait(self._gen, g, NULL, 0, self._gen, self._waiters)
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        return 0

    def arrive(self) -> None:
        """Wait until all ``nproc`` processes have arrived (raises ``Aborted`` on stop)."""
        self._arrive()

    # ---- reduction cells -------------------------------------------------------------------
    cdef void _write_cell(self, int parity, int64_t t, int64_t m, int64_t st, int64_t sm,
                          int64_t flags) noexcept nogil:
        cdef int64_t *cell = &self._cells[(parity * self.nproc + self.index) * CELL_WORDS]
        cell[0] = t
        cell[1] = m
        cell[2] = st
        cell[3] = sm
        cell[4] = flags

    cdef void _minima(self, int parity, int64_t *out) noexcept nogil:
        """Lexicographic minima of every process's (t, m) and (st, sm) cells, OR of the flags, into ``out[0:5]``."""
        cdef int p
        cdef int64_t bt = _NEVER, bm = _NEVER, bst = _NEVER, bsm = _NEVER, bf = 0
        cdef int64_t *c
        for p in range(self.nproc):
            c = &self._cells[(parity * self.nproc + p) * CELL_WORDS]
            if c[0] < bt or (c[0] == bt and c[1] < bm):
                bt = c[0]
                bm = c[1]
            if c[2] < bst or (c[2] == bst and c[3] < bsm):
                bst = c[2]
                bsm = c[3]
            bf |= c[4]
        out[0] = bt
        out[1] = bm
        out[2] = bst
        out[3] = bsm
        out[4] = bf

    # ---- point-to-point progress -----------------------------------------------------------
    cdef int64_t *_progress(self, int p) noexcept nogil:
        return <int64_t *>(self._lines + p * LINE)

    cdef int32_t *_seq(self, int p) noexcept nogil:
        return <int32_t *>(self._lines + p * LINE + 8)

    cdef int32_t *_pwaiters(self, int p) noexcept nogil:
        return <int32_t *>(self._lines + p * LINE + 12)

    cdef int64_t *_pring(self, int p) noexcept nogil:
        """Process ``p``'s ring of its last ``STAMPS`` publishes: (position, time) int64 pairs."""
        return <int64_t *>(self._lines + p * LINE + RING)

    cdef void _publish(self, int64_t position) noexcept nogil:
        cdef int64_t *e
        cdef long long c
        if self.stamp:   # the ring entry first (a seqlock: position -1 while it is rewritten), then
            e = self._pring(self.index) + 2 * (self._npub % STAMPS)   # the position: a reader that
            rb_store64_rel(e, -1)                                      # sees the position finds its time
            rb_store64_rel(e + 1, rb_now_ns())                         # (release stores: ordered, and
            rb_store64_rel(e, position)                                # no fence each; the progress
            self._npub += 1                                            # store below is seq_cst)
        rb_store64(self._progress(self.index), position)
        rb_add32(self._seq(self.index), 1)
        if rb_load32(self._pwaiters(self.index)) > 0:
            if self.count_cpu and self._own:  # a hand-off's cost: a waiter with a core of its own sleeps rarely
                c = rb_thread_cpu_ns()
                rb_futex_wake(self._seq(self.index))
                self._cpu[0] += rb_thread_cpu_ns() - c
            else:
                rb_futex_wake(self._seq(self.index))

    cdef int _wait_for(self, int p, int64_t position) except -1:
        """Wait until process ``p``'s progress is at least ``position`` (raise on stop/check); with
        ``stamp`` on, a wait that had to wait adds its hand-off latency to ``handoff_ns``."""
        cdef int64_t *prog = self._progress(p)
        if rb_load64(prog) >= position:
            return 0
        self._wait(NULL, 0, prog, position, self._seq(p), self._pwaiters(p))
        if self.stamp:
            self._count_handoff(p, position)
        return 0

    cdef void _count_handoff(self, int p, int64_t position) noexcept:
        """A wait for process ``p`` to reach ``position`` had to wait and just saw it: add the hand-off (from the
        publish to now) to ``handoff_ns``."""
        cdef int64_t *e
        cdef int64_t now = rb_now_ns(), pos, pos2, t, first = _NEVER, t_first = 0
        cdef bint older = 0
        cdef int k
        # the first publish at or past ``position`` is the one this wait waited for; it is known
        # exactly when the ring still holds an earlier one (otherwise the partner published more than
        # STAMPS times since: not counted rather than guessed)
        for k in range(STAMPS):
            e = self._pring(p) + 2 * k
            pos = rb_load64_acq(e)
            t = rb_load64_acq(e + 1)
            pos2 = rb_load64_acq(e)
            if pos < 0 or pos != pos2:
                continue
            if pos < position:
                older = 1
            elif pos < first:
                first, t_first = pos, t
        if older and first != _NEVER and 0 < t_first <= now:
            self.handoff_ns += now - t_first
            self.handoffs += 1
            if self._handoff_counter >= 0:
                rb_store64_rel(&self._counters[self.index * COUNTERS + self._handoff_counter], self.handoff_ns)

    def wait_any(self, long long position, tuple ranks not None, bytearray pending not None) -> None:
        """Wait until at least one of the processes ``ranks[g]`` whose ``pending[g]`` is nonzero published a
        position >= ``position`` (none pending, or one there already: return at once). Raises ``Aborted`` on stop.

        Why: a meeting that reads several processes' slots (process 0 gathering a bank) reads each process's as
        soon as it is there (`_core.ProcessLink.meet`), so that only the last one's read follows the last
        arrival; waiting for them one after another would leave every read after it. The futex phase sleeps on
        the first pending process's word (a later one's publish is seen when that sleep's slice ends or the first
        publishes); with a core per process the wait spins and yields, checking them all."""
        self.c_wait_any(position, ranks, pending)

    cdef int c_wait_any(self, int64_t position, tuple ranks, bytearray pending) except -1:
        """`wait_any` for compiled callers (``ranks`` and ``pending`` not None)."""
        cdef Py_ssize_t n = len(ranks), g
        cdef int p
        if len(pending) < n or n > self.nproc:
            raise ValueError(f"{n} ranks for {len(pending)} pending bytes and {self.nproc} processes")
        for g in range(n):
            p = <int> ranks[g]
            if p < 0 or p >= self.nproc:
                raise IndexError(p)
            self._ranks[g] = p
            self._many[g] = self._progress(p)
        return self.c_wait_ready(position, self._ranks, self._many, pending, n)

    cdef int c_wait_ready(self, int64_t position, const int *ranks, int64_t **prog, const char *pend,
                          Py_ssize_t n) except -1:
        """`wait_any` with the ranks and their progress words (`progress_address`) already in C arrays of ``n``:
        a caller that waits on the same ranks every tag (`_core.ProcessLink.meet`) builds them once."""
        cdef Py_ssize_t g, first = -1
        cdef long long c
        cdef int p
        for g in range(n):
            if pend[g]:
                first = g
                break
        if first < 0 or _reached(NULL, 0, NULL, position, prog, pend, n):
            return 0
        c = self._outer_cpu()
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        p = ranks[first]
        self._wait(NULL, 0, NULL, position, self._seq(p), self._pwaiters(p), prog, pend, n)
        if self.stamp:
            for g in range(n):
                if pend[g] and rb_load64(prog[g]) >= position:
                    self._count_handoff(ranks[g], position)
                    break
        if c >= 0:
            self._cpu[0] += rb_thread_cpu_ns() - c
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        return 0

    def progress_address(self, int p) -> int:
        """The address of process ``p``'s progress word: for compiled code that checks, without a Python call,
        which of several processes has arrived (`_core.ProcessLink.meet`; read with acquire or stronger
        ordering); valid while this barrier's buffer is mapped."""
        if p < 0 or p >= self.nproc:
            raise IndexError(p)
        return <size_t> self._progress(p)

    def progress(self, int p) -> int:
        """Process ``p``'s published position."""
        if p < 0 or p >= self.nproc:
            raise IndexError(p)
        return rb_load64(self._progress(p))

    def publish(self, long long position) -> None:
        """Announce that this process reached ``position`` (positions must only grow)."""
        self._publish(position)

    def wait_for(self, int p, long long position) -> None:
        """Wait until process ``p`` has published a position >= ``position``."""
        if p < 0 or p >= self.nproc:
            raise IndexError(p)
        self._wait_for(p, position)
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))

    def sync(self, long long position, bint publish, tuple wait not None):
        """A level meeting: publish ``position`` (if ``publish``), then wait until every process
        in ``wait`` (ranks) reached it. Raises ``Aborted`` on stop."""
        self.c_sync(position, publish, wait)

    cdef int c_sync(self, int64_t position, bint publish, tuple wait) except -1:
        """`sync` for compiled callers (``wait`` not None)."""
        cdef object p
        cdef long long c = self._outer_cpu()
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        if publish:
            self._publish(position)
        for p in wait:
            self._wait_for(<int> p, position)
        if c >= 0:
            self._cpu[0] += rb_thread_cpu_ns() - c
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        return 0

    def reduce_at(self, long long position, long long t, long long m, long long st, long long sm,
                  long long flags):
        """All-process reduction at ``position``: returns ``(t*, m*, st*, sm*, flags*)``, the
        lexicographic minima over all processes of ``(t, m)`` (earliest next event tag) and
        ``(st, sm)`` (stop tag), and the OR of ``flags``, through the progress words (every process
        must call it with the same sequence of positions). A process waits for every other to publish; nobody
        waits for it after it published. Cells alternate by the parity of this process's count
        of reductions: a process can reuse a parity only after passing the next reduction, which
        every other process enters only after reading this one's cells."""
        cdef int64_t out[5]
        self.c_reduce_into(position, t, m, st, sm, flags, out)
        return out[0], out[1], out[2], out[3], out[4]

    cdef int c_reduce_into(self, int64_t position, int64_t t, int64_t m, int64_t st, int64_t sm, int64_t flags,
                           int64_t *out) except -1:
        """`reduce_at` for compiled callers: the result into ``out[0:5]`` (no tuple or ints to build and unpack
        every tag)."""
        cdef int parity = self._nred & 1
        cdef int p
        cdef long long c = self._outer_cpu()
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        self._write_cell(parity, t, m, st, sm, flags)
        self._publish(position)  # seq_cst store: the cell writes above are visible to whoever sees it
        for p in range(self.nproc):
            if p != self.index:
                self._wait_for(p, position)
        if c >= 0:
            self._cpu[1] = rb_thread_cpu_ns()
            self._cpu[0] += self._cpu[1] - c
        else:
            self._cpu[1] = -1
        if rb_load32(self._stop) != 0:
            raise Aborted(rb_load32(self._stop))
        self._nred += 1
        self._minima(parity, out)
        return 0
