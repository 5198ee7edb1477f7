"""How much true parallelism this machine gives a CPU-bound env: k independent processes, no coordination.

The efficiency ceiling of the report assumes serial throughput x min(workers, cores); on a VM whose vCPUs
share physical cores, or under noisy neighbours, k processes that never talk to each other already fall
short of k x. This measures that bound directly:

    .venv/bin/python scripts/parallel_capacity.py --env ALE/Pong-v5 --steps 3000 --procs 1 2

`make bench` measures the same bound for every scenario's own unit of work with ``backend=capacity``
(`backends/capacity.py`), stored as rows beside the backends it bounds (docs/report.md).

``--per-cpu`` says why synchronized rounds get less than that: one process steps the env pinned to each
usable CPU in turn, ``--repeat`` times, and prints the microseconds per step on each. On a VM whose vCPUs
lose time to the host's other tenants independently, they differ and drift, and a program that meets once
per round waits for the slower one (``backend=capacity_lockstep``; docs/processes.md).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import time


def _step_env(env_id: str, steps: int, start, out) -> None:
    import numpy as np

    from scenarios.gym import make_env

    env = make_env(env_id)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    n = env.action_space.n
    start.wait()
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(int(rng.integers(n)))
        if term or trunc:
            env.reset()
    out.put(time.perf_counter() - t0)


def measure(env_id: str, steps: int, procs: int) -> float:
    """Aggregate env steps per second of ``procs`` independent processes stepping ``steps`` each."""
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_step_env, args=(env_id, steps, start, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    time.sleep(1.0)  # let every process build its env
    start.set()
    seconds = [out.get() for _ in workers]
    for w in workers:
        w.join()
    return procs * steps / max(seconds)


def per_cpu(env_id: str, steps: int, repeat: int) -> list[dict[int, float]]:
    """Microseconds per env step on each usable CPU, one pinned run after the other, ``repeat`` rounds."""
    import os

    import numpy as np

    from scenarios.gym import make_env

    cpus = sorted(os.sched_getaffinity(0))
    env = make_env(env_id)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    n = env.action_space.n
    out = []
    try:
        for _ in range(repeat):
            row = {}
            for cpu in cpus:
                os.sched_setaffinity(0, {cpu})
                t0 = time.perf_counter()
                for _ in range(steps):
                    _, _, term, trunc, _ = env.step(int(rng.integers(n)))
                    if term or trunc:
                        env.reset()
                row[cpu] = (time.perf_counter() - t0) / steps * 1e6
            out.append(row)
    finally:
        os.sched_setaffinity(0, set(cpus))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="ALE/Pong-v5")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--procs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--per-cpu", action="store_true", help="us per step on each usable CPU in turn")
    args = parser.parse_args()
    if args.per_cpu:
        for row in per_cpu(args.env, args.steps, args.repeat):
            print("  ".join(f"cpu {c}: {us:.1f} us/step" for c, us in row.items()), flush=True)
        return
    base = None
    for k in args.procs:
        rates = sorted(measure(args.env, args.steps, k) for _ in range(args.repeat))
        rate = rates[len(rates) // 2]
        base = base or rate / k
        print(f"{k} process(es): {rate:,.0f} steps/s (median of {args.repeat}), {rate / base:.2f}x one process")


if __name__ == "__main__":
    main()
