"""Structured configs for the Hydra app, registered in Hydra's ConfigStore.

Every group option in ``conf/`` names one of these schemas in its defaults list, so a misspelled key, an
unknown option or a value of the wrong type fails at composition time, before anything runs, with Hydra's
message naming the key. The run, budget and scenario schemas are here (scenarios' in `scenarios.configs`);
each backend's schema is its module's ``SCHEMA``, found by the registry in `backends`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from backends import backend_names, backend_schema, backend_schemas
from harness.resume import resume_errors
from scenarios.configs import (
    ActorsConfig,
    AtariConfig,
    DqnConfig,
    FaultConfig,
    GymConfig,
    MarlConfig,
    ObjectSizeConfig,
    OverheadConfig,
)

SCENARIO_SCHEMAS = {
    "gym": GymConfig,
    "atari": AtariConfig,
    "dqn": DqnConfig,
    "marl": MarlConfig,
    "actors": ActorsConfig,
    "object_size": ObjectSizeConfig,
    "overhead": OverheadConfig,
    "fault": FaultConfig,
}


@dataclass
class BudgetConfig:
    """How much work one job does: rounds per repetition, untimed warm-up rounds, repetitions, timeout."""

    name: str = MISSING
    rounds: int = MISSING
    warmup_rounds: int = MISSING
    repetitions: int = MISSING
    #: hard wall-clock limit for the whole measurement (start-up included); the child is killed past it
    timeout_s: float = MISSING


@dataclass
class RunConfig:
    """One job: a scenario on a backend under a budget, with the parallelism and the seed."""

    scenario: Any = MISSING
    backend: Any = MISSING
    budget: BudgetConfig = MISSING
    #: parallelism: worker processes, threads or Ray CPUs
    workers: int = 2
    seed: int = 0
    #: BLAS / torch threads per worker process (recorded in every row)
    threads_per_worker: int = 1
    #: no progress bars
    quiet: bool = False
    #: skip the job when its folder already holds all its ok rows for this config and a clean tree at this git
    #: sha: true, false or dirty-ok (reuse rows of, or on, a tree with uncommitted changes too; harness.resume)
    resume: Any = True
    #: a deliberate repeat of the same job within one sweep: ``trial=0,1,2 backend=a,b`` runs a, b, a, b, a, b
    #: (Hydra sweeps the last key fastest), spreading every backend over the same stretch of time on a machine
    #: whose speed drifts; the report pools the trials (docs/report.md, "Trials")
    trial: int = 0
    #: the measuring child's Python: ``default`` (this one), ``ft`` (the free-threaded ``.venv-ft``, made by
    #: ``make install-ft``) or an interpreter's path (harness.interpreter); rows record its version and GIL
    interpreter: str = "default"


def slurm_minutes(timeout_s: float) -> int:
    """A Slurm time limit past the harness's own timeout: it, not Slurm, must end a job (and write its row)."""
    return int(math.ceil(float(timeout_s) / 60)) + 10


def register_configs() -> None:
    """Register the schemas; ``conf/<group>/<option>.yaml`` files extend ``<option>_schema`` entries."""
    OmegaConf.register_new_resolver("rb_slurm_minutes", slurm_minutes, replace=True)
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    for name, schema in SCENARIO_SCHEMAS.items():
        cs.store(group="scenario", name=f"{name}_schema", node=schema)
    for name, schema in backend_schemas().items():  # every module in backends/ (docs/design.md)
        cs.store(group="backend", name=f"{name}_schema", node=schema)
    cs.store(group="budget", name="budget_schema", node=BudgetConfig)


def config_object(schema: type, values: dict[str, Any]) -> Any:
    """A typed dataclass instance of ``schema`` from plain values (enums restored), as roles and backends
    expect: what the measuring child and ``python -m harness graph`` build from a composed config."""
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), values))


# --- Ranges: every numeric knob of every schema, checked before anything runs ------------------------------


@dataclass(frozen=True)
class Range:
    """Bounds of one numeric field; ``None`` (where the schema allows it) is always accepted."""

    ge: Optional[float] = None
    gt: Optional[float] = None
    le: Optional[float] = None

    def violation(self, value: float) -> Optional[str]:
        """Why ``value`` is out of range (e.g. ``must be >= 1``), or None when it is in range."""
        if self.ge is not None and value < self.ge:
            return f"must be >= {self.ge:g}"
        if self.gt is not None and value <= self.gt:
            return f"must be > {self.gt:g}"
        if self.le is not None and value > self.le:
            return f"must be <= {self.le:g}"
        return None


