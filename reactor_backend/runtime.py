"""Execution phase: ``run(main, ...)`` assembles the program, builds the core and an executor, runs.

``EXECUTORS`` is the one table of executors (name -> class); see ``executors.py`` for the interface.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from reactor_backend._core import Core
from reactor_backend.assembly import Program, assemble
from reactor_backend.errors import AssemblyError
from reactor_backend.executors import Executor, InlineExecutor, ThreadExecutor
from reactor_backend.model import Reactor
from reactor_backend.processes import ProcessExecutor
from reactor_backend.timeutil import FOREVER, Tag


#: every executor, by the name ``run(executor=...)`` takes
EXECUTORS: dict[str, type[Executor]] = {
    "inline": InlineExecutor,
    "threads": ThreadExecutor,
    "processes": ProcessExecutor,
}


def make_executor(name: str, workers: int = 1, **options: Any) -> Executor:
    """Build an executor by name with its options.

    Args:
        name: a key of ``EXECUTORS``.
        workers: its threads or processes.
        **options: the executor's own options.
    """
    try:
        cls = EXECUTORS[name]
    except KeyError:
        raise ValueError(f"unknown executor {name!r}; valid executors: {sorted(EXECUTORS)}") from None
    return cls(workers, **options)


@dataclass
class RunStats:
    """What ``run`` returns. Indexable like a dict (``stats["tags"]``)."""

    tags: int                 # tags processed (startup and shutdown tags included)
    reactions: int            # reactions executed (all processes)
    wall_seconds: float       # wall-clock duration of the tag loop
    final_tag: Tag            # absolute final tag (time in ns since the epoch, microstep)
    start_time: int           # logical (= physical) start time, ns since the epoch
    elapsed: int              # final_tag.time - start_time (logical ns)
    executor: str
    workers: int
    #: processes or threads executor with ``breakdown=``: per process (thread), where the time went
    #: (`processes.Breakdown`, `executors.ThreadBreakdown`)
    breakdown: list | None = None

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run(main: Reactor | Program, *, timeout: int | None = None, fast: bool = True,
        keepalive: bool | None = None, executor: str = "inline", workers: int = 1,
        **executor_options: Any) -> RunStats:
    """Run a reactor program to its final tag.

    Args:
        main: the top-level reactor (assembled here) or an assembled ``Program``.
        timeout: logical ns after start at which the program shuts down (``None``: no timeout).
        fast: run logical time as fast as possible (``False``: wait for physical time).
        keepalive: keep running when the event queue is empty (default: the program has physical
            actions).
        executor: ``"inline"`` | ``"threads"`` | ``"processes"`` (a key of ``EXECUTORS``).
        workers: the executor's threads or processes.
        **executor_options: passed to the executor (e.g. ``waiting=Waiting(...)``, ``copy_arrays``).

    Returns:
        The run's statistics (`RunStats`).

    Raises:
        AssemblyError: before anything runs, for a program that breaks the rules.
        ReactionError: from a reaction that raised.
    """
    program = main if isinstance(main, Program) else assemble(main)
    if timeout is not None:
        timeout = int(timeout)
        if timeout < 0:
            raise ValueError("timeout must be >= 0")
        if timeout >= FOREVER:
            timeout = None
    ex = make_executor(executor, workers, **executor_options)
    if keepalive is None:
        keepalive = program.has_physical_actions
    core = Core(program, ex, fast=fast, keepalive=bool(keepalive), timeout=timeout)
    for r in program.reactors:
        r.__dict__["_core"] = core
    error: BaseException | None = None
    ex.attach(core, program)
    try:
        start = time.time_ns()
        ex.begin(start)
        t0 = time.perf_counter()
        try:
            core.run(start)
        finally:
            wall = time.perf_counter() - t0
    except BaseException as exc:
        error = exc
        raise
    finally:
        ex.close(error)
    stats = RunStats(tags=int(core.tags), reactions=int(core.reactions_run), wall_seconds=wall,
                     final_tag=Tag(core.time, core.mstep), start_time=core.start_time,
                     elapsed=core.time - core.start_time, executor=executor, workers=int(workers))
    return ex.collect(stats)
