# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible = True
"""Compiled hot paths of the reactor runtime: ports, actions, timers, reactions and the scheduler core.

Why compiled: the per-tag work (setting a port, triggering downstream reactions, the tag-ordered event
queue, the level-ordered ready queue, resetting presence, advancing the tag) runs once per reaction and
must cost well under a microsecond.

One compiled module (the core calls its parts without a Python frame), written as one file per concept,
included in this order (textual includes: the compiled code is the same as one file's):

- ``_lock.pxi``: the core's lock (free-threaded builds);
- ``_freeze.pxi``: value freezing (what readers of a port receive);
- ``_modes.pxi``: a mode's state and the core's hooks into ``modes.py``;
- ``_reactions.pxi``: reactions and the per-reactor context;
- ``_ports.pxi``: triggers and ports;
- ``_actions.pxi``: timers, actions and events;
- ``_link.pxi``: the processes executor's per-level and per-tag protocol;
- this file: the event kinds and the scheduler (`Core`: event queue, ready queue, the tag loop).

Data structures (all owned by `Core`):
- event queue: a binary heap of C structs ``(time, microstep, seq, Event*)``; ``seq`` keeps insertion
  order among events of one tag, so firing order is deterministic.
- ready queue: a binary heap of borrowed ``Reaction*`` keyed by ``Reaction.index`` (the global
  topological order: level first, then inherited deadline, then declaration order), so reactions come
  out level by level in a deterministic order whatever thread triggered them; under the inline
  executor keyed by ``Reaction.priority`` (earliest inherited deadline first, then level: LF's
  single-threaded order, also topological because a deadline is inherited upstream).
- presence list: a C array of the triggers (ports, actions, timers) made present in this tag; only
  those are reset at the end of the tag.

Thread safety (docs/reactor.md, "Threads and free-threaded Python"): under the GIL, every mutation of
these structures happens inside one C function that calls no Python code, so worker threads of the
``threads`` executor can set ports concurrently. Without a GIL (free-threaded CPython) set
``core.locking = True`` (the threads executor does it when ``sys._is_gil_enabled()`` is False): the
operations reactions perform concurrently (mark present, trigger a reaction, queue an event, request
a stop) then take a lock; pops happen only between levels, in the thread that runs the tag loop.
Everything else a reaction touches belongs to one reactor (its ports' values, caches and pending
events, its actions, its context), and one reactor's reactions never share a level.
"""
cimport cython
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset
from libc.stdint cimport int64_t, uint64_t
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_REFCNT
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

include "_lock.pxi"

cimport numpy as cnp
from reactor_backend._codec cimport RecordCodec, SlotHotReader, SlotHotWriter
from reactor_backend._sync cimport Barrier, advance_position, meeting_position

import copy as _copy_mod
import threading
import time as _pytime

import numpy as _np

from reactor_backend.errors import ReactionError
from reactor_backend.readonly import ReadOnlyDict as _RODict, ReadOnlyList as _ROList, ReadOnlySet as _ROSet
from reactor_backend.timeutil import Tag

cdef object _time_ns = _pytime.time_ns
cdef object _ndarray = _np.ndarray
cdef object _deepcopy = _copy_mod.deepcopy
cnp.import_array()

include "_freeze.pxi"

# Event kinds
cdef enum:
    EV_TIMER = 0
    EV_ACTION = 1
    EV_PORT = 2
    EV_CANCELLED = 3

cdef int64_t NEVER_LEVEL = 1 << 62

# outcomes of Core._decide_next
cdef enum:
    NEXT_EVENT = 0
    NEXT_FINAL = 1
    NEXT_WAIT = 2

include "_modes.pxi"
include "_reactions.pxi"
include "_ports.pxi"
include "_actions.pxi"
include "_link.pxi"


cdef struct HeapEntry:
    int64_t time
    int64_t mstep
    uint64_t seq
    PyObject* ev


cdef inline bint _entry_lt(HeapEntry* a, HeapEntry* b) nogil:
    if a.time != b.time:
        return a.time < b.time
    if a.mstep != b.mstep:
        return a.mstep < b.mstep
    return a.seq < b.seq


