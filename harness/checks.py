"""Range checks before anything runs: a Hydra callback that refuses out-of-range knobs of every job.

It also refuses what cannot fit on this machine (`harness.resource_checks`: a payload larger than /dev/shm or
than memory).

Hydra's structured configs already refuse unknown keys, wrong types and unknown options at composition; the
ranges (``workers >= 1``, ``budget.rounds >= 1``, probabilities in [0, 1], ...) live in
`harness.config.RANGES` (a backend's in its schema's field metadata, `backends.base.BackendConfig`).
``on_run_start`` and ``on_multirun_start`` run before Hydra creates any output
folder, so a bad value, even in one job of a sweep, writes nothing and runs nothing.
"""
from __future__ import annotations

import sys
from typing import Any, NoReturn

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness.config import ConfigRangeError, range_errors
from harness.interpreter import interpreter_errors
from harness.resource_checks import fit_errors


def sweep_job_overrides(task_overrides: list[str]) -> list[list[str]]:
    """The override list of every job a basic sweep over ``task_overrides`` will run."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    parsed = OverridesParser.create().parse_overrides(task_overrides)
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


class RangeCheck(Callback):
    """Fails a run or a whole sweep, before its first job, when any job has an out-of-range knob."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        job = _job_part(config)
        errors = range_errors(job) + fit_errors(job) + interpreter_errors(job)
        if errors:
            _refuse("out of range: " + "; ".join(errors))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra import compose

        sweeper = str(OmegaConf.select(config, "hydra.sweeper._target_", default=""))
        if not sweeper.endswith("BasicSweeper"):  # another sweeper's syntax: each job checks itself (app.run_job)
            return
        config_name = kwargs.get("config_name") or "config"
        task = list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
        problems: list[str] = []
        for overrides in sweep_job_overrides(task):
            job = _job_part(compose(config_name=config_name, overrides=overrides))
            errors = range_errors(job) + fit_errors(job) + interpreter_errors(job)
            if errors:
                problems.append(f"job [{' '.join(overrides)}]: " + "; ".join(errors))
        if problems:
            _refuse("out of range, nothing was run:\n  " + "\n  ".join(problems))


def _refuse(message: str) -> NoReturn:
    """Stop the app. Hydra turns a callback's exception into a warning and goes on, so exit instead."""
    print(f"Error: {ConfigRangeError.__name__}: {message}", file=sys.stderr)
    raise SystemExit(1)


def _job_part(config: DictConfig) -> dict[str, Any]:
    """The job's keys without the ``hydra`` node (which cannot be resolved outside a job)."""
    return {k: OmegaConf.to_container(config[k], resolve=True, enum_to_str=True)
            if OmegaConf.is_config(config[k]) else config[k]
            for k in config if k != "hydra"}
