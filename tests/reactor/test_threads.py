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
        time.sleep(0.2)  # releases the GIL, like numpy/torch kernels or I/O
        self.done.set(threading.get_ident())


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
        self.idents = [p.value for p in self.back]


class Main(Reactor):
    def __init__(self):
        super().__init__()
        self.fan = Fan()
        self.sleepers = self.bank(Sleeper, 4)
        self.connect(self.fan.go, self.sleepers.go, broadcast=True)
        self.connect(self.sleepers.done, self.fan.back)


def test_level_runs_in_parallel_on_threads():
    main = Main()
    t0 = time.perf_counter()
    run(main, executor="threads", workers=4)
    wall = time.perf_counter() - t0
    assert len(set(main.fan.idents)) == 4          # four different threads
    assert wall < 0.6                               # serial would take 0.8 s


def test_inline_runs_on_the_calling_thread():
    main = Main()
    run(main)
    assert set(main.fan.idents) == {threading.get_ident()}
