"""A received value's sharing rule (docs/reactor.md): one program, one result, under every executor and
placement, even when a reaction modifies what it received in place.

LF's ArrayParallel shape: one source sends a list (or dict) to two parallel readers, each scales it in place
and forwards it. Through plain inputs the value is read-only, so the in-place change is refused with the same
error everywhere; through ``mutable`` inputs each reader has its own copy, so the answer is the same
everywhere. Readers are placed together (one process) and apart (two processes)."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from reactor_backend import Input, Output, ReactionError, Reactor, reaction, run, startup
from reactor_backend.readonly import ReadOnlyDict, ReadOnlyList, ReadOnlySet

PLACEMENTS = ("together", "apart")
#: what a refused in-place change raises, in every placement
REFUSAL = "a value received through an input is read-only"


def _place(workers: int, placement: str, a: Reactor, b: Reactor) -> None:
    """Both readers on the last worker, or on two different workers (where there are two)."""
    a.place(workers - 1)
    b.place(workers - 1 if placement == "together" else max(workers - 2, 0))


class Source(Reactor):
    out = Output()

    def __init__(self, make):
        super().__init__()
        self.make = make

    @reaction(startup, effects=[out])
    def send(self):
        self.out.set(self.make())


def _scale_in_place(v, factor):
    if isinstance(v, dict):
        for k in v:
            v[k] *= factor
    else:
        for i in range(len(v)):
            v[i] *= factor


class Scale(Reactor):
    """ArrayParallel's Scale through a plain input: modifies the received value in place and forwards it."""

    inp = Input()
    out = Output()

    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    @reaction(inp, effects=[out])
    def scale(self):
        v = self.inp.value
        _scale_in_place(v, self.factor)
        self.out.set(v)


class MutableScale(Scale):
    """The same with LF's ``mutable input``: its own copy to modify."""

    inp = Input(mutable=True)

    @reaction(inp, effects=[Scale.out])
    def scale(self):
        v = self.inp.value
        _scale_in_place(v, self.factor)
        self.out.set(v)


class Record(Reactor):
    """Records both results (lives with main on worker 0, so readable after run)."""

    a = Input()
    b = Input()

    def __init__(self):
        super().__init__()
        self.got = []

    @reaction(a, b)
    def record(self):
        self.got.append((self.a.value, self.b.value))


class ArrayParallel(Reactor):
    def __init__(self, make, scale, placement, workers):
        super().__init__()
        self.src = Source(make)
        self.x2, self.x3 = scale(2), scale(3)
        self.rec = Record()
        _place(workers, placement, self.x2, self.x3)
        self.connect(self.src.out, [self.x2.inp, self.x3.inp], broadcast=True)
        self.connect(self.x2.out, self.rec.a)
        self.connect(self.x3.out, self.rec.b)


VALUES = {
    "list": (lambda: [0, 1, 2], ([0, 2, 4], [0, 3, 6])),
    "dict": (lambda: {"a": 1, "b": 2}, ({"a": 2, "b": 4}, {"a": 3, "b": 6})),
    "list-in-tuple": (lambda: ([0, 1, 2],), None),
    "nested-list": (lambda: [[0, 1, 2]], None),
}


def _outcome(executor, kind, scale, placement):
    make = VALUES[kind][0]
    if kind in ("list-in-tuple", "nested-list"):
        return _outcome_nested(executor, make, placement)
    main = ArrayParallel(make, scale, placement, executor.workers)
    try:
        executor.run(main)
    except ReactionError as err:
        return ("refused", err.reaction, type(err.__cause__).__name__, REFUSAL in str(err))
    return main.rec.got


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("kind", ["list", "dict"])
def test_in_place_change_of_a_plain_input_is_refused_alike_everywhere(executor, placement, kind):
    assert _outcome(executor, kind, Scale, placement) == ("refused", "scale", "TypeError", True)


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("kind", ["list", "dict"])
def test_mutable_inputs_give_one_answer_everywhere(executor, placement, kind):
    assert _outcome(executor, kind, MutableScale, placement) == [VALUES[kind][1]]


class Dig(Reactor):
    """Modifies a list found inside what it received (in a tuple, in a list): refused like a top-level one."""

    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def dig(self):
        inner = self.inp.value[0]
        inner.append(3)
        self.out.set(inner)


