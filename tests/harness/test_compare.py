"""``python -m harness compare``: resident backends in one job, paired blocks, equal work, no spinning waiters,
the stopping rule, and bad input refused before anything runs."""
from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import psutil
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from harness.compare import CONF_DIR, job_configs
from harness.config import ConfigRangeError
from harness.cycles import COMPARE_FILE, CompareSettings, Resident, settle, stop_reason
from harness.hostwatch import cpu_ns
from tests.conftest import read_rows, run_cli

SMOKE = ("scenario=gym", "budget=smoke", "workers=2")


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory) -> Path:
    """A paired job that can only stop on time: an unreachable precision, 1.5 s of cycles."""
    out = tmp_path_factory.mktemp("compare") / "job"
    proc = run_cli("compare", *SMOKE, "backends=serial,reactor,capacity", "compare.block_rounds=10",
                   "compare.precision=0.000001", "compare.max_seconds=1.5", "compare.min_cycles=2", run_dir=out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_block_is_a_row_and_cycles_hold_every_backend_once(timed_out):
    rows = read_rows(timed_out)
    assert set(rows["status"]) == {"ok"}
    assert set(zip(rows["backend"], rows["variant"])) == {("serial", "-"), ("reactor", "processes"), ("capacity", "-")}
    cycles = rows.groupby("cycle")
    assert cycles.size().eq(3).all() and rows["cycle"].nunique() >= 2
    # block = position in time: 0..n-1 without gaps, a cycle's blocks before the next cycle's
    assert sorted(rows["block"]) == list(range(len(rows)))
    assert (cycles["block"].max().shift(1).fillna(-1) < cycles["block"].min()).all()
    assert (rows["rounds"] == 10).all() and (rows["repetition"] == rows["cycle"]).all()
    extra = [json.loads(e) for e in rows["extra"]]
    assert all(e["paired"] and len(e["host_core_ms"]) >= 1 and e["others_cpu_ms"] >= 0 for e in extra)


def test_a_cycle_computes_the_same_work_on_every_backend_as_a_standalone_job(timed_out, tmp_path):
    rows = read_rows(timed_out)
    assert rows.groupby("cycle")["checksum"].nunique().eq(1).all()
    assert rows.groupby("backend")["checksum"].nunique().gt(1).all()  # each block moves the state on
    alone = tmp_path / "alone"
    proc = run_cli(*SMOKE, "backend=serial", "budget.rounds=10", "budget.repetitions=2", run_dir=alone)
    assert proc.returncode == 0, proc.stderr
    standalone = read_rows(alone)["checksum"].tolist()
    paired = rows.sort_values("cycle").groupby("cycle")["checksum"].first().tolist()
    assert paired[:2] == standalone


def test_the_job_stops_on_time_and_leaves_nothing(timed_out):
    summary = json.loads((timed_out / COMPARE_FILE).read_text())
    assert summary["stopped_by"] == "time" and summary["status"] == "ok"
    assert summary["main_pair"] == ["reactor:processes", "serial:-"]
    assert summary["leftover_processes"] == 0 and summary["leftover_shm"] == []
    assert not [p for p in psutil.process_iter(["cmdline"])
                if str(timed_out) in " ".join(p.info["cmdline"] or [])]


def test_the_stopping_rule_ends_on_precision_or_on_time():
    settings = CompareSettings(precision=0.05, max_seconds=100.0, min_cycles=5)
    steady = [1.5, 1.51, 1.49, 1.5, 1.52, 1.48]
    noisy = [1.0, 2.0, 1.2, 1.9, 1.1, 1.8]
    assert stop_reason(steady[:4], 4, 1.0, settings)[0] == ""  # precise already, but fewer than min_cycles
    reason, (med, lo, hi) = stop_reason(steady, 6, 1.0, settings)
    assert reason == "precision" and lo <= med <= hi and hi / med - 1 <= 0.05
    assert stop_reason(noisy, 6, 1.0, settings)[0] == ""  # +-30%: go on
    assert stop_reason(noisy, 6, 100.0, settings)[0] == "time"
    assert stop_reason([], 1, 1e9, settings)[0] == ""  # never before two cycles
    assert stop_reason([], 2, 100.0, settings)[0] == "time"  # a job without a pair stops on time


def test_bad_input_on_the_command_line_fails_before_anything_runs(tmp_path):
    proc = run_cli("compare", *SMOKE, "backends=serial,nosuch", run_dir=tmp_path / "job")
    assert proc.returncode != 0 and "nosuch" in proc.stderr
    assert not (tmp_path / "job" / "results.csv").exists()


@pytest.mark.parametrize("override,named", [
    ("backends=[serial,ray_packed]", "ray_packed"),
    ("backends=[serial,rllib]", "rllib"),
    ("backends=[serial]", "at least two"),
    ("backends=[serial,serial]", "twice"),
    ("compare.precision=0", "compare.precision"),
    ("compare.min_cycles=1", "compare.min_cycles"),
    ("budget.rounds=0", "budget.rounds"),
    ("backends=[serial,serial@/nonexistent/python3]", "no executable /nonexistent/python3"),
    ("backends=[serial,serial@default]", "same backend and variant"),
])
def test_bad_values_are_refused_naming_them(override, named):
    with pytest.raises(ConfigRangeError, match=named.replace(".", "\\.")):
        _jobs(override=override)


def test_unknown_keys_and_backends_are_refused_by_composition():
    with pytest.raises(Exception, match="nosuch"):
        _jobs(override="compare.nosuch=1")
    with pytest.raises(Exception, match="nosuch"):
        _jobs("serial", "nosuch")


def test_a_backend_that_cannot_run_on_its_interpreter_is_refused(tmp_path):
    """A paired job has no skipped rows: an interpreter without torch cannot hold a dqn backend."""
    bare = tmp_path / "bare-python"  # this Python without site-packages: no torch, numpy, ...
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    bare.chmod(0o755)
    with pytest.raises(ConfigRangeError, match="serial@.*torch cannot be imported"):
        _jobs(override=f"backends=[serial,serial@{bare}]", scenario="dqn")


def test_one_paired_job_holds_two_interpreters(tmp_path):
    """``name@path``: that backend's child runs on another interpreter (here this Python by another path, as
    `harness.interpreter` cannot tell it from a different build); its rows say so in variant and interpreter
    and compute the same work."""
    other = Path(sys.executable).with_name("python3")
    assert other.exists() and str(other) != sys.executable
    out = tmp_path / "job"
    proc = run_cli("compare", *SMOKE, f"backends=[serial,serial@{other}]", "compare.block_rounds=10",
                   "compare.max_seconds=0.5", "compare.min_cycles=2", run_dir=out)
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out)
    version = platform.python_version()
    assert set(rows["variant"]) == {"-", f"py{version}"}
    assert set(rows["interpreter"].astype(str)) == {version}
    assert rows.groupby("cycle")["checksum"].nunique().eq(1).all()
    assert json.loads((out / COMPARE_FILE).read_text())["main_pair"] == [f"serial:py{version}", "serial:-"]


