"""The report's content as tables and lines (strings, via `harness.report.fmt`): the headline, the verdicts,
every backend against serial (standalone and paired), the warnings, the per-configuration detail, summary.csv.
Which of them the report shows, and in what order, is `harness.report.compose`; how they are written is
`harness.report.documents`."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from harness.labels import BackendLabel
from harness.report.jobline import outlying_rows
from harness.report.fmt import Table, interval, num, percent, ratio, ratio_text
from harness.report.model import (NO_STANDALONE, Report, backend_name, is_rl, machine_line, name_of,
                                  natural_key, scenario_order)
from harness.report.paired import ratio_frame
from harness.report.paired import verdict_lines as paired_verdict_lines
from harness.report.stats import CEILING, CEILINGS, HEADLINE_PAIRS, SERIAL, SYNC_CEILING, implausible_ceilings
from harness.report.intervals import verdict as rule, word_phrase
from harness.report.stats import Speedup
from harness.report.verdict import PAPER_RAY, REACTOR, fmt_ratio, standalone_word

_name = name_of


def warnings(rep: Report) -> list[str]:
    """What a reader must know before trusting the numbers, and what is missing."""
    rows, a = rep.results.rows, rep.analysis
    out = list(rep.results.problems)
    if not rep.results.files:
        out.append(f"no results.csv found under {', '.join(rep.sources)}")
        return out
    if not len(rows):
        if not rep.paired:
            out.append("the result files hold no rows")
        return out + ceiling_warnings(rep) + preset_warnings(rep)
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
    far = outlying_rows(ok)
    if far:
        out.append(f"{len(far)} repetition(s) far off the others of their job (over 25% and 3 MADs from the others' "
                   "median: a cold start or other load?): " + "; ".join(
                       f"{_name(rep, c)} {lab} repetition {r} at {rel:.2f}x" for c, lab, r, rel in far[:8])
                   + (" ..." if len(far) > 8 else ""))
    if len(ok) and not len(a.speedups):
        scen = ", ".join(sorted(set(ok["scenario"])))
        out.append(f"the standalone jobs ({scen}) have one backend per configuration: no standalone comparison"
                   + ("; the comparisons are the paired jobs'" if rep.paired else ""))
    labels = set(ok["label"])
    any_ray = any(BackendLabel.parse(lab).name == "ray" for lab in labels)
    for num_, den in HEADLINE_PAIRS:
        missing = [lab for lab in (num_, den) if lab not in labels]
        if missing and (any_ray or not rep.paired):  # a run of paired jobs measures no Ray: nothing is missing
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
    out += ceiling_warnings(rep)
    out += preset_warnings(rep)
    if rep.superseded_runs:
        out.append(f"{rep.superseded_runs} older run(s) of an already measured configuration and backend set aside "
                   "(the latest run is used; --all-runs pools them)")
    return out


def preset_warnings(rep: Report) -> list[str]:
    """Where the run did not store the preset names its backends were run with (rows from before they were
    stored: `harness.labels.PresetNames.fallback`): those backends are named by today's ``conf/backend``, which
    may not be what the run was run with; or, where no preset of today gives them, by ``backend:variant``."""
    fallback = rep.presets.fallback
    if not fallback:
        return []
    # (backend and variant apart: a label here would be rewritten into the very name it explains)
    named = [f"{rep.presets.get(name, variant)} (backend {name}, variant {variant})" for name, variant in fallback
             if rep.presets.get(name, variant) is not None]
    unnamed = [f"backend {name}, variant {variant}" for name, variant in fallback
               if rep.presets.get(name, variant) is None]
    out = []
    if named:
        out.append(f"the run stored no preset names for {len(named)} backend(s) (rows written before runs stored "
                   "them): named by today's conf/backend, which may differ from the presets the run was run with: "
                   + ", ".join(named))
    if unnamed:
        out.append(f"the run stored no preset names for {'; '.join(unnamed)} and no preset of today's conf/backend "
                   "gives them: shown as backend:variant")
    return out


def ceiling_warnings(rep: Report) -> list[str]:
    """One warning per answer line whose shares of the ceilings cannot be read as shares of a bound
    (`harness.report.answer.ceiling_flags`): the same flags the answer shows beside the numbers, with why where the
    rows' CPU columns show it (`harness.report.predict.over_ceiling_cause`), else the host's speed."""
    from harness.report.answer import CEILINGS_INVERTED, answers, ceiling_flags, over_ceilings
    from harness.report.predict import over_ceiling_cause

    host = ("the ceiling and the reactor ran at different machine speeds (standalone jobs one after the other, or a "
            "host that changed within the job); read the share as a reading of the host, not of the code")
    out = []
    for ans in answers(rep, rl=None):
        if not any(ceiling_flags(part) for part in ans.parts):
            continue
        source = rep.paired_rows if ans.source == "paired" and rep.paired_rows is not None else rep.results.rows
        rows = source[source["config"] == ans.config] if len(source) else source
        causes = {lockstep: over_ceiling_cause(rows, lockstep) if len(rows) else "" for lockstep in (True, False)}
        for part in ans.parts:
            span = f" ({part.span})" if part.span else ""
            said = [(text, causes[lockstep]) for text, lockstep in over_ceilings(part)]
            said += [(CEILINGS_INVERTED, "")] if CEILINGS_INVERTED in ceiling_flags(part) else []
            out += [f"{ans.workload}{span}: the reactor at {text}: {cause or host}" for text, cause in said]
    return out


def _key(rep: Report, config: str, scenario: str) -> tuple:
    return (scenario_order(scenario), natural_key(_name(rep, config)))


def _wanted(scenario: object, rl: bool | None) -> bool:
    return rl is None or is_rl(scenario) == rl


def headline_header(rep: Report) -> list[str]:
    ray, reactor = backend_name(PAPER_RAY, rep.presets), backend_name(REACTOR, rep.presets)
    return ["configuration", "unit/s", "serial", "best alternative", f"{ray} (paper layout)", reactor,
            f"{reactor} / serial", f"{reactor} / best alternative", f"{reactor} / {ray}", f"{reactor} efficiency"]


def headline_table(rep: Report, compact: bool = False, rl: bool | None = None) -> Table:
    """Per configuration: serial, the best alternative (named), paper-layout Ray and the reactor; the
    reactor's ratio to each with its 95% interval; its efficiency against the ceiling; the verdict. Paired
    jobs add their rows (marked paired, one per regime where the host shifted): medians of their blocks,
    ratios and efficiencies as medians of per-cycle ratios. ``rl``: RL workloads only (True), microbenchmarks
    only (False) or both (None)."""
    from harness.report.answer import CEILINGS_INVERTED, ceilings_inverted, share_flag

    out: list[tuple[tuple[int, str], list[str], str]] = []
    for h in rep.analysis.headlines or []:
        if not _wanted(h.scenario, rl):
            continue
        med = h.medians
        best = (f"{h.best_alternative}: {num(med[h.best_alternative])}" if h.best_alternative else "-")
        eff = (f"{h.efficiency:.0%} of {h.ceiling_source} ceiling ({num(h.capacity)}x serial)"
               + (f" ({share_flag(h.efficiency)})" if share_flag(h.efficiency) else "")
               if np.isfinite(h.efficiency) else "-")
        if np.isfinite(h.sync_efficiency):
            eff += f"; {h.sync_efficiency:.0%} of synchronized ({num(h.sync_capacity)}x)"
            eff += f" ({share_flag(h.sync_efficiency)})" if share_flag(h.sync_efficiency) else ""
            if h.ceiling_source == "measured" and ceilings_inverted(h.efficiency, h.sync_efficiency):
                eff += f" ({CEILINGS_INVERTED})"
        cells = [_name(rep, h.config), h.unit, num(med.get(SERIAL)), best, num(med.get(PAPER_RAY)),
                 num(med.get(REACTOR)), fmt_ratio(h.vs_serial), fmt_ratio(h.vs_best), fmt_ratio(h.vs_paper_ray), eff]
        if not compact:
            cells.append(h.verdict)
        out.append((_key(rep, h.config, h.scenario), cells, ""))
    for cells, scenario, config in paired_headline_rows(rep, compact):
        if _wanted(scenario, rl):
            out.append((_key(rep, config, scenario), cells, "paired"))
    # invalid configurations are listed too, without ratios: their backends did not do the same work
    bad = rep.analysis.validity[~rep.analysis.validity["valid"].astype(bool)]
    summ = rep.analysis.summary.set_index(["config", "label"])
    scen = rep.analysis.summary.drop_duplicates("config").set_index("config")["scenario"] if len(summ) else {}
    for c in bad["config"]:
        if (c, SERIAL) not in summ.index and (c, REACTOR) not in summ.index or not _wanted(scen.get(c), rl):
            continue
        get = lambda lab: num(summ.loc[(c, lab), "median"]) if (c, lab) in summ.index else "-"  # noqa: E731
        cells = [_name(rep, c), "", get(SERIAL), "-", get(PAPER_RAY), get(REACTOR)] + \
            ["no speedup: checksums differ"] * 3 + ["-"] + ([] if compact else ["no verdict: checksums differ"])
        out.append((_key(rep, c, str(scen.get(c))), cells, "invalid"))
    out.sort(key=lambda t: t[0])
    empty = ("no configuration with serial or reactor rows" if rl is not False
             else "no microbenchmark with serial or reactor rows")
    return Table(headline_header(rep) + ([] if compact else ["verdict"]), [c for _, c, _ in out],
                 [k for _, _, k in out], empty=empty)


def _paired_reading(frame: pd.DataFrame, a: str, b: str) -> str:
    """a over b from a job's paired readings, whichever way round the job holds the pair."""
    from harness.report.answer import _reading

    r = _reading(frame, a, b)
    return "-" if r is None else ratio(r.median, r.low, r.high)


