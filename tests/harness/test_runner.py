"""End to end through the real CLI: a complete serial Gym run, and the error, crash and timeout paths."""
from __future__ import annotations

import json
import time

import psutil
import pytest

from tests.conftest import read_rows, run_cli

META_KEYS = {"hostname", "cpu_model", "cpu_count", "ram_gb", "os", "python", "versions", "git_sha", "git_dirty",
             "started_at", "config_hash", "cpu_affinity", "load_avg"}


@pytest.fixture(scope="module")
def gym_seeds(tmp_path_factory):
    """One sweep of three complete serial Gym jobs, each measured in its own fresh child: seed 0 twice, then
    seed 1. Its job folders, in job order; the tests reading it share an xdist group (one sweep per run)."""
    sweep = tmp_path_factory.mktemp("runner") / "gym"
    proc = run_cli("scenario=gym", "backend=serial", "budget=smoke", "seed=0,0,1", run_dir=sweep, multirun=True)
    assert proc.returncode == 0, proc.stderr
    jobs = sorted((d for d in sweep.iterdir() if d.is_dir()), key=lambda d: int(d.name.split("_")[0]))
    assert len(jobs) == 3
    return jobs


@pytest.mark.xdist_group("runner_gym_seeds")
def test_gym_serial_smoke_fills_every_contract_column_and_is_reproducible(gym_seeds):
    runs = [read_rows(job) for job in gym_seeds[:2]]  # the same job twice
    rows = runs[0]
    assert len(rows) == 3 and set(rows.status) == {"ok"}
    for col in ("scenario", "backend", "variant", "workers", "num_envs", "env_id", "budget", "seed", "repetition",
                "units", "unit", "seconds", "throughput", "latency_p50_ms", "latency_p99_ms", "checksum"):
        assert (rows[col].astype(str) != "").all(), col
    assert (rows.throughput.astype(float) > 0).all()
    assert rows.unit[0] == "env_steps" and rows.env_id[0] == "CartPole-v1"
    meta = json.loads(rows.metadata[0])
    assert META_KEYS <= set(meta)
    assert meta["cpu_affinity"] and set(meta["cpu_affinity"]) <= set(range(meta["cpu_count"]))
    assert len(meta["load_avg"]) == 3 and all(x >= 0 for x in meta["load_avg"])
    assert list(runs[0].checksum) == list(runs[1].checksum)
    assert rows.checksum.nunique() == 3  # each repetition's checksum covers more data
    assert (gym_seeds[0] / "latencies.csv").exists()


@pytest.mark.xdist_group("runner_gym_seeds")
def test_a_different_seed_changes_the_checksum(gym_seeds):
    zero, one = read_rows(gym_seeds[0]), read_rows(gym_seeds[2])
    assert list(zero.seed.astype(int)) == [0] * 3 and list(one.seed.astype(int)) == [1] * 3
    assert set(zero.checksum).isdisjoint(set(one.checksum))


@pytest.fixture(scope="module")
def failed_sweep(tmp_path_factory):
    """A sweep of two fault jobs: the first fails at round 3 (the scenario's default), the second never fails.
    Its process and its job folders in job order; the tests reading it share an xdist group."""
    sweep = tmp_path_factory.mktemp("runner") / "fault"
    proc = run_cli("scenario=fault", "scenario.kind=error", "scenario.fail_at_round=3,100000", "budget=smoke",
                   run_dir=sweep, multirun=True)
    jobs = sorted((d for d in sweep.iterdir() if d.is_dir()), key=lambda d: int(d.name.split("_")[0]))
    return proc, jobs


@pytest.mark.xdist_group("runner_failed_sweep")
def test_worker_exception_writes_error_row_with_message(failed_sweep):
    proc, jobs = failed_sweep
    assert proc.returncode != 0
    rows = read_rows(jobs[0])
    assert list(rows.status) == ["error"]
    assert "EnvCrashed: worker 1 crashed at round 3" in rows.error[0]
    assert "Traceback" in (jobs[0] / "error.txt").read_text()


def test_crashing_process_writes_error_row(tmp_path):
    proc = run_cli("scenario=fault", "scenario.kind=exit", "budget=smoke", run_dir=tmp_path)
    assert proc.returncode != 0
    assert "code 17" in read_rows(tmp_path).error[0]


