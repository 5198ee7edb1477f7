"""An interval that keeps its promise as drawn (issue 47, item 2), with exact known answers: the correction for
dependence between neighbouring cycles only widens, the coverage shown is that of the ranks drawn, and "too few
cycles" is given only where not even [min, max] reaches the confidence at the series' effective size."""
from __future__ import annotations

import numpy as np
import pytest

from harness.report import intervals as I


def test_rank_coverage_is_the_exact_binomial_at_whole_ranks_and_sizes():
    assert I.rank_coverage(2, 9) == pytest.approx(1 - 2 * 10 / 512)
    assert I.rank_coverage(1, 6) == pytest.approx(1 - 2 / 64)
    assert I.rank_coverage(1, 5.4) == pytest.approx(1 - 2 * 0.5 ** 5.4)  # [min, max] of 5.4 effective values


def test_a_series_worth_nine_and_a_half_values_is_bounded_at_whole_ranks():
    # the former interpolation put the lower end at position 2.2 of 10 (narrower than rank 2, the independent
    # series' own end); now rank 2 of 10, whose coverage at 9.5 effective values is what is shown
    k, k_hi, c = I.drawn_ranks(10, 9.5)
    assert (k, k_hi) == (2, 9)
    assert c == pytest.approx(I.rank_coverage(2 * 10.5 / 11, 9.5)) and 0.95 <= c < I.rank_coverage(2, 10)
    assert I.drawn_ranks(10, 10) == (2, 9, pytest.approx(1 - 2 * 11 / 1024))


def test_too_few_only_where_no_interval_keeps_the_confidence():
    assert I.drawn_ranks(6, 5.4) == (1, 6, pytest.approx(1 - 2 * 0.5 ** 5.4))  # floor(5.4) = 5 gave none
    assert I.drawn_ranks(6, 5.2) is None  # [min, max] of 5.2 effective values: 94.6%
    assert I.drawn_ranks(5, 5) is None


def test_the_correction_for_dependence_never_narrows_and_shows_the_drawn_coverage():
    rng = np.random.default_rng(4)
    for n in range(6, 17):
        for _ in range(60):
            x = rng.normal(0, 1, n)
            dep, ind = I.median_interval(x), I.median_interval(x, dependent=False)
            assert ind.coverage == pytest.approx(I.order_statistic_ranks(n)[2])
            if not dep.enough:
                continue
            assert dep.low <= ind.low and dep.high >= ind.high
            s = np.sort(x)
            k = int(np.searchsorted(s, dep.low)) + 1
            assert dep.low == s[k - 1] and dep.high == s[n - k]  # whole ranks of the series, symmetric
            j = max(1.0, k * (dep.n_eff + 1) / (n + 1))
            assert dep.coverage == pytest.approx(I.rank_coverage(j, min(n, dep.n_eff))) and dep.coverage >= 0.95


def test_a_ratio_and_its_inverse_get_mirrored_intervals_whichever_way_round_it_is_taken():
    # a drifting, wide series of per-cycle ratios (reactor / ray on a loaded host): its inverse must be read as the
    # same series, not get "too few cycles" where the ratio has an interval
    rng = np.random.default_rng(3)
    r = np.exp(0.7 + np.cumsum(rng.normal(0, 0.25, 24)) * 0.3 + rng.normal(0, 0.4, 24))
    a, b = I.median_interval(r), I.median_interval(1 / r)
    assert a.n_eff == pytest.approx(b.n_eff)
    assert a.enough and b.enough
    assert a.low == pytest.approx(1 / b.high) and a.high == pytest.approx(1 / b.low)


def test_six_independent_values_get_their_interval_where_the_bias_term_alone_said_too_few():
    # lag-1 autocorrelation 0.05 (of the logs): nothing an independent series of 6 values does not show. The bias
    # term (1 + 4 r) / n read as dependence made it worth 3.9 values, "too few cycles"; [min, max] of 6
    # independent values holds the median with 96.9%, and the correction now stops at [min, max]
    x = 1.0 + 0.01 * (np.array([1, 2, 5, 3, 6, 4]) - 3.5)
    r = I.lag1_autocorrelation(np.log(x))
    assert r == pytest.approx(0.0487, abs=1e-4) and not I.evident_dependence(r, 6)
    rb = r + (1 + 4 * r) / 6
    assert 6 * (1 - rb) / (1 + rb) < I.fewest_effective()  # what the former rule made of it
    m = I.median_interval(x)
    assert m.enough and (m.low, m.high) == (pytest.approx(0.975), pytest.approx(1.025))
    assert m.n_eff == pytest.approx(I.fewest_effective()) == pytest.approx(5.3219, abs=1e-4)
    assert m.coverage == pytest.approx(0.95)
    assert I.verdict(m.low, m.high) == I.UNCLEAR


def test_evident_dependence_still_widens_and_still_says_too_few():
    # the host's speed held for 3 cycles at a time: r = 0.73 of 24 values, beyond 1.645 / sqrt(24) = 0.34
    rng = np.random.default_rng(0)
    drift = np.repeat(rng.normal(0, 0.05, 8), 3)
    y = 1.0 + drift + rng.normal(0, 0.005, drift.size)
    assert I.evident_dependence(I.lag1_autocorrelation(np.log(y)), y.size)
    dep = I.median_interval(y)
    assert dep.n_eff == pytest.approx(1.357, abs=1e-3) and not dep.enough  # 8 drifts are not 24 values
    assert I.median_interval(y, dependent=False).enough
    # a steady ramp of 8 values: too few however it is read as dependent
    assert not I.median_interval(np.linspace(1.0, 1.07, 8)).enough
    # where the dependence is evident but the series long enough, the interval is widened, not refused
    long = 1.0 + np.repeat(rng.normal(0, 0.05, 40), 3) + rng.normal(0, 0.005, 120)
    d, i = I.median_interval(long), I.median_interval(long, dependent=False)
    assert d.enough and d.low < i.low and d.high > i.high and d.n_eff < 0.5 * long.size


def test_independent_series_of_six_to_ten_values_rarely_get_too_few():
    rng = np.random.default_rng(11)
    for n, most in ((6, 0.0), (10, 0.03)):
        few = sum(not I.median_interval(np.exp(rng.normal(0, 0.05, n))).enough for _ in range(400))
        assert few / 400 <= most, (n, few)
