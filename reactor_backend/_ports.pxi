# Included by _core.pyx (one compiled module: the core calls these without a Python frame).
#
# Triggers and ports: anything that can be present at a tag (`Trigger`), ``startup`` / ``shutdown``
# (`SpecialTrigger`) and port channels (`Port`): a value plus presence, propagated at ``set`` through
# zero-delay connections, queued as events through delayed and physical ones.

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
        return self._deliver(value, shared)

    cdef int _deliver(self, object value, object shared) except -1:
        """``_set`` once ``shared`` is what readers may see of ``value`` (itself where nothing in it needs making
        read-only: a refilled record, `_link.pxi`): presence, the fanout's values and triggers, delayed events."""
        cdef Core core = self.core
        cdef Port p
        cdef Event ev
        cdef tuple fanout
        cdef Py_ssize_t i
        fanout = self.fanout  # the runtime builds it of Ports: no type test per item
        if not self.is_present:
            self.is_present = True
            core._mark(self)
            for i in range(len(fanout)):
                p = <Port> fanout[i]
                p.is_present = True
                core._mark(p)
                p.value = _private_copy(value) if p.mutable else shared
            core._trigger_all(self.reactions)
            if self.delayed:
                self._schedule_delayed(shared)
        else:
            for i in range(len(fanout)):
                p = <Port> fanout[i]
                p.value = _private_copy(value) if p.mutable else shared
            if self.delayed and self._pending_epoch == core.epoch and self._pending is not None:
                for ev in self._pending:
                    ev.value = shared
        self.value = _private_copy(value) if self.mutable else shared
        return 0

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
            ev = _new_event(EV_PORT, d[0], value, t, m)
            core._push_event(t, m, ev)
            self._pending.append(ev)
            if len(d) > 3:  # a delayed connection declared in a mode: the mode may suspend the event
                _track_mode_event(<ModeState> d[3], ev, t, m, core)


def port_values(list ports) -> list:
    """The values of ``ports`` (port channels) in order: a multiport's ``values``, built without a Python frame per
    channel (a server's gather reads every channel of its bank's multiport each round)."""
    cdef Py_ssize_t i, n = len(ports)
    cdef list out = [None] * n
    for i in range(n):
        out[i] = (<Trigger> ports[i]).value
    return out
