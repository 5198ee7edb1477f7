"""The runtime's own overhead: reactions per second on programs whose reactions do (almost) nothing.

- ``chain``: a timer-driven source and ``n_reactions - 1`` pass-through reactors in a line
  (``n_reactions`` reactions per tag, one per level: measures per-reaction and per-level cost).
- ``fan_out_in``: a source sends to a bank of ``n`` pass-through reactors whose outputs a sink
  gathers through a multiport (``n + 2`` reactions per tag, ``n`` of them in one level: measures
  parallel dispatch cost).

Run ``python -m benchmarks.overhead`` to print reactions/second for inline and threads. This is a quick
check outside the runtime package; the measurement of record is the harness's ``overhead`` scenario
(``make bench-overhead``). No timing here is asserted by tests.
"""
from __future__ import annotations

import argparse
import time
from typing import Any

from reactor_backend.model import Input, Output, Reactor, Timer, reaction
from reactor_backend.runtime import run
from reactor_backend.timeutil import nsec


class _Source(Reactor):
    out = Output()
    tick = Timer(offset=0, period=nsec(1))

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    @reaction(tick, effects=[out])
    def emit(self) -> None:
        self.n += 1
        self.out.set(self.n)


class _Pass(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def forward(self) -> None:
        self.out.set(self.inp.value)


class _Sink(Reactor):
    inp = Input()

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    @reaction(inp)
    def take(self) -> None:
        self.total += self.inp.value


class _Gather(Reactor):
    inp = Input(width="width")

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width
        self.total = 0

    @reaction(inp)
    def take(self) -> None:
        s = 0
        for p in self.inp:
            s += p.value
        self.total += s


class Chain(Reactor):
    """Source -> (n_reactions - 2) pass-throughs -> sink: n_reactions reactions per tag."""

    def __init__(self, n_reactions: int) -> None:
        super().__init__()
        if n_reactions < 2:
            raise ValueError("n_reactions >= 2")
        self.src = _Source()
        self.stages = [_Pass() for _ in range(n_reactions - 2)]
        self.sink = _Sink()
        prev = self.src.out
        for st in self.stages:
            self.connect(prev, st.inp)
            prev = st.out
        self.connect(prev, self.sink.inp)


class FanOutIn(Reactor):
    """Source -> bank of n pass-throughs -> gathering sink (multiport): n + 2 reactions per tag."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.src = _Source()
        self.workers = self.bank(_Pass, n)
        self.sink = _Gather(n)
        self.connect(self.src.out, self.workers.inp, broadcast=True)
        self.connect(self.workers.out, self.sink.inp)


def _measure(main: Reactor, tags: int, executor: str, workers: int, **opts: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    stats = run(main, timeout=nsec(tags - 1), executor=executor, workers=workers, **opts)
    total = time.perf_counter() - t0
    return {"reactions": stats.reactions, "tags": stats.tags, "seconds": stats.wall_seconds,
            "setup_seconds": total - stats.wall_seconds,
            "reactions_per_second": stats.reactions / stats.wall_seconds,
            "executor": executor, "workers": workers}


def chain(n_reactions: int = 1000, tags: int = 200, executor: str = "inline", workers: int = 1,
          **opts: Any) -> dict[str, Any]:
    """Run the pass-through chain for ``tags`` tags; ``reactions`` = n_reactions * tags.

    ``seconds`` is the tag loop (the runtime's steady-state cost); ``setup_seconds`` the rest of
    ``run`` (assembly, executor start and stop), timed apart as the measurement rules ask."""
    main = Chain(n_reactions)
    out = _measure(main, tags, executor, workers, **opts)
    if out["reactions"] != n_reactions * tags or main.sink.total != tags * (tags + 1) // 2:
        raise RuntimeError(f"chain produced wrong results: {out}, total {main.sink.total}")
    out["n_reactions"] = n_reactions
    return out


def fan_out_in(n: int = 100, tags: int = 500, executor: str = "inline", workers: int = 1,
               **opts: Any) -> dict[str, Any]:
    """Run the 1-to-n-to-1 program for ``tags`` tags; ``reactions`` = (n + 2) * tags."""
    main = FanOutIn(n)
    out = _measure(main, tags, executor, workers, **opts)
    if out["reactions"] != (n + 2) * tags or main.sink.total != n * tags * (tags + 1) // 2:
        raise RuntimeError(f"fan_out_in produced wrong results: {out}, total {main.sink.total}")
    out["n"] = n
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executors", default="inline,threads")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tags", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    for ex in a.executors.split(","):
        w = 1 if ex == "inline" else a.workers
        for name, fn, kw in (("chain(1000)", chain, {"n_reactions": 1000, "tags": a.tags}),
                             ("fan_out_in(100)", fan_out_in, {"n": 100, "tags": a.tags * 5})):
            best = max((fn(executor=ex, workers=w, **kw) for _ in range(a.repeat)),
                       key=lambda d: d["reactions_per_second"])
            print(f"{name:16s} {ex:8s} workers={w}: {best['reactions_per_second']:12,.0f} reactions/s "
                  f"({best['reactions']} reactions in {best['seconds']:.3f} s; setup {best['setup_seconds']:.3f} s)")


if __name__ == "__main__":
    main()
