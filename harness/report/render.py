"""Rendering the analysis: a self-contained HTML page, a Markdown page with linked figures, summary.csv, and
the README's results section. Numbers are formatted here and only here."""
from __future__ import annotations

import datetime as _dt
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from harness.report.figures import Plot, describe, varying_params
from harness.report.load import ResultSet
from harness.report.paired import verdict_lines as paired_verdict_lines
from harness.report.paper import PAPER_CITATION
from harness.report.analysis import Analysis
from harness.report.stats import ALPHA, HEADLINE_PAIRS, SERIAL, implausible_ceilings
from harness.report.verdict import PAPER_RAY, REACTOR, fmt_ratio

README_START = "<!-- results:start -->"
README_END = "<!-- results:end -->"


# ------------------------------------------------------------------------------------------ formatting

def num(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant digits and thousands separators; ``-`` for missing."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "-"
    if not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) >= 1:
        return f"{int(v):,}"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    return f"{v:,.{decimals}f}"


def interval(lo: Any, hi: Any) -> str:
    return f"[{num(lo)}, {num(hi)}]" if num(lo) != "-" else "-"


def ratio_text(r: pd.Series, compact: bool = False) -> str:
    """``3.21x [2.9, 3.5]`` plus significance (``compact``: ``(p=0.008)`` or ``(n.s.)``)."""
    if not np.isfinite(r["ratio"]):
        return "-"
    if compact:
        return (f"{num(r['ratio'])}x {interval(r['ci_low'], r['ci_high'])} "
                + (f"(p={r['p_value']:.2g})" if r["significant"] else "(n.s.)"))
    # a test says little beyond its resolution: the smallest p its sample sizes can give
    res = f"; smallest p reachable at n={r['n_a']}+{r['n_b']}: {r['min_p']:.2g}"
    sig = f"p={r['p_value']:.2g}{res}" if r["significant"] else (
        f"not significant (p={r['p_value']:.2g}" + (f"; n={r['n_a']}+{r['n_b']} cannot reach p<{ALPHA})"
                                                   if r["min_p"] >= ALPHA else f"{res})"))
    return f"{num(r['ratio'])}x {interval(r['ci_low'], r['ci_high'])}, {sig}"


def _marked(cells: list[str], cls: str, mark: str) -> list[str]:
    """Invalid rows say so in words too (red alone is lost in a plain-text or colour-blind reading)."""
    return [mark + cells[0], *cells[1:]] if cls == "invalid" and cells else cells


