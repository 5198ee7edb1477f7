"""Config validation: bad keys, values and options fail at composition, naming the key, and write nothing."""
from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from harness.app import CONF_DIR
from tests.conftest import run_cli


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_defaults_compose_to_typed_config():
    cfg = _compose()
    assert cfg.scenario.name == "gym" and cfg.backend.name == "serial" and cfg.budget.name == "local"
    assert isinstance(cfg.workers, int)


def test_budget_and_scenario_sizes_combine():
    smoke = _compose("budget=smoke")
    paper = _compose("budget=paper")
    assert smoke.budget.rounds < paper.budget.rounds
    assert paper.budget.rounds == 10_000 and paper.scenario.num_envs == 15  # the paper's Gym sizes


def test_command_line_beats_budget_sizes():
    cfg = _compose("budget=paper", "scenario.num_envs=3", "budget.rounds=7")
    assert (cfg.scenario.num_envs, cfg.budget.rounds) == (3, 7)


@pytest.mark.parametrize("backend,field,value", [
    ("reactor", "executor", "processes"),
    ("reactor_threads", "executor", "threads"),
    ("reactor", "max_processes", 0),
    ("reactor_per_worker", "max_processes", 1024),
    ("ray", "mode", "actors"),
    ("ray_compiled", "mode", "compiled"),
])
def test_backend_presets(backend, field, value):
    cfg = _compose(f"backend={backend}")
    assert str(OmegaConf.to_container(cfg.backend, enum_to_str=True)[field]) == str(value)


@pytest.mark.parametrize("override,needle", [
    ("budget=smok", "unknown budget 'smok'; did you mean smoke"),
    ("workers=two", "workers"),
    ("scenario.num_envz=3", "num_envz"),
    ("backend=rey", "unknown backend 'rey'; did you mean ray"),
    ("backend=ray_compiled backend.mode=compild", "backend.mode"),
    ("seed=1.5", "seed"),
])
def test_bad_input_fails_before_running_and_names_it(tmp_path, override, needle):
    run_dir = tmp_path / "run"
    proc = run_cli("scenario=gym", "budget=smoke", *override.split(), run_dir=run_dir, timeout=60)
    assert proc.returncode != 0
    assert needle in proc.stderr
    assert not (run_dir / "results.csv").exists()
