# Included by _core.pyx (one compiled module: the core calls these without a Python frame).

cdef extern from *:
    """
    static inline void rb_link_store64(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    static inline int64_t rb_link_load64_acq(int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    """
    void rb_link_store64(int64_t *p, int64_t v) nogil
    int64_t rb_link_load64_acq(int64_t *p) nogil

cdef extern from *:
    """
    /* whether the import may refill a round's record tuples in place (`_refillable`): only where reference counts
       say who holds an object (not on free-threaded builds, whose counts are split between threads) and tuples
       keep nothing derived from their items (from 3.14 on a tuple caches its hash) */
    #if defined(Py_GIL_DISABLED) || PY_VERSION_HEX >= 0x030E0000
    #define RB_REFILL_RECORDS 0
    #else
    #define RB_REFILL_RECORDS 1
    #endif
    """
    bint RB_REFILL_RECORDS


#: the most tags the reader's breakdown totals wait for a meeting that waits (`ProcessLink.reduce`): where it never
#: waits (process 0 when its own member is the round's slowest) it reads the CPU clock at a tag's end only this often
cdef int64_t STORE_AFTER_TAGS = 16


cdef inline bint _refillable(Port root, SlotHotReader reader):
    """Whether the import may refill ``root``'s value in place with the slot's new record (`RecordCodec.refill`):
    the slot still has the layout decoded last (views, not copies), the value is the tuple its codec returned last,
    and nothing holds that tuple but the codec, ``root`` and the ports ``root`` reaches: nobody can see it change,
    and the import allocates and frees no tuple and no float (process 0 imports 15 results a round at
    ``workers=16``). A reaction that kept last round's result holds it too, and gets a new tuple this round."""
    cdef PyObject *v
    cdef Py_ssize_t held = 2, i
    cdef tuple fanout
    if not RB_REFILL_RECORDS or reader.mode != 3 or reader.words[1] != reader.layout or reader.rec.copy:
        return False  # (a copying reader's arrays are its own, writable: the port holds their read-only form)
    v = <PyObject *> root.value
    if v != <PyObject *> reader.rec.last or reader.rec.last is None:
        return False
    fanout = root.fanout
    for i in range(len(fanout)):
        if <PyObject *> (<Port> fanout[i]).value == v:
            held += 1
    return rb_refcnt(v) == held


