"""The measured ceiling (backend=capacity) and ale-py's AtariVectorEnv (backend=ale_vector) through the real
CLI: equal checksums where the work is equal, and a labelled exclusion where it provably is not."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import psutil
import pytest

from harness.report.build import make_report
from tests.conftest import read_rows, run_cli
from tests.scenarios.test_cli import SMOKE, sweep_rows


@pytest.fixture(scope="module")
def ceilings(tmp_path_factory) -> dict[str, Path]:
    """One sweep of gym on serial, the reactor and both ceilings (capacity, capacity_lockstep): each job's
    folder by backend. Rounds enough that the other capacity copy completes some in each window (a gym round is
    well under 1 ms, so 300 rounds made a window of about 15 ms, in which a copy waiting for a core behind the
    suite's other worker could complete none: it did once in a fresh clone's `make test`); the tests reading it
    share an xdist group (one sweep per run)."""
    sweep = tmp_path_factory.mktemp("ceilings") / "sweep"
    proc = run_cli("scenario=gym", "backend=serial,reactor,capacity,capacity_lockstep", "workers=2", *SMOKE,
                   "budget.rounds=2000", "budget.warmup_rounds=50", run_dir=sweep, multirun=True, timeout=300)
    sweep_rows(sweep, proc)  # every job ok
    jobs = {read_rows(d).backend.iloc[0] + ":" + read_rows(d).variant.iloc[0]: d
            for d in sweep.iterdir() if d.is_dir()}
    assert set(jobs) == {"serial:-", "reactor:processes", "capacity:-", "capacity:lockstep"}, set(jobs)
    return jobs


def _run_of(jobs: dict[str, Path], labels: list[str], where: Path) -> Path:
    """A run folder holding only the jobs of ``labels`` (copies), as a sweep of those backends would."""
    for label in labels:
        shutil.copytree(jobs[label], where / jobs[label].name)
    return where


@pytest.mark.xdist_group("ceilings_sweep")
def test_capacity_runs_k_serial_copies_with_the_serial_checksum(ceilings, tmp_path):
    run = _run_of(ceilings, ["serial:-", "capacity:-"], tmp_path)
    rows = pd.concat([read_rows(d) for d in run.iterdir()], ignore_index=True)
    serial, cap = rows[rows.backend == "serial"], rows[rows.backend == "capacity"]
    assert list(cap.checksum) == list(serial.checksum)  # copy 0 did exactly the serial work
    for units, extra in zip(cap.units.astype(int), map(json.loads, cap.extra)):
        assert extra["copies"] == 2
        copy0, copy1 = extra["copy_units"]  # what each copy completed in the timed window, copy 0 first
        assert copy0 + copy1 == units  # the ceiling is the work done, not k x copy 0's
        assert copy0 == int(serial.units.iloc[0])  # copy 0's window is exactly the repetition's rounds
        assert copy1 > 0
    rep = make_report([run], figures=False)
    s = rep.analysis.summary.set_index("label")
    assert s.loc["serial:-", "ceiling_source"] == "measured"
    assert s.loc["capacity:-", "efficiency"] == 1.0  # efficiency is measured against the capacity rows
    assert s.loc["capacity:-", "capacity"] > 0


def test_capacity_copies_end_with_the_backend():
    from backends.capacity import CapacityBackend
    from backends.capacity import CapacityConfig
    from scenarios import make_scenario
    from scenarios.configs import GymConfig

    class Clock:
        def begin(self): pass
        def tick(self): pass

    scenario = make_scenario(GymConfig(num_envs=2), 0)
    backend = CapacityBackend(CapacityConfig(), 3)
    backend.start(scenario, scenario.make_server())
    pids = [p.pid for p in backend.procs]
    assert len(pids) == 2
    try:
        backend.run(50, Clock())
    finally:
        backend.stop()
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert os.getpid() not in pids
    assert psutil.Process().children(recursive=True) == []  # no helper process (resource tracker) left


@pytest.mark.slow  # fast: tests/harness/test_vector_options.py's test_ale_vector_rows_record_its_options_and_keep_
# the_serial_checksum runs the same env (PongNoFrameskip-v4, full actions) on 4 envs and asserts the same
def test_ale_vector_without_sticky_actions_equals_serial(tmp_path):
    # PongNoFrameskip-v4: frameskip 1, no sticky actions -> the C++ env must reproduce the Python env
    proc = run_cli("scenario=atari", "scenario.env_id=PongNoFrameskip-v4", "scenario.actions=full",
                   "backend=serial,ale_vector", *SMOKE, "budget.rounds=30", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    serial, ale = rows[rows.backend == "serial"], rows[rows.backend == "ale_vector"]
    assert len(ale) == 2 and list(ale.checksum) == list(serial.checksum)
    assert all(json.loads(e)["equal_work_promised"] is True for e in ale.extra)


def test_ale_vector_with_sticky_actions_is_labelled_not_the_same_work(tmp_path):
    # ALE/Pong-v5 (sticky actions 0.25) with all 6 actions: the C++ env's sticky-action RNG differs, so its
    # frames differ; the report must say so and keep the configuration valid for the other backends
    proc = run_cli("scenario=atari", "scenario.actions=full", "backend=serial,ale_vector", *SMOKE,
                   "budget.rounds=30", run_dir=tmp_path, multirun=True)
    rows = sweep_rows(tmp_path, proc)
    ale = rows[rows.backend == "ale_vector"]
    assert list(ale.units) == list(rows[rows.backend == "serial"].units)  # the same amount of work
    assert all(json.loads(e)["equal_work_promised"] is False for e in ale.extra)
    assert set(ale.checksum).isdisjoint(set(rows[rows.backend == "serial"].checksum))
    rep = make_report([tmp_path], figures=False)
    config = rep.analysis.summary["config"].iloc[0]
    assert rep.analysis.unequal == {(config, "ale_vector:-")}
    assert rep.analysis.validity["valid"].all()  # excluded from the comparison, not a spoiler of it
    s = rep.analysis.summary.set_index("label")
    assert not s.loc["ale_vector:-", "equal_work"] and s.loc["serial:-", "equal_work"]
    assert all("ale_vector" not in h.verdict for h in rep.analysis.headlines)


@pytest.mark.xdist_group("ceilings_sweep")
def test_lockstep_capacity_meets_every_round_and_is_the_synchronized_ceiling(ceilings, tmp_path):
    run = _run_of(ceilings, ["serial:-", "reactor:processes", "capacity:lockstep"], tmp_path)
    rows = pd.concat([read_rows(d) for d in run.iterdir()], ignore_index=True)
    serial, sync = rows[rows.backend == "serial"], rows[rows.backend == "capacity"]
    assert set(sync.variant) == {"lockstep"}
    assert list(sync.checksum) == list(serial.checksum)  # copy 0 did exactly the serial work
    assert (sync.units.astype(int) == 2 * serial.units.astype(int).iloc[0]).all()
    # the barrier: every copy completed every round of the window
    assert all(json.loads(e)["copy_units"] == [int(serial.units.iloc[0])] * 2 for e in sync.extra)
    rep = make_report([run], figures=False)
    s = rep.analysis.summary.set_index("label")
    k = s.loc["capacity:lockstep", "median"] / s.loc["serial:-", "median"]
    assert abs(s.loc["reactor:processes", "sync_capacity"] - k) < 1e-9
    assert abs(s.loc["reactor:processes", "sync_efficiency"]
               - s.loc["reactor:processes", "median"] / s.loc["capacity:lockstep", "median"]) < 1e-9
    (head,) = rep.analysis.headlines
    assert "capacity:lockstep" not in head.medians and head.best_alternative is None  # a bound, not a contender
    assert "synchronized rounds can reach" in head.verdict and abs(head.sync_capacity - k) < 1e-9


@pytest.mark.parametrize("says_when", [True, False], ids=["clock says when its timer stops", "clock does not say"])
def test_lockstep_copies_never_run_a_round_while_copy_0_is_between_blocks(says_when):
    """A paired job holds copy 0 in its clock's tick between two blocks (its timer stopped, other backends running):
    no other copy may start the next round meanwhile. One that did would run it outside every timed window, and
    copy 0 would run that round alone in the next block: with one round per block (dqn) the ceiling measured one
    copy alone, k times over. Where the clock promises that a tick does not stop its timer, the copies go on at
    once (no hand-off added to the round); a clock that says nothing holds them at every tick."""
    import time

    from backends.capacity import CapacityBackend, CapacityConfig
    from scenarios import make_scenario
    from scenarios.configs import GymConfig

    scenario = make_scenario(GymConfig(num_envs=2), 0)
    backend = CapacityBackend(CapacityConfig(lockstep=True), 3)
    backend.start(scenario, scenario.make_server())

    class BlockEndingClock:
        ticks = 0
        ahead: list[list[int]] = []

        def begin(self): pass

        def tick(self):
            self.ticks += 1
            if self.ticks % 5 in (0, 2):  # 0: a block ends here (copy 0 waits for the other backends); 2: it does not
                time.sleep(0.05)  # hundreds of gym rounds' time
                self.ahead.append([int(backend.counts[r] - backend.counts[0]) for r in (1, 2)])

    clock = BlockEndingClock()
    if says_when:
        clock.timer_stops_at_next_tick = lambda: (clock.ticks + 1) % 5 == 0
    try:
        backend.run(30, clock)
    finally:
        backend.stop()
    going_on = [1, 1] if says_when else [0, 0]
    assert clock.ahead == [going_on, [0, 0]] * 6  # at a block's end each copy finished copy 0's round, no other


def test_lockstep_copies_wait_for_each_other_and_a_dead_copy_fails_the_run():
    import signal

    from backends.capacity import CapacityBackend, CapacityConfig
    from scenarios import make_scenario
    from scenarios.configs import GymConfig

    scenario = make_scenario(GymConfig(num_envs=2), 0)
    backend = CapacityBackend(CapacityConfig(lockstep=True), 2)
    assert backend.variant == "lockstep"
    backend.start(scenario, scenario.make_server())

    class KillingClock:
        ticks = 0

        def begin(self): pass

        def tick(self):
            self.ticks += 1
            if self.ticks == 20:
                os.kill(backend.procs[0].pid, signal.SIGKILL)

    clock = KillingClock()
    try:
        with pytest.raises(RuntimeError, match="capacity copy ended"):
            backend.run(10**7, clock)  # would run for hours were the barrier not watching its copies
    finally:
        backend.stop()
    assert 20 <= clock.ticks < 10**7
    assert psutil.Process().children(recursive=True) == []
