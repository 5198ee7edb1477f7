# Included by _core.pyx (one compiled module: the core calls these without a Python frame).
#
# Modes: the per-instance state of one mode (`ModeState`) and the core's two hooks into modes.py (which
# holds the logic of transitions): applying the mode changes of a tag, and remembering mode-local delayed
# events so that leaving a mode can suspend them.

cdef object _modes_apply = None


cdef _apply_mode_changes(core, int64_t t, int64_t m):
    global _modes_apply
    if _modes_apply is None:
        from reactor_backend.modes import apply_mode_changes
        _modes_apply = apply_mode_changes
    _modes_apply(core, t, m)


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


cdef _track_mode_event(ModeState mode, Event ev, int64_t t, int64_t m, Core core):
    """Remember a mode-local delayed event (modes suspend it when the mode is left); fired ones are
    dropped now and then so that the list stays short."""
    cdef list lst = mode.pending_ports
    if len(lst) >= 256:
        lst[:] = [x for x in lst if (x[1], x[2]) > (core.time, core.mstep)]
    lst.append((ev, t, m))
