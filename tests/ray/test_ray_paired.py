"""Ray resident in paired jobs (``python -m harness compare``) with real Ray: parked between its blocks (no CPU
during the other backends' blocks, recorded per block), the same work as serial in every cycle, and a Ray that
fails or hangs fails its resident and leaves no Ray process or /dev/shm segment behind.

Each job starts Ray in the compare job's children (their own sessions), never in this process; the module shares
the xdist group of the other Ray modules anyway, so the suite's Ray start-ups take turns on a 2-core machine.
What a job left is found by a marker in the environment that every process of the job inherits (Ray's daemons
and workers included), so other tests' Ray processes are never counted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from harness.cleanup import first_pid, tagged_processes
from harness.cycles import COMPARE_FILE
from tests.conftest import read_rows

pytestmark = pytest.mark.xdist_group("ray_in_process")

REPO = Path(__file__).resolve().parents[2]
SHM = Path("/dev/shm")
MARK = "REACTORBENCH_TEST_JOB"


def compare(run_dir: Path, *overrides: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess, str]:
    """``python -m harness compare`` with a marker in its environment; (the finished process, the marker)."""
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark}
    proc = subprocess.run([sys.executable, "-m", "harness", "compare", *overrides, "quiet=true",
                           f"hydra.run.dir={run_dir}"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc, mark


def marked_processes(mark: str) -> list[str]:
    """Processes whose environment carries ``mark``: what a job left running."""
    return [f"{pid} {name}" for pid, name in tagged_processes(MARK, mark).items()]


def orphaned_shm(before: set[str]) -> list[str]:
    """/dev/shm entries created since ``before`` and named after a process that no longer runs (a leak: Ray's
    channel semaphores ``sem.hdr<pid>-*``, the reactor's ``rb-<pid>-*``); other jobs' live entries are not."""
    out = []
    for entry in SHM.iterdir():
        pid = first_pid(entry.name)
        if entry.name not in before and pid is not None and not psutil.pid_exists(pid):
            out.append(entry.name)
    return out


def _extras(rows) -> list[dict]:
    return [json.loads(e) for e in rows["extra"]]


def test_a_parked_ray_packed_resident_does_the_same_work_and_takes_no_cpu_during_serial_blocks(tmp_path):
    before = {e.name for e in SHM.iterdir()}
    out = tmp_path / "job"
    # serial's blocks last about 0.1 s (1,500 rounds of 4 CartPoles): long enough that an idle Ray left running
    # (35-50 ms of CPU per second here) would show
    proc, mark = compare(out, "scenario=gym", "budget=smoke", "workers=2", "backends=[serial,ray_packed]",
                         "compare.block_rounds=1500", "compare.precision=0.000001", "compare.max_seconds=2",
                         "compare.min_cycles=6")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(out)
    assert set(rows["status"]) == {"ok"} and rows["cycle"].nunique() >= 6
    assert set(zip(rows["backend"], rows["variant"])) == {("serial", "-"), ("ray", "actors_packed")}
    assert rows.groupby("cycle")["checksum"].nunique().eq(1).all()  # the same work in every cycle
    extra = _extras(rows)
    ray_rows = [e for e, b in zip(extra, rows["backend"]) if b == "ray"]
    serial_rows = [e for e, b in zip(extra, rows["backend"]) if b == "serial"]
    assert all(e["parked"] for e in ray_rows) and not any(e["parked"] for e in serial_rows)
    # parked: Ray's processes (daemons, actors and the driver) are stopped during serial's blocks, recorded per
    # block; an idle, unparked Ray takes tens of milliseconds per second
    during = [e["others_cpu_ms_by"]["ray:actors_packed"] for e in serial_rows]
    serial_s = rows.loc[rows["backend"] == "serial", "seconds"].sum()
    assert len(during) >= 6 and serial_s > 0.3, (during, serial_s)
    assert sum(during) / serial_s < 5.0, (during, serial_s)  # ms of Ray CPU per second of serial's blocks
    summary = json.loads((out / COMPARE_FILE).read_text())
    assert summary["status"] == "ok" and summary["leftover_processes"] == 0 and summary["leftover_shm"] == []
    assert marked_processes(mark) == []
    assert orphaned_shm(before) == []


@pytest.mark.slow
def test_every_ray_layout_and_rllib_are_residents(tmp_path):
    """The paper's layout, the compiled graph and RLlib's sampler beside serial: the Ray layouts' checksums equal
    serial's in every cycle, RLlib's rows carry its reference label instead."""
    out = tmp_path / "job"
    proc, mark = compare(out, "scenario=gym", "budget=smoke", "workers=2", "scenario.num_envs=3",
                         "backends=[serial,ray,ray_compiled_packed,rllib]", "compare.block_rounds=10",
                         "compare.precision=0.000001", "compare.max_seconds=3", "compare.min_cycles=6")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(out)
    assert set(rows["status"]) == {"ok"}
    labels = set(zip(rows["backend"], rows["variant"]))
    assert labels == {("serial", "-"), ("ray", "actors"), ("ray", "compiled_packed"), ("rllib", "module")}
    equal = rows[rows["backend"] != "rllib"]
    assert equal.groupby("cycle")["checksum"].nunique().eq(1).all()
    assert set(rows.loc[rows["backend"] == "rllib", "checksum"]) == {"rllib:not-equal-work"}
    serial = [e for e, b in zip(_extras(rows), rows["backend"]) if b == "serial"]
    for key in ("ray:actors", "ray:compiled_packed", "rllib:module"):
        assert max(e["others_cpu_ms_by"][key] for e in serial) < 1.0, key
    summary = json.loads((out / COMPARE_FILE).read_text())
    assert summary["leftover_processes"] == 0 and summary["leftover_shm"] == []
    assert marked_processes(mark) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind,status,backend,label", [("error", "error", "ray_compiled_packed", "ray:compiled_packed"),
                                                        ("hang", "timeout", "ray_packed", "ray:actors_packed")])
def test_a_ray_that_fails_or_hangs_fails_its_resident_and_leaves_nothing(tmp_path, kind, status, backend, label):
    before = {e.name for e in SHM.iterdir()}
    out = tmp_path / "job"
    # the fault comes at round 6, in the third cycle of blocks of 2 rounds after the warm-up's 2; with seed 0 the
    # first three cycles run the first listed backend first, so Ray meets it before serial does. timeout_s bounds
    # each message, Ray's start-up on a loaded 2-core machine included
    proc, mark = compare(out, "scenario=fault", f"scenario.kind={kind}", "scenario.fail_at_round=6", "budget=smoke",
                         "budget.timeout_s=60", "workers=2", "seed=0", f"backends=[{backend},serial]",
                         "compare.block_rounds=2", "compare.max_seconds=30", "compare.min_cycles=6")
    assert proc.returncode != 0
    rows = read_rows(out)
    failed = rows[rows["status"] != "ok"]
    assert list(failed["status"]) == [status] and failed["error"].iloc[0].startswith(f"{label}: "), failed["error"]
    assert (rows["status"] == "ok").any()  # it failed in a block, not at start-up
    if kind == "error":
        assert "EnvCrashed" in failed["error"].iloc[0]
        assert "EnvCrashed" in (out / "error.txt").read_text()
    assert marked_processes(mark) == []
    assert orphaned_shm(before) == []
