"""Per-instance parameters (timer offset/period, action min_delay/min_spacing, deadlines), per-member
bank arguments, ``interleaved`` connections and physical-action spacing, under every executor."""
from __future__ import annotations

import threading
import time

import pytest

from reactor_backend import (AssemblyError, Input, LogicalAction, Output, PhysicalAction, Reactor, Timer,
                             assemble, interleaved, msec, per_member, reaction, sec, startup)


class Ticker(Reactor):
    """A timer whose offset and period come from the instance (LF: ``timer t(offset, period)``)."""

    t = Timer(offset="offset", period=lambda self: self.period_ms * msec(1))
    out = Output()

    def __init__(self, offset, period_ms):
        super().__init__()
        self.offset = offset
        self.period_ms = period_ms

    @reaction(t, effects=[out])
    def tick(self):
        self.out.set((self.bank_index, self.elapsed))


class Collect(Reactor):
    inp = Input(width="n")

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.got = []

    @reaction(inp)
    def collect(self):
        self.got.extend(p.value for p in self.inp if p.is_present)


class Tickers(Reactor):
    def __init__(self):
        super().__init__()
        self.t = self.bank(Ticker, 3, offset=per_member([0, msec(5), msec(7)]),
                           period_ms=per_member(lambda i: 10 * (i + 1)))
        self.c = Collect(3)
        self.connect(self.t.out, self.c.inp)


def test_timer_parameters_per_instance_and_per_member(executor):
    main = Tickers()
    executor.run(main, timeout=msec(30))
    expected = sorted([(0, 0), (0, msec(10)), (0, msec(20)), (0, msec(30)),
                       (1, msec(5)), (1, msec(25)), (2, msec(7))])
    assert sorted(main.c.got) == expected
    assert [m.offset for m in main.t] == [0, msec(5), msec(7)]


class Delayer(Reactor):
    a = LogicalAction(min_delay="delay", min_spacing=lambda self: self.delay * 2, policy="defer")
    out = Output()

    def __init__(self, delay):
        super().__init__()
        self.delay = delay

    @reaction(startup, effects=[a])
    def go(self):
        self.a.schedule(0, "x")
        self.a.schedule(0, "y")                 # closer than min_spacing: deferred

    @reaction(a, effects=[out])
    def fire(self):
        self.out.set((self.a.value, self.elapsed))


class Delays(Reactor):
    def __init__(self):
        super().__init__()
        self.d = self.bank(Delayer, 2, delay=per_member([msec(1), msec(3)]))
        self.c = Collect(2)
        self.connect(self.d.out, self.c.inp)


def test_action_parameters_per_instance(executor):
    main = Delays()
    executor.run(main)
    assert sorted(main.c.got) == sorted([("x", msec(1)), ("y", msec(3)), ("x", msec(3)), ("y", msec(9))])


def test_bad_parameter_is_assembly_error_naming_it():
    class Bad(Reactor):
        t = Timer(offset="missing")

        @reaction(t)
        def r(self):
            pass

    with pytest.raises(AssemblyError, match=r"t\.offset='missing'"):
        assemble(Bad())

    class Negative(Reactor):
        t = Timer(period=lambda self: -1)

        @reaction(t)
        def r(self):
            pass

    with pytest.raises(AssemblyError, match=r"t\.period must be >= 0"):
        assemble(Negative())


def test_per_member_needs_one_value_per_member():
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.b = self.bank(Ticker, 3, offset=per_member([0, 1]), period_ms=1)

    with pytest.raises(IndexError):
        M()


# ---- interleaved -------------------------------------------------------------------------------
class Pair(Reactor):
    """A bank member with a two-channel output: (member, channel) on each."""

    out = Output(width=2)

    @reaction(startup, effects=[out])
    def send(self):
        for ch in range(2):
            self.out[ch].set((self.bank_index, ch))


class Interleaved(Reactor):
    def __init__(self, interleave):
        super().__init__()
        self.b = self.bank(Pair, 3)
        self.c = Collect(6)
        src = interleaved(self.b.out) if interleave else self.b.out
        self.connect(src, self.c.inp)


@pytest.mark.parametrize("interleave", [False, True])
def test_interleaved_connection_order(executor, interleave):
    main = Interleaved(interleave)
    executor.run(main)
    if interleave:   # LF's interleaved(b.out): channel-major
        assert main.c.got == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
    else:            # bank order: member-major
        assert main.c.got == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


def test_interleaved_on_the_destination_side():
    class Sink(Reactor):
        inp = Input(width=2)

        @reaction(inp)
        def r(self):
            pass

    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.src = self.bank(Pair, 3)
            self.dst = self.bank(Sink, 3)
            self.connect(self.src.out, interleaved(self.dst.inp))

    prog = assemble(M())
    pairs = [((c.src.owner.bank_index, c.src.channel), (c.dst.owner.bank_index, c.dst.channel))
             for c in prog.connections]
    assert pairs == [((0, 0), (0, 0)), ((0, 1), (1, 0)), ((1, 0), (2, 0)),
                     ((1, 1), (0, 1)), ((2, 0), (1, 1)), ((2, 1), (2, 1))]


# ---- physical action spacing -------------------------------------------------------------------
class Burst(Reactor):
    """Schedules a physical action four times in a burst from a thread of its own process."""

    ext = PhysicalAction(min_spacing=sec(10), policy="defer")
    policy = "defer"

    def __init__(self):
        super().__init__()
        self.got = []

    @reaction(startup)
    def start(self):
        def burst():
            for i in range(4):
                self.ext.schedule(0, i)
            if self.policy == "drop":
                time.sleep(0.1)
                self.request_stop()
        threading.Thread(target=burst, daemon=True).start()

    @reaction("ext")                        # by name: BurstDrop redeclares ext
    def on_ext(self):
        self.got.append((self.ext.value, self.logical_time))
        if self.ext.value == 3:
            self.request_stop()


class BurstDrop(Burst):
    ext = PhysicalAction(min_spacing=sec(10), policy="drop")
    policy = "drop"


class BurstMain(Reactor):
    def __init__(self, policy, workers):
        super().__init__()
        self.b = (Burst if policy == "defer" else BurstDrop)().place(workers - 1)


@pytest.mark.parametrize("policy", ["defer", "drop"])
def test_physical_action_spacing(executor, policy):
    main = BurstMain(policy, executor.workers)
    executor.run(main, timeout=sec(1000))
    got = main.b.got
    if policy == "drop":
        assert [v for v, _ in got] == [0]
    else:
        assert [v for v, _ in got] == [0, 1, 2, 3]
        assert [b[1] - a[1] for a, b in zip(got, got[1:])] == [sec(10)] * 3
