"""Modal reactors, ported from LF's modal_models tests (ModalTimers, ModalStateReset,
ModalStartupShutdown): the expected traces are LF's, as (elapsed, microstep, event) entries.

The modal reactor is placed on the last worker and logs into a list of main's (copied back after the
run), so under ``processes`` the transitions happen in another process than the stepper.
"""
from __future__ import annotations

import pytest

from reactor_backend import (AssemblyError, Input, LogicalAction, Mode, Output, PhysicalAction, ReactionError, Reactor,
                             State, Timer,
                             assemble, history,
                             msec, per_member, reaction, reset, run, sec, shutdown, startup)


class Stepper(Reactor):
    """Main: sends ``next`` to the modal child every ``period`` from ``offset``."""

    stepper = Timer(offset="offset", period="period")

    def __init__(self, modal_cls, workers, offset=sec(1), period=sec(1)):
        super().__init__()
        self.offset, self.period = offset, period
        self.log = []
        self.modal = modal_cls(self.log).place(workers - 1)

    @reaction(stepper, effects=["modal.next"])
    def step(self):
        self.modal.next.set(True)


class ModalTimers(Reactor):
    next = Input()
    one = Mode(initial=True)
    two = Mode()
    t1 = Timer(0, msec(750), mode=one)
    t2 = Timer(0, msec(750), mode=two)

    def __init__(self, log):
        super().__init__()
        self.log = log

    def note(self, what):
        self.log.append((self.elapsed, self.microstep, what))

    @reaction(t1, mode=one)
    def timer1(self):
        self.note("T1")

    @reaction(next, effects=[reset(two)], mode=one)
    def to_two(self):
        self.note("switch")
        self.set_mode(self.two)

    @reaction(t2, mode=two)
    def timer2(self):
        self.note("T2")

    @reaction(next, effects=[history(one)], mode=two)
    def to_one(self):
        self.note("switch")
        self.set_mode(self.one)


def test_modal_timers(executor):
    main = Stepper(ModalTimers, executor.workers)
    executor.run(main, timeout=sec(4))
    ms = msec(1)
    assert main.log == [(0, 0, "T1"), (750 * ms, 0, "T1"), (1000 * ms, 0, "switch"), (1000 * ms, 1, "T2"),
                        (1750 * ms, 0, "T2"), (2000 * ms, 0, "switch"), (2500 * ms, 0, "T1"),
                        (3000 * ms, 0, "switch"), (3000 * ms, 1, "T2"), (3750 * ms, 0, "T2"),
                        (4000 * ms, 0, "switch")]


class ModalStateReset(Reactor):
    next = Input()
    one = Mode(initial=True)
    two = Mode()
    t1 = Timer(0, msec(250), mode=one)
    t2 = Timer(0, msec(250), mode=two)

    def __init__(self, log):
        super().__init__()
        self.log = log
        self.counter0, self.counter1, self.counter2 = 0, 0, -2

    def note(self, what, value):
        self.log.append((self.elapsed, self.microstep, what, value))

    @reaction(next)                            # not in a mode: always active
    def count0(self):
        self.note("count0", self.counter0)
        self.counter0 += 1

    @reaction(reset, mode=one)
    def reset1(self):
        self.counter1 = 0

    @reaction(t1, mode=one)
    def count1(self):
        self.note("count1", self.counter1)
        self.counter1 += 1

    @reaction(next, effects=[reset(two)], mode=one)
    def to_two(self):
        self.note("switch", 1)
        self.set_mode(self.two)

    @reaction(reset, mode=two)
    def reset2(self):
        self.counter2 = -2

    @reaction(t2, mode=two)
    def count2(self):
        self.note("count2", self.counter2)
        self.counter2 += 1

    @reaction(next, effects=[history(one)], mode=two)
    def to_one(self):
        self.note("switch", 1)
        self.set_mode(self.one)


def test_modal_state_reset(executor):
    main = Stepper(ModalStateReset, executor.workers)
    executor.run(main, timeout=sec(4))
    q = msec(250)
    # LF's ModalStateReset trace, event by event
    expected = [(0, 0, "count1", 0), (q, 0, "count1", 1), (2 * q, 0, "count1", 2), (3 * q, 0, "count1", 3),
                (4 * q, 0, "count0", 0), (4 * q, 0, "count1", 4), (4 * q, 0, "switch", 1),
                (4 * q, 1, "count2", -2), (5 * q, 0, "count2", -1), (6 * q, 0, "count2", 0),
                (7 * q, 0, "count2", 1),
                (8 * q, 0, "count0", 1), (8 * q, 0, "count2", 2), (8 * q, 0, "switch", 1),
                (9 * q, 0, "count1", 5), (10 * q, 0, "count1", 6), (11 * q, 0, "count1", 7),
                (12 * q, 0, "count0", 2), (12 * q, 0, "count1", 8), (12 * q, 0, "switch", 1),
                (12 * q, 1, "count2", -2), (13 * q, 0, "count2", -1), (14 * q, 0, "count2", 0),
                (15 * q, 0, "count2", 1),
                (16 * q, 0, "count0", 3), (16 * q, 0, "count2", 2), (16 * q, 0, "switch", 1)]
    assert main.log == expected


class ModalStartupShutdown(Reactor):
    next = Input()
    one = Mode(initial=True)
    two = Mode()
    three = Mode()
    four = Mode()
    five = Mode()                              # unreachable

    def __init__(self, log):
        super().__init__()
        self.log = log

    def note(self, what):
        self.log.append((self.elapsed, self.microstep, what))

    @reaction(startup, mode=one)
    def startup1(self):
        self.note("startup1")

    @reaction(next, effects=[two], mode=one)   # a bare mode: a reset transition
    def to_two(self):
        self.set_mode(self.two)

    @reaction(startup, mode=two)
    def startup2(self):
        self.note("startup2")

    @reaction(next, effects=[three], mode=two)
    def to_three(self):
        self.set_mode(self.three)

    @reaction(shutdown, mode=two)
    def shutdown2(self):
        self.note("shutdown2")

    @reaction(next, effects=[four], mode=three)
    def to_four(self):
        self.set_mode(self.four)

    @reaction(shutdown, mode=three)
    def shutdown3(self):
        self.note("shutdown3")

    @reaction(startup, mode=four)
    def startup4(self):
        self.note("startup4")

    @reaction(reset, mode=four)
    def reset4(self):
        self.note("reset4")

    @reaction(next, effects=[reset(four)], mode=four)
    def again(self):
        self.set_mode(self.four)

    @reaction(shutdown, mode=four)
    def shutdown4(self):
        self.note("shutdown4")

    @reaction(startup, mode=five)
    def startup5(self):
        self.note("startup5")

    @reaction(reset, mode=five)
    def reset5(self):
        self.note("reset5")

    @reaction(shutdown, mode=five)
    def shutdown5(self):
        self.note("shutdown5")


