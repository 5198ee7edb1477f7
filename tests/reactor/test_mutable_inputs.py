"""Mutable and read-only inputs (LF's ``mutable input``; ArrayParallel.lf): a reaction that modifies a
received value in place changes nothing another reader sees, under every executor and placement."""
from __future__ import annotations

import numpy as np
import pytest

from reactor_backend import Input, Output, ReactionError, Reactor, reaction, startup

PLACEMENTS = ("default", "together", "apart")


class Source(Reactor):
    out = Output()

    def __init__(self, make):
        super().__init__()
        self.make = make

    @reaction(startup, effects=[out])
    def send(self):
        self.out.set(self.make())


class Scale(Reactor):
    """Scales the received value in place and forwards it (ArrayParallel's Scale)."""

    inp = Input(mutable=True)
    out = Output()

    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    @reaction(inp, effects=[out])
    def scale(self):
        v = self.inp.value
        for i in range(len(v)):
            v[i] *= self.factor
        self.out.set(v)


class Record(Reactor):
    """Records what arrives on two inputs (lives on worker 0, so readable after run)."""

    a = Input()
    b = Input()

    def __init__(self):
        super().__init__()
        self.got = []

    @reaction(a, b)
    def record(self):
        self.got.append((_plain(self.a.value), _plain(self.b.value)))


def _plain(v):
    return v.tolist() if isinstance(v, np.ndarray) else v


def _place(main, placement, workers, x, y):
    if placement == "together":
        x.place(workers - 1)
        y.place(workers - 1)
    elif placement == "apart":
        x.place(workers - 1)
        y.place(max(workers - 2, 0) if workers > 2 else 0)


class ArrayParallel(Reactor):
    def __init__(self, make, placement, workers):
        super().__init__()
        self.src = Source(make)
        self.x2 = Scale(2)
        self.x3 = Scale(3)
        self.rec = Record()
        _place(self, placement, workers, self.x2, self.x3)
        self.connect(self.src.out, [self.x2.inp, self.x3.inp], broadcast=True)
        self.connect(self.x2.out, self.rec.a)
        self.connect(self.x3.out, self.rec.b)


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("kind", ["list", "array"])
def test_array_parallel_same_result_everywhere(executor, placement, kind):
    make = (lambda: [0, 1, 2]) if kind == "list" else (lambda: np.arange(3))
    main = ArrayParallel(make, placement, executor.workers)
    executor.run(main)
    assert main.rec.got == [([0, 2, 4], [0, 3, 6])]


class ScaleInPlace(Reactor):
    """Modifies a value received through a non-mutable input: refused for numpy arrays."""

    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def scale(self):
        v = self.inp.value
        v *= 2
        self.out.set(v)


