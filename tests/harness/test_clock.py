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


def test_the_clock_says_before_each_tick_whether_its_timer_may_stop_there_and_keeps_a_no(time):
    """`timer_stops_at_next_tick` (read by the synchronized ceiling to hold its copies only where needed): True before
    every tick that stops the timer (the warm-up's end, a repetition's end, a progress report), and False a promise:
    a report that falls due after the answer waits one more tick."""
    stops = []
    clock = RoundClock(rounds=3, warmup=2, repetitions=3, on_repetition=lambda rep: None,
                       on_progress=lambda done, total: None, progress_every_s=1.0,
                       on_timer=lambda running: stops.append(clock.done) if not running else None)
    assert clock.timer_stops_at_next_tick()  # before begin(): the first tick begins the clock
    clock.begin()
    said = {}
    for _ in range(clock.total_rounds):
        said[clock.done + 1] = clock.timer_stops_at_next_tick()
        time.sleep(0.4)  # a report falls due every third round or so, sometimes after the answer
        clock.tick()
    assert stops and all(said[t] for t in stops)  # every stop was announced
    assert {2, 5, 8, 11} <= set(stops)  # the warm-up's end and each repetition's
    reports = [t for t in stops if t not in (2, 5, 8, 11)]
    assert reports and all(said[t] for t in reports)  # a report only where announced: a promise kept
    assert any(not said[t] and t + 1 in reports for t in said)  # (and one that came due after a no, a tick later)


def test_a_paired_jobs_block_clock_says_which_tick_ends_the_warm_up_or_a_block():
    from harness.compare_child import BlockClock

    blocks = iter([3, 2, None])
    stops, said = [], {}
    clock = BlockClock(2, lambda: next(blocks), on_warm=lambda s, r: None, on_block=lambda s, lat: None,
                       timer=lambda running: stops.append(clock.done) if not running else None)
    assert clock.timer_stops_at_next_tick()
    clock.begin()
    go_on = True
    while go_on:
        said[clock.done + 1] = clock.timer_stops_at_next_tick()
        go_on = clock.tick()
    assert (clock.done, clock.stopped) == (7, True)  # the parent's stop ends the rounds at the tick that asked
    with pytest.raises(RuntimeError, match="a round after the clock said stop"):  # a backend that ran on
        clock.tick()
    assert stops == [2, 5, 7]  # the warm-up's end, then each block's
    assert [t for t, yes in said.items() if yes] == stops
