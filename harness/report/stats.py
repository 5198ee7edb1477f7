"""Statistics of the report: medians with intervals, spread, stability, speedups, efficiency, validity.

Rules (docs/design.md, "Measurement rules", after pyperf): the median of the repetitions with a 95% bootstrap
interval; a result is *unstable* when its coefficient of variation is over 10%, when it has fewer than 3
repetitions, or when a repetition is shorter than the timer can resolve reliably. A speedup is the ratio of
two medians on the same configuration, with a bootstrap interval and a two-sided Mann-Whitney U test.
Every definition is spelled out in docs/report.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Optional, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

from harness.report.load import row_trials

CONFIDENCE = 0.95
ALPHA = 0.05
BOOTSTRAP_SAMPLES = 2000
CV_LIMIT = 0.10
MIN_REPETITIONS = 3
#: a repetition shorter than this is too short to time reliably (pyperf warns below 1 ms as well)
MIN_SECONDS = 1e-3
#: the headline comparisons: (numerator, denominator) labels
HEADLINE_PAIRS: tuple[tuple[str, str], ...] = (("reactor:processes", "ray:actors"), ("reactor:processes", "ray:compiled"))
SERIAL = "serial:-"
#: the machine's measured ceiling (backends/capacity.py): not a contender, the bound of efficiency
CEILING = "capacity:-"
#: the ceiling of synchronized rounds (``capacity_lockstep``: the copies meet once per round): not a contender
SYNC_CEILING = "capacity:lockstep"
#: the labels that bound the others rather than compete with them
CEILINGS = (CEILING, SYNC_CEILING)
#: rounds per block (or repetition) up to which a synchronized ceiling whose copies were not held is flagged: one
#: round in that many of copy 0's ran alone (`unheld_rounds`)
UNHELD_ROUNDS = 20
#: the ``extra`` key of a synchronized ceiling's rows whose copies were held to copy 0's timed windows
#: (`backends.capacity.HELD`: the report reads rows, never a backend)
HELD_KEY = "copies_held"


def _clean(x: Iterable[float]) -> np.ndarray:
    a = np.asarray(list(x), dtype=float)
    return a[np.isfinite(a)]


def _rng(seed: int = 0) -> np.random.Generator:
    # a fixed seed: the same result files always give the same report
    return np.random.default_rng(seed)


def median_ci(x: Iterable[float], confidence: float = CONFIDENCE, n_boot: int = BOOTSTRAP_SAMPLES) -> tuple[float, float, float]:
    """(median, low, high): the sample median and its percentile-bootstrap interval (`scipy.stats.bootstrap`;
    NaN when empty, zero width for one value or identical values)."""
    a = _clean(x)
    if a.size == 0:
        return (math.nan, math.nan, math.nan)
    med = float(np.median(a))
    if a.size == 1 or np.ptp(a) == 0:
        return (med, med, med)
    res = _st.bootstrap((a,), np.median, vectorized=True, n_resamples=n_boot, confidence_level=confidence,
                        method="percentile", random_state=_rng(0))
    lo, hi = res.confidence_interval
    return (med, float(lo), float(hi))


# the paired interval and the verdict rule live in `harness.report.intervals` (one definition for the stop rule
# and the report); re-exported here
from harness.report.intervals import (  # noqa: E402,F401
    EQUIVALENT, FASTER, SLOWER, TOO_FEW, UNCLEAR, MedianInterval, drawn_ranks, effective_size, evident_dependence,
    fewest_effective, half_width,
    lag1_autocorrelation, median_interval, min_samples, order_statistic_ranks, rank_coverage, verdict)


def coefficient_of_variation(x: Iterable[float]) -> float:
    """Sample standard deviation over the mean (NaN with fewer than 2 values or a zero mean)."""
    a = _clean(x)
    if a.size < 2 or a.mean() == 0:
        return math.nan
    return float(a.std(ddof=1) / abs(a.mean()))


def unstable_reasons(values: Iterable[float], seconds: Iterable[float] = (), cv_limit: float = CV_LIMIT,
                     min_repetitions: int = MIN_REPETITIONS, min_seconds: float = MIN_SECONDS) -> list[str]:
    """Why a result should not be trusted as is; empty when it is stable."""
    a = _clean(values)
    s = _clean(seconds)
    reasons = []
    if a.size < min_repetitions:
        reasons.append(f"{a.size} repetition{'s' if a.size != 1 else ''} (< {min_repetitions})")
    cv = coefficient_of_variation(a)
    if np.isfinite(cv) and cv > cv_limit:
        reasons.append(f"CV {cv:.0%} (> {cv_limit:.0%})")
    if s.size and s.min() < min_seconds:
        reasons.append(f"shortest repetition {s.min() * 1e3:.3g} ms (< {min_seconds * 1e3:g} ms)")
    return reasons


def min_p_value(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value an exact Mann-Whitney U test can reach with these sample sizes."""
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


