"""An assembled program is a plan: the same Program runs again, under any executor, with equal results
(per-run state lives in the core and the executor, not in the program)."""
import pytest

from reactor_backend import (Input, LogicalAction, Output, Reactor, Timer, assemble, reaction, run,
                             shutdown, startup)
from reactor_backend.errors import AssemblyError


class Source(Reactor):
    out = Output()
    tick = Timer(0, 1_000_000)
    again = LogicalAction(min_spacing=2)   # spacing history must not leak into the next run

    @reaction(startup)
    def init(self):
        self.n = 0

    @reaction(tick, effects=[out, again])
    def emit(self):
        self.n += 1
        self.out.set(self.n * (self.bank_index + 1))
        self.again.schedule(0)

    @reaction(again)
    def echo(self):
        self.n += 100


class Sink(Reactor):
    inp = Input(width=3)
    delayed = Input()

    @reaction(startup)
    def init(self):
        self.log = []

    @reaction(inp, delayed)
    def got(self):
        self.log.append((self.elapsed, self.microstep, [p.value for p in self.inp if p.is_present],
                         self.delayed.value if self.delayed.is_present else None))

    @reaction(shutdown)
    def bye(self):
        self.log.append("end")


class Main(Reactor):
    def __init__(self):
        super().__init__()
        self.sources = self.bank(Source, 3)
        self.sink = Sink()
        self.connect(self.sources.out, self.sink.inp)
        self.connect(self.sources[0].out, self.sink.delayed, after=500_000)


def _result(program):
    main = program.main
    return list(main.sink.log), [s.n for s in main.sources]


@pytest.mark.parametrize("executor,workers", [("inline", 1), ("threads", 2), ("processes", 1),
                                              ("processes", 2), ("processes", 4)])
def test_the_same_program_runs_twice_with_equal_results(executor, workers):
    reference = assemble(Main())
    run(reference, timeout=5_000_000)
    expected = _result(reference)
    assert expected[0][-1] == "end" and len(expected[0]) > 5
    program = assemble(Main())
    for _ in range(2):
        run(program, timeout=5_000_000, executor=executor, workers=workers)
        assert _result(program) == expected
    # and the executor left the plan as it found it: another executor runs it to the same result
    run(program, timeout=5_000_000)
    assert _result(program) == expected


def test_a_reactor_is_assembled_once():
    main = Main()
    run(main, timeout=1_000_000)
    with pytest.raises(AssemblyError, match="already assembled"):
        run(main, timeout=1_000_000)
