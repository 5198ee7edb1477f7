"""Soak: the Gym workload on the reactor for a long time, recording memory over time: no growth, no leak.

    python -m harness.soak --minutes 30 [--out results/soak/<time>] [--backend reactor] [--num-envs 15]

One harness job (the same runner, child process, clean-up and memory sampler as every benchmark), planned
from a short calibration run for three times ``--minutes`` in repetitions of about ``--repetition-s`` seconds
each, and stopped at ``--minutes`` as Ctrl-C stops a job: SIGINT to the measuring child, which stops its
backend (``backend.stop``: workers joined, segments unlinked) and exits; a busy machine's speed varies too
much for a planned number of rounds to last a given time. The
runner's sampler writes RSS (summed over the process tree) and /dev/shm bytes every 2 s to
``memory.csv``; this script then compares the first and the last tenth of the run after a warm-up, fits a
slope, checks that the tree left no process and no /dev/shm entry behind on its clean finish, and writes
``soak.json`` and ``soak.md``. Exit status 1 when any check fails.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psutil

from harness.memory import MEMORY_FILE
from harness.runner import run_measurement

#: the soak's rounds are planned at this multiple of the calibrated speed (a quieter machine runs faster), for
#: PLAN_FACTOR times the duration; the soak is stopped at its duration
SIZING_MARGIN = 1.3
PLAN_FACTOR = 3
#: allowed drift of the tree's RSS between the first and last tenth (after warm-up): allocator noise, not a leak
RSS_DRIFT_LIMIT = 0.05
#: allowed growth of /dev/shm in use (MB): the reactor's ports are fixed-size, so any growth is a leak
SHM_DRIFT_LIMIT_MB = 1.0


def job_config(backend: str, num_envs: int, rounds: int, repetitions: int, timeout_s: float) -> dict[str, Any]:
    executor = {"reactor": "processes", "reactor_threads": "threads", "reactor_inline": "inline"}[backend]
    return {
        "scenario": {"name": "gym", "env_id": "CartPole-v1", "num_envs": num_envs},
        "backend": {"name": "reactor", "executor": executor},
        "budget": {"name": "soak", "rounds": rounds, "warmup_rounds": 20, "repetitions": repetitions,
                   "timeout_s": timeout_s},
        "workers": 2, "seed": 0, "threads_per_worker": 1, "quiet": True,
    }


def analyse(memory: pd.DataFrame, warmup_s: float) -> dict[str, float]:
    """RSS and /dev/shm at the start and end of the steady part, their drift and the fitted RSS slope."""
    # after the warm-up, while the tree has its running size (not the last seconds of the stop), and without
    # the final 10 s (the stop and the harness's last look)
    steady = memory[(memory.t_s >= warmup_s) & (memory.t_s <= memory.t_s.max() - 10)]
    steady = steady[steady.processes == steady.processes.mode().iloc[0]] if len(steady) else steady
    if len(steady) < 10:
        steady = memory
    tenth = max(1, len(steady) // 10)
    first, last = steady.iloc[:tenth], steady.iloc[-tenth:]
    slope = np.polyfit(steady.t_s / 3600, steady.rss_mb, 1)[0] if len(steady) > 2 else math.nan
    return {
        "samples": int(len(memory)),
        "rss_start_mb": float(first.rss_mb.mean()), "rss_end_mb": float(last.rss_mb.mean()),
        "rss_peak_mb": float(memory.rss_mb.max()),
        "rss_drift": float(last.rss_mb.mean() / first.rss_mb.mean() - 1),
        "rss_slope_mb_per_h": float(slope),
        "shm_start_mb": float(first.shm_mb.mean()), "shm_end_mb": float(last.shm_mb.mean()),
        "shm_peak_mb": float(memory.shm_mb.max()),
        "processes_start": int(first.processes.median()), "processes_end": int(last.processes.median()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="length of the soak (default 30)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default results/soak/<time>)")
    ap.add_argument("--backend", default="reactor", choices=["reactor", "reactor_threads", "reactor_inline"])
    ap.add_argument("--num-envs", type=int, default=15)
    ap.add_argument("--repetition-s", type=float, default=30.0, help="seconds per repetition (one row each)")
    ap.add_argument("--max-minutes", type=float, default=None, help="time limit of the soak job (default 2x)")
    ap.add_argument("--warmup-s", type=float, default=None, help="ignored start (default: 5%% of the run)")
    args = ap.parse_args(argv)
    if args.minutes <= 0 or args.num_envs < 1 or args.repetition_s <= 0:
        ap.error("--minutes and --repetition-s must be > 0, --num-envs >= 1")
    stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    out = args.out or Path("results/soak") / stamp
    out.mkdir(parents=True, exist_ok=True)

    # calibration: rounds per second of this backend on this machine now
    # planned for 3x --minutes at the faster calibration speed, stopped at --minutes (below); --max-minutes
    # bounds it in case the stop is not seen (past it the job ends as a timeout, a failed check)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the child must not inherit an ignored SIGINT
    cal = run_measurement(job_config(args.backend, args.num_envs, 1000, 2, 600), out / "calibration")
    if cal.status != "ok":
        print(f"calibration failed: {cal.message}", file=sys.stderr)
        return 1
    cal_rows = pd.read_csv(out / "calibration" / "results.csv")
    rounds_per_s = float((cal_rows.rounds / cal_rows.seconds).max()) * SIZING_MARGIN
    duration_s = args.minutes * 60
    rounds = max(1, int(rounds_per_s * min(args.repetition_s, duration_s)))
    repetitions = max(1, math.ceil(PLAN_FACTOR * duration_s / (rounds / rounds_per_s)))
    print(f"soak: {repetitions} repetitions of {rounds} rounds ({rounds_per_s:.0f} rounds/s calibrated), "
          f"~{args.minutes:g} min -> {out}", file=sys.stderr)
    started = _dt.datetime.now(_dt.timezone.utc)
    max_minutes = args.max_minutes if args.max_minutes is not None else 2 * args.minutes
    stopper = Stopper(out / "soak", duration_s)
    stopper.start()
    outcome = run_measurement(job_config(args.backend, args.num_envs, rounds, repetitions,
                                         timeout_s=max_minutes * 60), out / "soak")
    ended = _dt.datetime.now(_dt.timezone.utc)
    stopper.cancel()
    stopped = stopper.sent and outcome.status == "error" and "KeyboardInterrupt" in outcome.message

    memory = pd.read_csv(out / "soak" / MEMORY_FILE)
    rows = pd.read_csv(out / "soak" / "results.csv", keep_default_na=False)
    ok = rows[rows.status == "ok"]
    figures = analyse(memory, args.warmup_s if args.warmup_s is not None else 0.05 * memory.t_s.max())
    tput = ok.throughput.astype(float)
    summary = {
        "backend": args.backend, "num_envs": args.num_envs, "minutes_planned": args.minutes,
        "started_at": started.isoformat(timespec="seconds"), "ended_at": ended.isoformat(timespec="seconds"),
        "minutes_run": round((ended - started).total_seconds() / 60, 1),
        "status": "stopped at its duration" if stopped else outcome.status, "message": outcome.message,
        "repetitions_planned": repetitions, "repetitions_ok": int(len(ok)), "rounds_per_repetition": rounds,
        "env_steps": int(ok.units.astype(int).sum()),
        "throughput_first": float(tput.iloc[0]) if len(tput) else math.nan,
        "throughput_last": float(tput.iloc[-1]) if len(tput) else math.nan,
        "leaked_processes": outcome.leftover_processes, "leaked_shm_entries": outcome.leftover_shm,
        **figures,
    }
    checks = {
        "finished ok or stopped cleanly at its duration": (outcome.status == "ok" and len(ok) == repetitions)
        or stopped,
        f"ran at least {args.minutes:g} min": summary["minutes_run"] >= args.minutes,
        f"RSS growth < {RSS_DRIFT_LIMIT:.0%}": figures["rss_drift"] < RSS_DRIFT_LIMIT,
        f"/dev/shm growth < {SHM_DRIFT_LIMIT_MB} MB": figures["shm_end_mb"] - figures["shm_start_mb"] < SHM_DRIFT_LIMIT_MB,
        "no process left": outcome.leftover_processes == 0,
        "no /dev/shm entry left": not outcome.leftover_shm,
        "process count steady": figures["processes_end"] == figures["processes_start"],
    }
    summary["checks"] = checks
    summary["passed"] = all(checks.values())
    (out / "soak.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "soak.md").write_text(render(summary))
    print(render(summary))
    return 0 if summary["passed"] else 1


class Stopper(threading.Thread):
    """Sends SIGINT to the soak's measuring child once ``duration_s`` have passed (Ctrl-C, as a user would)."""

    def __init__(self, job_dir: Path, duration_s: float):
        super().__init__(daemon=True)
        self.job_dir, self.duration_s = str(job_dir), duration_s
        self.sent = False
        self._cancel = threading.Event()

    def run(self) -> None:
        if self._cancel.wait(self.duration_s):
            return
        for proc in psutil.Process(os.getpid()).children():
            try:
                cmd = proc.cmdline()
            except psutil.Error:
                continue
            if "harness.measure" in cmd and self.job_dir in cmd:
                proc.send_signal(signal.SIGINT)
                self.sent = True

    def cancel(self) -> None:
        self._cancel.set()