@dataclass
class Table:
    """A rendered table: header, cells (strings), and per-row CSS class (``invalid``, ``unstable``, ...)."""

    header: list[str]
    rows: list[list[str]]
    classes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        if not self.rows:
            return "_(none)_\n"
        esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
        lines = ["| " + " | ".join(map(esc, self.header)) + " |", "|" + "---|" * len(self.header)]
        for cells, cls in zip(self.rows, self.classes or [""] * len(self.rows)):
            cells = _marked(cells, cls, "**INVALID** ")
            lines.append("| " + " | ".join(map(esc, cells)) + " |")
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        if not self.rows:
            return "<p><em>(none)</em></p>"
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = []
        for cells, cls in zip(self.rows, self.classes or [""] * len(self.rows)):
            cells = _marked(cells, cls, "INVALID: ")
            tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
            body.append(f'<tr class="{cls}">{tds}</tr>' if cls else f"<tr>{tds}</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


# ------------------------------------------------------------------------------------------ content

@dataclass
class Report:
    """Everything the renderers need: the loaded rows, the analysis, the paper table and the figures."""

    results: ResultSet
    analysis: Analysis
    paper: pd.DataFrame
    plots: list[Plot]
    sources: list[str]
    superseded_runs: int = 0
    #: configuration -> readable name (computed on first use)
    names: Optional[dict[str, str]] = None
    #: figures that could not be drawn, and why
    figure_notes: list[str] = field(default_factory=list)
    #: paired jobs (`harness.report.paired.PairedJob`), analyzed apart from the standalone rows above, and
    #: their sections (`harness.report.paired_render`), placed after the failures
    paired: list = field(default_factory=list)
    paired_sections: list = field(default_factory=list)
    #: the paired jobs' rows (their machine, when no standalone row says it)
    paired_rows: Optional[pd.DataFrame] = None
    generated_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def config_names(rows: pd.DataFrame) -> dict[str, str]:
    """Each configuration's readable name: scenario, env, workers, budget and the parameters that vary."""
    vary = varying_params(rows)
    out = {}
    for config, r0 in rows.drop_duplicates("config").set_index("config").iterrows():
        env = "" if r0["env_id"] in ("-", "") else f" {r0['env_id']}"
        w = int(r0["workers"]) if np.isfinite(r0["workers"]) else "-"
        extra = describe(r0["params_dict"], [k for k in vary.get(r0["scenario"], []) if k != "env_id"], 60)
        out[config] = f"{r0['scenario']}{env} w={w} {r0['budget']}{(' ' + extra) if extra else ''}".strip()
    return out


def _name(rep: "Report", config: str) -> str:
    if rep.names is None:
        rep.names = config_names(rep.results.rows)
    return rep.names.get(config, config)


def warnings(rep: Report) -> list[str]:
    """What a reader must know before trusting the numbers, and what is missing."""
    rows, a = rep.results.rows, rep.analysis
    out = list(rep.results.problems)
    if not rep.results.files:
        out.append(f"no results.csv found under {', '.join(rep.sources)}")
        return out
    if not len(rows):
        out.append(f"no standalone job: the headline and the paper's table are empty; the verdicts come from the "
                   f"{len(rep.paired)} paired job(s)" if rep.paired else "the result files hold no rows")
        return out
    for _, m in a.mixed.iterrows():
        out.append(f"mixed environment in one comparison: {_name(rep, m['config'])}: {m['mixed']}")
    if rows["machine"].nunique() > 1 and not len(a.mixed):
        out.append(f"rows come from {rows['machine'].nunique()} machines (never within one comparison)")
    ok = rows[rows["status"] == "ok"]
    odd = rows[~rows["status"].isin(["ok", "error", "timeout", "skipped"])]
    if len(odd):
        out.append(f"{len(odd)} row(s) with an unknown status (a damaged or foreign file?) left out: "
                   + ", ".join(sorted(set(odd["source"]))[:5]))
    if not len(ok):
        out.append("no row has status ok: there are no measurements, only failures (listed below)")
    bad = a.validity[~a.validity["valid"].astype(bool)]
    if len(bad):
        out.append(f"{len(bad)} configuration(s) invalid: their backends' checksums differ; no speedup computed")
    if len(a.failures):
        out.append(f"{len(a.failures)} row(s) with status error or timeout (listed under Failures)")
    for config, workers, cap in implausible_ceilings(a.summary):
        out.append(f"{_name(rep, config)}: the measured ceiling is {cap:.2f}x serial with {workers:g} worker(s), "
                   "more than k processes can give: the machine's speed drifted between the serial and capacity "
                   "jobs, so this configuration's efficiency is understated (compare ratios within one job)")
    unstable = a.summary[a.summary["unstable"].astype(bool) & (a.summary["n_ok"] > 0)]
    if len(unstable):
        out.append(f"{len(unstable)} of {int((a.summary['n_ok'] > 0).sum())} results are unstable "
                   "(CV over 10%, fewer than 3 repetitions, or a repetition under 1 ms)")
    if len(ok) and not len(a.speedups):
        out.append("no configuration has two backends with ok rows: no speedups to compute")
    labels = set(ok["label"])
    for num_, den in HEADLINE_PAIRS:
        missing = [lab for lab in (num_, den) if lab not in labels]
        if missing:
            out.append(f"headline {num_} / {den} unavailable: no ok rows for {', '.join(missing)}")
    if len(ok) and not len(rep.results.latencies):
        out.append("no per-round latencies (latencies.csv, or an archive's summary of them): latency "
                   "distributions are not drawn")
    dirty = [bool((m or {}).get("git_dirty")) for m in rows["meta"]]
    if any(dirty):
        out.append(f"{sum(dirty)} row(s) measured on a tree with uncommitted changes (git_dirty): their commit "
                   "does not say which code ran")
    reused = rows[rows["reused"].astype(bool)] if "reused" in rows else rows.iloc[:0]
    if len(reused):
        folders = sorted({Path(s).parent.name for s in reused["source"]})
        out.append(f"{len(reused)} row(s) of {len(folders)} job(s) reused from an earlier run of the same config and "
                   f"code (resume): {', '.join(folders[:20])}{' ...' if len(folders) > 20 else ''}")
    if rep.superseded_runs:
        out.append(f"{rep.superseded_runs} older run(s) of an already measured configuration and backend set aside "
                   "(the latest run is used; --all-runs pools them)")
    return out


def headline_table(rep: Report, compact: bool = False) -> Table:
    """Per configuration: serial, the best alternative (named), paper-layout Ray and the reactor; the
    reactor's ratio to each with its 95% interval; its efficiency against the ceiling; the verdict."""
    out, classes = [], []
    for h in sorted(rep.analysis.headlines or [], key=lambda h: _name(rep, h.config)):
        med = h.medians
        best = (f"{h.best_alternative}: {num(med[h.best_alternative])}" if h.best_alternative else "-")
        eff = (f"{h.efficiency:.0%} of {h.ceiling_source} ceiling ({num(h.capacity)}x serial)"
               if np.isfinite(h.efficiency) else "-")
        if np.isfinite(h.sync_efficiency):
            eff += f"; {h.sync_efficiency:.0%} of synchronized ({num(h.sync_capacity)}x)"
        cells = [_name(rep, h.config), h.unit, num(med.get(SERIAL)), best, num(med.get(PAPER_RAY)),
                 num(med.get(REACTOR)), fmt_ratio(h.vs_serial), fmt_ratio(h.vs_best), fmt_ratio(h.vs_paper_ray), eff]
        if not compact:
            cells.append(h.verdict)
        out.append(cells)
        classes.append("")
    # invalid configurations are listed too, without ratios: their backends did not do the same work
    bad = rep.analysis.validity[~rep.analysis.validity["valid"].astype(bool)]
    summ = rep.analysis.summary.set_index(["config", "label"])
    for c in sorted(bad["config"], key=lambda c: _name(rep, c)):
        if (c, SERIAL) not in summ.index and (c, REACTOR) not in summ.index:
            continue
        get = lambda lab: num(summ.loc[(c, lab), "median"]) if (c, lab) in summ.index else "-"  # noqa: E731
        cells = [_name(rep, c), "", get(SERIAL), "-", get(PAPER_RAY), get(REACTOR)] + \
            ["no speedup: checksums differ"] * 3 + ["-"] + ([] if compact else ["no verdict: checksums differ"])
        out.append(cells)
        classes.append("invalid")
    head = ["configuration", "unit/s", "serial", "best alternative", f"{PAPER_RAY} (paper layout)", REACTOR,
            "reactor / serial", "reactor / best alternative", f"reactor / {PAPER_RAY}", "reactor efficiency"]
    return Table(head + ([] if compact else ["verdict"]), out, classes)


def verdict_lines(rep: Report) -> list[str]:
    """One line per configuration: the verdict in words (rule: docs/report.md); then one per paired job: each
    reactor executor against serial on the same interpreter (`harness.report.paired.verdict_lines`)."""
    return [f"{_name(rep, h.config)}: {h.verdict}"
            for h in sorted(rep.analysis.headlines or [], key=lambda h: _name(rep, h.config))] + \
        paired_verdict_lines(rep.paired or [])


def reference_lines(rep: Report) -> list[str]:
    """One line per labelled reference (e.g. RLlib's sampler): what it is, its median and, for context, its
    ratio to serial and to the reactor. Kept out of every verdict: it did not do the same work."""
    out = []
    for r in sorted(rep.analysis.references or [], key=lambda r: (_name(rep, r.config), r.label)):
        ratios = [f"{fmt_ratio(sp)} of {lab}" for lab, sp in ((SERIAL, r.vs_serial), (REACTOR, r.vs_reactor)) if sp]
        out.append(f"{_name(rep, r.config)}: {r.label} ({r.reference}): {num(r.median)} {r.unit}/s"
                   + (f", {', '.join(ratios)}" if ratios else "") + "; not in the verdict")
    return out


def geomean_table(rep: Report) -> Table:
    g = rep.analysis.geomeans
    return Table(["pair", "scenario", "geometric mean", "configurations", "significant"],
                 [[r["pair"], r["scenario"], f"{num(r['geomean'])}x", str(r["configurations"]), str(r["significant"])]
                  for _, r in g.iterrows()])


def paper_table(rep: Report) -> Table:
    """The paper's claims beside ours; the last column lists, from the rows' resolved configs, every way they
    differ from the authors' code (`harness.report.authors`), numbered."""
    return Table(["scenario", "claim", "paper", "paper settings", "measured here (paper layout)",
                  "against Ray at its best", "how measured", "this machine", "differences from the authors' code"],
                 [[r["scenario"], r["claim"], r["paper"], r["paper_settings"], r["measured"], r.get("best_ray", "-"),
                   r["how"], r["this_machine"], " ".join(f"({i}) {d}" for i, d in enumerate(r["differences"], 1)) or "-"]
                  for _, r in rep.paper.iterrows()])


def scenario_tables(rep: Report) -> list[tuple[str, Table]]:
    """One table per scenario: every (configuration, backend) with its statistics; invalid rows in red."""
    s, rows = rep.analysis.summary, rep.results.rows
    refs = {(r.config, r.label): r.reference for r in rep.analysis.references or []}
    out = []
    for scen, g in s.groupby("scenario", sort=True):
        has_overhead = np.isfinite(g["overhead_ms"].astype(float)).any()
        header = ["configuration", "backend", "ok/err/timeout", "median", "95% interval", "unit/s", "CV",
                  "stability", "efficiency (ceiling)", "p50 ms", "p99 ms", "startup s", "peak RSS MB", "peak shm MB"] + (
                      ["overhead ms/round"] if has_overhead else [])
        cells, classes = [], []
        g = g.assign(_c=[_name(rep, c) for c in g["config"]]).sort_values(["_c", "workers", "label"])
        for _, r in g.iterrows():
            row = [r["_c"], r["label"], f"{r['n_ok']}/{r['n_error']}/{r['n_timeout']}", num(r["median"]),
                   interval(r["ci_low"], r["ci_high"]), r["unit"] or "-",
                   f"{r['cv']:.1%}" if np.isfinite(r["cv"]) else "-",
                   ("unstable: " + r["unstable_reasons"]) if r["unstable"] else "stable",
                   (f"{r['efficiency']:.0%} ({r['ceiling_source']})" if np.isfinite(r["efficiency"]) else "-")
                   + ("" if r.get("equal_work", True) else f"; NOT THE SAME WORK ({refs.get((r['config'], r['label']), 'checksum differs')}; no verdict)"),
                   num(r["latency_p50_ms"]), num(r["latency_p99_ms"]), num(r["startup_s"]),
                   num(r["peak_rss_mb"]), num(r["peak_shm_mb"])]
            if has_overhead:
                row.append(num(r["overhead_ms"]))
            cells.append(row)
            classes.append("invalid" if r["valid"] is False or r["valid"] == False else ("unstable" if r["unstable"] else ""))  # noqa: E712
        out.append((scen, Table(header, cells, classes)))
    return out


def speedup_table(rep: Report) -> Table:
    sp, rows = rep.analysis.speedups, rep.results.rows
    return Table(["configuration", "backend", "over", "speedup [95% interval], significance"],
                 [[_name(rep, r["config"]), r["numerator"], r["denominator"], ratio_text(r)]
                  for _, r in sp.sort_values(["scenario", "config", "numerator", "denominator"]).iterrows()])


def invalid_table(rep: Report) -> Table:
    bad = rep.analysis.validity[~rep.analysis.validity["valid"].astype(bool)]
    return Table(["configuration", "checksums that differ"],
                 [[_name(rep, r["config"]), r["detail"]] for _, r in bad.iterrows()],
                 ["invalid"] * len(bad))


def failure_table(rep: Report) -> Table:
    f = rep.analysis.failures
    return Table(["scenario", "backend", "workers", "configuration", "status", "message", "file"],
                 [[r["scenario"], r["label"], num(r["workers"]), _name(rep, r["config"]),
                   r["status"], (r["error"] or "(no message)")[:500], r["source"]] for _, r in f.iterrows()],
                 ["failed"] * len(f))


def environment_table(rep: Report) -> Table:
    """Hardware and software per distinct machine + software stack among the rows."""
    rows = rep.results.rows
    if not len(rows):
        return Table([], [])
    out = []
    for (machine, software), g in rows.groupby(["machine", "software"], sort=True):
        meta = g["meta"].iloc[0]
        versions = meta.get("versions", {}) or {}
        out.append([str(meta.get("hostname", "?")), str(meta.get("cpu_model", "?")), str(meta.get("cpu_count", "?")),
                    str(meta.get("ram_gb", "?")), str(meta.get("os", "?")), str(meta.get("python", "?")),
                    ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v and v != "-"),
                    f"{str(meta.get('git_sha', '?'))[:10]}{' (dirty)' if meta.get('git_dirty') else ''}",
                    ", ".join(str(int(t)) for t in sorted(set(g["threads_per_worker"].dropna()))) or "-",
                    ", ".join(sorted(set(g["scenario"]))), str(len(g))])
    return Table(["host", "cpu", "cores", "RAM GB", "os", "python", "packages", "git", "threads/worker", "scenarios",
                  "rows"], out)


