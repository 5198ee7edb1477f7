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
