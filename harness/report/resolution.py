"""The report's "What this machine can resolve": the self-test's summary (`harness.selftest`), read from the
``selftest.json`` files under the report's folders.

A verdict is only as good as the intervals behind it: this section says, for the machine the run was made
on, how often identical backends were called different (A/A false verdicts, promised about 5%), how wide an
A/A interval is after the self-test's job length, what identical residents differ by (the resolution floor,
used as the verdict margin) and which injected slowdowns were detected. Definitions: docs/report.md.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Optional

SELFTEST_FILE = "selftest.json"
#: detection rate an effect needs to count as resolved (`harness.selftest.DETECTION_GOAL`)
DETECTION_GOAL = 0.80


def find_summaries(paths: Iterable[Path | str]) -> list[Path]:
    """Every ``selftest.json`` under ``paths`` (files or folders), oldest first."""
    found: set[Path] = set()
    for p in map(Path, paths):
        if p.is_file() and p.name == SELFTEST_FILE:
            found.add(p)
        elif p.is_dir():
            found.update(p.rglob(SELFTEST_FILE))
    return sorted(found, key=lambda f: f.stat().st_mtime)


def _pct(r: dict[str, Any]) -> str:
    if not r or not r.get("n"):
        return "-"
    return f"{r['k']}/{r['n']} = {r['rate']:.0%} [{r['low']:.0%}, {r['high']:.0%}]"


def ran_with_text(margin: dict[str, Any]) -> str:
    """The margins a self-test's jobs ran with (its summary's ``margin.ran_with``), one range per source: a stored
    margin's set part is taken at each job's sets, so one source gives a range (``+-1.28-1.36% (selftest ...)``)."""
    out = []
    for r in margin.get("ran_with", []):
        lo, hi = r["margin"] * 100, r.get("margin_max", r["margin"]) * 100
        out.append((f"+-{lo:.3g}%" if f"{lo:.3g}" == f"{hi:.3g}" else f"+-{lo:.3g}-{hi:.3g}%") + f" ({r['source']})")
    return ", ".join(out)


def _clearance_rule(margin: dict[str, Any]) -> bool:
    """Whether a self-test's margin is the 95th percentile of the A/A clearances: such a summary records its rule
    (``rule``, `harness.margin.MARGIN_RULE`); an older one, whose margin came from |A/A median - 1|, records none."""
    return bool(margin.get("rule"))


def opening_rows(summary: dict[str, Any]) -> list[list[str]]:
    """What the machine resolves, first: the margin, the A/A false-verdict rate with its interval, and each
    injected effect's detection, named by its effect (``serial +2%``)."""
    if "margin" not in summary:  # a selftest.json of an older version: its floor, read the way it was then
        return [["floor (margin a verdict must clear)", f"{summary['floor'] * 100:.2f}%",
                 "an older self-test: `python -m harness selftest --reanalyze <folder>` reads it as this version"]] + [
            [f"+{float(e) * 100:g}% injected: detected (called slower)", _pct(d["detected"]),
             f"at least {DETECTION_GOAL:.0%} to count as resolved"] for e, d in summary.get("effects", {}).items()]
    m = summary["margin"]
    f = summary["aa_false"]
    how = ("95th percentile of how far an A/A interval lies beyond 1" if _clearance_rule(m) else
           "95th percentile of |A/A job median - 1|")  # an older self-test's rule
    if math.isfinite(m.get("set_part", math.nan)):  # since the set part: the larger of the two
        how = (f"the larger of the {how} (+-{m['clearance_part'] * 100:.2f}%) and z x the A/A offset of one set / "
               f"sqrt({m['sets_per_job']:g} sets per job) (+-{m['set_part'] * 100:.2f}%),")
    on = f" ({summary['workload']})" if summary.get("workload") else ""
    rows = [[f"margin{on}: {how} over {m['jobs']} jobs",
             f"+-{m['value'] * 100:.2f}%" if math.isfinite(m["value"]) else "-",
             f"{summary.get('stored', '')}; a paired job of this workload clears it unless compare.margin is "
             "given"],
            ["A/A false verdicts as the report gave them, at the margin the jobs ran with "
             f"({ran_with_text(summary['margin'])})",
             _pct(f["as_run"]), "at most 5%, its interval holding 5%"],
            ["A/A false verdicts at the measured margin (each job at the margin of the other jobs)",
             _pct(f["measured_margin"]), "at most 5% (out of sample)"]]
    for e, d in summary["effects"].items():
        name = d.get("name") or f"+{float(e) * 100:g}%"
        rows.append([f"{name}: detected (called slower) at the margin the jobs ran with", _pct(d["detected"]),
                     f"at least {DETECTION_GOAL:.0%} to count as resolved; at the measured margin "
                     f"{_pct(d['detected_measured_margin'])}; measured ratio {d['measured_median']:.4f} "
                     f"(expected about {d['expected']:.4f})"])
    smallest = summary.get("smallest_detected")
    rows.append([f"smallest injected effect detected in {DETECTION_GOAL:.0%} of jobs",
                 f"+{smallest * 100:g}%" if smallest else "none of those tried", ""])
    return rows