def machine_line(rows: pd.DataFrame) -> str:
    """``host (cpu, N cores, R GB RAM, os)`` for each machine among the rows."""
    seen = []
    for meta in rows.drop_duplicates("machine")["meta"]:
        seen.append(f"{meta.get('hostname', '?')} ({meta.get('cpu_model', '?')}, {meta.get('cpu_count', '?')} cores, "
                    f"{meta.get('ram_gb', '?')} GB RAM, {meta.get('os', '?')})")
    return "; ".join(seen) or "unknown machine"


def _counts(rep: Report) -> str:
    rows = rep.results.rows
    st = rows["status"].value_counts().to_dict() if len(rows) else {}
    jobs = rows["job"].nunique() if len(rows) else 0
    paired = (f"; and {len(rep.paired)} paired job(s) of {sum(j.cycles for j in rep.paired)} cycles"
              if rep.paired else "")
    return (f"{len(rep.results.files)} result file(s), {jobs} job(s), {len(rows)} row(s): "
            + ", ".join(f"{st.get(k, 0)} {k}" for k in ("ok", "error", "timeout")) + paired)


def _machine(rep: Report) -> str:
    """The machine line, from the standalone rows or, without them, the paired jobs' rows."""
    rows = rep.results.rows
    if not len(rows) and rep.paired_rows is not None and len(rep.paired_rows):
        rows = rep.paired_rows
    return machine_line(rows)


