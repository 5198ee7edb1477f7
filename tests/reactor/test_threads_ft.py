"""The threads executor under stress: many worker threads setting and reading ports every tag, with the
values a reaction keeps and the temporaries it hands over, on either interpreter.

On a free-threaded interpreter (``make test-ft``) these run truly in parallel; on the default one they
still check the executor's protocol (placement, level meetings, error order) and the sharing rule.
"""
from __future__ import annotations

import sys
import sysconfig

import numpy as np
import pytest

from reactor_backend import Input, LogicalAction, Output, ReactionError, Reactor, Timer, assemble, reaction, run, usec

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
MEMBERS = 16
TAGS = 150


class Member(Reactor):
    """Sets three ports each tag: an array it keeps (must stay writable for it), a fresh array (a
    temporary: readers get it read-only) and a tuple around a fresh array; counts through an action."""

    tick = Input()
    kept = Output()
    fresh = Output()
    pair = Output()
    again = LogicalAction()

    def __init__(self):
        super().__init__()
        self.index = self.bank_index
        self.buf = np.zeros(8)
        self.writable_after_set = True
        self.actions = 0

    @reaction(tick, effects=[kept, fresh, pair, again])
    def step(self):
        n = self.tick.value
        self.buf[:] = n * (self.index + 1)
        self.kept.set(self.buf)
        self.writable_after_set &= bool(self.buf.flags.writeable)
        self.fresh.set(np.full(4, float(n + self.index)))
        self.pair.set((np.arange(3) + n, n))
        self.again.schedule(usec(1), n)

    @reaction(again)
    def counted(self):
        self.actions += 1


class Sink(Reactor):
    """Reads every member's ports at the next level (worker 0: readable after the run)."""

    kept = Input(width=MEMBERS)
    fresh = Input(width=MEMBERS)
    pair = Input(width=MEMBERS)

    def __init__(self):
        super().__init__()
        self.sums: list[float] = []
        self.read_only = True

    @reaction(kept, fresh, pair)
    def read(self):
        total = 0.0
        for ports in (self.kept, self.fresh):
            for p in ports:
                v = p.value
                self.read_only &= not v.flags.writeable
                total += float(v.sum())
        for p in self.pair:
            arr, n = p.value
            self.read_only &= not arr.flags.writeable
            total += float(arr.sum()) + n
        self.sums.append(total)


class Clock(Reactor):
    clock = Timer(offset=0, period=usec(10))
    tick = Output()

    def __init__(self):
        super().__init__()
        self.n = 0

    @reaction(clock, effects=[tick])
    def emit(self):
        self.n += 1
        self.tick.set(self.n)


class Stress(Reactor):
    def __init__(self, member: type = Member, members: int = MEMBERS, sink: bool = True):
        super().__init__()
        self.clock = Clock()
        self.members = self.bank(member, members)
        self.connect(self.clock.tick, self.members.tick, broadcast=True)
        if sink:
            self.sink = Sink()
            self.connect(self.members.kept, self.sink.kept)
            self.connect(self.members.fresh, self.sink.fresh)
            self.connect(self.members.pair, self.sink.pair)


def _run(executor: str, workers: int) -> Stress:
    main = Stress()
    run(main, executor=executor, workers=workers, timeout=usec(10) * (TAGS - 1))
    return main


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_many_threads_setting_and_reading_ports(workers):
    expected = _run("inline", 1)
    main = _run("threads", workers)
    assert main.sink.sums == expected.sink.sums and len(main.sink.sums) == TAGS
    assert main.sink.read_only  # every reader saw read-only arrays (the sharing rule)
    assert all(m.writable_after_set for m in main.members)  # a kept array is never frozen in place
    assert [m.actions for m in main.members] == [m.actions for m in expected.members]


def test_each_reactor_runs_on_its_placed_thread():
    """Placement is the processes executor's: bank members in even contiguous parts over the workers."""
    import threading

    seen: dict[int, set[int]] = {}

    class Probe(Member):
        @reaction(Member.tick)
        def where(self):
            seen.setdefault(self.index, set()).add(threading.get_ident())

    run(Stress(Probe, 4, sink=False), executor="threads", workers=2, timeout=usec(10) * 20)
    assert all(len(t) == 1 for t in seen.values())  # one thread per reactor over the whole run
    assert seen[0] == seen[1] and seen[2] == seen[3] and seen[0] != seen[2]


def test_first_failure_in_reaction_order_wins():
    class Boom(Member):
        @reaction(Member.tick)
        def fail(self):
            if self.index in (1, 3):
                raise ValueError(f"member {self.index}")

    program = assemble(Stress(Boom, 4, sink=False))
    with pytest.raises(ReactionError, match="member 1"):
        run(program, executor="threads", workers=4, timeout=usec(10) * 5)
    # the program runs again after the failure (the executor's threads were released)
    with pytest.raises(ReactionError, match="member 1"):
        run(program, executor="threads", workers=2, timeout=usec(10) * 5)


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded interpreter (make install-ft; make test-ft)")
def test_gil_stays_off_under_the_runtime():
    import reactor_backend._codec  # noqa: F401  every extension of the runtime declares itself free-threading safe
    import reactor_backend._sync  # noqa: F401

    _run("threads", 4)
    assert not sys._is_gil_enabled()
