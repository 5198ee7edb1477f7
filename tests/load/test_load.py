"""Load held (slow; `make load`): more workers than cores, hundreds of envs, payloads against /dev/shm, a soak.

Each job runs through the real CLI; the test watches the job's own process tree while it runs (other agents'
processes and segments on the machine are never looked at) and checks that nothing of it is left afterwards.
Knobs (environment): LOAD_PAYLOAD_CAP (bytes, default 1 GiB: the largest payload actually moved here, see
test_payload_against_dev_shm), LOAD_SOAK_MINUTES (default 2; the 30-minute soak is `make soak`),
LOAD_RESULTS_DIR (keep every job's folder there, one per test, for `python -m harness.report`; default: the
tests' temporary folders).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.resource_checks import COPIES_BASE, COPIES_PER_CLIENT, shm_size_bytes
from harness.cleanup import SHM_DIR, first_pid
from tests.conftest import REPO, read_rows

pytestmark = pytest.mark.slow


@pytest.fixture
def out(tmp_path, request) -> Path:
    """Where this test's jobs write: LOAD_RESULTS_DIR/<test> when set (kept), else a temporary folder."""
    root = os.environ.get("LOAD_RESULTS_DIR")
    if not root:
        return tmp_path
    path = Path(root).resolve() / request.node.name.replace("[", "_").replace("]", "")
    path.mkdir(parents=True, exist_ok=False)
    return path


SLOW_BUDGET = ("budget=smoke", "budget.repetitions=2", "budget.timeout_s=900")


def run_watched(*overrides: str, run_dir: Path, timeout: float = 1800) -> tuple[subprocess.CompletedProcess, set, set]:
    """The CLI, watched: (result, pids of its tree seen while it ran, /dev/shm entries named after them)."""
    before = set(os.listdir(SHM_DIR))
    args = [sys.executable, "-m", "harness", *overrides, "quiet=true", f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tree, seen = set(), set()
    end = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < end:
        try:
            tree |= {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
        except psutil.Error:
            pass
        seen |= {n for n in os.listdir(SHM_DIR) if first_pid(n) in tree and n not in before}
        time.sleep(0.25)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, out, err), tree, seen


def assert_nothing_left(tree: set, seen: set, run_dir: Path) -> None:
    now = set(os.listdir(SHM_DIR))
    assert {n for n in now if n in seen or first_pid(n) in tree} == set()
    alive = []
    for pid in tree:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE and str(run_dir) in " ".join(p.cmdline()):
                alive.append(pid)
        except psutil.Error:
            pass
    assert alive == []


def _serial_checksums(out: Path, *overrides: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "harness", "backend=serial", *overrides, "quiet=true",
                           f"hydra.run.dir={out / 'serial'}"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return list(read_rows(out / "serial").checksum)


@pytest.mark.parametrize("backend", ["reactor", "reactor_per_worker", "ray"])
@pytest.mark.parametrize("workers", [8, 16])
def test_more_workers_than_cores(out, backend, workers):
    job = ("scenario=gym", "scenario.num_envs=16", *SLOW_BUDGET)
    proc, tree, seen = run_watched(*job, f"backend={backend}", f"workers={workers}", run_dir=out / "job")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(out / "job")
    assert list(rows.status) == ["ok", "ok"] and (rows.peak_rss_mb > 0).all()
    assert list(rows.checksum) == _serial_checksums(out, *job)
    assert_nothing_left(tree, seen, out / "job")


@pytest.mark.parametrize("backend", ["reactor", "ray"])
def test_256_envs(out, backend):
    job = ("scenario=gym", "scenario.num_envs=256", *SLOW_BUDGET)
    packing = ["backend.envs_per_actor=64"] if backend == "ray" else []  # 4 actors, not 256 processes
    proc, tree, seen = run_watched(*job, f"backend={backend}", *packing, run_dir=out / "job")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(out / "job")
    assert list(rows.status) == ["ok", "ok"] and (rows.num_envs == 256).all()
    assert list(rows.checksum) == _serial_checksums(out, *job)
    assert_nothing_left(tree, seen, out / "job")


@pytest.mark.parametrize("backend", ["reactor", "ray"])
def test_payload_against_dev_shm(out, backend):
    """Half of /dev/shm runs when this machine's memory holds its copies, else it is refused up front; larger
    than /dev/shm is always refused up front: a clear error naming the key, no folder, no segment."""
    shm = shm_size_bytes()
    clients = 2
    half = shm // 2
    fits = half * (COPIES_BASE + COPIES_PER_CLIENT * clients) <= psutil.virtual_memory().total
    cap = int(os.environ.get("LOAD_PAYLOAD_CAP", 2**30))
    moved = min(half, cap)  # what is really moved here (a shared machine: a GiB, not half of 24 GiB)
    base = ("scenario=actors", f"scenario.num_clients={clients}", f"backend={backend}", "budget=smoke",
            "budget.rounds=3", "budget.warmup_rounds=1", "budget.repetitions=1", "budget.timeout_s=900")

    proc, tree, seen = run_watched(*base, f"scenario.payload_bytes={half}", run_dir=out / "half")
    if fits:
        assert proc.returncode == 0, proc.stderr[-3000:]
    else:
        assert proc.returncode != 0 and f"scenario.payload_bytes={half}:" in proc.stderr
        assert "more than this machine's memory" in proc.stderr and not (out / "half").exists()
        proc, tree, seen = run_watched(*base, f"scenario.payload_bytes={moved}", run_dir=out / "moved")
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = read_rows(out / "moved")
        assert list(rows.status) == ["ok"] and rows.peak_shm_mb[0] * 1e6 >= moved
    assert_nothing_left(tree, seen, out)

    too_big = shm + 2**20
    proc, tree, seen = run_watched(*base, f"scenario.payload_bytes={too_big}", run_dir=out / "big")
    assert proc.returncode != 0
    assert f"scenario.payload_bytes={too_big}: larger than /dev/shm on this machine ({shm} bytes)" in proc.stderr
    assert "Traceback" not in proc.stderr and not (out / "big").exists()
    assert tree == set() and seen == set()  # nothing was started


def test_soak(out):
    minutes = float(os.environ.get("LOAD_SOAK_MINUTES", "2"))
    proc = subprocess.run([sys.executable, "-m", "harness.soak", "--minutes", str(minutes), "--repetition-s",
                           str(max(5.0, minutes * 60 / 20)), "--max-minutes", str(minutes * 4), "--out", str(out)],
                          cwd=REPO,
                          capture_output=True, text=True, timeout=minutes * 60 * 4 + 600)
    summary = json.loads((out / "soak.json").read_text())
    assert proc.returncode == 0 and summary["passed"], proc.stdout + proc.stderr
    assert summary["leaked_processes"] == 0 and summary["leaked_shm_entries"] == []
    assert summary["samples"] >= minutes * 60 / 2 * 0.8  # the sampler ran all along (every 2 s after 10 s)
