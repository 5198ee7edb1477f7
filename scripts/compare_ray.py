"""``make compare-ray``: the reactor against Ray on this machine, in about ten minutes (issue 48).

One paired job (``python -m harness compare``: every backend resident, alternating blocks, ratios within cycles;
docs/harness.md, "Paired blocks") per RL workload (gym, atari, dqn, marl synthetic) holding serial, the reactor,
Ray at its best on few cores (``ray_packed``, ``ray_compiled_packed``, parked between their blocks) and the
synchronized ceiling (``capacity_lockstep``), each job's cycles cut to a few dozen seconds; then the report, and
its answer printed. Each job's output goes to ``OUT/<workload>/compare-ray.log``; the terminal gets its progress
lines. A failed job does not stop the others; the command then exits 1 naming every failed workload. At the end
it checks that nothing was left behind: no process started by these jobs (found by a tag in their environment,
which Ray's daemons and workers inherit) and no ``/dev/shm`` entry that appeared during the run and belongs to
no other live process.

    python scripts/compare_ray.py [--out DIR] [--workers N] [--backends a,b,...] [--seconds gym=60,...]
                                  [--workloads gym,dqn] [--dry-run]
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the workloads, in the order they run, and what selects each (the rest: the budget's sizes, conf/sizes/)
WORKLOADS = {
    "gym": ["scenario=gym"],
    "atari": ["scenario=atari"],
    "dqn": ["scenario=dqn"],
    "marl": ["scenario=marl", "scenario.env=synthetic"],
}
BACKENDS = "serial,reactor,ray_packed,ray_compiled_packed,capacity_lockstep"
#: seconds of cycles per job (``compare.max_seconds``); start-up (Ray's two instances: 20-50 s here) comes on top.
#: gym's Ray blocks last about ten times the others' (blocks are sized on the median backend), so its cycles are
#: the longest; dqn's reactor / ray_packed is the closest contest
SECONDS = "gym=120,atari=60,dqn=90,marl=60"
#: the environment variable every process of these jobs carries (the leftover check looks for it)
TAG = "REACTORBENCH_COMPARE_RAY"


def parse_seconds(text: str) -> dict[str, float]:
    out = {}
    for part in filter(None, text.split(",")):
        name, eq, value = part.partition("=")
        if not eq or name not in WORKLOADS:
            raise SystemExit(f"compare-ray: --seconds {text!r}: expected workload=seconds with workloads "
                             f"{', '.join(WORKLOADS)}")
        out[name] = float(value)
    return out


def job_command(python: str, name: str, out: Path, args: argparse.Namespace, seconds: float) -> list[str]:
    """The paired job of workload ``name``."""
    return [python, "-m", "harness", "compare", *WORKLOADS[name], f"budget={args.budget}", f"workers={args.workers}",
            f"backends=[{args.backends}]", f"compare.precision={args.precision}", f"compare.max_seconds={seconds:g}",
            f"hydra.run.dir={out / name}"]


def run_job(command: list[str], log_path: Path, env: dict[str, str]) -> int:
    """Runs one job, its whole output into ``log_path`` and its progress lines (``compare ...``) to the terminal."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(command) + "\n")
        log.flush()
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if line.startswith("compare "):
                print("  " + line.rstrip(), flush=True)
        return proc.wait()


def leftovers(tag_value: str, shm_before: dict[str, int]) -> list[str]:
    """What these jobs left: processes carrying the tag, and /dev/shm entries that appeared during the run whose
    owner (the pid in the name) is gone or is one of the tagged processes."""
    import psutil

    from harness.cleanup import first_pid, shm_snapshot, tagged_processes

    tagged = tagged_processes(TAG, tag_value)
    out = [f"process {pid} ({name})" for pid, name in sorted(tagged.items())]
    for name, inode in sorted(shm_snapshot().items()):
        if shm_before.get(name) == inode:
            continue
        pid = first_pid(name)
        if pid is not None and psutil.pid_exists(pid) and pid not in tagged:
            continue  # another live process's segment (another job or test on this machine)
        out.append(f"/dev/shm/{name}")
    return out


