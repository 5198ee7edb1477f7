"""Two runs side by side (``python -m harness.report --compare A B``), after pyperf's ``compare_to``: per
configuration and backend, B's reading over A's with a 95% interval, one line each, and a flag where the
interval excludes 1; what changed between the runs (commit, machine, load, dates) first.

What is compared:

* paired jobs (matched by configuration, and by job folder where a run holds several of one configuration):
  each contender over serial on the same interpreter, as the report reads it (median of per-cycle ratios with
  its interval, `harness.report.paired.ratio_frame`, per regime where the host shifted); B / A is the ratio of
  the two runs' medians of per-cycle ratios, its interval from the report's one interval method
  (`harness.report.intervals.ratio_of_medians`: each run's order-statistic interval, corrected for dependence
  between neighbouring cycles, at sqrt(95%), so both hold together with at least 95%);
* standalone jobs (matched by configuration and backend): the median throughput, B / A with the same interval
  over the two runs' repetitions. Two runs' standalone throughputs differ with the host as much as with the
  code (docs/report.md): read them as that.

The verdict is the report's one rule (`harness.report.intervals.verdict`) with the larger of the two jobs'
margins (0 for standalone rows): "faster in B" / "slower in B" (flagged), "equivalent within +-m%", "no clear
difference", or "too few cycles" where a run has too few values for its interval. Definitions: docs/report.md,
"Comparing two runs".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from harness.labels import BackendLabel
from harness.report.build import make_report
from harness.report.fmt import Table, num, ratio
from harness.report.model import Report, all_rows, backend_name, name_of, natural_key, scenario_order
from harness.report.intervals import FASTER, SLOWER, ratio_of_medians, verdict as rule, verdict_phrase
from harness.report.paired import PairedJob, cycle_ratios, ratio_frame
from harness.report.stats import CEILINGS

COMPARE_START = "<!-- compare:start -->"
COMPARE_END = "<!-- compare:end -->"


@dataclass
class Line:
    """One comparison: a quantity measured in both runs."""

    config: str
    name: str
    quantity: str          # "reactor / serial" (paired) or "reactor" (standalone, unit/s)
    source: str            # "paired" or "standalone"
    a_text: str
    b_text: str
    ratio: float
    low: float
    high: float
    scenario: str = ""
    #: the margin the verdict clears (the larger of the two jobs' ``compare.margin``; 0 for standalone rows)
    margin: float = 0.0

    @property
    def word(self) -> str:
        return rule(self.low, self.high, self.margin)

    @property
    def change(self) -> str:
        w = self.word
        if w in (FASTER, SLOWER):
            return f"{w} in B"
        return verdict_phrase(w, "B", "A", self.margin, samples="cycles" if self.source == "paired" else "repetitions")

    @property
    def flagged(self) -> bool:
        return self.word in (FASTER, SLOWER)

    def text(self) -> str:
        """pyperf's style: ``name: A -> B: 1.01x [0.95, 1.07] (no clear difference)``."""
        return (f"{self.name}, {self.quantity} ({self.source}): {self.a_text} -> {self.b_text}: "
                f"B/A {ratio(self.ratio, self.low, self.high)} ({self.change})")


@dataclass
class Comparison:
    a: str
    b: str
    changes: list[str]
    lines: list[Line] = field(default_factory=list)


def _meta_summary(rep: Report) -> dict[str, Any]:
    rows = all_rows(rep)
    if not len(rows):
        return {}
    metas = [m for m in rows["meta"] if isinstance(m, dict)]
    shas = sorted({str(m.get("git_sha", "?"))[:8] + (" (dirty)" if m.get("git_dirty") else "") for m in metas})
    machines = sorted({f"{m.get('hostname', '?')} ({m.get('cpu_model', '?')}, {m.get('cpu_count', '?')} cores, "
                       f"{m.get('ram_gb', '?')} GB)" for m in metas})
    loads = [float(m["load_avg"][0]) for m in metas if m.get("load_avg")]
    dates = sorted(str(m.get("started_at", ""))[:16] for m in metas if m.get("started_at"))
    pythons = sorted({str(m.get("python", "?")) for m in metas})
    return {"commit": ", ".join(shas), "machine": "; ".join(machines), "python": ", ".join(pythons),
            "load": (f"{min(loads):.2f}-{max(loads):.2f}" if loads else "?"),
            "dates": (f"{dates[0]} to {dates[-1]} UTC" if dates else "?")}


def what_changed(a: Report, b: Report) -> list[str]:
    """One line per property of the runs (commit, machine, python, load average at the jobs' starts, dates):
    both values, and whether they differ."""
    ma, mb = _meta_summary(a), _meta_summary(b)
    out = []
    for key, what in (("commit", "commit"), ("machine", "machine"), ("python", "python"),
                      ("load", "load average (1 min) at the jobs' starts"), ("dates", "measured")):
        va, vb = ma.get(key, "?"), mb.get(key, "?")
        same = "same" if va == vb else "DIFFERS"
        out.append(f"{what}: A {va}; B {vb}" + ("" if key in ("load", "dates") else f" ({same})"))
    return out


def _job_key(job: PairedJob, twins: int) -> tuple[str, str]:
    return (job.config, job.job.split(":", 1)[-1] if twins > 1 else "")


def _paired_reading(frame: pd.DataFrame, job: PairedJob, num_: str, den: str) -> str:
    """The report's reading of num/den in one job: ``1.25 [1.16, 1.31]``, per regime where the host shifted,
    with what stopped the job and its cycles."""
    sel = frame[(frame["job"] == job.job) & (frame["numerator"] == num_) & (frame["denominator"] == den)]
    parts = [ratio(r["median"], r["ci_low"], r["ci_high"]).replace("x ", " ", 1) for _, r in sel.iterrows()]
    regimes = f" in {len(parts)} regimes" if len(parts) > 1 else ""
    return (" / ".join(parts) + regimes + f" ({job.stopped_by or '?'}, {job.cycles} cycles)") if parts else "-"


