"""What a received value's sharing rule costs per ``Port.set`` (docs/reactor.md): one process, inline.

Run: ``python -m benchmarks.value_sharing [--sets 2000] [--repeats 200]``.

Why: every value set on a port is made read-only for its readers (arrays become read-only views, lists,
dicts and sets read-only copies, also inside tuples, lists and dicts). The hot paths of the benchmark's
workloads set numpy arrays and ``(obs, reward, done)`` tuples once per environment step, so this times
``set`` for those and for the containers the rule copies, in one reaction of one process (a port with
two plain readers), and prints each as nanoseconds per set (the fastest of many short loops, which
other load on the machine can only slow down) and as a ratio to setting ``None`` (nothing to make
read-only) measured in the same run. Compare two builds by running this under each, alternately.
"""
from __future__ import annotations

import argparse
import platform
import time
from typing import Any, Callable

import numpy as np

from reactor_backend import Input, Output, Reactor, reaction, run, startup


def cases() -> dict[str, Callable[[], list[Any]]]:
    """name -> the values one timed loop sets, in turn (two, so a kept value alternates)."""
    obs = np.zeros((84, 84), np.uint8)
    obs2 = obs.copy()
    frozen = obs.copy()
    frozen.flags.writeable = False  # what an env step's fresh observation becomes in set (made read-only in place)
    weights = [np.zeros((64, 4), np.float32) for _ in range(6)]
    return {
        "None": lambda: [None, None],
        "int": lambda: [1, 2],
        "array (kept, same each set)": lambda: [obs, obs],
        "array (two kept, alternating)": lambda: [obs, obs2],
        "tuple (frozen obs, reward, done)": lambda: [(frozen, 1.0, False), (frozen, 0.0, True)],
        "tuple (kept writable obs, reward, done)": lambda: [(obs, 1.0, False), (obs2, 0.0, True)],
        "list of 3 ints": lambda: [[0, 1, 2], [3, 4, 5]],
        "list of 6 arrays (weights)": lambda: [weights, list(weights)],
        "dict of 2 ints": lambda: [{"a": 1, "b": 2}, {"a": 3, "b": 4}],
    }


class Bench(Reactor):
    """Sets its output ``sets`` times per case inside one reaction (the last write of a tag wins, every
    set makes the value read-only again) and records the fastest of ``repeats`` loops in ns per set;
    the cases take turns loop by loop, so a burst of other load hits them alike."""

    out = Output()

    def __init__(self, sets: int, repeats: int) -> None:
        super().__init__()
        self.sets = sets
        self.repeats = repeats
        self.ns: dict[str, float] = {}

    @reaction(startup, effects=[out])
    def time_sets(self) -> None:
        values = {name: make() for name, make in cases().items()}
        best = {name: float("inf") for name in values}
        for _ in range(self.repeats):
            for name, (a, b) in values.items():
                t0 = time.perf_counter_ns()
                for _ in range(self.sets // 2):
                    self.out.set(a)
                    self.out.set(b)
                best[name] = min(best[name], (time.perf_counter_ns() - t0) / self.sets)
        self.ns = best


class Reader(Reactor):
    inp = Input()

    @reaction(inp)
    def read(self) -> None:
        pass


class Main(Reactor):
    def __init__(self, sets: int, repeats: int) -> None:
        super().__init__()
        self.bench = Bench(sets, repeats)
        self.r1, self.r2 = Reader(), Reader()
        self.connect(self.bench.out, [self.r1.inp, self.r2.inp], broadcast=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    m = Main(args.sets, args.repeats)
    run(m)
    base = m.bench.ns["None"]
    print(f"# {platform.machine()}, fastest of {args.repeats} loops of {args.sets} sets per value")
    print(f"{'value set':42s} {'ns/set':>8s} {'x None':>7s}")
    for name, ns in m.bench.ns.items():
        print(f"{name:42s} {ns:8.1f} {ns / base:7.2f}")


if __name__ == "__main__":
    main()
