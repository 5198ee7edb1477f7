"""The round clock: warm-up is never timed, repetitions have exactly `rounds` latencies.

The clock reads a fake ``perf_counter`` that only the test advances, so what is asserted is exactly what the
clock counts, however busy the machine is."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import harness.clock
from harness.clock import RoundClock


class FakeTime:
    """A perf_counter that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(harness.clock, "time", SimpleNamespace(perf_counter=fake))
    return fake


def test_warmup_and_repetitions(time):
    reps = []
    clock = RoundClock(rounds=4, warmup=3, repetitions=2, on_repetition=reps.append)
    clock.begin()
    for i in range(clock.total_rounds):
        time.sleep(2.0 if i < 3 else 0.5)  # slow warm-up must not leak into timed rounds
        clock.tick()
    assert clock.finished and [r.index for r in reps] == [0, 1]
    for rep in reps:
        assert rep.latencies.tolist() == [0.5] * 4
        assert rep.seconds == pytest.approx(2.0)


def test_callback_time_is_not_counted(time):
    reps = []

    def slow_callback(rep):
        reps.append(rep)
        time.sleep(50.0)

    clock = RoundClock(rounds=2, warmup=0, repetitions=3, on_repetition=slow_callback)
    clock.begin()
    for _ in range(clock.total_rounds):
        time.sleep(1.0)
        clock.tick()
    assert [r.seconds for r in reps] == [pytest.approx(2.0)] * 3


def test_tick_past_the_end_is_an_error():
    clock = RoundClock(rounds=1, warmup=0, repetitions=1, on_repetition=lambda r: None)
    clock.tick()
    with pytest.raises(RuntimeError):
        clock.tick()


def test_progress_is_rate_limited(time):
    seen = []
    clock = RoundClock(rounds=1000, warmup=0, repetitions=1, on_repetition=lambda r: None,
                       on_progress=lambda d, t: seen.append(d), progress_every_s=10)
    for _ in range(1000):
        clock.tick()
    assert seen == []
    assert np.isfinite(clock.total_rounds)


def test_warmup_end_hook_runs_once_outside_timing(time):
    calls = []
    reps = []
    clock = RoundClock(rounds=2, warmup=3, repetitions=2, on_repetition=reps.append,
                       on_warmup_end=lambda: (calls.append(clock.done), time.sleep(50.0)))
    clock.begin()
    for _ in range(clock.total_rounds):
        time.sleep(1.0)
        clock.tick()
    assert calls == [3]
    assert [r.seconds for r in reps] == [pytest.approx(2.0)] * 2


def test_every_round_keeps_its_own_latency(time):
    """Rounds of different lengths land at their own index in every repetition (the short path)."""
    reps = []
    clock = RoundClock(rounds=5, warmup=2, repetitions=3, on_repetition=reps.append)
    clock.begin()
    durations = [0.5 + 0.25 * i for i in range(clock.total_rounds)]
    for d in durations:
        time.sleep(d)
        clock.tick()
    assert [r.latencies.tolist() for r in reps] == [durations[2 + 5 * k: 7 + 5 * k] for k in range(3)]
    assert [r.seconds for r in reps] == [pytest.approx(sum(durations[2 + 5 * k: 7 + 5 * k])) for k in range(3)]


def test_progress_reports_mid_repetition_are_not_counted(time):
    """A progress report between rounds costs neither the next round's latency nor the repetition."""
    seen = []

    def report(done, total):
        seen.append(done)
        time.sleep(100.0)

    reps = []
    clock = RoundClock(rounds=6, warmup=0, repetitions=2, on_repetition=reps.append,
                       on_progress=report, progress_every_s=2.5)
    clock.begin()
    for _ in range(clock.total_rounds):
        time.sleep(1.0)
        clock.tick()
    assert seen == [3, 6, 9, 12]  # due every 2.5 s of rounds: checked at each tick
    for rep in reps:
        assert rep.latencies.tolist() == [1.0] * 6
        assert rep.seconds == pytest.approx(6.0)
    with pytest.raises(RuntimeError):
        clock.tick()  # past the end, also after the short path ran
