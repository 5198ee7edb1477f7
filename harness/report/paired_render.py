"""The report's part on paired jobs: verdict lines, ratio and host tables, one figure per job of the host series
(`harness.report.paired` computes; this module only lays out)."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from harness.report.figures import Plot, color
from harness.report.paired import PairedJob, host_summary, ratio_frame, shift_lines
from harness.report.stats import CEILINGS, SERIAL
from harness.report.fmt import Table, interval, num
from harness.report.model import Report, Section


#: table rows report.md shows of the long paired tables (every row is in report.html and summary.csv)
MD_ROWS = 20
#: the paired jobs' lines report.md shows (a line per job, each a paragraph; all of them in report.html)
MD_JOB_LINES = 8

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


def paired_plot(job: PairedJob, index: int, name: str = "", unit: str = "units") -> Plot:
    """Per cycle: every contender's block over serial's block of the same cycle (the paired ratio, one point
    per cycle; the line: its median over the spans the job is read in; the host's regimes shaded), beside it the ceiling's and serial's
    throughput series the host shifts are searched in, and below the calibration loop's time per core."""
    from harness.labels import BackendLabel
    from harness.report.figures import marker, shown

    fig = Figure(figsize=(9.0, 7.0), layout="constrained")
    top, mid, bottom = fig.subplots(3, 1, sharex=True, height_ratios=[2.2, 1.4, 1])
    t = job.table
    spans, host_spans = job.regimes, job.host_regimes
    for k, (lo_i, hi_i) in enumerate(host_spans):
        if len(host_spans) > 1 and k % 2 == 1:
            for ax in (top, mid, bottom):
                ax.axvspan(t.index[lo_i] - 0.5, t.index[hi_i - 1] + 0.5, color="#000000", alpha=0.06, lw=0)
    contenders = [lab for lab in job.labels if lab not in CEILINGS]
    for label in contenders:
        serial = BackendLabel.parse(label).serial_baseline().render()
        if label == serial or serial not in t or label not in t:
            continue
        r = (t[label] / t[serial]).replace([np.inf, -np.inf], np.nan)
        top.plot(t.index, r, ls="none", marker=marker(label), ms=3, alpha=0.55, color=color(label),
                 label=f"{shown(label, job.presets)} / {shown(serial, job.presets)}")
        for lo_i, hi_i in spans:
            med = float(np.nanmedian(r.iloc[lo_i:hi_i]))
            top.hlines(med, t.index[lo_i] - 0.5, t.index[hi_i - 1] + 0.5, color=color(label), lw=2)
    top.axhline(1.0, color="#7f7f7f", lw=1, ls="--")
    top.set_ylabel("block throughput / serial's\n(same cycle)")
    top.legend(fontsize=7, loc="best", ncol=2)
    top.grid(True, alpha=0.3)
    for label in [*[c for c in CEILINGS if c in t], *[lab for lab in contenders if lab == SERIAL]]:
        mid.plot(t.index, t[label], lw=0.9, marker=marker(label), ms=2, color=color(label),
                 label=shown(label, job.presets))
    mid.set_ylabel(f"{unit}/s per block")
    if len(mid.get_lines()):
        mid.legend(fontsize=7, loc="best")
    mid.grid(True, alpha=0.3)
    host = job.host.reindex(t.index)
    cores = [c if isinstance(c, list) else [] for c in host["core_ms"]] if "core_ms" in host else []
    width = max((len(c) for c in cores), default=0)
    for k in range(width):
        bottom.plot(host.index, [c[k] if len(c) > k else np.nan for c in cores], lw=0.8, label=f"core {k}")
    bottom.set_ylabel("calibration ms")
    bottom.set_xlabel("cycle")
    if width:
        bottom.legend(fontsize=7, loc="best")
    for sp in job.splits:
        for ax in (top, mid, bottom):
            ax.axvline(t.index[sp.index] - 0.5, ls="--", color="k", lw=1)
    title = f"{name or job.name}: per-cycle ratios to serial (paired job, {job.cycles} cycles)"
    fig.suptitle(title, fontsize=10)
    caption = ("Top: each point is one cycle's block of a backend over serial's block of the same cycle (a "
               "change of host speed that spans the cycle cancels); the thick line is the median per regime where a "
               "host shift moved a ratio between contenders, else over the whole job. "
               f"Middle: the throughput series ({unit}/s) of the ceiling(s) and serial, where host shifts are "
               f"searched ({job.shift_series or 'no ceiling in the job'}); shaded and dashed: the host's regimes "
               "between its shifts. Bottom: the calibration loop's time on each core at the start of "
               "each cycle (higher: a slower core).")
    return Plot(f"paired_{index}", title, fig, caption)


def paired_plots(jobs: list[PairedJob], names: Optional[dict[str, str]] = None,
                 units: Optional[dict[str, str]] = None) -> list[Plot]:
    """One figure per paired job (``names``: configuration -> readable name; ``units``: job -> unit)."""
    return [paired_plot(j, i, (names or {}).get(j.config, ""), (units or {}).get(j.job, "units"))
            for i, j in enumerate(jobs)]


def paired_sections(rep: Report) -> list[Section]:
    """The sections of the paired jobs (none without them)."""
    jobs: list[PairedJob] = getattr(rep, "paired", None) or []
    if not jobs:
        return []
    n_rows = sum(int(j.table.size) for j in jobs)
    standalone = len(rep.results.rows)
    intro = (f"{n_rows} paired rows from {len(jobs)} paired job(s) (`python -m harness compare`: every backend "
             f"resident, one block each per cycle, docs/harness.md); the other sections read the {standalone} rows "
             "of standalone jobs. A ratio here is the median of per-cycle ratios with its 95% order-statistic interval "
             "over cycles; faster or slower only when it clears 1 by the job's margin, equivalent when it lies "
             "within it, too few cycles without an interval; efficiency is over the ceiling's block of the same cycle. "
             "Where the ceiling's series shifts and the shift moved a ratio between contenders, readings are given per "
             "regime (docs/report.md, 'Paired jobs').")
    return [
        Section("Paired jobs", intro, shift_lines(jobs), md_rows=MD_JOB_LINES),
        Section("Paired ratios", "", ratio_table(jobs), md_rows=MD_ROWS),
        Section("The host during paired jobs", "Per host regime, or per quarter of the job when the host did not shift: "
                "medians over its cycles.", host_table(jobs), md_rows=MD_ROWS),
        Section("Paired figures", "", [p for p in rep.plots if p.name.startswith("paired_")], md_rows=MD_JOB_LINES,
                empty="not drawn: this report was made with --no-figures"
                if any("--no-figures" in n for n in rep.figure_notes) else "no paired job with cycles"),
    ]


def paired_against_serial(jobs: list[PairedJob], names: dict[str, str]) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
    """The paired jobs' part of the opening picture (`harness.report.opening.against_serial_plot`): each
    contender over serial on the same interpreter, per regime, from `ratio_frame` (the paired interval); and
    per job the ceilings over serial (the median of per-cycle ratios, a marker without an interval)."""
    from harness.labels import BackendLabel
    from harness.report.figures import shown

    frame = ratio_frame(jobs)
    recs, bounds = [], {}
    if not len(frame):
        return pd.DataFrame(), {}
    by_job = {j.job: j for j in jobs}
    twins = pd.Series([j.config for j in jobs]).value_counts().to_dict()
    for job_id, g in frame[frame["kind"] == "ratio"].groupby("job", sort=False):
        job = by_job[job_id]
        group = names.get(job.config, job.config)
        if twins.get(job.config, 1) > 1:
            group += f" [{job_id.split(':', 1)[-1]}]"
        group += " (paired)"
        b = {}
        for ceiling, key in (("capacity:-", "measured"), ("capacity:lockstep", "synchronized")):
            if ceiling in job.table and SERIAL in job.table:
                b[key] = float(np.nanmedian((job.table[ceiling] / job.table[SERIAL]).to_numpy(float)))
        bounds[group] = b
        for _, r in g.iterrows():
            num_, den = r["numerator"], r["denominator"]
            med, lo, hi = float(r["median"]), float(r["ci_low"]), float(r["ci_high"])
            if BackendLabel.parse(num_).name == "serial" and BackendLabel.parse(den).serial_baseline().render() == num_:
                num_, den, med, lo, hi = den, num_, 1 / med, 1 / hi, 1 / lo
            if BackendLabel.parse(num_).serial_baseline().render() != den:
                continue
            recs.append({"group": group, "scenario": job.scenario, "label": num_, "name": shown(num_, job.presets),
                         "source": "paired" + ("" if r["regime"] == "all" else f", {r['regime']}"),
                         "ratio": med, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(recs), bounds