AT_LEAST_1 = Range(ge=1)
AT_LEAST_0 = Range(ge=0)
POSITIVE = Range(gt=0)
PROBABILITY = Range(ge=0, le=1)

#: schema -> numeric field -> its range. A subclass inherits its parents' entries (looked up along the MRO).
#: A backend schema declares its ranges in its own fields' metadata instead (``metadata={"range": {...}}``,
#: `backends.base.BackendConfig`), so that a backend is one file. ``tests/harness/test_ranges.py`` fails for
#: any int or float field of any schema that has no range here or in its metadata.
RANGES: dict[type, dict[str, Range]] = {
    RunConfig: {"workers": AT_LEAST_1, "seed": AT_LEAST_0, "threads_per_worker": AT_LEAST_1, "trial": AT_LEAST_0},
    BudgetConfig: {"rounds": AT_LEAST_1, "warmup_rounds": AT_LEAST_0, "repetitions": AT_LEAST_1,
                   "timeout_s": POSITIVE},
    GymConfig: {"num_envs": AT_LEAST_1},
    AtariConfig: {"num_envs": AT_LEAST_1},
    DqnConfig: {"num_rollouts": AT_LEAST_1, "steps_per_round": AT_LEAST_1, "epsilon": PROBABILITY,
                "hidden": AT_LEAST_1, "buffer_capacity": AT_LEAST_1, "minibatch": AT_LEAST_1, "lr": POSITIVE,
                "gamma": PROBABILITY, "target_sync_every": AT_LEAST_1, "eval_episodes": AT_LEAST_0},
    MarlConfig: {"num_agents": AT_LEAST_1, "hidden": AT_LEAST_1, "synthetic_obs_dim": AT_LEAST_1,
                 "synthetic_num_actions": AT_LEAST_1, "max_cycles": AT_LEAST_1},
    ActorsConfig: {"num_clients": AT_LEAST_1, "payload_bytes": AT_LEAST_0, "work_us": AT_LEAST_0},
    OverheadConfig: {"size": AT_LEAST_1},
    FaultConfig: {"num_workers": AT_LEAST_1, "fail_at_round": AT_LEAST_0, "fail_worker": AT_LEAST_0},
}


class ConfigRangeError(ValueError):
    """A numeric knob outside its range (the message names the key and the value)."""


def range_of(schema: type, field_name: str) -> Optional[Range]:
    """The range of ``schema.field_name``: the field's own ``range`` metadata, else the entry in `RANGES`
    of the closest parent schema that has one."""
    if dataclasses.is_dataclass(schema):
        for f in dataclasses.fields(schema):
            if f.name == field_name and "range" in f.metadata:
                return Range(**f.metadata["range"])
    for klass in schema.__mro__:
        if field_name in RANGES.get(klass, {}):
            return RANGES[klass][field_name]
    return None


def range_errors(cfg: Any) -> list[str]:
    """Every out-of-range value of a composed job config (a DictConfig or a plain dict), as ``key=value: why``."""
    from omegaconf import OmegaConf

    plain = cfg if isinstance(cfg, dict) else OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    sections: list[tuple[str, type, dict[str, Any]]] = [("", RunConfig, plain)]
    scenario = plain.get("scenario") or {}
    if scenario.get("name") in SCENARIO_SCHEMAS:
        sections.append(("scenario.", SCENARIO_SCHEMAS[scenario["name"]], scenario))
    backend = plain.get("backend") or {}
    if backend.get("name") in backend_names():
        sections.append(("backend.", backend_schema(backend["name"]), backend))
    sections.append(("budget.", BudgetConfig, plain.get("budget") or {}))
    errors = []
    for prefix, schema, values in sections:
        for key, value in values.items():
            limits = range_of(schema, key)
            if limits is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            why = limits.violation(value)
            if why is not None:
                errors.append(f"{prefix}{key}={value}: {why}")
    errors += resume_errors(plain)
    fault = plain.get("scenario") or {}
    if fault.get("name") == "fault" and fault.get("fail_worker", 0) >= fault.get("num_workers", 1):
        errors.append(f"scenario.fail_worker={fault['fail_worker']}: must be < scenario.num_workers="
                      f"{fault['num_workers']}")
    return errors


def check_ranges(cfg: Any) -> None:
    """Raise `ConfigRangeError` naming every out-of-range knob of a composed job config."""
    errors = range_errors(cfg)
    if errors:
        raise ConfigRangeError("out of range: " + "; ".join(errors))
