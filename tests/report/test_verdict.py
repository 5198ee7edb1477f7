"""The headline and its verdict rule on synthetic results with known answers (docs/report.md)."""
from __future__ import annotations

import pytest

from harness.report.build import make_report
from harness.report.documents import to_html, to_markdown
from harness.report.readme import readme_section
from harness.report.stats import ratio_interval
from harness.report.verdict import standalone_word, verdict_text
from harness.report.stats import Speedup
from tests.report.synthetic import Jobs


def _tight(center: float, n: int = 10) -> list[float]:
    """n repetitions within +-1% of ``center``."""
    return [center * (1 + 0.002 * (i - n / 2)) for i in range(n)]


def _head(rep):
    (h,) = rep.analysis.headlines
    return h


def test_serial_wins_and_the_reactor_is_slower(jobs: Jobs) -> None:
    jobs.write("gym", "serial", "-", 2, _tight(1000))
    jobs.write("gym", "reactor", "processes", 2, _tight(810))
    jobs.write("gym", "ray", "actors", 2, _tight(100))
    jobs.write("gym", "ray", "actors_packed", 2, _tight(400))
    jobs.write("gym", "vector", "-", 2, _tight(700))
    jobs.write("gym", "capacity", "-", 2, _tight(1800))
    h = _head(make_report([jobs.root], figures=False))
    assert h.fastest == "serial:-" and h.runner_up == "reactor:processes"
    assert h.best_alternative == "vector:-"  # fastest non-serial, non-reactor, non-ceiling backend
    assert h.vs_serial.ratio == pytest.approx(0.81, rel=1e-3) and h.vs_serial.high < 1
    assert h.vs_best.ratio == pytest.approx(810 / 700, rel=1e-3) and h.vs_best.low > 1
    assert h.vs_paper_ray.ratio == pytest.approx(8.1, rel=1e-3)
    assert h.ceiling_source == "measured" and h.capacity == pytest.approx(1.8, rel=1e-3)
    assert h.efficiency == pytest.approx(810 / 1800, rel=1e-3)
    assert h.verdict.startswith("fastest: serial:-")
    assert "reactor is 0.81x [" in h.verdict and "(slower than it)" in h.verdict


def test_overlapping_leaders_name_no_winner(jobs: Jobs) -> None:
    jobs.write("gym", "serial", "-", 2, [1000, 900, 1100, 950, 1050, 1020, 980, 1010, 990, 1005])
    jobs.write("gym", "reactor", "processes", 2, [1010, 920, 1080, 960, 1040, 1000, 990, 1015, 985, 1002])
    h = _head(make_report([jobs.root], figures=False))
    assert h.fastest is None and h.lead.low <= 1 <= h.lead.high
    assert h.verdict.startswith("no clear difference between")


def test_reactor_fastest_only_when_its_interval_excludes_one(jobs: Jobs) -> None:
    jobs.write("gym", "serial", "-", 2, _tight(1000))
    jobs.write("gym", "reactor", "processes", 2, _tight(1500))
    jobs.write("gym", "ray", "compiled_packed", 2, _tight(1200))
    rep = make_report([jobs.root], figures=False)
    h = _head(rep)
    assert h.fastest == "reactor:processes" and h.lead.low > 1
    assert h.verdict.startswith("fastest: reactor:processes (1.25x [")
    assert h.vs_paper_ray is None  # ray:actors not measured: no ratio, not a guess
    md = to_markdown(rep)
    said = h.verdict.replace("reactor:processes", "reactor").replace("ray:compiled_packed", "ray_compiled_packed")
    assert "Verdicts" in md and said in md  # backends by the preset a user types
    assert said in readme_section(rep)


def test_not_the_same_work_is_labelled_and_left_out_of_the_verdict(jobs: Jobs) -> None:
    jobs.write("atari", "serial", "-", 2, _tight(1000), checksums=[f"s{i}" for i in range(10)])
    jobs.write("atari", "reactor", "processes", 2, _tight(900), checksums=[f"s{i}" for i in range(10)])
    # the fastest, but its checksums differ and it never promised equal work: excluded, config still valid
    jobs.write("atari", "ale_vector", "-", 2, _tight(5000), checksums=[f"v{i}" for i in range(10)],
               extras=[{"equal_work_promised": False}] * 10)
    rep = make_report([jobs.root], figures=False)
    assert rep.analysis.validity["valid"].all()
    h = _head(rep)
    assert "ale_vector:-" not in h.medians and h.best_alternative is None
    assert h.fastest == "serial:-"
    assert "NOT THE SAME WORK" in to_html(rep)  # the scenario table (collapsed in report.html)


def test_an_unpromised_backend_whose_checksums_match_counts(jobs: Jobs) -> None:
    jobs.write("atari", "serial", "-", 2, _tight(1000), checksums=[f"s{i}" for i in range(10)])
    jobs.write("atari", "ale_vector", "-", 2, _tight(3000), checksums=[f"s{i}" for i in range(10)],
               extras=[{"equal_work_promised": False}] * 10)
    h = _head(make_report([jobs.root], figures=False))
    assert h.best_alternative == "ale_vector:-" and h.fastest == "ale_vector:-"