def paired_lines(a: Report, b: Report) -> list[Line]:
    out = []
    fa, fb = ratio_frame(a.paired or []), ratio_frame(b.paired or [])
    twins_a = pd.Series([j.config for j in a.paired or []]).value_counts().to_dict()
    twins_b = pd.Series([j.config for j in b.paired or []]).value_counts().to_dict()
    jobs_b = {_job_key(j, twins_b.get(j.config, 1)): j for j in b.paired or []}
    for ja in a.paired or []:
        jb = jobs_b.get(_job_key(ja, twins_a.get(ja.config, 1)))
        if jb is None:
            continue
        for lab in [x for x in ja.labels if x not in CEILINGS]:
            serial = BackendLabel.parse(lab).serial_baseline().render()
            if lab == serial or not {lab, serial} <= set(ja.table) or not {lab, serial} <= set(jb.table):
                continue
            med, lo, hi = ratio_of_medians(cycle_ratios(jb.table, lab, serial), cycle_ratios(ja.table, lab, serial))
            out.append(Line(config=ja.config, name=name_of(a, ja.config), scenario=ja.scenario,
                            quantity=f"{backend_name(lab, a.presets)} / {backend_name(serial, a.presets)}",
                            source="paired",
                            a_text=_paired_reading(fa, ja, lab, serial), b_text=_paired_reading(fb, jb, lab, serial),
                            ratio=med, low=lo, high=hi, margin=max(ja.margin, jb.margin)))
    return out


def standalone_lines(a: Report, b: Report) -> list[Line]:
    out = []
    ra, rb = a.results.rows, b.results.rows
    if not len(ra) or not len(rb):
        return out
    ra, rb = ra[ra["status"] == "ok"], rb[rb["status"] == "ok"]
    for (config, label), ga in ra.groupby(["config", "label"], sort=True):
        gb = rb[(rb["config"] == config) & (rb["label"] == label)]
        if not len(gb):
            continue
        ga, gb = ga.sort_values("repetition"), gb.sort_values("repetition")  # in time order (dependence)
        xa, xb = ga["throughput"].to_numpy(float), gb["throughput"].to_numpy(float)
        med, lo, hi = ratio_of_medians(xb, xa)
        unit = str(ga["unit"].iloc[0])
        out.append(Line(config=config, name=name_of(a, config), scenario=str(ga["scenario"].iloc[0]),
                        quantity=f"{backend_name(label, a.presets)} {unit}/s", source="standalone",
                        a_text=f"{num(np.median(xa))} ({xa.size} reps)", b_text=f"{num(np.median(xb))} ({xb.size} reps)",
                        ratio=med, low=lo, high=hi))
    return out


def compare_runs(a: Path | str, b: Path | str, all_runs: bool = False) -> Comparison:
    """Read both runs (folders of result files or archived runs) and compare them."""
    ra = make_report([a], all_runs=all_runs, figures=False)
    rb = make_report([b], all_runs=all_runs, figures=False)
    lines = paired_lines(ra, rb) + standalone_lines(ra, rb)
    lines.sort(key=lambda x: (x.source != "paired", scenario_order(x.scenario), natural_key(x.name), x.quantity))
    return Comparison(a=str(a), b=str(b), changes=what_changed(ra, rb), lines=lines)


def comparison_table(c: Comparison, a_name: str = "A", b_name: str = "B") -> Table:
    return Table(["configuration", "reading", a_name, b_name, f"{b_name} / {a_name} (95% interval)", "change"],
                 [[x.name, f"{x.quantity} ({x.source})", x.a_text, x.b_text, ratio(x.ratio, x.low, x.high),
                   x.change.replace(" in B", f" in {b_name}")] for x in c.lines],
                 ["flagged" if x.flagged else "" for x in c.lines], empty="nothing measured in both runs")


def to_markdown(c: Comparison, a_name: str = "A", b_name: str = "B") -> str:
    """The comparison as Markdown: what changed, the flagged differences (pyperf's summary), the full table."""
    flagged = [x for x in c.lines if x.flagged]
    out = [f"{a_name}: `{c.a}`; {b_name}: `{c.b}`.", ""]
    out += [f"- {line.replace(': A ', f': {a_name} ', 1).replace('; B ', f'; {b_name} ', 1)}" for line in c.changes]
    out += [""]
    out += [f"{len(flagged)} of {len(c.lines)} readings differ beyond their interval"
            + (":" if flagged else " (none faster or slower by the rule)."), ""]
    out += [f"- {x.text()}".replace("in B", f"in {b_name}") for x in flagged] + ([""] if flagged else [])
    out.append(comparison_table(c, a_name, b_name).markdown())
    return "\n".join(out)


def update_block(path: Path, text: str) -> None:
    """Replace the text between `COMPARE_START` and `COMPARE_END` in ``path`` (refuse without the markers)."""
    body = path.read_text()
    start, end = body.find(COMPARE_START), body.find(COMPARE_END)
    if start < 0 or end < 0 or end < start:
        raise ValueError(f"{path} lacks the markers {COMPARE_START} ... {COMPARE_END}")
    block = (f"{COMPARE_START}\n<!-- generated by `python -m harness.report --compare A B --readme FILE`; do not "
             f"edit by hand -->\n\n{text}\n{COMPARE_END}")
    path.write_text(body[:start] + block + body[end + len(COMPARE_END):])
