"""The reactor backend: runs a scenario as a reactor program under the runtime's inline, threads or
processes executor.

The program (`backends._reactor_program.RoundProgram`: a server reactor, a bank of worker reactors,
multiport connections, the paper's LF program shape) is built here for each run; where its bank members run
under the processes executor is the bank split (`backends._bank_split`); this module holds the backend's
options (`ReactorConfig`) and what it records (the per-process or per-thread breakdown, torch's thread counts).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from backends._bank_split import local_members, measure_role_costs, split_by_cost
from backends._reactor_program import RoundProgram
from backends.base import Backend, BackendConfig, Clock, shared_slots
from reactor_backend.placement import even_part
from scenarios.base import Scenario, Server
from scenarios.threads import apply_threads, apply_threads_here, observed

NAME = "reactor"


class Executor(str, Enum):
    inline = "inline"
    threads = "threads"
    processes = "processes"


class BankSplit(str, Enum):
    """How the processes executor's worker bank is split over the processes (the ``placement`` option)."""

    cost = "cost"
    even = "even"


@dataclass
class ReactorConfig(BackendConfig):
    """The reactor runtime: a server reactor and a bank of worker reactors, multiport connections."""

    name: str = "reactor"
    executor: Executor = Executor.processes
    #: processes executor: record where each worker process's time goes per round (role work,
    #: transport, waiting, other, its CPU) in the rows' ``extra`` (``bd_w<rank>_<part>_us``); a few clock reads
    #: per level and tag. Threads executor: each thread's CPU, waiting and hand-offs the same way
    #: (`reactor_backend.executors.ThreadBreakdown`); a clock read per publish and two per wait
    breakdown: bool = True
    #: processes executor, the bank split policy (`backends._bank_split`): ``cost``: where the server's gather
    #: is split (``split_gather``: gym, atari), the contiguous split whose round is shortest by the costs
    #: measured at start-up on throwaway roles (a member's step, the server's gather per member) and
    #: ``handoff_us`` (`split_by_cost`): process 0 also runs the server, and a costly gather (a server that
    #: reads every byte it receives; the env workloads' workers encode their own results, so theirs is cheap)
    #: takes members off it; elsewhere, and with ``even``, contiguous even parts
    placement: BankSplit = BankSplit.cost
    #: processes executor, ``placement=cost``: what the two hand-offs of a round (scatter, results) cost
    #: together, in microseconds (the breakdown's ``bd_w<rank>_handoff_us`` measures them; the reference
    #: readings are in docs/processes.md, "Where a round's time goes")
    handoff_us: float = field(default=10.0, metadata={"range": {"ge": 0}})
    #: processes executor, scenarios with ``facts.incremental_gather``: the server gathers the results of the bank
    #: members in its own process (worker 0) while the other processes still step, then the rest
    split_gather: bool = True
    #: processes executor: the most worker processes to run; ``workers`` bank parts beyond it share them
    #: (the bank still has the scenario's members; only where they run changes). 0: the usable cores
    #: (``os.sched_getaffinity``), as LF's runtime defaults its worker threads to the cores: processes
    #: beyond the cores only add context switches to every round. Set it at or above ``workers`` (e.g.
    #: 1024) for one process per worker, oversubscribed (docs/processes.md, "More workers than cores")
    max_processes: int = field(default=0, metadata={"range": {"ge": 0}})
    #: processes and threads executors: how a process (a thread) waits for another
    #: (`reactor_backend.waiting.Waiting`, where each default's reason is; one field per option): ``pause``
    #: spins before yielding (only when every process owns a core), how long it yields before it sleeps with
    #: a core per process and with fewer cores than processes, the ``sched_yield`` return that counts as
    #: contended (ends the yield phase), the longest single futex sleep, and how often a sleeping process
    #: checks that its partners are alive (processes only), in microseconds
    wait_spins: int = field(default=50, metadata={"range": {"ge": 0}})
    wait_yield_us: float = field(default=20_000.0, metadata={"range": {"ge": 0}})
    wait_yield_shared_us: float = field(default=50.0, metadata={"range": {"ge": 0}})
    wait_yield_gap_us: float = field(default=30.0, metadata={"range": {"ge": 0}})
    wait_slice_us: float = field(default=10_000.0, metadata={"range": {"gt": 0}})
    wait_check_us: float = field(default=50_000.0, metadata={"range": {"gt": 0}})


