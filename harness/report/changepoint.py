"""Change points in a series (the host's ceiling, cycle by cycle): binary segmentation with a permutation test.

Why: a VM's parallel capacity can change for minutes at a time, and a ratio pooled across such a change
mixes two machines. A shift is called where the data support it, not where a fixed threshold tuned to one
host says so: the statistic is the largest standardized CUSUM of the series' ranks over every split point
(the rank form of the classic at-most-one-change test, insensitive to outliers and to the scale of the
series), its p-value comes from the same statistic on random permutations of the segment (no distribution
is assumed), and a segment is split where p < ``alpha`` and the medians on both sides differ by at least
``min_shift`` (relative: a shift too small to change a verdict is not a regime). Each side is then tested
again (binary segmentation), down to ``min_size`` points per side.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
from scipy.stats import rankdata

ALPHA = 0.01
MIN_SHIFT = 0.10
MIN_SIZE = 5
PERMUTATIONS = 999


@dataclass(frozen=True)
class Split:
    """A change point: the first index of the new regime, the test's p-value and the relative change of
    the median (right over left, minus one)."""

    index: int
    p_value: float
    shift: float


def _cusum_stat(ranks: np.ndarray, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``ranks`` (shape (m, n)): the largest standardized rank CUSUM over split points
    ``k = min_size .. n - min_size`` and the split that reaches it."""
    n = ranks.shape[-1]
    centred = ranks - ranks.mean(axis=-1, keepdims=True)
    csum = np.cumsum(centred, axis=-1)[..., :-1]  # csum[k-1]: sum of the first k
    k = np.arange(1, n)
    scale = np.sqrt(k * (n - k) / n)
    stat = np.abs(csum) / scale
    allowed = (k >= min_size) & (k <= n - min_size)
    stat = np.where(allowed, stat, -np.inf)
    best = np.argmax(stat, axis=-1)
    return np.take_along_axis(stat, best[..., None], axis=-1)[..., 0], best + 1


def most_likely_split(x: np.ndarray, min_size: int = MIN_SIZE, permutations: int = PERMUTATIONS,
                      seed: int = 0) -> Split | None:
    """The best single split of ``x`` with its permutation p-value (None when ``x`` is too short)."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 2 * min_size:
        return None
    ranks = rankdata(x)
    stat, at = _cusum_stat(ranks[None, :], min_size)
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.broadcast_to(ranks, (permutations, n)), axis=-1)
    null, _ = _cusum_stat(perms, min_size)
    p = float((1 + np.count_nonzero(null >= stat[0] - 1e-12)) / (1 + permutations))
    k = int(at[0])
    left, right = np.median(x[:k]), np.median(x[k:])
    shift = float(right / left - 1.0) if left != 0 else float("inf")
    return Split(k, p, shift)


def change_points(values: Iterable[float], alpha: float = ALPHA, min_shift: float = MIN_SHIFT,
                  min_size: int = MIN_SIZE, permutations: int = PERMUTATIONS, seed: int = 0) -> list[Split]:
    """Every change point binary segmentation finds in ``values``, in order. NaNs are left out of the test,
    and each split's ``index`` is a position in ``values`` itself (the first value of the new regime)."""
    raw = np.asarray(list(values), dtype=float)
    kept = np.flatnonzero(np.isfinite(raw))
    x = raw[kept]
    found: list[Split] = []

    def segment(lo: int, hi: int) -> None:
        split = most_likely_split(x[lo:hi], min_size, permutations, seed + lo)
        if split is None or split.p_value >= alpha or abs(split.shift) < min_shift:
            return
        at = lo + split.index
        found.append(Split(at, split.p_value, split.shift))
        segment(lo, at)
        segment(at, hi)

    segment(0, x.size)
    return sorted((Split(int(kept[s.index]), s.p_value, s.shift) for s in found), key=lambda s: s.index)


def regimes(n: int, splits: list[Split]) -> list[tuple[int, int]]:
    """The ``[start, end)`` index ranges between change points."""
    edges = [0, *(s.index for s in splits), n]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]
