"""Hierarchy, banks, multiports (to/from banks, bank to bank, broadcast, after delays), sources,
delayed connections and cycles broken by ``after``."""
from __future__ import annotations

from reactor_backend import Input, Output, Reactor, Timer, msec, reaction, startup


class Src(Reactor):
    out = Output()
    t = Timer(offset=0, period=msec(1))

    def __init__(self, base=0):
        super().__init__()
        self.k = base

    @reaction(t, effects=[out])
    def emit(self):
        self.k += 1
        self.out.set(self.k)


class Log(Reactor):
    """A recorder with a multiport input (not a bank member: lives on worker 0)."""

    inp = Input(width="width")

    def __init__(self, log, width):
        super().__init__()
        self.log = log
        self.width = width

    @reaction(inp)
    def rec(self):
        self.log.append((self.elapsed, self.microstep,
                         tuple(p.value if p.is_present else None for p in self.inp)))


# ---- hierarchy --------------------------------------------------------------------------------
class Doubler(Reactor):
    x = Input()
    y = Output()

    @reaction(x, effects=[y])
    def dbl(self):
        self.y.set(2 * self.x.value)


class Composite(Reactor):
    """Pass-through ports: inp -> inner.x, inner.y -> out (connections flatten across levels)."""

    inp = Input()
    out = Output()

    def __init__(self):
        super().__init__()
        self.inner = Doubler()
        self.connect(self.inp, self.inner.x)
        self.connect(self.inner.y, self.out)


class Parent(Reactor):
    """Writes a child's input and reacts to its output; nests a composite."""

    def __init__(self, log):
        super().__init__()
        self.log = log
        self.d = Doubler()
        self.c = Composite()
        self.src = Src()
        self.connect(self.src.out, self.c.inp)

    @reaction(startup, effects=["d.x"])
    def poke(self):
        self.d.x.set(21)

    @reaction("d.y")
    def seen_d(self):
        self.log.append(("d.y", self.elapsed, self.d.y.value))

    @reaction("c.out", sources=["src.out"])
    def seen_c(self):
        self.log.append(("c.out", self.elapsed, self.src.out.value, self.c.out.value))


def test_hierarchy_and_names(executor):
    log = []
    main = Parent(log)
    executor.run(main, timeout=msec(1))
    assert log == [("d.y", 0, 42), ("c.out", 0, 1, 2), ("c.out", msec(1), 2, 4)]
    assert main.name == "main" and main.c.inner.name == "main.c.inner"


# ---- banks and multiports ---------------------------------------------------------------------
class Member(Reactor):
    inp = Input()
    out = Output()

    def __init__(self, scale=1):
        super().__init__()
        self.idx_in_init = self.bank_index  # visible inside __init__
        self.scale = scale

    @reaction(inp, effects=[out])
    def work(self):
        self.out.set((self.idx_in_init, self.inp.value * self.scale))


class MultiSrc(Reactor):
    out = Output(width=3)
    t = Timer(offset=0, period=msec(1))

    def __init__(self):
        super().__init__()
        self.k = 0

    @reaction(t, effects=[out])
    def emit(self):
        self.k += 1
        for i, p in enumerate(self.out):
            if (self.k + i) % 2 == 0:
                p.set(10 * self.k + i)


class Banks(Reactor):
    def __init__(self, log):
        super().__init__()
        self.src = MultiSrc()
        self.a = self.bank(Member, 3, scale=2)
        self.b = self.bank(Member, 3, scale=3)
        self.log = Log(log, 3)
        self.connect(self.src.out, self.a.inp)                     # multiport -> bank
        self.connect(self.a.out, self.b.inp, after=msec(1))         # bank -> bank, delayed
        self.connect(self.b.out, self.log.inp)                      # bank -> multiport


def test_multiport_to_bank_to_bank_with_after(executor):
    log = []
    executor.run(Banks(log), timeout=msec(3))
    # at k (ms = k-1) channel i is present when (k+i) even, value 10k+i; a scales by 2 and tags
    # (index, v); b receives those 1 ms later and emits (index, (index, v) * 3)
    def expect(k):
        return tuple((i, (i, (10 * k + i) * 2) * 3) if (k + i) % 2 == 0 else None for i in range(3))
    assert log == [(msec(1), 0, expect(1)), (msec(2), 0, expect(2)), (msec(3), 0, expect(3))]