@dataclass
class Speedup:
    """``a`` over ``b``: ratio of median throughputs, its interval, and whether the difference is significant."""

    ratio: float
    low: float
    high: float
    p_value: float
    significant: bool
    n_a: int
    n_b: int

    @property
    def min_p(self) -> float:
        return min_p_value(self.n_a, self.n_b)


def speedup(a: Iterable[float], b: Iterable[float], confidence: float = CONFIDENCE, alpha: float = ALPHA,
            n_boot: int = BOOTSTRAP_SAMPLES) -> Speedup:
    """Median(a) / median(b) with a bootstrap interval (a and b resampled apart) and a two-sided U test."""
    x, y = _clean(a), _clean(b)
    return _speedup(x, y, confidence=confidence, alpha=alpha, n_boot=n_boot)


def _median_ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis) / np.median(y, axis=axis)


def ratio_interval(x: np.ndarray, y: np.ndarray, confidence: float = CONFIDENCE, n_boot: int = BOOTSTRAP_SAMPLES,
                   seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of median(x) / median(y), ``x`` and ``y`` resampled apart
    (`scipy.stats.bootstrap`, ``paired=False``); a zero-width interval when a side has one value."""
    ratio = float(np.median(x) / np.median(y))
    if x.size < 2 or y.size < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
        return ratio, ratio
    with np.errstate(divide="ignore", invalid="ignore"):
        res = _st.bootstrap((x, y), _median_ratio, paired=False, vectorized=True, n_resamples=n_boot,
                            confidence_level=confidence, method="percentile", random_state=_rng(seed))
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def _speedup(x: np.ndarray, y: np.ndarray, confidence: float = CONFIDENCE, alpha: float = ALPHA,
             seed: int = 0, n_boot: int = BOOTSTRAP_SAMPLES) -> Speedup:
    """The speedup of ``x`` over ``y``: ratio of medians, its bootstrap interval and a U test."""
    if x.size == 0 or y.size == 0 or np.median(y) == 0:
        return Speedup(math.nan, math.nan, math.nan, math.nan, False, int(x.size), int(y.size))
    ratio = float(np.median(x) / np.median(y))
    lo, hi = ratio_interval(x, y, confidence, n_boot=n_boot, seed=seed)
    p = float(_st.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    p = 1.0 if not np.isfinite(p) else p
    return Speedup(ratio, lo, hi, p, bool(p < alpha), int(x.size), int(y.size))


def inverse(sp: Speedup) -> Speedup:
    """B over A from A over B: reciprocal ratio and interval, the same (two-sided) test."""
    inv = lambda v: 1.0 / v if v and np.isfinite(v) else math.nan  # noqa: E731
    return Speedup(inv(sp.ratio), inv(sp.high), inv(sp.low), sp.p_value, sp.significant, sp.n_b, sp.n_a)


def geometric_mean(values: Iterable[float]) -> float:
    """Geometric mean of the positive finite values (NaN when none): the mean of ratios across scenarios."""
    a = _clean(values)
    a = a[a > 0]
    return float(_st.gmean(a)) if a.size else math.nan


# ---------------------------------------------------------------- tables over a whole result set

def _first(series: pd.Series) -> object:
    return series.iloc[0] if len(series) else None


def _median(series: pd.Series) -> float:
    a = _clean(series)
    return float(np.median(a)) if a.size else math.nan


def _max(rows: pd.DataFrame, col: str) -> float:
    values = _clean(rows[col]) if col in rows else np.array([])
    return float(values.max()) if values.size else math.nan


SUMMARY_COLUMNS = [
    "scenario", "config", "params", "env_id", "num_envs", "workers", "budget", "seed", "label", "backend", "variant",
    "unit", "n_ok", "n_error", "n_timeout", "median", "ci_low", "ci_high", "cv", "unstable", "unstable_reasons",
    "median_seconds", "rounds", "latency_p50_ms", "latency_p99_ms", "latency_mean_ms", "round_work_ms",
    "overhead_ms", "startup_s", "cpu_count", "hosts", "envs_per_actor", "peak_rss_mb", "peak_shm_mb"]


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, backend label): counts, median throughput [interval], CV, stability, latencies."""
    out = []
    for (config, label), g in rows.groupby(["config", "label"], sort=True):
        ok = g[g["status"] == "ok"]
        med, lo, hi = median_ci(ok["throughput"])
        reasons = unstable_reasons(ok["throughput"], ok["seconds"]) if len(ok) else ["no ok repetitions"]
        lat_mean = _median(ok["latency_mean_ms"])
        work = _median(ok["round_work_ms"])
        first = g.iloc[0]
        out.append({
            "scenario": first["scenario"], "config": config, "params": first["params"], "env_id": first["env_id"],
            "num_envs": first["num_envs"], "workers": first["workers"], "budget": first["budget"],
            "seed": first["seed"], "label": label, "backend": first["backend"], "variant": first["variant"] or "-",
            "unit": _first(ok["unit"]) if len(ok) else first["unit"],
            "n_ok": int(len(ok)), "n_error": int((g["status"] == "error").sum()),
            "n_timeout": int((g["status"] == "timeout").sum()),
            "median": med, "ci_low": lo, "ci_high": hi, "cv": coefficient_of_variation(ok["throughput"]),
            "unstable": bool(reasons), "unstable_reasons": "; ".join(reasons),
            "median_seconds": _median(ok["seconds"]), "rounds": _median(ok["rounds"]),
            "latency_p50_ms": _median(ok["latency_p50_ms"]), "latency_p99_ms": _median(ok["latency_p99_ms"]),
            "latency_mean_ms": lat_mean, "round_work_ms": work,
            "overhead_ms": lat_mean - work if np.isfinite(lat_mean) and np.isfinite(work) else math.nan,
            "startup_s": _median(ok["startup_seconds"]),
            "cpu_count": _median(pd.to_numeric(g["cpu_count"], errors="coerce")),
            "hosts": ", ".join(sorted(set(g["hostname"]))),
            "envs_per_actor": _median(pd.Series([e.get("envs_per_actor", math.nan) for e in ok["extra_dict"]],
                                                dtype=float)) if len(ok) else math.nan,
            # memory is a cost too: the highest peak of any run (failed ones included) of the job's tree
            "peak_rss_mb": _max(g, "peak_rss_mb"), "peak_shm_mb": _max(g, "peak_shm_mb"),
        })
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)


