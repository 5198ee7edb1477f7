# Included by _core.pyx (one compiled module: the core calls these without a Python frame).

cdef extern from *:
    """
    static inline void rb_link_store64(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    """
    void rb_link_store64(int64_t *p, int64_t v) nogil

cdef inline int64_t _mono_ns() noexcept nogil:
    """``time.perf_counter_ns()`` (CLOCK_MONOTONIC) without a Python call."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t> ts.tv_sec * 1_000_000_000 + ts.tv_nsec


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

    ``meetings``: per level (a tuple indexed by level), None or ``(flush, publish, wait, imports)``:
    ``flush`` the ``(root port, slot writer)`` pairs this process writes there, ``publish`` whether it
    publishes its position, ``wait`` the ranks it waits for, ``imports`` the ``(root port, slot
    reader)`` pairs it reads. ``barrier``: the process's ``_sync.Barrier``. ``timed``: keep the
    breakdown's accumulators (ns) ``work``, ``transport`` and ``wait``, and store them with the loop
    time and the tag count into the barrier's counters (from ``counter_slot``: five int64 words, stored
    directly through ``barrier.counters_address()``, no Python call per tag; the barrier keeps the sixth,
    its hand-off total, itself) at each reduction.
    """
    cdef public object barrier
    cdef public tuple meetings
    cdef public bint timed
    cdef public bint fast
    cdef public int64_t work
    cdef public int64_t transport
    cdef public int64_t wait
    cdef public int64_t t_loop
    cdef public int counter_slot
    cdef public int64_t never
    cdef object _meeting_position
    cdef object _advance_position
    cdef int64_t *_ctr

    def __init__(self, barrier, tuple meetings, bint timed, bint fast, int counter_slot, int64_t never,
                 meeting_position, advance_position):
        self.barrier = barrier
        self.meetings = meetings
        self.timed = timed
        self.fast = fast
        self.counter_slot = counter_slot
        self.never = never
        self._meeting_position = meeting_position
        self._advance_position = advance_position
        self.work = self.transport = self.wait = 0
        self.t_loop = _mono_ns()
        self._ctr = NULL
        if timed:
            if counter_slot < 0 or counter_slot + 5 > 8:
                raise IndexError("counter slots out of range")
            self._ctr = (<int64_t *> <size_t> barrier.counters_address()) + counter_slot

    cdef int meet(self, uint64_t epoch, Py_ssize_t level) except -1:
        """The meeting of this level (once per tag): write the slots this process owns there, publish
        and wait as planned, then deliver what it reads (``_set`` triggers the local readers)."""
        cdef object m
        cdef tuple pair, wait
        cdef Port root
        cdef bint publish
        cdef int64_t t0 = 0, t1 = 0, t2 = 0
        if level >= len(self.meetings):
            return 0
        m = self.meetings[level]
        if m is None:
            return 0
        if self.timed:
            t0 = _mono_ns()
        for pair in <tuple> m[0]:
            root = <Port> pair[0]
            if root.is_present:
                pair[1].write(root.value, epoch)
        publish = m[1]
        wait = <tuple> m[2]
        if self.timed:
            t1 = _mono_ns()
        if publish or wait:
            self.barrier.sync(self._meeting_position(epoch, level), publish, wait)
        if self.timed:
            t2 = _mono_ns()
        for pair in <tuple> m[3]:
            reader = pair[1]
            if reader.round() == epoch:
                (<Port> pair[0])._set(reader.read())
        if self.timed:
            self.transport += (t1 - t0) + (_mono_ns() - t2)
            self.wait += t2 - t1
        return 0

    cdef tuple reduce(self, uint64_t epoch, uint64_t tags, int64_t t, int64_t m, int64_t st, int64_t sm):
        """The tag-advance reduction of fast mode: the minima over all processes of the next event tag
        and the stop tag (``never`` for none), as ``(t, m, st, sm, flags)``."""
        cdef int64_t t0 = 0, t1
        if self.timed:
            t0 = _mono_ns()
        res = self.barrier.reduce_at(self._advance_position(epoch, 0), t, m, st, sm, 0)
        if self.timed:
            t1 = _mono_ns()
            self.wait += t1 - t0
            self.store(t1, tags)
        return <tuple> res

    cpdef store(self, int64_t now, uint64_t tags):
        """This process's breakdown totals into its counters in the control block (readable by all)."""
        if self._ctr == NULL:
            return
        rb_link_store64(self._ctr, self.work)
        rb_link_store64(self._ctr + 1, self.transport)
        rb_link_store64(self._ctr + 2, self.wait)
        rb_link_store64(self._ctr + 3, now - self.t_loop)
        rb_link_store64(self._ctr + 4, <int64_t> tags)

    def now(self) -> int:
        """The clock of the accumulators (``time.perf_counter_ns``)."""
        return _mono_ns()
