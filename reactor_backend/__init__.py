"""reactor_backend: a reactor runtime with Lingua Franca's semantics and a compiled (Cython) core.

Public API (see docs/reactor.md)::

    from reactor_backend import (Reactor, Input, Output, Timer, LogicalAction, PhysicalAction,
        reaction, startup, shutdown, run, Tag, AssemblyError, CausalityError, ReactionError,
        nsec, usec, msec, sec, FOREVER, cleanup_after)

Layers: ``model`` (declarations, Reactor, banks) -> ``assembly`` (the ``Program``) -> ``placement``
-> ``_core`` (compiled scheduler) driven by an executor (``runtime.EXECUTORS``) -> ``runtime.run``.
A library: it imports nothing of the benchmark (docs/design.md, "Layers and import rules").
"""
from reactor_backend.assembly import Program, assemble
from reactor_backend.diagrams import Diagram, diagram
from reactor_backend.errors import AssemblyError, CausalityError, ReactionError
from reactor_backend.model import (Input, LogicalAction, Mode, Output, PhysicalAction, Reactor, State, Timer, history,
                                   interleaved, per_member, reaction, reset, shutdown, startup)
from reactor_backend.placement import assign_workers
from reactor_backend.runtime import RunStats, run
from reactor_backend.segments import cleanup_after
from reactor_backend.timeutil import FOREVER, Tag, msec, nsec, sec, usec


__all__ = [
    "Reactor", "Input", "Output", "Timer", "LogicalAction", "PhysicalAction", "reaction", "startup",
    "shutdown", "run", "Tag", "AssemblyError", "CausalityError", "ReactionError", "nsec", "usec", "msec",
    "sec", "FOREVER", "Program", "assemble", "assign_workers", "RunStats", "diagram", "Diagram", "cleanup_after",
    "per_member", "interleaved", "Mode", "reset", "history", "State",
]
