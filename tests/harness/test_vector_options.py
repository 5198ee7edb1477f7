"""ale-py's AtariVectorEnv at its best (thread count, synchronous batch, thread affinity chosen per workers) and
EnvPool's backend: the options each gets, and the rows through the real CLI."""
from __future__ import annotations

import importlib.util
import json

import pytest

from backends.ale_vector import AleVectorUnsupported, thread_options
from tests.conftest import run_cli
from tests.scenarios.test_cli import SMOKE, sweep_rows


def test_thread_options_follow_workers_and_the_jobs_cores():
    # threads = workers (at most one per env), every env in every step, pinned from the job's first core
    assert thread_options(2, 16, cpus={0, 1, 2, 3}) == {"num_threads": 2, "batch_size": 16,
                                                        "thread_affinity_offset": 0}
    assert thread_options(8, 4, cpus={4, 5, 6, 7}) == {"num_threads": 4, "batch_size": 4,
                                                       "thread_affinity_offset": 4}
    # more threads than cores, or cores that are not one range: not pinned under auto
    assert thread_options(4, 16, cpus={0, 1})["thread_affinity_offset"] == -1
    assert thread_options(2, 16, cpus={0, 2, 3})["thread_affinity_offset"] == -1
    assert thread_options(2, 16, "off", cpus={0, 1})["thread_affinity_offset"] == -1
    assert thread_options(4, 16, "on", cpus={0, 1})["thread_affinity_offset"] == 0
    with pytest.raises(AleVectorUnsupported, match="not one contiguous"):
        thread_options(2, 16, "on", cpus={0, 2})
    with pytest.raises(AleVectorUnsupported, match="one of"):
        thread_options(2, 16, "sometimes", cpus={0, 1})


def test_ale_vector_rows_record_its_options_and_keep_the_serial_checksum(tmp_path):
    proc = run_cli("scenario=atari", "scenario.env_id=PongNoFrameskip-v4", "scenario.actions=full",
                   "scenario.num_envs=4", "backend=serial,ale_vector", "workers=2", *SMOKE, "budget.rounds=20",
                   run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    serial, ale = rows[rows.backend == "serial"], rows[rows.backend == "ale_vector"]
    assert len(ale) == 2 and list(ale.checksum) == list(serial.checksum)
    assert all(json.loads(e)["equal_work_promised"] is True for e in ale.extra)  # frameskip 1, no sticky actions
    extra = json.loads(ale.extra.iloc[0])
    assert extra["threads"] == 2 and extra["batch_size"] == 4
    assert extra["thread_affinity_offset"] == thread_options(2, 4)["thread_affinity_offset"]
    assert extra["cpu_ms_per_env_step"] > 0 and extra["cpu_cores_busy"] > 0  # the C++ threads, in this process


@pytest.mark.slow  # fast: tests/scenarios/test_cli.py's test_gym_vector_matches_serial_across_episode_ends asserts
# the same split on its vector rows (CartPole and Blackjack)
def test_vector_rows_report_cpu_per_env_step_split_by_process(tmp_path):
    proc = run_cli("scenario=gym", "scenario.num_envs=2", "backend=serial,vector", *SMOKE, "budget.rounds=100",
                   run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    vector = rows[rows.backend == "vector"]
    assert list(vector.checksum) == list(rows[rows.backend == "serial"].checksum)
    for extra in map(json.loads, vector.extra):
        assert extra["cpu_workers_ms_per_env_step"] > 0  # the env processes' own CPU is counted
        assert extra["cpu_ms_per_env_step"] == pytest.approx(
            extra["cpu_parent_ms_per_env_step"] + extra["cpu_workers_ms_per_env_step"])


def test_ale_vector_refuses_an_unknown_affinity_before_it_runs(tmp_path):
    proc = run_cli("scenario=atari", "backend=ale_vector", "backend.thread_affinity=always", *SMOKE,
                   run_dir=tmp_path, timeout=120)
    assert proc.returncode != 0 and "thread_affinity" in proc.stderr
    assert not (tmp_path / "results.csv").exists()


def test_envpool_is_refused_where_it_cannot_run():
    from backends.envpool import job_errors, task_id

    assert task_id("space_invaders") == "SpaceInvaders-v5" and task_id("pong") == "Pong-v5"
    assert "only scenario atari" in job_errors({"scenario": {"name": "gym"}})[0]
    errors = job_errors({"scenario": {"name": "atari", "reset_every_step": True}})
    assert any("reset_every_step" in e for e in errors)
    missing = importlib.util.find_spec("envpool") is None
    assert any("not installed" in e for e in errors) == missing


@pytest.mark.skipif(importlib.util.find_spec("envpool") is None, reason="envpool not installed (make install-envpool)")
def test_envpool_runs_atari_as_a_labelled_reference(tmp_path):
    proc = run_cli("scenario=atari", "scenario.num_envs=4", "backend=serial,envpool", "workers=2", *SMOKE,
                   "budget.rounds=20", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    serial, pool = rows[rows.backend == "serial"], rows[rows.backend == "envpool"]
    assert list(pool.units) == list(serial.units)  # the same env steps per repetition
    extra = json.loads(pool.extra.iloc[0])
    assert extra["equal_work_promised"] is False and extra["threads"] == 2 and extra["batch_size"] == 4
    assert extra["cpu_ms_per_env_step"] > 0 and extra["reset_steps"] >= 0