def paired_headline_rows(rep: Report, compact: bool = False) -> list[tuple[list[str], str, str]]:
    """The headline's rows from paired jobs: (cells, scenario, config), one per job and regime."""
    from harness.report.answer import (CEILINGS_INVERTED, ceiling_flags, paired_best_alternative,  # (answer imports
                                       paired_parts, share_flag)  # this module's neighbours)

    out = []
    frame = ratio_frame(rep.paired or [])
    if not len(frame):
        return out
    for job in rep.paired or []:
        jf = frame[frame["job"] == job.job]
        parts = paired_parts(job)
        unit = ""
        if rep.paired_rows is not None and len(rep.paired_rows):
            sel = rep.paired_rows[rep.paired_rows["job"] == job.job]
            unit = str(sel["unit"].iloc[0]) if len(sel) else ""
        for (lo_i, hi_i), (regime, g), part in zip(job.regimes, jf.groupby("regime", sort=False), parts):
            t = job.table.iloc[lo_i:hi_i]
            med = {lab: float(t[lab].median()) for lab in t}
            best = paired_best_alternative(med)
            effs = g[g["kind"] == "efficiency"]
            shares = []
            for ceiling, what in ((CEILING, "measured ceiling"), (SYNC_CEILING, "synchronized")):
                sel = effs[(effs["numerator"] == REACTOR) & (effs["denominator"] == ceiling)]
                if len(sel):
                    e = sel.iloc[0]
                    flag = share_flag(float(e["median"]))
                    shares.append(f"{percent(e['median'])} [{percent(e['ci_low'])}, {percent(e['ci_high'])}] of {what}"
                                  + (f" ({flag})" if flag else ""))
            if part is not None and CEILINGS_INVERTED in ceiling_flags(part):
                shares.append(f"({CEILINGS_INVERTED})")
            span = "" if regime == "all" else f", {regime}"
            cells = [f"{_name(rep, job.config)} (paired, {job.cycles} cycles{span})", unit, num(med.get(SERIAL)),
                     f"{best}: {num(med[best])}" if best else "-", num(med.get(PAPER_RAY)), num(med.get(REACTOR)),
                     _paired_reading(g, REACTOR, SERIAL),
                     _paired_reading(g, REACTOR, best) if best else "-",
                     _paired_reading(g, REACTOR, PAPER_RAY), "; ".join(shares) or "-"]
            if not compact:
                from harness.report.answer import _who
                cells.append(_who(part, rep.presets) + " (paired: medians of per-cycle ratios)")
            out.append((cells, job.scenario, job.config))
    return out


