"""reactor_backend: a reactor runtime with Lingua Franca's semantics and a compiled (Cython) core.

Public API (see docs/reactor.md)::

    from reactor_backend import (Reactor, Input, Output, Timer, LogicalAction, PhysicalAction,
        reaction, startup, shutdown, run, Tag, AssemblyError, CausalityError, ReactionError,
        nsec, usec, msec, sec, FOREVER)

Layers: ``model`` (declarations, Reactor, banks) -> ``assembly`` (immutable ``Program``, placement)
-> ``_core`` (compiled scheduler) driven by an ``executors`` plug-in -> ``runtime.run``.
"""
from reactor_backend.assembly import Program, assemble, assign_workers
from reactor_backend.diagrams import Diagram, diagram
from reactor_backend.errors import AssemblyError, CausalityError, ReactionError
from reactor_backend.model import (Input, LogicalAction, Mode, Output, PhysicalAction, Reactor, Timer, history,
                                   interleaved, per_member, reaction, reset, shutdown, startup)
from reactor_backend.runtime import RunStats, run
from reactor_backend.timeutil import FOREVER, Tag, msec, nsec, sec, usec


__all__ = [
    "Reactor", "Input", "Output", "Timer", "LogicalAction", "PhysicalAction", "reaction", "startup",
    "shutdown", "run", "Tag", "AssemblyError", "CausalityError", "ReactionError", "nsec", "usec", "msec",
    "sec", "FOREVER", "Program", "assemble", "assign_workers", "RunStats", "diagram", "Diagram",
    "per_member", "interleaved", "Mode", "reset", "history",
]
