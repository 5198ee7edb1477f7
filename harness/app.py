"""The Hydra app: ``python -m harness scenario=<name> backend=<name> budget=<smoke|local|paper> ...``.

Composition validates everything against the structured configs before a job starts, so a bad key or value
fails with Hydra's message naming it and writes no result file. Each job measures in a child process
(`harness.runner`) and writes ``results.csv`` into its Hydra output directory.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from harness.resource_checks import fit_errors
from harness.config import ConfigRangeError, check_ranges, register_configs
from harness.interpreter import interpreter_errors
from harness.margin import DEFAULT_MARGIN
from harness.progress import JobProgress
from harness.resume import decide
from harness.runner import MeasurementFailed, backend_variant, job_spec, run_measurement

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")

register_configs()


_TRIAL = re.compile(r"^[+~]*trial=")


def trial_first(args: list[str]) -> list[str]:
    """``args`` with every ``trial=`` override moved before the first override. Hydra's basic sweeper nests
    its sweeps in the order they are given, the first outermost; ``trial`` must be outermost for a sweep's
    backends to run interleaved (a, b, a, b; docs/harness.md) whatever the order on the command line."""
    trials = [a for a in args if _TRIAL.match(a)]
    rest = [a for a in args if not _TRIAL.match(a)]
    first = next((i for i, a in enumerate(rest) if "=" in a and not a.startswith("-")), len(rest))
    return rest[:first] + trials + rest[first:]


def job_summary(job_dir: Path) -> list[str]:
    """What a finished job measured, in a line or two: its median throughput with a 95% interval over the
    repetitions, and each repetition far off the others (`harness.report.jobline`)."""
    from harness.report.jobline import job_lines

    try:
        return job_lines(job_dir / "results.csv")
    except Exception as exc:  # noqa: BLE001 - the rows are written; a summary that fails must not fail the job
        return [f"(no summary: {type(exc).__name__}: {exc})"]


def _job_label(cfg: DictConfig) -> str:
    hc = HydraConfig.get()
    index = f"job {hc.job.num} " if hc.mode.name == "MULTIRUN" else ""
    variant = backend_variant(OmegaConf.to_container(cfg.backend, enum_to_str=True))
    on = "" if cfg.get("interpreter", "default") == "default" else f" on {cfg.interpreter}"
    return f"{index}{cfg.scenario.name}/{cfg.backend.name}:{variant} w={cfg.workers}{on}"


#: the config groups a user picks an option of (``conf/<group>/<option>.yaml``; ``sizes`` follows the budget)
GROUPS = ("scenario", "backend", "budget")
#: what each top-level key does (`harness.config.RunConfig`; a test checks every field has one)
KEY_HELP = {
    "workers": "parallelism: worker processes, threads or Ray CPUs (default 2)",
    "seed": "the seed of every env and policy (default 0)",
    "threads_per_worker": "BLAS / torch threads per worker process (default 1)",
    "quiet": "no progress bars (default false)",
    "resume": "skip a job whose folder holds all its ok rows of this config and commit (true, false, dirty-ok)",
    "trial": "a deliberate repeat within one sweep: trial=0,1,2 interleaves the backends (default 0)",
    "interpreter": "the measuring child's Python: default, ft (.venv-ft) or a path",
}
#: the subcommands (`harness.__main__`)
SUBCOMMANDS = {
    "graph": "python -m harness graph scenario=gym: the reactor program's dataflow graph",
    "compare": "python -m harness compare scenario=gym backends=serial,reactor,capacity_lockstep: paired blocks "
               "in one job (docs/harness.md, \"Paired blocks\")",
    "selftest": "python -m harness selftest: what this machine can resolve (A/A jobs; docs/report.md)",
}
#: what each budget is for and roughly how long a job takes on the 2-core development VM (a test checks every
#: conf/budget option has a line)
BUDGET_HELP = {
    "smoke": "tiny sizes: a job in seconds (Ray's start-up adds 5-30 s); tests and trying things out",
    "local": "the default and `make bench`'s: a standalone job 5 s to about a minute here, Ray's start-up included "
             "(make bench: about 90 minutes on 2 cores)",
    "paper": "the paper's sizes (e.g. gym: 15 envs, 10,000 rounds): hours per job on a small machine, days for all "
             "(make bench-paper prints an estimate first)",
}
#: what each backend preset is (a test checks every conf/backend option has a line; docs/harness.md has more)
BACKEND_HELP = {
    "serial": "the plain loop in one process: the reference every ratio is taken against",
    "reactor": "the reactor runtime's processes executor, at most one process per usable core",
    "reactor_per_worker": "the processes executor with one process per worker, even beyond the cores",
    "reactor_threads": "the reactor runtime's threads executor: one process, a crew of `workers` threads",
    "reactor_inline": "the reactor program's reactions run in the calling thread, one process",
    "ray": "Ray, the paper's layout: one actor per role, ray.get over all actors per round",
    "ray_compiled": "Ray Compiled Graph, one actor per role",
    "ray_packed": "Ray actors packed one per worker: Ray at its best on few cores",
    "ray_compiled_packed": "Ray Compiled Graph over one actor per worker",
    "vector": "gymnasium's AsyncVectorEnv (gym, atari)",
    "ale_vector": "ale-py's C++-threaded AtariVectorEnv (atari)",
    "puffer": "PufferLib's Multiprocessing vectorizer (gym, atari; standalone jobs only)",
    "puffer_overwork": "puffer with more workers than physical cores allowed (standalone jobs only)",
    "envpool": "EnvPool (atari; make install-envpool): a labelled reference, not the same frames",
    "rllib": "RLlib's own sampler, PPO's default module acting: a labelled reference, not the same work",
    "rllib_random": "RLlib's sampler with random actions: a labelled reference, not the same work",
    "capacity": "the measured ceiling: `workers` copies of the serial loop that never meet",
    "capacity_lockstep": "the synchronized ceiling: the same copies meeting once per round",
}
#: the ``compare.*`` settings of a paired job (`harness.compare.CompareRanges`; a test checks every field has a line),
#: each with its shipped default filled in from `harness.cycles.CompareSettings` when the help is printed (imported
#: there only: it brings scipy, a second of start-up that every ``python -m harness`` job would pay)
COMPARE_HELP = {
    "precision": "stop once the main ratio (the second backend over the first) is within +-this of its median "
                 "({precision:g})",
    "max_seconds": "or after this many seconds of cycles ({max_seconds:g}), start-up not counted",
    "min_cycles": "never stop before this many cycles ({min_cycles}; at least 6)",
    "block_s": "seconds of the median backend's block, which sets the rounds per block ({block_s:g})",
    "block_rounds": "rounds per block instead (0: from block_s)",
    "confidence": "of the intervals ({confidence:g})",
    "margin": "the resolution floor: a winner only where the interval clears 1 +- margin (unset: this machine's "
              "margin for the job's scenario and workers as `make selftest` stored it in results/machine/, where it "
              "ran the job's procedure (precision, min_cycles, block_*, confidence, respawn_*, min_sets, pin_single, "
              "start_order), "
              "else "
              "{default_margin:g})",
    "respawn_s": "restart every resident after this many seconds of cycles ({respawn_s:g}; 0: never); with "
                 "it on, the precision stop comes only where a set ends, from the min_sets-th on",
    "min_sets": "with respawning on, the fewest sets of processes before the precision stop ({min_sets})",
    "respawn_share": "the most of a job's time restarting may take ({respawn_share:g}: a respawn waits for "
                     "3x the last start; 0: no wait)",
    "pin_single": "run each cycle's single-process residents (serial) on one CPU, the next CPU each cycle (false)",
    "start_order": "how each set of processes is started: shuffled (an order drawn with the seed, reversed in the "
                   "next set) or listed (the listed order, reversed in every other set) ({start_order})",
    "extra_work": "per listed backend, injected extra work (e.g. [0,0.03]: the second 3% slower; for A/A checks)",
}
#: what a paired job refuses (`harness.compare.job_configs`)
COMPARE_REFUSES = ("puffer and puffer_overwork (PufferLib's workers busy-wait: measure them in standalone jobs); "
                   "a Ray or RLlib resident joining an existing cluster (backend.address: a paired job stops its "
                   "processes between blocks, so it starts its own instance)")


def options(group: str) -> list[str]:
    """The options of a config group a user can type: ``conf/<group>/*.yaml`` (never the ``*_schema`` entries
    the harness registers behind them)."""
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))


def _budget_sizes(name: str) -> str:
    """``rounds x repetitions`` of ``conf/budget/<name>.yaml`` (before a scenario's sizes override them)."""
    try:
        b = OmegaConf.load(Path(CONF_DIR) / "budget" / f"{name}.yaml")
        return (f"{b.rounds} rounds x {b.repetitions} repetitions after {b.warmup_rounds} warm-up, timeout "
                f"{b.timeout_s:g} s; ")
    except Exception:  # noqa: BLE001 - a help line must not fail
        return ""


def _yaml_comment(group: str, name: str) -> str:
    """The first comment line of ``conf/<group>/<name>.yaml`` (a preset without a line in the tables above)."""
    try:
        first = (Path(CONF_DIR) / group / f"{name}.yaml").read_text().splitlines()[0]
    except (OSError, IndexError):
        return ""
    return first.lstrip("# ").strip() if first.startswith("#") else ""


def help_text() -> str:
    """``python -m harness --help``: the groups' real options, what each budget and backend preset is, the run's
    keys, the subcommands, and a paired job's settings and refusals."""
    from harness.config import RunConfig
    import dataclasses

    lines = ["reactorbench: one job = one scenario on one backend under one budget, measured in a child process.",
             "", "usage:", "  python -m harness [group=option ...] [key=value ...]        one job",
             "  python -m harness -m backend=a,b workers=1,2 [...]            a sweep (every combination)",
             *[f"  {text}" for text in SUBCOMMANDS.values()],
             "  make compare-ray: the reactor against Ray on gym, atari, dqn and marl in paired jobs, then the answer "
             "table (about 10 min on 2 cores; README, Quick start)",
             "", "groups (group=option):"]
    for group in GROUPS:
        lines.append(f"  {group}: {', '.join(options(group))}")
    lines += ["", "  each group's knobs: <group>.<key>=value (scenarios/configs.py, backends/<name>.py, "
              "harness/config.py)", "",
              "budgets (budget=...; rounds and repetitions as below unless conf/sizes/<scenario>_<budget>.yaml sets "
              "the scenario's own):"]
    lines += [f"  {name}: {_budget_sizes(name)}{BUDGET_HELP.get(name, '')}" for name in options("budget")]
    lines += ["", "backend presets (backend=...; start-up is never timed: Ray's takes 5-30 s here, the others' under "
              "a second):"]
    lines += [f"  {name}: {BACKEND_HELP.get(name) or _yaml_comment('backend', name)}" for name in options("backend")]
    lines += ["", "keys:"]
    fields = [f.name for f in dataclasses.fields(RunConfig) if f.name not in GROUPS]
    lines += [f"  {name}: {KEY_HELP.get(name, '')}" for name in fields]
    lines += ["", "compare (python -m harness compare backends=[a,b,...] ...): one paired job, every backend resident, "
              "alternating blocks; it runs compare.max_seconds of cycles after start-up (about 5 min a job with the "
              "defaults and Ray) or less once compare.precision is reached. Settings:"]
    from harness.cycles import CompareSettings

    shipped = {**dataclasses.asdict(CompareSettings()), "default_margin": DEFAULT_MARGIN}
    lines += [f"  compare.{name}: {text.format_map(shipped)}" for name, text in COMPARE_HELP.items()]
    lines += [f"  refuses: {COMPARE_REFUSES}"]
    lines += ["", "docs/harness.md has the details; `--cfg job` prints a job's composed config; `--hydra-help`: "
              "Hydra's own options."]
    return "\n".join(lines)


def unknown_options(args: list[str]) -> list[str]:
    """A message per ``group=option`` among ``args`` whose option does not exist, with the nearest names
    (`difflib`); empty when every option exists."""
    import difflib

    out = []
    for arg in args:
        key, eq, value = arg.lstrip("+~").partition("=")
        if not eq or key not in GROUPS:
            continue
        known = options(key)
        for v in value.split(","):
            v = v.strip()
            if v and v not in known:
                near = difflib.get_close_matches(v, known, n=3, cutoff=0.5)
                out.append(f"unknown {key} {v!r}" + (f"; did you mean {', '.join(near)}?" if near else "")
                           + f" ({key}s: {', '.join(known)})")
    return out


def main() -> None:
    """The command line's entry point: our own ``--help`` and misspelled-option check, `trial_first`, then the
    Hydra app."""
    args = sys.argv[1:]
    if any(a in ("--help", "-h") for a in args):
        print(help_text())
        return
    problems = unknown_options(args)
    if problems:
        print("\n".join(f"harness: {p}" for p in problems), file=sys.stderr)
        raise SystemExit(2)
    sys.argv[1:] = trial_first(args)
    run_job()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def run_job(cfg: DictConfig) -> None:
    """One job (Hydra calls it once per job of a sweep)."""
    job_dir = Path(HydraConfig.get().runtime.output_dir)
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    check_ranges(plain)  # already checked by harness.checks.RangeCheck; kept for launchers that skip callbacks
    if fit_errors(plain) or interpreter_errors(plain):
        raise ConfigRangeError("out of range: " + "; ".join(fit_errors(plain) + interpreter_errors(plain)))
    # the backend preset the job was run with (``backend=reactor_threads``), stored in its rows' metadata
    plain["preset"] = HydraConfig.get().runtime.choices.get("backend")
    reused = decide(job_dir, job_spec(plain), resume=cfg.resume)
    if reused:
        print(f"{_job_label(cfg)}: reused, {reused} ok rows of the same config and code in {job_dir}",
              file=sys.stderr)
        return
    rounds = cfg.budget.warmup_rounds + cfg.budget.rounds * cfg.budget.repetitions
    with JobProgress(_job_label(cfg), total=rounds, quiet=cfg.quiet) as progress:
        outcome = run_measurement(plain, job_dir, on_progress=progress.update)
    summary = f"{_job_label(cfg)}: {outcome.status}, {outcome.rows} rows -> {job_dir / 'results.csv'}"
    print(summary, file=sys.stderr)
    for line in job_summary(job_dir):
        print(f"  {line}", file=sys.stderr)
    if outcome.status not in ("ok", "skipped"):  # skipped: the row says why (harness.interpreter)
        raise MeasurementFailed(f"{outcome.status}: {outcome.message}")
