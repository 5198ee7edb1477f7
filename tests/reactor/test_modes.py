"""Modal reactors, ported from LF's modal_models tests (ModalTimers, ModalStateReset,
ModalStartupShutdown): the expected traces are LF's, as (elapsed, microstep, event) entries.

The modal reactor is placed on the last worker and logs into a list of main's (copied back after the
run), so under ``processes`` the transitions happen in another process than the stepper.
"""
from __future__ import annotations

import pytest

from reactor_backend import (AssemblyError, Input, LogicalAction, Mode, ReactionError, Reactor, Timer, assemble, history,
                             msec, reaction, reset, run, sec, shutdown, startup)


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