def _jobs(*backends: str, override: str | None = None, scenario: str = "gym") -> list[dict]:
    overrides = [*SMOKE, f"scenario={scenario}", *([f"backends=[{','.join(backends)}]"] if backends else []), *([override] if override else [])]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="compare", overrides=overrides)
        return job_configs(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))


def test_a_waiting_reactor_takes_no_cpu_during_serial_blocks(tmp_path):
    """Structural: what the resident reactor's processes ran while serial ran its blocks (not a timing)."""
    serial_job, reactor_job = _jobs("serial", "reactor")
    serial_job["scenario"]["num_envs"] = reactor_job["scenario"]["num_envs"] = 8
    residents = [Resident(k, job, tmp_path) for k, job in (("serial", serial_job), ("reactor", reactor_job))]
    serial, reactor = residents
    try:
        for r in residents:
            r.expect("warm")
            r.refresh_pids()
        assert len(reactor.pids) >= 2  # the reactor's worker process is resident
        reactor.send("go 200")  # the reactor's workers were just busy: they must fall asleep
        reactor.expect("block")
        settle(reactor.pids)
        procs = [psutil.Process(p) for p in reactor.pids]
        ticks0 = sum(sum(p.cpu_times()[:2]) for p in procs)
        ns0, t0 = cpu_ns(reactor.pids), time.perf_counter()
        for _ in range(5):
            serial.send("go 300")
            serial.expect("block")
        serial_s = time.perf_counter() - t0
        waited_ns = cpu_ns(reactor.pids) - ns0
        ticks = sum(sum(p.cpu_times()[:2]) for p in procs) - ticks0
        # a spinning or yielding waiter would run for most of serial's blocks; a sleeping one wakes only for
        # its liveness checks (one per 10 ms futex slice per process)
        assert waited_ns < 0.01 * serial_s * 1e9, (waited_ns, serial_s)
        # psutil's view agrees: 10 ms ticks charge a whole tick to a process that runs at the tick, so allow a
        # few; a waiter that spun or yielded through serial's blocks would be charged about serial_s
        assert ticks < 0.1 * serial_s, (ticks, serial_s)
    finally:
        for r in residents:
            r.finish()
            r.close()
