"""The issue's example, tags, timers, microsteps, stop conditions, presence and persistence."""
from __future__ import annotations

import time

import pytest

from reactor_backend import (FOREVER, Input, LogicalAction, Output, Reactor, Tag, Timer, msec, nsec,
                             reaction, sec, shutdown, startup, usec)


# ---- the example of the issue, as written ---------------------------------------------------
class Count(Reactor):
    out = Output()
    tick = Timer(offset=0, period=sec(1))

    def __init__(self, start=1):
        super().__init__()
        self.n = start

    @reaction(tick, effects=[out])
    def emit(self):
        self.out.set(self.n)
        self.n += 1


class Check(Reactor):
    inp = Input()

    @reaction(inp)
    def check(self):
        print(self.elapsed, self.microstep, self.inp.value)


class Main(Reactor):
    def __init__(self):
        super().__init__()
        self.count = Count()
        self.check = Check()
        self.connect(self.count.out, self.check.inp, after=msec(10))


def test_issue_example(executor, capsys):
    stats = executor.run(Main(), timeout=sec(3))
    lines = capsys.readouterr().out.split("\n")
    assert [ln for ln in lines if ln] == [f"{msec(10)} 0 1", f"{msec(1010)} 0 2", f"{msec(2010)} 0 3"]
    assert stats.elapsed == sec(3)
    assert stats["tags"] == 7  # 0, 0.01, 1, 1.01, 2, 2.01, 3
    assert stats.reactions == 4 + 3
    assert stats.final_tag == Tag(stats.start_time + sec(3), 0)
    assert stats.wall_seconds >= 0


def test_time_units_and_tags():
    assert (nsec(5), usec(2), msec(3), sec(1.5)) == (5, 2_000, 3_000_000, 1_500_000_000)
    assert Tag(1, 5) < Tag(2, 0) < Tag(2, 1)
    assert len({Tag(1, 2), Tag(1, 2)}) == 1
    assert FOREVER > sec(10 ** 9)


class Recorder(Reactor):
    """Records (elapsed, microstep, value) of every input it sees; placed on worker 0."""

    inp = Input()

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(inp)
    def record(self):
        self.log.append((self.elapsed, self.microstep, self.inp.value))


# ---- timers ---------------------------------------------------------------------------------
class Timers(Reactor):
    once = Timer(offset=msec(5))
    per = Timer(offset=msec(1), period=msec(2))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(once)
    def on_once(self):
        self.log.append(("once", self.elapsed, self.microstep))

    @reaction(per)
    def on_per(self):
        self.log.append(("per", self.elapsed, self.microstep))

    @reaction(startup)
    def on_start(self):
        self.log.append(("startup", self.elapsed, self.microstep))

    @reaction(shutdown)
    def on_stop(self):
        self.log.append(("shutdown", self.elapsed, self.microstep))


def test_timers_offset_period_and_timeout(executor):
    log = []
    executor.run(Timers(log), timeout=msec(7))
    # at 5 ms both timers fire: reactions of one reactor run in declaration order (on_once first)
    assert log == [("startup", 0, 0), ("per", msec(1), 0), ("per", msec(3), 0), ("once", msec(5), 0),
                   ("per", msec(5), 0), ("per", msec(7), 0), ("shutdown", msec(7), 0)]


def test_timer_at_start_and_period_zero(executor):
    class T(Reactor):
        t = Timer()

        def __init__(self, log):
            super().__init__()
            self.log = log

        @reaction(startup)
        def s(self):
            self.log.append("startup")

        @reaction(t)
        def fire(self):
            self.log.append(("t", self.elapsed))

        @reaction(shutdown)
        def d(self):
            self.log.append(("shutdown", self.elapsed, self.microstep))

    log = []
    executor.run(T(log))
    # period 0 fires once at start; then the queue runs dry: shutdown one microstep later
    assert log == ["startup", ("t", 0), ("shutdown", 0, 1)]


