"""The multi-process executor: ``run(main, executor="processes", workers=N)``.

Why: on stock CPython, reactions on threads cannot run Python code in parallel. Here each of N
processes runs the reactions of the reactors placed on it, and the processes synchronize only
through progress words in shared memory (``_sync``), exchanging port values through ``/dev/shm``
slots (``transport``). No locks, no queues, no per-reaction messages.

Placement (static, at assembly)
    ``placement.assign_workers(program, N)``: hints (``Reactor.place`` / ``Bank.place``) win; banks
    are split into contiguous even parts; everything else lives with its container (main: worker
    0). Worker 0 is the calling process, so reactors placed there keep their state in the caller
    and can be read after ``run`` returns. Workers 1..N-1 are forked from the caller after the
    program is assembled (``begin``), so heavy state built in startup reactions is created in the
    process that owns the reactor. When ``run`` returns, the plain-data attributes (numbers,
    strings, containers of them, numpy arrays) of reactors that lived in other workers are copied
    back into the caller's objects (lists, dicts and sets are refilled in place, so a list passed
    to a reactor's constructor shows what that reactor appended); other objects (environments,
    models) stay where they lived.

Every process holds the whole program and its own ``Core``; ``reaction.local`` is True only for
its own reactions. All processes process the same sequence of tags.

Which values cross (computed once, identically in every process)
    A *root* is a port whose ``_set`` is called directly: an effect port of a reaction (owner: the
    writer's worker) or the destination of a delayed/physical connection (owner: the owner of the
    root upstream, which holds the delayed event in its own event queue). Zero-delay fan-out
    happens inside ``_set`` in each process, to the ports that process's reactions read (each process's
    copy of a port keeps only those in its ``fanout`` and only its own reactions in its ``reactions``: a
    broadcast to a bank of 64 is delivered to this process's members, not to all 64 in every process).
    A root is *exported* to every other worker that has a
    reaction reading it or its fan-out (``program.readers``); it gets one slot, written once per
    tag by its owner however many processes and ports read it (a broadcast is written once).
    Non-owners never schedule a root's delayed events (``port.delayed = ()`` there): the owner
    does, and exports the destination when the event fires.

Meetings (static)
    Exported root R written at level w (the highest level of its writers; -1 for delayed
    destinations, set by events at the start of a tag) and read in worker B from level r needs a
    meeting at some level b with w < b <= r. The executor picks the fewest levels that cover all
    such intervals (greedy interval stabbing) and assigns R to the first meeting level after w.
    Levels without a cross-process dependency get no meeting. A meeting is point to point, not a
    barrier: each process owns a progress word in shared memory (``_sync``) holding its position
    ``(tag counter, level)``. At a meeting level b, each process (1) writes every exported root it
    owns assigned to b and present at this tag into its slot, stamped with the tag counter
    (``core.epoch``, equal in all processes), and publishes its position (if it owns any), (2)
    waits only for the owners of the roots it imports at b to reach the same position, (3) reads
    every such root whose stamp is this tag and calls ``root._set(value)``, which sets presence,
    fans out and triggers local reactions; (2) and (3) go owner by owner in the order the owners
    arrive (``_sync.Barrier.wait_any``): a process gathering from many reads the early ones' slots
    while it waits for the late ones. So a writer never waits for its readers, and a process
    with nothing to read at b does not wait at all.
    A slot is rewritten only at the same level of a later tag, after the writer passed the tag
    advance, which waits for every process to have finished the tag: a single buffer per slot
    is enough.

Tag advance
    ``advance`` is a reduction over the progress words (positions built by
    ``_sync.meeting_position`` / ``_sync.advance_position``, the one definition of their layout): each process publishes its earliest queued
    event and its stop request with its end-of-tag position, waits until every other process
    published the same position, and computes the lexicographic minima. A round of the
    broadcast/gather benchmarks therefore costs two hand-offs on its critical path (the server's
    scatter to the clients, the clients' results to the server); the clients' wait for the next
    tag overlaps the server's gather. Timers are queued in every process, a
    logical action only in its owner, a delayed cross-process connection in the owner of its
    source; the minimum is therefore the true next tag. Physical actions may only be scheduled
    from threads of the process that owns them (they go to that process's core); ``schedule``
    from another process raises ``ReactionError`` (the event would fire there and trigger nothing). When the core would wait
    for physical time (``fast=False``, or keepalive with nothing queued), the processes wait
    together in ``advance``: each sleeps on a shared signal word until the target time; a physical
    event (``core.wake_hook``) bumps the word, everybody wakes and reduces again, and the wait ends
    when a reduction finds nothing new and every process past the target.

Time breakdown
    With ``breakdown=`` (a ``Breakdown``, or True), each process times its role work (reaction
    bodies), transport (slot writes and reads), waiting (meetings and reductions), the hand-offs
    within those waits (each publish is stamped with its time, on the cache line after the progress
    word's, and a waiter that had to wait counts from that stamp to the moment it saw it) and the rest
    of its tag loop, and stores the totals in its counters in the control block once per tag, so the
    caller can read every process's totals while the run is in progress (``Breakdown.snapshot``).

Where it runs
    The protocol is planned here, in Python, once per run; the per-level and per-tag part runs in
    the core (``_core.ProcessLink``, set as ``core.link``): the core runs every level's reactions,
    does each meeting and, in fast mode, the tag-advance reduction, with no Python frame of the
    executor per level or per tag (measured: that Python cost a fine-grained round more than its
    reactions). Slow mode and keepalive still call ``advance`` here for the collective wait.

Values
    numpy arrays are copied once into the slot by the writer, or not at all when the reaction built
    the array in the slot (``Port.lend``: the exporting process's ports lend their slot writer's
    buffer, zero-copy output); flat records (tuples or lists of
    arrays and scalars: an env step) are laid out once and then only their data is copied; other
    values are pickled into it (protocol 5, numpy arrays inside them as out-of-band buffers, also
    copied once). The reading
    process makes one private copy (``copy_arrays=True``, the default), shared by reference by all
    its readers (read-only, and copied again for ``mutable`` inputs, as under ``inline``), so a
    reaction may keep what it received (a replay buffer that stores observations stays correct). ``copy_arrays=False`` skips that
    copy: readers get read-only views over the slot that stay valid only until the writer sends
    the next value on that port (one tag later at the earliest); use it when received arrays are
    consumed within the tag (the round-trip benchmarks do). Inside one process values pass by
    reference as in ``inline``.

Faults
    ``_procgroup.ProcessGroup``: an exception in any worker stops all; ``run`` raises
    ``ReactionError`` with the remote traceback, reactor, reaction and tag (when several processes
    failed before seeing the stop, the failure first by tag and reaction order, as inline would
    report it). A worker killed by a signal raises ``WorkerDied``; Ctrl-C raises
    ``KeyboardInterrupt``; SIGTERM to the caller (without a handler of its own) exits with 143.
    All of them tear everything down within about a second (workers busy in a reaction get
    SIGKILL after ``grace``); every ``/dev/shm/rb-<pid>-*`` segment is unlinked. Workers die with
    the caller (``PR_SET_PDEATHSIG``); after a SIGKILL of the caller, remove its segments by prefix
    (``reactor_backend.cleanup_after(pid)``).

Forking
    Workers are forked (Linux); there is no spawn mode, since the assembled program (user classes,
    bound methods, compiled objects) is not pickled. A forked worker sets ``torch.set_num_threads
    (1)`` when torch is loaded: libgomp's pool does not survive fork (a worker hung without it).
"""
from __future__ import annotations

