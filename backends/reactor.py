"""Scenarios as reactor programs: a server reactor, a bank of worker reactors, multiport connections.

This is the paper's LF program shape, written with this runtime::

    Server.bcast ──(broadcast)──> workers[i].bcast     (a `Broadcast` message: one value for every worker)
    Server.msgs[i] ─────────────> workers[i].inp       (per-worker messages)
    workers[i].out ─────────────> Server.results[i]    (gathered in bank order)
    Server.next ── logical action, 0 delay: the next round starts one microstep later

A scenario with a relay role (``scenario.has_relay()``, DQN's replay buffer) adds one reactor, placed on
worker process 1 (its own process, as the paper's LF program has its own replay-buffer reactor)::

    Server.to_relay ──> relay.inp;  relay.out ──> Server.from_relay   (the round ends there)

For ``topology="chain"`` scenarios (the runtime-overhead benchmark) the workers form a pipeline instead:
``Server.msgs[0] -> workers[0] -> workers[1] -> ... -> workers[n-1] -> Server.results[0]``.

The server reactor is pinned to worker 0, which under the ``processes`` executor is the calling process, so
the harness's clock and server role stay in the measuring process; the bank is split into contiguous parts
over the worker processes. Each worker role is built by a ``startup`` reaction in the process that owns it.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from backends.base import Backend, BackendConfig, Clock, shared_slots, split_messages
from backends._bank_split import measure_role_costs, split_by_cost
from reactor_backend.placement import even_part
from reactor_backend.model import Input, LogicalAction, Output, Reactor, reaction, shutdown, startup
from scenarios.base import Broadcast, Scenario, Server
from scenarios.threads import apply_threads, apply_threads_here, observed, torch_threads

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
    #: transport, waiting, other) in the rows' ``extra`` (``bd_w<rank>_<part>_us``); a few clock reads
    #: per level and tag
    breakdown: bool = True
    #: processes executor, the bank split policy (`backends._bank_split`): ``cost``: where the server's gather
    #: is split (``split_gather``: gym, atari), the contiguous split whose round is shortest by the costs
    #: measured at start-up on throwaway roles (a member's step, the server's gather per member) and
    #: ``handoff_us`` (`split_by_cost`): process 0 also runs the server, and a costly gather (Atari frames)
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


class RoleReactor(Reactor):
    """Hosts one role of the scenario (a worker, or the relay), built at startup by ``make_role(bank_index)``
    in the process that runs it; steps it when a message arrives (its own on ``inp`` or the broadcast on
    ``bcast``, which the relay leaves unconnected) and sends the result on ``out``."""

    inp = Input()
    bcast = Input()
    out = Output()

    def __init__(self, make_role: Callable[[int | None], Any], threads: int = 1, seen: Any = None,
                 slot: int | None = None):
        """Args:
            make_role: builds the role from the bank index (None for the relay), at startup, in the process
                that runs it.
            threads: ``threads_per_worker``, applied in this role's process once the role is built (None:
                the backend applied it before the program ran, as for the in-process executors, whose roles
                are built on several threads at once: only read here).
            seen: shared memory (`backends.base.shared_slots`) whose ``seen[slot]`` receives torch's thread
                count read there then (-1: torch not loaded), or None.
            slot: the index into ``seen`` (None: the bank index).
        """
        super().__init__()
        self.make_role = make_role
        self.threads = threads
        self.seen = seen
        self.slot = slot
        self.role: Any = None

    @reaction(startup)
    def build(self) -> None:
        self.role = self.make_role(self.bank_index)
        self.role.buffer_source = self.out.lend  # a result built in the port's slot crosses without a copy
        # every backend: once the process's roles are built (in-process executors: before the run)
        count = torch_threads() if self.threads is None else apply_threads(self.threads)
        if self.seen is not None:
            self.seen[self.bank_index if self.slot is None else self.slot] = -1 if count is None else count

    @reaction(inp, bcast, effects=[out])
    def step(self) -> None:
        msg = self.inp.value if self.inp.is_present else self.bcast.value
        self.out.set(self.role.step(msg))

    @reaction(shutdown)
    def close(self) -> None:
        if self.role is not None:
            self.role.close()


class ServerReactor(Reactor):
    """Drives the rounds: scatter, wait for every result, gather, tick the clock, schedule the next round."""

    msgs = Output(width="n_out")
    bcast = Output()
    results = Input(width="n_in")
    next = LogicalAction()

    def __init__(self, server: Server, clock: Clock, rounds: int, n_workers: int, chain: bool = False):
        """Args:
            server: the scenario's server role (built by the harness, in this process).
            clock: the job's clock: ``begin`` before the first round, ``tick`` after each.
            rounds: the rounds to run, then stop.
            n_workers: the bank's width.
            chain: the scenario's topology is ``chain`` (one message through the bank and back).
        """
        super().__init__()
        self.server = server
        self.clock = clock
        self.rounds = rounds
        self.n_workers = n_workers
        self.n_out = 1 if chain else n_workers
        self.n_in = 1 if chain else n_workers
        self.done = 0

    @reaction(startup, effects=[next])
    def begin(self) -> None:
        # the port that carries a Broadcast lends its buffer to the server's result_buffer
        self.server.buffer_source = (self.msgs[0] if self.n_out == 1 else self.bcast).lend
        # round 0 starts one microstep after startup, once every worker role has been built
        self.next.schedule(0)

    @reaction(next, effects=[msgs, bcast])
    def scatter(self) -> None:
        if self.done == 0:
            self.clock.begin()
        msgs = self.server.scatter()
        if isinstance(msgs, Broadcast):
            if self.n_out == 1:
                self.msgs[0].set(msgs.value)
            else:
                self.bcast.set(msgs.value)
        else:
            for port, msg in zip(self.msgs, split_messages(msgs, self.n_out)):
                port.set(msg)

    @reaction(results, effects=[next])
    def gather(self) -> None:
        self.server.gather([port.value for port in self.results])
        self.end_round()

    def end_round(self) -> None:
        """The round is complete: tick the clock, then schedule the next round or stop after the last."""
        self.done += 1  # first: the clock's callbacks (a repetition's metrics) count this round
        self.clock.tick()
        if self.done < self.rounds:
            self.next.schedule(0)
        else:
            self.request_stop()


class SplitGatherServerReactor(ServerReactor):
    """A server that gathers in two parts: first the results of the bank members in its own process
    (``local``: they are ready as soon as those members have stepped, no meeting needed), then the
    results from the other processes (``results``), so that its own share of the gather overlaps the
    other processes' steps. Needs a scenario with ``facts.incremental_gather`` (same checksum as one gather)
    and a bank split whose process-0 members are the first ``n_local`` of the bank."""

    local = Input(width="n_local")

    def __init__(self, server: Server, clock: Clock, rounds: int, n_workers: int, n_local: int):
        """Args:
            server, clock, rounds, n_workers: as for `ServerReactor`.
            n_local: the bank members in the server's process, the first of the bank.
        """
        super().__init__(server, clock, rounds, n_workers)
        self.n_local = n_local
        self.n_in = n_workers - n_local

    @reaction(local)
    def gather_local(self) -> None:
        self.server.gather([port.value for port in self.local])

    @reaction(ServerReactor.results, effects=[ServerReactor.next])
    def gather(self) -> None:  # declared after gather_local: runs after it in every round
        self.server.gather([port.value for port in self.results])
        self.end_round()


class RelayServerReactor(ServerReactor):
    """The server of a scenario with a relay: after gather it sends to the relay; its reply ends the round."""

    to_relay = Output()
    from_relay = Input()

    @reaction(ServerReactor.results, effects=[to_relay])
    def gather(self) -> None:
        self.server.gather([port.value for port in self.results])
        self.to_relay.set(self.server.relay_message())

    @reaction(from_relay, effects=[ServerReactor.next])
    def relayed(self) -> None:
        self.server.relay_result(self.from_relay.value)
        self.end_round()


class RoundProgram(Reactor):
    """The top-level reactor of a scenario: server, worker bank and their connections."""

    def __init__(self, scenario: Scenario, server: Server, clock: Clock, rounds: int,
                 bank_split: list[int] | None = None, n_local: int = 0, threads: int | None = 1,
                 seen: Any = None):
        """Args:
            scenario: the scenario (its roles, topology, relay).
            server, clock, rounds: as for `ServerReactor`.
            bank_split: the worker process of each bank member (None: the runtime's placement, contiguous
                even parts).
            n_local: when > 0, the first ``n_local`` members run in the server's process and the server
                gathers their results first (`SplitGatherServerReactor`).
            threads, seen: as for `RoleReactor` (the relay's slot follows the bank's).
        """
        super().__init__()
        n = scenario.num_workers
        chain = scenario.topology == "chain"
        relay = scenario.has_relay()
        split = 0 < n_local < n and not chain and not relay
        if split:
            self.server = SplitGatherServerReactor(server, clock, rounds, n, n_local).place(0)
        else:
            server_cls = RelayServerReactor if relay else ServerReactor
            self.server = server_cls(server, clock, rounds, n, chain=chain).place(0)
        if relay:
            self.relay = RoleReactor(lambda _index: scenario.make_relay(), threads, seen, slot=n).place(1)
            self.connect(self.server.to_relay, self.relay.inp)
            self.connect(self.relay.out, self.server.from_relay)
        self.workers = self.bank(RoleReactor, n, make_role=scenario.make_worker, threads=threads, seen=seen)
        if bank_split is not None:
            self.workers.place(bank_split)
        if chain:
            self.connect(self.server.msgs, self.workers[0].inp)
            for a, b in zip(self.workers, list(self.workers)[1:]):
                self.connect(a.out, b.inp)
            self.connect(self.workers[n - 1].out, self.server.results)
        else:
            self.connect(self.server.msgs, self.workers.inp)
            self.connect(self.server.bcast, self.workers.bcast, broadcast=True)
            if split:
                for i, member in enumerate(self.workers):
                    if i < n_local:
                        self.connect(member.out, self.server.local[i])
                    else:
                        self.connect(member.out, self.server.results[i - n_local])
            else:
                self.connect(self.workers.out, self.server.results)


class ReactorBackend(Backend):
    """Runs a scenario as a `RoundProgram` under the configured executor (inline, threads or processes)."""

    name = "reactor"

    def __init__(self, config: ReactorConfig, workers: int):
        super().__init__(config, workers)
        self.executor = Executor(config.executor).value
        self.variant = variant({"executor": self.executor, "max_processes": config.max_processes})
        from reactor_backend.processes import Breakdown

        want = self.executor == "processes" and bool(config.breakdown)
        self.breakdown: Breakdown | None = Breakdown() if want else None
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
            n_local = bank_split.count(0)
            if bank_split[:n_local] != [0] * n_local:  # process 0's members must lead the bank
                n_local = 0
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
        if self.executor == "processes":  # zero-copy views where no role keeps received arrays
            options["copy_arrays"] = bool(self.scenario.facts.inputs_retained)
            if self.breakdown is not None:
                options["breakdown"] = self.breakdown
            where = assign_workers(program, self.processes)  # the placement the executor will use
            self.process_of_worker = [where[w] for w in top.workers]
        else:  # inline and threads: every role in this process, threads set once before any reaction runs
            self.process_of_worker = self._lanes_of_workers(program, top)
            apply_threads(self.threads_per_worker)
            if self.executor == "threads":  # torch's count is per thread: each of its threads sets its own
                options["initializer"] = apply_threads_here
        try:
            self.stats = run(program, executor=self.executor, workers=self.processes, **options)
        finally:
            self.server.buffer_source = None  # the program's ports lend no more

    def metrics(self) -> dict[str, float]:
        """Per round since the last call, per worker process: microseconds of role work, transport,
        waiting, hand-off and other executor time (``bd_w<rank>_<part>_us``; processes executor only)."""
        if self.breakdown is None or self._top is None:
            return {}
        snap = self.breakdown.snapshot()
        done = self._top.server.done  # rounds completed (the server ticks the clock once per round)
        rounds = done - self._bd_rounds
        prev = self._bd_prev
        self._bd_prev, self._bd_rounds = snap, done
        if not snap or rounds <= 0:
            return {}
        out: dict[str, float] = {"bd_rounds": float(rounds)}
        for rank, now in enumerate(snap):
            before = prev[rank] if rank < len(prev) else {}
            for part in self.breakdown.PARTS:
                out[f"bd_w{rank}_{part}_us"] = (now[part] - before.get(part, 0)) / rounds / 1e3
        return out

    def torch_threads_observed(self) -> int | list[int] | None:
        if self.seen is None:
            return None
        return observed(int(c) if c > 0 else None for c in self.seen.tolist())

    def stop(self) -> None:
        """`run` itself joins its worker processes and unlinks its segments, also on errors."""


SCHEMA = ReactorConfig
BACKEND = ReactorBackend