def table_rows(summary: dict[str, Any]) -> list[list[str]]:
    """The self-test's readings as (what, reading, expected) rows: `opening_rows`, then how the jobs ran and
    the contrasts (the interval alone, cycles as independent, the former bootstrap, standalone jobs)."""
    rows = opening_rows(summary)
    f = summary["aa_false"]
    if "margin" in summary:
        stop = summary.get("stopped_by", {})
        rows.append(["how the jobs stopped", f"precision {stop.get('precision', 0)}, time {stop.get('time', 0)}; "
                     f"median {summary.get('cycles_median', math.nan):.0f} cycles; "
                     f"host shift in {summary.get('host_shift_jobs', summary.get('split_jobs', 0))}, "
                     f"read per regime in {summary.get('split_jobs', 0)} (a ratio between contenders moved)",
                     "as `make bench-paired` stops its jobs" if not summary.get("not_as_shipped")
                     else "NOT as shipped: " + ", ".join(summary["not_as_shipped"])])
        off = summary["margin"]
        if _clearance_rule(off):
            rows.append(["one job's A/A median off 1 (median / 95th percentile / largest of jobs)",
                         f"{off['offset_p50'] * 100:.2f}% / {off['offset_p95'] * 100:.2f}% / "
                         f"{off['offset_max'] * 100:.2f}%",
                         f"the intervals lay beyond 1 in {off['cleared']} of {off['jobs']} jobs: the margin covers "
                         "those, not the part of each offset that a job's own interval already holds"])
        else:
            rows.append(["one job's A/A median off 1 (median / largest of jobs)",
                         f"{off['offset_p50'] * 100:.2f}% / {off['offset_max'] * 100:.2f}%",
                         "what a single job can resolve"])
    b = summary.get("aa_bias")
    if b and b.get("jobs", 0) > 1:
        rows.append(["A/A copy above 1 (jobs; mean offset; by start order: listed / reversed)",
                     f"{b['above_1']}/{b['jobs']}; {b['mean_offset'] * 100:+.2f}%; "
                     f"{b['listed']['mean_offset'] * 100:+.2f}% / {b['reversed']['mean_offset'] * 100:+.2f}%",
                     f"about half, mean near 0 (sign test p={b['sign_test_p']:.2g}: a small p is a bias all jobs "
                     "share, which no margin per job covers)"])
    so = summary.get("set_offsets") or {}
    if so.get("jobs"):
        rows.append(["A/A offset of one set of processes (spread of its cycles' median beyond their noise: the typical "
                     "job / over all jobs; sets per job)",
                     f"{so['set_sd_typical'] * 100:.2f}% / {so['set_sd'] * 100:.2f}%; {so['sets_per_job']:g} sets",
                     f"0 if sets differed only by their cycles' noise: their medians spread x{so['chi2_per_df']:.2f} "
                     f"that noise (chi2, p={so['p_value']:.2g}; {so['jobs_p05']} of {so['jobs']} jobs alone at "
                     "p < 0.05). No interval over cycles sees it; more sets per job (longer jobs) average it down"])
    rows.append(["A/A false verdicts, the interval alone (margin 0, all cycles)", _pct(f["verdict"]),
                 "about 5% (the interval's promise)"])
    rows.append(["A/A false verdicts, cycles taken as independent", _pct(f["verdict_independent"]),
                 "above the dependence-aware rate where cycles correlate"])
    rows.append(["A/A false verdicts, the former percentile bootstrap", _pct(f["verdict_bootstrap"]),
                 "what the harness would have claimed before"])
    if "standalone_false" in summary:
        rows.append(["A/A false verdicts, standalone jobs one after the other", _pct(summary["standalone_false"]),
                     "the old way: the host's drift between jobs counts as a difference"])
    hw = summary["aa_half_width_median"]
    rows.append([f"A/A interval half-width at the jobs' end (median; at most {summary['settings']['seconds']:g} s)",
                 f"+-{hw * 100:.2f}%" if math.isfinite(hw) else "-", "what one job of this length resolves"])
    return rows


def summary_lines(paths: Iterable[Path | str]) -> list[str]:
    """One line per self-test found (its machine, jobs and readings): what `make bench` prints."""
    out = []
    for f in find_summaries(paths):
        s = json.loads(f.read_text())
        out.append(s.get("line", "") + f" [{f.parent.name}, {s['jobs']} jobs]")
    return out


def selftest_run(rep: Any) -> bool:
    """Whether the report is a self-test's own (one of its folders holds a ``selftest.json``): it then opens
    with what the machine resolves, not with the answer table of A/A pairs."""
    return any((Path(p) / SELFTEST_FILE).is_file() or Path(p).name == SELFTEST_FILE
               for p in getattr(rep, "sources", []) or [])


def resolution_section(rep: Any) -> Optional[Any]:
    """The report section (None when no self-test is among the report's folders)."""
    from harness.report.fmt import Table
    from harness.report.model import Section

    found = find_summaries(getattr(rep, "sources", []) or [])
    if not found:
        return None
    s = json.loads(found[-1].read_text())
    m = s.get("machine", {})
    st = s["settings"]
    copies = ", ".join(d.get("name", e) for e, d in s.get("effects", {}).items())
    if "margin" in s:
        said = (f"margin +-{s['margin']['value'] * 100:.2f}%, A/A false verdicts {_pct(s['aa_false']['as_run'])}"
                + "".join(f", {d['name']} detected {_pct(d['detected'])}" for d in s["effects"].values()))
        head = f"{said}. "
    else:
        head = ""
    intro = (head + f"`python -m harness selftest` on {m.get('cpu_count', '?')}x {m.get('cpu_model', '?')}: "
             f"{s['jobs']} paired jobs of at most {st['seconds']:g} s, each holding a backend ({st['backend']}), "
             f"an identical copy of it (A/A), copies slowed by known amounts ({copies or 'none'})"
             + (f" and the residents {', '.join(st['residents'])}" if st.get("residents") else "")
             + ", read as the report reads any paired job (per regime, at the job's margin). A verdict of this "
             "report is a claim only beyond the margin; docs/harness.md, 'Known answers'.")
    return Section("What this machine can resolve", intro,
                   Table(["reading", "this machine", "expected"], table_rows(s)), key="resolution")
