"""backend=puffer (PufferLib's Multiprocessing vectorizer) through the real CLI: the serial checksum on gym,
refusals before anything runs, CPU per env step in the rows, and an install that leaves torch at the pin."""
from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.scenarios.test_cli import SMOKE, sweep_rows

REPO = Path(__file__).resolve().parents[2]


def test_installing_pufferlib_leaves_torch_at_the_projects_pin():
    # make install puts pufferlib-core in with --no-deps: its own pin (torch==2.9.0) must not have moved torch
    pin = re.search(r"torch==([0-9.]+)", (REPO / "Makefile").read_text()).group(1)
    assert importlib.metadata.version("torch").split("+")[0] == pin
    puffer = importlib.metadata.distribution("pufferlib-core")
    pinned = [r for r in puffer.requires or [] if r.replace(" ", "").startswith("torch==")]
    assert pinned and pinned[0].split("==")[1] != pin  # it does ask for another torch: --no-deps is what holds


def test_puffer_equals_serial_on_gym(tmp_path):
    pytest.importorskip("pufferlib.vector")
    # 4 CartPole envs on 2 worker processes; 60 rounds: episodes end (random CartPole lasts about 20 steps), so
    # the same-step reset inside the workers is exercised
    proc = run_cli("scenario=gym", "scenario.num_envs=4", "backend=serial,puffer", "workers=2", *SMOKE,
                   "budget.rounds=60", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    serial, puffer = rows[rows.backend == "serial"], rows[rows.backend == "puffer"]
    assert len(puffer) == 2 and list(puffer.checksum) == list(serial.checksum)
    for extra in map(json.loads, puffer.extra):
        assert extra["puffer_workers"] == 2 and extra["envs_per_worker"] == 2 and extra["batch_size"] == 4
        assert extra["cpu_ms_per_env_step"] > 0
        assert extra["cpu_ms_per_env_step"] == pytest.approx(
            extra["cpu_parent_ms_per_env_step"] + extra["cpu_workers_ms_per_env_step"])


def test_puffer_refuses_envs_not_divisible_by_workers(tmp_path):
    proc = run_cli("scenario=gym", "scenario.num_envs=5", "backend=serial,puffer", "workers=2", *SMOKE,
                   run_dir=tmp_path, multirun=True, timeout=120)
    assert proc.returncode != 0
    assert "scenario.num_envs=5 is not divisible by workers=2" in proc.stderr
    assert "scenario.num_envs=6" in proc.stderr  # the nearest multiple is named
    assert not any(tmp_path.glob("*/results.csv"))  # nothing ran, serial included


def test_puffer_refuses_more_workers_than_physical_cores_without_overwork(tmp_path):
    from backends.puffer import physical_cores

    workers = physical_cores() + 1
    proc = run_cli("scenario=gym", f"scenario.num_envs={workers}", "backend=puffer", f"workers={workers}",
                   *SMOKE, run_dir=tmp_path, timeout=120)
    assert proc.returncode != 0
    assert f"workers={workers} is more than this machine's {physical_cores()} physical cores" in proc.stderr
    assert "backend.overwork=true" in proc.stderr
    assert not (tmp_path / "results.csv").exists()


def test_job_errors_name_each_reason():
    from backends.puffer import job_errors, physical_cores

    ok = {"scenario": {"name": "gym", "num_envs": 4}, "backend": {"name": "puffer"}, "workers": 2}
    assert job_errors(ok) == []
    assert "supports only scenarios" in job_errors({**ok, "scenario": {"name": "dqn"}})[0]
    many = physical_cores() * 2
    over = {**ok, "workers": many, "scenario": {"name": "atari", "num_envs": many}}
    assert len(job_errors(over)) == 1
    assert job_errors({**over, "backend": {"name": "puffer", "overwork": True}}) == []


def test_paired_jobs_refuse_puffer(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "harness", "compare", "scenario=gym", "backends=serial,puffer",
                           "workers=1", "budget=smoke", f"hydra.run.dir={tmp_path}"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "busy-wait" in proc.stderr
    assert not (tmp_path / "results.csv").exists()
