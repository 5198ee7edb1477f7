"""A scenario as a reactor program: a server reactor, a bank of worker reactors, multiport connections.

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

`RoundProgram` is the program; the reactor backend (`backends.reactor`) builds it, chooses its bank split
and runs it under the configured executor.
"""
from __future__ import annotations

from typing import Any, Callable

from backends.base import Clock, split_messages
from reactor_backend.model import Input, LogicalAction, Output, Reactor, reaction, shutdown, startup
from scenarios.base import Broadcast, Scenario, Server
from scenarios.threads import apply_threads, torch_threads


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
        self.server.gather(self.results.values)
        self.end_round()

    def end_round(self) -> None:
        """The round is complete: tick the clock, then schedule the next round or stop after the last. A clock that
        says stop (a paired job's) ends the rounds as the last round does: every role's shutdown reaction (its
        ``close``) runs."""
        self.done += 1  # first: the clock's callbacks (a repetition's metrics) count this round
        if self.clock.tick() is not False and self.done < self.rounds:
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
        self.server.gather(self.local.values)

    @reaction(ServerReactor.results, effects=[ServerReactor.next])
    def gather(self) -> None:  # declared after gather_local: runs after it in every round
        self.server.gather(self.results.values)
        self.end_round()


class RelayServerReactor(ServerReactor):
    """The server of a scenario with a relay: after gather it sends to the relay; its reply ends the round."""

    to_relay = Output()
    from_relay = Input()

    @reaction(ServerReactor.results, effects=[to_relay])
    def gather(self) -> None:
        self.server.gather(self.results.values)
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
