"""The scaling section a many-core run's report opens with: per workload, the reactor's speedup over serial and its
share of the synchronized ceiling against workers, measured in paired jobs, with the prediction
(`harness.report.predict`) beside each measurement."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.report.figures import Plot
from harness.report.fmt import Table
from harness.report.model import Report, Section
from harness.report.predict import PROCESSES, bank_labels, predict_rows

#: a run holds a scaling curve when its paired reactor rows span at least this many worker counts
MIN_WORKER_COUNTS = 3


def scaling_frame(rep: Report) -> pd.DataFrame:
    """`predict_rows` of the report's paired rows, or an empty frame when they hold no scaling curve; a subject other
    than the processes executor (the threads executor on a free-threaded interpreter) is a curve of its own, its
    workload named with it (``gym (threads ft)``), and so is each bank of a workload run at several (``gym/2``)."""
    rows = rep.paired_rows
    if rows is None or not len(rows):
        return pd.DataFrame()
    table = predict_rows(rows)
    if table.empty:
        return pd.DataFrame()
    labels = bank_labels(table)
    # a second bank at one worker count (`make proxy`'s like-for-like warm reference) is an input, not a curve
    single = (labels != table["workload"].astype(str)) & (table.groupby(labels)["workers"].transform("nunique") < 2)
    table = table.assign(workload=labels)[~single]
    other = table["executor"] != PROCESSES.name
    table.loc[other, "workload"] = table.loc[other, "workload"] + " (" + table.loc[other, "executor"] + ")"
    if table.groupby("workload")["workers"].nunique().max() < MIN_WORKER_COUNTS:
        return pd.DataFrame()
    return table


def _num(x: Any, fmt: str) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, fmt)


def _round_cell(r: dict[str, Any]) -> str:
    """The predicted round, with process 0's server part in it beside it where there is one."""
    server = _num(r.get("server_us"), ".0f")
    return _num(r["predicted_round_us"], ".0f") + ("" if server == "-" else f" ({server})")


def scaling_table(frame: pd.DataFrame) -> Table:
    header = ["workload", "workers", "reactor / serial", "sync ceiling / serial", "share of the ceiling",
              "predicted share", "Amdahl share", "predicted round (us; process 0's server part)",
              "hand-off (us, from)", "cache inflation (from)", "slowest / median process (from)"]
    rows = [[r["workload"], str(r["workers"]), _num(r["measured_speedup"], ".2f")
             + (f" (serial {r['serial_skew']:.2f}x its median)" if r.get("serial_check") else ""),
             f"{r['ceiling_speedup']:.2f}" + ("" if r["ceiling_from"] == "run" else f" ({r['ceiling_from']})")
             + (f" (above {r['workers']} copies)" if r.get("ceiling_check") else ""),
             _num(r["measured_share"], ".2f"), _num(r["predicted_share"], ".2f"), _num(r.get("amdahl_share"), ".2f"),
             _round_cell(r),
             f"{_num(r['handoff_us'], '.1f')} ({r['handoff_from']})",
             f"{_num(r.get('inflation'), '.2f')} ({r.get('inflation_from', '-')})",
             f"{_num(r.get('spread'), '.2f')} ({r.get('spread_from', '-')})"]
            for r in frame.to_dict("records")]
    return Table(header, rows, empty="no paired reactor rows at three or more worker counts")


def scaling_plot(frame: pd.DataFrame) -> Plot:
    """Share of the ceiling (left) and speedup over serial (right) against workers: measured solid, predicted
    dashed, one colour per workload."""
    import matplotlib.pyplot as plt

    fig, (share, speed) = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, (workload, g) in enumerate(frame.groupby("workload")):
        colour = f"C{i}"
        g = g.sort_values("workers")
        share.plot(g["workers"], g["measured_share"], "o-", color=colour, label=f"{workload} measured")
        speed.plot(g["workers"], g["measured_speedup"], "o-", color=colour, label=f"{workload}")
        if g["predicted_share"].notna().any():
            share.plot(g["workers"], g["predicted_share"], "s--", color=colour, alpha=0.7,
                       label=f"{workload} predicted")
            speed.plot(g["workers"], g["predicted_speedup"], "s--", color=colour, alpha=0.7)
    share.axhline(1.0, color="grey", lw=0.8)
    share.set(xlabel="workers (processes or threads)", ylabel="reactor / synchronized ceiling", xscale="log",
              ylim=(0, None))
    speed.set(xlabel="workers (processes or threads)", ylabel="reactor / serial", xscale="log", ylim=(0, None))
    for ax in (share, speed):
        ax.set_xticks(sorted(frame["workers"].unique()))
        ax.get_xaxis().set_major_formatter(plt.matplotlib.ticker.ScalarFormatter())
        ax.grid(alpha=0.3)
    share.legend(fontsize=7, ncol=2)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return Plot("scaling", "The reactor against workers (measured: solid; predicted: dashed)", fig,
                "Left: the reactor's share of the synchronized ceiling; right: its speedup over serial; both "
                "medians of per-cycle ratios in paired jobs. Dashed: predicted for a core per process from the "
                "rows' per-process CPU costs (none for rows recorded before the CPU column).")


def scaling_plots(rep: Report) -> list[Plot]:
    """The scaling figure of a run with a scaling curve (`harness.report.build` draws it with the others)."""
    frame = scaling_frame(rep)
    return [] if frame.empty else [scaling_plot(frame)]


def _check_lines(frame: pd.DataFrame, check: str) -> list[str]:
    """One sentence per line of ``frame`` whose ``check`` column (`predict_rows`) says something."""
    return [f"{r['workload']} at {r['workers']} workers: {r[check]}." for r in frame.to_dict("records") if r.get(check)]


def scaling_sections(rep: Report) -> list[Section]:
    """The scaling section (its table, and its figure where one was drawn), or none for a run without a
    scaling curve."""
    frame = scaling_frame(rep)
    if frame.empty:
        return []
    content: Any = [p for p in rep.plots if p.name == "scaling"]
    intro = ("Paired jobs at each worker count: the reactor's speedup over serial and its share of the synchronized "
             "ceiling (k serial copies meeting once per round), medians of per-cycle ratios; beside each, the "
             "share predicted for a core per process from the rows' per-process CPU time per round (divided by "
             "its cache inflation where processes outnumbered cores) and the "
             "breakdown's hand-off (docs/report.md, \"The scaling prediction\"; `python -m harness.report "
             "--predict`), and the Amdahl share: serial's Amdahl bound over the workers, the most a round that keeps "
             "serial's server part serial reaches at the copies' speed per core.")
    checks = _check_lines(frame, "ceiling_check")
    if checks:  # more than k copies can give: a bug until a breakdown explains it (the rows' CPU columns)
        intro += " A ceiling above its copies is not a ceiling: " + " ".join(checks)
    skewed = _check_lines(frame, "serial_check")
    if skewed:  # the same serial work at another speed in one job: every ratio over serial there moves with it
        intro += (" Serial does the same work at every worker count; where one job's ran away from its median, every "
                  "speedup over it in that job moves with it (the share of the ceiling does not): " + " ".join(skewed))
    above = _check_lines(frame, "amdahl_check")
    if above:  # a share past what the serial part allows: a bug until the CPU columns explain it
        intro += " " + " ".join(above)
    out = [Section("Scaling", intro, scaling_table(frame), key="scaling")]
    if content:
        out.append(Section("Scaling: the curve", "", content, key="scaling-figure"))
    return out
