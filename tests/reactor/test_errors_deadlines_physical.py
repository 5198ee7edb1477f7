"""Assembly errors, causality loops, errors raised in reactions, deadlines and physical actions."""
from __future__ import annotations

import threading
import time

import pytest

from reactor_backend import (AssemblyError, CausalityError, Input, LogicalAction, Output, PhysicalAction,
                             ReactionError, Reactor, Timer, msec, reaction, run, sec, shutdown, startup,
                             usec)


class P(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def fwd(self):
        self.out.set(self.inp.value)


class S(Reactor):
    out = Output(width=2)


class Sink(Reactor):
    inp = Input(width=3)


# ---- assembly errors ---------------------------------------------------------------------------
def test_width_mismatch_is_assembly_error(executor):
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.s, self.k = S(), Sink()
            self.connect(self.s.out, self.k.inp)

    with pytest.raises(AssemblyError, match="width mismatch"):
        executor.run(M())


def test_two_writers_is_assembly_error(executor):
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = P(), P(), P()
            self.connect(self.a.out, self.c.inp)
            self.connect(self.b.out, self.c.inp)

    with pytest.raises(AssemblyError, match="two writers"):
        executor.run(M())


def test_reaction_and_connection_writing_one_port_is_assembly_error(executor):
    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.a, self.c = P(), P()
            self.connect(self.a.out, self.c.inp)

        @reaction(startup, effects=["c.inp"])
        def poke(self):
            self.c.inp.set(1)

    with pytest.raises(AssemblyError, match="two writers"):
        executor.run(M())


def test_bad_declarations_are_assembly_errors(executor):
    class OwnInputEffect(Reactor):
        inp = Input()

        @reaction(startup, effects=[inp])
        def r(self):
            pass

    class BadPath(Reactor):
        @reaction("nothere.out")
        def r(self):
            pass

    class NoHandler(Reactor):
        @reaction(startup, deadline=msec(1))
        def r(self):
            pass

    for cls, msg in ((OwnInputEffect, "cannot write"), (BadPath, "does not name a port"),
                     (NoHandler, "needs a handler")):
        with pytest.raises(AssemblyError, match=msg):
            executor.run(cls())


def test_setting_undeclared_port_is_reaction_error(executor):
    class Sneaky(Reactor):
        out = Output()

        @reaction(startup)
        def r(self):
            self.out.set(1)

    with pytest.raises(ReactionError, match="no reaction declares it"):
        executor.run(Sneaky())

    class Sneaky2(Reactor):
        out = Output()

        @reaction(startup, effects=[out])
        def ok(self):
            self.out.set(1)

        @reaction(startup)
        def bad(self):
            self.out.set(2)

    with pytest.raises(ReactionError, match="main.bad .*does not declare it"):
        executor.run(Sneaky2())


# ---- causality ---------------------------------------------------------------------------------
class Loop2(Reactor):
    def __init__(self, after=None):
        super().__init__()
        self.a, self.b = P(), P()
        self.connect(self.a.out, self.b.inp)
        self.connect(self.b.out, self.a.inp, after=after)


def test_causality_loop_names_reactions(executor):
    with pytest.raises(CausalityError) as ei:
        executor.run(Loop2())
    assert set(ei.value.cycle) == {"main.a.fwd", "main.b.fwd"}
    assert "main.a.fwd" in str(ei.value) and "main.b.fwd" in str(ei.value)
    assert isinstance(ei.value, AssemblyError)


def test_loop_through_declaration_order(executor):
    class A(Reactor):
        inp = Input()
        out = Output()
        t = Timer()

        @reaction(inp)
        def first(self):
            pass

        @reaction(t, effects=[out])
        def second(self):
            self.out.set(1)

    class M(Reactor):
        def __init__(self, after=None):
            super().__init__()
            self.a, self.b = A(), P()
            self.connect(self.a.out, self.b.inp)
            self.connect(self.b.out, self.a.inp, after=after)

    with pytest.raises(CausalityError, match="main.a.first"):
        executor.run(M())
    executor.run(M(after=0))  # an after delay breaks it


# ---- errors inside reactions ---------------------------------------------------------------------
class Boom(Reactor):
    t = Timer(offset=0, period=msec(1))

    def __init__(self, log):
        super().__init__()
        self.log = log
        self.k = 0

    @reaction(t)
    def tick(self):
        self.k += 1
        self.log.append(self.k)
        if self.k == 3:
            raise KeyError("bad key")

    @reaction(shutdown)
    def bye(self):
        self.log.append("shutdown")


def test_exception_in_reaction_stops_with_reaction_error(executor):
    log = []
    with pytest.raises(ReactionError) as ei:
        executor.run(Boom(log), timeout=sec(1))
    err = ei.value
    assert isinstance(err.__cause__, KeyError)
    assert err.reactor == "main" and err.reaction == "tick"
    assert err.tag.microstep == 0 and "main.tick" in str(err) and "bad key" in str(err)
    assert f"Tag(time={msec(2)}, microstep=0)" in str(err)
    assert log == [1, 2, 3]  # stopped at once: no later tags, no shutdown reactions


class ParallelBoom(Reactor):
    """Several reactions of one level fail; the first in order is reported."""

    def __init__(self):
        super().__init__()
        self.members = self.bank(Fails, 6)


class Fails(Reactor):
    @reaction(startup)
    def r(self):
        if self.bank_index in (2, 4):
            raise ValueError(f"member {self.bank_index}")


def test_first_error_in_level_is_reported(executor):
    with pytest.raises(ReactionError, match=r"main.members\[2\].r"):
        executor.run(ParallelBoom())


# ---- deadlines -----------------------------------------------------------------------------------
class Dl(Reactor):
    t = Timer(offset=0, period=msec(1))

    def __init__(self, log, deadline):
        super().__init__()
        self.log = log
        self.deadline = deadline

    @reaction(t, deadline=0)
    def tight(self):
        self.log.append("tight body")

    @tight.deadline_handler
    def tight_missed(self):
        self.log.append(("tight missed", self.elapsed))

    @reaction(t, deadline=sec(3600))
    def loose(self):
        self.log.append(("loose body", self.elapsed))

    @loose.deadline_handler
    def loose_missed(self):
        self.log.append("loose missed")


def test_deadlines_and_handlers(executor):
    log = []
    # slow mode: logical time never runs ahead of physical time, so a 0 deadline is always missed
    executor.run(Dl(log, None), timeout=msec(2), fast=False)
    assert log == [("tight missed", 0), ("loose body", 0), ("tight missed", msec(1)), ("loose body", msec(1)),
                   ("tight missed", msec(2)), ("loose body", msec(2))]


# ---- physical actions and physical connections --------------------------------------------------
class Phys(Reactor):
    ext = PhysicalAction()
    out = Output()

    def __init__(self, n=5):
        super().__init__()
        self.n = n
        self.got = []
        self.thread = None

    @reaction(startup)
    def start(self):
        def feed():
            for i in range(self.n):
                time.sleep(0.01)
                self.ext.schedule(0, i)
        self.thread = threading.Thread(target=feed, daemon=True)
        self.thread.start()

    @reaction(ext, effects=[out])
    def on_ext(self):
        self.got.append((self.ext.value, self.tag))
        self.out.set(self.ext.value)
        if self.ext.value == self.n - 1:
            self.request_stop()


class PhysMain(Reactor):
    def __init__(self, log):
        super().__init__()
        self.p = Phys()
        self.rec = Rec(log)
        self.connect(self.p.out, self.rec.inp, physical=True)


class Rec(Reactor):
    inp = Input()

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(inp)
    def r(self):
        self.log.append((self.inp.value, self.logical_time, self.physical_time))


def test_physical_actions_and_connection_keepalive(executor):
    log = []
    main = PhysMain(log)
    stats = executor.run(main, timeout=sec(20))  # keepalive by default: waits for the thread
    assert [v for v, _ in main.p.got] == [0, 1, 2, 3, 4]
    tags = [t for _, t in main.p.got]
    assert tags == sorted(tags) and len(set(tags)) == 5
    # each event's tag comes from the physical clock at scheduling (>= 2 ms after start)
    assert tags[0].time - stats.start_time >= msec(2)
    # the physical connection delivers later, at a tag from the physical clock (so, under heavy
    # load, after the next physical event); the last value lands past the stop tag and is never seen
    delivered = [v for v, _, _ in log]
    assert len(delivered) <= 4 and delivered == list(range(len(delivered)))
    assert all(lt <= pt for _, lt, pt in log)
    assert stats.elapsed < sec(20)


class PhysSend(Reactor):
    out = Output()

    @reaction(startup, effects=[out])
    def send(self):
        self.sent_at = self.physical_time
        self.out.set("v")


class PhysConn(Reactor):
    def __init__(self, log, after=None):
        super().__init__()
        self.s = PhysSend()
        self.r = Rec(log)
        self.connect(self.s.out, self.r.inp, physical=True, after=after)


def test_physical_connection_tag_from_physical_clock(executor):
    log = []
    main = PhysConn(log, after=msec(5))
    stats = executor.run(main, fast=False)
    assert [v for v, _, _ in log] == ["v"]
    (_, lt, pt), = log
    assert lt >= main.s.sent_at + msec(5)  # the physical send time + after
    assert lt <= pt                        # fast=False: logical time never runs ahead
    assert stats.final_tag.time == lt and stats.final_tag.microstep == 1  # then starvation


def test_keepalive_false_starves(executor):
    class Idle(Reactor):
        ext = PhysicalAction()

        @reaction(ext)
        def r(self):
            pass

    t0 = time.perf_counter()
    stats = executor.run(Idle(), keepalive=False, timeout=sec(30))
    assert stats.final_tag.microstep == 1 and stats.elapsed == 0 and time.perf_counter() - t0 < 5


def test_physical_action_wakes_slow_mode_wait(executor):
    """With fast=False and a far timer, a physical event arriving meanwhile is handled at its time."""
    class W(Reactor):
        ext = PhysicalAction()
        far = Timer(offset=sec(30))

        def __init__(self):
            super().__init__()
            self.seen = []

        @reaction(startup)
        def start(self):
            threading.Timer(0.02, lambda: self.ext.schedule(0, "hi")).start()

        @reaction(ext)
        def on_ext(self):
            self.seen.append((self.ext.value, self.elapsed >= msec(20)))
            self.request_stop()

        @reaction(far)
        def never(self):
            self.seen.append("far")

    w = W()
    t0 = time.perf_counter()
    executor.run(w, fast=False, timeout=sec(60))
    assert w.seen == [("hi", True)] and time.perf_counter() - t0 < 10


# ---- executor selection ---------------------------------------------------------------------------
def test_unknown_executor_is_value_error():
    with pytest.raises(ValueError, match="valid executors"):
        run(P(), executor="bogus")


def test_every_executor_is_in_the_one_table():
    from reactor_backend.processes import ProcessExecutor
    from reactor_backend.runtime import EXECUTORS

    assert EXECUTORS["processes"] is ProcessExecutor and sorted(EXECUTORS) == ["inline", "processes", "threads"]


def test_unknown_executor_option_is_type_error():
    with pytest.raises(TypeError, match="no options"):
        run(P(), executor="threads", workers=2, spin=True)
