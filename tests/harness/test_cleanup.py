"""Nothing left behind after a killed job: the processes and /dev/shm entries of its tree, whoever made them."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.cleanup import SHM_DIR, ShmLedger, end_job, first_pid
from harness.jobtree import JobTree
from harness.runner import kill_tree
from tests.conftest import REPO

# The job: makes a segment named after itself, and a grandchild that leaves the tree (double fork, new
# session: re-parented to init once its parent exits on "go") and makes a segment named after itself and one
# with no pid in its name, but mapped.
JOB = r"""
import os, sys, time
from multiprocessing import shared_memory, resource_tracker
def make(name):
    shm = shared_memory.SharedMemory(name=name, create=True, size=4096)
    resource_tracker.unregister(shm._name, "shared_memory")  # a crash-like leak: nobody unlinks it
    shm.buf[:] = b"x" * 4096  # touched: tmpfs allocates the pages
    return shm
keep = [make(f"i15job{os.getpid()}-a")]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        keep += [make(f"sem.hdr{os.getpid()}-1"), make(f"i15-mapped-{sys.argv[1]}")]
        print("escapee", os.getpid(), flush=True)
        time.sleep(600)
    sys.stdin.readline()
    os._exit(0)
time.sleep(600)
"""


def _wait_for(pred, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_first_pid_reads_the_number_a_segment_is_named_after():
    assert first_pid("rb-123-4") == 123 and first_pid("sem.obj9876-17961052") == 9876
    assert first_pid("psm_abc") is None


def test_killed_job_leaves_no_process_and_no_segment_and_others_segments_stay(tmp_path):
    tag = f"{os.getpid()}x{time.monotonic_ns()}"
    ledger = ShmLedger.snapshot()
    child = subprocess.Popen([sys.executable, "-c", JOB, tag], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, start_new_session=True, cwd=REPO)
    tree = JobTree(child.pid)
    escapee = psutil.Process(int(child.stdout.readline().split()[1]))
    # someone else's segment, made at the same time, named after a process outside the job (a plain tmpfs
    # file: multiprocessing.shared_memory here would start a resource-tracker child in the test process)
    other = SHM_DIR / f"i15other{os.getpid()}-{time.monotonic_ns()}"
    other.write_bytes(b"x" * 4096)
    try:
        from harness.memory import MemorySampler

        sampler = MemorySampler(tree, ledger)
        sampler.sample()  # sees the escapee while it is still below the child
        assert escapee.pid in tree.pids
        assert sampler.peak_shm_mb > 0 and sampler.peak_rss_mb > 0
        child.stdin.write("go\n")
        child.stdin.flush()
        assert _wait_for(lambda: escapee.ppid() != child.pid and escapee.pid not in _descendants(child.pid))
        mine = ledger.owned(tree.pids)
        assert sorted(mine) == sorted([f"i15job{child.pid}-a", f"sem.hdr{escapee.pid}-1", f"i15-mapped-{tag}"])

        kill_tree(child.pid)  # the runner's session kill: the escapee (own session, re-parented) survives it ...
        child.wait()
        assert escapee.is_running()
        killed, removed = end_job(tree, ledger)  # ... and the clean-up finds it
        assert killed == 1 and sorted(removed) == sorted(mine)
        assert not psutil.pid_exists(escapee.pid) or escapee.status() == psutil.STATUS_ZOMBIE
        assert not any((SHM_DIR / n).exists() for n in mine)
        assert other.exists()
    finally:
        other.unlink(missing_ok=True)
        kill_tree(child.pid)
        if escapee.is_running():
            escapee.kill()
        end_job(tree, ledger)


def _descendants(pid: int) -> set[int]:
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


@pytest.mark.slow  # starts Ray and compiles a graph (about a minute on 2 cores)
def test_timed_out_compiled_graph_job_leaves_dev_shm_as_it_found_it(tmp_path):
    """Ray's compiled-graph channels make POSIX semaphores (``sem.hdr<pid>-*``, ``sem.obj<pid>-*``)."""
    before = set(os.listdir(SHM_DIR))
    proc = subprocess.Popen([sys.executable, "-m", "harness", "scenario=fault", "scenario.kind=hang",
                             "backend=ray_compiled", "budget=smoke", "budget.timeout_s=60", "quiet=true",
                             f"hydra.run.dir={tmp_path}"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    tree, seen_during = set(), set()
    while proc.poll() is None:
        tree |= _descendants(proc.pid)
        seen_during |= {n for n in os.listdir(SHM_DIR) if first_pid(n) in tree}
        time.sleep(0.2)
    assert proc.returncode != 0
    assert "timeout" in Path(tmp_path / "results.csv").read_text()
    assert any(n.startswith("sem.") for n in seen_during), "the job made no semaphores: the test proves nothing"
    left = {n for n in set(os.listdir(SHM_DIR)) - before if first_pid(n) in tree or n in seen_during}
    assert left == set()
    assert [p for p in tree if psutil.pid_exists(p) and _in_job(p, tmp_path)] == []


def _in_job(pid: int, job_dir: Path) -> bool:
    try:
        return str(job_dir) in " ".join(psutil.Process(pid).cmdline()) or "ray" in psutil.Process(pid).name()
    except psutil.Error:
        return False
