"""Deadline-ordered scheduling (LF's DeadlinePriority, DeadlineInherited, DeadlineWithBanks) and
``check_deadline()`` (LF's ``lf_check_deadline``).

Reactions of one level may run in parallel under ``threads``, so the order is observed where it is
sequential: ``inline``, one thread, and processes with every recording reactor on one worker; the
recorders log into one list that is copied back after the run.
"""
from __future__ import annotations

import time

import pytest

from reactor_backend import (Input, Output, ReactionError, Reactor, Timer, assemble, msec, per_member,
                             reaction, run, sec, startup)


def _run_sequential(executor, main, **kw):
    """Run so that the recorders execute one after another (see the module docstring)."""
    if executor.name == "threads":
        return run(main, executor="threads", workers=1, **kw)
    return executor.run(main, **kw)


class NoDeadline(Reactor):
    t = Timer(0, msec(100))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(t)
    def count(self):
        self.log.append("no deadline")


class WithDeadline(Reactor):
    t = Timer(0, msec(100))

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(t, deadline=sec(100))
    def urgent(self):
        self.log.append("deadline")

    @urgent.deadline_handler
    def late(self):
        self.log.append("late")


class DeadlinePriority(Reactor):
    def __init__(self, workers=1):
        super().__init__()
        self.log = []
        self.a = NoDeadline(self.log).place(workers - 1)   # declared first, yet runs second
        self.b = WithDeadline(self.log).place(workers - 1)


def test_deadline_priority(executor):
    main = DeadlinePriority(executor.workers)
    _run_sequential(executor, main, timeout=msec(250))
    assert main.log == ["deadline", "no deadline"] * 3


class WithInheritedDeadline(WithDeadline):
    """A reaction without a deadline, followed (declaration order) by one with a deadline."""

    @reaction(WithDeadline.t)
    def before(self):
        self.log.append("inherits")

    @reaction(WithDeadline.t, deadline=sec(100))
    def urgent(self):
        self.log.append("deadline")

    @urgent.deadline_handler
    def late(self):
        self.log.append("late")


class DeadlineInherited(Reactor):
    def __init__(self, workers=1):
        super().__init__()
        self.log = []
        self.a = NoDeadline(self.log).place(workers - 1)
        self.b = WithInheritedDeadline(self.log).place(workers - 1)


def test_deadline_inherited_order(executor):
    prog = assemble(DeadlineInherited())
    before = next(r for r in prog.reactions if r.name == "before")
    assert before.deadline == -1 and before.inherited_deadline == sec(100)
    main = DeadlineInherited(executor.workers)
    _run_sequential(executor, main, timeout=msec(150))
    if executor.name == "inline":
        # LF's single-threaded order: the inherited deadline outranks the level
        assert main.log == ["inherits", "deadline", "no deadline"] * 2
    else:
        # level by level, earliest deadline first within a level
        assert main.log == ["inherits", "no deadline", "deadline"] * 2


class BankMember(Reactor):
    t = Timer(0, msec(100))
    out = Output()

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(t, effects=[out])
    def send(self):
        self.log.append(self.bank_index)
        self.out.set(self.bank_index)


class Sink(Reactor):
    inp = Input()

    def __init__(self, dead):
        super().__init__()
        self.dead = dead

    @reaction(inp, deadline="dead")          # the deadline is a parameter of the instance
    def take(self):
        pass

    @take.deadline_handler
    def late(self):
        pass


class DeadlineWithBanks(Reactor):
    def __init__(self, workers=1):
        super().__init__()
        self.log = []
        self.rp = self.bank(BankMember, 4, log=self.log).place(workers - 1)
        self.sinks = self.bank(Sink, 4, dead=per_member([msec(14), msec(12), msec(11), msec(13)]))
        self.connect(self.rp.out, self.sinks.inp)


def test_deadline_with_banks(executor):
    main = DeadlineWithBanks(executor.workers)
    _run_sequential(executor, main, timeout=msec(250))
    assert main.log == [2, 1, 3, 0] * 3
    prog = assemble(DeadlineWithBanks())
    assert [s.name for s in prog.levels[0]] == ["send"] * 4
    assert [s.reactor.bank_index for s in prog.levels[0]] == [2, 1, 3, 0]


def test_same_order_on_repeated_assembly():
    a = [r.full_name for r in assemble(DeadlineWithBanks()).reactions]
    b = [r.full_name for r in assemble(DeadlineWithBanks()).reactions]
    assert a == b


class Checker(Reactor):
    """Checks its deadline mid-body, as LF's lf_check_deadline."""

    def __init__(self, log, dead):
        super().__init__()
        self.log = log
        self.dead = dead

    @reaction(startup, deadline="dead")
    def body(self):
        self.log.append(("before", self.check_deadline()))
        self.log.append(("invoke", self.check_deadline(invoke_handler=True)))
        self.log.append("body done")

    @body.deadline_handler
    def handler(self):
        self.log.append("handler")


class SlowChecker(Checker):
    """Sleeps past its deadline, then checks it."""

    @reaction(startup, deadline="dead")
    def body(self):
        time.sleep(0.25)
        self.log.append(("before", self.check_deadline()))
        self.log.append(("invoke", self.check_deadline(invoke_handler=True)))
        self.log.append("body done")

    @body.deadline_handler
    def handler(self):
        self.log.append("handler")


class CheckMain(Reactor):
    def __init__(self, dead, workers=1, cls=Checker):
        super().__init__()
        self.log = []
        self.c = cls(self.log, dead).place(workers - 1)


def test_check_deadline_inside_a_reaction(executor):
    relaxed = CheckMain(sec(1000), executor.workers)
    executor.run(relaxed)
    assert relaxed.log == [("before", False), ("invoke", False), "body done"]


def test_check_deadline_violated_invokes_handler_and_continues(executor):
    main = CheckMain(msec(200), executor.workers, SlowChecker)
    executor.run(main)
    if main.log != ["handler"]:  # (a start later than 200 ms on a loaded machine runs only the handler)
        assert main.log == [("before", True), "handler", ("invoke", True), "body done"]


def test_check_deadline_outside_a_reaction_is_an_error():
    c = Checker([], 1)
    with pytest.raises(ReactionError, match="outside a reaction"):
        c.check_deadline()