import pickle
import signal
import sys
import threading
import time
from typing import Any

import numpy as np

from reactor_backend import _sync
from reactor_backend._core import Core, Port, ProcessLink, Reaction
from reactor_backend._procgroup import ProcessGroup, WorkerDied, WorkerError
from reactor_backend.assembly import Program
from reactor_backend.placement import assign_workers
from reactor_backend.errors import ReactionError
from reactor_backend.executors import Executor
from reactor_backend.model import Reactor, State, class_declarations
from reactor_backend.readonly import ReadOnlyDict
from reactor_backend.timeutil import Tag
from reactor_backend.transport import SlotTable, create_segment, open_segment
from reactor_backend.waiting import Waiting

__all__ = ["ProcessExecutor", "plan", "WorkerDied"]

NEVER = _sync.NEVER
_NO_WAIT = -1
_NO_TAG = (NEVER, NEVER)
_POLL_NS = 20_000_000  # timed-wait slice (physical events wake waiters at once via core.wake_hook)
_time_ns = time.time_ns
_meeting_position = _sync.meeting_position
_advance_position = _sync.advance_position
_C_REACTIONS = 0   # per-process counter slots in the control block
_C_STATE = 1
_C_BREAKDOWN = 2   # slots 2..9: the time breakdown (see Breakdown)
_INTERNAL = frozenset({"_ctx", "bank_index", "_bank_member", "_connections", "_banks", "_place_hint", "_name",
                       "_core", "_assembled", "_scope_mode", "_in_mode", "_enclosing_mode",
                       "_current_mode", "_mode_request", "_modes"})