@cython.final
cdef class Core:
    """The scheduler of one process: event queue, ready queue, presence reset and the tag loop.

    Public fields an executor may read: ``time``, ``mstep``, ``start_time``, ``epoch`` (tag counter),
    ``program``.
    """
    cdef public int64_t time
    cdef public int64_t mstep
    cdef public int64_t start_time
    cdef public uint64_t epoch
    cdef public object program
    cdef public object executor
    cdef public bint fast
    cdef public bint keepalive
    cdef public int64_t timeout        # -1: none
    cdef public uint64_t tags
    cdef public uint64_t reactions_run
    cdef public SpecialTrigger startup_trigger
    cdef public SpecialTrigger shutdown_trigger
    cdef public tuple timers
    cdef public list mode_changes      # reactors whose reactions called set_mode() in this tag
    cdef bint _in_shutdown
    cdef public object barrier_levels  # sorted tuple of levels, or None
    cdef public object wake_hook       # executors: called (any thread) after an inbox append, or None
    cdef public ProcessLink link       # processes executor: its meetings and reductions, run here (or None)
    cdef bint _inline
    cdef bint _inline_singletons
    cdef bint _has_advance
    cdef int64_t _stop_t
    cdef int64_t _stop_m
    cdef bint _stop
    # event heap
    cdef HeapEntry* _eh
    cdef Py_ssize_t _en
    cdef Py_ssize_t _ecap
    cdef uint64_t _seq
    # ready heap (borrowed Reaction pointers)
    cdef PyObject** _rh
    cdef Py_ssize_t _rn
    cdef Py_ssize_t _rcap
    # presence list (borrowed Trigger pointers)
    cdef PyObject** _pl
    cdef Py_ssize_t _pn
    cdef Py_ssize_t _pcap
    # physical inbox
    cdef object _inbox_lock
    cdef list _inbox
    cdef object _wake
    cdef bint _running
    cdef public bint locking          # take _lock (a spinlock) in the concurrent operations (no-GIL builds)
    cdef int _lock                    # rb_core_lock's word

    def __cinit__(self):
        self._lock = 0
        self.locking = False
        self._ecap = 64
        self._eh = <HeapEntry*> malloc(self._ecap * sizeof(HeapEntry))
        self._rcap = 64
        self._rh = <PyObject**> malloc(self._rcap * sizeof(PyObject*))
        self._pcap = 64
        self._pl = <PyObject**> malloc(self._pcap * sizeof(PyObject*))
        self._en = 0
        self._rn = 0
        self._pn = 0
        self._seq = 0
        if self._eh == NULL or self._rh == NULL or self._pl == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self._eh != NULL:
            for i in range(self._en):
                Py_DECREF(<object> self._eh[i].ev)
            free(self._eh)
        free(self._rh)
        free(self._pl)

    def __init__(self, program, executor, *, bint fast=True, bint keepalive=False, timeout=None):
        cdef Reaction rx
        self.program = program
        self.executor = executor
        self.fast = fast
        self.keepalive = keepalive
        self.timeout = -1 if timeout is None else int(timeout)
        self.time = 0
        self.mstep = 0
        self.start_time = 0
        self.epoch = 0
        self.tags = 0
        self.reactions_run = 0
        self._stop = False
        self.startup_trigger = program.startup
        self.shutdown_trigger = program.shutdown
        self.timers = program.timers
        self._inline = bool(getattr(executor, "inline", False))
        self._inline_singletons = bool(getattr(executor, "inline_singletons", False))
        self._has_advance = getattr(executor, "advance", None) is not None
        self.barrier_levels = getattr(executor, "barrier_levels", None)
        self.wake_hook = None
        self.mode_changes = []
        self._in_shutdown = False
        self._inbox_lock = threading.Lock()
        self._inbox = []
        self._wake = threading.Event()
        self._running = False
        self._begin_run(program)

    cdef _begin_run(self, program):
        """Take over the program's objects for this run: everything a previous run left in them (trigger
        presence and values, pending delayed events, action spacing history, reaction trigger stamps)
        is reset, so an assembled program is a plan that runs again with the same results."""
        cdef Trigger trig
        cdef Port port
        cdef Action act
        cdef Reaction r
        for trig in program.triggers:
            trig.core = self
            trig.is_present = False
            trig.value = None
            if isinstance(trig, Port):
                port = <Port> trig
                port._pending = None
                port._pending_epoch = 0
            elif isinstance(trig, Action):
                act = <Action> trig
                act._pending = []
                act._last_ev = None
                act._has_last = False
        for r in program.reactions:
            r.epoch = 0
            r.ctx.current = -1
            # inline: LF's single-threaded order (earliest inherited deadline first, a topological
            # order too); level by level otherwise, earliest deadline first within a level
            r.key = r.priority if self._inline else r.index

    # ---- queues ---------------------------------------------------------------------------
    cdef inline int _mark(self, Trigger t) except -1:
        if not self.locking and self._pn < self._pcap:  # the common case, inline (several marks a set)
            self._pl[self._pn] = <PyObject*> t
            self._pn += 1
            return 0
        if self.locking:
            rb_core_lock(&self._lock)
            try:
                return self._mark_u(t)
            finally:
                rb_core_unlock(&self._lock)
        return self._mark_u(t)

    cdef int _mark_u(self, Trigger t) except -1:
        if self._pn == self._pcap:
            self._pcap *= 2
            self._pl = <PyObject**> realloc(self._pl, self._pcap * sizeof(PyObject*))
            if self._pl == NULL:
                raise MemoryError()
        self._pl[self._pn] = <PyObject*> t
        self._pn += 1
        return 0

    cdef inline int _trigger(self, Reaction r) except -1:
        if r.epoch == self.epoch and not self.locking:  # already queued at this tag (a bank's gather: every
            return 0                                    # channel but the first), inline
        if self.locking:
            rb_core_lock(&self._lock)
            try:
                return self._trigger_u(r)
            finally:
                rb_core_unlock(&self._lock)
        return self._trigger_u(r)

    cdef int _trigger_u(self, Reaction r) except -1:
        cdef Py_ssize_t i, parent
        cdef PyObject* tmp
        if r.epoch == self.epoch or not r.local:
            return 0
        if r.mode is not None and not r.mode.active and not (self._in_shutdown and r.mode.entered):
            return 0
        r.epoch = self.epoch
        if self._rn == self._rcap:
            self._rcap *= 2
            self._rh = <PyObject**> realloc(self._rh, self._rcap * sizeof(PyObject*))
            if self._rh == NULL:
                raise MemoryError()
        i = self._rn
        self._rn += 1
        self._rh[i] = <PyObject*> r
        while i > 0:
            parent = (i - 1) >> 1
            if (<Reaction> self._rh[parent]).key <= r.key:
                break
            self._rh[i] = self._rh[parent]
            i = parent
        self._rh[i] = <PyObject*> r
        return 0

    cdef inline int _trigger_all(self, tuple rs) except -1:
        cdef Py_ssize_t i
        for i in range(len(rs)):  # the runtime builds these tuples of Reactions: no type test per item
            self._trigger(<Reaction> rs[i])
        return 0

    cdef Reaction _pop_ready(self):
        cdef Reaction top = <Reaction> self._rh[0]
        cdef Py_ssize_t i = 0, child, n
        cdef PyObject* last
        self._rn -= 1
        n = self._rn
        if n > 0:
            last = self._rh[n]
            while True:
                child = 2 * i + 1
                if child >= n:
                    break
                if child + 1 < n and (<Reaction> self._rh[child + 1]).key < (<Reaction> self._rh[child]).key:
                    child += 1
                if (<Reaction> last).key <= (<Reaction> self._rh[child]).key:
                    break
                self._rh[i] = self._rh[child]
                i = child
            self._rh[i] = last
        return top

    cdef int _push_event(self, int64_t t, int64_t m, Event ev) except -1:
        if self.locking:
            rb_core_lock(&self._lock)
            try:
                return self._push_event_u(t, m, ev)
            finally:
                rb_core_unlock(&self._lock)
        return self._push_event_u(t, m, ev)

    cdef int _push_event_u(self, int64_t t, int64_t m, Event ev) except -1:
        cdef Py_ssize_t i, parent
        cdef HeapEntry e
        if self._en == self._ecap:
            self._ecap *= 2
            self._eh = <HeapEntry*> realloc(self._eh, self._ecap * sizeof(HeapEntry))
            if self._eh == NULL:
                raise MemoryError()
        Py_INCREF(ev)
        e.time = t
        e.mstep = m
        e.seq = self._seq
        self._seq += 1
        e.ev = <PyObject*> ev
        i = self._en
        self._en += 1
        while i > 0:
            parent = (i - 1) >> 1
            if not _entry_lt(&e, &self._eh[parent]):
                break
            self._eh[i] = self._eh[parent]
            i = parent
        self._eh[i] = e
        return 0

    cdef object _pop_event(self):
        """Remove the earliest entry; return its Event (new reference)."""
        cdef HeapEntry top = self._eh[0]
        cdef HeapEntry last
        cdef Py_ssize_t i = 0, child, n
        self._en -= 1
        n = self._en
        if n > 0:
            last = self._eh[n]
            while True:
                child = 2 * i + 1
                if child >= n:
                    break
                if child + 1 < n and _entry_lt(&self._eh[child + 1], &self._eh[child]):
                    child += 1
                if not _entry_lt(&self._eh[child], &last):
                    break
                self._eh[i] = self._eh[child]
                i = child
            self._eh[i] = last
        ev = <object> top.ev
        Py_DECREF(ev)  # the heap's reference; `ev` holds its own
        return ev

    def push_port_event(self, Port port, int64_t t, int64_t m, value, ModeState mode=None) -> None:
        """Modes: queue a delayed connection's value for ``port`` at (t, m) (a history re-entry)."""
        cdef Event ev = _new_event(EV_PORT, port, value, t, m)
        self._push_event(t, m, ev)
        if mode is not None:
            _track_mode_event(mode, ev, t, m, self)

    def push_timer_event(self, Timer tm, int64_t t, int64_t m) -> None:
        """Modes: (re)start a timer at (t, m); its previous queued event must have been cancelled."""
        cdef Event ev = _new_event(EV_TIMER, tm, None, t, m)
        tm.event = ev
        tm.next_time = t
        self._push_event(t, m, ev)

    def next_event_tag(self):
        """Tag of the earliest queued event, or None."""
        if self._en == 0:
            return None
        return Tag(self._eh[0].time, self._eh[0].mstep)

    # ---- API for reactions ----------------------------------------------------------------
    def request_stop(self) -> None:
        """Stop at the microstep after the current tag (a second request changes nothing)."""
        if not self._running:
            return
        if self.locking:  # reactions of one level may call it at once (free-threaded builds)
            rb_core_lock(&self._lock)
        if not self._stop:
            self._stop = True
            self._stop_t = self.time
            self._stop_m = self.mstep + 1
        if self.locking:
            rb_core_unlock(&self._lock)

    def request_stop_external(self) -> None:
        """Stop from a thread that is not running a reaction: at the next tag (handled at tag advance)."""
        with self._inbox_lock:
            self._inbox.append(None)
        self._wake.set()
        if self.wake_hook is not None:
            self.wake_hook()

    def schedule_physical(self, Action action, int64_t delay, value) -> None:
        """Thread-safe: queue a physical action event at physical time now + min_delay + delay."""
        cdef int64_t t = _time_ns() + action.min_delay + delay
        with self._inbox_lock:
            self._inbox.append((t, action, value))
        self._wake.set()
        if self.wake_hook is not None:
            self.wake_hook()

    cdef int _drain_inbox(self) except -1:
        cdef int64_t t, m
        cdef Action a
        if not self._inbox:
            return 0
        with self._inbox_lock:
            items = self._inbox
            self._inbox = []
        for item in items:
            if item is None:
                if not self._stop:
                    self._stop = True
                    self._stop_t = self.time
                    self._stop_m = self.mstep + 1
                continue
            t = item[0]
            a = item[1]
            if t <= self.time:
                t = self.time
                m = self.mstep + 1
            else:
                m = 0
            if a.mode is not None and not a.mode.active:
                # a physical action of an inactive mode: kept with the mode (history resumes it)
                a.mode.suspended.append((a, t, m, item[2]))
                continue
            if a.min_spacing >= 0:
                a._place(t, m, item[2])
            else:
                a._push_at(t, m, item[2])
        return 0

    def drain_inbox(self) -> None:
        """Executors: move physical events / external stop requests from the inbox to the queue."""
        self._drain_inbox()

    @property
    def inbox_pending(self) -> bool:
        """Executors: True when a physical event or stop request waits in the inbox."""
        return bool(self._inbox)

    @property
    def stop_tag(self):
        return Tag(self._stop_t, self._stop_m) if self._stop else None

    def set_stop_tag(self, tag) -> None:
        """Executors: impose an agreed stop tag (e.g. the minimum over processes)."""
        if tag is None:
            return
        self._stop = True
        self._stop_t = tag[0]
        self._stop_m = tag[1]

    # ---- execution --------------------------------------------------------------------------
    cpdef execute(self, Reaction r):
        """Run one reaction: deadline check, body or handler, error wrapping. Executors call this."""
        cdef ReactorCtx ctx = r.ctx
        ctx.current = r.local_index
        try:
            if r.deadline >= 0 and _time_ns() > self.time + r.deadline:
                if r.handler is not None:
                    r.handler()
            else:
                r.fn()
        except BaseException as exc:
            ctx.current = -1
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            err = ReactionError(
                f"reaction {r.full_name} failed at tag {Tag(self.time - self.start_time, self.mstep)} "
                f"(elapsed ns, microstep): {type(exc).__name__}: {exc}")
            err.reactor = getattr(r.reactor, "name", None)
            err.reaction = r.name
            err.tag = Tag(self.time, self.mstep)
            raise err from exc
        ctx.current = -1

    cdef int _run_levels(self) except -1:
        """Run the tag's ready reactions level by level. Without a link, each level (and each meeting
        level, even with nothing ready) goes to ``executor.run_level``; with one (the processes
        executor), the core runs every level itself and does the link's meeting at each meeting level
        before that level's reactions (reactions an import triggers at the same level run right after)."""
        cdef Reaction r
        cdef list batch
        cdef Py_ssize_t bi = 0, nb, i, n
        cdef tuple bars
        cdef int64_t top_level, bar_level, cur
        cdef ProcessLink link = self.link
        cdef bint singletons = self._inline_singletons or link is not None
        if self._inline:
            while self._rn > 0:
                r = self._pop_ready()
                self.reactions_run += 1
                self.execute(r)
            return 0
        bars = self.barrier_levels if self.barrier_levels is not None else ()
        nb = len(bars)
        cur = -1
        executor = self.executor
        while True:
            top_level = (<Reaction> self._rh[0]).level if self._rn > 0 else NEVER_LEVEL
            while bi < nb and <int64_t> bars[bi] <= cur:
                bi += 1
            bar_level = <int64_t> bars[bi] if bi < nb else NEVER_LEVEL
            cur = top_level if top_level < bar_level else bar_level
            if cur == NEVER_LEVEL:
                break
            if (singletons and cur == top_level and cur != bar_level
                    and (self._rn == 1 or (self._rn > 1 and self._second_level() != cur))):
                # a level with a single ready reaction and no barrier: no dispatch needed
                r = self._pop_ready()
                self.reactions_run += 1
                self._execute_linked(r, link)
                continue
            batch = []
            while self._rn > 0 and (<Reaction> self._rh[0]).level == cur:
                batch.append(self._pop_ready())
            n = len(batch)
            self.reactions_run += n
            if link is None:
                executor.run_level(<int> cur, batch)
                continue
            if cur == bar_level:
                link.meet(self.epoch, cur)
            for i in range(n):
                self._execute_linked(<Reaction> batch[i], link)
        return 0

    cdef inline int _execute_linked(self, Reaction r, ProcessLink link) except -1:
        """``execute``, timed as role work into the link's breakdown when it keeps one."""
        cdef int64_t t0
        if link is None or not link.timed:
            self.execute(r)
            return 0
        t0 = _mono_ns()
        self.execute(r)
        link.work += _mono_ns() - t0
        return 0

    cdef inline int64_t _second_level(self):
        """Smallest level among the ready reactions other than the top (a child of the root)."""
        cdef int64_t a = NEVER_LEVEL, b = NEVER_LEVEL
        if self._rn > 1:
            a = (<Reaction> self._rh[1]).level
        if self._rn > 2:
            b = (<Reaction> self._rh[2]).level
        return a if a < b else b

    cdef int _fire_events_at(self, int64_t t, int64_t m) except -1:
        cdef Event ev
        cdef Trigger trig
        cdef Timer tm
        cdef Action a
        cdef int64_t nt
        while self._en > 0 and self._eh[0].time == t and self._eh[0].mstep == m:
            ev = <Event> self._pop_event()
            if ev.kind == EV_CANCELLED:
                continue
            if ev.kind == EV_PORT:
                (<Port> ev.target)._set(ev.value)
            elif ev.kind == EV_ACTION:
                a = <Action> ev.target
                a._fired(ev)
                a.value = ev.value
                if not a.is_present:
                    a.is_present = True
                    self._mark(a)
                    self._trigger_all(a.reactions)
            else:
                tm = <Timer> ev.target
                if not tm.is_present:
                    tm.is_present = True
                    self._mark(tm)
                    self._trigger_all(tm.reactions)
                if tm.period > 0:
                    # queued even past the timeout: a pending event means "not starved" (as in LF)
                    ev.time = t + tm.period
                    ev.mstep = 0
                    self._push_event(t + tm.period, 0, ev)
                    tm.next_time = t + tm.period
        return 0

    cdef int _reset_presence(self) except -1:
        cdef Py_ssize_t i
        for i in range(self._pn):
            (<Trigger> self._pl[i]).is_present = False
        self._pn = 0
        return 0

    cdef bint _wait_physical(self, int64_t until):
        """Sleep until physical time `until` or until a physical event arrives. True if woken early."""
        cdef int64_t now
        while True:
            if self._inbox:
                return True
            now = _time_ns()
            if now >= until:
                return False
            self._wake.clear()
            if self._inbox:
                return True
            self._wake.wait(min((until - now) / 1e9, 0.2))

    cdef int _decide_next(self, bint has_next, int64_t nt, int64_t nm, bint has_stop, int64_t st, int64_t sm,
                          int64_t *out_t, int64_t *out_m):
        """The next-tag decision (the one definition; multi-process executors use ``decide_next``).

        Given the earliest queued event ``(nt, nm)`` (if ``has_next``) and the stop tag ``(st, sm)``
        (if ``has_stop``): ``NEXT_EVENT`` (process the event's tag), ``NEXT_FINAL`` (the final tag,
        the stop tag or the timeout if that comes first, is next) or ``NEXT_WAIT`` (nothing queued and
        no end: wait for a physical event). The chosen tag goes to ``out_t``/``out_m``."""
        cdef bint has_final = has_stop or self.timeout >= 0
        cdef int64_t ft = 0, fm = 0
        if has_stop:
            ft = st
            fm = sm
            if self.timeout >= 0 and self.start_time + self.timeout < ft:
                ft = self.start_time + self.timeout
                fm = 0
        elif self.timeout >= 0:
            ft = self.start_time + self.timeout
            fm = 0
        if has_next and (not has_final or nt < ft or (nt == ft and nm < fm)):
            out_t[0] = nt
            out_m[0] = nm
            return NEXT_EVENT
        if has_final:
            out_t[0] = ft
            out_m[0] = fm
            return NEXT_FINAL
        return NEXT_WAIT

    def decide_next(self, nxt, stop):
        """Executors: the core's next-tag decision for an agreed next event tag and stop tag (each a
        ``(time, microstep)`` or None): ``("event", tag)``, ``("final", tag)`` or ``("wait", None)``."""
        cdef int64_t t = 0, m = 0
        cdef int d = self._decide_next(nxt is not None, nxt[0] if nxt is not None else 0,
                                       nxt[1] if nxt is not None else 0, stop is not None,
                                       stop[0] if stop is not None else 0, stop[1] if stop is not None else 0,
                                       &t, &m)
        if d == NEXT_WAIT:
            return "wait", None
        return ("event" if d == NEXT_EVENT else "final"), Tag(t, m)

    def run(self, int64_t start_time) -> None:
        """The tag loop: startup at ``start_time``, then tag by tag until the final tag is processed."""
        cdef int64_t t = start_time, m = 0
        cdef int64_t nt = 0, nm = 0
        cdef int64_t reduced[5]  # the processes executor's tag-advance reduction (`ProcessLink.reduce`)
        cdef int decision
        cdef bint final, has_next, started = False
        cdef Timer tm
        self.start_time = start_time
        self.time = start_time
        self.mstep = 0
        self._running = True
        for tm in self.timers:
            if tm.mode is not None and not tm.mode.active:
                continue  # a timer of a mode that is not initial starts when the mode is entered
            tm.event = _new_event(EV_TIMER, tm, None, start_time + tm.offset, 0)
            tm.next_time = start_time + tm.offset
            self._push_event(start_time + tm.offset, 0, <Event> tm.event)
        final = self.timeout == 0
        try:
            while True:
                # ---- process tag (t, m)
                self.time = t
                self.mstep = m
                self.epoch += 1
                self.tags += 1
                if not started:
                    started = True
                    self._trigger_all(self.startup_trigger.reactions)
                self._fire_events_at(t, m)
                if final:
                    self._in_shutdown = True
                    self._trigger_all(self.shutdown_trigger.reactions)
                    self._in_shutdown = False
                if self._rn > 0 or self.barrier_levels is not None:
                    self._run_levels()
                if self.mode_changes:
                    _apply_mode_changes(self, t, m)
                self._reset_presence()
                if final:
                    break
                # ---- choose the next tag
                while True:
                    self._drain_inbox()
                    has_next = self._en > 0
                    if has_next:
                        nt = self._eh[0].time
                        nm = self._eh[0].mstep
                    if self.link is not None and self.link.fast:
                        # the processes executor's reduction, done here: agreed next tag and stop tag
                        self.link.reduce(self.epoch, self.tags, nt if has_next else self.link.never,
                                         nm if has_next else self.link.never,
                                         self._stop_t if self._stop else self.link.never,
                                         self._stop_m if self._stop else self.link.never, reduced)
                        if reduced[2] != self.link.never:
                            self._stop = True
                            self._stop_t = reduced[2]
                            self._stop_m = reduced[3]
                        has_next = reduced[0] != self.link.never
                        if has_next:
                            nt = reduced[0]
                            nm = reduced[1]
                    elif self._has_advance:
                        local = Tag(nt, nm) if has_next else None
                        agreed = self.executor.advance(local, self.stop_tag)
                        nxt, stop = agreed
                        self.set_stop_tag(stop)
                        has_next = nxt is not None
                        if has_next:
                            nt = nxt[0]
                            nm = nxt[1]
                    if not has_next and not self.keepalive and not self._stop:
                        # starvation: shut down at the next microstep
                        self._stop = True
                        self._stop_t = t
                        self._stop_m = m + 1
                    decision = self._decide_next(has_next, nt, nm, self._stop, self._stop_t, self._stop_m,
                                                 &nt, &nm)
                    if decision == NEXT_EVENT:
                        final = False
                    elif decision == NEXT_FINAL:
                        final = True
                    else:
                        # keepalive with nothing queued and no end in sight: wait for a physical event
                        # (a multi-process executor's advance() does every physical wait collectively)
                        if not self._has_advance:
                            self._wait_physical(_time_ns() + 200_000_000)
                        continue
                    if not self._has_advance and (not self.fast or (self.keepalive and not has_next and not self._stop)):
                        if self._wait_physical(nt):
                            continue  # a physical event arrived first: re-plan
                    break
                t = nt
                m = nm
        finally:
            self._running = False
            if self.link is not None:
                self.link.flush(self.tags)  # the breakdown's totals of the whole loop
