"""The report's opening picture: every contender against serial, per configuration, as points with their
intervals on one shared log axis, the bounds (measured and synchronized ceilings, the Amdahl bound) as
labelled markers (docs/report.md, "Figures"). Split from `harness.report.figures` (the other figures), whose
`Plot` and palette it draws with.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from harness.labels import PresetNames
from harness.report.figures import (Plot, _config_meta, color, config_title, log_axis, marker, natural_key, shown,
                                    varying_params)
from harness.report.stats import CEILING, CEILINGS, SERIAL, SYNC_CEILING, amdahl_bound

#: how the bounds are drawn in the opening picture: (marker, colour, label)
BOUND_STYLES = {
    "measured": ("|", "#000000", "measured ceiling (capacity: k copies of serial, never meeting)"),
    "synchronized": ("4", "#555555", "synchronized ceiling (capacity_lockstep: k copies meeting each round)"),
    "amdahl": ("x", "#8c564b", "Amdahl bound (serial's server part stays serial)"),
}
#: rows (configuration x backend) per opening picture; more go to a second picture
MAX_ROWS = 48


def against_serial_frame(speedups: pd.DataFrame, rows: pd.DataFrame,
                         unequal: set | None = None) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
    """The standalone jobs' part of the opening picture: per configuration (its title) and backend, the ratio
    to serial with its interval and the backend's name as the run stored it (`harness.labels.PresetNames`); and
    per configuration the bounds over serial (ceilings, Amdahl)."""
    cols = ["group", "scenario", "label", "name", "source", "ratio", "ci_low", "ci_high"]
    if not len(speedups):
        return pd.DataFrame(columns=cols), {}
    unequal = unequal or set()
    sel = speedups[speedups["denominator"] == SERIAL]
    vary = varying_params(rows)
    meta = _config_meta(rows)
    names = PresetNames.from_rows(rows)
    recs, bounds = [], {}
    for c, g in sel.groupby("config", sort=True):
        group = config_title(meta.loc[c], vary, 48)
        b: dict[str, float] = {}
        for lab, key in ((CEILING, "measured"), (SYNC_CEILING, "synchronized")):
            hit = g[g["numerator"] == lab]
            if len(hit):
                b[key] = float(hit.iloc[0]["ratio"])
        bound = amdahl_bound(rows[(rows["config"] == c) & (rows["status"] == "ok")])
        if np.isfinite(bound):
            b["amdahl"] = float(bound)
        bounds[group] = b
        for _, r in g[~g["numerator"].isin(CEILINGS)].iterrows():
            if (c, r["numerator"]) in unequal:
                continue
            recs.append({"group": group, "scenario": meta.loc[c, "scenario"], "label": r["numerator"],
                         "name": shown(r["numerator"], names), "source": "standalone", "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(recs, columns=cols), bounds


def against_serial_plot(frame: pd.DataFrame, bounds: dict[str, dict[str, float]], name: str, title: str,
                        scenario_order: Any = None) -> list[Plot]:
    """Every backend against serial on one shared log axis: a point per (configuration, backend) at its ratio
    with its 95% interval as a line, grouped by configuration; 1 (serial) as a line; the bounds as labelled
    markers on each configuration's own row. Paired readings are hollow points."""
    if not len(frame):
        return []
    order = scenario_order or (lambda s: 0)
    groups = sorted(dict.fromkeys(frame["group"]), key=lambda gname: (order(frame.loc[frame["group"] == gname,
                                                                                        "scenario"].iloc[0]), natural_key(gname)))
    plots = []
    chunk: list[str] = []
    chunks: list[list[str]] = []
    n = 0
    for gname in groups:
        k = int((frame["group"] == gname).sum()) + 1
        if chunk and n + k > MAX_ROWS:
            chunks.append(chunk)
            chunk, n = [], 0
        chunk.append(gname)
        n += k
    if chunk:
        chunks.append(chunk)
    finite = frame[["ratio", "ci_low", "ci_high"]].to_numpy(float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    allb = [v for b in bounds.values() for v in b.values() if np.isfinite(v) and v > 0]
    lo_x = min([*finite, *allb, 1.0]) / 1.25
    hi_x = max([*finite, *allb, 1.0]) * 1.25
    for part, names in enumerate(chunks):
        ticks, labels, y = [], [], 0.0
        fig = Figure(figsize=(11.0, 1.2 + 0.26 * (sum(int((frame["group"] == g).sum()) + 1 for g in names))),
                     layout="constrained")
        ax = fig.subplots()
        seen: set[str] = set()
        for gname in names:
            g = frame[frame["group"] == gname].sort_values(["source", "ratio"])
            ax.text(lo_x * 1.02, y, gname, fontsize=8, fontweight="bold", va="center")
            head_y = y
            y += 1
            for _, r in g.iterrows():
                lab = r["label"]
                paired = str(r["source"]).startswith("paired")
                ax.plot([r["ci_low"], r["ci_high"]], [y, y], color=color(lab), lw=1.6)
                said = r["name"] if isinstance(r.get("name"), str) else shown(lab)  # (the run's name for it)
                key = f"{said}{' (paired)' if paired else ''}"
                ax.plot([r["ratio"]], [y], marker=marker(lab), ms=7, color=color(lab),
                        mfc="white" if paired else color(lab), ls="none", label=key if key not in seen else None)
                seen.add(key)
                ticks.append(y)
                labels.append(said + ("" if r["source"] == "standalone" else f" ({r['source']})"))
                y += 1
            for kind, value in bounds.get(gname, {}).items():
                mk, col, text = BOUND_STYLES[kind]
                ax.plot([value], [head_y], marker=mk, ms=12, mew=2, color=col, ls="none",
                        label=text if text not in seen else None)
                seen.add(text)
            y += 0.4
        ax.axvline(1.0, color="#7f7f7f", lw=1.2, ls="--", label="serial (1x)")
        ax.set_yticks(ticks)
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_ylim(y - 0.5, -0.8)
        ax.set_xlim(lo_x, hi_x)
        log_axis(ax, "x")
        ax.grid(True, axis="x", which="both", alpha=0.3)
        ax.set_xlabel("throughput / serial's throughput (95% interval; log scale, shared by every row)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), framealpha=0.9)
        suffix = f" ({part + 1} of {len(chunks)})" if len(chunks) > 1 else ""
        fig.suptitle(title + suffix, fontsize=10)
        plots.append(Plot(name if part == 0 else f"{name}_{part + 1}", title + suffix, fig,
                          "Per configuration (bold), each backend's throughput over serial's: the point is the ratio, "
                          "the line its 95% interval (standalone: ratio of medians of repetitions; hollow, paired: "
                          "median of per-cycle ratios). Left of the dashed line: slower than the plain loop. The "
                          "markers on a configuration's own row are its bounds over serial: the measured ceiling "
                          "(|), the synchronized ceiling (tri) and the Amdahl bound (x). One axis for every row."))
    return plots