# ---- microsteps and logical actions ---------------------------------------------------------
class Micro(Reactor):
    act = LogicalAction()

    def __init__(self, log, n=3):
        super().__init__()
        self.log = log
        self.n = n

    @reaction(startup, effects=[act])
    def start(self):
        self.act.schedule(0, 0)

    @reaction(act, effects=[act])
    def again(self):
        self.log.append((self.tag.time - self.start_time, self.microstep, self.act.value))
        if self.act.value + 1 < self.n:
            self.act.schedule(0, self.act.value + 1)


def test_zero_delay_is_next_microstep(executor):
    log = []
    stats = executor.run(Micro(log))
    assert log == [(0, 1, 0), (0, 2, 1), (0, 3, 2)]
    assert stats.final_tag.microstep == 4 and stats.elapsed == 0  # starvation: one microstep later


class Delays(Reactor):
    a = LogicalAction(min_delay=msec(2))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(startup, effects=[a])
    def start(self):
        self.a.schedule(msec(1), "x")      # 3 ms
        self.a.schedule(msec(1), "y")      # same tag again: next microstep
        self.a.schedule(0, "z")            # 2 ms

    @reaction(a)
    def got(self):
        self.log.append((self.elapsed, self.microstep, self.a.value, self.a.is_present))


def test_logical_action_delays_and_same_tag(executor):
    log = []
    executor.run(Delays(log))
    assert log == [(msec(2), 0, "z", True), (msec(3), 0, "x", True), (msec(3), 1, "y", True)]


class Pending(Reactor):
    """An event scheduled later than one that fires first is still pending when the first one's reaction
    schedules onto its tag: the new event goes to the next microstep."""
    a = LogicalAction()

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(startup, effects=[a])
    def start(self):
        self.a.schedule(msec(3), "late")
        self.a.schedule(msec(1), "early")  # queued second, fires first

    @reaction(a, effects=[a])
    def got(self):
        self.log.append((self.elapsed, self.microstep, self.a.value))
        if self.a.value == "early":
            self.a.schedule(msec(2), "again")  # onto "late"'s tag


def test_a_schedule_onto_a_pending_event_takes_the_next_microstep(executor):
    log = []
    executor.run(Pending(log))
    assert log == [(msec(1), 0, "early"), (msec(3), 0, "late"), (msec(3), 1, "again")]


def _spacing(policy):
    class Sp(Reactor):
        a = LogicalAction(min_spacing=msec(10), policy=policy)
        t = Timer(offset=0, period=msec(4))

        def __init__(self, log):
            super().__init__()
            self.log = log
            self.k = 0

        @reaction(t, effects=[a])
        def tick(self):
            self.k += 1
            self.a.schedule(0, self.k)

        @reaction(a)
        def got(self):
            self.log.append((self.elapsed, self.microstep, self.a.value))

    return Sp


@pytest.mark.parametrize("policy,expected", [
    # schedules at 0,4,8,12,16,20 ms (each wants now + 1 microstep)
    ("defer", [(0, 1, 1), (msec(10), 0, 2), (msec(20), 0, 3)]),
    ("drop", [(0, 1, 1), (msec(12), 1, 4)]),
    ("replace", [(0, 1, 1), (msec(10), 0, 3), (msec(20), 0, 5)]),  # 6 at 20 ms: previous already fired -> deferred past the end
])
def test_min_spacing_policies(executor, policy, expected):
    log = []
    executor.run(_spacing(policy)(log), timeout=msec(20))
    assert log == expected


# ---- stop ----------------------------------------------------------------------------------
class Stopper(Reactor):
    t = Timer(offset=0, period=msec(1))

    def __init__(self, log, at=3):
        super().__init__()
        self.log = log
        self.at = at
        self.k = 0

    @reaction(t)
    def tick(self):
        self.k += 1
        self.log.append(("tick", self.elapsed, self.microstep))
        if self.k == self.at:
            self.request_stop()
            self.request_stop()  # a second request changes nothing

    @reaction(shutdown)
    def bye(self):
        self.log.append(("shutdown", self.elapsed, self.microstep))


def test_request_stop(executor):
    log = []
    stats = executor.run(Stopper(log), timeout=sec(10))
    assert log == [("tick", 0, 0), ("tick", msec(1), 0), ("tick", msec(2), 0), ("shutdown", msec(2), 1)]
    assert (stats.elapsed, stats.final_tag.microstep) == (msec(2), 1)


