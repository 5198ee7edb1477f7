"""The report's part on paired jobs: verdict lines, ratio and host tables, one figure per job of the host series
(`harness.report.paired` computes; this module only lays out)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from harness.report.figures import Plot, color
from harness.report.paired import PairedJob, host_summary, ratio_frame, shift_lines
from harness.report.render import Report, Section, Table, interval, num


def ratio_table(jobs: list[PairedJob]) -> Table:
    """Every pair of every paired job (per regime where the host shifted)."""
    df = ratio_frame(jobs)
    rows = []
    for _, r in df.iterrows():
        rows.append([r["name"], r["regime"], f"{r['numerator']} / {r['denominator']}", r["kind"], str(r["cycles"]),
                     f"{num(r['median'])} {interval(r['ci_low'], r['ci_high'])}",
                     "-" if not math.isfinite(r["half_width"]) else f"+-{r['half_width'] * 100:.1f}%",
                     r["verdict"]])
    return Table(["configuration", "cycles of", "pair", "kind", "cycles", "median of per-cycle ratios [95% CI]",
                  "precision", "verdict"], rows)


def host_table(jobs: list[PairedJob]) -> Table:
    rows = []
    labels = sorted({k for j in jobs for rec in host_summary(j) for k in rec if ":" in k})
    for j in jobs:
        for rec in host_summary(j):
            rows.append([j.name, rec["cycles"], num(rec["calibration_ms"]), num(rec["slowest_core_ms"]),
                         num(rec["steal_pct"], 2), *[num(rec.get(lab, math.nan)) for lab in labels]])
    return Table(["configuration", "cycles", "calibration ms (mean of cores)", "slowest core ms", "steal %",
                  *[f"{lab} unit/s" for lab in labels]], rows)


def paired_plot(job: PairedJob, index: int) -> Plot:
    """Throughput of every backend per cycle (regime boundaries dashed) over the host's calibration."""
    fig = Figure(figsize=(8.0, 5.0), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    for label in job.table:
        top.plot(job.table.index, job.table[label], marker=".", lw=0.8, label=label, color=color(label))
    top.set_ylabel("unit/s per block")
    top.legend(fontsize=7, loc="best")
    host = job.host.reindex(job.table.index)
    cores = np.array([c if isinstance(c, list) else [] for c in host["core_ms"]], dtype=object)
    width = max((len(c) for c in cores), default=0)
    for k in range(width):
        bottom.plot(host.index, [c[k] if len(c) > k else np.nan for c in cores], lw=0.8, label=f"core {k}")
    bottom.set_ylabel("calibration ms")
    bottom.set_xlabel("cycle")
    if width:
        bottom.legend(fontsize=7, loc="best")
    for s in job.splits:
        for ax in (top, bottom):
            ax.axvline(job.table.index[s.index] - 0.5, ls="--", color="k", lw=1)
    title = f"Paired cycles: {job.name}"
    caption = ("Each point is one block; a cycle holds one block of every backend. Below: the calibration loop's "
               "time on each core at the start of each cycle (higher: a slower core). Dashed: a host shift "
               f"found in {job.shift_series or 'no series'}.")
    return Plot(f"paired_{index}", title, fig, caption)


def paired_plots(jobs: list[PairedJob]) -> list[Plot]:
    return [paired_plot(j, i) for i, j in enumerate(jobs)]


def paired_sections(rep: Report) -> list[Section]:
    """The sections of the paired jobs (none without them)."""
    jobs: list[PairedJob] = getattr(rep, "paired", None) or []
    if not jobs:
        return []
    n_rows = sum(int(j.table.size) for j in jobs)
    standalone = len(rep.results.rows)
    intro = (f"{n_rows} paired rows from {len(jobs)} paired job(s) (`python -m harness compare`: every backend "
             f"resident, one block each per cycle, docs/harness.md); the other sections read the {standalone} rows "
             "of standalone jobs. A ratio here is the median of per-cycle ratios with a 95% bootstrap interval over "
             "cycles; faster only when it excludes 1; efficiency is over the ceiling's block of the same cycle. "
             "Where the ceiling's series shifts, ratios are given per regime (docs/report.md, 'Paired jobs').")
    return [
        Section("Paired jobs", intro, shift_lines(jobs)),
        Section("Paired ratios", "", ratio_table(jobs)),
        Section("The host during paired jobs", "Per regime, or per quarter of the job when there was one regime: "
                "medians over its cycles.", host_table(jobs)),
        Section("Paired figures", "", [p for p in rep.plots if p.name.startswith("paired_")]),
    ]