class Breakdown:
    """Where each worker process's time goes, read while the run is in progress (``snapshot``).

    Why: a round of a fine-grained workload costs a few hundred microseconds, and the parts that are
    not the roles' own work (waiting for a partner, copying values into slots, the executor's
    Python) decide whether the processes beat a for-loop. Pass ``run(..., executor="processes",
    breakdown=Breakdown())`` (or ``breakdown=True`` and read ``stats.breakdown``). Each process
    keeps ``perf_counter_ns`` accumulators in its ``_core.ProcessLink`` (the core reads the clock
    twice per reaction, four times per meeting, twice per tag advance) and stores them into its
    counters in the control block once per tag (plain stores from compiled code), so any process
    can read every process's totals at any time; after the run the last totals stay readable.

    Per process: ``work`` (reaction bodies, e.g. a scenario's step/gather), ``transport`` (writing
    values into slots, reading and delivering them), ``wait`` (meetings and tag-advance reductions:
    waiting for other processes to get there, plus a publish), ``handoff`` (the rest of those waits:
    from the moment the awaited process published, by its clock, to the moment this one saw it, i.e.
    the hand-off's own latency: a spin, a yield or a futex wake-up, or this process's core busy with
    something else), ``other`` (everything else of the tag loop: the core's queues, the executor's
    per-level Python, dispatch), ``total`` and ``tags``; all ns. ``work + transport + wait +
    handoff + other == total``. ``cpu``: the CPU time the process's thread used outside its waits (work,
    transport and other, by ``CLOCK_THREAD_CPUTIME_ID``), which oversubscription does not inflate: with 16
    processes on 2 cores the wall-time parts include the time a process waited for a core, ``cpu`` does
    not, so it is what a round would cost each process with a core of its own. ``overlap``: the part of
    ``transport`` spent reading one process's slots while another that the same meeting reads had not yet
    arrived (a meeting reads each as it arrives): with a core per process it overlapped that wait, so the rest
    of ``transport`` is what follows the last arrival (on fewer cores than processes the arrivals come in
    time slices, and more of it overlaps than would with a core each).
    """

    #: the counters each process stores (slots from ``_C_BREAKDOWN``); ``wait`` there includes the hand-off
    FIELDS = ("work", "transport", "wait", "total", "tags", "handoff", "cpu", "overlap")
    #: the disjoint parts of a snapshot's ``total``, in the order a report stacks them
    PARTS = ("work", "transport", "wait", "handoff", "other")
    #: what a backend records per process and round: the parts, ``cpu`` and ``overlap``
    COLUMNS = (*PARTS, "cpu", "overlap")

    def __init__(self) -> None:
        self._barrier: _sync.Barrier | None = None
        self._link: ProcessLink | None = None  # process 0's (the caller's), while the run is in progress
        self._link_thread = 0  # the thread that runs it
        self._paused: tuple[int, int] | None = None  # (wall ns, CPU ns) when `pause` was called
        self._final: list[dict[str, int]] | None = None
        self.workers = 0

    def exclude(self, ns: int, cpu_ns: int) -> None:
        """Take time that the caller (process 0) spent inside a reaction on something other than the
        program's work out of its breakdown: ``ns`` of wall time, ``cpu_ns`` of its thread's CPU time.

        Why: a harness whose clock is called from a reaction (the server's round end) waits there between a
        paired job's blocks and writes its reports there; without this, that time counts as process 0's role
        work and its other processes' waiting, and process 0 looks busy the whole round. No effect when no
        run is in progress.

        Args:
            ns: wall-time nanoseconds (``time.perf_counter_ns`` differences).
            cpu_ns: this thread's CPU nanoseconds (``time.thread_time_ns`` differences).
        """
        if self._link is not None:
            self._link.exclude(int(ns), int(cpu_ns))

    def pause(self) -> None:
        """The caller (process 0, inside a reaction) stops doing the program's work until `resume` (a harness's
        clock between a paired job's blocks): its totals are stored now, a reading meanwhile stores none (so it
        shows none of the pause), and `resume` takes the pause out (`exclude`). No effect when no run is in
        progress or from another thread."""
        if self._paused is None and self._caller_link() is not None:
            self._link.store_now()
            self._paused = (time.perf_counter_ns(), time.thread_time_ns())

    def _caller_link(self) -> ProcessLink | None:
        """Process 0's link where a run is in progress and this is the thread that runs it, else None."""
        return self._link if threading.get_ident() == self._link_thread else None

    def resume(self) -> None:
        """The caller does the program's work again: the time and CPU since `pause` are taken out."""
        if self._paused is not None:
            t0, c0 = self._paused
            self._paused = None
            self.exclude(time.perf_counter_ns() - t0, time.thread_time_ns() - c0)

    def counters(self) -> list[dict[str, int]]:
        """Per process (by rank): the raw cumulative counters (``FIELDS``, ns since that process entered the tag
        loop; ``wait`` includes ``handoff``). Each only grows, so the difference of two readings is never
        negative, even where a reading caught another process between two of its stores. Empty before the run
        starts."""
        if self._final is not None:
            return [dict(d) for d in self._final]
        b = self._barrier
        if b is None:
            return []
        if self._paused is None and self._caller_link() is not None:
            self._link.store_now()  # process 0's tag ends store nothing (`_core.ProcessLink`): its totals up to now
        return [{k: int(b.counter(rank, _C_BREAKDOWN + i)) for i, k in enumerate(self.FIELDS)}
                for rank in range(self.workers)]

    @classmethod
    def parts(cls, raw: dict[str, int]) -> dict[str, int]:
        """The disjoint parts (``PARTS``) of raw counters or of the difference of two readings, with ``total``,
        ``tags`` and ``cpu``. Why from differences: the parts are derived (hand-off out of waiting, other as the
        rest), and a derived part of one reading minus that of another can be negative where the readings
        caught counters mid-store; derived from the counters' own differences, every part is at least 0."""
        vals = dict(raw)
        vals["handoff"] = max(0, min(vals["handoff"], vals["wait"]))  # both are read while they grow
        vals["wait"] -= vals["handoff"]
        vals["other"] = max(0, vals["total"] - vals["work"] - vals["transport"] - vals["wait"] - vals["handoff"])
        return vals

    def snapshot(self) -> list[dict[str, int]]:
        """Per process (by rank): cumulative ``work``, ``transport``, ``wait``, ``handoff``, ``other``, ``total``
        (ns since that process entered the tag loop), ``tags`` and ``cpu``. Empty before the run starts."""
        return [self.parts(c) for c in self.counters()]

    def _freeze(self) -> None:
        self._final = self.counters()
        self._barrier = None


