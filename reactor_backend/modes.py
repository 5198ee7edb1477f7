"""Modal reactors (LF's modes): mode transitions, applied at the end of the tag that requested them.

A reactor class declares modes (``one = Mode(initial=True)``, ``two = Mode()``); reactions, timers and
logical actions declared with ``mode=`` belong to a mode and are active only while it is. A reaction
that declares ``effects=[reset(two)]`` or ``effects=[history(two)]`` may call ``self.set_mode(self.two)``;
the switch happens when the tag's reactions are done (the last request in a tag wins). Then:

- the mode left is suspended: its timers' and actions' queued events are taken out and remembered,
  with the logical time it was left;
- ``reset`` entry (and any first entry): the remembered events are dropped, the mode's timers
  restart from now (``offset`` after the switch; offset 0: the next microstep), and its ``reset``
  reactions (and, on the first entry, its ``startup`` reactions) run at the next microstep;
- ``history`` entry: the remembered events are queued again, delayed by the time the mode was
  inactive (a timer resumes its phase as if the pause had not happened);
- at shutdown, the ``shutdown`` reactions of every mode ever entered run (active or not).

The transition runs in the process that owns the reactor (under ``processes``), in the core's
thread; it changes only that reactor's own triggers, so every executor gives the same effects.
"""
from __future__ import annotations

from typing import Any

_EV_TIMER = 0
_EV_CANCELLED = 3


def apply_mode_changes(core: Any, t: int, m: int) -> None:
    """Called by the core after the reactions of tag (t, m) when some reaction called ``set_mode``."""
    changes = core.mode_changes
    core.mode_changes = []
    seen: set[int] = set()
    for reactor in changes:
        if id(reactor) in seen:
            continue
        seen.add(id(reactor))
        request = reactor.__dict__.get("_mode_request")
        reactor.__dict__["_mode_request"] = None
        if request is not None:
            _switch(core, reactor, request[0], request[1], t, m)


def _suspend(mode: Any, t: int) -> None:
    """Take the mode's queued timer and action events out of the event queue, remembering them."""
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


def _next(t: int, m: int, at: int, am: int) -> tuple[int, int]:
    """(at, am), or the next microstep of (t, m) if that is not later."""
    return (at, am) if (at, am) > (t, m) else (t, m + 1)


def _switch(core: Any, reactor: Any, target: Any, kind: str, t: int, m: int) -> None:
    old = reactor.__dict__["_current_mode"]
    if old is target and kind == "history":
        return
    _suspend(old, t)
    first = not target.entered
    target.active = True
    target.entered = True
    reactor.__dict__["_current_mode"] = target
    if kind == "reset" or first:
        target.suspended = []
        for tm in target.timers:
            at, am = _next(t, m, t + tm.offset, 0) if tm.offset > 0 else (t, m + 1)
            core.push_timer_event(tm, at, am)
        if kind == "reset":
            core.push_timer_event(target.reset_timer, t, m + 1)
        if first:
            core.push_timer_event(target.startup_timer, t, m + 1)
        return
    pause = t - target.left_at
    for trig, at, am, value in target.suspended:
        nt, nm = _next(t, m, at + pause, am)
        if hasattr(trig, "period"):
            core.push_timer_event(trig, nt, nm)
        else:
            trig._push_at(nt, nm, value)
    target.suspended = []