class Peek(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def peek(self):
        self.out.set(self.inp.value)


class ReadOnlyMain(Reactor):
    def __init__(self, placement, workers, make=lambda: np.arange(3), bad=ScaleInPlace):
        super().__init__()
        self.src = Source(make)
        self.bad = bad()
        self.peek = Peek()
        self.rec = Record()
        _place(self, placement, workers, self.bad, self.peek)
        self.connect(self.src.out, [self.bad.inp, self.peek.inp], broadcast=True)
        self.connect(self.bad.out, self.rec.a)
        self.connect(self.peek.out, self.rec.b)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_in_place_change_through_read_only_input_raises(executor, placement):
    with pytest.raises(ReactionError, match="read-only") as err:
        executor.run(ReadOnlyMain(placement, executor.workers))
    assert err.value.reaction == "scale"


class TupleScaleInPlace(ScaleInPlace):
    """Modifies an array that arrived inside a tuple (an environment step's ``(obs, reward)``)."""

    @reaction(ScaleInPlace.inp, effects=[ScaleInPlace.out])
    def scale(self):
        arr, _reward = self.inp.value
        arr += 1


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_arrays_inside_tuples_are_read_only_too(executor, placement):
    main = ReadOnlyMain(placement, executor.workers, make=lambda: (np.arange(3), 1.5), bad=TupleScaleInPlace)
    with pytest.raises(ReactionError, match="read-only"):
        executor.run(main)


class Mixed(Reactor):
    """One mutable and one read-only reader of the same array; the writer keeps its own."""

    def __init__(self, placement, workers):
        super().__init__()
        self.src = Source(lambda: np.arange(3))
        self.x2 = Scale(2)
        self.peek = Peek()
        self.rec = Record()
        _place(self, placement, workers, self.x2, self.peek)
        self.connect(self.src.out, [self.x2.inp, self.peek.inp], broadcast=True)
        self.connect(self.x2.out, self.rec.a)
        self.connect(self.peek.out, self.rec.b)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_mutable_copy_leaves_other_readers_unchanged(executor, placement):
    main = Mixed(placement, executor.workers)
    executor.run(main)
    assert main.rec.got == [([0, 2, 4], [0, 1, 2])]


def test_only_inputs_can_be_mutable():
    with pytest.raises(TypeError, match="only an Input"):
        Output(mutable=True)


def test_mutable_multiport_channels_are_private():
    from reactor_backend import run

    class Fan(Reactor):
        out = Output()

        @reaction(startup, effects=[out])
        def send(self):
            self.out.set([1])

    class M(Reactor):
        def __init__(self):
            super().__init__()
            self.f = Fan()
            self.sink = Sink()
            self.connect(self.f.out, self.sink.inp, broadcast=True)

    class Sink(Reactor):
        inp = Input(width=2, mutable=True)

        def __init__(self):
            super().__init__()
            self.got = None

        @reaction(inp)
        def take(self):
            self.inp[0].value.append(9)
            self.got = [p.value for p in self.inp]

    m = M()
    run(m)
    assert m.sink.got == [[1, 9], [1]]


class Keeper(Reactor):
    """A writer that sends arrays it keeps (an attribute, a local) and one it gives away."""

    out = Output()

    def __init__(self):
        super().__init__()
        self.buf = np.zeros(3)
        self.sent = None

    @reaction(startup, effects=[out])
    def send(self):
        self.out.set(self.buf)
        self.buf[0] = 1                      # the writer's own arrays stay writable
        local = np.ones(2)
        self.out.set(local)
        local[0] = 2
        self.out.set(np.arange(4))           # a temporary: made read-only in place, no view
        self.sent = self.out.value


def test_writer_keeps_its_arrays_writable():
    from reactor_backend import run
    k = Keeper()
    run(k)
    assert k.buf.flags.writeable and k.buf[0] == 1
    assert not k.sent.flags.writeable and k.sent.tolist() == [0, 1, 2, 3]


class TupleSender(Reactor):
    """Sends `(array, float)` records: one built for the call (an env step's result), one whose array it keeps."""

    out = Output()

    def __init__(self):
        super().__init__()
        self.kept = np.zeros(3)
        self.sent_temp = None
        self.sent_kept = None

    @reaction(startup, effects=[out])
    def send(self):
        self.out.set((np.arange(4.0), 1.0))  # a temporary record whose array nobody else holds
        self.sent_temp = self.out.value
        self.out.set((self.kept, 2.0))        # the writer keeps this array
        self.kept[0] = 5                      # and may still write it
        self.sent_kept = self.out.value


def test_record_of_fresh_array_is_frozen_in_place_and_a_kept_one_is_viewed():
    from reactor_backend import run
    s = TupleSender()
    run(s)
    arr, reward = s.sent_temp
    assert not arr.flags.writeable and arr.base is None  # the writer's own array, made read-only: no view
    assert arr.tolist() == [0, 1, 2, 3] and reward == 1.0
    kept, _ = s.sent_kept
    assert s.kept.flags.writeable and not kept.flags.writeable
    assert kept.base is s.kept and kept[0] == 5  # readers see a read-only view of the kept array