def add_efficiency(summary: pd.DataFrame) -> pd.DataFrame:
    """Efficiency = median throughput / ceiling.

    The ceiling is *measured* when the configuration has ``capacity:-`` rows (``workers`` uncoordinated
    copies of the serial loop: serial throughput x this machine's parallel capacity at that worker count):
    its median throughput. Otherwise it is *assumed*: serial throughput x min(workers, cores), with serial
    throughput from the serial backend on the same configuration when measured, else on the same scenario
    and parameters with the same budget and seed (any workers: serial uses one core), else any.
    ``capacity`` = ceiling / serial throughput (the measured or assumed speedup k processes can give).

    The synchronized ceiling (``capacity:lockstep`` rows: the same copies meeting once per round, so every
    round lasts as long as the slowest copy's) is kept beside it where measured: ``sync_ceiling``,
    ``sync_capacity`` (over serial) and ``sync_efficiency`` (median / sync_ceiling); NaN otherwise."""
    s = summary.copy()
    serial = s[(s["label"] == SERIAL) & np.isfinite(s["median"].astype(float))]
    measured = s[(s["label"] == CEILING) & np.isfinite(s["median"].astype(float))]
    by_ceiling = measured.groupby("config")["median"].median().to_dict()
    synced = s[(s["label"] == SYNC_CEILING) & np.isfinite(s["median"].astype(float))]
    by_sync = synced.groupby("config")["median"].median().to_dict()
    by_config = serial.groupby("config")["median"].median().to_dict()
    by_exact = serial.groupby(["scenario", "params", "budget", "seed"])["median"].median().to_dict()
    by_params = serial.groupby(["scenario", "params"])["median"].median().to_dict()
    ceilings, effs, sources, caps, serials = [], [], [], [], []
    for config, scen, params, budget, seed, workers, cores, med in zip(
            s["config"], s["scenario"], s["params"], s["budget"], s["seed"], s["workers"], s["cpu_count"], s["median"]):
        per_core = by_config.get(config, by_exact.get((scen, params, budget, seed), by_params.get((scen, params))))
        serials.append(per_core if per_core is not None else math.nan)
        if config in by_ceiling:
            ceiling, source = by_ceiling[config], "measured"
        elif per_core is not None and np.isfinite(cores):
            ceiling, source = per_core * min(workers if np.isfinite(workers) else 1, cores), "assumed"
        else:
            ceiling, source = math.nan, ""
        ceilings.append(ceiling)
        sources.append(source)
        caps.append(ceiling / per_core if per_core and np.isfinite(ceiling) else math.nan)
        effs.append(med / ceiling if np.isfinite(med) and np.isfinite(ceiling) and ceiling > 0 else math.nan)
    s["ceiling"] = ceilings
    s["ceiling_source"] = sources
    s["capacity"] = caps
    s["efficiency"] = effs
    sync = np.array([by_sync.get(c, math.nan) for c in s["config"]], dtype=float)
    med = s["median"].astype(float).to_numpy()
    per_core = np.array(serials, dtype=float)  # the serial reference the ceiling above used
    with np.errstate(invalid="ignore", divide="ignore"):
        s["sync_ceiling"] = sync
        s["sync_capacity"] = np.where(per_core > 0, sync / per_core, math.nan)
        s["sync_efficiency"] = np.where(sync > 0, med / sync, math.nan)
    return s