def test_standalone_verdicts_follow_the_one_rule() -> None:
    above, across, below = (Speedup(1.2, 1.1, 1.3, 0.01, True, 5, 5), Speedup(1.05, 0.97, 1.12, 0.3, False, 5, 5),
                            Speedup(0.8, 0.7, 0.9, 0.01, True, 5, 5))
    assert [standalone_word(s) for s in (above, across, below, None)] == [
        "faster", "no clear difference", "slower", "too few cycles"]
    # two repetitions a side: a bootstrap of them is no interval, whatever it prints
    assert standalone_word(Speedup(1.2, 1.1, 1.3, 0.3, False, 2, 5)) == "too few cycles"
    winner, text = verdict_text("serial:-", "reactor:processes", above, below, True)
    assert winner == "serial:-" and text == ("fastest: serial:- (1.2x [1.1, 1.3] of reactor:processes); "
                                             "reactor is 0.8x [0.7, 0.9] of serial:- (slower than it)")
    winner, text = verdict_text("ray:actors_packed", "serial:-", across, Speedup(0.99, 0.9, 1.1, 0.5, False, 5, 5), True)
    assert winner is None and text.startswith("no clear difference between ray:actors_packed and serial:-")
    assert "no clear difference from it" in text and "within noise" not in text
    winner, text = verdict_text("serial:-", "reactor:processes", Speedup(1.5, 1.4, 1.6, 0.1, False, 2, 2), None, True)
    assert winner is None and text.startswith("too few repetitions (2) to tell serial:- from reactor:processes")


def test_ratio_interval_is_scipy_bootstrap_and_brackets_the_ratio() -> None:
    import numpy as np

    x, y = np.array(_tight(200)), np.array(_tight(100))
    lo, hi = ratio_interval(x, y)
    assert lo <= 2.0 <= hi and hi - lo < 0.05
    assert ratio_interval(np.array([3.0]), np.array([1.0])) == (3.0, 3.0)


def test_a_ceiling_above_k_times_serial_is_flagged_as_drift(jobs: Jobs) -> None:
    from harness.report.render import warnings

    jobs.write("gym", "serial", "-", 2, _tight(1000))
    jobs.write("gym", "reactor", "processes", 2, _tight(1300))
    jobs.write("gym", "capacity", "-", 2, _tight(2420))  # 2.42x serial from 2 processes: impossible
    drift = [w for w in warnings(make_report([jobs.root], figures=False)) if "measured ceiling is" in w]
    assert len(drift) == 1 and "2.42x serial with 2 worker(s)" in drift[0]


def test_a_plausible_ceiling_is_not_flagged(jobs: Jobs) -> None:
    from harness.report.render import warnings

    jobs.write("gym", "serial", "-", 2, _tight(1000))
    jobs.write("gym", "reactor", "processes", 2, _tight(1300))
    jobs.write("gym", "capacity", "-", 2, _tight(1900))
    assert not [w for w in warnings(make_report([jobs.root], figures=False)) if "measured ceiling is" in w]


def test_trials_are_also_paired_which_cancels_the_drift_between_them(jobs: Jobs) -> None:
    """The machine runs at 1x or 0.5x (as the development VM does): serial's jobs ran fast in trials 0-4 and
    slow in 5-7, the reactor's fast in 0-2 and slow from trial 3 on; within every trial that kept one speed the
    reactor made 1.2x serial. Pooling all repetitions compares mostly-fast serial with mostly-slow reactor
    (0.6x); pairing within trials finds 1.2x."""
    serial_speed = [1.0] * 5 + [0.5] * 3
    reactor_speed = [1.0] * 3 + [0.5] * 5
    for t in range(8):
        at = f"2026-01-01T00:{t:02d}:00+00:00"
        jobs.write("gym", "serial", "-", 2, _tight(1000 * serial_speed[t]), meta={"trial": t}, started_at=at)
        jobs.write("gym", "reactor", "processes", 2, _tight(1200 * reactor_speed[t]), meta={"trial": t}, started_at=at)
    h = _head(make_report([jobs.root], figures=False))
    assert h.vs_serial.ratio == pytest.approx(0.6, rel=3e-2)  # pooled
    paired = h.vs_serial_paired
    assert paired is not None and paired.n_a == 8
    assert paired.ratio == pytest.approx(1.2, rel=1e-3) and paired.low <= 1.2 <= paired.high
    assert "paired within 8 trials: reactor / serial 1.2x [" in h.verdict


def test_no_paired_reading_without_enough_trials(jobs: Jobs) -> None:
    for t in range(2):
        jobs.write("gym", "serial", "-", 2, _tight(1000), meta={"trial": t})
        jobs.write("gym", "reactor", "processes", 2, _tight(1500), meta={"trial": t})
    h = _head(make_report([jobs.root], figures=False))
    assert h.vs_serial_paired is None and "paired within" not in h.verdict