class Broadcast(Reactor):
    def __init__(self, log):
        super().__init__()
        self.src = Src()
        self.members = self.bank(Member, 4)
        self.log = Log(log, 4)
        self.connect(self.src.out, self.members.inp, broadcast=True)   # (src.out)+ -> bank
        self.connect(self.members.out, self.log.inp, after=0)          # one microstep later

    @reaction(startup)
    def check_len(self):
        assert len(self.members) == 4 and len(self.members.out) == 4 and self.members[2].bank_index == 2


def test_broadcast_and_after_zero(executor):
    log = []
    executor.run(Broadcast(log), timeout=msec(2))
    # the value sent at 2 ms would arrive at (2 ms, 1): past the final tag (2 ms, 0)
    assert log == [(0, 1, tuple((i, 1) for i in range(4))), (msec(1), 1, tuple((i, 2) for i in range(4)))]


class Gather(Reactor):
    """A parent that reads the bank's outputs directly ("workers.out") and writes their inputs."""

    def __init__(self, log, n=5):
        super().__init__()
        self.log = log
        self.workers = self.bank(Member, n)
        self.round = 0

    @reaction(startup, effects=["workers.inp"])
    def scatter(self):
        for i, p in enumerate(self.workers.inp):
            p.set(i + 100)

    @reaction("workers.out")
    def gather(self):
        self.log.append(sorted(m.out.value for m in self.workers if m.out.is_present))


def test_parent_scatter_gather_over_bank(executor):
    log = []
    executor.run(Gather(log))
    assert log == [[(i, i + 100) for i in range(5)]]


class Values(Reactor):
    """Records its multiport's ``values`` whenever a channel is present."""

    res = Input(width=5)

    def __init__(self, log):
        super().__init__()
        self.log = log

    @reaction(res)
    def gather(self):
        self.log.append(self.res.values)


class GatherValues(Reactor):
    """Bank members send to a multiport input; only the even ones get a message."""

    def __init__(self, log):
        super().__init__()
        self.workers = self.bank(Member, 5)
        self.values = Values(log)
        self.connect(self.workers.out, self.values.res)

    @reaction(startup, effects=["workers.inp"])
    def scatter(self):
        for i, p in enumerate(self.workers.inp):
            if i % 2 == 0:
                p.set(i + 100)


def test_a_multiports_values_are_its_channels_values_in_order(executor):
    """``MultiPort.values`` (a server's gather): each channel's value in channel order, None where never set."""
    log = []
    executor.run(GatherValues(log))
    assert log == [[(0, 100), None, (2, 102), None, (4, 104)]]


class Acc(Reactor):
    seed = Input()
    fb = Input()
    y = Output()

    @reaction(seed, fb, effects=[y])
    def dbl(self):
        v = self.seed.value if self.seed.is_present else self.fb.value
        self.y.set(2 * v)


class Loop(Reactor):
    """A feedback loop broken by an after delay (no causality error)."""

    def __init__(self, log):
        super().__init__()
        self.a = Acc()
        self.b = Doubler()
        self.rec = Log(log, 1)
        self.connect(self.a.y, self.b.x)
        self.connect(self.b.y, self.a.fb, after=msec(1))
        self.connect(self.b.y, self.rec.inp)

    @reaction(startup, effects=["a.seed"])
    def kick(self):
        self.a.seed.set(1)


def test_cycle_broken_by_after(executor):
    log = []
    executor.run(Loop(log), timeout=msec(2))
    assert log == [(0, 0, (4,)), (msec(1), 0, (16,)), (msec(2), 0, (64,))]


class Chain(Reactor):
    def __init__(self, log, n=30):
        super().__init__()
        self.src = Src()
        self.stages = [Doubler() for _ in range(n)]
        self.rec = Log(log, 1)
        prev = self.src.out
        for s in self.stages:
            self.connect(prev, s.x)
            prev = s.y
        self.connect(prev, self.rec.inp)


def test_long_chain_single_tag(executor):
    log = []
    stats = executor.run(Chain(log), timeout=msec(2))
    assert log == [(msec(k), 0, ((k + 1) * 2 ** 30,)) for k in range(3)]
    assert stats.reactions == 3 * 32
