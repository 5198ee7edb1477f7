"""Every numeric knob of every schema has a range, and a value outside it fails before anything runs."""
from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from harness.app import CONF_DIR
from backends import backend_schemas
from harness.config import RANGES, SCENARIO_SCHEMAS, BudgetConfig, RunConfig, range_errors, range_of
from tests.conftest import run_cli

SCHEMAS = [RunConfig, BudgetConfig, *SCENARIO_SCHEMAS.values(), *backend_schemas().values()]


def _numeric_fields(schema: type) -> list[str]:
    hints = typing.get_type_hints(schema)
    out = []
    for f in dataclasses.fields(schema):
        kinds = set(typing.get_args(hints[f.name])) - {type(None)} or {hints[f.name]}
        if kinds & {int, float} and bool not in kinds:
            out.append(f.name)
    return out


NUMERIC = [(s, name) for s in SCHEMAS for name in _numeric_fields(s)]


def test_the_walk_finds_the_known_numeric_fields():
    found = {(s.__name__, n) for s, n in NUMERIC}
    assert {("RunConfig", "workers"), ("BudgetConfig", "timeout_s"), ("GymConfig", "num_envs"),
            ("RayConfig", "object_store_memory"), ("DqnConfig", "epsilon")} <= found
    assert ("RunConfig", "quiet") not in found  # bool is not a number here


@pytest.mark.parametrize("schema,name", NUMERIC, ids=[f"{s.__name__}.{n}" for s, n in NUMERIC])
def test_every_numeric_field_has_a_range(schema, name):
    assert range_of(schema, name) is not None, \
        f"add {schema.__name__}.{name} to harness.config.RANGES (a backend schema: to the field's metadata)"


def test_every_range_names_a_numeric_field_of_its_schema():
    for schema, ranges in RANGES.items():
        assert set(ranges) <= set(_numeric_fields(schema)), schema.__name__
    for schema in SCHEMAS:
        declared = {f.name for f in dataclasses.fields(schema) if "range" in f.metadata}
        assert declared <= set(_numeric_fields(schema)), schema.__name__


def _job(group: str, schema: type, name: str, value) -> dict:
    """A plain job config with one field set to ``value`` (everything else at valid defaults)."""
    cfg = {"workers": 2, "seed": 0, "threads_per_worker": 1, "quiet": True,
           "budget": {"name": "x", "rounds": 1, "warmup_rounds": 0, "repetitions": 1, "timeout_s": 1.0},
           "scenario": {"name": "gym", "num_envs": 1}, "backend": {"name": "serial"}}
    if schema is RunConfig:
        cfg[name] = value
    elif schema is BudgetConfig:
        cfg["budget"][name] = value
    else:
        cfg[group] = {**dataclasses.asdict(schema()), name: value}
        cfg[group] = {k: (v.value if hasattr(v, "value") else v) for k, v in cfg[group].items()}
    return cfg


def _group(schema: type) -> str:
    return "scenario" if schema in SCENARIO_SCHEMAS.values() else "backend"


@pytest.mark.parametrize("schema,name", NUMERIC, ids=[f"{s.__name__}.{n}" for s, n in NUMERIC])
def test_a_value_just_outside_the_range_is_named(schema, name):
    limits = range_of(schema, name)
    group = _group(schema)
    bad = limits.ge - 1 if limits.ge is not None else limits.gt if limits.gt is not None else limits.le + 1
    errors = range_errors(_job(group, schema, name, bad))
    prefix = {RunConfig: "", BudgetConfig: "budget."}.get(schema, f"{group}.")
    assert any(e.startswith(f"{prefix}{name}={bad}:") for e in errors), errors


def test_defaults_of_every_preset_are_in_range():
    """Every preset's defaults pass the range check in every combination: each (scenario, budget) pair (the
    sizes depend on both) with one backend, and every backend preset with one (scenario, budget). That covers
    the whole product because a backend preset sets its own group only (checked: the other groups compose as
    without it) and `range_errors` checks each group on its own (its cross-field rules stay within one)."""
    backends = sorted(p.stem for p in (Path(CONF_DIR) / "backend").glob("*.yaml"))
    assert {"serial", "reactor", "ray_compiled", "vector"} <= set(backends)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        def composed(scenario: str, backend: str, budget: str) -> dict:
            cfg = compose(config_name="config",
                          overrides=[f"scenario={scenario}", f"backend={backend}", f"budget={budget}"])
            return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)

        for scenario in SCENARIO_SCHEMAS:
            for budget in ("smoke", "local", "paper"):
                assert range_errors(composed(scenario, "serial", budget)) == [], (scenario, budget)
        reference = composed("gym", "serial", "local")
        reference.pop("backend")
        for backend in backends:
            cfg = composed("gym", backend, "local")
            assert range_errors(cfg) == [], backend
            assert cfg.pop("backend")["name"] and cfg == reference, f"{backend} sets more than its own group"


def test_upper_bounds_and_cross_field_rules():
    assert range_errors(_job("scenario", SCENARIO_SCHEMAS["dqn"], "epsilon", 1.5)) == [
        "scenario.epsilon=1.5: must be <= 1"]
    fault = {"name": "fault", "num_workers": 2, "fail_at_round": 3, "fail_worker": 2, "kind": "error"}
    assert "scenario.fail_worker=2: must be < scenario.num_workers=2" in range_errors(
        {**_job("scenario", RunConfig, "seed", 0), "scenario": fault})


#: the fast gate keeps an int and a float case of the CLI: the others go through the same check before anything
#: runs, and each of their messages is checked in-process (test_a_value_just_outside_the_range_is_named, for every
#: numeric field)
_SAME_PATH = pytest.mark.slow(
    reason="same CLI path as workers=-1; its message: test_a_value_just_outside_the_range_is_named")


@pytest.mark.parametrize("override,needle", [
    ("workers=-1", "workers=-1: must be >= 1"),
    pytest.param("workers=0", "workers=0: must be >= 1", marks=_SAME_PATH),
    pytest.param("scenario.num_envs=0", "scenario.num_envs=0: must be >= 1", marks=_SAME_PATH),
    ("budget.timeout_s=0", "budget.timeout_s=0.0: must be > 0"),  # the schema's float, as the check sees it
])
def test_out_of_range_fails_before_running_and_creates_no_folder(tmp_path, override, needle):
    run_dir = tmp_path / "run"
    proc = run_cli("scenario=gym", "budget=smoke", override, run_dir=run_dir, timeout=60)
    assert proc.returncode != 0
    assert needle in proc.stderr
    assert not run_dir.exists()


def test_one_bad_job_stops_the_whole_sweep_before_its_first_job(tmp_path):
    proc = run_cli("scenario=gym", "budget=smoke", "workers=1,0", run_dir=tmp_path / "sweep", multirun=True,
                   timeout=60)
    assert proc.returncode != 0
    assert "workers=0: must be >= 1" in proc.stderr and "workers=1:" not in proc.stderr
    assert not (tmp_path / "sweep").exists()


def test_a_payload_larger_than_dev_shm_or_memory_is_refused_up_front():
    from harness.resource_checks import fit_errors, shm_size_bytes

    shm = shm_size_bytes()
    job = {"scenario": {"name": "actors", "num_clients": 2, "payload_bytes": shm + 1}}
    assert any(e.startswith(f"scenario.payload_bytes={shm + 1}: larger than /dev/shm") for e in fit_errors(job))
    assert fit_errors({"scenario": {"name": "actors", "num_clients": 2, "payload_bytes": 1000}}) == []
    assert fit_errors({"scenario": {"name": "gym", "num_envs": 10**12}}) == []