def answer_table(rep: Report, rl: bool | None = True) -> Table:
    """The answer: one row per workload configuration (`harness.report.answer`)."""
    from harness.report.answer import ANSWER_HEADER, answers

    ans = answers(rep, rl=rl)
    return Table(ANSWER_HEADER, [a.cells() for a in ans], ["paired" if a.source == "paired" else "" for a in ans],
                 empty="no RL workload measured in this run" if rl else "no microbenchmark measured in this run")


def against_serial_table(rep: Report) -> Table:
    """Every backend against serial, per configuration: ratios of medians of repetitions (standalone) and
    medians of per-cycle ratios (paired, per regime), each with its 95% interval and the rule's word."""
    rows: list[tuple[tuple, list[str], str]] = []
    sp = rep.analysis.speedups
    if len(sp):
        scen = rep.analysis.summary.drop_duplicates("config").set_index("config")["scenario"]
        for _, r in sp[sp["denominator"] == SERIAL].iterrows():
            lo, hi = r["ci_low"], r["ci_high"]
            word = "bound" if r["numerator"] in CEILINGS else word_phrase(
                standalone_word(Speedup(r["ratio"], lo, hi, math.nan, False, int(r["n_a"]), int(r["n_b"]))),
                samples="repetitions", n=int(min(r["n_a"], r["n_b"])))
            rows.append(((scenario_order(scen.get(r["config"])), _name(rep, r["config"]), 0, r["numerator"]),
                         [_name(rep, r["config"]), "standalone", r["numerator"], ratio(r["ratio"], lo, hi), word], ""))
    frame = ratio_frame(rep.paired or [])
    if len(frame):
        by_job = {j.job: j for j in rep.paired}
        for _, r in frame[frame["kind"] == "ratio"].iterrows():
            num_, den = r["numerator"], r["denominator"]
            if BackendLabel.parse(den).serial_baseline().render() != den and \
                    BackendLabel.parse(num_).serial_baseline().render() != num_:
                continue
            med, lo, hi = float(r["median"]), float(r["ci_low"]), float(r["ci_high"])
            if BackendLabel.parse(den).name != "serial":  # serial over x: read as x over serial
                num_, den, med, lo, hi = den, num_, 1 / med, 1 / hi, 1 / lo
            if BackendLabel.parse(den).serial_baseline().render() != den:
                continue
            margin = float(r.get("margin", 0.0) or 0.0)
            word = word_phrase(rule(lo, hi, margin), margin, int(r["cycles"]))
            job = by_job.get(r["job"])
            where = "paired" + ("" if r["regime"] == "all" else f", {r['regime']}")
            rows.append(((scenario_order(job.scenario if job else ""), _name(rep, r["config"]), 1, str(r["regime"]), num_),
                         [_name(rep, r["config"]), where, num_ + ("" if den == SERIAL else f" (over {den})"),
                          ratio(med, lo, hi), word], "paired"))
    rows.sort(key=lambda t: tuple(natural_key(x) for x in t[0]))
    return Table(["configuration", "measured", "backend", "over serial (95% interval)", "verdict"],
                 [c for _, c, _ in rows], [k for _, _, k in rows],
                 empty="no configuration with serial and another backend")