class Peek(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def peek(self):
        self.out.set(self.inp.value)


class DigMain(Reactor):
    def __init__(self, make, placement, workers):
        super().__init__()
        self.src = Source(make)
        self.dig, self.peek = Dig(), Peek()
        self.rec = Record()
        _place(workers, placement, self.dig, self.peek)
        self.connect(self.src.out, [self.dig.inp, self.peek.inp], broadcast=True)
        self.connect(self.dig.out, self.rec.a)
        self.connect(self.peek.out, self.rec.b)


def _outcome_nested(executor, make, placement):
    main = DigMain(make, placement, executor.workers)
    try:
        executor.run(main)
    except ReactionError as err:
        return ("refused", err.reaction, type(err.__cause__).__name__, REFUSAL in str(err))
    return main.rec.got


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("kind", ["list-in-tuple", "nested-list"])
def test_nested_containers_are_read_only_too(executor, placement, kind):
    assert _outcome(executor, kind, None, placement) == ("refused", "dig", "TypeError", True)


class Forward(Reactor):
    """A reader that forwards what it received, unchanged, to a reader in another process."""

    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def fwd(self):
        self.out.set(self.inp.value)


class Keep(Reactor):
    inp = Input()

    def __init__(self):
        super().__init__()
        self.got = []

    @reaction(inp)
    def keep(self):
        v = self.inp.value
        self.got.append((type(v).__name__, v))


class Relay(Reactor):
    def __init__(self, make, workers):
        super().__init__()
        self.src = Source(make)
        self.fwd = Forward()
        self.fwd.place(workers - 1)
        self.keep = Keep()
        self.connect(self.src.out, self.fwd.inp)
        self.connect(self.fwd.out, self.keep.inp)


@pytest.mark.parametrize("kind", ["list", "list-of-arrays", "dict"])
def test_forwarded_read_only_values_arrive_read_only_and_equal(executor, kind):
    """A read-only value forwarded across processes (record codec for lists, pickle for dicts) arrives
    equal and read-only again."""
    make = {"list": lambda: [0, 1.5, True], "list-of-arrays": lambda: [np.arange(3), np.ones(2)],
            "dict": lambda: {"k": [1, 2]}}[kind]
    main = Relay(make, executor.workers)
    executor.run(main)
    ((name, got),) = main.keep.got
    assert name == {"dict": "ReadOnlyDict"}.get(kind, "ReadOnlyList")
    if kind == "list-of-arrays":
        assert [a.tolist() for a in got] == [[0, 1, 2], [1.0, 1.0]]
        assert not any(a.flags.writeable for a in got)
    else:
        assert got == make()


class Writer(Reactor):
    """Sends a list it keeps and changes it afterwards (a later reaction of the same tag)."""

    out = Output()

    def __init__(self):
        super().__init__()
        self.buf = [1, 2]
        self.seen = None

    @reaction(startup, effects=[out])
    def send(self):
        self.out.set(self.buf)
        self.buf.append(3)             # the writer's own list stays writable
        self.seen = self.out.value


class WriterMain(Reactor):
    def __init__(self, workers):
        super().__init__()
        self.w = Writer()
        self.keep = Keep()
        self.keep.place(workers - 1)
        self.connect(self.w.out, self.keep.inp)


def test_readers_see_the_list_as_it_was_set(executor):
    """A list is delivered as a snapshot: the writer's later change is seen by no reader, in any process."""
    main = WriterMain(executor.workers)
    executor.run(main)
    assert main.keep.got == [("ReadOnlyList", [1, 2])]
    assert main.w.buf == [1, 2, 3] and main.w.seen == [1, 2]  # the writer's `out.value`: the snapshot


def test_read_only_types_refuse_every_in_place_change_and_copy_to_plain_ones():
    lst, dct, st = ReadOnlyList([1, [2]]), ReadOnlyDict(a=1), ReadOnlySet({1})
    changes = [lambda: lst.append(0), lambda: lst.extend([0]), lambda: lst.insert(0, 0), lambda: lst.pop(),
               lambda: lst.remove(1), lambda: lst.clear(), lambda: lst.sort(), lambda: lst.reverse(),
               lambda: lst.__setitem__(0, 0), lambda: lst.__delitem__(0), lambda: lst.__iadd__([0]),
               lambda: lst.__imul__(2), lambda: dct.__setitem__("b", 0), lambda: dct.__delitem__("a"),
               lambda: dct.update(b=0), lambda: dct.pop("a"), lambda: dct.popitem(), lambda: dct.clear(),
               lambda: dct.setdefault("b", 0), lambda: dct.__ior__({}), lambda: st.add(2), lambda: st.discard(1),
               lambda: st.remove(1), lambda: st.pop(), lambda: st.clear(), lambda: st.update({2}),
               lambda: st.__ior__({2}), lambda: st.__isub__({1})]
    for change in changes:
        with pytest.raises(TypeError, match=REFUSAL):
            change()
    assert lst == [1, [2]] and dct == {"a": 1} and st == {1}
    assert repr(lst) == "[1, [2]]" and repr(dct) == "{'a': 1}" and repr(st) == "{1}"
    for ro, plain in ((lst, list), (dct, dict), (st, set)):
        for c in (copy.copy(ro), copy.deepcopy(ro), ro.copy(), pickle.loads(pickle.dumps(ro))):
            assert type(c) is plain and c == ro
    deep = copy.deepcopy(ReadOnlyList([np.zeros(2)]))
    deep[0][0] = 1  # a deep copy (what a mutable input gets) has writable arrays
    assert deep[0].tolist() == [1, 0]


def test_values_with_nothing_mutable_are_handed_on_as_they_are():
    """Scalars, strings and tuples of them need no copy: readers get the very object that was set."""

    class Once(Reactor):
        out = Output()

        def __init__(self, value):
            super().__init__()
            self.value = value

        @reaction(startup, effects=[out])
        def send(self):
            self.out.set(self.value)

    class Main(Reactor):
        def __init__(self, value):
            super().__init__()
            self.src, self.keep = Once(value), Keep()
            self.connect(self.src.out, self.keep.inp)

    for value in ((1, "a", 2.5), "text", 7, ReadOnlyList([1, 2])):
        m = Main(value)
        run(m)
        assert m.keep.got[0][1] is value


class KeepMain(Reactor):
    def __init__(self, make, workers):
        super().__init__()
        self.src = Source(make)
        self.keep = Keep()
        self.keep.place(workers - 1)
        self.connect(self.src.out, self.keep.inp)


@pytest.mark.parametrize("kind", ["list", "dict", "set"])
def test_received_values_a_reactor_keeps_are_its_state_in_every_process(executor, kind):
    """A reactor in another process that keeps what it received has it copied back after the run, as plain data."""
    make = {"list": lambda: [1, [2]], "dict": lambda: {"a": {"b": 1}}, "set": lambda: {1, 2}}[kind]
    main = KeepMain(make, executor.workers)
    executor.run(main)
    assert main.keep.got == [("Read" + "Only" + kind.capitalize(), make())]
