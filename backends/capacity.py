"""The machine's ceiling for a scenario's unit of work: k = ``workers`` copies of the serial loop in k
uncoordinated processes (no message between them), what `scripts/parallel_capacity.py` measures for one env.

Why: the ideal "serial x workers" assumes k cores that each run at serial speed. On a VM whose vCPUs share
physical cores, or next to noisy neighbours, k processes that never talk already fall short of k x. This
backend measures that bound with the scenario's own roles, in the same sweep as the backends it bounds, so
efficiency = throughput / (serial x measured capacity) = throughput / this backend's throughput.

The measuring process runs copy 0 with the real server (its checksum equals serial's: the same work);
k - 1 forked processes each build their own server and workers and run the same serial rounds, released
together with copy 0 and kept running until copy 0 has finished, so every timed round of copy 0 runs under
k-way load. Each copy counts the rounds it completes in a shared counter; copy 0 reads the counters whenever
the round clock's timer stops or starts (`Backend.timer`), so a repetition's units are the sum of the units
every copy completed while copy 0's timer ran (``copy_units`` in the row's ``extra``, copy 0 first): on a VM
whose vCPUs run at different speeds the copies complete different amounts of work, and the ceiling is what
they did, not k x copy 0's.

``lockstep=true`` (preset ``capacity_lockstep``, variant ``lockstep``): the copies also meet once per round at
the reactor runtime's shared-memory barrier, so every round lasts as long as the slowest copy's, and then go on
only as far as copy 0 has released them (its progress word on the same barrier): copy 0 releases a round before
it meets the others where its clock's coming tick cannot stop the timer (`Clock.timer_stops_at_next_tick`), and
only after that tick where it may, so that no copy starts a round before copy 0's timer runs for it. (A round run
between two blocks of a paired job would run outside every window, and copy 0's first round of the next block
alone: with one round per block, dqn's, the ceiling measured one copy running alone, k times.) That is the
ceiling of any orchestration whose rounds are synchronized (the reactor, Ray's gather, vector envs): on a VM
whose vCPUs run at different and changing speeds (the host's other tenants), k synchronized processes get k x
the slowest vCPU, not the sum, and no runtime can do better with a static split of the work
(docs/processes.md, "The remaining gap to the ceiling"). The barrier makes every copy complete every round
of copy 0's window, so there each copy's ``copy_units`` are copy 0's.
"""
from __future__ import annotations

import mmap
import multiprocessing as mp
from dataclasses import dataclass
from typing import Any, Optional

from backends.serial import SerialBackend, SerialConfig
from backends.base import BackendConfig, Clock, shared_slots
from scenarios.base import Scenario, Server

NAME = "capacity"
#: ``extra`` key of a synchronized ceiling's rows whose copies were held to copy 0's timed windows
HELD = "copies_held"


@dataclass
class CapacityConfig(BackendConfig):
    """The machine's ceiling: ``workers`` uncoordinated copies of the serial loop, one process each."""

    name: str = "capacity"
    #: the copies meet once per round (a shared-memory barrier): the ceiling of synchronized rounds
    lockstep: bool = False


def variant(config: dict[str, Any]) -> str:
    """The results row's variant: ``lockstep`` for the synchronized ceiling, else ``-``.

    Args:
        config: the backend's config as a dict.
    """
    return "lockstep" if bool(config.get("lockstep", False)) else "-"


#: seconds a copy may take to build its roles before the job fails
READY_TIMEOUT_S = 300.0


class _LoadClock:
    """A clock for a load copy: counts its rounds in its slot of ``counts`` and says stop (its ``tick`` returns
    False) once ``stop`` is set; in lockstep it first meets the other copies at ``barrier`` (copy 0 ends the run
    through the barrier's stop word). Without
    lockstep, a set first byte of ``flag`` parks the copy (it says so on ``parked``, then sleeps until
    ``hold`` is set): copy 0 pauses the others between the blocks of a paired job (`CapacityBackend.pause`)."""

    def __init__(self, stop: Any, barrier: Any = None, counts: Any = None, rank: int = 1,
                 pausing: tuple[Any, Any, Any] = (None, None, None)):
        self.stop = stop
        self.barrier = barrier
        self.counts = counts
        self.rank = rank
        self.flag, self.hold, self.parked = pausing
        self.rounds = 0

    def begin(self) -> None:
        pass

    def tick(self) -> bool:
        if self.counts is not None:
            self.counts[self.rank] += 1  # one writer per slot; copy 0 only reads it
        if self.barrier is not None:
            from reactor_backend._sync import Aborted

            self.rounds += 1
            try:  # every copy finished this round; the next once copy 0 has released it (`_LockstepClock`)
                self.barrier.arrive()
                self.barrier.wait_for(0, self.rounds)
            except Aborted:  # copy 0 has finished
                return False
        if self.flag is not None and self.flag[0]:
            self.parked.release()
            self.hold.wait()  # returns once resumed (or stopped: checked next)
        return not self.stop.is_set()


