"""The paper's configurations in one sweep (`make bench-paper`, and at budget=local inside `make bench`).

Gym (CartPole-v1, Blackjack-v1, Pendulum-v1), Atari (Pong-v4, MsPacman-v4, SpaceInvaders-v4), DQN
(minibatch 250, 500, 1,000, 2,000) and multi-agent inference on TrafficJunction (4 and 10 agents): one
Hydra multirun per scenario over the given backends. ``estimate`` times a few serial rounds of every
configuration at the chosen budget's sizes (one worker role probed, its time scaled to the bank) and
prints how long the sweep will take; ``run`` prints that estimate first, then runs the sweeps.

    python scripts/paper_bench.py estimate --budget paper --backends serial,reactor,ray --workers 32
    python scripts/paper_bench.py run --budget paper --backends serial,reactor,ray --workers 32 --out results/bench/paper

``--job-seconds S`` runs a subset that fits a small machine: every configuration at the paper's sizes and
settings, but with its rounds per repetition cut so that one serial job lasts about ``S`` seconds (from the
probe; never more than the budget's own rounds). The rows keep their real ``budget.rounds``, so the report's
paper table lists the shortened rounds as a difference from the authors' settings, like any other option.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: scenario -> (the sweep's overrides, one configuration per value of the swept key)
SWEEPS: dict[str, tuple[str, list[str]]] = {
    "gym": ("scenario.env_id", ["CartPole-v1", "Blackjack-v1", "Pendulum-v1"]),
    "atari": ("scenario.env_id", ["Pong-v4", "MsPacman-v4", "SpaceInvaders-v4"]),
    "dqn": ("scenario.minibatch", ["250", "500", "1000", "2000"]),
    "marl": ("scenario.num_agents", ["4", "10"]),
}
#: overrides that make budget=local run the paper's workload too (budget=paper sets them already)
FIXED: dict[str, list[str]] = {
    "marl": ["scenario.env=traffic_junction", "scenario.policy=trained"],
}
#: probe at least this many rounds and this long (cheap rounds are noisy), at most PROBE_MAX rounds
PROBE_ROUNDS, PROBE_SECONDS, PROBE_MAX = 3, 0.5, 500
#: a subset job keeps at least this many timed rounds per repetition (and as many warm-up rounds, at most)
SUBSET_MIN_ROUNDS = 20


def compose(scenario: str, budget: str, extra: list[str]) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from harness.app import CONF_DIR

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=[f"scenario={scenario}", f"budget={budget}", *extra])
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)


def probe_round_seconds(cfg: dict) -> float:
    """Serial seconds of one round: the server's scatter and gather plus one probed worker's step x the bank."""
    from omegaconf import OmegaConf

    from scenarios import make_scenario
    from backends.base import split_messages
    from scenarios.base import finish_round

    scenario = make_scenario(OmegaConf.create(cfg["scenario"]), cfg["seed"])
    server, worker = scenario.make_server(), scenario.make_worker(0)
    relay = scenario.make_relay() if scenario.has_relay() else None
    n = scenario.num_workers
    try:
        total_s, done = 0.0, 0
        for r in range(PROBE_MAX + 1):
            if done >= PROBE_ROUNDS and total_s >= PROBE_SECONDS:
                break
            t0 = time.perf_counter()
            msg = split_messages(server.scatter(), n)[0]
            t1 = time.perf_counter()
            result = worker.step(msg)
            t2 = time.perf_counter()
            server.gather([result] * n)
            finish_round(server, relay)
            t3 = time.perf_counter()
            if r:  # the first round warms up lazy initialization
                total_s += (t1 - t0) + (t3 - t2) + n * (t2 - t1)
                done += 1
        return total_s / max(1, done)
    finally:
        worker.close()
        server.close()


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def subset_budget(budget: dict, round_s: float, job_seconds: float) -> dict[str, int]:
    """Rounds and warm-up rounds of a subset job: a serial job of about ``job_seconds`` (at least
    ``SUBSET_MIN_ROUNDS`` rounds per repetition, never more than the budget's own)."""
    reps = int(budget["repetitions"])
    wanted = int(job_seconds / max(round_s * reps, 1e-9))
    rounds = min(int(budget["rounds"]), max(SUBSET_MIN_ROUNDS, wanted))
    return {"rounds": rounds, "warmup_rounds": min(int(budget["warmup_rounds"]), rounds)}


def configurations(budget: str, job_seconds: float | None = None):
    """Yield (scenario, swept key, its value, overrides, resolved config, probed serial round seconds) for
    every configuration;
    with ``job_seconds``, the overrides shorten the rounds (`subset_budget`)."""
    for scenario, (key, values) in SWEEPS.items():
        for value in values:
            overrides = [*FIXED.get(scenario, []), f"{key}={value}"]
            cfg = compose(scenario, budget, overrides)
            round_s = probe_round_seconds(cfg)
            if job_seconds is not None:
                cut = subset_budget(cfg["budget"], round_s, job_seconds)
                overrides += [f"budget.{k}={v}" for k, v in cut.items()]
                cfg["budget"].update(cut)
            yield scenario, key, value, overrides, cfg, round_s


def estimate(budget: str, backends: list[str], workers: int, job_seconds: float | None = None) -> list:
    """Print, per configuration, the serial round time and the sweep's expected duration; return the
    configurations (as `configurations` yields them)."""
    cores = os.cpu_count() or 1
    total_low = total_high = 0.0
    subset = "" if job_seconds is None else f", subset: serial jobs of about {job_seconds:g} s"
    print(f"estimate for budget={budget}, backends {','.join(backends)}, workers={workers}, {cores} cores "
          f"(probe: >= {PROBE_ROUNDS} serial rounds and {PROBE_SECONDS} s each){subset}", flush=True)
    configs = []
    for scenario, key, value, overrides, cfg, round_s in configurations(budget, job_seconds):
        configs.append((scenario, value, overrides))
        b = cfg["budget"]
        rounds = b["warmup_rounds"] + b["rounds"] * b["repetitions"]
        serial_s = rounds * round_s
        parallel = [x for x in backends if x != "serial"]
        # parallel backends: between perfect scaling over min(workers, cores) and no gain at all
        low = serial_s * ("serial" in backends) + len(parallel) * serial_s / max(1, min(workers, cores))
        high = serial_s * len(backends)
        total_low += low
        total_high += high
        print(f"  {scenario:5s} {key}={value:16s} {rounds:7d} rounds x {round_s * 1e3:8.2f} ms serial "
              f"-> {duration(low)} .. {duration(high)}", flush=True)
    print(f"total: about {duration(total_low)} .. {duration(total_high)} (plus start-up per job)", flush=True)
    return configs


def run(budget: str, backends: list[str], workers: int, out: Path, job_seconds: float | None = None) -> int:
    """The sweeps: one multirun per scenario over its configurations, or (a subset, whose rounds differ
    per configuration) one multirun per configuration."""
    configs = estimate(budget, backends, workers, job_seconds)
    commands = []
    if job_seconds is None:
        for scenario, (key, values) in SWEEPS.items():
            commands.append((scenario, [*FIXED.get(scenario, []), f"{key}={','.join(values)}"], out / scenario))
    else:
        for scenario, value, overrides in configs:
            commands.append((scenario, overrides, out / scenario / value))
    failed = 0
    for scenario, overrides, where in commands:
        args = [sys.executable, "-m", "harness", "-m", f"budget={budget}", f"workers={workers}",
                f"scenario={scenario}", *overrides, f"backend={','.join(backends)}", f"hydra.sweep.dir={where}"]
        print(" ".join(args[1:]), flush=True)
        failed += subprocess.run(args, cwd=REPO).returncode != 0
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["estimate", "run"])
    parser.add_argument("--budget", default="paper")
    parser.add_argument("--backends", default="serial,reactor,ray")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "bench" / "paper")
    parser.add_argument("--job-seconds", type=float, default=None,
                        help="a subset: the paper's sizes with rounds cut to serial jobs of about this long")
    args = parser.parse_args()
    if args.job_seconds is not None and args.job_seconds <= 0:
        parser.error(f"--job-seconds must be > 0, got {args.job_seconds}")
    backends = [b for b in args.backends.split(",") if b]
    if args.action == "estimate":
        estimate(args.budget, backends, args.workers, args.job_seconds)
        return 0
    return run(args.budget, backends, args.workers, args.out, args.job_seconds)


if __name__ == "__main__":
    sys.exit(main())