cdef inline int64_t _mono_ns() noexcept nogil:
    """``time.perf_counter_ns()`` (CLOCK_MONOTONIC) without a Python call."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t> ts.tv_sec * 1_000_000_000 + ts.tv_nsec


cdef inline int64_t _thread_cpu_ns() noexcept nogil:
    """``time.thread_time_ns()`` (CLOCK_THREAD_CPUTIME_ID) without a Python call: the CPU this thread has used,
    which a process waiting for a core does not accumulate (unlike the monotonic clock)."""
    cdef timespec ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return <int64_t> ts.tv_sec * 1_000_000_000 + ts.tv_nsec


@cython.final
cdef class _Meeting:
    """One level's meeting (an item of `ProcessLink`'s ``meetings``) as `ProcessLink.meet` reads it every tag: the
    ranks it waits for and their progress words in C arrays, built once per run, so that a meeting converts no Python int
    per rank and tag (process 0 meets 15 ranks a round at ``workers=16``)."""
    cdef tuple flush        # (root port, SlotHotWriter) pairs written here
    cdef bint publish       # whether this process publishes its position here
    cdef Py_ssize_t n       # the ranks it waits for
    cdef int *ranks
    cdef int64_t **prog     # their progress words
    cdef tuple reads        # per rank: the (root port, SlotHotReader) pairs read from it
    cdef bytearray pending  # scratch: the ranks not read yet
    cdef char *pend

    def __cinit__(self, tuple m not None, int nproc):
        cdef Py_ssize_t g
        flush, publish, wait, imports, pending = m
        self.flush = flush
        self.publish = publish
        self.n = len(wait)
        self.reads = tuple(group[1] for group in imports)
        if len(imports) != self.n or len(pending) < self.n:
            raise ValueError("a meeting needs one import group and one pending byte per rank it waits for")
        self.pending = pending
        self.pend = self.pending
        self.ranks = <int *> malloc(max(self.n, 1) * sizeof(int))
        self.prog = <int64_t **> malloc(max(self.n, 1) * sizeof(int64_t *))
        if self.ranks == NULL or self.prog == NULL:
            raise MemoryError()
        for g in range(self.n):
            if not 0 <= wait[g] < nproc:
                raise IndexError(f"a meeting waits for rank {wait[g]} of {nproc} processes")
            self.ranks[g] = <int> wait[g]
            self.prog[g] = <int64_t *> <size_t> imports[g][0]

    def __dealloc__(self):
        free(self.ranks)
        free(self.prog)


cdef class ProcessLink:
    """The processes executor's per-level and per-tag protocol, run by the core itself.

    Why: in a fine-grained round (the actors microbenchmark, one CartPole step per member) the
    executor's Python per level and per tag (a method call per level, the meeting's loops, building
    ``Tag`` tuples for the tag-advance reduction) cost more than the reactions themselves. With a link
    set on the core (``core.link``), the core runs every level's reactions itself, does the level's
    meeting (``meet``) and, when the advance is a single reduction (fast mode, no keepalive: ``fast``),
    the tag-advance reduction too; the executor's Python runs only at start, at the end and for the
    collective physical waits of slow mode. The protocol itself (what is written, published, waited
    for and read at each level) is the executor's: see processes.py.

    ``meetings``: per level (a tuple indexed by level), None or ``(flush, publish, wait, imports, pending)``:
    ``flush`` the ``(root port, _codec.SlotHotWriter)`` pairs this process writes there, ``publish`` whether
    it publishes its position, ``wait`` the ranks it waits for, ``imports`` per rank of ``wait`` the address
    of its progress word (`_sync.Barrier.progress_address`) and the ``(root port, _codec.SlotHotReader)`` pairs
    it reads from that rank (the slot ends' compiled halves, called without a Python call: process 0 reads
    every other process's results at a round's gather), ``pending`` a bytearray of ``len(wait)`` bytes (the
    meeting's scratch: which ranks it has not read yet). Each rank's slots are read as soon as it has arrived,
    in whatever order they arrive, so only the last arrival's reads follow the last arrival.
    ``barrier``: the process's ``_sync.Barrier``. ``timed``: keep the
    breakdown's accumulators (ns) ``work``, ``transport`` and ``wait``, and store them with the loop
    time and the tag count into the barrier's counters (from ``counter_slot``: five int64 words, stored
    directly through ``barrier.counters_address()``, no Python call per tag; the barrier keeps the sixth,
    its hand-off total, itself), and the seventh, ``cpu``: this thread's CPU time outside the waits (role work,
    transport, the rest of the tag loop): the CPU clock read once per tag, less the CPU the
    barrier counted inside its waits and wake-ups (``Barrier.wait_cpu_ns``, turned on with ``count_cpu``: the
    wall time of a wait that kept its core, the CPU clock from where it did not). Unlike the monotonic clock the
    CPU clock does not run while the process waits for a core, so ``cpu`` reads the same with 16 processes on
    2 cores as on 16. It is a system call (no vDSO path), so it is not read around every wait: reading it there
    (six reads per round, two of them before a publish) lengthened every round's critical path. It is read where
    each tag ends, so that two readings of the counters differ by whole tags, except in the ``reader``: the process
    that reads the counters itself (process 0, the caller, at a paired job's block ends), which also goes on from a
    tag's end to start the next round (the scatter the others wait for), where the system call would delay every
    round. The reader stores its totals as it reads them (`store_now`: readings taken at one point of every round
    differ by whole rounds), and otherwise at the next meeting's wait that finds a rank not yet arrived (time it
    spends waiting anyway) or, where none came for ``STORE_AFTER_TAGS`` tags, at a tag's end. Where the barrier
    read the CPU clock itself on leaving the reduction (more processes than cores) every process stores there, at
    no cost. After the loop every process stores its totals and the tags it ran (`flush`: the last one, not
    reduced, included), and the reader stores nothing after. The eighth,
    ``overlap``: the part of ``transport`` spent reading ranks' slots while another rank of the same meeting had
    not yet arrived (each such read overlapped the wait for it: with a core per process, off the critical path).

    ``exclude(ns, cpu_ns)``: time the caller spent inside a reaction on something that is not the round's
    work (the harness's clock between a paired job's blocks, its reports between repetitions) is taken out of
    ``work``, the loop time and ``cpu`` when they are stored.
    """
    cdef public Barrier barrier
    cdef tuple _plans       # per level: None or its meeting as a `_Meeting`
    cdef public bint timed
    cdef public bint fast
    cdef public int64_t work
    cdef public int64_t transport
    cdef public int64_t overlap
    cdef public int64_t wait
    cdef public int64_t t_loop
    cdef public int64_t c_loop
    cdef public int64_t cpu_wait
    cdef int64_t *_wait_cpu
    cdef int64_t wait_cpu0
    cdef public int64_t excluded
    cdef public int64_t excluded_cpu
    cdef public int counter_slot
    cdef public int64_t never
    cdef int64_t *_ctr
    cdef readonly bint reader  # this process reads the counters itself: its tag ends store nothing
    cdef bint _pending      # the reader's totals not stored since a tag's end
    cdef bint _ended        # the tag loop has ended (`flush`): the counters hold its totals
    cdef uint64_t _tags     # the tags reduced so far
    cdef uint64_t _pending_from  # the tag count when they began to wait

    def __init__(self, Barrier barrier not None, tuple meetings, bint timed, bint fast, int counter_slot,
                 int64_t never, bint reader=False):
        self.barrier = barrier
        self._plans = tuple(None if m is None else _Meeting(m, barrier.nproc) for m in meetings)
        self.timed = timed
        self.fast = fast
        self.counter_slot = counter_slot
        self.never = never
        self.work = self.transport = self.wait = self.overlap = 0
        self.cpu_wait = self.excluded = self.excluded_cpu = 0
        self.t_loop = _mono_ns()
        self.c_loop = _thread_cpu_ns()
        self._ctr = NULL
        self._wait_cpu = NULL
        self.wait_cpu0 = 0
        self.reader = reader
        self._pending = self._ended = False
        self._tags = self._pending_from = 0
        if timed:
            if counter_slot < 0 or counter_slot + 8 > 16:
                raise IndexError("counter slots out of range")
            self._ctr = (<int64_t *> <size_t> barrier.counters_address()) + counter_slot
            self._wait_cpu = <int64_t *> <size_t> barrier.wait_cpu_address()
            self.wait_cpu0 = self._wait_cpu[0]

    cdef int meet(self, uint64_t epoch, Py_ssize_t level) except -1:
        """The meeting of this level (once per tag): write the slots this process owns there, publish
        as planned, then read each rank's slots as soon as it has arrived (``_set`` triggers the local
        readers), waiting (`_sync.Barrier.wait_any`) only while none of the rest has."""
        cdef _Meeting mt
        cdef tuple pair
        cdef char *pend
        cdef Port root
        cdef SlotHotReader reader
        cdef Py_ssize_t g, n, left, got
        cdef int64_t position = 0
        cdef int64_t t0 = 0, t1 = 0, t_sweep = 0, t_stored
        if level >= len(self._plans):
            return 0
        mt = <_Meeting> self._plans[level]
        if mt is None:
            return 0
        if self.timed:
            t0 = _mono_ns()
        for pair in mt.flush:
            root = <Port> pair[0]
            if root.is_present:
                (<SlotHotWriter> pair[1]).write(root.value, epoch)
        n = mt.n
        if mt.publish or n:
            position = meeting_position(epoch, level)
        if mt.publish:  # its time and CPU (a wake-up of sleepers) counted as a wait's, as `wait_any`'s below
            t1 = _mono_ns() if self.timed else 0
            self.barrier.c_sync(position, True, ())
            t0 += self._waited(t1)
        if n:
            pend = mt.pend
            memset(pend, 1, n)
            left = n
            while True:
                if self.timed:
                    t_sweep = _mono_ns()
                got = left
                for g in range(n):
                    if not pend[g] or rb_link_load64_acq(mt.prog[g]) < position:
                        continue
                    pend[g] = 0
                    left -= 1
                    for pair in <tuple> mt.reads[g]:
                        reader = <SlotHotReader> pair[1]
                        if reader.words[0] == <int64_t> epoch:  # its round stamp (`SlotHotReader.round`)
                            root = <Port> pair[0]
                            if _refillable(root, reader):
                                reader.rec.refill(<tuple> root.value)
                                # its items are the codec's: immutable scalars, read-only views
                                root._deliver(root.value, root.value)
                            else:
                                root._set(reader.read())
                if left == 0:
                    break
                t1 = _mono_ns() if self.timed else 0
                if got != left:  # this sweep's reads overlapped the wait for the ones still to come
                    self.overlap += t1 - t_sweep
                if self._pending:  # the reader's totals, while it waits anyway
                    self.store_now()
                    t_stored = _mono_ns()
                    t0 += t_stored - t1  # the store is the tag loop's own (``other``), not this meeting's transport
                    t1 = t_stored
                # its CPU counted by the barrier (``wait_cpu_ns``)
                self.barrier.c_wait_ready(position, mt.ranks, mt.prog, pend, n)
                t0 += self._waited(t1)
        if self.timed:
            self.transport += _mono_ns() - t0
        return 0

    cdef inline int64_t _waited(self, int64_t t1):
        """A wait that began at ``t1`` (timed) ended now: its time into ``wait``; returns it, to take out of
        the transport the meeting is timing (0 untimed)."""
        cdef int64_t d
        if not self.timed:
            return 0
        d = _mono_ns() - t1
        self.wait += d
        return d

    cdef int reduce(self, uint64_t epoch, uint64_t tags, int64_t t, int64_t m, int64_t st, int64_t sm,
                    int64_t *out) except -1:
        """The tag-advance reduction of fast mode: the minima over all processes of the next event tag
        and the stop tag (``never`` for none), into ``out[0:5]`` as ``(t, m, st, sm, flags)``."""
        cdef int64_t t0 = 0, t1
        if self.timed:
            t0 = _mono_ns()
        self.barrier.c_reduce_into(advance_position(epoch, 0), t, m, st, sm, 0, out)
        if self.timed:  # the wait's CPU counted by the barrier
            t1 = _mono_ns()
            self.wait += t1 - t0
            self._tags = tags
            if self._wait_cpu[1] >= 0:  # the barrier read the CPU clock on leaving: the totals now, at no cost
                self._pending = False
                self._store(t1, self._wait_cpu[1], tags)
            elif not self.reader:
                self._store(t1, _thread_cpu_ns(), tags)
            elif not self._pending:  # as it reads them, or at its next wait (`meet`): off the critical path
                self._pending = True
                self._pending_from = tags
            elif tags - self._pending_from >= <uint64_t> STORE_AFTER_TAGS:  # no meeting waited for that long
                self.store_now()
        return 0

    cpdef store_now(self):
        """This process's totals into its counters now, with the tags reduced so far (the reader's: before it
        reads the counters, and after its last tag); nothing once the tag loop has ended (`flush`), whose totals
        the counters then hold."""
        if self._ended:
            return
        self._pending = False
        self._store(_mono_ns(), _thread_cpu_ns(), self._tags)

    cpdef flush(self, uint64_t tags):
        """The tag loop has ended, after ``tags`` tags (the last one not reduced): every process stores its totals,
        so the counters hold the whole loop (its waits, whose hand-offs the barrier has already counted, included);
        the reader stores nothing after."""
        if not self._ended:
            self._tags = tags
            self.store_now()
            self._ended = True

    cpdef store(self, int64_t now, uint64_t tags):
        """This process's breakdown totals into its counters in the control block (readable by all)."""
        self._pending = False
        self._store(now, _thread_cpu_ns(), tags)

    cdef void _store(self, int64_t now, int64_t cpu_now, uint64_t tags):
        if self._ctr == NULL:
            return
        rb_link_store64(self._ctr, self.work - self.excluded)
        rb_link_store64(self._ctr + 1, self.transport)
        rb_link_store64(self._ctr + 2, self.wait)
        rb_link_store64(self._ctr + 3, now - self.t_loop - self.excluded)
        rb_link_store64(self._ctr + 4, <int64_t> tags)
        rb_link_store64(self._ctr + 7, self.overlap)
        rb_link_store64(self._ctr + 6, cpu_now - self.c_loop - self.cpu_wait - (self._wait_cpu[0] - self.wait_cpu0)
                        - self.excluded_cpu)

    def exclude(self, int64_t ns, int64_t cpu_ns) -> None:
        """Take ``ns`` of wall time and ``cpu_ns`` of this thread's CPU, spent inside a reaction on something
        other than the program's work, out of the stored ``work``, loop time and ``cpu``."""
        self.excluded += ns
        self.excluded_cpu += cpu_ns

    def now(self) -> int:
        """The clock of the accumulators (``time.perf_counter_ns``)."""
        return _mono_ns()

    def cpu_now(self) -> int:
        """The clock of ``cpu`` (``time.thread_time_ns``: this thread's CPU time)."""
        return _thread_cpu_ns()
