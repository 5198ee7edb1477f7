"""Instructions per round of each worker process of the reactor's program, counted by valgrind (callgrind).

Why: on the 2-vCPU development VM neither wall time nor CPU time of 16 processes is steady (the host moves 2x
within seconds, and 16 processes taking turns on 2 cores run with cold caches, process 0 more than the others).
The instructions a process retires per round do not depend on either: they are the round's work itself, the
same on 2 cores as on 16. So a change to the runtime's per-round path (process 0's gather, the meetings, the
tag advance) reads here as an exact count, without pairs or intervals; what it does not show is memory latency
(a cross-core cache line read is one instruction here and 100-300 ns there) and the kernel's part (futex wakes).

How: runs the scenario's program as the reactor backend builds it (one member per process unless ``--per-process``
says more, the gather split where the backend splits it: `backends._reactor_program.RoundProgram`) under callgrind
twice, for ``--rounds`` and three times as many, counting only inside the core's run loop (`Core.run`: start-up and
imports are not counted) and outside the barrier's waits (a waiting process spins and yields for as long as the
others take: that varied a count by about 1,000 between runs of one build), and divides the difference by the extra
rounds: one-off costs (the first rounds, shutdown) cancel. Prints each process's instructions per round, process 0's
over the median and the busiest other, and with ``--top N`` the N functions whose own instructions per round differ
most between process 0 and the median other process (the one nearest the median whose callgrind files name the core's
functions).
About 2.5 minutes for gym at the defaults on the 2-vCPU VM (valgrind runs each process 50-100x slower); marl's
server steps the env and a torch policy every round: 300 rounds took 20 minutes there and one count went unwritten.

    .venv/bin/python scripts/round_instructions.py [--scenario gym|marl|atari] [--workers 16] [--per-process 1]
        [--top 30]
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: the core's tag loop: counting starts on entering it and stops on leaving it
RUN_SYMBOL = "__pyx_pw_15reactor_backend_5_core_4Core_27run"
#: the core's meeting (a function every process runs every round): its name in a file shows the file names functions
MEET_SYMBOL = "__pyx_f_15reactor_backend_5_core_11ProcessLink_meet"
#: the barrier's wait (spin, yield, futex sleep): not counted, since what a waiting process retires depends on how
#: long it waited (the others' speed, the host), not on the round's work
WAIT_SYMBOL = "__pyx_f_15reactor_backend_5_sync_7Barrier__wait"
SCENARIO_ARGS = {
    "gym": ("GymConfig", "num_envs", {}),
    "atari": ("AtariConfig", "num_envs", {}),
    "marl": ("MarlConfig", "num_agents", {"env": "synthetic"}),
}


#: process 0's extra instructions grouped by the functions they are counted in (own instructions; by name, so
#: approximate: an allocator call counts as Python wherever it was made), first match wins
GROUPS = (
    ("checksum fold (BLAKE2b, the digests' join)", r"[Bb]lake2|_checksum"),
    ("result import (slot read, record decode, port delivery, the tuple's life)",
     r"RecordCodec|SlotHotReader|Port__set|Core__mark|Core__trigger|PyTuple_New|tuple_alloc|tupledealloc|"
     r"PyFloat_FromDouble|float_dealloc|port_values"),
    ("meetings and tag advance (core, barrier; the waits themselves are not counted)",
     r"ProcessLink|Barrier|_Meeting|clock_gettime|sched_yield|syscall"),
    ("core (levels, reactions, events)", r"_core"),
    ("Python (server reactions, role calls, allocation)", r""),
)


class _Clock:
    """The round clock's interface with nothing to time (the rounds are counted by the program)."""

    def begin(self) -> None:
        pass

    def tick(self) -> None:
        pass

    def timer_stops_at_next_tick(self) -> bool:
        return False


