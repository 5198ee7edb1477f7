"""Known answers for the report's statistics."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.report import stats


def test_median_and_interval_contain_the_median() -> None:
    med, lo, hi = stats.median_ci([5.0, 1.0, 3.0, 2.0, 4.0])
    assert med == 3.0
    assert 1.0 <= lo <= med <= hi <= 5.0
    assert lo < hi


def test_interval_of_one_value_and_of_nothing() -> None:
    assert stats.median_ci([7.0]) == (7.0, 7.0, 7.0)
    assert all(math.isnan(v) for v in stats.median_ci([]))
    assert stats.median_ci([float("nan"), 2.0, 4.0])[0] == 3.0


def test_interval_narrows_with_more_repetitions() -> None:
    rng = np.random.default_rng(3)
    small = rng.normal(100, 5, 5)
    large = rng.normal(100, 5, 200)
    _, lo_s, hi_s = stats.median_ci(small)
    _, lo_l, hi_l = stats.median_ci(large)
    assert hi_l - lo_l < hi_s - lo_s
    assert lo_l < 100 < hi_l


def test_coefficient_of_variation() -> None:
    assert stats.coefficient_of_variation([10, 10, 10]) == 0.0
    assert stats.coefficient_of_variation([9, 10, 11]) == pytest.approx(0.1)
    assert math.isnan(stats.coefficient_of_variation([3.0]))


def test_unstable_reasons() -> None:
    assert stats.unstable_reasons([100, 101, 99], seconds=[1, 1, 1]) == []
    assert "repetitions" in stats.unstable_reasons([100, 101], seconds=[1, 1])[0]
    assert any("CV" in r for r in stats.unstable_reasons([50, 100, 150], seconds=[1, 1, 1]))
    assert any("shortest" in r for r in stats.unstable_reasons([100, 101, 99], seconds=[1, 0.0002, 1]))


def test_speedup_of_clearly_separated_samples_is_significant() -> None:
    fast = [200, 202, 198, 201, 199]
    slow = [100, 101, 99, 100.5, 99.5]
    sp = stats.speedup(fast, slow)
    assert sp.ratio == pytest.approx(2.0)
    assert sp.low <= 2.0 <= sp.high
    assert 1.9 < sp.low and sp.high < 2.1
    assert sp.significant and sp.p_value < 0.01


def test_speedup_of_identical_samples_is_not_significant() -> None:
    same = [100, 101, 99, 100.5, 99.5]
    sp = stats.speedup(same, list(same))
    assert sp.ratio == pytest.approx(1.0)
    assert not sp.significant and sp.p_value == pytest.approx(1.0)
    assert sp.low <= 1.0 <= sp.high


def test_overlapping_samples_are_not_significant() -> None:
    sp = stats.speedup([100, 110, 95, 105, 98], [102, 97, 108, 99, 104])
    assert not sp.significant


def test_three_repetitions_cannot_reach_significance() -> None:
    # the smallest two-sided exact p with 3 + 3 samples is 2 / C(6, 3) = 0.1: reported, never hidden
    assert stats.min_p_value(3, 3) == pytest.approx(0.1)
    sp = stats.speedup([300, 301, 302], [100, 101, 102])
    assert sp.ratio == pytest.approx(301 / 101)
    assert not sp.significant and sp.min_p >= stats.ALPHA


def test_speedup_with_an_empty_side_is_nan() -> None:
    sp = stats.speedup([], [1.0, 2.0])
    assert math.isnan(sp.ratio) and not sp.significant


def test_geometric_mean() -> None:
    assert stats.geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert stats.geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    assert math.isnan(stats.geometric_mean([]))
