"""``trial=0,1,...``: deliberate repeats of a sweep's jobs, the backends interleaved in time, recorded in every
row's metadata and pooled by the report; a negative trial is refused before anything runs."""
from __future__ import annotations

import json

from harness.app import trial_first
from harness.checks import sweep_job_overrides
from harness.report.build import make_report
from tests.conftest import run_cli
from tests.scenarios.test_cli import SMOKE, sweep_rows


def test_trials_interleave_the_backends_and_the_report_pools_them(tmp_path):
    # trial last on the command line: the app still makes it the outermost sweep
    proc = run_cli("scenario=gym", "backend=serial,reactor_inline", "trial=0,1", *SMOKE, run_dir=tmp_path,
                   multirun=True)
    rows = sweep_rows(tmp_path, proc)
    rows["num"] = [int(j.split("_")[0]) for j in rows["job"]]
    rows["trial"] = [json.loads(m)["trial"] for m in rows["metadata"]]
    order = rows.drop_duplicates("num").sort_values("num")[["trial", "backend"]].values.tolist()
    assert order == [[0, "serial"], [0, "reactor"], [1, "serial"], [1, "reactor"]]  # interleaved, trial slowest
    for _, g in rows.groupby("repetition"):
        assert g["checksum"].nunique() == 1  # every trial of every backend did the same work
    rep = make_report([tmp_path], figures=False)
    s = rep.analysis.summary.set_index("label")
    assert s.loc["serial:-", "n_ok"] == 4 and s.loc["reactor:inline", "n_ok"] == 4  # 2 trials x 2 repetitions
    assert rep.superseded_runs == 0


def test_trial_is_the_outermost_sweep_whatever_the_order_of_overrides():
    args = ["-m", "--config-name", "config", "backend=a,b", "seed=3", "trial=0,1", "workers=1,2"]
    assert trial_first(args) == ["-m", "--config-name", "config", "trial=0,1", "backend=a,b", "seed=3",
                                 "workers=1,2"]
    assert trial_first(["backend=a", "-m"]) == ["backend=a", "-m"]  # no trial: unchanged
    jobs = [" ".join(j) for j in sweep_job_overrides(trial_first(["backend=serial,ray", "trial=0,1"]))]
    assert jobs == ["trial=0 backend=serial", "trial=0 backend=ray", "trial=1 backend=serial", "trial=1 backend=ray"]


def test_a_negative_trial_is_refused_by_name(tmp_path):
    proc = run_cli("scenario=gym", "trial=-1", *SMOKE, run_dir=tmp_path)
    assert proc.returncode != 0 and "trial" in proc.stderr
    assert not (tmp_path / "results.csv").exists()