def run_program(scenario_name: str, workers: int, rounds: int, per_process: int = 1) -> None:
    """In this process (under valgrind): the scenario's program, ``per_process`` members per process (contiguous),
    for ``rounds`` rounds."""
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    import scenarios.configs as configs
    from backends._bank_split import local_members
    from backends._reactor_program import RoundProgram
    from reactor_backend import assemble, run
    from reactor_backend.processes import Breakdown
    from scenarios import make_scenario

    cls_name, width_key, extra = SCENARIO_ARGS[scenario_name]
    config = getattr(configs, cls_name)(**{width_key: workers * per_process, **extra})
    scenario = make_scenario(config, seed=1)
    bank_split = [i // per_process for i in range(workers * per_process)]
    n_local = local_members(bank_split) if scenario.facts.incremental_gather else 0  # as the backend splits
    top = RoundProgram(scenario, scenario.make_server(), _Clock(), rounds, bank_split=bank_split, n_local=n_local)
    # with the breakdown, as the reactor backend runs by default (`backend.breakdown`)
    run(assemble(top), executor="processes", workers=workers, copy_arrays=False, breakdown=Breakdown())


def totals(path: str) -> int:
    """The instructions a callgrind output file counted (its ``totals:`` / ``summary:`` line)."""
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise ValueError(f"{path}: no totals line (the process ended before valgrind wrote its count: killed at the "
                     f"run's teardown, which waits a few seconds for processes that valgrind slows 50-100x?)")


def self_costs(path: str) -> dict[str, int]:
    """Each function's own instructions (``callgrind_annotate``), by function name."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path], capture_output=True,
                         text=True, check=True).stdout
    costs: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in m.group(2):
            continue
        name = m.group(2).split(":", 1)[-1].split(" [")[0]
        costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs


def measure(scenario: str, workers: int, rounds: int, out_dir: Path,
            per_process: int = 1) -> tuple[int, dict[int, str]]:
    """Runs the program under callgrind; returns process 0's pid and each process's output file by pid."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={RUN_SYMBOL}",
           f"--toggle-collect={WAIT_SYMBOL}", f"--callgrind-out-file={out_dir}/cg.%p", sys.executable, __file__,
           "--child", scenario, str(workers), str(rounds), str(per_process)]
    # a fixed hash seed: str hashes decide dict and set layouts, whose probing moves a count by hundreds
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if proc.returncode != 0:
        sys.exit(f"valgrind run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    files = {int(p.rsplit(".", 1)[1]): p for p in glob.glob(f"{out_dir}/cg.*")}
    if len(files) != workers:
        sys.exit(f"expected {workers} callgrind files in {out_dir}, found {len(files)}")
    pid0 = int(re.search(r"==(\d+)== Callgrind", proc.stderr).group(1))
    return pid0, files


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        run_program(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=sorted(SCENARIO_ARGS), default="gym")
    ap.add_argument("--workers", type=int, default=16, help="processes")
    ap.add_argument("--per-process", type=int, default=1, help="bank members per process (the bank: workers x this)")
    ap.add_argument("--rounds", type=int, default=1000, help="rounds of the shorter run (the longer: 3x)")
    ap.add_argument("--top", type=int, default=0, help="functions to list by process 0's extra instructions")
    ap.add_argument("--keep", type=Path, default=None, help="keep callgrind's files here (callgrind_annotate)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        sys.exit("valgrind (callgrind) is not installed: apt-get install valgrind")
    if args.workers < 2 or args.rounds < 1 or args.per_process < 1:
        sys.exit("--workers must be at least 2, --rounds and --per-process at least 1")
    extra = 2 * args.rounds
    with tempfile.TemporaryDirectory(prefix="rb-callgrind-") as tmp:
        where = args.keep if args.keep is not None else Path(tmp)
        runs = [measure(args.scenario, args.workers, r, where / f"r{r}", args.per_process)
                for r in (args.rounds, 3 * args.rounds)]
        per_round: list[list[int]] = []   # per run: process 0 first, then the others by pid
        ordered: list[list[str]] = []
        for pid0, files in runs:
            order = [pid0] + sorted(p for p in files if p != pid0)
            ordered.append([files[p] for p in order])
            per_round.append([totals(files[p]) for p in order])
        ir = [(b - a) / extra for a, b in zip(*per_round)]
        others = ir[1:]
        med = statistics.median(others)
        print(f"{args.scenario}, {args.workers} processes, {args.per_process} member(s) each: instructions per round "
              f"(callgrind, {extra} rounds' difference)")
        print(f"  process 0: {ir[0]:,.0f}   others: median {med:,.0f}, busiest {max(others):,.0f}, "
              f"least {min(others):,.0f}")
        print(f"  process 0 / median other: {ir[0] / med:.3f}   process 0 / busiest other: {ir[0] / max(others):.3f}")
        if args.top:
            short0, long0 = self_costs(ordered[0][0]), self_costs(ordered[1][0])
            # the other process nearest the median whose files name the core's functions in both runs: some
            # children's files count the same instructions without naming them (seen with valgrind 3.19), and
            # a difference against such a file reads as nonsense per function
            for i in sorted(range(len(others)), key=lambda i: abs(others[i] - med)):
                short1, long1 = self_costs(ordered[0][1 + i]), self_costs(ordered[1][1 + i])
                if MEET_SYMBOL in short1 and MEET_SYMBOL in long1:
                    break
            else:
                sys.exit("no other process's callgrind files name the core's functions: no per-function listing")
            names = set(short0) | set(long0) | set(short1) | set(long1)
            p0 = {n: (long0.get(n, 0) - short0.get(n, 0)) / extra for n in names}
            p1 = {n: (long1.get(n, 0) - short1.get(n, 0)) / extra for n in names}
            print(f"\n  own instructions per round: process 0, the median other process, the difference")
            for n in sorted(names, key=lambda n: -(p0[n] - p1[n]))[:args.top]:
                print(f"  {p0[n]:9,.0f} {p1[n]:9,.0f} {p0[n] - p1[n]:+9,.0f}  {n[:100]}")
            groups = dict.fromkeys((g for g, _ in GROUPS), 0.0)
            for n in names:
                groups[next(g for g, pattern in GROUPS if re.search(pattern, n))] += p0[n] - p1[n]
            print(f"\n  process 0's extra instructions per round, grouped (approximate: by function name)")
            for g, v in groups.items():
                print(f"  {v:+9,.0f}  {g}")


if __name__ == "__main__":
    main()