def test_modal_startup_shutdown(executor):
    main = Stepper(ModalStartupShutdown, executor.workers, offset=msec(500), period=msec(500))
    executor.run(main, timeout=msec(3000))
    ms = msec(1)
    assert main.log == [(0, 0, "startup1"), (500 * ms, 1, "startup2"),
                        (1500 * ms, 1, "startup4"), (1500 * ms, 1, "reset4"),
                        (2000 * ms, 1, "reset4"), (2500 * ms, 1, "reset4"),
                        (3000 * ms, 0, "shutdown2"), (3000 * ms, 0, "shutdown3"), (3000 * ms, 0, "shutdown4")]
    if executor.name != "processes" or executor.workers == 1:   # (modes live where the reactor runs)
        assert main.modal.current_mode.name == "four"


class Undeclared(Reactor):
    a = Mode(initial=True)
    b = Mode()

    @reaction(startup, mode=a)
    def jump(self):
        self.set_mode(self.b)


def test_set_mode_needs_a_declared_transition():
    with pytest.raises(ReactionError, match="needs reset"):
        run(Undeclared())


def test_mode_declaration_errors():
    class TwoInitial(Reactor):
        a = Mode(initial=True)
        b = Mode(initial=True)

    with pytest.raises(AssemblyError, match="exactly one Mode"):
        assemble(TwoInitial())

    class ResetOutsideMode(Reactor):
        a = Mode(initial=True)

        @reaction(reset)
        def r(self):
            pass

    with pytest.raises(AssemblyError, match="reset trigger needs a mode-local reaction"):
        assemble(ResetOutsideMode())

    class Other(Reactor):
        a = Mode(initial=True)

    class ForeignMode(Reactor):
        a = Mode(initial=True)

        @reaction(startup, mode=Other.a)
        def r(self):
            pass

    with pytest.raises(AssemblyError, match="is not a mode of ForeignMode"):
        assemble(ForeignMode())


class ModalAction(Reactor):
    """A mode-local logical action queued before its mode is left: resumed (history) or dropped (reset)."""

    next = Input()
    one = Mode(initial=True)
    two = Mode()
    later = LogicalAction(mode=one)

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(startup, effects=[later], mode=one)
    def arm(self):
        self.later.schedule(msec(300), "v")

    @reaction(later, mode=one)
    def fired(self):
        self.log.append((self.elapsed, self.microstep, self.later.value))

    @reaction(next, effects=[two], mode=one)
    def away(self):
        self.set_mode(self.two)

    @reaction(next, effects=[history(one)], mode=two)
    def home(self):
        self.log.append((self.elapsed, self.microstep, "home"))
        self.set_mode(self.one)


class ModalActionReset(ModalAction):
    @reaction(ModalAction.next, effects=[reset(ModalAction.one)], mode=ModalAction.two)
    def home(self):
        self.log.append((self.elapsed, self.microstep, "home"))
        self.set_mode(self.one)


@pytest.mark.parametrize("cls", [ModalAction, ModalActionReset])
def test_mode_local_action_history_and_reset(executor, cls):
    main = Stepper(cls, executor.workers, offset=msec(100), period=msec(400))
    executor.run(main, timeout=msec(1000))
    if cls is ModalAction:   # queued for 300 ms, 200 ms of it left when suspended at 100 ms: 500 + 200
        assert main.log == [(msec(500), 0, "home"), (msec(700), 0, "v")]
    else:                    # reset: dropped
        assert main.log == [(msec(500), 0, "home")]


# ---- contained reactors and connections in modes (LF: ModalCycleBreaker, ModalNestedReactions,
# ModalStateResetAuto, ModalAfter), nested modal reactors, reset state ----------------------------

class CycleModal(Reactor):
    """LF's ModalCycleBreaker: reaction(in2) of mode two precedes the in1 -> out reaction of mode one,
    and out feeds in2: a cycle, were the two modes not exclusive."""

    in1 = Input()
    in2 = Input()
    out = Output()
    two = Mode()
    one = Mode(initial=True)
    wait = Timer(msec(150), sec(1), mode=two)

    @reaction(in2, mode=two)
    def got2(self):
        pass

    @reaction(wait, effects=[reset(one)], mode=two)
    def back(self):
        self.set_mode(self.one)

    @reaction(in1, effects=[out], mode=one)
    def forward(self):
        self.out.set(self.in1.value)

    @reaction(in1, effects=[reset(two)], mode=one)
    def maybe_switch(self):
        if self.in1.value % 5 == 4:
            self.set_mode(self.two)


class Counter(Reactor):
    value = Output()
    t = Timer(0, "period")

    def __init__(self, period=sec(1)):
        super().__init__()
        self.period = period
        self.curval = 0

    @reaction(t, effects=[value])
    def count(self):
        self.value.set(self.curval)
        self.curval += 1


class CycleBreakerMain(Reactor):
    def __init__(self, workers):
        super().__init__()
        self.log = []
        self.counter = Counter(period=msec(100))
        self.modal = CycleModal().place(workers - 1)
        self.connect(self.counter.value, self.modal.in1)
        self.connect(self.modal.out, self.modal.in2)

    @reaction("modal.out")
    def record(self):
        self.log.append((self.elapsed, self.modal.out.value))


