"""``python -m harness compare scenario=<name> backends=a,b,c [overrides]``: one paired job (`harness.cycles`).

Composed by Hydra from ``conf/compare.yaml`` like every job: the scenario, budget, workers and seed are shared by
all backends; each name in ``backends`` is a preset of ``conf/backend/``, composed on its own and checked
(ranges, this machine's capacity, the backend's variant) before anything runs, so a bad key, value or backend
name fails naming it and writes nothing. ``compare.*`` sets the stopping rule and block size
(`harness.cycles.CompareSettings`).

Interpreters: ``interpreter=ft`` runs every backend's child on the free-threaded interpreter (as for a job,
`harness.interpreter`), and ``name@ft`` (or ``name@default``, ``name@/path/to/python``) runs one backend there,
so one paired job can hold both interpreters: ``backends=[serial,reactor_threads,serial@ft,reactor_threads@ft]``.
Every backend must be able to run on its interpreter (a paired job has no skipped rows): one that cannot is
refused before anything runs, naming the missing package.

Ray (every layout) and RLlib are residents like the others, parked between their blocks: their daemons (GCS,
raylet, agents) run timers of their own whatever the workload, so the parent stops the whole tree of such a
resident after each of its blocks and continues it before the next (`harness.cycles`; docs/harness.md, "Paired
blocks"). Such a resident starts its own Ray instance: joining a cluster (``backend.address``) is refused, as is
PufferLib, whose workers busy-wait by design.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import MISSING, DictConfig, OmegaConf

from harness.resource_checks import fit_errors
from harness.config import BudgetConfig, ConfigRangeError, range_errors, range_of, register_configs
from harness.cycles import CompareSettings, StartOrder, backend_key, run_compare
from harness.interpreter import interpreter_errors, skip_reason
from harness.resume import PAIRED_JOB_FILES, set_aside
from harness.runner import MeasurementFailed, backend_variant

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")
#: backends a paired job refuses, and why
REFUSED = {"puffer": "PufferLib's workers and parent busy-wait by design (0.5 s before a worker sleeps): resident, "
                     "they take cores during the other backends' blocks; measure backend=puffer as a standalone job"}


@dataclass
class CompareRanges(CompareSettings):
    """`CompareSettings` as a Hydra schema, with the range of every knob (its defaults are `CompareSettings`'s)."""

    precision: float = field(default=CompareSettings.precision, metadata={"range": {"gt": 0}})
    max_seconds: float = field(default=CompareSettings.max_seconds, metadata={"range": {"gt": 0}})
    min_cycles: int = field(default=CompareSettings.min_cycles, metadata={"range": {"ge": 6}})
    block_s: float = field(default=CompareSettings.block_s, metadata={"range": {"gt": 0}})
    block_rounds: int = field(default=CompareSettings.block_rounds, metadata={"range": {"ge": 0}})
    confidence: float = field(default=CompareSettings.confidence, metadata={"range": {"gt": 0, "le": 0.999}})
    #: null (the default): this machine's self-test margin, else `harness.margin.DEFAULT_MARGIN`
    margin: Optional[float] = field(default=CompareSettings.margin, metadata={"range": {"ge": 0, "le": 0.5}})
    respawn_s: float = field(default=CompareSettings.respawn_s, metadata={"range": {"ge": 0}})
    respawn_share: float = field(default=CompareSettings.respawn_share, metadata={"range": {"ge": 0, "le": 0.9}})
    min_sets: int = field(default=CompareSettings.min_sets, metadata={"range": {"ge": 1}})
    pin_single: bool = CompareSettings.pin_single
    start_order: StartOrder = StartOrder(CompareSettings.start_order)
    #: per position in ``backends``: the injected extra work of that resident (`harness.child.ExtraWork`),
    #: e.g. ``backends=[serial,serial] compare.extra_work=[0,0.03]``; empty: none
    extra_work: List[float] = field(default_factory=list)


@dataclass
class CompareConfig:
    """One paired job: a scenario on several resident backends under one budget, workers and seed."""

    scenario: Any = MISSING
    budget: BudgetConfig = MISSING
    #: backend presets (conf/backend/), at least two; the second over the first is the main ratio;
    #: ``preset@interpreter`` runs that one on another interpreter
    backends: List[str] = field(default_factory=lambda: ["serial", "reactor", "capacity_lockstep"])
    #: the interpreter of every backend without an ``@`` (``default``, ``ft`` or a path: `harness.interpreter`)
    interpreter: str = "default"
    workers: int = 2
    seed: int = 0
    threads_per_worker: int = 1
    quiet: bool = False
    compare: CompareRanges = field(default_factory=CompareRanges)


def register() -> None:
    register_configs()
    ConfigStore.instance().store(name="compare_schema", node=CompareConfig)


register()


def list_argument(argv: list[str]) -> list[str]:
    """``backends=a,b,c`` as a list (``backends=[a,b,c]``): outside a sweep Hydra would refuse the commas."""
    out = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if key == "backends" and eq and value and not value.startswith(("[", "'", '"')):
            arg = f"backends=[{value}]"
        out.append(arg)
    return out


def backend_preset(name: str) -> dict[str, Any]:
    """The composed config of backend preset ``name`` (Hydra names a missing one)."""
    from hydra import compose

    cfg = compose(config_name="config", overrides=[f"backend={name}"])
    return OmegaConf.to_container(cfg.backend, resolve=True, enum_to_str=True)


def compare_errors(plain: dict[str, Any]) -> list[str]:
    """Out-of-range ``compare.*`` knobs and unusable ``backends`` lists."""
    errors = []
    for key, value in (plain.get("compare") or {}).items():
        limits = range_of(CompareRanges, key)
        if limits is not None and not isinstance(value, bool) and isinstance(value, (int, float)):
            why = limits.violation(value)
            if why is not None:
                errors.append(f"compare.{key}={value}: {why}")
    names = list(plain.get("backends") or [])
    if len(names) < 2:
        errors.append(f"backends={names}: a paired job needs at least two")
    extra = list((plain.get("compare") or {}).get("extra_work") or [])
    if extra and len(extra) != len(names):
        errors.append(f"compare.extra_work={extra}: one share per backend in backends={names}")
    errors += [f"compare.extra_work={extra}: {v} is not in [0, 1]" for v in extra if not 0 <= float(v) <= 1]
    return errors


def job_configs(plain: dict[str, Any]) -> list[dict[str, Any]]:
    """One standalone-job config per backend (as `harness.app` would run it); raises `ConfigRangeError`
    naming every bad value first."""
    errors = compare_errors(plain)
    jobs = []
    extra_work = list((plain.get("compare") or {}).get("extra_work") or [])
    injects = any(float(v) > 0 for v in extra_work)  # then every resident runs its rounds through the same wrapper
    names = list(plain.get("backends") or [])
    for position, name in enumerate(names):
        preset, _, interpreter = str(name).partition("@")
        backend = backend_preset(preset)
        if extra_work and position < len(extra_work):
            backend["extra_work"] = float(extra_work[position])
        if backend["name"] in REFUSED:
            errors.append(f"backends: {name}: {REFUSED[backend['name']]}")
            continue
        if backend.get("address"):
            errors.append(f"backends: {name}: backend.address={backend['address']}: a paired job stops a resident "
                          "Ray's processes between its blocks, so it starts its own instance; a cluster is joined "
                          "by standalone jobs only")
            continue
        job = {k: plain[k] for k in ("scenario", "budget", "workers", "seed", "threads_per_worker")}
        job["backend"] = backend
        job["trial"] = 0
        job["preset"] = preset  # stored in the rows (metadata.preset): the report names the backend by it
        job["interpreter"] = interpreter or plain.get("interpreter") or "default"
        # an A/A job lists a backend twice: each later listing is another identical resident (``#2``, ...)
        job["copy"] = names[:position].count(name) + 1
        if injects:
            job["extra_work_wrapped"] = True
        errors += [f"{name}: {e}" for e in range_errors(job) + fit_errors(job)]
        try:
            backend_variant(backend)
        except ValueError as exc:
            errors.append(f"{name}: {exc}")
        why_not = interpreter_errors(job)
        errors += [f"{name}: {e}" for e in why_not]
        reason = None if why_not else skip_reason(job)
        if reason is not None:
            errors.append(f"{name}: cannot run in a paired job: {reason}")
        jobs.append(job)
    keys = [backend_key(j) for j in jobs] if not errors else []
    if len(set(keys)) != len(keys):
        errors.append(f"backends={plain.get('backends')}: two different presets are the same backend and variant "
                      "(to measure a backend against an identical copy of itself, list the same preset twice)")
    if errors:
        raise ConfigRangeError("out of range: " + "; ".join(dict.fromkeys(errors)))
    return jobs


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="compare")
def main(cfg: DictConfig) -> None:
    job_dir = Path(HydraConfig.get().runtime.output_dir)
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    jobs = job_configs(plain)
    settings = CompareSettings(**{f.name: plain["compare"][f.name] for f in dataclasses.fields(CompareSettings)
                                  if f.name in plain["compare"]})
    label = f"compare {cfg.scenario.name} w={cfg.workers}"

    def log(text: str) -> None:
        if not cfg.quiet:
            print(f"{label}: {text}", file=sys.stderr, flush=True)

    # a rerun into a folder that holds an earlier paired job sets that job's files aside (as standalone jobs do,
    # `harness.resume`): appending would put two runs' cycles into one results.csv
    moved = set_aside(job_dir, PAIRED_JOB_FILES)
    if moved:
        print(f"{label}: an earlier paired job in {job_dir} set aside: "
              + ", ".join(path.name for path in moved), file=sys.stderr, flush=True)
    outcome = run_compare(jobs, job_dir, settings, int(cfg.seed), log=log)
    ratio = ""
    if outcome.main_ratio is not None and outcome.main_pair is not None:
        med, lo, hi = outcome.main_ratio
        ratio = f", {outcome.main_pair[0]} / {outcome.main_pair[1]} = {med:.3f} [{lo:.3f}, {hi:.3f}]"
    print(f"{label}: {outcome.status}, {outcome.cycles} cycles of {outcome.block_rounds} rounds (stopped by "
          f"{outcome.stopped_by or outcome.status}){ratio} -> {job_dir / 'results.csv'}", file=sys.stderr)
    if outcome.status != "ok":
        raise MeasurementFailed(f"{outcome.status}: {outcome.message}")
