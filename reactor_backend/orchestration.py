"""Scenarios as reactor programs: a server reactor, a bank of worker reactors, multiport connections.

This is the paper's LF program shape, written with this runtime::

    Server.bcast ──(broadcast)──> workers[i].bcast     (a `Broadcast` message: one value for every worker)
    Server.msgs[i] ─────────────> workers[i].inp       (per-worker messages)
    workers[i].out ─────────────> Server.results[i]    (gathered in bank order)
    Server.next ── logical action, 0 delay: the next round starts one microstep later

For ``topology="chain"`` scenarios (the runtime-overhead benchmark) the workers form a pipeline instead:
``Server.msgs[0] -> workers[0] -> workers[1] -> ... -> workers[n-1] -> Server.results[0]``.

The server reactor is pinned to worker 0, which under the ``processes`` executor is the calling process, so
the harness's clock and server role stay in the measuring process; the bank is split into contiguous parts
over the worker processes. Each worker role is built by a ``startup`` reaction in the process that owns it.
"""
from __future__ import annotations

from typing import Any

from reactor_backend.model import Input, LogicalAction, Output, Reactor, reaction, shutdown, startup
from scenarios.base import Backend, Broadcast, Clock, Scenario, Server, split_messages


class WorkerReactor(Reactor):
    """Hosts one worker role; steps it when a message arrives and sends the result back."""

    inp = Input()
    bcast = Input()
    out = Output()

    def __init__(self, scenario: Scenario):
        super().__init__()
        self.scenario = scenario
        self.role: Any = None

    @reaction(startup)
    def build(self) -> None:
        self.role = self.scenario.make_worker(self.bank_index)

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
        self.clock.tick()
        self.done += 1
        if self.done < self.rounds:
            self.next.schedule(0)
        else:
            self.request_stop()


class RoundProgram(Reactor):
    """The top-level reactor of a scenario: server, worker bank and their connections."""

    def __init__(self, scenario: Scenario, server: Server, clock: Clock, rounds: int):
        super().__init__()
        n = scenario.num_workers
        chain = getattr(scenario, "topology", "star") == "chain"
        self.server = ServerReactor(server, clock, rounds, n, chain=chain).place(0)
        self.workers = self.bank(WorkerReactor, n, scenario=scenario)
        if chain:
            self.connect(self.server.msgs, self.workers[0].inp)
            for a, b in zip(self.workers, list(self.workers)[1:]):
                self.connect(a.out, b.inp)
            self.connect(self.workers[n - 1].out, self.server.results)
        else:
            self.connect(self.server.msgs, self.workers.inp)
            self.connect(self.server.bcast, self.workers.bcast, broadcast=True)
            self.connect(self.workers.out, self.server.results)


class ReactorBackend(Backend):
    """Runs a scenario as a `RoundProgram` under the configured executor (inline, threads or processes)."""

    name = "reactor"

    def __init__(self, config: Any, workers: int):
        super().__init__(config, workers)
        self.executor = str(getattr(config.executor, "value", config.executor))
        self.variant = self.executor

    def start(self, scenario: Scenario, server: Server) -> None:
        # assembly happens in run(): the program needs the clock; worker roles are built at startup
        self.scenario = scenario
        self.server = server
        self.stats: Any = None

    def program(self, rounds: int, clock: Clock) -> RoundProgram:
        return RoundProgram(self.scenario, self.server, clock, rounds)

    def run(self, rounds: int, clock: Clock) -> None:
        from reactor_backend import assemble, assign_workers, run

        options = {}
        top = self.program(rounds, clock)
        program = assemble(top)
        if self.executor == "processes":  # zero-copy views where no role keeps received arrays
            options["copy_arrays"] = bool(getattr(self.scenario, "inputs_retained", True))
            where = assign_workers(program, self.workers)  # the placement the executor will use
            self.server.placement([where[w] for w in top.workers])
        else:  # inline and threads: every role in this process
            self.server.placement([0] * self.scenario.num_workers)
        self.stats = run(program, executor=self.executor, workers=self.workers, **options)

    def stop(self) -> None:
        """`run` itself joins its worker processes and unlinks its segments, also on errors."""