class Plan:
    """What crosses processes, computed identically in every process from program + placement."""

    def __init__(self, program: Program, placement: dict[Reactor, int], workers: int) -> None:
        self.workers = workers
        self.placement = placement
        owner: dict[int, int] = {}       # root port id -> worker
        wlevel: dict[int, int] = {}      # root port id -> level after which it is complete
        for p in program.ports:
            ws = program.writers[p.id]
            if ws:
                owner[p.id] = placement[ws[0].reactor]
                wlevel[p.id] = max(r.level for r in ws)
        # delayed destinations inherit the owner of the root that schedules them (chains too)
        work = list(owner)
        by_id = {p.id: p for p in program.ports}
        while work:
            pid = work.pop()
            for dst, _delay, _phys, *_mode in by_id[pid].delayed:
                if dst.id not in owner:
                    owner[dst.id] = owner[pid]
                    wlevel[dst.id] = -1
                    work.append(dst.id)
        self.owner = owner
        exports: list[tuple[Port, int, dict[int, int]]] = []  # (root, writer level, {reader worker: min level})
        for pid in sorted(owner):
            root = by_id[pid]
            readers: dict[int, int] = {}
            for rx in program.readers(root):
                w = placement[rx.reactor]
                if w != owner[pid]:
                    readers[w] = min(readers.get(w, rx.level), rx.level)
            if readers:
                exports.append((root, wlevel[pid], readers))
        # fewest meeting levels stabbing every interval (w, r] (the core's name for them: barrier_levels)
        intervals = sorted(((w, r) for _, w, rd in exports for r in rd.values()), key=lambda x: x[1])
        bars: list[int] = []
        for w, r in intervals:
            if not (bars and w < bars[-1] <= r):
                bars.append(r)
        self.barrier_levels = tuple(sorted(set(bars)))
        self.exports = []  # (slot index, root, meeting level, owner, reader workers)
        for slot, (root, w, rd) in enumerate(exports):
            b = min(x for x in self.barrier_levels if x > w)
            self.exports.append((slot, root, b, owner[root.id], tuple(sorted(rd))))

    def meetings(self, rank: int) -> dict[int, tuple[bool, tuple[int, ...]]]:
        """Per meeting level, what rank ``rank`` does there: (publishes its position because it
        writes a slot, ranks whose position it waits for because it reads their slots)."""
        return {b: (any(own == rank and bb == b for _s, _r, bb, own, _rd in self.exports),
                    tuple(sorted({own for _s, _r, bb, own, rd in self.exports if bb == b and rank in rd})))
                for b in self.barrier_levels}


