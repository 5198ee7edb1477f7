"""What a finished job prints (`harness.app`): its median throughput with a 95% interval over the repetitions,
and every repetition far off the others.

A repetition is *far off* when it differs from the median of the other repetitions by more than `OFF_BY`
(25%) and by more than `MAD_LIMIT` scaled median absolute deviations of the others: both, so that a job whose
repetitions all scatter widely flags none (its interval already says so), and a steady job flags a 2% blip
on neither. A first repetition at half the others' speed (a cold cache, another process starting) is the case
this catches; the report's warnings list the same repetitions (`outlying`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.labels import preset_name
from harness.report.fmt import interval, num
from harness.report.load import load_results
from harness.report.stats import median_ci

#: a repetition this far (relative) from the others' median ...
OFF_BY = 0.25
#: ... and this many scaled median absolute deviations of the others away is flagged
MAD_LIMIT = 3.0


def outlying(values: np.ndarray) -> list[tuple[int, float]]:
    """(index, value / the others' median) of every repetition far off the others (module docstring)."""
    x = np.asarray(values, dtype=float)
    out = []
    if x.size < 3:
        return out
    for i, v in enumerate(x):
        others = np.delete(x, i)
        med = float(np.median(others))
        mad = 1.4826 * float(np.median(np.abs(others - med)))
        if med > 0 and abs(v / med - 1) > OFF_BY and abs(v - med) > MAD_LIMIT * mad:
            out.append((i, v / med))
    return out


def job_lines(results_csv: Path) -> list[str]:
    """One line per backend of the job: ``median N unit/s [lo, hi] (95%, n repetitions)``; then one per
    repetition far off the others."""
    rows = load_results([Path(results_csv)]).rows
    ok = rows[rows["status"] == "ok"] if len(rows) else rows
    out = []
    for label, g in ok.groupby("label", sort=False):
        g = g.sort_values("repetition")
        x = g["throughput"].to_numpy(float)
        med, lo, hi = median_ci(x)
        unit = str(g["unit"].iloc[0]) or "units"
        out.append(f"{preset_name(label)}: median {num(med)} {unit}/s, 95% interval {interval(lo, hi)} over {x.size} "
                   f"repetition(s)")
        for i, rel in outlying(x):
            rep = int(g["repetition"].iloc[i]) if "repetition" in g else i
            out.append(f"  repetition {rep} is far off the others: {rel:.2f}x their median "
                       f"({num(x[i])} {unit}/s); a cold start or other load? (docs/report.md)")
    return out


def outlying_rows(rows: pd.DataFrame) -> list[tuple[str, str, int, float]]:
    """For the report's warnings: (configuration, backend, repetition, value / the others' median) of each
    repetition far off the others of its configuration and backend."""
    ok = rows[rows["status"] == "ok"] if len(rows) else rows
    out = []
    for (config, label), g in ok.groupby(["config", "label"], sort=True):
        g = g.sort_values("repetition")
        for i, rel in outlying(g["throughput"].to_numpy(float)):
            out.append((config, label, int(g["repetition"].iloc[i]), rel))
    return out
