"""Process 0's CPU per round with and without its remote gather (issue 46): the floor a faster gather can reach.

Runs gym's reactor program (16 CartPole members, one per process, 16 processes) as the reactor backend builds it
(`RoundProgram`, split gather, process 0 keeps member 0), and the same program with the other 15 members' outputs
left unconnected (``none``: the server gathers member 0 only, so process 0 reads no slot and the round never waits
for the other processes' results). Both read the breakdown's per-process CPU (``cpu``: thread CPU time outside the
waits) over the last 80% of the rounds. Alternates the two, ``PAIRS`` times, and prints each run's line and the
median ratio with its 95% interval. Usage (from the repository root, nothing else running):

    .venv/bin/python results/reference/vm-2core-2026-12-06-p0-gather/floor.py [ROUNDS] [PAIRS]
"""
from __future__ import annotations

import sys
import time

import numpy as np

from backends._reactor_program import RoleReactor, RoundProgram, ServerReactor
from harness.report.intervals import median_interval
from reactor_backend import assemble, run
from reactor_backend.model import Input, LogicalAction, Output, Reactor, reaction, startup
from reactor_backend.processes import Breakdown
from scenarios.configs import GymConfig
from scenarios.gym import GymScenario

N = 16


class LocalOnlyServer(Reactor):
    """`ServerReactor` gathering member 0 only: the round ends once process 0's own member is gathered."""

    bcast = Output()
    local = Input(width=1)
    next = LogicalAction()

    def __init__(self, server, clock, rounds):
        super().__init__()
        self.server, self.clock, self.rounds, self.done = server, clock, rounds, 0

    @reaction(startup, effects=[next])
    def begin(self):
        self.server.buffer_source = self.bcast.lend
        self.next.schedule(0)

    @reaction(next, effects=[bcast])
    def scatter(self):
        self.bcast.set(self.server.scatter().value)

    @reaction(local, effects=[next])
    def gather_local(self):
        self.server.gather([p.value for p in self.local])
        self.end_round()

    end_round = ServerReactor.end_round


class LocalOnlyProgram(Reactor):
    def __init__(self, scenario, server, clock, rounds):
        super().__init__()
        self.server = LocalOnlyServer(server, clock, rounds).place(0)
        self.workers = self.bank(RoleReactor, N, make_role=scenario.make_worker, threads=1)
        self.workers.place(list(range(N)))
        self.connect(self.server.bcast, self.workers.bcast, broadcast=True)
        self.connect(self.workers[0].out, self.server.local[0])


class Window:
    """The round clock: breakdown counters at 20% and at 100% of the rounds."""

    def __init__(self, breakdown: Breakdown, rounds: int):
        self.bd, self.rounds, self.n = breakdown, rounds, 0

    def begin(self) -> None:
        pass

    def tick(self) -> None:
        self.n += 1
        if self.n == self.rounds // 5:
            self.first = self.bd.counters()
        if self.n == self.rounds:
            self.last = self.bd.counters()


def one(mode: str, rounds: int) -> tuple[float, float]:
    """(process 0's CPU per round, the busiest other process's), microseconds."""
    scenario = GymScenario(GymConfig(num_envs=N), seed=1)
    server, bd = scenario.make_server(), Breakdown()
    clock = Window(bd, rounds)
    if mode == "full":
        top = RoundProgram(scenario, server, clock, rounds, bank_split=list(range(N)), n_local=1)
    else:
        top = LocalOnlyProgram(scenario, server, clock, rounds)
    run(assemble(top), executor="processes", workers=N, breakdown=bd, copy_arrays=False)
    n = rounds - rounds // 5
    cpu = [bd.parts({k: b[k] - a[k] for k in b})["cpu"] / n / 1e3 for a, b in zip(clock.first, clock.last)]
    return cpu[0], max(cpu[1:])


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    got: dict[str, list[tuple[float, float]]] = {"full": [], "none": []}
    for i in range(pairs):
        for mode in (("full", "none") if i % 2 == 0 else ("none", "full")):
            t = time.time()
            p0, other = one(mode, rounds)
            got[mode].append((p0, other))
            print(f"{mode}: process 0 {p0:.1f} us, busiest other {other:.1f} us, x{p0 / other:.2f} "
                  f"({time.time() - t:.0f} s)", flush=True)
    for mode, vals in got.items():
        r = median_interval([p / o for p, o in vals], dependent=False)
        print(f"{mode}: process 0 {np.median([p for p, _ in vals]):.1f} us, busiest other "
              f"{np.median([o for _, o in vals]):.1f} us, process 0 / busiest other {r.median:.2f} "
              f"[{r.low:.2f}, {r.high:.2f}]")
    d = median_interval([f[0] - n[0] for f, n in zip(got["full"], got["none"])], dependent=False)
    print(f"process 0's remote gather (full - none, per pair): {d.median:.1f} us [{d.low:.1f}, {d.high:.1f}]")


if __name__ == "__main__":
    main()