class _CountingClock:
    """Copy 0's clock: counts its rounds in slot 0 of the shared counters, then ticks the round clock."""

    def __init__(self, clock: Clock, counts: Any):
        self.clock = clock
        self.counts = counts

    def begin(self) -> None:
        self.clock.begin()

    def timer_stops_at_next_tick(self) -> bool:
        stops = getattr(self.clock, "timer_stops_at_next_tick", None)
        return True if stops is None else bool(stops())

    def tick(self) -> bool | None:
        self.counts[0] += 1  # before the tick: a repetition's last round is counted when its timer stops
        return self.clock.tick()


class _LockstepClock:
    """Copy 0's clock in lockstep: a round ends when every copy has finished it (the barrier); the other copies go
    on past it once copy 0 has released it (its progress word): before the meeting where the coming tick cannot
    stop the timer (no hop added to the round), after the tick where it may (between two blocks of a paired job no
    copy may run a round)."""

    def __init__(self, clock: _CountingClock, barrier: Any):
        self.clock = clock
        self.barrier = barrier
        self.rounds = 0

    def begin(self) -> None:
        self.clock.begin()

    def tick(self) -> bool | None:
        self.rounds += 1
        if self.clock.timer_stops_at_next_tick():
            self.barrier.arrive()
            go_on = self.clock.tick()
            if go_on is not False:  # else no copy runs another round: the run's end stops the barrier
                self.barrier.publish(self.rounds)
            return go_on
        self.barrier.publish(self.rounds)
        self.barrier.arrive()
        return self.clock.tick()


def _barrier(buf: Optional[mmap.mmap], copies: int, rank: int, check: Any = None) -> Any:
    if buf is None:
        return None
    from reactor_backend._sync import Barrier

    return Barrier(buf, copies, rank, check)


def _load_copy(scenario: Scenario, ready: Any, start: Any, stop: Any, counts: Any, threads: int,
               buf: Optional[mmap.mmap] = None, copies: int = 1, rank: int = 1,
               pausing: tuple[Any, Any, Any] = (None, None, None)) -> None:
    """One copy: its own server and workers, serial rounds from ``start`` until ``stop`` (in lockstep:
    meeting the others at the barrier in ``buf`` after every round, until copy 0 stops the barrier)."""
    server = scenario.make_server()
    copy = SerialBackend(SerialConfig(breakdown=False), 1)
    copy.threads_per_worker = threads  # applied once its roles are built, as in copy 0
    try:
        copy.start(scenario, server)
        ready.put(True)
        start.wait()
        copy.run(2**62, _LoadClock(stop, _barrier(buf, copies, rank), counts, rank, pausing))
    finally:
        copy.stop()
        server.close()