# ------------------------------------------------------------------------------------------ documents

@dataclass
class Section:
    """One part of the report. ``content``: a `Table`, a list of lines (bullets) or a list of `Plot`.

    ``detail``: per-configuration detail (hundreds of rows): collapsed in report.html and, in report.md, one
    line pointing to summary.csv and report.html. ``md_rows``: at most this many table rows in report.md.
    A new part of the report (a module's own statistics) is one more `Section` in `sections`.
    """

    title: str
    intro: str
    content: Any
    detail: bool = False
    md_rows: Optional[int] = None


#: rows of a long table shown in report.md (the rest: report.html and summary.csv)
MD_ROWS = 30


def sections(rep: Report) -> list[Section]:
    """The report in reading order: verdicts and the opening figure, the headline table and the paper, then
    what went wrong, then the per-configuration detail and the other figures."""
    overview = [p for p in rep.plots if p.name == "relative_to_serial"]
    out = [
        Section("Verdicts", "Fastest only when the 95% interval of its lead over the runner-up excludes 1; the "
                "reactor's standing by the same rule (docs/report.md)."
                + (" Paired jobs (marked paired): each reactor executor against serial on the same interpreter, "
                   "the median of per-cycle ratios over the job's cycles (per regime where the host shifted), "
                   "faster or slower only when the interval excludes 1." if rep.paired else ""),
                verdict_lines(rep)),
        *([Section("References (not the same work)", "Backends that label themselves a reference: they did "
                   "other work than the scenario's (RLlib's sampler computes its own actions), so they stand beside "
                   "the verdicts and never in them (docs/report.md, \"References\").", reference_lines(rep))]
          if rep.analysis.references else []),
        Section("Every backend against serial", "", overview),
        Section("Headline", "One row per configuration: medians in unit/s; the best alternative is the fastest "
                "backend that is neither serial, nor a reactor executor, nor the ceiling; ratios are ratios of "
                "medians with a 95% bootstrap interval (scipy.stats.bootstrap, percentile); efficiency = reactor "
                "throughput / the ceiling (measured: `capacity` rows; assumed: serial x min(workers, cores)), and "
                "where measured against the synchronized ceiling (`capacity_lockstep` rows: the copies meet once "
                "per round). Columns: docs/report.md.", headline_table(rep)),
        Section("The paper side by side", f"{PAPER_CITATION}. Measured: reactor:processes / ray:actors (the "
                "paper's layout), and beside it reactor:processes / the fastest Ray layout measured.",
                paper_table(rep)),
        Section("Geometric means", "Per scenario over its configurations, then across scenarios.",
                geomean_table(rep)),
        Section("Invalid configurations", "Backends produced different checksums at the same repetition index: "
                "they did not do the same work, so no speedup is computed.", invalid_table(rep), md_rows=MD_ROWS),
        Section("Failures", "Rows with status error or timeout, with their messages.", failure_table(rep),
                md_rows=MD_ROWS),
    ]
    out += rep.paired_sections
    for scen, t in scenario_tables(rep):
        out.append(Section(f"Scenario {scen}", "One row per configuration and backend. Red rows: invalid "
                           "(checksums differ between backends).", t, detail=True))
    out += [
        Section("All speedups", "Every backend over every other, within each valid configuration.",
                speedup_table(rep), detail=True),
        Section("Hardware and software", "From the rows' metadata.", environment_table(rep)),
        Section("Figures", "", [p for p in rep.plots if p.name != "relative_to_serial"
                                and not p.name.startswith("paired_")]),
    ]
    return out


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f3f3f3}tr.invalid td{background:#fdd;color:#a00}
tr.failed td{background:#fff3f0}tr.unstable td:nth-child(8){color:#a60}.warn{background:#fff8e1;border:1px solid
#e0c060;padding:.5em 1em}figure{margin:1em 0}img{max-width:100%}figcaption{font-size:13px;color:#555}
summary{cursor:pointer;font-weight:600}"""


def _html_figure(p: Plot, figure_dir: Optional[str]) -> str:
    src = f"{figure_dir}/{p.name}.png" if figure_dir else f"data:image/png;base64,{p.png_base64()}"
    return (f"<figure><img alt='{html.escape(p.title)}' src='{html.escape(src)}'>"
            f"<figcaption><strong>{html.escape(p.title)}.</strong> {html.escape(p.caption)}</figcaption></figure>")


def to_html(rep: Report, figure_dir: Optional[str] = None) -> str:
    """The HTML page. Without ``figure_dir`` it is self-contained (figures embedded as base64 PNG); with it,
    figures are linked (``<figure_dir>/<name>.png``, relative to the page), which keeps archived reports small.
    Per-configuration detail is collapsed (``<details>``)."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>reactorbench report</title>"
             f"<style>{CSS}</style></head><body><h1>reactorbench report</h1>",
             f"<p>Generated {html.escape(rep.generated_at)} from {html.escape(', '.join(rep.sources))}: "
             f"{html.escape(_counts(rep))}.<br>Machine: {html.escape(_machine(rep))}.<br>"
             "How to read it: docs/report.md.</p>"]
    warns = warnings(rep)
    for sec in sections(rep):
        if sec.title == "Headline" and warns:  # after the verdicts and the picture, before the numbers
            parts.append("<div class='warn'><strong>Warnings and missing data</strong><ul>"
                         + "".join(f"<li>{html.escape(w)}</li>" for w in warns) + "</ul></div>")
        body = []
        if sec.intro:
            body.append(f"<p>{html.escape(sec.intro)}</p>")
        if isinstance(sec.content, Table):
            body.append(sec.content.html())
        elif sec.content and isinstance(sec.content[0], str):
            body.append("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in sec.content) + "</ul>")
        elif isinstance(sec.content, list):
            if rep.figure_notes and sec.title == "Figures":
                body.append("<p>Not drawn:</p><ul>" + "".join(f"<li>{html.escape(n)}</li>"
                                                              for n in rep.figure_notes) + "</ul>")
            body += [_html_figure(p, figure_dir) for p in sec.content]
            if not sec.content and sec.title != "Figures":
                body.append("<p><em>(none)</em></p>")
        if sec.detail:
            n = len(sec.content.rows) if isinstance(sec.content, Table) else len(sec.content)
            parts.append(f"<details><summary>{html.escape(sec.title)} ({n} rows)</summary>{''.join(body)}"
                         "</details>")
        else:
            parts.append(f"<h2>{html.escape(sec.title)}</h2>" + "".join(body))
    parts.append("</body></html>")
    return "\n".join(parts)


def to_markdown(rep: Report, figure_dir: str = "figures") -> str:
    """The Markdown page a person reads: verdicts, the opening figure, the headline and the paper; long
    tables are cut to `MD_ROWS` rows and per-configuration detail is left to summary.csv and report.html."""
    lines = ["# reactorbench report", "",
             f"Generated {rep.generated_at} from {', '.join(rep.sources)}: {_counts(rep)}.", "",
             f"Machine: {_machine(rep)}. How to read it: docs/report.md.", ""]
    warns = warnings(rep)
    detail: list[str] = []
    for sec in sections(rep):
        if sec.title == "Headline" and warns:  # after the verdicts and the picture, before the numbers
            lines += ["**Warnings and missing data**", ""] + [f"- {w}" for w in warns] + [""]
        if sec.detail:
            n = len(sec.content.rows) if isinstance(sec.content, Table) else len(sec.content)
            detail.append(f"- {sec.title}: {n} rows")
            continue
        lines += [f"## {sec.title}", ""]
        if sec.intro:
            lines += [sec.intro, ""]
        if isinstance(sec.content, Table):
            t = sec.content
            if sec.md_rows is not None and len(t.rows) > sec.md_rows:
                shown = Table(t.header, t.rows[:sec.md_rows], t.classes[:sec.md_rows])
                lines += [shown.markdown(), f"_... and {len(t.rows) - sec.md_rows} more rows in report.html._", ""]
            else:
                lines.append(t.markdown())
        elif sec.content and isinstance(sec.content[0], str):
            lines += [f"- {x}" for x in sec.content] + [""]
        elif isinstance(sec.content, list):
            if rep.figure_notes and sec.title == "Figures":
                lines += ["Not drawn:", ""] + [f"- {n}" for n in rep.figure_notes] + [""]
            for p in sec.content:
                lines += [f"![{p.title}]({figure_dir}/{p.name}.png)", "", f"*{p.title}.* {p.caption}", ""]
            if not sec.content and sec.title != "Figures":
                lines += ["_(none)_", ""]
    if detail:
        lines += ["## Per-configuration detail", "",
                  "One row per configuration and backend, with its speedups over the headline backends, in "
                  "`summary.csv`; every table below in full in `report.html` (collapsed):", ""] + detail + [""]
    return "\n".join(lines)


def summary_csv(rep: Report) -> pd.DataFrame:
    """summary.csv: one row per configuration and backend, plus its speedups over the headline denominators."""
    s = rep.analysis.summary.copy()
    sp = rep.analysis.speedups
    for a_, b_ in HEADLINE_PAIRS:
        col = f"speedup_over_{b_.replace(':', '_')}"
        sel = sp[(sp["denominator"] == b_)].set_index(["config", "numerator"]) if len(sp) else None
        vals, sig = [], []
        for _, r in s.iterrows():
            key = (r["config"], r["label"])
            if sel is not None and key in sel.index:
                vals.append(sel.loc[key, "ratio"]); sig.append(bool(sel.loc[key, "significant"]))
            else:
                vals.append(math.nan); sig.append(None)
        s[col] = vals
        s[col + "_significant"] = sig
    return s


def readme_section(rep: Report) -> str:
    """The README's results block (between the markers): machine, dates, the headline table, the caveats."""
    rows = rep.results.rows
    started = sorted(d for d in (str(m.get("started_at", ""))[:10] for m in rows["meta"]) if d) if len(rows) else []
    when = (started[0] if started[0] == started[-1] else f"{started[0]} to {started[-1]}") if started else "unknown date"
    lines = [README_START,
             "<!-- generated by `make results-readme` (python -m harness.report DIR --readme README.md); "
             "do not edit by hand -->", "",
             f"Measured on {machine_line(rows)}, {when}: {_counts(rep)}. Throughput medians in unit/s; each "
             "ratio is a ratio of medians with its 95% bootstrap interval; the best alternative is the fastest "
             "backend that is neither serial nor the reactor; efficiency is against the ceiling, measured "
             "(`capacity` rows: k uncoordinated serial copies) or, without them, assumed (serial x min(workers, "
             "cores)), as the column says. A backend is called faster or slower only when the interval excludes 1. "
             "Definitions: docs/report.md.", ""]
    t = headline_table(rep, compact=True)
    lines.append(t.markdown() if t.rows else "_No configuration with serial or reactor:processes rows._\n")
    verdicts = verdict_lines(rep)
    if verdicts:
        lines += ["Verdicts:", ""] + [f"- {v}" for v in verdicts] + [""]
    refs = reference_lines(rep)
    if refs:
        lines += ["References (not the same work, outside the verdicts):", ""] + [f"- {v}" for v in refs] + [""]
    warns = warnings(rep)
    if warns:
        lines += ["Caveats:", ""] + [f"- {w}" for w in warns[:6]]
        if len(warns) > 6:
            lines.append(f"- and {len(warns) - 6} more in the full report (`make report`)")
    lines += ["", README_END]
    return "\n".join(lines)


def update_readme(path: Path, section: str) -> None:
    """Replace the text between the results markers in ``path``; refuse if the markers are missing."""
    text = path.read_text()
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < 0 or end < start:
        raise ValueError(f"{path} lacks the markers {README_START} ... {README_END}")
    path.write_text(text[:start] + section + text[end + len(README_END):])
