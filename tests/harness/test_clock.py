"""The round clock: warm-up is never timed, repetitions have exactly `rounds` latencies."""
from __future__ import annotations

import time

import numpy as np
import pytest

from harness.clock import RoundClock


def test_warmup_and_repetitions():
    reps = []
    clock = RoundClock(rounds=4, warmup=3, repetitions=2, on_repetition=reps.append)
    clock.begin()
    for i in range(clock.total_rounds):
        time.sleep(0.002 if i < 3 else 0.0005)  # slow warm-up must not leak into timed rounds
        clock.tick()
    assert clock.finished and [r.index for r in reps] == [0, 1]
    for rep in reps:
        assert rep.latencies.shape == (4,)
        assert rep.latencies.max() < 0.002
        assert rep.seconds == pytest.approx(rep.latencies.sum(), rel=0.05, abs=1e-4)


def test_callback_time_is_not_counted():
    reps = []

    def slow_callback(rep):
        reps.append(rep)
        time.sleep(0.05)

    clock = RoundClock(rounds=2, warmup=0, repetitions=3, on_repetition=slow_callback)
    for _ in range(clock.total_rounds):
        clock.tick()
    assert all(r.seconds < 0.02 for r in reps)


def test_tick_past_the_end_is_an_error():
    clock = RoundClock(rounds=1, warmup=0, repetitions=1, on_repetition=lambda r: None)
    clock.tick()
    with pytest.raises(RuntimeError):
        clock.tick()


def test_progress_is_rate_limited():
    seen = []
    clock = RoundClock(rounds=1000, warmup=0, repetitions=1, on_repetition=lambda r: None,
                       on_progress=lambda d, t: seen.append(d), progress_every_s=10)
    for _ in range(1000):
        clock.tick()
    assert seen == []
    assert np.isfinite(clock.total_rounds)


def test_warmup_end_hook_runs_once_outside_timing():
    calls = []
    reps = []
    clock = RoundClock(rounds=2, warmup=3, repetitions=2, on_repetition=reps.append,
                       on_warmup_end=lambda: (calls.append(clock.done), time.sleep(0.05)))
    for _ in range(clock.total_rounds):
        clock.tick()
    assert calls == [3]
    assert all(r.seconds < 0.02 for r in reps)