def implausible_ceilings(summary: pd.DataFrame, slack: float = 1.05) -> list[tuple[str, float, float]]:
    """``(config, workers, capacity)`` of every measured ceiling above ``workers`` x serial (with 5% slack):
    k uncoordinated copies cannot beat k x one, so serial and the ceiling ran at different machine speeds."""
    s = summary[(summary["ceiling_source"] == "measured") & np.isfinite(summary["capacity"].astype(float))]
    s = s.drop_duplicates("config")
    return [(c, float(w), float(k)) for c, w, k in zip(s["config"], s["workers"], s["capacity"])
            if np.isfinite(w) and k > w * slack]


def _promised(extra: object) -> bool:
    """False for rows whose backend cannot promise the serial trajectories (``extra.equal_work_promised``)."""
    return not (isinstance(extra, dict) and extra.get("equal_work_promised") is False)


def references(rows: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(config, label) -> what the rows say they are, for rows whose backend labels itself a reference
    (``extra.reference``, e.g. ``RLlib sampler, not equal work``: backends/rllib.py): a number shown beside the
    verdicts, never in them, whatever its checksum."""
    ok = rows[rows["status"] == "ok"]
    out: dict[tuple[str, str], str] = {}
    for config, label, extra in zip(ok["config"], ok["label"], ok["extra_dict"]):
        if isinstance(extra, dict) and extra.get("reference"):
            out[(config, label)] = str(extra["reference"])
    return out


def not_same_work(rows: pd.DataFrame) -> set[tuple[str, str]]:
    """(config, label) pairs whose backend did not promise equal work and whose checksums differ from the
    promised backends' at an equal repetition index: "not the same work", left out of validity and verdicts.
    Where such a backend's checksums do equal the others', the checksum has proved equal work. A labelled
    reference (`references`) is never the same work."""
    out = set(references(rows))
    ok = rows[(rows["status"] == "ok") & (rows["checksum"] != "")]
    if not len(ok):
        return out
    promised = np.array([_promised(e) for e in ok["extra_dict"]], dtype=bool)
    if promised.all():
        return out
    reference = ok[promised].groupby(["config", "repetition"])["checksum"].agg(lambda c: set(c)).to_dict()
    for (config, label), g in ok[~promised].groupby(["config", "label"]):
        for rep, ck in zip(g["repetition"], g["checksum"]):
            ref = reference.get((config, rep))
            if ref is None or ck not in ref:
                out.add((config, label))
                break
    return out


def validity(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: valid unless its ok rows' checksums differ at an equal repetition index
    (backends that did not do the same work, `not_same_work`, are left out of the comparison).

    ``detail`` names, for each differing repetition, which labels produced which checksum.
    """
    out = []
    unequal = not_same_work(rows)
    for config, g in rows.groupby("config", sort=True):
        ok = g[(g["status"] == "ok") & (g["checksum"] != "")]
        ok = ok[np.array([(config, lab) not in unequal for lab in ok["label"]], dtype=bool)]
        details = []
        for rep, r in ok.groupby("repetition"):
            if r["checksum"].nunique() > 1:
                by = r.groupby("checksum")["label"].apply(lambda s: ",".join(sorted(set(s))))
                details.append(f"rep {int(rep)}: " + " vs ".join(f"{lab}={ck[:8]}" for ck, lab in by.items()))
        compared = ok["label"].nunique()
        out.append({"config": config, "valid": not details, "labels_compared": int(compared),
                    "detail": "; ".join(details)})
    return pd.DataFrame(out) if out else pd.DataFrame(columns=["config", "valid", "labels_compared", "detail"])


def mixed_environment(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration with more than one machine or software stack among its rows: what is mixed."""
    out = []
    for config, g in rows.groupby("config", sort=True):
        machines, software = g["machine"].nunique(), g["software"].nunique()
        if machines > 1 or software > 1:
            what = []
            if machines > 1:
                what.append(f"{machines} machines ({', '.join(sorted(set(g['hostname'])))})")
            if software > 1:
                what.append(f"{software} software stacks (python, package versions or git commit)")
            out.append({"config": config, "scenario": g["scenario"].iloc[0], "mixed": " and ".join(what)})
    return pd.DataFrame(out) if out else pd.DataFrame(columns=["config", "scenario", "mixed"])


def pairwise_speedups(rows: pd.DataFrame, valid: pd.DataFrame) -> pd.DataFrame:
    """Speedup of every label over every other in each valid configuration (ok rows' throughput)."""
    ok = rows[rows["status"] == "ok"]
    invalid = set(valid.loc[~valid["valid"].astype(bool), "config"]) if len(valid) else set()
    out = []
    for config, g in ok.groupby("config", sort=True):
        if config in invalid:
            continue
        samples = {lab: _clean(s["throughput"]) for lab, s in g.groupby("label")}
        results: dict[tuple[str, str], Speedup] = {}
        for a, b in combinations(sorted(samples), 2):
            results[(a, b)] = _speedup(samples[a], samples[b])
            results[(b, a)] = inverse(results[(a, b)])
        for (a, b), sp in sorted(results.items()):
            out.append({"scenario": g["scenario"].iloc[0], "config": config, "workers": g["workers"].iloc[0],
                        "numerator": a, "denominator": b, "ratio": sp.ratio, "ci_low": sp.low, "ci_high": sp.high,
                        "p_value": sp.p_value, "significant": sp.significant, "n_a": sp.n_a, "n_b": sp.n_b,
                        "min_p": sp.min_p, "headline": (a, b) in HEADLINE_PAIRS})
    cols = ["scenario", "config", "workers", "numerator", "denominator", "ratio", "ci_low", "ci_high", "p_value",
            "significant", "n_a", "n_b", "min_p", "headline"]
    return pd.DataFrame(out, columns=cols)


def geomean_by_scenario(speedups: pd.DataFrame, pairs: Sequence[tuple[str, str]] = HEADLINE_PAIRS) -> pd.DataFrame:
    """For each pair: the geometric mean of its speedups per scenario (over that scenario's configurations),
    then across scenarios (row ``scenario == "all"``)."""
    out = []
    for a, b in pairs:
        sel = speedups[(speedups["numerator"] == a) & (speedups["denominator"] == b)]
        if not len(sel):
            continue
        per = []
        for scen, g in sel.groupby("scenario", sort=True):
            gm = geometric_mean(g["ratio"])
            per.append(gm)
            out.append({"pair": f"{a} / {b}", "scenario": scen, "geomean": gm, "configurations": int(len(g)),
                        "significant": int(g["significant"].sum())})
        out.append({"pair": f"{a} / {b}", "scenario": "all", "geomean": geometric_mean(per),
                    "configurations": int(len(sel)), "significant": int(sel["significant"].sum())})
    return pd.DataFrame(out, columns=["pair", "scenario", "geomean", "configurations", "significant"])


def amdahl_bound(rows: pd.DataFrame) -> float:
    """The median over serial rows of their measured Amdahl bound (``extra.amdahl_bound``: the server's part
    of a round stays serial, the workers' steps split over ``workers``); NaN without such rows."""
    if "extra_dict" not in rows:
        return math.nan
    return serial_amdahl_bound(rows[rows["label"] == SERIAL])


def serial_amdahl_bound(serial: pd.DataFrame) -> float:
    """`amdahl_bound` of rows that are all serial's (the scaling prediction selects them by backend)."""
    vals = [float(e.get("amdahl_bound", math.nan)) for e in serial["extra_dict"] if isinstance(e, dict)]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.median(vals)) if vals else math.nan


#: at least this many trials with both backends before the report gives a paired reading
MIN_PAIRED_TRIALS = 3


def paired_trial_speedup(rows: pd.DataFrame, a: str, b: str, confidence: float = CONFIDENCE,
                         alpha: float = ALPHA, seed: int = 0) -> Optional[Speedup]:
    """``a`` over ``b`` paired within trials: per trial, median throughput of ``a`` over ``b`` (their jobs ran
    seconds apart, interleaved); the median of those ratios, its percentile-bootstrap interval over trials, and
    a two-sided Wilcoxon signed-rank test of the log ratios against 0. None with fewer than
    `MIN_PAIRED_TRIALS` trials holding both. On a machine whose speed drifts between jobs this reading cancels
    the drift that pooling all trials' repetitions keeps (``n_a`` = ``n_b`` = the number of trials)."""
    if "meta" not in rows or not len(rows):
        return None
    ok = rows[rows["status"] == "ok"]
    per = ok.assign(trial=row_trials(ok))[ok["label"].isin([a, b])].groupby(["trial", "label"])["throughput"].median()
    table = per.unstack()
    if a not in table or b not in table:
        return None
    ratios = (table[a] / table[b]).replace([np.inf, -np.inf], np.nan).dropna().to_numpy(float)
    ratios = ratios[ratios > 0]
    if ratios.size < MIN_PAIRED_TRIALS:
        return None
    med = float(np.median(ratios))
    if np.ptp(ratios) == 0:
        lo = hi = med
    else:
        res = _st.bootstrap((ratios,), np.median, vectorized=True, n_resamples=BOOTSTRAP_SAMPLES,
                            confidence_level=confidence, method="percentile", random_state=_rng(seed))
        lo, hi = (float(v) for v in res.confidence_interval)
    logs = np.log(ratios)
    p = 1.0 if not np.any(logs) else float(_st.wilcoxon(logs, alternative="two-sided").pvalue)
    p = 1.0 if not np.isfinite(p) else p
    return Speedup(med, lo, hi, p, bool(p < alpha), int(ratios.size), int(ratios.size))


def unheld_rounds(ceiling: pd.DataFrame) -> float | None:
    """Rounds per block of a synchronized ceiling measured by an earlier version whose copies were not held to copy
    0's timed windows (rows without ``extra.copies_held``), where at most `UNHELD_ROUNDS`; else None. Those copies
    ran the round after each block outside every window, and copy 0 ran the first round of the next block alone:
    one round in R was one copy's, and at one round a block (dqn) every timed round was, so that ceiling read k x
    one copy alone.

    Args:
        ceiling: the synchronized ceiling's ok rows of one configuration (their ``extra_dict`` and ``rounds``).
    """
    if ceiling.empty or "rounds" not in ceiling:
        return None
    if "workers" in ceiling and (pd.to_numeric(ceiling["workers"], errors="coerce") <= 1).all():
        return None  # one copy: none to run ahead
    if all(isinstance(e, dict) and e.get(HELD_KEY) for e in ceiling.get("extra_dict", pd.Series(dtype=object))):
        return None
    rounds = float(pd.to_numeric(ceiling["rounds"], errors="coerce").median())
    return rounds if np.isfinite(rounds) and rounds <= UNHELD_ROUNDS else None
