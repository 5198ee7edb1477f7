"""Every scenario of this package through the real CLI on the serial backend (and vector where it applies).

Each test is one Hydra multirun whose jobs should compute the same thing (the same job twice, or the same
job on two backends), so determinism and cross-backend equality are checked on real envs, real torch and
real result files.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_cli

SMOKE = ["budget=smoke", "budget.repetitions=2", "budget.warmup_rounds=1"]


def sweep_rows(run_dir: Path, proc) -> pd.DataFrame:
    frames = [pd.read_csv(f, keep_default_na=False).assign(job=f.parent.name)
              for f in sorted(run_dir.glob("*/results.csv"))]
    assert frames, proc.stderr[-3000:]
    rows = pd.concat(frames, ignore_index=True)
    bad = rows[rows.status != "ok"]
    assert bad.empty, f"{proc.stderr[-3000:]}\n{bad[['job', 'status', 'error']]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    return rows


def assert_same_checksums(rows: pd.DataFrame, by: list[str]) -> None:
    for key, group in rows.groupby(by + ["repetition"]):
        assert group.job.nunique() >= 2, key
        assert group.checksum.nunique() == 1, group[["job", "backend", "checksum"]].to_string()


def assert_rows_valid(rows: pd.DataFrame, unit: str, units: int, num_envs: int, env_id: str) -> None:
    assert (rows.unit == unit).all()
    assert (rows.units.astype(int) == units).all()
    assert (rows.num_envs.astype(int) == num_envs).all()
    assert (rows.env_id == env_id).all(), rows.env_id.unique()
    assert (rows.throughput.astype(float) > 0).all()
    assert rows.checksum.str.fullmatch(r"[0-9a-f]{32}").all()
    for _, group in rows.groupby("job"):
        assert sorted(group.repetition.astype(int)) == [0, 1]
        # the checksum is cumulative: later repetitions have seen more
        assert group.checksum.nunique() == 2


def extras(rows: pd.DataFrame) -> list[dict]:
    return [json.loads(e) if e else {} for e in rows.extra]


def test_atari_is_deterministic_and_vector_matches_serial(tmp_path):
    # and the reactor's processes executor: the fast gate's check of atari's frames across processes
    # (tests/test_cross_backend.py's [atari] runs the same backends again under ``slow``)
    proc = run_cli("scenario=atari", "backend=serial,serial,reactor,vector", *SMOKE, "budget.rounds=6",
                   "scenario.num_envs=2", "workers=2", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    assert set(rows.backend) == {"serial", "reactor", "vector"} and rows.job.nunique() == 4
    assert set(rows.variant[rows.backend == "reactor"]) == {"processes"}
    assert_rows_valid(rows, "env_steps", 12, 2, "ALE/Pong-v5")
    assert_same_checksums(rows, [])


@pytest.mark.slow  # the same equality runs in-process in test_roles.py; this adds the CLI and the row marking
def test_atari_reset_every_step_is_marked_and_matches_on_vector(tmp_path):
    proc = run_cli("scenario=atari", "scenario.reset_every_step=true", "backend=serial,vector", *SMOKE,
                   "budget.rounds=2", "scenario.num_envs=2", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    assert_rows_valid(rows, "env_steps", 4, 2, "ALE/Pong-v5+reset_every_step")
    assert_same_checksums(rows, [])


def test_gym_vector_matches_serial_across_episode_ends(tmp_path):
    # 60 rounds: many CartPole and Blackjack episodes end, so the autoreset path is exercised; Blackjack's
    # Tuple observations check the per-env unbatching
    proc = run_cli("scenario=gym", "scenario.env_id=CartPole-v1,Blackjack-v1", "backend=serial,vector", *SMOKE,
                   "budget.rounds=60", "scenario.num_envs=3", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    assert set(rows.env_id) == {"CartPole-v1", "Blackjack-v1"}
    for env_id, group in rows.groupby("env_id"):
        assert_rows_valid(group, "env_steps", 180, 3, env_id)
    assert_same_checksums(rows, ["env_id"])
    # vector's rows split its CPU per env step by process (tests/harness/test_vector_options.py's check, which
    # runs its own jobs under ``slow``): the env processes' own CPU is counted. Summed over the rows: the kernel
    # counts a process's CPU in 10-ms ticks, and one repetition of 60 rounds of 3 cheap envs can fall within a tick
    vector = extras(rows[rows.backend == "vector"])
    assert sum(extra["cpu_workers_ms_per_env_step"] for extra in vector) > 0
    for extra in vector:
        assert extra["cpu_workers_ms_per_env_step"] >= 0
        assert extra["cpu_ms_per_env_step"] == pytest.approx(
            extra["cpu_parent_ms_per_env_step"] + extra["cpu_workers_ms_per_env_step"])


def test_vector_refuses_other_scenarios(tmp_path):
    proc = run_cli("scenario=marl", "backend=vector", *SMOKE, run_dir=tmp_path)
    assert proc.returncode != 0
    rows = pd.read_csv(tmp_path / "results.csv", keep_default_na=False)
    assert list(rows.status) == ["error"]
    assert "supports only scenarios" in rows.error[0]


def test_dqn_is_deterministic_and_reports_its_time_split(tmp_path):
    proc = run_cli("scenario=dqn", "seed=0,0", *SMOKE, "budget.rounds=4", "scenario.eval_episodes=20",
                   run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    assert_rows_valid(rows, "rounds", 4, 2, "Blackjack-v1")
    assert_same_checksums(rows, [])
    for row, extra in zip(rows.itertuples(), extras(rows)):
        for key in ("sampling_s", "communication_s", "training_s", "rollout_total_s"):
            assert extra[key] >= 0, (key, extra)
        assert extra["sampling_s"] > 0 and extra["training_s"] > 0
        assert extra["sampling_s"] + extra["training_s"] <= float(row.seconds) * 1.5 + 0.05
        assert ("eval_return" in extra) == (int(row.repetition) == 1)
    returns = {e["eval_return"] for e in extras(rows) if "eval_return" in e}
    assert len(returns) == 1 and -1.0 <= returns.pop() <= 1.0


def test_marl_both_envs_run_deterministically(tmp_path):
    # simple_spread twice (30 steps: an episode ends at 25, so the reset path runs), synthetic once
    proc = run_cli("scenario=marl", "scenario.env=simple_spread_v3,simple_spread_v3,synthetic", *SMOKE,
                   "budget.rounds=30", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    assert set(rows.env_id) == {"synthetic", "simple_spread_v3"}
    for env_id, group in rows.groupby("env_id"):
        assert_rows_valid(group, "env_steps", 30, 3, env_id)
    assert_same_checksums(rows[rows.env_id == "simple_spread_v3"], [])
    last = [e for e in extras(rows) if "env_step_ms" in e]  # the final metrics: last repetition of each job
    assert len(last) == 3
    assert all(e["env_step_ms"] > 0 and e["inference_ms"] > 0 for e in last)


@pytest.mark.parametrize("scenario,clients,env_id", [("actors", 2, "1000B"), ("object_size", 4, "100000B")])
def test_microbenchmarks_are_deterministic_and_report_their_work(tmp_path, scenario, clients, env_id):
    proc = run_cli(f"scenario={scenario}", "seed=0,0", *SMOKE, "budget.rounds=10", run_dir=tmp_path,
                   multirun=True)
    rows = sweep_rows(tmp_path, proc)
    assert_rows_valid(rows, "rounds", 10, clients, env_id)
    assert_same_checksums(rows, [])
    work_ms = rows.round_work_ms.astype(float)
    assert np.allclose(work_ms, 0.05 if scenario == "actors" else 0.0)
    # rounds cannot be faster than the work every client must do
    assert (rows.latency_p50_ms.astype(float) >= work_ms).all()
