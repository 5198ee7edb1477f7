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
import time
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


class ThreadBreakdown:
    """Where each thread of the threads executor spends its time, read while the run is in progress (``counters``):
    the threads executor's counterpart of the processes executor's ``Breakdown``, with the same ``cpu``,
    ``wait`` and ``handoff`` (its threads share memory, so there is no transport).

    Why: the processes executor's question (is the thread that runs the server the serial part of the round?)
    is the paper's own setup's too, and on a free-threaded interpreter 16 threads on 2 cores take turns as 16
    processes do, so their wall times say nothing about 16 cores while each thread's CPU clock does. Pass
    ``run(..., executor="threads", breakdown=ThreadBreakdown())``.

    Per thread (worker 0: the calling thread, which runs the tag loop, every level of one reaction and its own
    share of the others): ``cpu``, the CPU its clock (``pthread_getcpuclockid``, read from any thread) counted
    since the crew started, less the CPU its waits used (`_crew.Crew`'s timed counters) and less what `exclude`
    took out; ``wait``, the wall time it waited for another thread (a level handed to it, or the others'
    chunks), hand-offs included; ``handoff``, the part of those waits from the moment the awaited thread
    published, by its clock, to the moment this one saw it (a spin, a yield or a futex wake-up). All ns since the
    crew started. Under a GIL the threads also wait for the GIL, which none of these counts. After the run,
    ``stats.breakdown`` holds the last reading's parts (as the processes executor's does).
    """

    #: the counters of each thread; ``wait`` there includes ``handoff``
    FIELDS = ("cpu", "wait", "handoff")
    #: the disjoint parts a report shows beside ``cpu``
    PARTS = ("wait", "handoff")
    #: what a backend records per thread and round
    COLUMNS = ("cpu", *PARTS)

    def __init__(self) -> None:
        self._crew: Crew | None = None
        self._clocks: list[int] = []
        self._cpu0: list[int] = []  # each clock when the crew started
        self._excluded_cpu = 0
        self._paused: tuple[int, int] | None = None  # (wall ns, thread 0's CPU ns) when `pause` was called
        self._final: list[dict[str, int]] | None = None

    def exclude(self, ns: int, cpu_ns: int) -> None:
        """Take ``cpu_ns`` of the calling thread's CPU, spent inside a reaction on something other than the
        program's work (a harness's clock between a paired job's blocks), out of thread 0's ``cpu`` (``ns``: its
        wall time, which no counter here holds; the processes ``Breakdown``'s signature)."""
        if self._crew is not None:
            self._excluded_cpu += int(cpu_ns)

    def pause(self) -> None:
        """Thread 0 stops doing the program's work until `resume` (the processes ``Breakdown``'s): readings
        meanwhile show its CPU as it was now, and `resume` takes the pause out (`exclude`). No effect when no run
        is in progress."""
        if self._crew is not None and self._paused is None:
            self._paused = (time.perf_counter_ns(), time.clock_gettime_ns(self._clocks[0]))

    def resume(self) -> None:
        """Thread 0 does the program's work again: the CPU it used since `pause` is taken out."""
        if self._paused is not None:
            t0, c0 = self._paused
            self._paused = None
            if self._crew is not None:
                self.exclude(time.perf_counter_ns() - t0, time.clock_gettime_ns(self._clocks[0]) - c0)

    def counters(self) -> list[dict[str, int]]:
        """Per thread: the cumulative ``FIELDS`` (``wait`` includes ``handoff``). Empty before the run starts; the
        last reading after it."""
        if self._final is not None:
            return [dict(d) for d in self._final]
        crew = self._crew
        if crew is None:
            return []
        out = []
        for k, (clock, cpu0) in enumerate(zip(self._clocks, self._cpu0)):
            wait, handoff, wait_cpu = crew.counters(k)
            now = self._paused[1] if k == 0 and self._paused is not None else time.clock_gettime_ns(clock)
            cpu = now - cpu0 - wait_cpu - (self._excluded_cpu if k == 0 else 0)
            out.append({"cpu": max(0, cpu), "wait": wait, "handoff": handoff})
        return out

    @classmethod
    def parts(cls, raw: dict[str, int]) -> dict[str, int]:
        """``cpu`` and the disjoint ``PARTS`` of raw counters or of the difference of two readings (the hand-off
        taken out of the wait)."""
        vals = dict(raw)
        vals["handoff"] = max(0, min(vals["handoff"], vals["wait"]))  # both are read while they grow
        vals["wait"] -= vals["handoff"]
        return vals

    def snapshot(self) -> list[dict[str, int]]:
        """Per thread: cumulative ``cpu`` and the disjoint ``PARTS`` (ns). Empty before the run starts."""
        return [self.parts(c) for c in self.counters()]

    def _start(self, crew: Crew, clocks: list[int]) -> None:
        self._crew, self._clocks, self._excluded_cpu, self._final = crew, list(clocks), 0, None
        self._paused = None
        self._cpu0 = [time.clock_gettime_ns(c) for c in clocks]

    def _freeze(self) -> None:
        """The last reading, while the threads (whose CPU clocks end with them) still run."""
        if self._crew is not None:
            self._final = self.counters()
            self._crew = None


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
                 initializer: Callable[[], Any] | None = None, breakdown: ThreadBreakdown | bool | None = None,
                 **options: Any) -> None:
        """``lock``: lock the core's queues (default: only when the interpreter has no GIL); ``waiting``: how
        a thread waits for another (`reactor_backend.waiting.Waiting`, the processes executor's options,
        read the same way; None: its defaults); ``initializer``: called once in each of the executor's
        threads (not the calling thread) as it starts, before any reaction runs anywhere (``attach`` waits
        for all of them and raises the first failure), e.g. per-thread library settings; ``breakdown``: a
        `ThreadBreakdown` to fill while the run is in progress (its crew then times its waits), or True for a new
        one (in ``stats.breakdown`` after the run, as its parts)."""
        super().__init__(workers, **options)
        if breakdown is True:
            breakdown = ThreadBreakdown()
        elif breakdown is False:
            breakdown = None
        if breakdown is not None and not isinstance(breakdown, ThreadBreakdown):
            raise TypeError(f"breakdown must be a ThreadBreakdown, not {type(breakdown).__name__}")
        self.waiting = waiting
        self.initializer = initializer
        self.breakdown: ThreadBreakdown | None = breakdown
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
        self._crew = crew = Crew(self.workers, core.execute, placed, self.waiting, self.breakdown is not None)
        initializer = self.initializer
        started = threading.Semaphore(0)
        failures: list[BaseException] = []
        clocks = [time.pthread_getcpuclockid(threading.get_ident())] * self.workers  # each thread's CPU clock

        def serve(k: int) -> None:
            try:
                clocks[k] = time.pthread_getcpuclockid(threading.get_ident())
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
        if self.breakdown is not None:
            self.breakdown._start(crew, clocks)
        if self.workers > 1:
            self.run_level = self._crew.run_level  # type: ignore[method-assign]  # no Python frame per level

    def close(self, error: BaseException | None = None) -> None:
        if self.breakdown is not None:
            self.breakdown._freeze()
        if self._crew is not None:
            self._crew.stop()
        for t in self._threads:
            t.join(timeout=5)
        self._threads = []
        self._crew = None
        self.__dict__.pop("run_level", None)

    def collect(self, stats: Any) -> Any:
        if self.breakdown is not None:
            stats.breakdown = self.breakdown.snapshot()
        return stats