def waiting(config: ReactorConfig) -> Any:
    """The runtime's `reactor_backend.waiting.Waiting` from the config's ``wait_*`` options.

    Args:
        config: the backend's config (its ``wait_*`` fields, in microseconds).
    """
    from reactor_backend.waiting import Waiting

    return Waiting(spins=int(config.wait_spins), yield_ns=round(config.wait_yield_us * 1e3),
                   yield_shared_ns=round(config.wait_yield_shared_us * 1e3),
                   yield_gap_ns=round(config.wait_yield_gap_us * 1e3),
                   slice_ns=max(1, round(config.wait_slice_us * 1e3)),
                   check_ns=max(1, round(config.wait_check_us * 1e3)))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API on this platform
        return max(1, os.cpu_count() or 1)


def process_count(executor: str, workers: int, max_processes: int) -> int:
    """The worker processes the processes executor runs for ``workers``: at most ``max_processes``
    (0: the usable cores); other executors run ``workers`` as given.

    Args:
        executor: the executor's name (``inline``, ``threads``, ``processes``).
        workers: the job's ``workers``.
        max_processes: the config's cap, 0 for the usable cores.
    """
    if executor != "processes":
        return workers
    return max(1, min(workers, max_processes or usable_cores()))


def variant(config: dict[str, Any]) -> str:
    """The results row's variant: the executor, and for processes a cap other than the cores
    (``processes-max1024``: one process per worker up to 1024), so both curves stay apart in reports.

    Args:
        config: the backend's config as a dict (``executor``, optional ``max_processes``).
    """
    executor = Executor(config["executor"]).value
    cap = int(config.get("max_processes", 0) or 0)
    return f"{executor}-max{cap}" if executor == "processes" and cap else executor


