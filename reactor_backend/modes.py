"""Modal reactors (LF's modes): mode transitions, applied at the end of the tag that requested them.

A reactor class declares modes (``one = Mode(initial=True)``, ``two = Mode()``); reactions, timers,
logical actions and reset states declared with ``mode=`` belong to a mode and are active only while it
is. Reactors created and connections made inside ``with self.in_mode(self.two):`` (in ``__init__``)
belong to ``two`` too, with everything they contain (nested modal reactors included): a mode is
active when its reactor is in it and the mode enclosing that reactor (if any) is active.

A reaction that declares ``effects=[reset(two)]`` or ``effects=[history(two)]`` may call
``self.set_mode(self.two)``; the switch happens when the tag's reactions are done (the last request of
a reactor in a tag wins; nested reactors switch before their containers). Then:

- the mode left is suspended with every active mode nested in it: their timers', actions' and
  delayed connections' queued events are taken out and remembered, with the logical time it was left;
- ``reset`` entry (and any first entry): the remembered events are dropped, the mode's ``reset``
  states get their initial values, its timers restart from now (``offset`` after the switch;
  offset 0: the next microstep), and its ``reset`` reactions (and, on the first entry, its ``startup``
  reactions) run at the next microstep; the modal reactors nested in it go back to their initial
  modes, entered the same way (their remembered events dropped, reset states re-initialized);
- ``history`` entry: the remembered events are queued again, delayed by the time the mode was
  inactive (a timer resumes its phase as if the pause had not happened); nested modal reactors
  resume the mode they were in, the same way;
- at shutdown, the ``shutdown`` reactions of every mode ever entered run (active or not).

The transition runs in the process that owns the reactor (under ``processes``, the assembly places a
mode's contents with the modal reactor), in the core's thread; it changes only that reactor's own
subtree, so every executor gives the same effects.
"""
from __future__ import annotations

from typing import Any

_EV_TIMER = 0
_EV_PORT = 2
_EV_CANCELLED = 3


def _depth(reactor: Any) -> int:
    n = 0
    mode = reactor.__dict__.get("_enclosing_mode")
    while mode is not None:
        n += 1
        mode = mode.parent
    return n


def apply_mode_changes(core: Any, t: int, m: int) -> None:
    """Called by the core after the reactions of tag (t, m) when some reaction called ``set_mode``."""
    changes = core.mode_changes
    core.mode_changes = []
    seen: set[int] = set()
    unique = []
    for reactor in changes:
        if id(reactor) not in seen:
            seen.add(id(reactor))
            unique.append(reactor)
    unique.sort(key=_depth, reverse=True)   # innermost first (stable: reaction order otherwise)
    for reactor in unique:
        request = reactor.__dict__.get("_mode_request")
        reactor.__dict__["_mode_request"] = None
        if request is not None:
            _switch(core, reactor, request[0], request[1], t, m)


def _suspend(mode: Any, t: int, m: int) -> None:
    """Take the mode's queued timer, action and delayed-connection events out of the event queue,
    remembering them; then the same for the active modes nested in it."""
    mode.active = False
    mode.left_at = t
    for tm in mode.timers:
        ev = tm.event
        if ev is not None and ev.kind == _EV_TIMER:
            ev.kind = _EV_CANCELLED
            mode.suspended.append((tm, tm.next_time, 0, None))
        tm.event = None
    for a in mode.actions:
        for at, am, value in a._suspend():
            mode.suspended.append((a, at, am, value))
    for ev, at, am in mode.pending_ports:
        if ev.kind == _EV_PORT and (at, am) > (t, m):   # not fired yet
            ev.kind = _EV_CANCELLED
            mode.suspended.append((ev.target, at, am, ev.value))
    mode.pending_ports = []
    for reactor in mode.nested:
        cur = reactor.__dict__["_current_mode"]
        if cur.active:
            _suspend(cur, t, m)


def _next(t: int, m: int, at: int, am: int) -> tuple[int, int]:
    """(at, am), or the next microstep of (t, m) if that is not later."""
    return (at, am) if (at, am) > (t, m) else (t, m + 1)


def _modes_of(reactor: Any) -> tuple[Any, ...]:
    """The reactor's ``ModeState``s (set by the assembly; this module imports neither ``_core``
    nor ``model``, which sit below and above it)."""
    return reactor.__dict__["_modes"]


def _forget(reactor: Any) -> None:
    """A reset reaches a nested modal reactor: every mode of it (and below) forgets its events."""
    for mode in _modes_of(reactor):
        mode.suspended = []
        for inner in mode.nested:
            _forget(inner)


def _switch(core: Any, reactor: Any, target: Any, kind: str, t: int, m: int) -> None:
    old = reactor.__dict__["_current_mode"]
    if old is target and kind == "history":
        return
    live = old.parent is None or old.parent.active   # False: the whole reactor is suspended
    if live:
        _suspend(old, t, m)
    reactor.__dict__["_current_mode"] = target
    if live:
        _enter(core, target, kind, t, m)
    elif kind == "reset":
        target.suspended = []


def _enter(core: Any, target: Any, kind: str, t: int, m: int) -> None:
    """Activate ``target`` (its reactor's current mode, inside an active mode or none) and its nest."""
    first = not target.entered
    target.active = True
    target.entered = True
    if kind == "reset" or first:
        target.suspended = []
        if kind == "reset":
            for r, name, decl in target.reset_states:
                r.__dict__[name] = decl.initial_value(r)
        for tm in target.timers:
            at, am = _next(t, m, t + tm.offset, 0) if tm.offset > 0 else (t, m + 1)
            core.push_timer_event(tm, at, am)
        if kind == "reset":
            core.push_timer_event(target.reset_timer, t, m + 1)
        if first:
            core.push_timer_event(target.startup_timer, t, m + 1)
        for inner in target.nested:
            if kind == "reset":
                _forget(inner)
                inner.__dict__["_current_mode"] = next(x for x in _modes_of(inner) if x.initial)
            _enter(core, inner.__dict__["_current_mode"], kind, t, m)
        return
    for trig, at, am, value in target.suspended:
        # the delay it had left when the mode was left, from now (LF's C runtime: microstep 0
        # after a positive remaining delay, else the next microstep)
        left = at - target.left_at
        nt, nm = (t + left, 0) if left > 0 else (t, m + 1)
        if hasattr(trig, "fanout"):   # a port: a delayed connection's value
            core.push_port_event(trig, nt, nm, value, target)
        elif hasattr(trig, "period"):
            core.push_timer_event(trig, nt, nm)
        else:
            trig._push_at(nt, nm, value)
    target.suspended = []
    for inner in target.nested:
        _enter(core, inner.__dict__["_current_mode"], "history", t, m)