def test_modal_cycle_breaker(executor):
    main = CycleBreakerMain(executor.workers)
    executor.run(main, timeout=sec(1))
    ms = msec(1)
    assert main.log == [(0, 0), (100 * ms, 1), (200 * ms, 2), (300 * ms, 3), (400 * ms, 4),
                        (600 * ms, 6), (700 * ms, 7), (800 * ms, 8), (900 * ms, 9)]


class Forward(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def fwd(self):
        self.out.set(self.inp.value)


class CounterCycle(Reactor):
    """LF's ModalNestedReactions: a Forward reactor and its connections live in mode two."""

    next = Input()
    count = Output()
    only_in_two = Output()
    neverp = Output()
    one = Mode(initial=True)
    two = Mode()
    three = Mode()

    def __init__(self):
        super().__init__()
        with self.in_mode(self.two):
            self.fwd = Forward()
            self.connect(self.next, self.fwd.inp)
            self.connect(self.fwd.out, self.only_in_two)

    @reaction(next, effects=[count, reset(two)], mode=one)
    def in_one(self):
        self.count.set(1)
        self.set_mode(self.two)

    @reaction(next, effects=[count, reset(one)], mode=two)
    def in_two(self):
        self.count.set(2)
        self.set_mode(self.one)

    @reaction(next, effects=[neverp], mode=three)
    def in_three(self):
        self.neverp.set(True)


class NestedReactionsMain(Reactor):
    stepper = Timer(0, msec(250))

    def __init__(self, workers):
        super().__init__()
        self.log = []
        self.counter = CounterCycle().place(workers - 1)

    @reaction(stepper, effects=["counter.next"])
    def step(self):
        self.counter.next.set(True)

    @reaction(stepper, sources=["counter.count", "counter.only_in_two"])
    def check(self):
        c = self.counter
        self.log.append((self.elapsed, c.count.value if c.count.is_present else None, c.only_in_two.is_present))

    @reaction("counter.neverp")
    def never(self):
        self.log.append((self.elapsed, "neverp"))


def test_modal_nested_reactions(executor):
    main = NestedReactionsMain(executor.workers)
    executor.run(main, timeout=sec(2))
    q = msec(250)
    # mode two (count 2) and only there, the forwarder inside it answers; mode three never runs
    assert main.log == [(k * q, 1 if k % 2 == 0 else 2, k % 2 == 1) for k in range(9)]


class ModalStateResetAuto(Reactor):
    """LF's ModalStateResetAuto: ``counter2`` is a reset state of mode two (re-initialized on each
    reset entry, no reset reaction), ``counter1`` a plain state of mode one (kept across the history
    entries), ``counter0`` a plain state outside the modes."""

    next = Input()
    one = Mode(initial=True)
    two = Mode()
    t1 = Timer(0, msec(250), mode=one)
    t2 = Timer(0, msec(250), mode=two)
    counter0 = State(0)
    counter1 = State(0, mode=one)
    counter2 = State(-2, reset=True, mode=two)

    def __init__(self, log):
        super().__init__()
        self.log = log

    def note(self, what, value):
        self.log.append((self.elapsed, self.microstep, what, value))

    @reaction(next)
    def count0(self):
        self.note("count0", self.counter0)
        self.counter0 += 1

    @reaction(t1, mode=one)
    def count1(self):
        self.note("count1", self.counter1)
        self.counter1 += 1

    @reaction(next, effects=[reset(two)], mode=one)
    def to_two(self):
        self.note("switch", 1)
        self.set_mode(self.two)

    @reaction(t2, mode=two)
    def count2(self):
        self.note("count2", self.counter2)
        self.counter2 += 1

    @reaction(next, effects=[history(one)], mode=two)
    def to_one(self):
        self.note("switch", 1)
        self.set_mode(self.one)


def test_modal_state_reset_auto(executor):
    main = Stepper(ModalStateResetAuto, executor.workers)
    executor.run(main, timeout=sec(4))
    q = msec(250)
    # LF's ModalStateResetAuto trace (the same as ModalStateReset's, without reset reactions)
    expected = [(0, 0, "count1", 0), (q, 0, "count1", 1), (2 * q, 0, "count1", 2), (3 * q, 0, "count1", 3),
                (4 * q, 0, "count0", 0), (4 * q, 0, "count1", 4), (4 * q, 0, "switch", 1),
                (4 * q, 1, "count2", -2), (5 * q, 0, "count2", -1), (6 * q, 0, "count2", 0),
                (7 * q, 0, "count2", 1),
                (8 * q, 0, "count0", 1), (8 * q, 0, "count2", 2), (8 * q, 0, "switch", 1),
                (9 * q, 0, "count1", 5), (10 * q, 0, "count1", 6), (11 * q, 0, "count1", 7),
                (12 * q, 0, "count0", 2), (12 * q, 0, "count1", 8), (12 * q, 0, "switch", 1),
                (12 * q, 1, "count2", -2), (13 * q, 0, "count2", -1), (14 * q, 0, "count2", 0),
                (15 * q, 0, "count2", 1),
                (16 * q, 0, "count0", 3), (16 * q, 0, "count2", 2), (16 * q, 0, "switch", 1)]
    assert main.log == expected
    if executor.name != "processes" or executor.workers == 1:   # (state lives where the reactor runs)
        assert (main.modal.counter0, main.modal.counter1, main.modal.counter2) == (4, 9, 3)


class Producer(Reactor):
    product = Output()
    t = Timer(0, msec(750))

    @reaction(t, effects=[product])
    def produce(self):
        self.product.set(1)


class Consumer(Reactor):
    product = Input()
    report = Output()

    @reaction(product, effects=[report])
    def consume(self):
        self.report.set(1)


class AfterModal(Reactor):
    """LF's ModalAfter: a producer/consumer pair with an ``after 500 msec`` connection in each mode."""

    next = Input()
    mode_switch = Output()
    produced1 = Output()
    consumed1 = Output()
    produced2 = Output()
    consumed2 = Output()
    one = Mode(initial=True)
    two = Mode()

    def __init__(self):
        super().__init__()
        with self.in_mode(self.one):
            self.producer1 = Producer()
            self.consumer1 = Consumer()
            self.connect(self.producer1.product, self.produced1)
            self.connect(self.producer1.product, self.consumer1.product, after=msec(500))
            self.connect(self.consumer1.report, self.consumed1)
        with self.in_mode(self.two):
            self.producer2 = Producer()
            self.consumer2 = Consumer()
            self.connect(self.producer2.product, self.produced2)
            self.connect(self.producer2.product, self.consumer2.product, after=msec(500))
            self.connect(self.consumer2.report, self.consumed2)

    @reaction(next, effects=[reset(two), mode_switch], mode=one)
    def to_two(self):
        self.mode_switch.set(1)
        self.set_mode(self.two)

    @reaction(next, effects=[history(one), mode_switch], mode=two)
    def to_one(self):
        self.mode_switch.set(1)
        self.set_mode(self.one)


class AfterMain(Reactor):
    stepper = Timer(sec(1), sec(1))

    def __init__(self, workers):
        super().__init__()
        self.log = []
        self.modal = AfterModal().place(workers - 1)

    @reaction(stepper, effects=["modal.next"])
    def step(self):
        self.modal.next.set(True)

    @reaction("modal.mode_switch", "modal.produced1", "modal.consumed1", "modal.produced2", "modal.consumed2")
    def record(self):
        m = self.modal
        for port in (m.mode_switch, m.produced1, m.consumed1, m.produced2, m.consumed2):
            if port.is_present:
                self.log.append((self.elapsed // msec(1), self.microstep, port.name))


def test_modal_after(executor):
    main = AfterMain(executor.workers)
    executor.run(main, timeout=sec(4))
    # LF's ModalAfter trace: delayed events of a mode left are suspended; a history entry delivers
    # them shifted by the pause (750 -> 1250 pending at 1000, delivered at 2250), a reset drops them
    assert main.log == [(0, 0, "produced1"), (500, 0, "consumed1"), (750, 0, "produced1"),
                        (1000, 0, "mode_switch"), (1000, 1, "produced2"), (1500, 0, "consumed2"),
                        (1750, 0, "produced2"), (2000, 0, "mode_switch"), (2250, 0, "consumed1"),
                        (2500, 0, "produced1"), (3000, 0, "mode_switch"), (3000, 0, "consumed1"),
                        (3000, 1, "produced2"), (3500, 0, "consumed2"), (3750, 0, "produced2"),
                        (4000, 0, "mode_switch")]


class Inner(Reactor):
    """A modal reactor nested in mode ``b`` of ``Outer``; ``n`` is a reset state of that mode."""

    x = Mode(initial=True)
    y = Mode()
    tick = Timer(0, msec(100))          # no mode=: belongs to the enclosing mode (Outer.b)
    n = State(0, reset=True)

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(reset, mode=x)
    def on_reset(self):
        self.log.append((self.elapsed // msec(1), self.microstep, "reset-x"))

    @reaction(tick, effects=[reset(y)], mode=x)
    def in_x(self):
        self.log.append((self.elapsed // msec(1), self.microstep, "x", self.n))
        self.n += 1
        if self.n == 2:
            self.set_mode(self.y)

    @reaction(tick, mode=y)
    def in_y(self):
        self.log.append((self.elapsed // msec(1), self.microstep, "y", self.n))
        self.n += 1


class OuterReset(Reactor):
    next = Input()
    a = Mode(initial=True)
    b = Mode()

    def __init__(self, log):
        super().__init__()
        self.log = log
        with self.in_mode(self.b):
            self.inner = Inner(log)

    @reaction(next, effects=[reset(b)], mode=a)
    def to_b(self):
        self.set_mode(self.b)

    @reaction(next, effects=[history(a)], mode=b)
    def to_a(self):
        self.set_mode(self.a)


class OuterHistory(OuterReset):
    @reaction(OuterReset.next, effects=[history(OuterReset.b)], mode=OuterReset.a)
    def to_b(self):
        self.set_mode(self.b)


@pytest.mark.parametrize("cls", [OuterReset, OuterHistory])
def test_nested_modal_reactor_reset_and_history(executor, cls):
    main = Stepper(cls, executor.workers, offset=msec(250), period=msec(250))
    executor.run(main, timeout=sec(1))
    if cls is OuterReset:
        # each reset entry of b resets the inner reactor: back to x, n = 0, its timer restarts
        assert main.log == [(250, 1, "reset-x"), (250, 1, "x", 0), (350, 0, "x", 1), (450, 0, "y", 2),
                            (750, 1, "reset-x"), (750, 1, "x", 0), (850, 0, "x", 1), (950, 0, "y", 2)]
    else:
        # history: the inner reactor stays in y, keeps n, its timer resumes its phase (550 -> 800)
        assert main.log == [(250, 1, "x", 0), (350, 0, "x", 1), (450, 0, "y", 2),
                            (800, 0, "y", 3), (900, 0, "y", 4), (1000, 0, "y", 5)]


def test_mode_scope_errors():
    class PassThrough(Reactor):
        i = Input()
        o = Output()
        a = Mode(initial=True)

        def __init__(self):
            super().__init__()
            with self.in_mode(self.a):
                self.connect(self.i, self.o)

    with pytest.raises(AssemblyError, match="must reach a reactor created in that mode"):
        assemble(PassThrough())

    class CrossMode(Reactor):
        a = Mode(initial=True)
        b = Mode()

        def __init__(self):
            super().__init__()
            with self.in_mode(self.a):
                self.f = Forward()
            with self.in_mode(self.b):
                self.g = Forward()
                self.connect(self.f.out, self.g.inp)

    with pytest.raises(AssemblyError, match="belongs to mode a"):
        assemble(CrossMode())

    class Through(Reactor):
        i = Input()
        o = Output()

        def __init__(self):
            super().__init__()
            self.connect(self.i, self.o)

    class HiddenPassThrough(Reactor):
        i = Input()
        o = Output()
        a = Mode(initial=True)

        def __init__(self):
            super().__init__()
            with self.in_mode(self.a):
                self.t = Through()
                self.connect(self.i, self.t.i)
                self.connect(self.t.o, self.o)

    with pytest.raises(AssemblyError, match="a pass-through out of a mode is not supported"):
        assemble(HiddenPassThrough())

    class ResetStateNoMode(Reactor):
        n = State(0, reset=True)

    with pytest.raises(AssemblyError, match="a reset State needs a mode"):
        assemble(ResetStateNoMode())


class ModalPhysical(Reactor):
    """A physical action of mode ``one`` scheduled while ``one`` is inactive (from a reaction outside
    the modes, at the tag of the switch away): kept with the mode, delivered on a history entry
    shifted by the pause, dropped on a reset entry. In fast mode logical time runs ahead of the
    physical clock, so the event's tag is the next microstep of the scheduling tag."""

    next = Input()
    one = Mode(initial=True)
    two = Mode()
    pa = PhysicalAction(mode=one)
    back_kind = "history"

    def __init__(self, log):
        super().__init__()
        self.log = log
        self.steps = 0

    @reaction(next)
    def step(self):
        self.steps += 1
        if self.steps == 1:
            self.pa.schedule(0, "p")

    @reaction(pa, mode=one)
    def fired(self):
        self.log.append((self.elapsed // msec(1), self.microstep, self.pa.value))

    @reaction(next, effects=[two], mode=one)
    def away(self):
        self.set_mode(self.two)

    @reaction(next, effects=[history(one)], mode=two)
    def home(self):
        self.log.append((self.elapsed // msec(1), self.microstep, "home"))
        self.set_mode(self.one)


class ModalPhysicalReset(ModalPhysical):
    @reaction(ModalPhysical.next, effects=[reset(ModalPhysical.one)], mode=ModalPhysical.two)
    def home(self):
        self.log.append((self.elapsed // msec(1), self.microstep, "home"))
        self.set_mode(self.one)


@pytest.mark.parametrize("cls", [ModalPhysical, ModalPhysicalReset])
def test_mode_local_physical_action(executor, cls):
    main = Stepper(cls, executor.workers)
    executor.run(main, timeout=sec(2) + msec(500))
    # scheduled at (1 s, 0) for (1 s, 1), while one is being left: suspended; back at 2 s
    if cls is ModalPhysical:
        assert main.log == [(2000, 0, "home"), (2000, 1, "p")]
    else:
        assert main.log == [(2000, 0, "home")]


class BankStepper(Reactor):
    """LF's BanksModalStateReset: banks of two modal reactors (reset reactions, or reset states),
    split over the workers, stepped together; each must follow the single reactor's trace."""

    stepper = Timer(sec(1), sec(1))

    def __init__(self, cls):
        super().__init__()
        self.logs = [[], []]
        self.modals = self.bank(cls, 2, log=per_member(self.logs))

    @reaction(stepper, effects=["modals.next"])
    def step(self):
        for m in self.modals:
            m.next.set(True)


@pytest.mark.parametrize("cls", [ModalStateReset, ModalStateResetAuto])
def test_bank_of_modal_reactors(executor, cls):
    single = Stepper(cls, 1)
    run(single, timeout=sec(4))
    main = BankStepper(cls)
    executor.run(main, timeout=sec(4))
    assert len(single.log) == 27
    assert main.logs == [single.log, single.log]


class Outer2(Reactor):
    """A bank created in a mode: its members (and their timers) belong to the mode."""

    next = Input()
    a = Mode(initial=True)
    b = Mode()

    def __init__(self, log):
        super().__init__()
        self.log = log
        with self.in_mode(self.b):
            self.inners = self.bank(Inner, 2, log=log)

    @reaction(next, effects=[reset(b)], mode=a)
    def to_b(self):
        self.set_mode(self.b)

    @reaction(next, effects=[history(a)], mode=b)
    def to_a(self):
        self.set_mode(self.a)


def test_bank_in_mode(executor):
    main = Stepper(Outer2, executor.workers, offset=msec(250), period=msec(250))
    executor.run(main, timeout=sec(1))
    one = [(250, 1, "reset-x"), (250, 1, "x", 0), (350, 0, "x", 1), (450, 0, "y", 2),
           (750, 1, "reset-x"), (750, 1, "x", 0), (850, 0, "x", 1), (950, 0, "y", 2)]
    assert main.log == [e for e in one for _ in range(2)]   # both members, in bank order


def test_in_mode_scope_misuse():
    class Nested(Reactor):
        a = Mode(initial=True)
        b = Mode()

        def __init__(self):
            super().__init__()
            with self.in_mode(self.a):
                with self.in_mode(self.b):
                    pass

    with pytest.raises(TypeError, match="do not nest"):
        Nested()

    class Foreign(Reactor):
        def __init__(self):
            super().__init__()
            self.in_mode(Outer2.a)

    with pytest.raises(TypeError, match="takes a mode of Foreign"):
        Foreign()


class ResetCounter(Reactor):
    """LF's Counter of the MultipleOutputFeeder tests: ``curval`` is a reset state (of the mode its
    instance is created in)."""

    value = Output()
    t = Timer(0, "period")
    curval = State(0, reset=True)

    def __init__(self, period=sec(1)):
        super().__init__()
        self.period = period

    @reaction(t, effects=[value])
    def count(self):
        self.value.set(self.curval)
        self.curval += 1


class Feeder2Connections(Reactor):
    """LF's MultipleOutputFeeder_2Connections: one output fed by a connection in each mode."""

    next = Input()
    count = Output()
    one = Mode(initial=True)
    two = Mode()

    def __init__(self):
        super().__init__()
        with self.in_mode(self.one):
            self.counter1 = ResetCounter(period=msec(250))
            self.connect(self.counter1.value, self.count)
        with self.in_mode(self.two):
            self.counter2 = self.make_counter2()

    def make_counter2(self):
        c = ResetCounter(period=msec(100))
        self.connect(c.value, self.count)
        return c

    @reaction(next, effects=[reset(two)], mode=one)
    def to_two(self):
        self.set_mode(self.two)

    @reaction(next, effects=[history(one)], mode=two)
    def to_one(self):
        self.set_mode(self.one)


class FeederReactionConnections(Feeder2Connections):
    """LF's MultipleOutputFeeder_ReactionConnections: in mode two a reaction drives the output."""

    def make_counter2(self):
        return ResetCounter(period=msec(100))

    @reaction("counter2.value", effects=[Feeder2Connections.count], mode=Feeder2Connections.two)
    def times_ten(self):
        self.count.set(self.counter2.value.value * 10)


class FeederMain(Reactor):
    stepper = Timer(msec(500), msec(500))

    def __init__(self, cls, workers):
        super().__init__()
        self.log = []
        self.modal = cls().place(workers - 1)

    @reaction(stepper, effects=["modal.next"])
    def step(self):
        self.modal.next.set(True)

    @reaction("modal.count")
    def record(self):
        self.log.append((self.elapsed // msec(1), self.microstep, self.modal.count.value))


@pytest.mark.parametrize("cls", [Feeder2Connections, FeederReactionConnections])
def test_multiple_output_feeder(executor, cls):
    main = FeederMain(cls, executor.workers)
    executor.run(main, timeout=sec(2))
    k = 1 if cls is Feeder2Connections else 10
    two = [(0, 1, 0)] + [(d * 100, 0, d * k) for d in range(1, 6)]   # after a reset entry at 1 microstep
    assert main.log == ([(0, 0, 0), (250, 0, 1), (500, 0, 2)]
                        + [(500 + t, m, v) for t, m, v in two]
                        + [(1250, 0, 3), (1500, 0, 4)]
                        + [(1500 + t, m, v) for t, m, v in two])


class Converter(Reactor):
    raw = Input()
    converted = Output()
    upper = Mode(initial=True)
    lower = Mode()

    @reaction(raw, effects=[converted, reset(lower)], mode=upper)
    def up(self):
        c = self.raw.value.upper()
        self.converted.set(c)
        if c == " ":
            self.set_mode(self.lower)

    @reaction(raw, effects=[converted, reset(upper)], mode=lower)
    def low(self):
        c = self.raw.value.lower()
        self.converted.set(c)
        if c == " ":
            self.set_mode(self.upper)


class ResetProcessor(Reactor):
    """LF's ConvertCaseTest: a modal Converter nested in mode ``converting``; the output is driven by
    the converter's connection there and by a reaction in ``discarding``."""

    discard = Input()
    character = Input()
    converted = Output()
    converting = Mode(initial=True)
    discarding = Mode()

    def __init__(self):
        super().__init__()
        with self.in_mode(self.converting):
            self.converter = Converter()
            self.connect(self.character, self.converter.raw)
            self.connect(self.converter.converted, self.converted)

    @reaction(discard, effects=[reset(discarding)], mode=converting)
    def to_discarding(self):
        self.set_mode(self.discarding)

    @reaction(character, effects=[converted], mode=discarding)
    def underscore(self):
        self.converted.set("_")

    @reaction(character, effects=[reset(converting)], mode=discarding)
    def back(self):
        self.set_mode(self.converting)


class HistoryProcessor(ResetProcessor):
    @reaction(ResetProcessor.character, effects=[history(ResetProcessor.converting)],
              mode=ResetProcessor.discarding)
    def back(self):
        self.set_mode(self.converting)


class InputFeeder(Reactor):
    character = Output()
    t = Timer(0, msec(250))

    def __init__(self, message):
        super().__init__()
        self.message = message
        self.idx = 0

    @reaction(t, effects=[character])
    def feed(self):
        if self.idx < len(self.message):
            self.character.set(self.message[self.idx])
            self.idx += 1


class ConvertCaseMain(Reactor):
    stepper = Timer(msec(500), sec(1))

    def __init__(self, workers):
        super().__init__()
        self.log = []
        self.feeder = InputFeeder("Hello World!")
        self.reset_processor = ResetProcessor().place(workers - 1)
        self.history_processor = HistoryProcessor().place(max(0, workers - 2))
        self.connect(self.feeder.character, self.reset_processor.character)
        self.connect(self.feeder.character, self.history_processor.character)

    @reaction(stepper, effects=["reset_processor.discard", "history_processor.discard"])
    def step(self):
        self.reset_processor.discard.set(True)
        self.history_processor.discard.set(True)

    @reaction("reset_processor.converted", "history_processor.converted")
    def record(self):
        r, h = self.reset_processor.converted, self.history_processor.converted
        self.log.append((self.elapsed // msec(1), r.value if r.is_present else None,
                         h.value if h.is_present else None))


def test_convert_case(executor):
    main = ConvertCaseMain(executor.workers)
    executor.run(main, timeout=sec(4))
    # LF's ConvertCaseTest trace: a reset entry of `converting` puts the nested converter back in
    # `upper`; a history entry leaves it in `lower` ("R" vs "r" after "w_")
    expected = list(zip("HEL_O w_RLD_", "HEL_O w_rld_"))
    assert main.log == [(250 * i, r, h) for i, (r, h) in enumerate(expected)]


class CounterCycle3(Reactor):
    """LF's Count3Modes CounterCycle: counts 1, 2, 3 in three modes, one step per ``next``."""

    next = Input()
    count = Output()
    one = Mode(initial=True)
    two = Mode()
    three = Mode()

    @reaction(next, effects=[count, reset(two)], mode=one)
    def c1(self):
        self.count.set(1)
        self.set_mode(self.two)

    @reaction(next, effects=[count, reset(three)], mode=two)
    def c2(self):
        self.count.set(2)
        self.set_mode(self.three)

    @reaction(next, effects=[count, reset(one)], mode=three)
    def c3(self):
        self.count.set(3)
        self.set_mode(self.one)


class MetaCounter(Reactor):
    """LF's BanksCount3ModesComplex MetaCounter: banks of modal counters outside and inside modes,
    fed by broadcast connections made in the modes."""

    next = Input()
    always = Output(2)
    mode1 = Output(2)
    mode2 = Output(2)
    neverp = Output(2)
    one = Mode(initial=True)
    two = Mode()
    three = Mode()
    t1 = Timer(msec(500), msec(250), mode=one)
    t2 = Timer(msec(500), msec(250), mode=two)

    def __init__(self):
        super().__init__()
        self.outer_counters = self.bank(CounterCycle3, 2)
        self.connect(self.next, self.outer_counters.next, broadcast=True)
        self.connect(self.outer_counters.count, self.always)
        for mode, name, out in ((self.one, "mode1_counters", self.mode1), (self.two, "mode2_counters", self.mode2),
                                (self.three, "mode3_counters", self.neverp)):
            with self.in_mode(mode):
                bank = self.bank(CounterCycle3, 2)
                setattr(self, name, bank)
                self.connect(self.next, bank.next, broadcast=True)
                self.connect(bank.count, out)

    @reaction(t1, effects=[reset(two)], mode=one)
    def to_two(self):
        self.set_mode(self.two)

    @reaction(t2, effects=[history(one)], mode=two)
    def to_one(self):
        self.set_mode(self.one)


class BanksComplexMain(Reactor):
    stepper = Timer(0, msec(250))

    def __init__(self):
        super().__init__()
        self.log = []
        self.counters = self.bank(MetaCounter, 2)

    @reaction(stepper, effects=["counters.next"])
    def step(self):
        for c in self.counters:
            c.next.set(True)

    @reaction("counters.always", "counters.mode1", "counters.mode2", "counters.neverp")
    def record(self):
        row = []
        for name in ("always", "mode1", "mode2", "neverp"):
            vals = {p.value if p.is_present else None for c in self.counters for p in getattr(c, name)}
            assert len(vals) == 1, (name, vals)          # all four channels of a group agree
            row.append(vals.pop())
        self.log.append((self.elapsed // msec(1), *row))


def test_banks_count3_modes_complex(executor):
    main = BanksComplexMain()
    executor.run(main, timeout=sec(3))
    # LF's BanksCount3ModesComplex trace, per group (always, mode1, mode2, neverp); None: absent
    rows = [(1, 1, None), (2, 2, None), (3, 3, None), (1, None, 1), (2, None, 2), (3, 1, None),
            (1, None, 1), (2, None, 2), (3, 2, None), (1, None, 1), (2, None, 2), (3, 3, None), (1, None, 1)]
    assert main.log == [(250 * i, a, m1, m2, None) for i, (a, m1, m2) in enumerate(rows)]


class ParamReset(Reactor):
    """LF's ResetStateVariableWithParameterizedValue C: ``reset state i = init`` (a parameter)."""

    trigger = Input()
    i = State(lambda self: self.init, reset=True)

    def __init__(self, log, init=0):
        super().__init__()
        self.log = log
        self.init = init

    @reaction(trigger)
    def check(self):
        self.log.append((self.elapsed // msec(1), self.i))
        self.i += 10


class ParamResetMain(Reactor):
    t = Timer(0, sec(1))
    a = Mode(initial=True)
    b = Mode()

    def __init__(self):
        super().__init__()
        self.log = []
        with self.in_mode(self.a):
            self.c = ParamReset(self.log, init=-1)

    @reaction(t, effects=[reset(b), "c.trigger"], mode=a)
    def in_a(self):
        self.c.trigger.set(True)
        self.set_mode(self.b)

    @reaction(t, effects=[reset(a)], mode=b)
    def in_b(self):
        self.set_mode(self.a)


def test_reset_state_with_parameterized_value(executor):
    main = ParamResetMain()
    executor.run(main, timeout=sec(4))
    assert main.log == [(0, -1), (2000, -1), (4000, -1)]   # without the reset: -1, 9, 19


class ActionsModal(Reactor):
    """LF's ModalActions: a logical action (min_delay 500 ms) per mode, scheduled by a mode timer."""

    next = Input()
    mode_switch = Output()
    action1_sched = Output()
    action1_exec = Output()
    action2_sched = Output()
    action2_exec = Output()
    one = Mode(initial=True)
    two = Mode()
    t1 = Timer(0, msec(750), mode=one)
    delay1 = LogicalAction(msec(500), mode=one)
    t2 = Timer(0, msec(750), mode=two)
    delay2 = LogicalAction(msec(500), mode=two)

    @reaction(t1, effects=[delay1, action1_sched], mode=one)
    def sched1(self):
        self.delay1.schedule(0)
        self.action1_sched.set(1)

    @reaction(delay1, effects=[action1_exec], mode=one)
    def exec1(self):
        self.action1_exec.set(1)

    @reaction(next, effects=[reset(two), mode_switch], mode=one)
    def to_two(self):
        self.mode_switch.set(1)
        self.set_mode(self.two)

    @reaction(t2, effects=[delay2, action2_sched], mode=two)
    def sched2(self):
        self.delay2.schedule(0)
        self.action2_sched.set(1)

    @reaction(delay2, effects=[action2_exec], mode=two)
    def exec2(self):
        self.action2_exec.set(1)

    @reaction(next, effects=[history(one), mode_switch], mode=two)
    def to_one(self):
        self.mode_switch.set(1)
        self.set_mode(self.one)


class ActionsMain(Reactor):
    stepper = Timer(sec(1), sec(1))

    def __init__(self, workers):
        super().__init__()
        self.log = []
        self.modal = ActionsModal().place(workers - 1)

    @reaction(stepper, effects=["modal.next"])
    def step(self):
        self.modal.next.set(True)

    @reaction("modal.mode_switch", "modal.action1_sched", "modal.action1_exec", "modal.action2_sched",
              "modal.action2_exec")
    def record(self):
        m = self.modal
        for port in (m.mode_switch, m.action1_sched, m.action1_exec, m.action2_sched, m.action2_exec):
            if port.is_present:
                self.log.append((self.elapsed // msec(1), self.microstep, port.name))


def test_modal_actions(executor):
    main = ActionsMain(executor.workers)
    executor.run(main, timeout=sec(4))
    # LF's ModalActions trace (the same shape as ModalAfter's, with actions instead of delays)
    names = {"produced1": "action1_sched", "consumed1": "action1_exec", "produced2": "action2_sched",
             "consumed2": "action2_exec", "mode_switch": "mode_switch"}
    after = [(0, 0, "produced1"), (500, 0, "consumed1"), (750, 0, "produced1"),
             (1000, 0, "mode_switch"), (1000, 1, "produced2"), (1500, 0, "consumed2"),
             (1750, 0, "produced2"), (2000, 0, "mode_switch"), (2250, 0, "consumed1"),
             (2500, 0, "produced1"), (3000, 0, "mode_switch"), (3000, 0, "consumed1"),
             (3000, 1, "produced2"), (3500, 0, "consumed2"), (3750, 0, "produced2"),
             (4000, 0, "mode_switch")]
    assert main.log == [(t, m, names[n]) for t, m, n in after]


class Destination(Reactor):
    req = Input(2)
    rsp = Output(2)

    def __init__(self, tag, log):
        super().__init__()
        self.tag_name, self.log = tag, log

    @reaction(req, effects=[rsp])
    def answer(self):
        self.log.append((self.elapsed, self.tag_name))
        for n in range(2):
            if self.req[n].is_present:
                self.rsp[n].set(self.req[n].value)


class Selector(Reactor):
    """LF's ModalMultiport: the same multiports wired to a different destination in each mode."""

    in_req = Input(2)
    out_rsp = Output(2)
    dst_1 = Mode(initial=True)
    dst_2 = Mode()

    def __init__(self, log):
        super().__init__()
        self.log = log
        with self.in_mode(self.dst_1):
            self.dst1 = Destination("dst1", log)
            self.connect(self.in_req, self.dst1.req)
            self.connect(self.dst1.rsp, self.out_rsp)
        with self.in_mode(self.dst_2):
            self.dst2 = Destination("dst2", log)
            self.connect(self.in_req, self.dst2.req)
            self.connect(self.dst2.rsp, self.out_rsp)

    @reaction(startup, effects=[reset(dst_2)], mode=dst_1)
    def switch(self):
        self.set_mode(self.dst_2)


class MultiportSource(Reactor):
    req = Output(2)
    rsp = Input(2)
    t = Timer(0, msec(1))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(t, effects=[req])
    def send(self):
        for n in range(2):
            self.req[n].set(n)

    @reaction(rsp)
    def check(self):
        self.log.append((self.elapsed, "rsp", self.rsp.values))


class MultiportMain(Reactor):
    def __init__(self, workers):
        super().__init__()
        self.log, self.dlog = [], []        # one list per process that writes it
        self.src = MultiportSource(self.log)
        self.sel = Selector(self.dlog).place(workers - 1)
        self.connect(self.src.req, self.sel.in_req)
        self.connect(self.sel.out_rsp, self.src.rsp)


def test_modal_multiport(executor):
    main = MultiportMain(executor.workers)
    executor.run(main, timeout=msec(1))
    # the startup reaction of dst_1 switches to dst_2 at once: dst1 answers at 0 only, dst2 after
    assert main.dlog == [(0, "dst1"), (msec(1), "dst2")]
    assert main.log == [(0, "rsp", [0, 1]), (msec(1), "rsp", [0, 1])]


class BankSelector(Reactor):
    """LF's ModalMultiportBank: a bank of two destinations per mode behind 4-wide multiports."""

    in_req = Input(4)
    out_rsp = Output(4)
    dst_1 = Mode(initial=True)
    dst_2 = Mode()

    def __init__(self, log):
        super().__init__()
        self.log = log
        with self.in_mode(self.dst_1):
            self.dst1 = self.bank(Destination, 2, tag="dst1", log=log)
            self.connect(self.in_req, self.dst1.req)
            self.connect(self.dst1.rsp, self.out_rsp)
        with self.in_mode(self.dst_2):
            self.dst2 = self.bank(Destination, 2, tag="dst2", log=log)
            self.connect(self.in_req, self.dst2.req)
            self.connect(self.dst2.rsp, self.out_rsp)

    @reaction(startup, effects=[reset(dst_2)], mode=dst_1)
    def switch(self):
        self.set_mode(self.dst_2)


class Source4(Reactor):
    req = Output(4)
    rsp = Input(4)
    t = Timer(0, msec(1))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(t, effects=[req])
    def send(self):
        for n in range(4):
            self.req[n].set(n)

    @reaction(rsp)
    def check(self):
        self.log.append((self.elapsed, "rsp", self.rsp.values))


class BankMultiportMain(Reactor):
    def __init__(self, workers):
        super().__init__()
        self.log, self.dlog = [], []
        self.src = Source4(self.log)
        self.sel = BankSelector(self.dlog).place(workers - 1)
        self.connect(self.src.req, self.sel.in_req)
        self.connect(self.sel.out_rsp, self.src.rsp)


def test_modal_multiport_bank(executor):
    main = BankMultiportMain(executor.workers)
    executor.run(main, timeout=msec(1))
    assert main.dlog == [(0, "dst1"), (0, "dst1"), (msec(1), "dst2"), (msec(1), "dst2")]
    assert main.log == [(0, "rsp", [0, 1, 2, 3]), (msec(1), "rsp", [0, 1, 2, 3])]


class MixedReactions(Reactor):
    """LF's MixedReactions (C): reactions declared between and after modes keep declaration order."""

    t = Timer(0, msec(100))
    a = Mode(initial=True)
    b = Mode()
    x = State(0)

    def __init__(self):
        super().__init__()
        self.seen = []

    @reaction(t)
    def r1(self):
        self.x = self.x * 10 + 1

    @reaction(t)
    def r2(self):
        self.x = self.x * 10 + 2

    @reaction(t, effects=[reset(b)], mode=a)
    def r3(self):
        self.x = self.x * 10 + 3
        self.set_mode(self.b)

    @reaction(t)
    def r4(self):
        self.x = self.x * 10 + 4

    @reaction(t, mode=b)
    def r5(self):
        self.x = self.x * 10 + 5

    @reaction(t)
    def r6(self):
        self.seen.append(self.x)


def test_mixed_reactions(executor):
    main = MixedReactions()
    executor.run(main, timeout=msec(110))
    assert main.seen == [1234, 12341245]