class ReactorBackend(Backend):
    """Runs a scenario as a `RoundProgram` under the configured executor (inline, threads or processes)."""

    name = "reactor"

    def __init__(self, config: ReactorConfig, workers: int):
        super().__init__(config, workers)
        self.executor = Executor(config.executor).value
        self.variant = variant({"executor": self.executor, "max_processes": config.max_processes})
        from reactor_backend.executors import ThreadBreakdown
        from reactor_backend.processes import Breakdown

        kind = {"processes": Breakdown, "threads": ThreadBreakdown}.get(self.executor) if config.breakdown else None
        self.breakdown: Breakdown | ThreadBreakdown | None = kind() if kind is not None else None
        #: the worker process (thread) of each bank member, where the breakdown counts members (see `run`)
        self._placed: list[int] = []
        self._top: RoundProgram | None = None  # the running program; its server counts the rounds
        self.seen: Any = None  # see `program`
        self._bd_prev: list[dict[str, int]] = []
        self._bd_rounds = 0
        #: the worker processes the processes executor runs (``workers`` capped by ``max_processes``)
        self.processes = process_count(self.executor, self.workers, int(config.max_processes))
        if self.executor == "processes":
            self.startup_breakdown["processes"] = float(self.processes)

    def start(self, scenario: Scenario, server: Server) -> None:
        # assembly happens in run(): the program needs the clock; worker roles are built at startup
        self.scenario = scenario
        self.server = server
        self.stats: Any = None
        #: the worker process of each bank member where the costs chose it (`split_by_cost`), else None
        self.bank_split: list[int] | None = None
        # only a split gather makes the costs matter: without one, the whole gather follows the last
        # results whatever the split, and the even split has the smallest largest share; throwaway roles
        # are built only where building and stepping one acts on nothing outside it
        if BankSplit(self.config.placement) is BankSplit.cost and self._splits_gather() and \
                not scenario.facts.side_effects:
            step_s, server_s = measure_role_costs(scenario)
            n = scenario.num_workers
            self.bank_split = split_by_cost(n, self.processes, step_s, server_s / n, split_gather=True,
                                            handoff=float(self.config.handoff_us) * 1e-6)
            self.startup_breakdown["placement_server_cost"] = server_s / step_s if step_s > 0 else 0.0
            self.startup_breakdown["placement_members_w0"] = float(self.bank_split.count(0))

    def program(self, rounds: int, clock: Clock) -> RoundProgram:
        bank_split, n_local = self.bank_split, 0
        if self._splits_gather():
            n = self.scenario.num_workers
            if bank_split is None:  # the executor's default, made explicit: contiguous even parts
                bank_split = [even_part(i, n, self.processes) for i in range(n)]
            n_local = local_members(bank_split)
        #: torch's thread count read in each role's process once built (bank members, then the relay)
        self.seen = shared_slots(self.scenario.num_workers + 1)
        # the processes executor's roles apply the threads in their processes once built; the in-process
        # executors' are applied by `run` before any reaction (`scenarios.threads`)
        threads = self.threads_per_worker if self.executor == "processes" else None
        return RoundProgram(self.scenario, self.server, clock, rounds, bank_split=bank_split, n_local=n_local,
                            threads=threads, seen=self.seen)

    def _splits_gather(self) -> bool:
        """Split the server's gather (process-0 members first) where it can overlap other processes' steps."""
        return (self.executor == "processes" and self.processes > 1
                and bool(self.config.split_gather)
                and self.scenario.facts.incremental_gather
                and self.scenario.topology == "star" and not self.scenario.has_relay())

    def _lanes_of_workers(self, program: Any, top: Any) -> list[int]:
        """Per worker, the lane it runs in, for the critical-path split (`harness.phases`): the threads
        executor places reactors on its threads as the processes executor places them on processes, and on a
        free-threaded interpreter those threads run in parallel; under a GIL (and inline) they take turns, so
        every worker is in one lane."""
        gil = getattr(sys, "_is_gil_enabled", lambda: True)()
        if self.executor != "threads" or gil:
            return [0] * self.scenario.num_workers
        from reactor_backend import assign_workers

        where = assign_workers(program, self.processes)
        return [where[w] for w in top.workers]

    def run(self, rounds: int, clock: Clock) -> None:
        from reactor_backend import assemble, assign_workers, run

        options: dict[str, Any] = {}
        if self.executor != "inline":
            options["waiting"] = waiting(self.config)
        top = self._top = self.program(rounds, clock)
        program = assemble(top)
        if self.executor != "inline":  # the placement the executor will use: a process (thread) per bank member
            where = assign_workers(program, self.processes)
            self._placed = [where[w] for w in top.workers]
        if self.breakdown is not None:
            options["breakdown"] = self.breakdown
        if self.executor == "processes":  # zero-copy views where no role keeps received arrays
            options["copy_arrays"] = bool(self.scenario.facts.inputs_retained)
            self.process_of_worker = self._placed
        else:  # inline and threads: every role in this process, threads set once before any reaction runs
            self.process_of_worker = self._lanes_of_workers(program, top)
            apply_threads(self.threads_per_worker)
            if self.executor == "threads":  # torch's count is per thread: each of its threads sets its own
                options["initializer"] = apply_threads_here
        try:
            self.stats = run(program, executor=self.executor, workers=self.processes, **options)
        finally:
            self.server.buffer_source = None  # the program's ports lend no more

    def timer(self, running: bool) -> None:
        """The harness's clock runs inside the server's round-end reaction, in process 0: while its timer is
        stopped (a paired job's wait for the next block, a repetition's report) process 0 is not doing the
        program's work, so that stretch is taken out of process 0's breakdown (`Breakdown.pause`, `resume`), and a
        reading meanwhile (the block's metrics) shows none of it."""
        if self.breakdown is None:
            return
        if running:
            self.breakdown.resume()
        else:
            self.breakdown.pause()

    def metrics(self) -> dict[str, float]:
        """Per round since the last call, per worker process: microseconds of role work, transport,
        waiting, hand-off and other executor time (``bd_w<rank>_<part>_us``), and the CPU time its thread
        used outside its waits (``bd_w<rank>_cpu_us``: not inflated when processes outnumber cores), the part
        of its transport that overlapped a wait for a later arrival (``bd_w<rank>_overlap_us``), and
        the bank members each process steps (``bd_w<rank>_members``). Threads executor: per thread, its CPU
        outside its waits, its waiting and its hand-offs (the same names; no transport between threads)."""
        if self.breakdown is None or self._top is None:
            return {}
        snap = self.breakdown.counters()  # raw: the parts are derived from their differences (never negative)
        done = self._top.server.done  # rounds completed (the server ticks the clock once per round)
        rounds = done - self._bd_rounds
        prev = self._bd_prev
        self._bd_prev, self._bd_rounds = snap, done
        if not snap or rounds <= 0:
            return {}
        out: dict[str, float] = {"bd_rounds": float(rounds)}
        for rank, now in enumerate(snap):
            out[f"bd_w{rank}_members"] = float(self._placed.count(rank))  # bank members this process steps
            before = prev[rank] if rank < len(prev) else {}
            delta = self.breakdown.parts({k: v - before.get(k, 0) for k, v in now.items()})
            for part in self.breakdown.COLUMNS:
                out[f"bd_w{rank}_{part}_us"] = delta[part] / rounds / 1e3
        return out

    def torch_threads_observed(self) -> int | list[int] | None:
        if self.seen is None:
            return None
        return observed(int(c) if c > 0 else None for c in self.seen.tolist())

    def stop(self) -> None:
        """`run` itself joins its worker processes and unlinks its segments, also on errors."""


SCHEMA = ReactorConfig
BACKEND = ReactorBackend
