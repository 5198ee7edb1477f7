"""Process 0's CPU per round against the busiest other process's, gym's reactor program at workers=16 (16 CartPole
members, one per process), alternated between two checkouts: A (before) and B (after), PAIRS pairs of ROUNDS
rounds, each run in a fresh interpreter with its checkout first on ``sys.path``. Prints each pair and the median of
the per-pair ratios B / A with its 95% interval. The program and its reading are `../vm-2core-2026-12-06-p0-gather/
floor.py`'s ``full`` (the last 80% of the rounds, the breakdown's per-process CPU). Usage, nothing else running:

    .venv/bin/python results/reference/vm-2core-2026-12-06-gather-batch/ab.py CHECKOUT_A CHECKOUT_B [ROUNDS] [PAIRS]
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np

from harness.report.intervals import median_interval

ONE = ("import sys, os; sys.path[:0] = [os.getcwd(), 'results/reference/vm-2core-2026-12-06-p0-gather']; "
       "import floor; print(*floor.one('full', int(sys.argv[1])))")


def one(checkout: str, rounds: int) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", ONE, str(rounds)], cwd=checkout, capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    a, b = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    got: dict[str, list[tuple[float, float]]] = {a: [], b: []}
    for i in range(pairs):
        for d in ((a, b) if i % 2 == 0 else (b, a)):
            got[d].append(one(d, rounds))
        (pa, oa), (pb, ob) = got[a][-1], got[b][-1]
        print(f"pair {i}: A process 0 {pa:.1f} us, busiest other {oa:.1f} us, x{pa / oa:.2f} | "
              f"B {pb:.1f} us, {ob:.1f} us, x{pb / ob:.2f}", flush=True)
    for name, f in (("process 0", lambda v: v[0]), ("busiest other", lambda v: v[1]),
                    ("process 0 / busiest other", lambda v: v[0] / v[1])):
        r = median_interval([f(y) / f(x) for x, y in zip(got[a], got[b])], dependent=False)
        print(f"B / A, {name}: {r.median:.3f} [{r.low:.3f}, {r.high:.3f}] (A median {np.median([f(v) for v in got[a]]):.2f}, "
              f"B {np.median([f(v) for v in got[b]]):.2f})")


if __name__ == "__main__":
    main()
