"""The threads executor runs one level's reactions in parallel when they release the GIL."""
from __future__ import annotations

import threading
import time

from reactor_backend import Input, Output, Reactor, reaction, run, startup


class Sleeper(Reactor):
    go = Input()
    done = Output()

    @reaction(go, effects=[done])
    def work(self):
        start = time.perf_counter()
        time.sleep(0.2)  # releases the GIL, like numpy/torch kernels or I/O
        self.done.set((threading.get_ident(), start, time.perf_counter()))


class Fan(Reactor):
    go = Output()
    back = Input(width=4)

    def __init__(self):
        super().__init__()
        self.idents = None

    @reaction(startup, effects=[go])
    def start(self):
        self.go.set(1)

    @reaction(back)
    def gather(self):
        self.idents = [p.value[0] for p in self.back]
        self.spans = [p.value[1:] for p in self.back]


class Main(Reactor):
    def __init__(self):
        super().__init__()
        self.fan = Fan()
        self.sleepers = self.bank(Sleeper, 4)
        self.connect(self.fan.go, self.sleepers.go, broadcast=True)
        self.connect(self.sleepers.done, self.fan.back)


def test_level_runs_in_parallel_on_threads():
    main = Main()
    run(main, executor="threads", workers=4)
    assert len(set(main.fan.idents)) == 4          # four different threads
    # all four sleeps were under way at one moment (one after another, none would overlap another): no
    # wall-clock bound, so only a scheduling stall as long as a sleep (0.2 s) could break it
    assert max(start for start, _ in main.fan.spans) < min(end for _, end in main.fan.spans)


def test_inline_runs_on_the_calling_thread():
    main = Main()
    run(main)
    assert set(main.fan.idents) == {threading.get_ident()}
