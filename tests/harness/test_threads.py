"""``threads_per_worker`` is one setting: every backend applies it in its workers' processes once their roles
are built (`scenarios.threads`), and every row records what torch said there (``torch_threads_observed``)."""
from __future__ import annotations

import json

import pytest

from scenarios.threads import observed
from tests.conftest import run_cli
from tests.scenarios.test_cli import sweep_rows


@pytest.mark.slow  # fast: tests/test_cross_backend.py's test_paper_mode_checksums_equal_on_serial_reactor_and_ray[dqn]
# runs serial, the reactor and Ray with threads_per_worker=2 and asserts the same (one Ray start fewer)
def test_a_dqn_job_with_two_threads_runs_torch_on_two_threads_on_serial_the_reactor_and_ray(tmp_path):
    # one tiny job per backend (Ray's start-up dominates); DQN's roles load torch in every worker process
    proc = run_cli("scenario=dqn", "backend=serial,reactor,ray", "threads_per_worker=2", "workers=2",
                   "budget=smoke", "budget.rounds=3", "budget.warmup_rounds=1", "budget.repetitions=1",
                   "scenario.eval_episodes=1", run_dir=tmp_path, multirun=True, timeout=300)
    rows = sweep_rows(tmp_path, proc)
    assert sorted(rows.backend) == ["ray", "reactor", "serial"] and set(rows.status) == {"ok"}
    assert set(rows.variant[rows.backend == "reactor"]) == {"processes"}  # forked worker processes
    for backend, extra in zip(rows.backend, rows.extra):
        assert json.loads(extra)["torch_threads_observed"] == 2, backend
    assert (rows.threads_per_worker.astype(int) == 2).all()


def test_observed_counts_agree_differ_or_are_absent():
    assert observed([2, 2, None]) == 2
    assert observed([1, 2, 2]) == [1, 2]
    assert observed([None]) is None and observed([]) is None
