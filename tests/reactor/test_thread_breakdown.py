"""The threads executor's breakdown: each thread's CPU outside its waits, its waiting and its hand-offs, counted
on the thread that spent them (``ThreadBreakdown``; the reactor backend's rows that carry them:
tests/harness/test_breakdown_rows.py)."""
from __future__ import annotations

import os
import sys
import time

import pytest

from reactor_backend import Input, LogicalAction, Output, Reactor, reaction, run, startup
from reactor_backend.executors import ThreadBreakdown
from reactor_backend.processes import Breakdown
from reactor_backend.waiting import Waiting

ROUNDS = 12
BURN_S = 0.004  # CPU the costly member burns per round


def burn_cpu(seconds: float) -> None:
    """Spin until this thread has used ``seconds`` of CPU (a wall-time spin could lose its core or the GIL)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Member(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def step(self):
        if self.bank_index == 1:
            burn_cpu(BURN_S)
        self.out.set(self.bank_index)


class Server(Reactor):
    go = Output()
    res = Input(width="width")
    again = LogicalAction()

    def __init__(self, width: int = 2):
        super().__init__()
        self.width = width
        self.done = 0

    @reaction(startup, again, effects=[go])
    def send(self):
        self.go.set(self.done)

    @reaction(res, effects=[again])
    def gather(self):
        self.done += 1
        if self.done < ROUNDS:
            self.again.schedule(0)


class Main(Reactor):
    def __init__(self, width: int = 2, server: type = Server):
        super().__init__()
        self.srv = server(width)
        self.members = self.bank(Member, width)  # member i on worker i (member 0: the calling thread)
        self.connect(self.srv.go, self.members.inp, broadcast=True)
        self.connect(self.members.out, self.srv.res)


@pytest.mark.parametrize("workers", [2, 4])  # a thread per core here, and more threads than cores (2 vCPUs)
def test_each_threads_cpu_and_waits_are_counted_on_that_thread(workers):
    """Member 1 burns 4 ms of CPU a round on thread 1 while thread 0 (the server and member 0) waits for it: thread
    1's CPU holds the burn, thread 0's does not (its waits, spun, yielded or slept, are not CPU here), and thread 0
    waited about as long as thread 1 burned."""
    bd = ThreadBreakdown()
    assert bd.counters() == []
    main = Main(workers)
    run(main, executor="threads", workers=workers, breakdown=bd)
    assert main.srv.done == ROUNDS
    parts = [bd.parts(c) for c in bd.counters()]
    assert len(parts) == workers
    burnt = ROUNDS * BURN_S * 1e9
    assert parts[1]["cpu"] >= 0.9 * burnt  # (its waits' CPU is partly estimated from their wall time)
    assert parts[0]["cpu"] < 0.5 * burnt, parts


def test_a_thread_that_spins_through_its_waits_counts_the_spin_as_waiting():
    """Told to spin for long (``backend.wait_spins`` set high), thread 0 spins through each 4 ms wait for thread 1:
    that spin is its waits' CPU, not CPU outside them (it counted none of a spin longer than 5 us, which put thread
    0's spin in its CPU, as much as thread 1's burn). Threads spin only without a GIL (with one they sleep at once)."""
    if getattr(sys, "_is_gil_enabled", lambda: True)():
        pytest.skip("threads spin only on a free-threaded interpreter (make install-ft; make test-ft)")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a spinning thread and the one it waits for need a core each")
    bd = ThreadBreakdown()
    main = Main(2)
    run(main, executor="threads", workers=2, breakdown=bd, waiting=Waiting(spins=1 << 40))
    parts = [bd.parts(c) for c in bd.counters()]
    burnt = ROUNDS * BURN_S * 1e9
    assert parts[1]["cpu"] >= 0.9 * burnt
    assert parts[0]["cpu"] < 0.5 * burnt, parts
    assert parts[0]["wait"] + parts[0]["handoff"] >= 0.5 * burnt > parts[1]["wait"] + parts[1]["handoff"], parts
    assert all(v >= 0 for p in parts for v in p.values())
    assert bd.counters() == bd.counters()  # after the run: the last reading, kept


def test_counters_only_grow_while_the_run_is_in_progress():
    bd = ThreadBreakdown()
    seen: list[list[dict[str, int]]] = []

    class Watching(Server):
        @reaction(Server.res, effects=[Server.again])
        def gather(self):
            seen.append(bd.counters())
            self.done += 1
            if self.done < ROUNDS:
                self.again.schedule(0)

    run(Main(server=Watching), executor="threads", workers=2, breakdown=bd)
    assert len(seen) == ROUNDS
    for before, after in zip(seen, seen[1:] + [bd.counters()]):
        for b, a in zip(before, after):
            assert all(a[k] >= b[k] for k in ThreadBreakdown.FIELDS)
    assert seen[-1][1]["cpu"] > seen[0][1]["cpu"]


def test_breakdown_true_makes_one_and_the_run_s_stats_hold_its_last_reading():
    stats = run(Main(), executor="threads", workers=2, breakdown=True)
    assert [sorted(p) for p in stats.breakdown] == [["cpu", "handoff", "wait"]] * 2
    assert stats.breakdown[1]["cpu"] >= 0.9 * ROUNDS * BURN_S * 1e9
    assert run(Main(), executor="threads", workers=2).breakdown is None


def test_a_breakdown_of_another_executor_is_refused():
    with pytest.raises(TypeError, match="ThreadBreakdown"):
        run(Main(), executor="threads", workers=2, breakdown=Breakdown())


def test_a_reading_inside_a_pause_shows_none_of_the_pause():
    """Thread 0 reads the counters inside pauses (`ThreadBreakdown.pause`, `resume`: the harness's clock between a
    paired job's blocks) after 0 or 4 ms of CPU (alternately) and before 2 ms more: between two such readings its
    CPU is the round's own (little: member 1 burns on thread 1), none of the pauses'."""
    bd = ThreadBreakdown()
    seen: list[list[dict[str, int]]] = []

    class PausedReading(Server):
        @reaction(Server.res, effects=[Server.again])
        def gather(self):
            bd.pause()
            burn_cpu(BURN_S if self.done % 2 else 0.0)
            seen.append(bd.counters())
            burn_cpu(0.002)
            bd.resume()
            self.done += 1
            if self.done < ROUNDS:
                self.again.schedule(0)

    run(Main(server=PausedReading), executor="threads", workers=2, breakdown=bd)
    steps = [b[0]["cpu"] - a[0]["cpu"] for a, b in zip(seen, seen[1:])]
    assert all(0 <= s < 1_500_000 for s in steps), steps
    assert bd.counters()[0]["cpu"] < 0.5 * ROUNDS * BURN_S * 1e9
