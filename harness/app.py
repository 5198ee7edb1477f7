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


def _job_label(cfg: DictConfig) -> str:
    hc = HydraConfig.get()
    index = f"job {hc.job.num} " if hc.mode.name == "MULTIRUN" else ""
    variant = backend_variant(OmegaConf.to_container(cfg.backend, enum_to_str=True))
    on = "" if cfg.get("interpreter", "default") == "default" else f" on {cfg.interpreter}"
    return f"{index}{cfg.scenario.name}/{cfg.backend.name}:{variant} w={cfg.workers}{on}"


def main() -> None:
    """The command line's entry point: `trial_first`, then the Hydra app."""
    sys.argv[1:] = trial_first(sys.argv[1:])
    run_job()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def run_job(cfg: DictConfig) -> None:
    """One job (Hydra calls it once per job of a sweep)."""
    job_dir = Path(HydraConfig.get().runtime.output_dir)
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    check_ranges(plain)  # already checked by harness.checks.RangeCheck; kept for launchers that skip callbacks
    if fit_errors(plain) or interpreter_errors(plain):
        raise ConfigRangeError("out of range: " + "; ".join(fit_errors(plain) + interpreter_errors(plain)))
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
    if outcome.status not in ("ok", "skipped"):  # skipped: the row says why (harness.interpreter)
        raise MeasurementFailed(f"{outcome.status}: {outcome.message}")