def render(s: dict[str, Any]) -> str:
    lines = [
        f"# Soak: gym on {s['backend']} ({s['num_envs']} envs), {s['minutes_run']} min "
        f"({s['started_at']} .. {s['ended_at']})", "",
        f"- status {s['status']}: {s['repetitions_ok']}/{s['repetitions_planned']} repetitions of "
        f"{s['rounds_per_repetition']} rounds, {s['env_steps']:,} env steps; throughput first/last repetition "
        f"{s['throughput_first']:.0f} / {s['throughput_last']:.0f} env_steps/s",
        f"- RSS of the tree (summed): {s['rss_start_mb']:.1f} MB -> {s['rss_end_mb']:.1f} MB (drift "
        f"{s['rss_drift']:+.2%}, slope {s['rss_slope_mb_per_h']:+.1f} MB/h, peak {s['rss_peak_mb']:.1f} MB)",
        f"- /dev/shm in use: {s['shm_start_mb']:.2f} MB -> {s['shm_end_mb']:.2f} MB (peak {s['shm_peak_mb']:.2f} MB)",
        f"- processes in the tree: {s['processes_start']} -> {s['processes_end']}; left after the finish: "
        f"{s['leaked_processes']} processes, {len(s['leaked_shm_entries'])} /dev/shm entries",
        f"- {s['samples']} memory samples (memory.csv)", "",
        "| check | result |", "|---|---|",
        *[f"| {k} | {'pass' if v else 'FAIL'} |" for k, v in s["checks"].items()], "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
