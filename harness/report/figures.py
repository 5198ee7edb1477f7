"""The report's figures (matplotlib without pyplot: no display, no global state; PNG and SVG on disk).

Each function returns zero or more `Plot`s; nothing is drawn for data that is not there, and the report
says what is missing instead.
"""
from __future__ import annotations

import base64
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from harness.labels import BackendLabel, PresetNames
from harness.report.stats import HEADLINE_PAIRS, SERIAL

MAX_PANELS = 9
#: one colour and one marker per backend preset, far apart (colour-blind safe where it matters: the reactor's
#: executors in warm hues, Ray's layouts in blues and teals with different markers, the ceilings black/grey)
KNOWN_STYLES = {
    "serial:-": ("#4d4d4d", "o"), "reactor:processes": ("#d62728", "D"), "reactor:threads": ("#ff7f0e", "^"),
    "reactor:inline": ("#bcbd22", "v"), "reactor:processes-max1024": ("#8c1515", "d"),
    "ray:actors": ("#1f77b4", "s"), "ray:compiled": ("#17becf", "P"), "ray:actors_packed": ("#08306b", "X"),
    "ray:compiled_packed": ("#2ca089", "*"), "vector:-": ("#2ca02c", "h"), "ale_vector:-": ("#98df8a", "H"),
    "rllib:module": ("#9467bd", "<"), "rllib:random": ("#e377c2", ">"), "puffer:-": ("#8c564b", "p"),
    "capacity:-": ("#000000", "|"), "capacity:lockstep": ("#a0a0a0", "_"),
}
KNOWN_COLORS = {k: v[0] for k, v in KNOWN_STYLES.items()}
_CYCLE = ["#9467bd", "#8c564b", "#e377c2", "#393b79", "#637939", "#843c39", "#7b4173"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h"]
#: the copies' styles (A/A copies ``serial#2`` and residents with injected work ``serial +2%``,
#: `harness.labels.BackendLabel.is_copy`): colours no backend has, and markers no backend has, one per copy number
#: (a job's copies of one backend are numbered apart, so they differ from each other and from the backend)
COPY_COLORS = ["#e6550d", "#31a354", "#756bb1", "#de9ed6", "#fdae6b", "#636363", "#6baed6", "#b5cf6b"]
COPY_MARKERS = ["x", "+", "1", "2", "3", "4", "8", "$c$"]


def _base(label: str) -> str:
    """A label's style key: interpreter, copy and injected work dropped (``reactor:threads ft#2`` ->
    ``reactor:threads``)."""
    return BackendLabel.parse(label).on_default_interpreter().first_copy().render()


def _copy_index(label: str) -> int | None:
    """A copy's place in `COPY_COLORS` / `COPY_MARKERS` (by its copy number; a first resident with injected work
    last), None for a backend that is no copy."""
    lab = BackendLabel.parse(label)
    if not lab.is_copy:
        return None
    return (lab.copy - 2) % len(COPY_MARKERS) if lab.copy > 1 else len(COPY_MARKERS) - 1


def color(label: str) -> str:
    """A stable color per backend label, so a backend looks the same in every figure; a copy (A/A or injected)
    never in its backend's colour."""
    if ":" in label and (k := _copy_index(label)) is not None:
        base = _base(label)
        shift = list(KNOWN_STYLES).index(base) if base in KNOWN_STYLES else sum(map(ord, base))
        return COPY_COLORS[(k + shift) % len(COPY_COLORS)]
    base = _base(label) if ":" in label else label
    if base in KNOWN_STYLES:
        return KNOWN_STYLES[base][0]
    return _CYCLE[sum(map(ord, label)) % len(_CYCLE)]


def marker(label: str) -> str:
    """A stable marker per backend label (with the colour: two backends differ in both); a copy's marker is its
    copy number's (`COPY_MARKERS`), never a backend's."""
    if ":" in label and (k := _copy_index(label)) is not None:
        return COPY_MARKERS[k]
    base = _base(label) if ":" in label else label
    if base in KNOWN_STYLES:
        return KNOWN_STYLES[base][1]
    return _MARKERS[sum(map(ord, label)) % len(_MARKERS)]


def shown(label: str, names: PresetNames | None = None) -> str:
    """A backend as figures name it: the preset a user types (`harness.labels.BackendLabel.preset_name`), by the
    run's stored ``names`` (`harness.labels.PresetNames`); a copy by its copy number or its injected effect
    (``serial#2``, ``serial +2%``)."""
    return BackendLabel.parse(label).preset_name(names=names) if ":" in label else label


@dataclass
class Plot:
    name: str
    title: str
    figure: Figure
    caption: str = ""
    files: list[Path] = field(default_factory=list)

    _png: bytes = field(default=b"", repr=False)

    def png(self) -> bytes:
        """The PNG rendering, drawn once (the HTML embeds the same bytes as figures/<name>.png)."""
        if not self._png:
            if self.figure._suptitle is None:  # every picture says what it shows, also apart from the page
                self.figure.suptitle(self.title, fontsize=10)
            buf = io.BytesIO()
            self.figure.savefig(buf, format="png", dpi=90)
            self._png = _palette_png(buf.getvalue())
        return self._png

    def png_base64(self) -> str:
        return base64.b64encode(self.png()).decode()

    def save(self, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        png = folder / f"{self.name}.png"
        png.write_bytes(self.png())
        self.files = [png]
        return self.files


def _palette_png(png: bytes) -> bytes:
    """``png`` as an 8-bit palette PNG: a chart has far fewer than 256 colours worth keeping, and the palette
    image is about a third of the size (reports and the reference runs' figures stay small in the tree)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, "PNG",
                                                                                               optimize=True)
    return out.getvalue()


def varying_params(rows: pd.DataFrame) -> dict[str, list[str]]:
    """Per scenario, the parameter names that take more than one value (the ones worth naming in a label)."""
    out: dict[str, list[str]] = {}
    for scen, g in rows.groupby("scenario"):
        keys: dict[str, set[str]] = {}
        for p in g["params_dict"]:
            for k, v in p.items():
                keys.setdefault(k, set()).add(str(v))
        n = len(g)
        out[scen] = sorted(k for k, vals in keys.items()
                           if len(vals) > 1 or sum(k in p for p in g["params_dict"]) not in (0, n))
    return out


def describe(params: dict[str, Any], keys: Iterable[str], limit: int = 48) -> str:
    """``k=v`` for the given keys, shortened to ``limit`` characters."""
    text = " ".join(f"{k}={params.get(k)}" for k in keys if k in params)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def log_axis(ax: Any, which: str = "y") -> None:
    """A log axis with readable labels (1, 2, 5 per decade; no overlapping minor labels)."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def config_title(meta: pd.Series, vary: dict[str, list[str]], limit: int = 32) -> str:
    """``scenario env k=v w=N`` for a configuration (only the parameters that vary in its scenario)."""
    scen = meta["scenario"]
    env = "" if meta["env_id"] in ("-", "") else f" {meta['env_id']}"
    keys = [k for k in vary.get(scen, []) if k != "env_id"]
    params = describe(meta["params_dict"], keys, limit)
    w = meta["workers"]
    return f"{scen}{env}{(' ' + params) if params else ''} w={int(w) if np.isfinite(w) else '-'}"


def _grid(n: int) -> tuple[int, int]:
    cols = min(3, n)
    return math.ceil(n / cols), cols


def _figure(n: int, w: float = 4.6, h: float = 3.4) -> tuple[Figure, list[Any]]:
    rows, cols = _grid(max(n, 1))
    fig = Figure(figsize=(w * cols, h * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _config_meta(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.drop_duplicates("config").set_index("config")


def throughput_vs_workers(summary: pd.DataFrame, rows: pd.DataFrame, names: PresetNames | None = None) -> list[Plot]:
    """Median throughput (log scale) against workers, one line per backend label, one panel per series."""
    s = summary[np.isfinite(summary["median"].astype(float))]
    if not len(s):
        return []
    vary = varying_params(rows)
    series = [(k, g) for k, g in s.groupby(["scenario", "params", "env_id", "num_envs", "budget", "seed"],
                                           dropna=False, sort=True) if g["workers"].nunique() > 1]
    if not series:
        return []
    fig, axes = _figure(min(len(series), MAX_PANELS))
    for ax, (key, g) in zip(axes, series):
        scen = key[0]
        params = g["params"].iloc[0]
        pd_ = rows.loc[rows["params"] == params, "params_dict"].iloc[0] if (rows["params"] == params).any() else {}
        for label, lg in g.groupby("label", sort=True):
            lg = lg.sort_values("workers")
            yerr = np.vstack([lg["median"] - lg["ci_low"], lg["ci_high"] - lg["median"]]).clip(min=0)
            ax.errorbar(lg["workers"], lg["median"], yerr=yerr, marker=marker(label), capsize=3, color=color(label),
                        label=shown(label, names))
        ceil = g[np.isfinite(g["ceiling"].astype(float))].groupby("workers")["ceiling"].median()
        if len(ceil):
            ax.plot(ceil.index, ceil.values, ls="--", color="black", lw=1, label="ceiling")
        log_axis(ax, "y")
        ax.set_xlabel("workers")
        ax.set_ylabel(f"{g['unit'].iloc[0] or 'units'}/s")
        ax.set_xticks(sorted(set(g["workers"].dropna().astype(int))))
        ax.set_title(f"{scen} {key[2] if key[2] != '-' else ''} {describe(pd_, vary.get(scen, []), 36)}".strip(),
                     fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    cap = "Median throughput with 95% bootstrap interval; dashed: ceiling (serial x min(workers, cores))."
    if len(series) > MAX_PANELS:
        cap += f" {len(series) - MAX_PANELS} more series not drawn (see summary.csv)."
    scen = ", ".join(sorted({k[0] for k, _ in series}))
    units = ", ".join(sorted({f"{u or 'units'}/s" for u in s["unit"]}))
    return [Plot("throughput_vs_workers", f"{scen}: throughput ({units}) against workers", fig, cap)]


def _pairs_to_plot(speedups: pd.DataFrame) -> list[tuple[str, str]]:
    have = set(zip(speedups["numerator"], speedups["denominator"]))
    pairs = [p for p in HEADLINE_PAIRS if p in have]
    if pairs:
        return pairs
    return sorted(p for p in have if p[1] == SERIAL) or sorted(have)[:4]


def natural_key(text: Any) -> tuple:
    """A name's sort key in which numbers sort as numbers (``w=2`` before ``w=16``): the text split into runs
    of digits (as ints) and the rest (as strings), which alternate, so keys of any two names compare."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(text)))


#: the RL workloads: their figures never share an axis with the microbenchmarks' (ratios of 100x and more)
RL = ("gym", "atari", "dqn", "marl")


def speedup_bars(speedups: pd.DataFrame, rows: pd.DataFrame, names: PresetNames | None = None) -> list[Plot]:
    """Speedup bars per configuration (grouped by scenario) with interval whiskers, RL workloads and
    microbenchmarks in two figures; hatched = no verdict by the report's one rule."""
    if not len(speedups):
        return []
    rl = speedups["scenario"].isin(RL)
    return (_speedup_bars(speedups[rl], rows, "speedups", names)
            + _speedup_bars(speedups[~rl], rows, "speedups_micro", names))


def _decided(r: pd.Series) -> bool:
    """Whether the report's one rule calls this standalone speedup faster or slower (`harness.report.verdict.
    standalone_word`): the bars are hatched by what the tables say, not by a rank test that cannot reach p < 0.05
    at 3 + 3 repetitions."""
    from harness.report.intervals import FASTER, SLOWER
    from harness.report.stats import Speedup
    from harness.report.verdict import standalone_word

    sp = Speedup(float(r["ratio"]), float(r["ci_low"]), float(r["ci_high"]), math.nan, False, int(r["n_a"]),
                 int(r["n_b"]))
    return standalone_word(sp) in (FASTER, SLOWER)


def _speedup_bars(speedups: pd.DataFrame, rows: pd.DataFrame, name: str,
                  names: PresetNames | None = None) -> list[Plot]:
    if not len(speedups):
        return []
    pairs = _pairs_to_plot(speedups)
    sel = speedups[np.array([(a, b) in pairs for a, b in zip(speedups["numerator"], speedups["denominator"])], dtype=bool)]
    vary = varying_params(rows)
    meta = _config_meta(rows)
    configs = sorted(set(sel["config"]), key=lambda c: (meta.loc[c, "scenario"], natural_key(c)))
    fig = Figure(figsize=(min(16.0, max(6.0, 0.45 * len(configs) * len(pairs) + 2)), 4.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(pairs)
    # one colour per bar series: the denominator's when every pair has the same numerator, else the numerator's
    by_den = len({a for a, _ in pairs}) == 1
    pair_color = {(a, b): color(b if by_den else a) for a, b in pairs}
    for j, (a, b) in enumerate(pairs):
        ps = sel[(sel["numerator"] == a) & (sel["denominator"] == b)].set_index("config")
        xs, ys, lo, hi, sig = [], [], [], [], []
        for i, c in enumerate(configs):
            if c in ps.index:
                r = ps.loc[c]
                xs.append(i + (j - (len(pairs) - 1) / 2) * width)
                ys.append(r["ratio"]); lo.append(r["ci_low"]); hi.append(r["ci_high"])
                sig.append(_decided(r))
        if not xs:
            continue
        ys_a = np.array(ys, float)
        err = np.vstack([ys_a - np.array(lo, float), np.array(hi, float) - ys_a]).clip(min=0)
        # bars start at 1 (no difference): a bar's length is the speedup, up or down, on every axis
        bars = ax.bar(xs, ys_a - 1.0, bottom=1.0, width=width, color=pair_color[(a, b)], edgecolor="black",
                      label=f"{shown(a, names)} / {shown(b, names)}", yerr=err, capsize=3)
        for bar, s in zip(bars, sig):
            if not s:
                bar.set_hatch("//")
                bar.set_alpha(0.6)
    ax.axhline(1.0, color="black", lw=1)
    log_axis(ax, "y")
    handles = [Patch(facecolor=pair_color[(a, b)], edgecolor="black", label=f"{shown(a, names)} / {shown(b, names)}")
               for a, b in pairs]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="no verdict (rule)"))
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels([config_title(meta.loc[c], vary, 24) for c in configs], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("speedup (ratio of median throughputs)")
    ax.legend(handles=handles, fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    scen = ", ".join(sorted({str(meta.loc[c, "scenario"]) for c in configs}))
    return [Plot(name, f"{scen}: speedups (ratio of median throughputs, unit/s over unit/s)", fig,
                 "Ratio of medians with 95% bootstrap interval; hatched bars: no verdict by the report's one rule "
                 "(the interval holds 1, or a side has fewer than 3 repetitions), as the tables say; invalid "
                 "configurations (checksum mismatch) are left out.")]


def _latency_frame(rows: pd.DataFrame, latencies: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The latency summary's ``kind`` rows (`harness.report.load.LATENCY_COLUMNS`) with their job's keys."""
    if not len(latencies):
        return latencies
    jobs = rows.drop_duplicates("job").set_index("job")[["config", "label", "scenario", "workers"]]
    return latencies[latencies["kind"] == kind].join(jobs, on="job", how="inner")


def latency_cdfs(rows: pd.DataFrame, latencies: pd.DataFrame, names: PresetNames | None = None) -> list[Plot]:
    """Per-round latency CDFs per backend, for one configuration per scenario (the one with most backends)."""
    lat = _latency_frame(rows[rows["status"] == "ok"], latencies, "quantile")
    if not len(lat):
        return []
    chosen = []
    for scen, g in lat.groupby("scenario", sort=True):
        per = g.groupby("config").agg(labels=("label", "nunique"), workers=("workers", "max"))
        best = per.sort_values(["labels", "workers"], ascending=False).index[0]
        chosen.append((scen, best, g[g["config"] == best]))
    fig, axes = _figure(min(len(chosen), MAX_PANELS))
    vary = varying_params(rows)
    meta = _config_meta(rows)
    for ax, (scen, cfg, g) in zip(axes, chosen):
        for label, lg in g.groupby("label", sort=True):
            # each job's evenly spaced quantiles of its rounds; several jobs (trials) pool their quantiles
            v = np.sort(lg["value"].to_numpy(float))
            v = v[np.isfinite(v) & (v > 0)]
            if v.size:
                ax.step(v, np.arange(1, v.size + 1) / v.size, where="post", color=color(label),
                        label=shown(label, names))
        log_axis(ax, "x")
        ax.set_xlabel("round latency (ms)")
        ax.set_ylabel("fraction of rounds")
        ax.set_title(config_title(meta.loc[cfg], vary), fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    return [Plot("latency_cdf", f"{', '.join(s for s, _, _ in chosen)}: per-round latency distributions (ms)", fig,
                 "Empirical CDF of every timed round (all repetitions; drawn from 201 quantiles per job), one "
                 "configuration per scenario: the one with the most backends, then the most workers.")]


def _overhead_plot(summary: pd.DataFrame, rows: pd.DataFrame, xkey: str, name: str, title: str,
                   xlabel: str, scenarios: tuple[str, ...], names: PresetNames | None = None) -> list[Plot]:
    s = summary[summary["scenario"].isin(scenarios) & np.isfinite(summary["overhead_ms"].astype(float))].copy()
    if not len(s):
        return []
    pmap = rows.drop_duplicates("params").set_index("params")["params_dict"]
    def xval(r: pd.Series) -> float:
        p = pmap.get(r["params"], {})
        v = p.get(xkey)
        if v is None and xkey == "num_clients":
            v = r["num_envs"]
        try:
            return float(v)
        except (TypeError, ValueError):
            return math.nan
    s["x"] = [xval(r) for _, r in s.iterrows()]
    s = s[np.isfinite(s["x"])]
    if s["x"].nunique() < 2:
        return []
    vary = varying_params(rows)
    other = sorted({k for sc in scenarios for k in vary.get(sc, [])} - {xkey, "num_clients", "payload_bytes"})
    s["line"] = [f"{r['scenario']} w={int(r['workers']) if np.isfinite(r['workers']) else '-'} "
                 f"{describe(pmap.get(r['params'], {}), other, 30)}".strip() for _, r in s.iterrows()]
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    ax = fig.subplots()
    for (label, line), g in s.groupby(["label", "line"], sort=True):
        g = g.groupby("x", as_index=False)["overhead_ms"].median().sort_values("x")
        # a line through two points draws a trend the data does not show: fewer than 3 points stay points
        ax.plot(g["x"], g["overhead_ms"], marker=marker(label), ls="-" if len(g) >= 3 else "none",
                color=color(label), label=f"{shown(label, names)} {line}")
    if (s["x"] <= 0).any():
        ax.set_xscale("symlog", linthresh=max(1.0, float(s.loc[s["x"] > 0, "x"].min()) if (s["x"] > 0).any() else 1.0))
    else:
        log_axis(ax, "x")
    if (s["overhead_ms"] > 0).all():
        log_axis(ax, "y")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("overhead per round (ms)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return [Plot(name, f"{', '.join(scenarios)}: {title[0].lower() + title[1:]} (ms per round)", fig,
                 "Overhead per round = median mean round latency - the fixed work per round "
                                   "(round_work_ms).")]


def overhead_plots(summary: pd.DataFrame, rows: pd.DataFrame, names: PresetNames | None = None) -> list[Plot]:
    """The microbenchmarks: overhead per round against payload size and against number of clients."""
    plots: list[Plot] = []
    # each axis from the microbenchmark that sweeps it; the other one only if the first has no sweep of it
    for xkey, name, title, xlabel, order in (
            ("payload_bytes", "overhead_vs_payload", "Overhead against payload size", "payload (bytes)",
             ("object_size", "actors")),
            ("num_clients", "overhead_vs_clients", "Overhead against number of actors", "clients (actors)",
             ("actors", "object_size"))):
        for scen in order:
            made = _overhead_plot(summary, rows, xkey, name, title, xlabel, (scen,), names)
            if made:
                plots += made
                break
    return plots


PHASES = ("sampling_s", "communication_s", "training_s")


def dqn_plots(rows: pd.DataFrame, latencies: pd.DataFrame, names: PresetNames | None = None) -> list[Plot]:
    """DQN: where each backend spends a repetition (stacked phases), and wall time against rounds done."""
    ok = rows[(rows["scenario"] == "dqn") & (rows["status"] == "ok")]
    if not len(ok):
        return []
    plots: list[Plot] = []
    configs = sorted(set(ok["config"]))[:MAX_PANELS]
    vary = varying_params(rows)
    meta = _config_meta(rows)
    def title(c: str) -> str:
        return config_title(meta.loc[c], vary)
    phased = ok[np.array([any(k in e for k in PHASES) for e in ok["extra_dict"]], dtype=bool)]
    if len(phased):
        pconfigs = [c for c in configs if c in set(phased["config"])]
        fig, axes = _figure(len(pconfigs))
        for ax, c in zip(axes, pconfigs):
            g = phased[phased["config"] == c]
            labels = sorted(set(g["label"]))
            bottom = np.zeros(len(labels))
            for k, phase in enumerate(PHASES):
                vals = np.array([np.nanmedian([float(e.get(phase, np.nan)) for e in g.loc[g["label"] == lab, "extra_dict"]])
                                 for lab in labels])
                vals = np.nan_to_num(vals)
                ax.bar([shown(lab, names) for lab in labels], vals, bottom=bottom, label=phase[:-2],
                       color=["#4c72b0", "#dd8452", "#55a868"][k])
                bottom += vals
            ax.set_ylabel("seconds per repetition (median)")
            ax.set_title(title(c), fontsize=9)
            ax.tick_params(axis="x", labelsize=7, rotation=20)
            ax.legend(fontsize=7)
        plots.append(Plot("dqn_phases", "dqn: sampling, communication and training time (s per repetition)", fig,
                          "Median over repetitions of each phase's seconds (from the rows' extra column)."))
    lat = _latency_frame(ok, latencies, "wall")
    fig, axes = _figure(len(configs))
    for ax, c in zip(axes, configs):
        lc = lat[lat["config"] == c] if len(lat) else lat
        g = ok[ok["config"] == c]
        for label in sorted(set(g["label"])):
            ll = lc[lc["label"] == label] if len(lc) else lc
            if len(ll):
                med = ll.groupby("x")["value"].median()  # the median over jobs (trials) of each job's median
                ax.plot(med.index.to_numpy(float), med.to_numpy(float), color=color(label), label=shown(label, names))
            else:
                lg = g[g["label"] == label]
                ax.plot(lg["rounds"], lg["seconds"], marker(label), color=color(label),
                        label=f"{shown(label, names)} (totals only)")
        ax.set_xlabel("rounds")
        ax.set_ylabel("wall time (s)")
        ax.set_title(title(c), fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
    plots.append(Plot("dqn_wall_time", "dqn: wall time (s) against rounds", fig,
                      "Cumulative wall time after each round (median over repetitions of the summed round latencies)."))
    return plots


#: the reactor processes executor's round breakdown (rows' extra ``bd_w<rank>_<part>_us``), stacked in this order
BREAKDOWN_PARTS = ("work", "transport", "wait", "handoff", "other")
BREAKDOWN_COLORS = ("#55a868", "#dd8452", "#c44e52", "#da8bc3", "#8172b2")


def round_breakdown_plots(rows: pd.DataFrame) -> list[Plot]:
    """Where a round's time goes in each worker process of the reactor processes executor: one
    panel per configuration, one stacked bar per process (role work, transport, waiting, hand-off, other),
    with the serial round time of the same configuration as a dashed line."""
    ok = rows[(rows["status"] == "ok")]
    # the processes executor's rows (the threads executor's breakdown has no work or transport part)
    has = np.array(["bd_w0_work_us" in e for e in ok["extra_dict"]], dtype=bool)
    bd = ok[has & (ok["backend"] == "reactor").to_numpy()]
    if not len(bd):
        return []
    configs = sorted(set(bd["config"]))[:MAX_PANELS]
    vary = varying_params(rows)
    meta = _config_meta(rows)
    fig, axes = _figure(len(configs))
    for ax, c in zip(axes, configs):
        g = bd[bd["config"] == c]
        ranks = sorted({int(k[4:].split("_")[0]) for e in g["extra_dict"] for k in e if str(k).startswith("bd_w")})
        labels = [f"w{r}" for r in ranks]
        bottom = np.zeros(len(ranks))
        for part, col in zip(BREAKDOWN_PARTS, BREAKDOWN_COLORS):
            vals = np.nan_to_num(np.array([np.nanmedian([float(e.get(f"bd_w{r}_{part}_us", np.nan))
                                                         for e in g["extra_dict"]]) for r in ranks]))
            ax.bar(labels, vals, bottom=bottom, label=part, color=col)
            bottom += vals
        serial = ok[(ok["config"] == c) & (ok["label"] == SERIAL)]["latency_mean_ms"].astype(float)
        if len(serial) and np.isfinite(serial).any():
            ax.axhline(float(np.nanmedian(serial)) * 1e3, color="k", ls="--", lw=1, label="serial round")
        ax.set_ylabel("us per round (median)")
        ax.set_title(config_title(meta.loc[c], vary), fontsize=9)
        ax.legend(fontsize=7)
    scen = ", ".join(sorted({str(meta.loc[c, "scenario"]) for c in configs}))
    return [Plot("round_breakdown", f"{scen}: where a round's time goes in the reactor's processes (us per round)", fig,
                 "Median over repetitions of each process's microseconds per round in role work (reaction "
                 "bodies: step, gather with its checksum), transport (slot writes and reads), waiting (meetings "
                 "and tag advances: for the partner to get there), hand-off (from the partner's publish to this "
                 "process seeing it: the wake-up) and other (scheduler and executor); w0 also runs the server. "
                 "Dashed: the "
                 "serial backend's mean round time in the same configuration.")]


def all_plots(summary: pd.DataFrame, speedups: pd.DataFrame, rows: pd.DataFrame,
              latencies: pd.DataFrame, unequal: set | None = None,
              names: PresetNames | None = None) -> tuple[list[Plot], list[str]]:
    """Every figure the data allows, in report order, and a note for each figure it does not allow (the opening
    picture, which also holds paired jobs, is drawn by `harness.report.build` with `harness.report.opening`).
    Backends are named as the run stored them (``names``; default: read from ``rows``)."""
    names = names if names is not None else PresetNames.from_rows(rows)
    plots: list[Plot] = []
    notes: list[str] = []
    for make, missing in (
        (lambda: throughput_vs_workers(summary, rows, names),
         "throughput against workers: no configuration measured at two or more worker counts"),
        (lambda: speedup_bars(speedups, rows, names), "speedups: no configuration with two backends' ok rows"),
        (lambda: latency_cdfs(rows, latencies, names), "latency distributions: no per-round latencies (latencies.csv)"),
        (lambda: overhead_plots(summary, rows, names),
         "overhead against payload / number of actors: no actors or object_size rows with round_work_ms at two "
         "or more payload sizes or client counts"),
        (lambda: dqn_plots(rows, latencies, names), "DQN time breakdown and wall time: no ok dqn rows"),
        (lambda: round_breakdown_plots(rows),
         "round breakdown: no reactor rows with a per-process breakdown (backend.breakdown=true)"),
    ):
        made = make()
        plots += made
        if not made:
            notes.append(missing)
    return plots, notes
