"""``python -m harness compare``: resident backends in one job, paired blocks, equal work, no spinning waiters,
the stopping rule, and bad input refused before anything runs."""
from __future__ import annotations

import json
import os
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
from harness.cycles import COMPARE_FILE, CompareSettings, backend_key, stop_reason
from harness.resident import Resident, settle
from harness.runner import job_spec
from harness.hostwatch import cpu_ns
from tests.conftest import read_rows, run_cli

SMOKE = ("scenario=gym", "budget=smoke", "workers=2")
#: the tests that read the module's one timed-out job: under `make test`'s xdist workers (--dist loadgroup) they run
#: on one worker, so the job runs once, not once per worker
SHARED_JOB = pytest.mark.xdist_group("compare_timed_out")


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory) -> Path:
    """A paired job that can only stop on time: an unreachable precision, 1.5 s of cycles."""
    out = tmp_path_factory.mktemp("compare") / "job"
    proc = run_cli("compare", *SMOKE, "backends=serial,reactor,capacity", "compare.block_rounds=10",
                   "compare.precision=0.000001", "compare.max_seconds=1.5", "compare.min_cycles=6", run_dir=out)
    assert proc.returncode == 0, proc.stderr
    return out


@SHARED_JOB
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


@SHARED_JOB
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


@SHARED_JOB
def test_the_job_stops_on_time_and_leaves_nothing(timed_out):
    summary = json.loads((timed_out / COMPARE_FILE).read_text())
    assert summary["stopped_by"] == "time" and summary["status"] == "ok"
    assert summary["main_pair"] == ["reactor:processes", "serial:-"]
    assert summary["leftover_processes"] == 0 and summary["leftover_shm"] == []
    assert not [p for p in psutil.process_iter(["cmdline"])
                if str(timed_out) in " ".join(p.info["cmdline"] or [])]


def test_the_stopping_rule_ends_on_precision_or_on_time_never_before_the_cycles_the_confidence_needs():
    settings = CompareSettings(precision=0.05, max_seconds=100.0, min_cycles=8, respawn_s=0)
    steady = [1.5, 1.51, 1.49, 1.5, 1.52, 1.48, 1.5, 1.51]
    noisy = [1.0, 2.0, 1.2, 1.9, 1.1, 1.8, 1.0, 2.0]
    assert stop_reason(steady[:7], 7, 1.0, settings)[0] == ""  # precise already, but fewer than min_cycles
    reason, (med, lo, hi) = stop_reason(steady, 8, 1.0, settings)
    assert reason == "precision" and lo <= med <= hi and hi / med - 1 <= 0.05
    assert stop_reason(noisy, 8, 1.0, settings)[0] == ""  # +-30%: go on
    assert stop_reason(noisy, 8, 100.0, settings)[0] == "time"
    assert stop_reason(noisy[:7], 7, 100.0, settings)[0] == ""  # min_cycles binds the time stop too
    # a min_cycles below what 95% needs (6 values: [min, max] covers 1 - 2/64) is raised to it
    few = CompareSettings(precision=0.05, max_seconds=1.0, min_cycles=2, respawn_s=0)
    assert stop_reason(steady[:5], 5, 100.0, few) == ("", None)  # 5 values: no 95% interval exists
    assert stop_reason(steady[:6], 6, 100.0, few)[0] == "precision"
    assert stop_reason([], 6, 100.0, few)[0] == "time"  # a job without a pair stops on time


def test_with_respawning_on_the_precision_stop_waits_for_the_end_of_a_second_set_of_processes():
    """One set of processes can carry an offset its interval cannot see (shipped: respawning on)."""
    shipped = CompareSettings(precision=0.05, max_seconds=100.0, min_cycles=8)
    assert shipped.respawn_s > 0
    steady = [1.5, 1.51, 1.49, 1.5, 1.52, 1.48, 1.5, 1.51]
    assert stop_reason(steady, 8, 1.0, shipped, set_ended=False)[0] == ""
    assert stop_reason(steady, 8, 1.0, shipped, set_ended=True)[0] == "precision"
    assert stop_reason(steady, 8, 100.0, shipped, set_ended=False)[0] == "time"  # the cap still ends it


def test_with_respawning_on_the_precision_stop_comes_only_from_the_min_sets_th_set_of_processes_on():
    """Each set of processes brings an offset its cycles cannot show: a job needs several before it may stop."""
    from harness.cycles import set_ended

    shipped = CompareSettings()
    assert shipped.min_sets == 8 and shipped.respawn_s > 0
    # sets 0-6 (epochs) never end a job on precision, whatever their time; the eighth does once it has run its time
    assert not any(set_ended(shipped, epoch, 100.0, 10.0) for epoch in range(7))
    assert not set_ended(shipped, 7, 9.9, 10.0) and set_ended(shipped, 7, 10.0, 10.0)
    assert set_ended(shipped, 11, 10.0, 10.0)
    # as before the setting existed: from the second set on
    assert set_ended(CompareSettings(min_sets=2), 1, 10.0, 10.0)
    assert set_ended(CompareSettings(respawn_s=0), 0, 0.0, 0.0)  # no respawning: no sets to wait for