def plan(program: Program, workers: int) -> Plan:
    """The cross-process plan of ``program`` on ``workers`` processes (for inspection and tests)."""
    return Plan(program, assign_workers(program, workers), workers)


class ProcessExecutor(Executor):
    """Runs each reactor's reactions in the worker process it is placed on (see module docstring)."""

    name = "processes"

    def __init__(self, workers: int = 2, *, copy_arrays: bool = True, grace: float = 1.0,
                 breakdown: "Breakdown | bool" = False, waiting: "Waiting | None" = None) -> None:
        """``copy_arrays``: readers get private copies (True) or read-only views over the slot
        (False; see the module docstring). ``grace``: seconds workers get to stop before SIGKILL.
        ``breakdown``: a ``Breakdown`` to fill (or True: a new one, in ``stats.breakdown``).
        ``waiting``: how a process waits for the others (`reactor_backend.waiting.Waiting`; None: its
        defaults)."""
        super().__init__(workers)
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        self.copy_arrays = bool(copy_arrays)
        self.grace = grace
        self.waiting = waiting
        self.rank = 0
        self.group: ProcessGroup | None = None
        self.barrier: _sync.Barrier | None = None
        self.plan: Plan | None = None
        self._red_epoch = -1
        self._red_count = 0
        self._fast_advance = False
        self.advance = self._advance
        if breakdown is True:
            breakdown = Breakdown()
        self.breakdown: Breakdown | None = breakdown or None
        if self.breakdown is not None:
            self.breakdown.workers = self.workers
            self.advance = self._advance_timed
        self.link: ProcessLink | None = None

    # ---- set-up ---------------------------------------------------------------------------
    def attach(self, core: Core, program: Any) -> None:
        super().attach(core, program)
        self.plan = Plan(program, assign_workers(program, self.workers), self.workers)
        self.barrier_levels = self.plan.barrier_levels
        core.barrier_levels = self.barrier_levels  # the core read it before attach
        self._fast_advance = bool(core.fast) and not core.keepalive
        self.group = ProcessGroup(self.workers, grace=self.grace, waiting=self.waiting)
        self.slots = SlotTable(self.group.prefix + "p-", len(self.plan.exports), create=True)
        # before any process edits them: what `_localize` narrows per process and `_restore_program` puts back
        self._delayed = {p.id: p.delayed for p in program.ports}
        self._fanout = {p.id: (p.fanout, p.reactions) for p in program.ports}
        self._localize(0)

    def _localize(self, rank: int) -> None:
        """Make this process's copy of the program run rank ``rank``'s reactions only."""
        plan = self.plan
        assert plan is not None
        self.rank = rank
        for rx in self.program.reactions:
            rx.local = plan.placement[rx.reactor] == rank
        program = self.program
        # a value set here reaches only the ports this process's reactions read (or reach through them), and makes
        # ready only its reactions: a broadcast to a bank of 64 is delivered to this process's members, not marked,
        # valued and triggered 64 times in every process each tag
        read_here = {q.id for q in program.ports if any(rx.local for rx in program.readers(q))}
        for p in program.ports:
            own = plan.owner.get(p.id)
            # only the owner schedules a root's delayed events (and exports their destinations)
            p.delayed = self._delayed[p.id] if own is None or own == rank else ()
            p.lender = None
            fanout, reactions = self._fanout[p.id]
            p.fanout = tuple(q for q in fanout if q.id in read_here)
            p.reactions = tuple(rx for rx in reactions if rx.local)
        flush: dict[int, list] = {}
        imports: dict[tuple[int, int], list] = {}  # (level, owner) -> what I read from it there
        for slot, root, b, own, readers in plan.exports:
            if own == rank:
                writer = self.slots.writer(slot)
                root.lender = writer.lend  # Port.lend: the value is built in the slot (zero-copy output)
                flush.setdefault(b, []).append((root, writer))
            elif rank in readers:
                imports.setdefault((b, own), []).append((root, self.slots.reader(slot, copy=self.copy_arrays)))
        # per meeting level: (what I write, publish my position?, ranks I wait for, what I read from each of them)
        self._meet = {b: (tuple(flush.get(b, ())), publish, wait, tuple(tuple(imports[b, w]) for w in wait))
                      for b, (publish, wait) in plan.meetings(rank).items()}

    def _link(self, barrier: _sync.Barrier) -> None:
        """Hand this process's meetings and (in fast mode) its tag-advance reductions to the core
        (``_core.ProcessLink``): the core runs them between levels without a Python frame."""
        levels = max(self._meet, default=-1) + 1
        barrier.stamp = self.breakdown is not None  # publishes stamped: the breakdown's hand-off part
        barrier.count_cpu = self.breakdown is not None  # the CPU of its waits counted: the breakdown's ``cpu``
        if self.breakdown is not None:  # the barrier keeps its hand-off total in the last breakdown counter
            barrier.handoff_counter = _C_BREAKDOWN + Breakdown.FIELDS.index("handoff")
        # process 0 (the caller) reads the counters itself (`Breakdown.counters`): it stores its own as it reads them
        self.link = ProcessLink(barrier, tuple(_compiled_ends(self._meet.get(b), barrier) for b in range(levels)),
                                self.breakdown is not None, self._fast_advance, _C_BREAKDOWN, NEVER,
                                reader=barrier.index == 0)
        self.core.link = self.link

    def _restore_program(self) -> None:
        """Undo ``_localize`` in the caller's program: the program stays a plan that any executor
        can run again (the per-run state lives here and in the core)."""
        delayed = getattr(self, "_delayed", None)
        if delayed is None:
            return
        for rx in self.program.reactions:
            rx.local = True
        for p in self.program.ports:
            p.delayed = delayed[p.id]
            p.fanout, p.reactions = self._fanout[p.id]
            p.lender = None

    def begin(self, start_time: int) -> None:
        assert self.group is not None
        self.start_time = start_time

        def child(rank: int, barrier: _sync.Barrier) -> None:
            self.barrier = barrier
            torch = sys.modules.get("torch")
            if torch is not None:
                # libgomp's thread pool does not survive fork: a forked child that enters a parallel
                # region of a pool the caller had started hangs. One intra-op thread per worker is
                # also the measurement rule of this project.
                torch.set_num_threads(1)
            self._localize(rank)
            core = self.core
            core.executor = self
            core.wake_hook = barrier.signal
            self._link(barrier)
            core.run(start_time)
            barrier.add_counter(_C_REACTIONS, int(core.reactions_run))
            self._send_state(rank, barrier)

        self._sigterm = None
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            # a plain `kill`/`timeout` of the caller then still stops workers and removes segments
            self._sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        self.barrier = self.group.start(child)
        self.core.wake_hook = self.barrier.signal
        self._link(self.barrier)
        if self.breakdown is not None:
            self.breakdown._barrier = self.barrier
            self.breakdown._link = self.link
            self.breakdown._link_thread = threading.get_ident()

    # ---- per tag (slow mode) ----------------------------------------------------------------
    # The core runs every level and, in fast mode, every tag-advance reduction itself through the
    # link (``_core.ProcessLink``); ``advance`` below is called only for the collective physical
    # waits of slow mode or keepalive.
    def _advance_timed(self, local_next: Tag | None, stop: Tag | None) -> tuple[Tag | None, Tag | None]:
        """``advance`` timed as waiting; then this process's totals go to its counters."""
        link = self.link
        t0, c0, w0 = link.now(), link.cpu_now(), link.barrier.wait_cpu_ns
        agreed = self._advance(local_next, stop)
        t1 = link.now()
        link.wait += t1 - t0
        # all of it is waiting; the barrier already counted its own waits' share (``wait_cpu_ns``)
        link.cpu_wait += (link.cpu_now() - c0) - (link.barrier.wait_cpu_ns - w0)
        link.store(t1, int(self.core.tags))
        return agreed

    def _reduce(self, local_next: tuple | None, stop: tuple | None, flags: int = 0):
        """One reduction over the progress words: agreed (next tag, stop tag, OR of flags); tags
        are ``(time, microstep)`` tuples or None. Positioned after every level of this tag, and
        after the tag's earlier reductions (a collective physical wait reduces several times)."""
        t, m = local_next if local_next is not None else _NO_TAG
        st, sm = stop if stop is not None else _NO_TAG
        epoch = self.core.epoch
        if epoch != self._red_epoch:
            self._red_epoch, self._red_count = epoch, 0
        position = _advance_position(epoch, self._red_count)
        self._red_count += 1
        t, m, st, sm, fl = self.barrier.reduce_at(position, t, m, st, sm, flags)
        return (None if t == NEVER else (t, m)), (None if st == NEVER else (st, sm)), fl

    def _advance(self, local_next: Tag | None, stop: Tag | None) -> tuple[Tag | None, Tag | None]:
        """Agree on the next tag and stop tag; in slow mode or keepalive, also wait collectively.

        Fast path: one reduction over the progress words. When the core would wait for physical time (``fast=
        False``, or keepalive with an empty queue), all processes wait here instead, together: each
        sleeps on the shared signal word until the target time; a process whose inbox receives a
        physical event (or an external stop request) bumps the word, everybody re-reduces, and the
        wait ends only when a reduction finds every process past the target with nothing new.
        """
        if self._fast_advance:
            # fast mode without keepalive never waits for physical time (see _wait_target)
            nxt, st, _ = self._reduce(local_next, stop)
            return nxt, st
        # The signal word is sampled before each reduction: a signal sent by a process that got an
        # event after (or while) we reduced is then never missed by our wait.
        seen = self.barrier.signal_value
        nxt, st, _ = self._reduce(local_next, stop)
        while True:
            target = self._wait_target(nxt, st)
            if target == _NO_WAIT:
                return nxt, st
            self._wait_until(target, seen)
            core = self.core
            core.drain_inbox()
            early = 1 if (target is None or _time_ns() < target) else 0
            seen = self.barrier.signal_value
            nxt2, st2, early_any = self._reduce(core.next_event_tag(), core.stop_tag, early)
            if nxt2 == nxt and st2 == st and not early_any:
                return nxt, st
            nxt, st = nxt2, st2

    def _wait_target(self, nxt: Tag | None, st: Tag | None) -> int | None:
        """Physical time the core would wait for before the next tag (same in every process):
        ``_NO_WAIT``, a time in ns, or None (keepalive, nothing queued, no end: wait for an event)."""
        core = self.core
        keepalive = core.keepalive
        if nxt is None and st is None and not keepalive:
            return _NO_WAIT  # starvation: the core shuts down at the next microstep
        kind, goal = core.decide_next(nxt, st)  # the core's own decision: the same tag it will process
        if kind == "wait":
            return None
        if not core.fast or (keepalive and nxt is None and st is None):
            return goal[0]
        return _NO_WAIT

    def _wait_until(self, target: int | None, seen: int) -> None:
        """Sleep until physical time ``target`` (None: indefinitely) or until any process signals
        (the signal word differs from ``seen``) or this process's inbox has an event."""
        b = self.barrier
        core = self.core
        last_check = _time_ns()
        while True:
            if core.inbox_pending:
                b.signal()
                return
            now = _time_ns()
            if target is not None and now >= target:
                return
            slice_ns = _POLL_NS if target is None else min(_POLL_NS, target - now)
            if b.wait_signal(seen, slice_ns):
                return
            if now - last_check > 50_000_000 and b.check is not None:
                last_check = now
                b.check()

    # ---- end ------------------------------------------------------------------------------
    def _state_of(self, reactor: Reactor) -> dict[str, Any]:
        """The reactor's plain-data attributes (numbers, strings, containers, numpy arrays)."""
        decls = {d.name for d in class_declarations(type(reactor))[0] if not isinstance(d, State)}
        return {k: v for k, v in reactor.__dict__.items() if k not in _INTERNAL and k not in decls and _plain(v)}

    def _send_state(self, rank: int, barrier: _sync.Barrier) -> None:
        state = {}
        for i, r in enumerate(self.program.reactors):
            if self.plan.placement[r] == rank:
                st = self._state_of(r)
                if st:
                    state[i] = st
        blob = pickle.dumps(state, protocol=5)
        mm = create_segment(f"{self.group.prefix}state{rank}", len(blob))
        mm[: len(blob)] = blob
        barrier.add_counter(_C_STATE, len(blob))

    def _receive_state(self) -> None:
        b = self.barrier
        if self.breakdown is not None:
            self.breakdown._freeze()  # the control block goes away at teardown
        self.reactions_total = int(self.core.reactions_run)
        for rank in range(1, self.workers):
            self.reactions_total += b.counter(rank, _C_REACTIONS)
            n = b.counter(rank, _C_STATE)
            if n <= 0:
                continue
            mm = open_segment(f"{self.group.prefix}state{rank}")
            state = pickle.loads(mm[:n])
            for i, attrs in state.items():
                d = self.program.reactors[i].__dict__
                for k, v in attrs.items():
                    _update(d, k, v)

    def close(self, error: BaseException | None = None) -> None:
        try:
            if self.group is None or self.group.barrier is None:
                if self.group is not None:
                    self.group._teardown()
                return
            try:
                self.group.finish(error, before_teardown=self._receive_state if error is None else None,
                                  error_key=self._error_key)
            except WorkerError as werr:
                raise _as_reaction_error(werr) from werr.original
        finally:
            self._close_slots()
            self._restore_program()
            if self.breakdown is not None and self.breakdown._final is None:
                self.breakdown._barrier = None
            if self.breakdown is not None:
                self.breakdown._link = None
            if getattr(self, "_sigterm", None) is not None:
                signal.signal(signal.SIGTERM, self._sigterm)
                self._sigterm = None

    def _close_slots(self) -> None:
        """Drop this process's slot ends now: each holds its compiled codec in a reference cycle with
        its Python half, and a codec collected later by the garbage collector would release its
        buffer on the mapping in the wrong order (BufferError, printed as ignored)."""
        for flush, _publish, _wait, imports in getattr(self, "_meet", {}).values():
            for _root, end in flush + tuple(pair for group in imports for pair in group):
                end.close()

    def _error_key(self, info: dict[str, Any]) -> tuple[int, int, int]:
        """Order of failures as inline would meet them: by tag, then by the reaction's global order."""
        tag = info.get("tag")
        name = f"{info.get('reactor')}.{info.get('reaction')}"
        index = next((r.index for r in self.program.reactions if r.full_name == name), NEVER)
        if tag is None:
            return (NEVER, NEVER, index)
        return (int(tag[0]), int(tag[1]), index)

    def collect(self, stats: Any) -> Any:
        stats.reactions = getattr(self, "reactions_total", stats.reactions)
        if self.breakdown is not None:
            stats.breakdown = self.breakdown.snapshot()
        return stats


