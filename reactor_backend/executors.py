"""Executors: how one level's ready reactions are run. A small plug-in interface.

The compiled core (``_core.Core``) owns the schedule: it pops events at each tag, triggers reactions
and hands them out *level by level* in a deterministic order (level, then inherited deadline, then
reactor preorder, then declaration order; ``inline`` runs LF's single-threaded order instead:
inherited deadline first, then level). Reactions of one level never depend on each other (same observable effects in
any order), so an executor may run them in any order or in parallel; determinism is preserved
because every level is complete before the next one starts.

How an executor plugs in
------------------------
Subclass ``Executor`` (or duck-type it) and add it to the one table of executors,
``reactor_backend.runtime.EXECUTORS`` (name -> class; ``inline`` and ``threads`` are here,
``processes`` in ``processes.py``). This module imports no executor implementation, so no executor
module imports a module that imports it back. ``run`` drives an executor in this order, all in the
calling process::

    program = assemble(main)                 # the Program (see assembly.py)
    ex = make_executor(name, workers, **options)
    core = Core(program, ex, fast=..., keepalive=..., timeout=...)
    ex.attach(core, program)                 # set up: threads, processes, shared memory, placement
    start = time.time_ns()
    ex.begin(start)                          # last moment before the first tag (publish start time)
    try:
        core.run(start)                      # the tag loop; calls the hooks below
    finally:
        ex.close(error)                      # always; error is the exception or None
    stats = ex.collect(stats)                # optionally merge per-process statistics

Hooks the tag loop calls:

- ``inline`` (class attribute): ``True`` makes the core run reactions itself, without calling
  ``run_level`` (the fast path). Every other executor gets ``run_level``.
- ``inline_singletons`` (class attribute, default ``False``): ``True`` lets the core run a level that
  has exactly one ready reaction (and is not a meeting level) itself, skipping ``run_level``.
- ``run_level(level: int, reactions: list[Reaction]) -> None``: run these reactions (all ready at
  ``level``, in global order) by calling ``core.execute(r)`` for each, in any thread; return only when
  all are done; raise the ``ReactionError`` of the first failing reaction (in list order).
  ``core.execute`` does the deadline check, the effect bookkeeping and the error wrapping.
- ``barrier_levels`` (attribute, ``None`` or a sorted tuple of ints): meeting levels, at which
  ``run_level`` is called at every tag even when no local reaction is ready (``reactions == []``). A processes
  executor lists the levels after which port values cross processes, exchanges them at those levels
  (before running its local reactions there) and delivers received values with
  ``port._set(value)``, which sets presence, propagates through the fan-out, triggers the *local*
  reactions downstream (they run at the same or later levels of the same tag) and queues
  delayed-connection events locally.
- ``core.link`` (set by the executor in ``attach``/``begin``, or None): a ``_core.ProcessLink`` that
  holds the meetings per level and the tag-advance reduction; with it the core runs every level
  itself (no ``run_level``), does each meeting level's exchange and, when ``link.fast``, the
  reduction (no ``advance``): the processes executor's per-tag path without a Python frame.
- ``advance(local_next: Tag | None, stop: Tag | None) -> (Tag | None, Tag | None)`` (optional; absent
  or ``None`` for single-process executors): called at each tag advance with this process's earliest
  queued event tag and its stop request; returns the agreed (global minimum) next tag and stop tag.
  The core then uses the agreed values, identically in every process, for starvation, stop and
  timeout decisions; tags with no local event are still processed (meetings run, nothing fires).
  If ``keepalive`` is set, ``advance`` may block; ``core.next_event_tag()`` and the physical-action
  inbox (``core.schedule_physical``) are available to it.

Core facilities for multi-process executors (every process holds a full copy of the program and
its own ``Core``; only the reactions placed on it run there):

- ``core.decide_next(next_tag, stop_tag)``: the core's own next-tag decision (``("event", tag)``,
  ``("final", tag)`` or ``("wait", None)``), so an executor that waits collectively waits for the tag
  the core will process.
- A ``Core`` resets the per-run state of the program's objects when it is built, and an executor
  must undo what it changes in the program (``reaction.local``, ``port.delayed``) in ``close``: an
  assembled program is a plan that runs again, under any executor, with the same results.
- ``reaction.local = False`` for reactions placed elsewhere: they are never triggered locally.
- ``core.time``, ``core.mstep``, ``core.start_time``, ``core.epoch`` (tag counter),
  ``core.reactions_run``, ``core.tags``; ``core.set_stop_tag(tag)``; ``action._push_at(t, m, value)``.
- Placement: ``placement.assign_workers(program, n)`` (hints via ``Reactor.place`` / ``Bank.place``).

The ``threads`` executor below is the reference for a non-inline executor.
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Callable

from reactor_backend._core import Core, Reaction
from reactor_backend._crew import Crew


class Executor:
    """Base class; defaults are the single-process, in-order behaviour."""

    name: str = "base"
    inline: bool = False
    inline_singletons: bool = False
    barrier_levels: tuple[int, ...] | None = None
    advance: Callable | None = None  # set to a method in multi-process executors

    def __init__(self, workers: int = 1, **options: Any) -> None:
        if options:
            raise TypeError(f"executor {self.name!r} takes no options {sorted(options)}")
        self.workers = int(workers)
        self.core: Core | None = None
        self.program: Any = None

    def attach(self, core: Core, program: Any) -> None:
        """Called once before the first tag."""
        self.core = core
        self.program = program

    def begin(self, start_time: int) -> None:
        """Called right before ``core.run(start_time)``."""

    def run_level(self, level: int, reactions: list[Reaction]) -> None:
        execute = self.core.execute  # type: ignore[union-attr]
        for r in reactions:
            execute(r)

    def close(self, error: BaseException | None = None) -> None:
        """Called once after the run (also after errors): release threads/processes."""

    def collect(self, stats: Any) -> Any:
        """Adjust run statistics (e.g. sum reactions over processes)."""
        return stats


class InlineExecutor(Executor):
    """Runs every reaction in the calling thread, in global order (the core does it directly)."""

    name = "inline"
    inline = True


class ThreadExecutor(Executor):
    """Runs a level's reactions on a fixed crew of ``workers`` threads (the calling thread is worker 0).

    Each reactor runs on the worker ``assign_workers`` places it on (the processes executor's placement:
    ``Reactor.place``/``Bank.place`` hints, bank members in even contiguous parts, everything else with
    its container), and a level whose reactions are all placed on worker 0 (or a level of one reaction)
    runs here without waking anyone; a reactor's reactions never share a level, so its state is
    touched by one thread at a time. The crew meets
    per level through one pair of words per worker (``_crew.Crew``), never a lock. Deterministic:
    levels are barriers and a level's reactions are independent; the ready queue is ordered, so the
    same reactions run at the same tags with the same inputs. Parallel where the reactions release the
    GIL (numpy, torch, I/O) and, on a free-threaded interpreter, everywhere (docs/reactor.md, "Threads
    and free-threaded Python").
    """

    name = "threads"
    inline_singletons = True

    def __init__(self, workers: int = 2, *, lock: bool | None = None, waiting: Any = None,
                 initializer: Callable[[], Any] | None = None, **options: Any) -> None:
        """``lock``: lock the core's queues (default: only when the interpreter has no GIL); ``waiting``: how
        a thread waits for another (`reactor_backend.waiting.Waiting`, the processes executor's options,
        read the same way; None: its defaults); ``initializer``: called once in each of the executor's
        threads (not the calling thread) as it starts, before any reaction runs anywhere (``attach`` waits
        for all of them and raises the first failure), e.g. per-thread library settings."""
        super().__init__(workers, **options)
        self.waiting = waiting
        self.initializer = initializer
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        gil = getattr(sys, "_is_gil_enabled", lambda: True)()
        self.lock = (not gil) if lock is None else bool(lock)
        self._threads: list[threading.Thread] = []
        self._crew: Crew | None = None

    def attach(self, core: Core, program: Any) -> None:
        super().attach(core, program)
        from reactor_backend.placement import assign_workers  # the placement the processes executor uses

        core.locking = self.lock
        where = assign_workers(program, self.workers)
        placed = [0] * len(program.reactions)
        for r in program.reactions:
            placed[r.index] = where[r.reactor]
        self._crew = crew = Crew(self.workers, core.execute, placed, self.waiting)
        initializer = self.initializer
        started = threading.Semaphore(0)
        failures: list[BaseException] = []

        def serve(k: int) -> None:
            try:
                if initializer is not None:
                    initializer()
            except BaseException as exc:  # raised by attach; the crew's stop ends the others
                failures.append(exc)
                return
            finally:
                started.release()
            crew.serve(k)

        for k in range(1, self.workers):
            t = threading.Thread(target=serve, args=(k,), name=f"reactor-worker-{k}", daemon=True)
            t.start()
            self._threads.append(t)
        for _ in self._threads:
            started.acquire()
        if failures:
            self.close()
            raise failures[0]
        if self.workers > 1:
            self.run_level = self._crew.run_level  # type: ignore[method-assign]  # no Python frame per level

    def close(self, error: BaseException | None = None) -> None:
        if self._crew is not None:
            self._crew.stop()
        for t in self._threads:
            t.join(timeout=5)
        self._threads = []
        self._crew = None
        self.__dict__.pop("run_level", None)