def ray_lines(run: Path) -> list[str]:
    """The reactor over each Ray layout in the run's paired jobs (per regime where the host shifted): configuration,
    cycles, the median of per-cycle ratios [95% interval] and the verdict, by the report's own reading
    (`harness.report.paired.analyze_paired`, whose ratios are Ray over the reactor: inverted here, the interval's
    ends swapped, a monotone map keeping both). Read from the rows, not from report.md, which shows only the first
    rows of its long tables."""
    from harness.report.build import config_names
    from harness.report.figures import shown as preset
    from harness.report.intervals import verdict, verdict_phrase
    from harness.report.load import load_results
    from harness.report.paired import analyze_paired, ratio_frame, split_paired

    rows, _ = split_paired(load_results([run]).rows)
    if not len(rows):
        return []
    jobs = analyze_paired(rows, config_names(rows))
    frame = ratio_frame(jobs)
    if not len(frame):
        return []
    presets = {j.job: j.presets for j in jobs}
    out = []
    for r in frame.to_dict("records"):
        num, den = str(r["numerator"]), str(r["denominator"])
        if not (num.startswith("ray") and den.startswith("reactor")) or not r["median"] > 0:
            continue
        names = presets.get(r["job"])
        layout, reactor = preset(num, names), preset(den, names)
        med, lo, hi = 1 / r["median"], 1 / r["ci_high"], 1 / r["ci_low"]
        reading = f"{med:.3g}x [{lo:.3g}, {hi:.3g}]" if lo == lo and hi == hi else f"{med:.3g}x (no interval)"
        word = verdict(lo, hi, float(r["margin"]))
        regime = "" if r["regime"] == "all" else f", {r['regime']}"
        out.append(f"  {r['name'].split(' [')[0]}: {reactor} / {layout} = {reading} ({r['cycles']} cycles{regime}; "
                   f"{verdict_phrase(word, reactor, layout, float(r['margin']), int(r['cycles']))})")
    return out


def shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make compare-ray", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/compare-ray") / time.strftime("%Y-%m-%d_%H-%M-%S"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--budget", default="local")
    parser.add_argument("--backends", default=BACKENDS)
    parser.add_argument("--precision", type=float, default=0.05,
                        help="a job also stops once reactor / serial is within +-this (compare.precision)")
    parser.add_argument("--seconds", default=SECONDS, help=f"seconds of cycles per workload (default {SECONDS})")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args(argv)
    seconds = {**parse_seconds(SECONDS), **parse_seconds(args.seconds)}
    names = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown:
        print(f"compare-ray: unknown workload {', '.join(unknown)} (workloads: {', '.join(WORKLOADS)})",
              file=sys.stderr)
        return 2
    out = args.out if args.out.is_absolute() else ROOT / args.out
    commands = {w: job_command(args.python, w, out, args, seconds[w]) for w in names}
    report = [args.python, "-m", "harness.report", str(out), "--answer"]
    if args.dry_run:
        for command in [*commands.values(), report]:
            print(shlex.join(command))
        return 0

    from harness.cleanup import shm_snapshot

    tag_value = f"{os.getpid()}-{time.time():.0f}"
    env = {**os.environ, TAG: tag_value}
    shm_before = shm_snapshot()
    t0 = time.monotonic()
    print(f"compare-ray: {', '.join(names)} in paired jobs of {args.backends} (workers={args.workers}, "
          f"budget={args.budget}) -> {shown(out)}", flush=True)
    failed = []
    for name, command in commands.items():
        started = time.monotonic()
        print(f"compare-ray: {name} ({seconds[name]:g} s of cycles after start-up) ...", flush=True)
        rc = run_job(command, out / name / "compare-ray.log", env)
        took = time.monotonic() - started
        if rc != 0:
            failed.append(f"{name} (exit {rc}; its log: {shown(out / name / 'compare-ray.log')})")
            print(f"compare-ray: {name} FAILED, exit {rc} after {took:.0f} s (log: {shown(out / name / 'compare-ray.log')})",
                  flush=True)
        else:
            print(f"compare-ray: {name} ok in {took:.0f} s", flush=True)
    if len(failed) < len(names):
        print("compare-ray: the report ...", flush=True)
        # (matplotlib's warnings about empty legends would bury the answer)
        rc = subprocess.run(report, cwd=ROOT, env={**env, "PYTHONWARNINGS": "ignore"}).returncode
        if rc != 0:
            failed.append(f"the report (exit {rc})")
        else:
            lines = ray_lines(out)
            if lines:
                print("\nThe reactor over each Ray layout (paired: median of per-cycle ratios [95% interval]; over 1: "
                      "the reactor is faster):\n" + "\n".join(lines))
    left = leftovers(tag_value, shm_before)
    if left:
        failed.append("left behind: " + ", ".join(left))
    total = time.monotonic() - t0
    print(f"\ncompare-ray: {len(names)} workload(s) in {total / 60:.1f} min; report: "
          f"{shown(out / 'report' / 'report.html')} (report.md beside it); each job's log: "
          f"{shown(out)}/<workload>/compare-ray.log")
    if failed:
        print("compare-ray: FAILED: " + "; ".join(failed), file=sys.stderr)
        return 1
    print("compare-ray: nothing left behind (no process of these jobs, no new /dev/shm entry)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