_SCALARS = (type(None), bool, int, float, complex, str, bytes, np.generic)


def _compiled_ends(meeting: tuple | None, barrier: _sync.Barrier) -> tuple | None:
    """A level's meeting as the core runs it (``_core.ProcessLink``): each ``(root, slot end)`` pair with the
    end's compiled half (``SlotWriter._hot``, ``SlotReader._hot``), which the core calls without a Python call,
    what it reads grouped by the rank it waits for with that rank's progress word (the core reads each rank's
    slots as soon as it arrives), and the meeting's scratch bytes; the executor keeps the whole ends (``_meet``)
    to close them."""
    if meeting is None:
        return None
    flush, publish, wait, imports = meeting
    groups = tuple((barrier.progress_address(w), tuple((root, end._hot) for root, end in group))
                   for w, group in zip(wait, imports))
    return (tuple((root, end._hot) for root, end in flush), publish, wait, groups, bytearray(len(wait)))


def _plain(v: Any, depth: int = 0) -> bool:
    """Plain data, safe and meaningful to copy back (not environments, models, files, reactors)."""
    if isinstance(v, _SCALARS):
        return True
    if depth > 20:
        return False
    if type(v) is np.ndarray:
        return not v.dtype.hasobject
    if isinstance(v, (list, tuple, set, frozenset)):
        return all(_plain(x, depth + 1) for x in v)
    if type(v) is dict or type(v) is ReadOnlyDict:  # a received dict a reactor kept
        return all(_plain(k, depth + 1) and _plain(x, depth + 1) for k, x in v.items())
    return False


def _raise_terminated(signum: int, frame: Any) -> None:
    """SIGTERM while ``run`` is in progress: unwind (the executor's teardown runs), exit 143."""
    raise SystemExit(128 + signum)


def _update(d: dict[str, Any], key: str, value: Any) -> None:
    """Set ``d[key] = value``, but refill a list, dict or set in place so that other references
    to the caller's object (a log list passed to the reactor's constructor) see the result."""
    old = d.get(key)
    if type(old) is type(value) and type(value) in (list, dict, set) and old is not value:
        if type(value) is list:
            old[:] = value
        else:
            old.clear()
            old.update(value)
    else:
        d[key] = value


def _as_reaction_error(werr: WorkerError) -> ReactionError:
    """A remote failure as the ``ReactionError`` that ``inline`` would raise, plus the remote traceback."""
    msg = werr.info.get("message", str(werr))
    if werr.exc_type != "ReactionError":
        msg = f"{werr.exc_type}: {msg}"
    err = ReactionError(f"{msg} [in worker {werr.rank}]\n--- remote traceback ---\n{werr.remote_traceback}")
    err.reactor = werr.reactor
    err.reaction = werr.reaction
    err.tag = werr.tag
    err.remote_traceback = werr.remote_traceback
    return err
