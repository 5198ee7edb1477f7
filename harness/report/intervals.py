"""Intervals that keep their promise, and the one verdict rule (docs/report.md, "Intervals that keep their
promise"): the order-statistic interval of a median, widened for the dependence between neighbouring values
of a series in time order, its half-width, and the verdict a ratio's interval gives against a margin. The stop
rule of a paired job (`harness.cycles`) and the report read ratios through these same functions; they are
re-exported by `harness.report.stats`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
from scipy import special as _sp
from scipy import stats as _st

CONFIDENCE = 0.95


def _clean(x: Iterable[float]) -> np.ndarray:
    a = np.asarray(list(x), dtype=float)
    return a[np.isfinite(a)]


#: verdict words (`verdict`)
FASTER, SLOWER, EQUIVALENT, UNCLEAR, TOO_FEW = "faster", "slower", "equivalent", "no clear difference", "too few cycles"


def min_samples(confidence: float = CONFIDENCE) -> int:
    """The fewest independent values from which an order-statistic interval for a median reaches
    ``confidence``: [min, max] of m values covers the median with probability 1 - 2 * 0.5**m (6 for 95%)."""
    m = 1
    while 1.0 - 2.0 * 0.5 ** m < confidence:
        m += 1
    return m


def lag1_autocorrelation(x: Iterable[float]) -> float:
    """The lag-1 autocorrelation of a series in time order (NaN with fewer than 3 values or no spread)."""
    a = _clean(x)
    if a.size < 3 or np.ptp(a) <= 1e-12 * np.abs(a).max():  # no spread but float rounding: nothing to correlate
        return math.nan
    d = a - a.mean()
    return float(np.dot(d[:-1], d[1:]) / np.dot(d, d))


def fewest_effective(confidence: float = CONFIDENCE) -> float:
    """The fewest (fractional) independent values whose [min, max] still holds the median with ``confidence``:
    1 - 2 * 0.5**m = confidence, m = log2(2 / (1 - confidence)) (5.32 at 95%)."""
    return math.log2(2.0 / (1.0 - confidence))


def evident_dependence(r: float, n: int, z: float = 1.645) -> bool:
    """Whether a lag-1 autocorrelation ``r`` of ``n`` values is positive beyond what an independent series of that
    length shows: r > z / sqrt(n) (its spread there is about 1 / sqrt(n); z = 1.645, one-sided 95%)."""
    return bool(np.isfinite(r) and n > 0 and r > z / math.sqrt(n))


def effective_size(x: Iterable[float], confidence: float = CONFIDENCE) -> float:
    """How many independent values a series in time order is worth: n (1 - r) / (1 + r) for its lag-1
    autocorrelation r (an AR(1) reading). The sample autocorrelation of a short series is biased low by
    about (1 + 4 r) / n (Marriott and Pope, 1954), which is added back; r is then floored at 0 (negative
    correlation between neighbouring cycles is not counted as extra information) and capped at 0.95.

    The bias term alone is 1 / n where r is 0: read as dependence it made an independent series of 6 values
    worth 4.3, fewer than any 95% interval needs, so about 40% of independent series of 6 values (about 20% of 10)
    got "too few cycles" although [min, max] of 6 independent values holds the median with 96.9%. So unless the
    dependence is evident (`evident_dependence`: r beyond what an independent series of n values shows), the
    effective size is never taken below the fewest values ``confidence`` needs (`fewest_effective`): the
    correction still widens the interval, up to [min, max], but only evident dependence makes a series "too few
    cycles". Checked by simulation (independent normal and lognormal series, AR(1) with phi 0.2-0.8, n 6-60):
    the drawn interval's coverage at or above the former rule's everywhere (the same from n = 20), "too few" for
    independent series at most about 2% (n=6: none). Strongly correlated short series still fall short of 93%
    under either rule (phi 0.4 at n=6, 0.6 up to n=20, 0.8 up to n=60): only evident dependence is corrected
    for, and a short correlated series often looks independent."""
    a = _clean(x)
    r0 = lag1_autocorrelation(a)
    r = 0.0 if not np.isfinite(r0) else r0 + (1.0 + 4.0 * max(r0, 0.0)) / a.size
    r = min(max(r, 0.0), 0.95)
    n_eff = a.size * (1.0 - r) / (1.0 + r)
    if not evident_dependence(r0, a.size):
        n_eff = max(n_eff, min(float(a.size), fewest_effective(confidence)))
    return n_eff


def order_statistic_ranks(m: int, confidence: float = CONFIDENCE) -> Optional[tuple[int, int, float]]:
    """(k, m + 1 - k, coverage): the 1-based ranks whose order statistics bound the median of m independent
    values with at least ``confidence`` (distribution-free: the number of values below the median is
    Binomial(m, 1/2)); None when m is too small for any such pair."""
    if m < 1:
        return None
    tail = (1.0 - confidence) / 2.0
    k = int(_st.binom.ppf(tail, m, 0.5))  # the smallest k with P(B <= k) >= tail: P(B <= k - 1) < tail
    if k < 1:
        return None
    return k, m + 1 - k, float(1.0 - 2.0 * _st.binom.cdf(k - 1, m, 0.5))


@dataclass(frozen=True)
class MedianInterval:
    """The median of a series with its interval, and what the interval stands on."""

    median: float
    low: float
    high: float
    #: values, and how many independent values they are worth (`effective_size`)
    n: int
    n_eff: float
    #: the drawn interval's coverage at that effective size (`drawn_ranks`; exact for independent values)
    coverage: float

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.median, self.low, self.high)

    @property
    def enough(self) -> bool:
        return np.isfinite(self.low) and np.isfinite(self.high)


def rank_coverage(k: float, m: float) -> float:
    """The coverage of [x_(k), x_(m+1-k)] for the median of m independent values: 1 - 2 P(B <= k - 1) with
    B ~ Binomial(m, 1/2), written as a regularized incomplete beta function so that it also holds for a
    fractional effective size m and the fractional rank k a rank of the whole series falls on there."""
    if not (1 <= k <= (m + 1) / 2):
        return math.nan
    return float(1.0 - 2.0 * _sp.betainc(m - k + 1.0, k, 0.5))


def drawn_ranks(n: int, n_eff: float, confidence: float = CONFIDENCE) -> Optional[tuple[int, int, float]]:
    """(k, n + 1 - k, coverage): the ranks of the whole series of ``n`` values that bound its median with at least
    ``confidence`` when the series is worth ``n_eff`` independent values, and that coverage, of these very ranks.

    Rank k of n sits at quantile level k / (n + 1), which on n_eff values is the (fractional) rank
    k (n_eff + 1) / (n + 1) (at least 1: a rank outside the n_eff values' minimum covers at least as much as it);
    its coverage there is `rank_coverage`. k is the largest rank that keeps the coverage
    at or above ``confidence``, and never above the independent series' rank (`order_statistic_ranks` of n): the
    correction for dependence only widens. None when not even [min, max] reaches ``confidence`` (n_eff below
    `fewest_effective`, which `effective_size` gives only where the dependence is evident)."""
    indep = order_statistic_ranks(n, confidence)
    if indep is None:
        return None
    n_eff = min(float(n), float(n_eff))
    for k in range(indep[0], 0, -1):
        # a rank below 1 there lies outside the n_eff values' minimum: at least [min, max]'s coverage
        c = rank_coverage(max(1.0, k * (n_eff + 1.0) / (n + 1.0)), n_eff)
        if np.isfinite(c) and c >= confidence - 1e-12:
            return k, n + 1 - k, c
    return None


def median_interval(x: Iterable[float], confidence: float = CONFIDENCE, dependent: bool = True) -> MedianInterval:
    """The median of ``x`` (a series in time order, e.g. per-cycle ratios) with a distribution-free interval.

    For m independent values the interval [x_(k), x_(m+1-k)] holds the median with at least ``confidence``
    whatever the distribution (`order_statistic_ranks`); unlike a percentile bootstrap it keeps that promise
    at small m (a bootstrap of 3 values covers 75%). Neighbouring cycles are not independent on a host whose
    speed drifts, so with ``dependent`` the series counts as its effective size (`effective_size`, of the logs
    of a positive series: an interval of b/a is the inverse of a/b's) and the
    interval is drawn at the ranks of the whole series that keep ``confidence`` there (`drawn_ranks`): never
    narrower than the independent interval, its coverage that of the ranks drawn. Without such ranks (not even
    [min, max] reaches ``confidence``) there is no interval (low and high are NaN): "too few cycles", which a
    series of at least 6 values gets only where its dependence is evident (`effective_size`), never from the
    small-n bias term alone."""
    a = _clean(x)
    if a.size == 0:
        return MedianInterval(math.nan, math.nan, math.nan, 0, 0.0, math.nan)
    med = float(np.median(a))
    # positive values (ratios, throughputs) are read on the log scale, where b/a and a/b are mirror images: the
    # same effective size, so the same ranks, whichever way round a ratio is taken
    n_eff = (effective_size(np.log(a) if a.min() > 0 else a, confidence) if dependent else float(a.size))
    ranks = drawn_ranks(int(a.size), n_eff, confidence)
    if ranks is None:
        return MedianInterval(med, math.nan, math.nan, int(a.size), n_eff, math.nan)
    k, k_hi, coverage = ranks
    s = np.sort(a)
    return MedianInterval(med, float(s[k - 1]), float(s[k_hi - 1]), int(a.size), n_eff, coverage)


def half_width(median: float, low: float, high: float) -> float:
    """The larger distance of an interval's ends from its median, relative to the median (inf without one)."""
    if not (median > 0 and math.isfinite(low) and math.isfinite(high)):
        return math.inf
    return max(high / median - 1.0, 1.0 - low / median)


def verdict(low: float, high: float, margin: float = 0.0) -> str:
    """The rule for a ratio a/b with its interval: `FASTER` when the interval lies above 1 + ``margin``,
    `SLOWER` below 1 - ``margin``, `EQUIVALENT` when it lies inside [1 - margin, 1 + margin] (with a margin:
    the difference, if any, is below what this machine resolves), `UNCLEAR` otherwise, and `TOO_FEW` without
    an interval (fewer values than the confidence needs). ``margin`` is the machine's resolution floor
    (docs/report.md, "What this machine can resolve"): an interval that clears 1 but not the floor is not a
    verdict about code."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return TOO_FEW
    if low > 1.0 + margin:
        return FASTER
    if high < 1.0 - margin:
        return SLOWER
    if margin > 0 and low >= 1.0 - margin and high <= 1.0 + margin:
        return EQUIVALENT
    return UNCLEAR


def verdict_phrase(word: str, a: str, b: str, margin: float = 0.0, n: Optional[int] = None,
                   samples: str = "cycles") -> str:
    """The verdict ``word`` (`verdict`) on a ratio a/b in words that name the winner: "a faster", "b faster",
    "equivalent within +-m%", "no clear difference", "too few cycles (n)". Every table says a verdict through
    this, so "too few" is never read as "within noise" and an equivalence names the margin it used."""
    if word == FASTER:
        return f"{a} faster"
    if word == SLOWER:
        return f"{b} faster"
    return word_phrase(word, margin, n, samples)


def word_phrase(word: str, margin: float = 0.0, n: Optional[int] = None, samples: str = "cycles") -> str:
    """The verdict ``word`` on a ratio a/b said of a (``a 1.2x of b (faster)``): "faster", "slower",
    "equivalent within +-m%", "no clear difference", "too few cycles (n)"."""
    if word == EQUIVALENT:
        return f"equivalent within +-{margin * 100:.3g}%"
    if word == TOO_FEW:
        return f"too few {samples}" + (f" ({n})" if n is not None else "")
    return word


def ratio_of_medians(b: Iterable[float], a: Iterable[float], confidence: float = CONFIDENCE,
                     dependent: bool = True) -> tuple[float, float, float]:
    """median(b) / median(a) of two independent series (two runs' per-cycle ratios, or their repetitions) with
    an interval that keeps ``confidence``: each median's order-statistic interval (`median_interval`) at
    sqrt(confidence), so both hold together with at least ``confidence`` (the runs are independent), and the
    ratio's interval is [low_b / high_a, high_b / low_a]. NaN ends where either side has too few values for
    its interval (the verdict is then "too few")."""
    each = math.sqrt(confidence)
    rb, ra = median_interval(b, each, dependent), median_interval(a, each, dependent)
    if not (ra.median > 0 and math.isfinite(rb.median)):
        return (math.nan, math.nan, math.nan)
    med = rb.median / ra.median
    if not (rb.enough and ra.enough) or ra.low <= 0:
        return (med, math.nan, math.nan)
    return (med, rb.low / ra.high, rb.high / ra.low)


def no_winner_phrase(word: str, a: str, b: str, margin: float = 0.0, n: Optional[int] = None,
                     samples: str = "cycles") -> str:
    """Why a leader ``a`` over ``b`` is not called the winner, in the rule's words: "too few cycles (n) to tell
    a from b", "a and b equivalent within +-m%", or "no clear difference between a and b"."""
    if word == TOO_FEW:
        return f"{verdict_phrase(word, a, b, margin, n, samples)} to tell {a} from {b}"
    if word == EQUIVALENT:
        return f"{a} and {b} {verdict_phrase(word, a, b, margin)}"
    return f"no clear difference between {a} and {b}"
