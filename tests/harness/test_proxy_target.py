"""`make proxy` (issue 46's everyday proxy): what it runs, read from ``make -n`` (nothing is run)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _planned(tmp_path: Path, *args: str) -> list[str]:
    stamp = tmp_path / "installed"  # `-o` keeps make from running the install for this stamp
    done = subprocess.run(["make", "-n", "--no-print-directory", "-o", str(stamp), f"STAMP={stamp}",
                           f"PY={sys.executable}", f"BENCH_DIR={tmp_path / 'bench'}", "proxy", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split("; try ", 1)[1] for line in done.stdout.splitlines() if "; try " in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_the_proxy_runs_each_workload_with_a_core_per_process_first_then_one_process_per_worker(tmp_path):
    """Per workload a paired job at workers=2 (the reactor beside serial and the ceiling: the run's cache baseline),
    one at workers=2 on the bank that gives each process as many members as at PROXY_WORKERS (the like-for-like
    warm reference: 16 on 8 is 2 a process, so a bank of 4) and one at PROXY_WORKERS with a process per worker, each
    in its own folder under PROXY_DIR; every job with a core per process before the oversubscribed ones (their
    hand-offs need a quiet host); the prediction last, on the whole folder, against the target machine's reference
    run where one is named."""
    out = tmp_path / "px"
    lines = _planned(tmp_path, f"PROXY_DIR={out}", "PROXY_WORKLOADS=gym marl", "PROXY_WORKERS=8",
                     "PROXY_MACHINE=results/reference/h200-16core-2026-12-04-device")
    jobs, predict = lines[:-1], lines[-1]
    assert [j.split("scenario=", 1)[1].split()[0] for j in jobs] == ["gym", "marl"] * 3
    for job in jobs[:4]:
        assert " workers=2 " in job
    assert all("backends=[serial,reactor,capacity_lockstep]" in job for job in jobs[:2])
    assert all("backends=[serial,reactor]" in job for job in jobs[2:4])
    for job in jobs[4:]:
        assert "backends=[serial,reactor_per_worker]" in job and " workers=8 " in job
    assert "scenario.num_envs=16" in jobs[0] and "scenario.env=synthetic scenario.num_agents=16" in jobs[1]
    assert "scenario.num_envs=4" in jobs[2] and "scenario.env=synthetic scenario.num_agents=4" in jobs[3]
    assert [j.rsplit("hydra.run.dir=", 1)[1] for j in jobs] == [
        f"{out}/gym-w2", f"{out}/marl-w2", f"{out}/gym-w2-bank4", f"{out}/marl-w2-bank4", f"{out}/gym-w8",
        f"{out}/marl-w8"]
    # several worker counts (the 16-core reference's 4, 8, 16): a like-for-like job per distinct bank, one
    # oversubscribed job per count, in that order
    many = _planned(tmp_path, f"PROXY_DIR={out}", "PROXY_WORKLOADS=gym", "PROXY_WORKERS=4 8 16")
    assert [j.rsplit("hydra.run.dir=", 1)[1] for j in many[:-1]] == [
        f"{out}/gym-w2", f"{out}/gym-w2-bank2", f"{out}/gym-w2-bank4", f"{out}/gym-w2-bank8", f"{out}/gym-w4",
        f"{out}/gym-w8", f"{out}/gym-w16"]
    # PROXY_BANK sets every job's bank, and the like-for-like one's follows it (64 on 16: 4 a process, a bank of 8)
    wide = _planned(tmp_path, f"PROXY_DIR={out}", "PROXY_WORKLOADS=dqn", "PROXY_BANK=64")
    assert ["scenario.num_rollouts=64" in wide[0], "scenario.num_rollouts=8" in wide[1],
            "scenario.num_rollouts=64" in wide[2]] == [True, True, True]
    assert predict.endswith(f"-m harness.report --predict {out} --machine "
                            "results/reference/h200-16core-2026-12-04-device")
    assert _planned(tmp_path, f"PROXY_DIR={out}", "PROXY_WORKLOADS=atari")[-1].endswith(f"--predict {out}")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_the_proxy_waits_for_a_quiet_host_before_its_first_job(tmp_path):
    """The jobs with a core per process give the run's hand-offs only when they start below the cores' load, and a
    run started right after other work would lose them: the wait (`harness.hostwatch.wait_until_quiet`) comes first,
    for PROXY_QUIET_S at most."""
    stamp = tmp_path / "installed"
    done = subprocess.run(["make", "-n", "--no-print-directory", "-o", str(stamp), f"STAMP={stamp}",
                           f"PY={sys.executable}", f"BENCH_DIR={tmp_path / 'bench'}", "proxy", "PROXY_QUIET_S=90",
                           "PROXY_WORKLOADS=gym"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    wait = next(i for i, line in enumerate(lines) if "-m harness.hostwatch --wait-quiet 90" in line)
    first_job = next(i for i, line in enumerate(lines) if "-m harness compare" in line)
    assert wait < first_job


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_proxy_ft_adds_the_threads_executor_on_free_threaded_python_to_the_workloads_it_can_run(tmp_path):
    """PROXY_FT=1: the jobs of PROXY_FT_WORKLOADS also hold serial and the threads executor on the free-threaded
    interpreter (and at workers=2 its ceiling), which the job finds through REACTORBENCH_FT_PYTHON; the others are
    unchanged (a workload .venv-ft cannot run, e.g. marl without torch there)."""
    out = tmp_path / "px"
    lines = _planned(tmp_path, f"PROXY_DIR={out}", "PROXY_WORKLOADS=gym marl", "PROXY_FT=1", "PROXY_FT_WORKLOADS=gym")
    gym2, marl2, gym_like, marl_like, gym16, marl16 = lines[:6]
    assert "backends=[serial,reactor,serial@ft,reactor_threads@ft]" in gym_like
    assert "backends=[serial,reactor]" in marl_like
    assert "backends=[serial,reactor,capacity_lockstep,serial@ft,reactor_threads@ft,capacity_lockstep@ft]" in gym2
    assert "backends=[serial,reactor_per_worker,serial@ft,reactor_threads@ft]" in gym16
    assert "backends=[serial,reactor,capacity_lockstep]" in marl2
    assert "backends=[serial,reactor_per_worker]" in marl16
    assert all(f"REACTORBENCH_FT_PYTHON={ROOT}/.venv-ft/bin/python" in job for job in lines[:6])
    assert not any("@ft" in job for job in _planned(tmp_path, f"PROXY_DIR={out}", "PROXY_WORKLOADS=gym"))