def test_timeout_wins_over_later_stop(executor):
    log = []
    executor.run(Stopper(log, at=10), timeout=msec(1))
    assert log == [("tick", 0, 0), ("tick", msec(1), 0), ("shutdown", msec(1), 0)]


def test_timeout_zero_runs_startup_and_shutdown_at_once(executor):
    log = []
    executor.run(Timers(log), timeout=0)
    assert log == [("startup", 0, 0), ("shutdown", 0, 0)]


class Once(Reactor):
    t = Timer(offset=msec(5))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(t)
    def fire(self):
        self.log.append(("t", self.elapsed, self.microstep))

    @reaction(shutdown)
    def bye(self):
        self.log.append(("shutdown", self.elapsed, self.microstep))


def test_starvation_is_microstep_after_last_event(executor):
    log = []
    stats = executor.run(Once(log))
    assert log == [("t", msec(5), 0), ("shutdown", msec(5), 1)]
    assert stats.tags == 3


def test_slow_mode_waits_for_physical_time(executor):
    log = []
    t0 = time.perf_counter()
    executor.run(Timers(log), timeout=msec(30), fast=False)
    assert time.perf_counter() - t0 >= 0.030
    assert log[-1] == ("shutdown", msec(30), 0)


# ---- presence, persistence, set twice, sources ------------------------------------------------
class Writer(Reactor):
    out = Output()
    t = Timer(offset=0, period=msec(1))

    def __init__(self):
        super().__init__()
        self.k = 0

    @reaction(t, effects=[out])
    def w(self):
        self.k += 1
        if self.k % 2 == 1:          # present at 0, 2, 4 ms
            self.out.set(self.k * 10)
            self.out.set(self.k)     # set twice: last value wins, downstream triggered once


class Observer(Reactor):
    inp = Input()
    free = Input()       # never connected
    t = Timer(offset=0, period=msec(1))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(t, sources=[inp, free])
    def look(self):
        self.log.append(("look", self.elapsed, self.inp.is_present, self.inp.value,
                         self.free.is_present, self.free.value))

    @reaction(inp)
    def on_inp(self):
        self.log.append(("inp", self.elapsed, self.inp.value))


class Persist(Reactor):
    def __init__(self, log):
        super().__init__()
        self.w = Writer()
        self.o = Observer(log)
        self.connect(self.w.out, self.o.inp)


def test_presence_persistence_set_twice_and_unconnected(executor):
    log = []
    executor.run(Persist(log), timeout=msec(3))
    assert log == [
        ("look", 0, True, 1, False, None), ("inp", 0, 1),
        ("look", msec(1), False, 1, False, None),
        ("look", msec(2), True, 3, False, None), ("inp", msec(2), 3),
        ("look", msec(3), False, 3, False, None),
    ]


class TwoTriggers(Reactor):
    a = Input()
    b = Input()

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(a, b)
    def both(self):
        self.log.append((self.a.value, self.b.value))


class Fork(Reactor):
    x = Output()
    y = Output()

    @reaction(startup, effects=[x, y])
    def go(self):
        self.x.set(1)
        self.y.set(2)


class AtMostOnce(Reactor):
    def __init__(self, log):
        super().__init__()
        self.f = Fork()
        self.t = TwoTriggers(log)
        self.connect(self.f.x, self.t.a)
        self.connect(self.f.y, self.t.b)


def test_reaction_runs_once_per_tag(executor):
    log = []
    stats = executor.run(AtMostOnce(log))
    assert log == [(1, 2)]
    assert stats.reactions == 2


class Twice(Reactor):
    out = Output()

    @reaction(startup, effects=[out])
    def a(self):
        self.out.set("first")
        self.out.set("last")


class DelayedTwice(Reactor):
    def __init__(self, log):
        super().__init__()
        self.w = Twice()
        self.near = Recorder(log)
        self.far = Recorder(log)
        self.connect(self.w.out, self.near.inp, after=0)
        self.connect(self.w.out, self.far.inp, after=msec(1))


def test_set_twice_through_delayed_connections(executor):
    log = []
    executor.run(DelayedTwice(log))
    assert log == [(0, 1, "last"), (msec(1), 0, "last")]
