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


def table_rows(summary: dict[str, Any]) -> list[list[str]]:
    """The self-test's readings as (what, reading, expected) rows."""
    rows = []
    f = summary["aa_false"]
    rows.append(["A/A false verdicts, this harness's interval", _pct(f["verdict"]),
                 "about 5% (the interval's promise), its interval holding 5%"])
    margin = float(summary["settings"].get("margin", 0.0))
    rows.append([f"A/A false verdicts, with a margin of {margin * 100:g}% (compare.margin)", _pct(f["verdict_margin"]),
                 "at most 5%"])
    rows.append(["A/A false verdicts, cycles taken as independent", _pct(f["verdict_independent"]),
                 "above the dependence-aware rate where cycles correlate"])
    rows.append(["A/A false verdicts, the former percentile bootstrap", _pct(f["verdict_bootstrap"]),
                 "what the harness would have claimed before"])
    if "standalone_false" in summary:
        rows.append(["A/A false verdicts, standalone jobs one after the other", _pct(summary["standalone_false"]),
                     "the old way: the host's drift between jobs counts as a difference"])
    hw = summary["aa_half_width_median"]
    rows.append([f"A/A interval half-width after {summary['settings']['seconds']:g} s (median)",
                 f"+-{hw * 100:.2f}%" if math.isfinite(hw) else "-", "what one job of this length resolves"])
    off = summary["aa_offset"]
    if math.isfinite(off.get("low", math.nan)):
        rows.append(["A/A offset between identical residents (median of the jobs' medians [95%])",
                     f"{(off['median'] - 1) * 100:+.2f}% [{(off['low'] - 1) * 100:+.2f}%, {(off['high'] - 1) * 100:+.2f}%]",
                     "the floor is the larger end: a systematic difference the jobs cannot exclude"])
    rows.append(["one job's A/A median off 1 (50th / 95th percentile of jobs)",
                 f"{off['abs_p50'] * 100:.2f}% / {off['abs_p95'] * 100:.2f}%", "what a single job can resolve"])
    rows.append(["floor (margin a verdict must clear)", f"{summary['floor'] * 100:.2f}%",
                 "compare.margin should be at least this on this machine"])
    for e, d in summary["effects"].items():
        rows.append([f"injected {float(e) * 100:g}% extra cost: detected (called slower)", _pct(d["detected"]),
                     f"at least {80}% to count as resolved; measured ratio {d['measured_median']:.4f} "
                     f"(expected about {d['expected']:.4f})"])
    smallest = summary.get("smallest_detected")
    rows.append(["smallest injected effect detected in 80% of jobs",
                 f"{smallest * 100:g}%" if smallest else "none of those tried", ""])
    return rows


def summary_lines(paths: Iterable[Path | str]) -> list[str]:
    """One line per self-test found (its machine, jobs and readings): what `make bench` prints."""
    out = []
    for f in find_summaries(paths):
        s = json.loads(f.read_text())
        out.append(s.get("line", "") + f" [{f.parent.name}, {s['jobs']} jobs]")
    return out


def resolution_section(rep: Any) -> Optional[Any]:
    """The report section (None when no self-test is among the report's folders)."""
    from harness.report.fmt import Table
    from harness.report.model import Section

    found = find_summaries(getattr(rep, "sources", []) or [])
    if not found:
        return None
    s = json.loads(found[-1].read_text())
    m = s.get("machine", {})
    intro = (f"`python -m harness selftest` on {m.get('cpu_count', '?')}x {m.get('cpu_model', '?')}: "
             f"{s['jobs']} paired jobs of {s['settings']['seconds']:g} s, each holding a backend "
             f"({s['settings']['backend']}), an identical copy of it (A/A) and copies slowed by known amounts. "
             f"Read every verdict of this report through it: a difference below the floor "
             f"({s['floor'] * 100:.2f}%) is not called.")
    return Section("What this machine can resolve", intro,
                   Table(["reading", "this machine", "expected"], table_rows(s)))
