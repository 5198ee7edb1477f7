"""Resume: a sweep started again finishes only what is missing; a fresh run sets earlier results aside."""
from __future__ import annotations

import json

from harness.report.build import make_report
from harness.report.load import load_results
from harness.report.documents import to_html
from harness.report.tables import warnings
from tests.conftest import read_rows, run_cli

#: the tree under test may have uncommitted changes: these tests of the mechanics reuse rows of a dirty tree on
#: purpose (``test_rows_of_a_dirty_tree_are_not_reused_unless_asked`` covers the rule itself)
DIRTY_OK = "resume=dirty-ok"
SWEEP = ("scenario=gym", "backend=serial", "budget=smoke", "seed=0,1,2", DIRTY_OK)


def _jobs(sweep_dir):
    return sorted(d for d in sweep_dir.iterdir() if d.is_dir())


def _started(rows) -> set[str]:
    return {json.loads(m)["started_at"] for m in rows.metadata}


def test_interrupted_sweep_runs_only_the_missing_and_partial_jobs(tmp_path):
    sweep = tmp_path / "sweep"
    assert run_cli(*SWEEP, run_dir=sweep, multirun=True).returncode == 0
    done, missing, partial = _jobs(sweep)
    reference = {j.name: read_rows(j) for j in (done, missing, partial)}
    kept = (done / "results.csv").read_bytes()
    mtime = (done / "results.csv").stat().st_mtime_ns
    (missing / "results.csv").unlink()  # a job that never ran
    lines = (partial / "results.csv").read_text().splitlines(keepends=True)
    (partial / "results.csv").write_text("".join(lines[:2]))  # killed after its first repetition

    proc = run_cli(*SWEEP, run_dir=sweep, multirun=True)
    assert proc.returncode == 0, proc.stderr
    assert (done / "results.csv").read_bytes() == kept and (done / "results.csv").stat().st_mtime_ns == mtime
    assert json.loads((done / "reused.json").read_text())["rows"] == 3
    assert "reused, 3 ok rows" in proc.stderr
    for job in (missing, partial):
        rows = read_rows(job)
        assert list(rows.status) == ["ok"] * 3 and not (job / "reused.json").exists()
        assert _started(rows) != _started(reference[job.name])  # measured again
        # the same work as the uninterrupted sweep: checksums equal repetition by repetition
        assert list(rows.checksum) == list(reference[job.name].checksum)
    assert list(partial.glob("results.superseded-*.csv"))  # the partial rows are kept, out of the report's way

    loaded = load_results([sweep])
    assert len(loaded.rows) == 9
    assert sorted(loaded.rows.groupby("job")["reused"].first().tolist()) == [False, False, True]
    rep = make_report([sweep], figures=False)
    assert f"3 row(s) of 1 job(s) reused from an earlier run of the same config and code (resume): {done.name}" in (
        " ".join(warnings(rep)))
    # peak memory next to throughput and start-up time
    assert (rep.analysis.summary["peak_rss_mb"] > 10).all()
    assert "<th>startup s</th><th>peak RSS MB</th><th>peak shm MB</th>" in to_html(rep)


def test_changed_config_or_fresh_flag_runs_again(tmp_path):
    sweep = tmp_path / "sweep"
    args = ("scenario=gym", "backend=serial", "budget=smoke", "budget.repetitions=1")
    assert run_cli(*args, DIRTY_OK, run_dir=sweep / "a").returncode == 0
    first = read_rows(sweep / "a")
    assert run_cli(*args, "budget.rounds=21", DIRTY_OK, run_dir=sweep / "a").returncode == 0  # other config hash
    second = read_rows(sweep / "a")
    assert second.checksum[0] != first.checksum[0] and not (sweep / "a" / "reused.json").exists()
    proc = run_cli(*args, "budget.rounds=21", DIRTY_OK, run_dir=sweep / "a")
    assert "reused" in proc.stderr and (sweep / "a" / "reused.json").exists()
    proc = run_cli(*args, "budget.rounds=21", "resume=false", run_dir=sweep / "a")
    assert proc.returncode == 0 and "reused" not in proc.stderr
    assert len(read_rows(sweep / "a")) == 1 and not (sweep / "a" / "reused.json").exists()
    assert len(list((sweep / "a").glob("results.superseded-*.csv"))) == 2


