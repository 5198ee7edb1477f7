"""A gather whose results arrive at different times: what a meeting that reads each process's results as it arrives
saves (`_core.ProcessLink.meet`).

Run: ``python -m benchmarks.staggered_gather [--rounds 200] [--mb 4] [--early-ms 2] [--late-ms 8]``.

Why: process 0 gathering a bank reads one slot per other process (here a large array, copied on reading). Read
only once every process has arrived, every read follows the last arrival, on the round's critical path; read as
each process arrives, the early ones' reads overlap the wait for the late one. Three processes: the server alone
on process 0, one member on process 1 that answers after ``--early-ms``, one on process 2 after ``--late-ms``
(both sleep, so the three share two cores without taking turns). Printed: the median round, the round less the late
member's delay (the hand-offs and what process 0 does after the last arrival), and process 0's transport per round
with its overlapped part (the breakdown's ``overlap``): with reads as they arrive, about one read of the two overlaps.

A quick, self-contained check (no results rows); dated readings belong in the reference runs' READMEs.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from reactor_backend import Input, LogicalAction, Output, Reactor, reaction, run, startup
from reactor_backend.processes import Breakdown


class Member(Reactor):
    """Answers the scatter with the payload after its bank index's delay (slept: it takes no core)."""

    inp = Input()
    out = Output()

    def __init__(self, payload: np.ndarray, delays: tuple[float, float]) -> None:
        super().__init__()
        self.payload, self.delays = payload, delays

    @reaction(inp, effects=[out])
    def step(self) -> None:
        time.sleep(self.delays[self.bank_index])
        self.out.set(self.payload)


class Server(Reactor):
    """Scatters, gathers both results (read, copied, in process 0) and starts the next round; keeps round starts."""

    res = Input(width=2)
    go = Output()
    again = LogicalAction()

    def __init__(self, rounds: int) -> None:
        super().__init__()
        self.rounds, self.done, self.starts = rounds, 0, []

    @reaction(startup, again, effects=[go])
    def send(self) -> None:
        self.starts.append(time.perf_counter())
        self.go.set(self.done)

    @reaction(res, effects=[again])
    def gather(self) -> None:
        self.done += 1
        if self.done < self.rounds:
            self.again.schedule(0)


class Staggered(Reactor):
    def __init__(self, rounds: int, payload: np.ndarray, delays: tuple[float, float]) -> None:
        super().__init__()
        self.server = Server(rounds)
        self.members = self.bank(Member, 2, payload=payload, delays=delays)
        self.members.place([1, 2])
        self.connect(self.server.go, self.members.inp, broadcast=True)
        self.connect(self.members.out, self.server.res)


def measure(rounds: int, nbytes: int, early_s: float, late_s: float) -> dict[str, float]:
    """One run: the median round (s) over the last 80% of ``rounds``, and process 0's transport and overlap per
    round (s)."""
    top = Staggered(rounds, np.ones(nbytes // 8), (early_s, late_s))
    bd = Breakdown()
    run(top, executor="processes", workers=3, breakdown=bd, copy_arrays=True)
    w0 = bd.snapshot()[0]
    laps = np.diff(top.server.starts)[rounds // 5:]
    return {"round": float(np.median(laps)), "transport": w0["transport"] / 1e9 / rounds,
            "overlap": w0["overlap"] / 1e9 / rounds}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--mb", type=float, default=4.0, help="each result's size (MB)")
    ap.add_argument("--early-ms", type=float, default=2.0)
    ap.add_argument("--late-ms", type=float, default=8.0)
    args = ap.parse_args(argv)
    got = measure(args.rounds, int(args.mb * (1 << 20)), args.early_ms / 1e3, args.late_ms / 1e3)
    ms = {k: v * 1e3 for k, v in got.items()}
    print(f"round {ms['round']:.3f} ms; after the late member's {args.late_ms:g} ms: "
          f"{ms['round'] - args.late_ms:.3f} ms; process 0's transport {ms['transport']:.3f} ms a round, "
          f"{ms['overlap']:.3f} ms of it while it still waited for the late member")


if __name__ == "__main__":
    main()