def verdict_lines(rep: Report, rl: bool | None = None) -> list[str]:
    """One line per configuration: the verdict in words (rule: docs/report.md); then one per paired job: each
    reactor executor against serial on the same interpreter (`harness.report.paired.verdict_lines`)."""
    heads = sorted((h for h in rep.analysis.headlines or [] if _wanted(h.scenario, rl)),
                   key=lambda h: _key(rep, h.config, h.scenario))
    jobs = [j for j in rep.paired or [] if _wanted(j.scenario, rl)]
    jobs.sort(key=lambda j: (scenario_order(j.scenario), natural_key(j.name)))
    return [f"{_name(rep, h.config)}: {h.verdict}" for h in heads] + paired_verdict_lines(jobs)


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
    """Geometric means of the headline pairs per scenario, then over the RL workloads and, apart, over the
    microbenchmarks: never one mean across both (a mean of unlike scenarios is not a verdict)."""
    g = rep.analysis.geomeans
    rows = []
    if len(g):
        per = g[g["scenario"] != "all"]
        per = per.assign(_order=per["scenario"].map(scenario_order)).sort_values(["pair", "_order", "scenario"])
        for _, r in per.iterrows():
            rows.append([r["pair"], r["scenario"], f"{num(r['geomean'])}x", str(r["configurations"]),
                         str(r["significant"])])
        for pair, pg in per.groupby("pair", sort=True):
            for group, sel in (("RL workloads", pg[pg["scenario"].map(is_rl)]),
                               ("microbenchmarks", pg[~pg["scenario"].map(is_rl)])):
                vals = sel["geomean"].astype(float)
                vals = vals[np.isfinite(vals) & (vals > 0)]
                if len(vals) > 1:
                    rows.append([pair, f"{group} ({', '.join(sel['scenario'])})",
                                 f"{num(float(np.exp(np.log(vals).mean())))}x",
                                 str(int(sel["configurations"].sum())), str(int(sel["significant"].sum()))])
    return Table(["pair", "scenario", "geometric mean", "configurations", "significant"], rows,
                 empty="no headline pair measured in a standalone job")


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
        g = g.assign(_c=[natural_key(_name(rep, c)) for c in g["config"]]).sort_values(["_c", "workers", "label"])
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


