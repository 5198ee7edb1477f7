"""Whether two identical residents differ by an offset that belongs to their set of processes (`harness.cycles`
respawns every resident every ``compare.respawn_s``), read from a paired job's cycles grouped by set.

Why: the interval of a paired job is drawn over cycles, and cycles of one set share that set's offset (where its
processes were placed, how their memory was laid out), so no interval over cycles sees it; only the number of
sets a job averages over shrinks it. The self-test's margin covers it (`harness.selftest.measured_margin`: at least
`set_margin`, what it leaves in a job of that many sets); this reading says how much of an A/A job's spread it is, so
a reader knows why the margin is what it is and what would lower it.

Per set, the median of the pair's log ratios and that median's standard error from the set's own cycles
(1.2533 x the scaled MAD / sqrt(cycles): the median's error for values whose core is normal; a set of fewer than
`MIN_CYCLES` cycles, or without spread, is left out). Per job, the sets' medians against their weighted mean:
Q = sum((median - mean)^2 / se^2) on sets - 1 degrees of freedom, a chi2 that is about 1 per degree of freedom
when the sets differ only by their cycles' noise. Sets are as unequal in noise as in level (one set's cycles can
spread ten times another's), so the spread between sets beyond that noise is read as a random-effects
meta-analysis reads the spread between studies (DerSimonian and Laird, 1986): tau^2 = (Q - df) / (sum(w) -
sum(w^2) / sum(w)) with w = 1 / se^2, whose square root is the offset of one set. Over jobs the Q, df and
denominators add up (`pooled`: the chi2 per degree of freedom, its p-value and tau over every job, floored at 0
once); the median of the jobs' own tau^2 (``set_sd_typical``) is what a typical job shows, where one set far off
(a process much slower for its whole life) would otherwise speak for every job.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

#: the fewest cycles from which a set's median and its error are read
MIN_CYCLES = 4
#: the median's standard error over the scaled MAD, x sqrt(cycles), for a normal core (sqrt(pi / 2))
MEDIAN_SE = math.sqrt(math.pi / 2.0)


def set_medians(ratios: pd.Series, epochs: Mapping[int, int]) -> list[dict[str, Any]]:
    """Per set of processes (``epochs``: each cycle's ``extra.epoch``), the median of a pair's per-cycle ratios
    (``ratios``, indexed by cycle) as a log, its standard error and its cycles; sets too short to read left out."""
    logs = np.log(ratios.astype(float))
    logs = logs[np.isfinite(logs)]
    by_set = pd.Series([int(epochs.get(int(c), 0)) for c in logs.index], index=logs.index)
    out = []
    for epoch, x in logs.groupby(by_set):
        v = x.to_numpy(float)
        if v.size < MIN_CYCLES:
            continue
        med = float(np.median(v))
        se = MEDIAN_SE * float(stats.median_abs_deviation(v, scale="normal")) / math.sqrt(v.size)
        if se > 0:
            out.append({"epoch": int(epoch), "cycles": int(v.size), "log_median": med, "se": se})
    return out


def job_chi2(sets: list[dict[str, Any]]) -> tuple[float, int, float] | None:
    """One job's sets: (Q, degrees of freedom, the DerSimonian-Laird denominator sum(w) - sum(w^2) / sum(w)), or
    None with fewer than two sets."""
    if len(sets) < 2:
        return None
    m = np.array([s["log_median"] for s in sets])
    w = 1.0 / np.array([s["se"] for s in sets]) ** 2
    mean = float((w * m).sum() / w.sum())
    return float((w * (m - mean) ** 2).sum()), len(sets) - 1, float(w.sum() - (w ** 2).sum() / w.sum())


def _share(tau2: float) -> float:
    """A log-scale variance as the share one standard deviation multiplies by, minus 1."""
    return float(math.expm1(math.sqrt(max(tau2, 0.0))))


def tau_share(read: Iterable[Sequence[float] | None]) -> float:
    """The offset of one set (tau, as a share) from jobs' `job_chi2` readings added up (the DerSimonian-Laird
    estimate over every job, floored at 0); NaN without any (None entries: jobs with fewer than two sets)."""
    read = [r for r in read if r is not None]
    if not read:
        return math.nan
    q, df, c = (np.array(v, dtype=float) for v in zip(*read))
    return _share(float((q.sum() - df.sum()) / c.sum())) if c.sum() > 0 else math.nan


def set_margin(read: Iterable[Sequence[float] | None], sets_per_job: float, confidence: float = 0.95) -> float:
    """The margin that covers the set offsets of a job of ``sets_per_job`` sets with ``confidence``: z tau /
    sqrt(sets) (tau: `tau_share` of the jobs' readings; z the normal quantile, 1.96 at 95%). A job's median ratio
    averages its sets' offsets, which no interval over cycles sees, so this is the part of its offset the margin
    must cover whatever the clearances of a few jobs happened to show: where cycles are quiet but sets differ, A/A
    intervals are narrow and many lie beyond a margin taken from the clearances of earlier, noisier jobs
    (results/reference/vm-2core-2026-12-05-margin-per-workload/, "The set part"). NaN without readings or sets."""
    tau = tau_share(read)
    if not (math.isfinite(tau) and sets_per_job >= 1):
        return math.nan
    return float(stats.norm.ppf(0.5 + confidence / 2.0) * tau / math.sqrt(sets_per_job))


def pooled(jobs_sets: Iterable[list[dict[str, Any]]]) -> dict[str, Any]:
    """Over jobs: the chi2 per degree of freedom of their set medians and its p-value, how many jobs alone reach
    p < 0.05, the offset of one set (tau, as a share: over every job, ``set_sd``, and the typical job's,
    ``set_sd_typical``) and the sets per job (median)."""
    jobs_sets = list(jobs_sets)
    read = [r for r in (job_chi2(s) for s in jobs_sets) if r is not None]
    if not read:
        return {"jobs": 0}
    q, df, c = (np.array(v, dtype=float) for v in zip(*read))
    return {"jobs": len(read), "sets_per_job": float(np.median([len(s) for s in jobs_sets if len(s) >= 2])),
            "chi2_per_df": float(q.sum() / df.sum()), "p_value": float(stats.chi2.sf(q.sum(), df.sum())),
            "jobs_p05": int((stats.chi2.sf(q, df) < 0.05).sum()),
            "set_sd": tau_share(read),
            "set_sd_typical": _share(float(np.median((q - df) / c)))}
