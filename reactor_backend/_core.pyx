# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible = True
"""Compiled hot paths of the reactor runtime: ports, actions, timers, reactions and the scheduler core.

Why compiled: the per-tag work (setting a port, triggering downstream reactions, the tag-ordered event
queue, the level-ordered ready queue, resetting presence, advancing the tag) runs once per reaction and
must cost well under a microsecond.

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
from libc.stdint cimport int64_t, uint64_t
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_REFCNT
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

cdef extern from *:
    """
    /* the reference count, portable to free-threaded builds (no ob_refcnt field there) */
    static inline Py_ssize_t rb_refcnt(PyObject *op) { return Py_REFCNT(op); }
    /* free-threaded builds: the object's local reference count belongs to this thread, so no other
       thread can change it while this one reads; with the GIL every object qualifies */
    static inline int rb_owned_here(PyObject *op) {
    #ifdef Py_GIL_DISABLED
        return _Py_IsOwnedByCurrentThread(op);
    #else
        (void)op; return 1;
    #endif
    }
    """
    Py_ssize_t rb_refcnt(PyObject *op) nogil
    bint rb_owned_here(PyObject *op) nogil

cdef extern from *:
    """
    #include <sched.h>
    /* the core's lock (free-threaded builds): its critical sections are a few stores into the core's
       arrays, far shorter than a PyThread lock's own cost (measured on the free-threaded build, one
       thread, the overhead scenario's fan-out: no lock ran 1.33x the reactions per second of a PyThread
       lock, and 0.99x those of this one); a waiter that spins long yields its core to a preempted holder */
    static inline void rb_core_lock(int *l) {
        int n = 0;
        while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
            while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
                if (++n < 64) {
    #if defined(__x86_64__) || defined(__i386__)
                    __builtin_ia32_pause();
    #elif defined(__aarch64__)
                    __asm__ __volatile__("yield");
    #endif
                } else { sched_yield(); n = 0; }
            }
        }
    }
    static inline void rb_core_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }
    """
    void rb_core_lock(int *l) nogil
    void rb_core_unlock(int *l) nogil

cimport numpy as cnp

import copy as _copy_mod
import threading
import time as _pytime

import numpy as _np

from reactor_backend.errors import ReactionError
from reactor_backend.readonly import ReadOnlyDict as _RODict, ReadOnlyList as _ROList, ReadOnlySet as _ROSet
from reactor_backend.timeutil import Tag

cdef object _time_ns = _pytime.time_ns
cdef object _modes_apply = None


cdef _apply_mode_changes(core, int64_t t, int64_t m):
    global _modes_apply
    if _modes_apply is None:
        from reactor_backend.modes import apply_mode_changes
        _modes_apply = apply_mode_changes
    _modes_apply(core, t, m)
cdef object _ndarray = _np.ndarray
cdef object _deepcopy = _copy_mod.deepcopy
cnp.import_array()


cdef extern from "numpy/arrayobject.h":
    object _PyArray_View "PyArray_View" (cnp.ndarray arr, void* dtype, void* ptype)


cdef inline object _ro_array(object value):
    cdef object v
    if type(value) is _ndarray and cnp.PyArray_ISWRITEABLE(<cnp.ndarray> value):
        v = _PyArray_View(<cnp.ndarray> value, NULL, NULL)
        cnp.PyArray_CLEARFLAGS(<cnp.ndarray> v, cnp.NPY_ARRAY_WRITEABLE)
        return v
    return value


#: how deep ``_frozen`` follows tuples, lists and dicts inside a value (deeper: refused, likely a cycle)
cdef int _MAX_NESTING = 100


cdef object _frozen(object value, int depth, bint *copied):
    """What readers of a port see: ``value`` with every numpy array in it a read-only view and every
    list, dict and set a `ReadOnlyList` / `ReadOnlyDict` / `ReadOnlySet` copy (followed through tuples,
    lists and dicts), so that no reaction can modify in place what another reader sees: the same
    refusal in every placement. A value with nothing to freeze is returned as it is (no copy);
    ``copied[0]`` becomes True where a container was copied (its read-only form is a snapshot)."""
    cdef object t = type(value)
    if t is _ndarray:
        return _ro_array(value)
    if t is tuple:
        return _frozen_tuple(<tuple> value, depth, copied)
    if t is list or t is _ROList or t is dict or t is _RODict or t is set or t is _ROSet:
        if depth >= _MAX_NESTING:
            raise ValueError(f"a value sent through a port nests lists, dicts or tuples more than "
                             f"{_MAX_NESTING} deep (a cycle?): it cannot be made read-only for its readers")
        if t is list or t is _ROList:
            return _frozen_list(value, t is _ROList, depth, copied)
        if t is dict or t is _RODict:
            return _frozen_dict(value, t is _RODict, depth, copied)
        if t is _ROSet:
            return value
        copied[0] = True
        return _ROSet(value)
    return value


cdef inline bint _is_read_only(object x):
    """True for what ``_frozen`` returns as it is without looking inside: scalars first (a record's
    reward and done), then read-only arrays; False for a writable array or any container."""
    cdef object t = type(x)
    if t is float or t is int or t is bool or x is None:
        return True
    if t is _ndarray:
        return not cnp.PyArray_ISWRITEABLE(<cnp.ndarray> x)
    return not (t is tuple or t is list or t is dict or t is set or t is _ROList or t is _RODict or t is _ROSet)


cdef inline bint _items_read_only(tuple value):
    """True when every item of ``value`` is `_is_read_only` (an env step's frozen obs, reward, flag)."""
    cdef Py_ssize_t i
    for i in range(PyTuple_GET_SIZE(value)):
        if not _is_read_only(<object> PyTuple_GET_ITEM(value, i)):
            return False
    return True


cdef object _frozen_tuple(tuple value, int depth, bint *copied):
    cdef Py_ssize_t i, n = PyTuple_GET_SIZE(value)
    cdef object x, f
    cdef list items = None
    if _items_read_only(value):
        return value
    for i in range(n):
        x = <object> PyTuple_GET_ITEM(value, i)
        f = _frozen(x, depth + 1, copied)
        if f is not x:
            if items is None:
                items = list(value)
            items[i] = f
    return value if items is None else tuple(items)


cdef object _frozen_list(object value, bint already, int depth, bint *copied):
    cdef Py_ssize_t i
    cdef object x, f
    cdef list items = None
    for i in range(len(value)):
        x = (<list> value)[i]
        if _is_read_only(x):
            continue
        f = _frozen(x, depth + 1, copied)
        if f is not x:
            if items is None:
                items = list(value)
            items[i] = f
    if items is None and already:
        return value
    copied[0] = True
    return _ROList(value if items is None else items)


cdef object _frozen_dict(object value, bint already, int depth, bint *copied):
    cdef object k, x, f
    cdef dict items = None
    for k, x in (<dict> value).items():
        if _is_read_only(x):
            continue
        f = _frozen(x, depth + 1, copied)
        if f is not x:
            if items is None:
                items = dict(value)
            items[k] = f
    if items is None and already:
        return value
    copied[0] = True
    return _RODict(value if items is None else items)


def _refs_seen(x):
    return Py_REFCNT(x)


# ``port.set(np.array(...))``: an array that only the call itself references (a temporary) reaches
# ``set`` with this reference count; nobody else can see it, so it is made read-only in place instead
# of through a view. Calibrated with Python code calling a compiled function, as a reaction calls
# ``set``; off (-1) where a variable's value looks the same (an interpreter passing borrowed references).
# Free-threaded builds split the count into a local part (changed only by the thread that owns the
# object) and an atomic shared part; ``Py_REFCNT`` sums them. The sum is exact for an object this thread
# owns (nothing else writes its local part during the read), and a count of ``_TEMP_REFS`` then means no
# other holder exists, in any thread. For an object another thread owns the two loads could straddle a
# reference moving between the parts, so such an object is never frozen in place (it gets a view).
_probe = {"seen": _refs_seen}
exec("def temp():\n    return seen(object())\n"
     "def local():\n    o = object()\n    return seen(o)\n", _probe)
cdef Py_ssize_t _TEMP_REFS = _probe["temp"]()
if _TEMP_REFS >= _probe["local"]():
    _TEMP_REFS = -1
del _probe


cdef inline Py_ssize_t _item_refs(tuple t, Py_ssize_t i):
    """The reference count of ``t[i]`` as `Port.set` sees it (borrowed: the loop adds none)."""
    return rb_refcnt(<PyObject *> PyTuple_GET_ITEM(t, i))


# ``port.set((obs, reward, done))`` with a temporary tuple whose array only the tuple references (an env
# step's fresh observation): nobody else can see that array either, so it too is made read-only in place
# instead of the tuple being rebuilt around a view. Calibrated with an element only a tuple holds.
cdef Py_ssize_t _ITEM_ONLY_REFS = _item_refs((object(),), 0)


cdef inline void _freeze_owned_items(tuple value):
    """Clear the write flag, in place, of every array that only ``value`` references (and, without a
    GIL, that this thread owns: see ``_TEMP_REFS``)."""
    cdef Py_ssize_t i
    cdef PyObject *p
    for i in range(PyTuple_GET_SIZE(value)):
        p = PyTuple_GET_ITEM(value, i)
        if <object> p.ob_type is _ndarray and rb_refcnt(p) == _ITEM_ONLY_REFS and rb_owned_here(p):
            cnp.PyArray_CLEARFLAGS(<cnp.ndarray> p, cnp.NPY_ARRAY_WRITEABLE)


cdef object _private_copy(object value):
    """What a mutable input receives: its own copy (numpy arrays: a writable copy of the data)."""
    if value is None or type(value) in (int, float, bool, str, bytes):
        return value
    if type(value) is _ndarray:
        return (<cnp.ndarray> value).copy()
    return _deepcopy(value)

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


@cython.final
cdef class ReactorCtx:
    """Per-reactor runtime context: which of its reactions is running (for effect checks)."""
    cdef public int current
    cdef public object reactor
    cdef public tuple reactions      # the reactor's Reactions by local index (set by the assembly)

    def __init__(self, reactor=None):
        self.current = -1
        self.reactor = reactor
        self.reactions = ()


@cython.final
cdef class ModeState:
    """One mode of one modal reactor instance (the logic of transitions is in ``modes.py``)."""
    cdef public bint active          # its reactions may be triggered; its timers run
    cdef public bint entered         # entered at least once (its shutdown reactions run)
    cdef public object reactor
    cdef public str name
    cdef public bint initial
    cdef public object startup_timer  # private triggers of its startup / reset reactions
    cdef public object reset_timer
    cdef public tuple timers         # mode-local timers and logical actions
    cdef public tuple actions
    cdef public int64_t left_at      # logical time it was left (history re-entry shifts by the pause)
    cdef public list suspended       # (trigger, time, microstep, value) of events it had queued
    cdef public ModeState parent     # the mode that contains its reactor (nested modal reactors), or None
    cdef public list nested          # modal reactors contained (at any depth) directly in this mode
    cdef public list reset_states    # (reactor, attribute, State declaration) re-initialized on reset entry
    cdef public list pending_ports   # (Event, time, microstep) of delayed connections declared in it

    def __init__(self, reactor, str name, bint initial):
        self.reactor = reactor
        self.name = name
        self.initial = initial
        self.active = initial
        self.entered = initial
        self.startup_timer = None
        self.reset_timer = None
        self.timers = ()
        self.actions = ()
        self.left_at = 0
        self.suspended = []
        self.parent = None
        self.nested = []
        self.reset_states = []
        self.pending_ports = []

    def __repr__(self):
        return f"<Mode {getattr(self.reactor, 'name', '?')}.{self.name}{' active' if self.active else ''}>"


@cython.final
cdef class Reaction:
    """One reaction of one reactor, as the scheduler sees it (filled in by the assembly phase)."""
    cdef public object fn            # bound method: the body
    cdef public object handler       # bound method: the deadline handler, or None
    cdef public object reactor
    cdef public str name
    cdef public str full_name
    cdef public int level
    cdef public int index            # global order: (level, inherited deadline, reactor preorder, local index)
    cdef public int priority         # LF's single-threaded order: (inherited deadline, level, preorder, local)
    cdef public int64_t inherited_deadline  # min of its own and every downstream reaction's deadline, or -1
    cdef int key                     # the ready queue's key: index, or priority under the inline executor
    cdef public int local_index      # position among its reactor's reactions (declaration order)
    cdef public int64_t deadline     # ns, or -1
    cdef public ReactorCtx ctx
    cdef public bint local           # False: placed on another process; never triggered here
    cdef public tuple triggers       # flattened trigger objects (Port/Action/Timer/SpecialTrigger)
    cdef public tuple sources        # flattened source ports
    cdef public tuple effects        # flattened effect ports / actions
    cdef public ModeState mode       # the mode it belongs to (None: always active)
    cdef public dict transitions     # target ModeState -> "reset" | "history" (declared effects)
    cdef uint64_t epoch

    def __init__(self, fn, handler, reactor, str name, int local_index, int64_t deadline, ReactorCtx ctx):
        self.fn = fn
        self.handler = handler
        self.reactor = reactor
        self.name = name
        self.full_name = name
        self.local_index = local_index
        self.deadline = deadline
        self.ctx = ctx
        self.level = 0
        self.index = 0
        self.priority = 0
        self.inherited_deadline = -1
        self.key = 0
        self.local = True
        self.triggers = ()
        self.sources = ()
        self.effects = ()
        self.mode = None
        self.transitions = None
        self.epoch = 0

    def __repr__(self):
        return f"<Reaction {self.full_name} level={self.level}>"


cdef class Trigger:
    """Anything that can be present at a tag and trigger reactions."""
    cdef public object value
    cdef public bint is_present
    cdef public tuple reactions      # reactions triggered when this becomes present (sorted, local only)
    cdef public Core core
    cdef public str name             # declared attribute name ("out"); channels: "out[2]"
    cdef public object owner         # the reactor that declares it

    def __init__(self, owner=None, str name=""):
        self.value = None
        self.is_present = False
        self.reactions = ()
        self.core = None
        self.name = name
        self.owner = owner

    @property
    def full_name(self) -> str:
        oname = getattr(self.owner, "name", None) if self.owner is not None else None
        return f"{oname}.{self.name}" if oname else self.name


cdef class SpecialTrigger(Trigger):
    """``startup`` / ``shutdown`` of one program."""
    pass


@cython.final
cdef class Port(Trigger):
    """A port channel: a value plus presence at the current tag.

    ``set`` propagates at once to every port downstream through zero-delay connections and triggers
    their reactions; delayed and physical connections become events. Readers share one value, so it
    is handed out read-only (``_frozen``: numpy arrays become read-only views, lists, dicts and sets
    read-only copies, also inside tuples, lists and dicts); a ``mutable`` input holds its own copy.
    """
    cdef public str kind             # "input" | "output"
    cdef public int channel          # index within its multiport, or -1
    cdef public object multiport     # the MultiPort it belongs to, or None
    cdef public tuple fanout         # ports reached through zero-delay connections (transitively)
    cdef public tuple delayed        # ((dest Port, delay ns, physical bool), ...)
    cdef public ReactorCtx wctx      # context of the reactor whose reactions may set() this port
    cdef public uint64_t allowed_mask  # bit i: reaction with local index i of wctx may set()
    cdef public bint mutable         # an input declared Input(mutable=True): holds a private copy
    cdef public int id               # position in Program.ports
    cdef list _pending               # delayed events created by this port at the current tag
    cdef uint64_t _pending_epoch
    cdef object _ro_src              # the last value set here whose read-only form is views only, and
    cdef object _ro_view             # that form (a writer that sends the same array each tag: no new view)
    cdef public object lender        # lend(shape, dtype) of this port's slot writer (processes executor,
                                     # the process that exports it), or None: `lend` keeps its own array
    cdef object _lent                # the array `lend` returns while it has no lender

    def __init__(self, owner=None, str name="", str kind="input", int channel=-1, multiport=None,
                 bint mutable=False):
        Trigger.__init__(self, owner, name)
        self.kind = kind
        self.mutable = mutable
        self.channel = channel
        self.multiport = multiport
        self.fanout = ()
        self.delayed = ()
        self.wctx = None
        self.allowed_mask = 0
        self.id = -1
        self._pending = None
        self._pending_epoch = 0
        self._ro_src = None
        self._ro_view = None
        self.lender = None
        self._lent = None

    def lend(self, shape, dtype):
        """A writable numpy array of ``shape`` and ``dtype`` to build this port's next value in, then
        ``set`` it (zero-copy output). Where the value crosses to other processes (the processes
        executor, in the process that sends it) the array is the transport's own buffer and ``set``
        copies nothing; elsewhere it is an array of this port's. The same array on every call with the
        same shape and dtype, holding what was written last, so a value that changes in part is
        rewritten in part. Readers see the array itself: write it only in a reaction that sets this
        port, and only where readers use each value within its tag (no ``copy_arrays=False`` reader,
        no local reader, keeps it past that); a port with a delayed connection, whose values are read
        at a later tag, refuses (``ReactionError``)."""
        if self.delayed:
            raise ReactionError(f"port {self.full_name} has a delayed connection, which reads each value "
                                f"at a later tag: it cannot lend one buffer for every value")
        if self.lender is not None:
            return self.lender(shape, dtype)
        own = self._lent
        shape = (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(int(n) for n in shape)
        if own is None or own.shape != shape or own.dtype != dtype:
            own = self._lent = _np.empty(shape, dtype)
        return own

    def set(self, value) -> None:
        """Set the value at the current tag (last write in a tag wins; triggers downstream once)."""
        cdef ReactorCtx c = self.wctx
        if c is None or c.current < 0 or not ((self.allowed_mask >> c.current) & 1):
            self._refuse()
        if Py_REFCNT(value) == _TEMP_REFS and rb_owned_here(<PyObject *> value):
            if type(value) is _ndarray:
                cnp.PyArray_CLEARFLAGS(<cnp.ndarray> value, cnp.NPY_ARRAY_WRITEABLE)
            elif type(value) is tuple:
                _freeze_owned_items(<tuple> value)
        self._set(value)

    def _refuse(self):
        from reactor_backend.errors import ReactionError as _RE
        c = self.wctx
        if c is None:
            raise _RE(f"port {self.full_name} set, but no reaction declares it in effects=")
        if c.current < 0:
            raise _RE(f"port {self.full_name} set outside a reaction that declares it in effects=")
        raise _RE(f"port {self.full_name} set by a reaction that does not declare it in effects=")

    cpdef _set(self, object value):
        """Set without the effect check (delayed connections, values imported from other processes)."""
        cdef Core core = self.core
        cdef Port p
        cdef Event ev
        cdef tuple d
        cdef object shared
        cdef bint copied = False
        if value is self._ro_src:
            shared = self._ro_view
        elif _is_read_only(value) or (type(value) is tuple and _items_read_only(<tuple> value)):
            shared = value  # a scalar, a read-only array, a record of those: nothing to make read-only
        else:
            shared = _frozen(value, 0, &copied)
            if shared is not value and not copied:  # views only: they stay true to the value
                self._ro_src = value
                self._ro_view = shared
        if not self.is_present:
            self.is_present = True
            core._mark(self)
            for p in self.fanout:
                p.is_present = True
                core._mark(p)
                p.value = _private_copy(value) if p.mutable else shared
            core._trigger_all(self.reactions)
            if self.delayed:
                self._schedule_delayed(shared)
        else:
            for p in self.fanout:
                p.value = _private_copy(value) if p.mutable else shared
            if self.delayed and self._pending_epoch == core.epoch and self._pending is not None:
                for ev in self._pending:
                    ev.value = shared
        self.value = _private_copy(value) if self.mutable else shared

    cdef _schedule_delayed(self, object value):
        cdef Core core = self.core
        cdef tuple d
        cdef int64_t t, delay
        cdef int64_t m
        cdef Event ev
        if self._pending_epoch != core.epoch or self._pending is None:
            self._pending = []
            self._pending_epoch = core.epoch
        for d in self.delayed:
            delay = d[1]
            if d[2]:  # physical connection: tag from the physical clock
                t = _time_ns() + delay
                if t <= core.time:
                    t = core.time
                    m = core.mstep + 1
                else:
                    m = 0
            elif delay == 0:
                t = core.time
                m = core.mstep + 1
            else:
                t = core.time + delay
                m = 0
            ev = Event(EV_PORT, d[0], value)
            core._push_event(t, m, ev)
            self._pending.append(ev)
            if len(d) > 3:  # a delayed connection declared in a mode: the mode may suspend the event
                _track_mode_event(<ModeState> d[3], ev, t, m, core)


@cython.final
cdef class Timer(Trigger):
    cdef public int64_t offset
    cdef public int64_t period
    cdef public ModeState mode       # mode-local timer: runs only while its mode is active
    cdef public object event         # its queued Event (modes cancel and requeue it)
    cdef public int64_t next_time    # the time of that event

    def __init__(self, owner=None, str name="", int64_t offset=0, int64_t period=0):
        Trigger.__init__(self, owner, name)
        self.offset = offset
        self.period = period
        self.mode = None
        self.event = None
        self.next_time = 0


@cython.final
cdef class Action(Trigger):
    """A logical or physical action. ``schedule`` creates an event at a later tag."""
    cdef public bint physical
    cdef public int64_t min_delay
    cdef public int64_t min_spacing   # -1: none
    cdef public str policy
    cdef public ReactorCtx wctx
    cdef public uint64_t allowed_mask
    cdef public int id
    cdef public ModeState mode         # its mode (own mode= or the enclosing one), or None
    cdef dict _pending_events          # (time, microstep) -> Event not yet fired
    cdef object _last_ev               # last scheduled Event
    cdef int64_t _last_t
    cdef int64_t _last_m
    cdef bint _has_last

    def __init__(self, owner=None, str name="", bint physical=False, int64_t min_delay=0,
                 int64_t min_spacing=-1, str policy="defer"):
        Trigger.__init__(self, owner, name)
        self.physical = physical
        self.min_delay = min_delay
        self.min_spacing = min_spacing
        self.policy = policy
        self.wctx = None
        self.allowed_mask = 0
        self.id = -1
        self.mode = None
        self._pending_events = {}
        self._last_ev = None
        self._has_last = False

    def schedule(self, delay: int = 0, value=None) -> None:
        """Schedule the action ``min_delay + delay`` after the current tag (logical) or now (physical)."""
        cdef ReactorCtx c
        if self.core is None:
            raise ReactionError(f"action {self.full_name} scheduled before the program runs")
        if self.physical:
            if self.reactions and not (<Reaction> self.reactions[0]).local:
                # under the processes executor: this process does not run the action's reactor, so
                # the event would fire here and trigger nothing
                raise ReactionError(
                    f"physical action {self.full_name} belongs to a reactor placed in another worker process; "
                    f"schedule it from a thread of that process (e.g. one started by the reactor's startup reaction)")
            self.core.schedule_physical(self, int(delay), value)
            return
        c = self.wctx
        if c is None or c.current < 0 or not ((self.allowed_mask >> c.current) & 1):
            raise ReactionError(f"action {self.full_name} scheduled by a reaction that does not declare it in effects=")
        self._schedule_logical(int(delay), value)

    cdef _schedule_logical(self, int64_t delay, object value):
        cdef Core core = self.core
        cdef int64_t t, m, extra = self.min_delay + delay
        if delay < 0:
            raise ValueError("negative delay")
        if extra == 0:
            t = core.time
            m = core.mstep + 1
        else:
            t = core.time + extra
            m = 0
        self._place(t, m, value)

    cdef _place(self, int64_t t, int64_t m, object value):
        """Queue an event at (t, m) after applying ``min_spacing`` with the action's policy."""
        cdef Core core = self.core
        cdef int64_t earliest
        cdef Event ev
        if self.min_spacing >= 0 and self._has_last:
            earliest = self._last_t + self.min_spacing
            if t < earliest or (self.min_spacing == 0 and t == self._last_t and m <= self._last_m):
                if self.policy == "drop":
                    return
                if self.policy == "replace" and (self._last_t, self._last_m) in self._pending_events:
                    (<Event>self._last_ev).value = value
                    return
                # defer (and replace whose previous event already fired)
                if earliest > self._last_t:
                    t = earliest
                    m = 0
                else:
                    t = self._last_t
                    m = self._last_m + 1
        # no min_spacing: a second schedule for an occupied tag goes to the next free microstep
        while (t, m) in self._pending_events:
            m += 1
        ev = Event(EV_ACTION, self, value)
        self._pending_events[(t, m)] = ev
        self._last_ev = ev
        self._last_t = t
        self._last_m = m
        self._has_last = True
        core._push_event(t, m, ev)

    cdef _fired(self, int64_t t, int64_t m):
        self._pending_events.pop((t, m), None)

    def _suspend(self):
        """Modes: cancel every queued event of this action; return them as ``(time, microstep, value)``."""
        cdef Event ev
        out = []
        for (t, m), ev in sorted(self._pending_events.items()):
            ev.kind = EV_CANCELLED
            out.append((t, m, ev.value))
        self._pending_events.clear()
        self._has_last = False
        return out

    def _push_at(self, int64_t t, int64_t m, value):
        """Queue an event for this action at exactly (t, m) (physical actions, imported events)."""
        cdef Event ev = Event(EV_ACTION, self, value)
        while (t, m) in self._pending_events:
            m += 1
        self._pending_events[(t, m)] = ev
        self.core._push_event(t, m, ev)


@cython.final
cdef class Event:
    cdef public int kind
    cdef public object target
    cdef public object value

    def __init__(self, int kind, target, value):
        self.kind = kind
        self.target = target
        self.value = value


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
                act._pending_events = {}
                act._last_ev = None
                act._has_last = False
        for r in program.reactions:
            r.epoch = 0
            r.ctx.current = -1
            # inline: LF's single-threaded order (earliest inherited deadline first, a topological
            # order too); level by level otherwise, earliest deadline first within a level
            r.key = r.priority if self._inline else r.index

    # ---- queues ---------------------------------------------------------------------------
    cdef int _mark(self, Trigger t) except -1:
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

    cdef int _trigger(self, Reaction r) except -1:
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
        cdef Reaction r
        for r in rs:
            self._trigger(r)
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
        cdef Event ev = Event(EV_PORT, port, value)
        self._push_event(t, m, ev)
        if mode is not None:
            _track_mode_event(mode, ev, t, m, self)

    def push_timer_event(self, Timer tm, int64_t t, int64_t m) -> None:
        """Modes: (re)start a timer at (t, m); its previous queued event must have been cancelled."""
        cdef Event ev = Event(EV_TIMER, tm, None)
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
                a._fired(t, m)
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
            tm.event = Event(EV_TIMER, tm, None)
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
                        agreed = self.link.reduce(self.epoch, self.tags, nt if has_next else self.link.never,
                                                  nm if has_next else self.link.never,
                                                  self._stop_t if self._stop else self.link.never,
                                                  self._stop_m if self._stop else self.link.never)
                        if <int64_t> agreed[2] != self.link.never:
                            self._stop = True
                            self._stop_t = agreed[2]
                            self._stop_m = agreed[3]
                        has_next = <int64_t> agreed[0] != self.link.never
                        if has_next:
                            nt = agreed[0]
                            nm = agreed[1]
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


cdef _track_mode_event(ModeState mode, Event ev, int64_t t, int64_t m, Core core):
    """Remember a mode-local delayed event (modes suspend it when the mode is left); fired ones are
    dropped now and then so that the list stays short."""
    cdef list lst = mode.pending_ports
    if len(lst) >= 256:
        lst[:] = [x for x in lst if (x[1], x[2]) > (core.time, core.mstep)]
    lst.append((ev, t, m))