def test_timeout_kills_the_tree_and_writes_timeout_row(tmp_path):
    before = {p.pid for p in psutil.process_iter()}
    t0 = time.monotonic()
    proc = run_cli("scenario=fault", "scenario.kind=hang", "budget=smoke", "budget.timeout_s=3", run_dir=tmp_path)
    assert time.monotonic() - t0 < 120  # generous: the point is that it ends, not how fast on a busy machine
    assert proc.returncode != 0
    rows = read_rows(tmp_path)
    assert list(rows.status) == ["timeout"] and "timeout_s=3" in rows.error[0]
    leftovers = [p for p in psutil.process_iter(["cmdline"])
                 if p.pid not in before and str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []


@pytest.mark.xdist_group("runner_failed_sweep")
def test_multirun_goes_on_after_a_failed_job(failed_sweep):
    proc, jobs = failed_sweep
    assert proc.returncode != 0  # the sweep reports the failure ...
    assert [read_rows(d).status.iloc[-1] for d in jobs] == ["error", "ok"]  # ... after running the next job


def test_read_lines_sees_two_lines_of_one_write_before_a_hang():
    """A child that writes two messages at once and then hangs: both arrive, then the timeout."""
    import subprocess
    import sys

    from harness.runner import read_lines

    child = subprocess.Popen(
        [sys.executable, "-c", "import os, time; os.write(1, b'{\"a\": 1}\\n{\"b\": 2}\\n'); "
                               "os.write(2, b'x'); time.sleep(120)"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stderr.read(1) == b"x"  # both lines are in the pipe now
        seen = []
        with pytest.raises(TimeoutError):
            for line in read_lines(child.stdout.fileno(), time.monotonic() + 0.5):
                seen.append(json.loads(line))
        assert seen == [{"a": 1}, {"b": 2}]
    finally:
        child.kill()
        child.wait()


def test_read_lines_ends_with_the_writer_and_keeps_a_last_unterminated_line():
    import os

    from harness.runner import read_lines

    r, w = os.pipe()
    os.write(w, b"one\ntw")
    os.write(w, b"o\nthree")
    os.close(w)
    try:
        assert list(read_lines(r, time.monotonic() + 30)) == ["one", "two", "three"]
    finally:
        os.close(r)


def test_read_lines_still_reads_what_arrived_before_a_passed_deadline():
    import os

    from harness.runner import read_lines

    r, w = os.pipe()
    os.write(w, b"late\n")
    lines = []
    try:
        with pytest.raises(TimeoutError):
            for line in read_lines(r, time.monotonic() - 1):
                lines.append(line)
        assert lines == ["late"]
    finally:
        os.close(w)
        os.close(r)


def test_the_child_waits_for_the_parent_after_each_stored_message(tmp_path):
    """Progress and repetition messages are acknowledged: until the parent answers, the child runs no round
    (so the parent's storing and memory sampling never share the cores with timed rounds)."""
    import os
    import select
    import subprocess
    import sys

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from harness.app import CONF_DIR
    from harness.runner import job_spec
    from tests.conftest import REPO

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["scenario=gym", "backend=serial", "budget=smoke",
                                                         "budget.repetitions=3"])
    spec = job_spec(OmegaConf.to_container(cfg, resolve=True))
    rfd, wfd = os.pipe()
    child = subprocess.Popen([sys.executable, "-m", "harness.measure", str(wfd), str(tmp_path)],
                             stdin=subprocess.PIPE, pass_fds=(wfd,), cwd=REPO)
    os.close(wfd)
    child.stdin.write(json.dumps(spec).encode() + b"\n")
    child.stdin.flush()
    reader = os.fdopen(rfd)
    kinds = []
    try:
        while True:
            kind = json.loads(reader.readline())["type"]
            kinds.append(kind)
            if kind in ("progress", "repetition"):
                break
        # not answered: nothing more comes, although the smoke job's next repetition takes milliseconds
        assert select.select([rfd], [], [], 1.0)[0] == []
        assert child.poll() is None
        while kinds[-1] != "repetition" or kinds.count("repetition") < 3:
            if kinds[-1] in ("progress", "repetition"):
                child.stdin.write(b"\n")
                child.stdin.flush()
            kinds.append(json.loads(reader.readline())["type"])
        child.stdin.close()  # the last repetition is not answered: the child stops, naming why
        error = json.loads(reader.readline())
        assert error["type"] == "error" and "closed the job's pipe" in error["message"]
        assert child.wait(timeout=60) == 1
    finally:
        child.kill()
        child.wait()
        reader.close()
    assert kinds[:2] == ["hello", "started"] and kinds.count("repetition") == 3