def test_each_set_of_processes_starts_in_the_reverse_of_the_set_before_and_shuffled_sets_vary_the_first():
    """Every pair of residents is started in both orders, one set after the other; ``shuffled`` also changes which
    resident is started first of all (an offset of the first place that a reversal alone leaves on one backend)."""
    from itertools import islice

    from harness.cycles import StartOrder, start_orders

    keys = ["serial", "serial#2", "reactor", "capacity:lockstep", "capacity"]
    listed = list(islice(start_orders(keys, "listed", 1), 4))
    assert listed == [keys, keys[::-1], keys, keys[::-1]]
    shuffled = list(islice(start_orders(keys, StartOrder.shuffled, 1), 40))
    assert all(sorted(order) == sorted(keys) for order in shuffled)
    assert all(shuffled[i + 1] == shuffled[i][::-1] for i in range(0, 40, 2))
    assert len({order[0] for order in shuffled}) == len(keys)  # every resident is started first in some set
    assert shuffled == list(islice(start_orders(keys, "shuffled", 1), 40))  # the seed decides
    assert shuffled != list(islice(start_orders(keys, "shuffled", 2), 40))
    assert CompareSettings().start_order == "shuffled"
    with pytest.raises(ValueError, match="listed"):
        next(start_orders(keys, "backwards", 1))
    # on the command line Hydra refuses it while composing, naming the override and the valid values
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="compare.start_order=backwards") as err:
        _jobs(override="compare.start_order=backwards")
    assert "shuffled, listed" in str(err.value.__cause__)


def test_bad_input_on_the_command_line_fails_before_anything_runs(tmp_path):
    proc = run_cli("compare", *SMOKE, "backends=serial,nosuch", run_dir=tmp_path / "job")
    assert proc.returncode != 0 and "nosuch" in proc.stderr
    assert not (tmp_path / "job" / "results.csv").exists()


@pytest.mark.parametrize("override,named", [
    ("backends=[serial,puffer]", "puffer"),
    ("backends=[serial]", "at least two"),
    ("compare.precision=0", "compare.precision"),
    ("compare.min_cycles=1", "compare.min_cycles"),
    ("budget.rounds=0", "budget.rounds"),
    ("backends=[serial,serial@/nonexistent/python3]", "no executable /nonexistent/python3"),
    ("backends=[serial,serial@default]", "same backend and variant"),
])
def test_bad_values_are_refused_naming_them(override, named):
    with pytest.raises(ConfigRangeError, match=named.replace(".", "\\.")):
        _jobs(override=override)


def test_extra_work_needs_one_share_per_backend():
    with pytest.raises(ConfigRangeError, match="one share per backend"):
        _jobs("serial", "serial", override="compare.extra_work=[0]")
    with pytest.raises(ConfigRangeError, match="not in"):
        _jobs("serial", "serial", override="compare.extra_work=[0,2]")


def test_an_aa_job_holds_a_backend_and_an_identical_copy_of_it():
    jobs = _jobs("serial", "reactor", "serial", "serial", override="compare.extra_work=[0,0,0,0.03]", warmup=3)
    assert [j["copy"] for j in jobs] == [1, 1, 2, 3]
    assert [backend_key(j) for j in jobs] == ["serial:-", "reactor:processes", "serial:-#2", "serial:-#3"]
    assert [j["backend"]["extra_work"] for j in jobs] == [0, 0, 0, 0.03]
    # a job that injects runs every resident's rounds through the same wrapper (its own cost then cancels)
    assert all(job_spec(j)["extra_work_wrapped"] for j in jobs)
    assert not any("extra_work_wrapped" in job_spec(j) for j in _jobs("serial", "serial", warmup=3))
    assert not any("extra_work_wrapped" in job_spec(j)
                   for j in _jobs("serial", "serial", override="compare.extra_work=[0,0]", warmup=3))


