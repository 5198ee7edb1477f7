"""The harness against known answers: exact values of its intervals, their error rate on series with a known
median, the A/A machinery (labels, copies, injected extra work) and the row fields that used to be false."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from harness import metadata, selftest
from harness.child import ExtraWork, build, row_extra
from harness.labels import BackendLabel
from harness.report import changepoint, stats
from harness.report.paired import _serial_on_same_interpreter

# ---------------------------------------------------------------- labels


@pytest.mark.parametrize("text,parts", [
    ("serial:-", ("serial", "-", "", 1)),
    ("reactor:processes", ("reactor", "processes", "", 1)),
    ("reactor:threads ft", ("reactor", "threads", "ft", 1)),
    ("serial:ft", ("serial", "-", "ft", 1)),
    ("reactor:threads py3.12.1", ("reactor", "threads", "py3.12.1", 1)),
    ("serial:-#2", ("serial", "-", "", 2)),
    ("reactor:threads ft#3", ("reactor", "threads", "ft", 3)),
])
def test_a_label_parses_into_its_parts_and_renders_back(text, parts):
    label = BackendLabel.parse(text)
    assert (label.name, label.variant, label.interpreter, label.copy) == parts
    assert label.render() == text


def test_the_baseline_is_serial_on_the_same_interpreter_whatever_the_interpreter():
    labels = ["serial:-", "serial:ft", "serial:py3.12.1", "reactor:threads py3.12.1", "reactor:threads ft"]
    assert _serial_on_same_interpreter("reactor:threads py3.12.1", labels) == "serial:py3.12.1"
    assert _serial_on_same_interpreter("reactor:threads ft", labels) == "serial:ft"
    assert _serial_on_same_interpreter("reactor:processes", labels) == "serial:-"
    assert _serial_on_same_interpreter("reactor:threads py3.12.1", ["serial:-"]) is None
    assert BackendLabel.parse("serial:-#2").first_copy().render() == "serial:-"


# ---------------------------------------------------------------- intervals: exact values


def test_six_values_are_the_fewest_a_95_percent_median_interval_needs():
    assert stats.min_samples(0.95) == 6 and stats.min_samples(0.99) == 8
    assert stats.order_statistic_ranks(5) is None
    assert stats.order_statistic_ranks(6) == (1, 6, pytest.approx(1 - 2 / 64))
    assert stats.order_statistic_ranks(9) == (2, 8, pytest.approx(1 - 2 * 10 / 512))


def test_the_order_statistic_interval_of_independent_values_is_exact():
    x = [5.0, 1.0, 3.0, 2.0, 4.0, 6.0]
    r = stats.median_interval(x, dependent=False)
    assert (r.median, r.low, r.high) == (3.5, 1.0, 6.0) and r.coverage == pytest.approx(0.96875)
    nine = [9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0]
    r = stats.median_interval(nine, dependent=False)
    assert (r.low, r.high) == (2.0, 8.0)
    few = stats.median_interval(x[:5])
    assert few.median == 3.0 and math.isnan(few.low) and not few.enough
    assert stats.verdict(few.low, few.high) == stats.TOO_FEW


def test_neighbouring_cycles_that_move_together_widen_the_interval():
    rng = np.random.default_rng(0)
    drift = np.repeat(rng.normal(0, 0.05, 40), 3)  # the host's speed held for 3 cycles at a time
    x = 1.0 + drift + rng.normal(0, 0.005, drift.size)
    dep, ind = stats.median_interval(x), stats.median_interval(x, dependent=False)
    assert dep.n_eff < 0.5 * x.size
    assert dep.low < ind.low and dep.high > ind.high


def test_verdict_calls_a_winner_only_beyond_the_margin():
    assert stats.verdict(1.02, 1.05) == stats.FASTER
    assert stats.verdict(0.95, 0.98) == stats.SLOWER
    assert stats.verdict(0.99, 1.02) == stats.UNCLEAR
    assert stats.verdict(1.005, 1.02, margin=0.01) == stats.UNCLEAR  # clears 1, not the floor
    assert stats.verdict(0.995, 1.008, margin=0.01) == stats.EQUIVALENT
    assert stats.verdict(1.02, 1.05, margin=0.01) == stats.FASTER
    assert stats.half_width(2.0, 1.8, 2.1) == pytest.approx(0.1)
    assert stats.half_width(2.0, math.nan, 2.1) == math.inf


def _ar1(rng: np.random.Generator, n: int, rho: float) -> np.ndarray:
    e = rng.normal(0, 1, n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = rho * x[i - 1] + math.sqrt(1 - rho * rho) * e[i]
    return np.exp(0.05 * x)  # ratios around a median of exactly 1


@pytest.mark.parametrize("rho", [0.0, 0.5])
def test_identical_backends_are_called_different_about_5_percent_of_the_time_at_most(rho):
    """The promise itself, on series whose median is 1 by construction (independent, and correlated as a
    drifting host makes them): the harness's interval calls a false winner at most ~5% of the time, where the
    percentile bootstrap it replaced does so far more often once cycles are correlated."""
    rng = np.random.default_rng(7)
    trials, n = 400, 40
    false_new = false_boot = 0
    for _ in range(trials):
        x = _ar1(rng, n, rho)
        r = stats.median_interval(x)
        false_new += stats.verdict(r.low, r.high) in (stats.FASTER, stats.SLOWER)
        _, lo, hi = stats.median_ci(x, n_boot=400)
        false_boot += stats.verdict(lo, hi) in (stats.FASTER, stats.SLOWER)
    assert false_new / trials <= 0.06
    if rho > 0:
        assert false_boot / trials > 2 * false_new / trials


def test_speedup_uses_the_bootstrap_samples_it_is_given():
    a, b = np.linspace(1.0, 2.0, 9), np.linspace(1.2, 2.4, 9)
    coarse, fine = stats.speedup(a, b, n_boot=20), stats.speedup(a, b, n_boot=4000)
    assert (coarse.low, coarse.high) != (fine.low, fine.high)


def test_change_points_index_their_own_input_with_gaps():
    values = [10.0] * 20 + [math.nan] * 5 + [20.0] * 20
    splits = changepoint.change_points(values)
    assert [s.index for s in splits] == [25]  # the first value of the new regime in ``values`` itself


# ---------------------------------------------------------------- rows that say what is true


def test_a_tree_with_an_untracked_file_is_dirty(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    monkeypatch.setattr(metadata, "REPO", tmp_path)
    assert metadata.machine_metadata.__wrapped__()["git_dirty"] is False
    (tmp_path / "new_module.py").write_text("x = 1\n")
    assert metadata.machine_metadata.__wrapped__()["git_dirty"] is True


SPEC = {"scenario": {"name": "gym", "env_id": "CartPole-v1", "num_envs": 4}, "backend": {"name": "serial"},
        "budget": {"rounds": 5, "warmup_rounds": 3, "repetitions": 1, "timeout_s": 60}, "workers": 1,
        "seed": 0, "threads_per_worker": 1}


def test_what_a_backend_measured_for_its_row_is_not_overwritten_by_a_default():
    """RLlib measures its runners' torch threads and puts them in ``row_extra``; the base class's
    ``torch_threads_observed()`` says None. The row keeps the measured value (both children share this body)."""
    job = build(json.loads(json.dumps(SPEC)))
    assert job.backend.torch_threads_observed() is None
    job.backend.row_extra["torch_threads_observed"] = 3
    assert row_extra(job)["torch_threads_observed"] == 3
    job.server.close()


def test_an_error_raised_while_tearing_down_after_stop_is_reported(monkeypatch):
    from backends.serial import SerialBackend
    from harness import compare_child

    original = SerialBackend.stop

    def failing_stop(self):
        original(self)
        raise RuntimeError("stop left a segment behind")

    monkeypatch.setattr(SerialBackend, "stop", failing_stop)
    commands = iter([5, 5, None])
    sent = []
    with pytest.raises(RuntimeError, match="segment behind"):
        compare_child.measure_blocks(json.loads(json.dumps(SPEC)), sent.append, lambda: next(commands))
    assert [m["type"] for m in sent].count("block") == 2


def test_a_negative_extra_work_is_refused():
    """(What a round of extra work costs is measured in tests/harness/test_selftest_margin.py.)"""
    with pytest.raises(ValueError, match="must be >= 0"):
        ExtraWork(-0.1, warmup_rounds=2)


def test_free_threaded_threads_run_their_workers_in_parallel_lanes(monkeypatch):
    """On a free-threaded interpreter the threads executor's workers are placed on threads that run in
    parallel: the critical-path split must see them in separate lanes, as for processes (with a GIL: one)."""
    from backends import make_backend
    from harness.config import SCENARIO_SCHEMAS, config_object
    from backends.reactor import SCHEMA
    from reactor_backend import assemble
    from scenarios import make_scenario
    from tests.conftest import TickClock

    scenario = make_scenario(config_object(SCENARIO_SCHEMAS["gym"], dict(SPEC["scenario"])), 0)
    backend = make_backend(config_object(SCHEMA, {"name": "reactor", "executor": "threads"}), 2)
    server = scenario.make_server()
    backend.start(scenario, server)
    try:
        top = backend.program(1, TickClock())
        program = assemble(top)
        monkeypatch.setattr(sys, "_is_gil_enabled", lambda: True, raising=False)
        assert backend._lanes_of_workers(program, top) == [0] * scenario.num_workers
        monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
        lanes = backend._lanes_of_workers(program, top)
        assert len(set(lanes)) == 2 and len(lanes) == scenario.num_workers
    finally:
        backend.stop()
        server.close()


# ---------------------------------------------------------------- the self-test's reading


def test_selftest_options_are_checked_before_anything_runs():
    with pytest.raises(ValueError, match="selftest.nosuch"):
        selftest.parse_args(["selftest.nosuch=1"])
    with pytest.raises(ValueError, match="effects"):
        selftest.parse_args(["selftest.effects=[0.02,-1]"])
    with pytest.raises(ValueError, match="selftest.effects"):
        selftest.parse_args(["backends=[serial,reactor]"])
    with pytest.raises(ValueError, match="selftest.out"):  # each job's folder is set per job: it was ignored
        selftest.parse_args(["hydra.run.dir=/tmp/somewhere"])
    settings, passed = selftest.parse_args(["selftest.jobs=3", "selftest.effects=[0.03]", "scenario=gym"])
    assert settings.jobs == 3 and settings.effects == [0.03] and passed == ["scenario=gym"]
    assert selftest.main(["selftest.jobs=0"]) == 2


def test_every_row_can_say_what_cpu_its_work_cost():
    """The CPU the job's process tree used per unit while the clock's timer ran: a busy-waiting backend shows there;
    what the harness does between the timed stretches (the rows, the messages) is no part of it."""
    import time as _time
    from harness.child import counting_timer, cpu_fields, reset_metrics

    def burn(seconds: float) -> None:
        t0 = _time.process_time()
        while _time.process_time() - t0 < seconds:
            pass

    job = build(json.loads(json.dumps(SPEC)))
    timer = counting_timer(job)
    timer(True)
    burn(0.02)  # the warm-up's: dropped by reset_metrics
    timer(False)
    reset_metrics(job)
    for _ in range(2):
        burn(0.03)  # between stretches: not counted
        timer(True)
        burn(0.05)  # 2 x 50 ms of CPU in this process while the timer runs
        timer(False)
    f = cpu_fields(job, units=1000)
    assert f["tree_cpu_ms_per_unit"] == pytest.approx(0.1, abs=0.005)  # 100 ms over 1000 units
    assert 0 < f["tree_cpu_cores_busy"] <= 1.05
    assert cpu_fields(job, units=1000) == {}  # counted once
    job.server.close()