class CapacityBackend(SerialBackend):
    """k = workers copies of the serial loop in k processes; throughput counts what all k completed."""

    name = "capacity"
    variant = "-"

    def __init__(self, config: CapacityConfig, workers: int):
        super().__init__(SerialConfig(breakdown=False), workers)  # copy 0 runs the plain serial loop
        self.config = config
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1 for backend=capacity, got {self.workers}")
        self.row_extra["copies"] = self.workers
        self.lockstep = bool(config.lockstep)
        self.variant = variant({"lockstep": self.lockstep})
        if self.lockstep:  # no copy runs a round outside copy 0's timed window (`_LockstepClock`); rows of earlier
            self.row_extra[HELD] = True  # versions lack it (`harness.report.stats.unheld_rounds`)
        #: the barrier's control block (lockstep with more than one copy): anonymous shared memory, inherited
        #: by the forked copies, gone with the processes (nothing in /dev/shm to clean up)
        self.buf: Optional[mmap.mmap] = None
        self.procs: list[Any] = []
        #: rounds each copy completed (slot = rank), shared with the forked copies; see `timer`
        self.counts: Any = None
        self._base: list[int] = [0] * self.workers
        self._window: list[int] = [0] * self.workers
        self._running = False
        self._units_per_round = 0
        #: uncoordinated copies: the pause flag (one shared byte), the event that resumes them, and the
        #: semaphore each parked copy releases (`pause`, `resume`)
        self.flag: Optional[mmap.mmap] = None
        self.hold: Any = None
        self.parked: Any = None

    def start(self, scenario: Scenario, server: Server) -> None:
        super().start(scenario, server)
        self._units_per_round = scenario.units_per_round()
        # fork, as scripts/parallel_capacity.py: spawn would start multiprocessing's resource tracker, a
        # process that outlives the backend; the copies build their own roles after the fork (no torch
        # thread pool has run yet: roles are built at one thread, `scenarios.threads`)
        ctx = mp.get_context("fork")
        self.ready, self.go, self.halt = ctx.Queue(), ctx.Event(), ctx.Event()
        self.counts = shared_slots(self.workers)  # aligned int64 slots: one writer each
        if self.lockstep and self.workers > 1:
            from reactor_backend._sync import control_size

            self.buf = mmap.mmap(-1, control_size(self.workers))
        elif self.workers > 1:
            self.flag, self.hold, self.parked = mmap.mmap(-1, 1), ctx.Event(), ctx.Semaphore(0)
            self.hold.set()
        self.procs = [ctx.Process(target=_load_copy, args=(scenario, self.ready, self.go, self.halt, self.counts,
                                                            self.threads_per_worker,
                                                            self.buf, self.workers, rank,
                                                            (self.flag, self.hold, self.parked)), daemon=True)
                      for rank in range(1, self.workers)]
        for p in self.procs:
            p.start()
        for _ in self.procs:
            try:
                self.ready.get(timeout=READY_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - queue.Empty: a copy died while building its roles
                dead = [p.exitcode for p in self.procs if p.exitcode is not None]
                raise RuntimeError(f"a capacity copy did not start within {READY_TIMEOUT_S:g} s "
                                   f"(exit codes of dead copies: {dead})") from exc

    def run(self, rounds: int, clock: Clock) -> None:
        barrier = _barrier(self.buf, self.workers, 0, self._check_copies)
        counting = _CountingClock(clock, self.counts)
        self.go.set()
        try:
            super().run(rounds, _LockstepClock(counting, barrier) if barrier is not None else counting)
        finally:
            self.halt.set()
            if barrier is not None:
                barrier.request_stop(1)  # the copies waiting at the barrier leave their loops

    def timer(self, running: bool) -> None:
        """Copy 0's timer stops or starts: add each copy's rounds since it last started to the window."""
        now = self.counts.tolist()
        if self._running and not running:
            self._window = [w + n - b for w, n, b in zip(self._window, now, self._base)]
        self._base, self._running = now, running

    def metrics(self) -> dict[str, Any]:
        """``copy_units``: the units each copy (copy 0 first) completed while the timer ran since the
        previous call; the harness counts their sum as the repetition's units."""
        rounds = self._window
        if self.lockstep:  # the barrier: every copy completed every round of copy 0's window
            rounds = [rounds[0]] * self.workers
        self._window = [0] * self.workers
        return {"copy_units": [r * self._units_per_round for r in rounds]}

    def pause(self) -> None:
        """Park the uncoordinated copies after their current round and wait until all are parked (a paired
        job, `harness.compare_child`, calls this after copy 0's block, so that no copy runs during another
        backend's block). The synchronized copies need nothing: each has finished copy 0's last round and waits
        for copy 0 to release the next (`_LockstepClock`), where it sleeps."""
        if self.buf is not None:
            return
        if self.flag is None:
            return
        self.hold.clear()
        self.flag[0] = 1
        for _ in self.procs:
            while not self.parked.acquire(timeout=1.0):
                self._check_copies()

    def resume(self) -> None:
        """Release the copies parked by `pause`."""
        if self.flag is None:
            return
        self.flag[0] = 0
        self.hold.set()

    def _check_copies(self) -> None:
        """Called while copy 0 waits at the barrier: a copy that died would never arrive."""
        dead = [p.exitcode for p in self.procs if p.exitcode is not None]
        if dead:
            raise RuntimeError(f"a capacity copy ended during the run (exit codes: {dead})")

    def stop(self) -> None:
        if self.procs:
            self.halt.set()
            self.go.set()
            if self.hold is not None:
                self.flag[0] = 0
                self.hold.set()
            for p in self.procs:
                p.join(timeout=30)
            for p in self.procs:
                if p.is_alive():
                    p.kill()
                    p.join(timeout=5)
            self.procs = []
        super().stop()


SCHEMA = CapacityConfig
BACKEND = CapacityBackend