def test_an_aa_job_runs_the_same_work_on_both_copies_and_injects_only_where_asked(tmp_path):
    """Also ``compare.pin_single``: in each cycle both serial copies run on the same CPU, the next CPU each cycle
    (the CPU each ran on is read at its block's end, before it is let go); the ceiling, several processes, never."""
    out = tmp_path / "aa"
    proc = run_cli("compare", *SMOKE, "backends=[serial,serial,capacity_lockstep]", "compare.extra_work=[0,0.05,0]",
                   "budget.warmup_rounds=5", "compare.block_rounds=20", "compare.max_seconds=0.5",
                   "compare.min_cycles=6", "compare.pin_single=true", run_dir=out)
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out)
    cpus = sorted(os.sched_getaffinity(0))
    for backend, cycle, e in zip(rows["backend"], rows["cycle"], (json.loads(x) for x in rows["extra"])):
        if backend == "serial" and len(cpus) > 1:
            assert e["pinned_cpu"] == cpus[cycle % len(cpus)] and e["cpus"] == [e["pinned_cpu"]]
        else:
            assert e["pinned_cpu"] is None
    rows = rows[rows["backend"] == "serial"]
    assert sorted(set(rows["copy"])) == [1, 2]
    assert rows.groupby("cycle")["checksum"].nunique().eq(1).all()  # the injected cost changes no result
    extra = {c: [json.loads(e) for e in g["extra"]] for c, g in rows.groupby("copy")}
    # the copy without injected work ran through the same wrapper, waiting nothing
    assert all(e["extra_work"] == 0 and e["extra_work_rounds"] == 20 for e in extra[1])
    assert all(e["extra_work_rounds"] == 20 for e in extra[2])  # every timed round of each block (block_rounds)
    for e in extra[2]:
        assert e["extra_work"] == 0.05
        # every timed round of the block waited at least the asked share of its own time (a wait ends at its
        # target; a preemption at its end, on a loaded host, can only add: tests/harness/test_selftest_margin.py)
        assert e["extra_work_ms_per_round"] >= 0.05 * 0.999 * e["extra_work_round_ms"] > 0
    summary = json.loads((out / COMPARE_FILE).read_text())
    assert summary["main_pair"] == ["serial:-#2", "serial:-"]
    cores = set(range(psutil.cpu_count()))
    assert all(e["cpus"] and set(e["cpus"]) <= cores for c in extra for e in extra[c])  # where each block ran


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
                   "compare.max_seconds=0.5", "compare.min_cycles=6", run_dir=out)
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out)
    version = platform.python_version()
    assert set(rows["variant"]) == {"-", f"py{version}"}
    assert set(rows["interpreter"].astype(str)) == {version}
    assert rows.groupby("cycle")["checksum"].nunique().eq(1).all()
    assert json.loads((out / COMPARE_FILE).read_text())["main_pair"] == [f"serial:py{version}", "serial:-"]


def _jobs(*backends: str, override: str | None = None, scenario: str = "gym", warmup: int | None = None) -> list[dict]:
    overrides = [*SMOKE, f"scenario={scenario}", *([f"backends=[{','.join(backends)}]"] if backends else []),
                 *([override] if override else []), *([f"budget.warmup_rounds={warmup}"] if warmup else [])]
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


def test_residents_respawned_mid_job_keep_equal_work_and_leave_nothing(tmp_path):
    out = tmp_path / "respawn"
    # a precision any cycles reach: the job ends where its fourth (or a later) set of processes has run its time
    # (four, not the shipped eight: the same rule, in half the respawns)
    proc = run_cli("compare", *SMOKE, "backends=[serial,reactor]", "compare.block_rounds=10",
                   "compare.precision=0.9", "compare.max_seconds=20", "compare.respawn_s=0.4",
                   "compare.respawn_share=0", "compare.min_cycles=6", "compare.min_sets=4", run_dir=out)
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out)
    epochs = [json.loads(e)["epoch"] for e in rows["extra"]]
    # fresh residents, epoch by epoch, and no precision stop before the min_sets-th set
    assert len(set(epochs)) >= 4 and epochs == sorted(epochs)
    summary = json.loads((out / COMPARE_FILE).read_text())
    assert summary["stopped_by"] == "precision"
    last = [json.loads(e)["epoch"] for e in rows["extra"]].count(epochs[-1]) // 2
    first = epochs.count(0) // 2
    assert last >= min(first, 2)  # the last set ran its time, not a cycle or two
    assert rows.groupby("cycle")["checksum"].nunique().eq(1).all()  # each cycle: the same work on both
    summary = json.loads((out / COMPARE_FILE).read_text())
    assert summary["status"] == "ok" and summary["leftover_processes"] == 0 and summary["leftover_shm"] == []
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(out) in " ".join(p.info["cmdline"] or [])]


@SHARED_JOB
def test_without_pinning_no_block_is_pinned(timed_out):
    assert all(json.loads(e)["pinned_cpu"] is None for e in read_rows(timed_out)["extra"])


def test_pinning_a_process_reaches_every_thread_and_a_gone_process_is_said(tmp_path):
    import subprocess

    from harness.hostwatch import pin_process

    script = "import threading, time; threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        time.sleep(0.5)
        cpu = max(os.sched_getaffinity(0))
        assert pin_process(child.pid, {cpu})
        tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        assert len(tids) >= 2 and all(os.sched_getaffinity(t) == {cpu} for t in tids)
    finally:
        child.kill()
        child.wait()
    assert not pin_process(child.pid, {cpu})
