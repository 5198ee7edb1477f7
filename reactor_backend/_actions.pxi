# Included by _core.pyx (one compiled module: the core calls these without a Python frame).
#
# What queues events: timers (`Timer`), logical and physical actions (`Action`) and the queued `Event`.

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
    cdef list _pending                 # its queued Events not yet fired (each knows its tag): a few at most,
                                       # scanned in C (a dict keyed by tag tuples cost about 3,500
                                       # instructions per schedule and fire: a tuple and two ints each way)
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
        self._pending = []
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

    cdef bint _pending_at(self, int64_t t, int64_t m):
        """Whether an event of this action is queued at (t, m) and not fired yet."""
        cdef Event ev
        for ev in self._pending:
            if ev.time == t and ev.mstep == m:
                return True
        return False

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
                if self.policy == "replace" and self._pending_at(self._last_t, self._last_m):
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
        while self._pending and self._pending_at(t, m):
            m += 1
        ev = _new_event(EV_ACTION, self, value, t, m)
        self._pending.append(ev)
        self._last_ev = ev
        self._last_t = t
        self._last_m = m
        self._has_last = True
        core._push_event(t, m, ev)

    cdef int _fired(self, Event fired) except -1:
        """``fired`` (one of this action's events) is no longer queued."""
        cdef Py_ssize_t i
        for i in range(len(self._pending)):
            if self._pending[i] is fired:
                del self._pending[i]
                return 0
        return 0

    def _suspend(self):
        """Modes: cancel every queued event of this action; return them as ``(time, microstep, value)``."""
        cdef Event ev
        out = []
        for ev in sorted(self._pending, key=_event_tag):
            ev.kind = EV_CANCELLED
            out.append((ev.time, ev.mstep, ev.value))
        self._pending = []
        self._has_last = False
        return out

    def _push_at(self, int64_t t, int64_t m, value):
        """Queue an event for this action at exactly (t, m) (physical actions, imported events)."""
        while self._pending_at(t, m):
            m += 1
        cdef Event ev = _new_event(EV_ACTION, self, value, t, m)
        self._pending.append(ev)
        self.core._push_event(t, m, ev)


@cython.final
@cython.freelist(16)
cdef class Event:
    """A queued event: ``kind`` (EV_*), what it triggers (``target``), its value and the tag it was queued for."""
    cdef public int kind
    cdef public object target
    cdef public object value
    cdef readonly int64_t time
    cdef readonly int64_t mstep

    def __init__(self, int kind, target, value, int64_t time=0, int64_t mstep=0):
        self.kind = kind
        self.target = target
        self.value = value
        self.time = time
        self.mstep = mstep


cdef inline Event _new_event(int kind, object target, object value, int64_t t, int64_t m):
    """``Event(kind, target, value, t, m)`` without a Python call (a round program queues one every round)."""
    cdef Event ev = Event.__new__(Event)
    ev.kind = kind
    ev.target = target
    ev.value = value
    ev.time = t
    ev.mstep = m
    return ev


def _event_tag(Event ev) -> tuple:
    return (ev.time, ev.mstep)