def test_sweep_stopped_by_ctrl_c_halfway_finishes_only_the_rest(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    sweep = tmp_path / "sweep"
    args = [sys.executable, "-m", "harness", "-m", "scenario=gym", "backend=serial", "budget=smoke",
            "budget.rounds=6000", "seed=0,1,2", "quiet=true", DIRTY_OK, f"hydra.sweep.dir={sweep}"]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not list(sweep.glob("1_*/results.csv")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # Ctrl-C while job 1 runs (it has a row or more, not all)
    proc.communicate(timeout=120)
    first = _jobs(sweep)[0]
    assert len(read_rows(first)) == 3
    stopped = len(read_rows(_jobs(sweep)[1]))
    assert stopped < 3 and not list(sweep.glob("2_*/results.csv"))  # really stopped halfway
    mtime = (first / "results.csv").stat().st_mtime_ns

    again = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "job 0 gym/serial:- w=2: reused" in again.stderr
    assert "job 1 gym/serial:- w=2: ok, 3 rows" in again.stderr and "job 2 gym/serial:- w=2: ok, 3 rows" in again.stderr
    assert (first / "results.csv").stat().st_mtime_ns == mtime
    assert [len(read_rows(j)) for j in _jobs(sweep)] == [3, 3, 3]


def _finished_job(jobs_root, name: str = "job", dirty: bool = False, reps: int = 3):
    from tests.report.synthetic import Jobs

    jobs = Jobs(jobs_root)
    return jobs.write("gym", "serial", "-", 1, [100.0] * reps,
                      meta={"config_hash": "h1", "git_sha": "sha1", "git_dirty": dirty})


def test_rows_of_a_dirty_tree_are_not_reused_unless_asked(tmp_path, monkeypatch):
    import harness.metadata
    from harness.resume import decide, finished_rows

    clean, dirty = _finished_job(tmp_path / "a"), _finished_job(tmp_path / "b", dirty=True)
    assert finished_rows(clean, "h1", "sha1", 3) == 3
    assert finished_rows(clean, "h2", "sha1", 3) == 0 and finished_rows(clean, "h1", "sha2", 3) == 0
    assert finished_rows(dirty, "h1", "sha1", 3) == 0  # measured on a dirty tree
    assert finished_rows(clean, "h1", "sha1", 3, tree_dirty=True) == 0  # the tree is dirty now
    assert finished_rows(dirty, "h1", "sha1", 3, tree_dirty=True, dirty_ok=True) == 3

    # decide(): the mode as Hydra passes it, and reused.json records dirty-ok
    spec = {"budget": {"repetitions": 3}}
    monkeypatch.setattr("harness.metadata.config_hash", lambda s: "h1")
    monkeypatch.setattr(harness.metadata, "machine_metadata", lambda: {"git_sha": "sha1", "git_dirty": False})
    assert decide(clean, spec, resume=True) == 3
    assert "dirty_ok" not in json.loads((clean / "reused.json").read_text())
    assert decide(dirty, spec, resume="dirty-ok") == 3
    assert json.loads((dirty / "reused.json").read_text())["dirty_ok"] is True
    other = _finished_job(tmp_path / "c", dirty=True)
    assert decide(other, spec, resume=True) == 0  # not reused: set aside, the job runs
    assert not (other / "results.csv").exists() and list(other.glob("results.superseded-*.csv"))
    rep = make_report([tmp_path / "b"], figures=False)
    assert "3 row(s) measured on a tree with uncommitted changes" in " ".join(warnings(rep))


def test_resume_value_is_checked_before_anything_runs(tmp_path):
    from harness.resume import resume_errors, resume_mode

    assert [resume_mode(v) for v in (True, False, "dirty-ok", "TRUE")] == ["true", "false", "dirty-ok", "true"]
    assert resume_errors({"resume": "maybe"}) == ["resume=maybe: must be one of true, false, dirty-ok"]
    proc = run_cli("scenario=gym", "backend=serial", "budget=smoke", "resume=maybe", run_dir=tmp_path / "x")
    assert proc.returncode != 0 and "resume=maybe" in proc.stderr and not (tmp_path / "x").exists()


def test_a_job_of_an_archived_run_is_judged_by_its_record(tmp_path):
    from harness.archive import write_archive
    from harness.resume import finished_rows, mark_reused

    run = tmp_path / "run"
    job = _finished_job(run)
    archived = tmp_path / "archived"
    write_archive(run, archived)
    folder = archived / job.name  # the job's folder in the archived run: not there, its record is
    assert not folder.exists()
    assert finished_rows(folder, "h1", "sha1", 3) == 3
    assert finished_rows(folder, "h1", "sha1", 4) == 0
    assert finished_rows(archived / "other_job", "h1", "sha1", 3) == 0
    mark_reused(folder, 3)
    loaded = load_results([archived])
    assert len(loaded.rows) == 3 and loaded.rows["reused"].all()
