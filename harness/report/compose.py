"""The report's composition: which sections, in what order. `sections` is the one list a new part of the
report joins.

Reading order: the answer (one line per RL workload), what this machine can resolve (the A/A self-test,
`harness.report.resolution`, where the run has one), every backend against serial (the picture and its table),
the headline (RL workloads, paired rows marked), the verdicts in words; then the microbenchmarks on their own;
then references, the paper, geometric means (RL and microbenchmarks apart), what went wrong, the paired jobs'
own sections, and the per-configuration detail and the other figures.
"""
from __future__ import annotations

from typing import Optional

from harness.report.fmt import Table
from harness.report.model import RL_SCENARIOS, Report, Section, is_rl
from harness.report.scaling import scaling_sections
from harness.report.paper import PAPER_CITATION
from harness.report.tables import (against_serial_table, answer_table, environment_table, failure_table,
                                   geomean_table, headline_table, invalid_table, paper_table, reference_lines,
                                   scenario_tables, speedup_table, verdict_lines)

#: rows of a long table shown in report.md (the rest: report.html and summary.csv)
MD_ROWS = 20

#: the sections the warnings box precedes (the numbers after the answer and its picture)
WARNINGS_BEFORE = "headline"


def resolution(rep: Report) -> Optional[Section]:
    """The lead's "What this machine can resolve" (A/A self-test), right after the answer; None where the run
    has none (or the module is not there yet)."""
    try:
        from harness.report.resolution import resolution_section
    except ModuleNotFoundError as exc:
        if exc.name != "harness.report.resolution":
            raise
        return None
    return resolution_section(rep)


def selftest_run(rep: Report) -> bool:
    from harness.report.resolution import selftest_run as is_selftest

    return is_selftest(rep)


def _standalone_empty(rep: Report, what: str) -> str:
    """What a standalone section says when it has nothing: why, instead of "(none)"."""
    if not rep.standalone and rep.paired:
        return f"no standalone rows: this run has only paired jobs ({what})"
    return ""


def figures_empty(rep: Report, what: str) -> str:
    """What an empty figure section says: the figures were not drawn, or the data has none of them."""
    if any("--no-figures" in n for n in rep.figure_notes):
        return "not drawn: this report was made with --no-figures"
    return what


def answer_intro(rep: Report) -> str:
    return ("Per RL workload: who wins and by how much (a win only when the 95% interval of the lead clears 1 by "
            "the job's margin; too few cycles give none), "
            "the reactor over serial and over the best alternative, and its share of the ceiling."
            + (" Shaded rows: paired jobs." if any(is_rl(j.scenario) for j in rep.paired or []) else ""))


def answer_note(rep: Report) -> str:
    paired = any(is_rl(j.scenario) for j in rep.paired or [])
    return ("Reactor: its processes executor (`backend=reactor`). The ceiling: what `workers` copies of the serial "
            "loop get on this machine, synchronized (meeting once per round, `capacity_lockstep`), measured (never "
            "meeting, `capacity`) or assumed (serial x workers)."
            + (" A paired job holds every backend resident and runs one block of each per cycle; its ratios are "
               "taken within a cycle, so the host's drift cancels, and the interval is over cycles; a host shift "
               "splits a job into regimes where it moved a ratio between backends." if paired else "")
            + " Microbenchmarks are answered apart, further down. Definitions: docs/report.md.")


def sections(rep: Report) -> list[Section]:
    """The report in reading order (module docstring)."""
    overview = [p for p in rep.plots if p.name.startswith("relative_to_serial") and "micro" not in p.name]
    micro_overview = [p for p in rep.plots if p.name.startswith("relative_to_serial_micro")]
    micro_lines = verdict_lines(rep, rl=False)
    has_micro = bool(answer_table(rep, rl=False).rows)
    resolves = resolution(rep)
    # a self-test's own report opens with what the machine resolves, not with its A/A pairs as an answer
    opens = [resolves] if resolves is not None and selftest_run(rep) else []
    out: list[Optional[Section]] = [
        *opens,
        Section("The answer", answer_intro(rep), answer_table(rep, rl=True), md_rows=MD_ROWS, key="answer",
                note=answer_note(rep)),
        *scaling_sections(rep),  # a many-core run's scaling curve, measured and predicted
        None if opens else resolves,
        Section("Every backend against serial", "Each backend's throughput over serial's, with its 95% interval: "
                "from standalone jobs (ratios of medians of repetitions) and from paired jobs (medians of "
                "per-cycle ratios, per regime where a host shift moved them).", overview,
                empty=figures_empty(rep, "no configuration with serial and another backend"), key="against-serial"),
        Section("Every backend against serial: the numbers", "", against_serial_table(rep), md_rows=MD_ROWS,
                key="against-serial-table"),
        Section("Headline", "RL workloads, one row per configuration (and per paired job and regime, marked "
                "paired): medians in unit/s; the best alternative is the fastest backend that is neither serial, "
                "nor a reactor executor, nor the ceiling; ratios with their 95% interval (standalone: ratio of "
                "medians, bootstrap; paired: median of per-cycle ratios); efficiency = reactor throughput / the "
                "ceiling (measured: `capacity`; synchronized: `capacity_lockstep`; assumed: serial x min(workers, "
                "cores)). Columns: docs/report.md.", headline_table(rep, rl=True), md_rows=MD_ROWS,
                key=WARNINGS_BEFORE),
        Section("Verdicts", "RL workloads, in words. Fastest only when the 95% interval of its lead over the "
                "runner-up clears 1 (by the job's margin where rows record one); the reactor's standing by the "
                "same rule (docs/report.md)."
                + (" Paired jobs (marked paired): each reactor executor against serial on the same interpreter."
                   if rep.paired else ""), verdict_lines(rep, rl=True), empty="no RL workload measured",
                md_rows=MD_ROWS, key="verdicts"),
    ]
    if has_micro or micro_lines:
        out += [
            Section("Microbenchmarks", "The runtimes' own costs (actors: a round trip to N clients; object_size: "
                    "moving a payload; overhead: a round's fixed cost), apart from the RL workloads: their ratios "
                    "(often 10-600x) say what a round trip costs, not what an RL workload gains.",
                    answer_table(rep, rl=False), key="micro"),
            Section("Microbenchmarks: headline", "", headline_table(rep, rl=False), md_rows=MD_ROWS, key="micro-headline"),
            *([Section("Microbenchmarks against serial", "", micro_overview, key="micro-figure")]
              if micro_overview else []),
            Section("Microbenchmarks: verdicts", "", micro_lines, key="micro-verdicts"),
        ]
    if rep.analysis.references:
        out.append(Section("References (not the same work)", "Backends that label themselves a reference: they did "
                           "other work than the scenario's (RLlib's sampler computes its own actions), so they stand "
                           "beside the verdicts and never in them (docs/report.md, \"References\").",
                           reference_lines(rep), key="references"))
    out += [
        Section("The paper side by side", f"{PAPER_CITATION}. Measured: reactor / ray (`backend=ray`: one actor per "
                "role, the paper's layout), and beside it reactor / the fastest Ray layout measured: from paired jobs "
                "where the run holds them (the median of per-cycle ratios, its interval and the rule's word), else "
                "from standalone jobs; each cell says which.",
                paper_table(rep), empty=_standalone_empty(rep, "the paper's comparison needs Ray's standalone jobs"),
                key="paper"),
        Section("Geometric means", "Per scenario over its configurations, then over the RL workloads and, apart, "
                "over the microbenchmarks (never one mean across both).", geomean_table(rep),
                empty=_standalone_empty(rep, "the means read standalone Ray jobs"), key="geomeans"),
        Section("Invalid configurations", "Backends produced different checksums at the same repetition index: "
                "they did not do the same work, so no speedup is computed.", invalid_table(rep), md_rows=MD_ROWS,
                empty="no invalid configuration: every configuration's backends produced equal checksums",
                key="invalid"),
        Section("Failures", "Rows with status error or timeout, with their messages.", failure_table(rep),
                md_rows=MD_ROWS, empty="no failed row: no job ended in error or timeout", key="failures"),
    ]
    out += rep.paired_sections
    for scen, t in scenario_tables(rep):
        out.append(Section(f"Scenario {scen}", "One row per configuration and backend. Red rows: invalid "
                           "(checksums differ between backends).", t, detail=True, key=f"scenario-{scen}"))
    out += [
        Section("All speedups", "Every backend over every other, within each valid configuration.",
                speedup_table(rep), detail=True, key="speedups"),
        Section("Hardware and software", "From the rows' metadata.", environment_table(rep),
                empty=_standalone_empty(rep, "the paired jobs' machine is named in the answer and the paired "
                                             "sections"), key="environment"),
        Section("Figures", "", [p for p in rep.plots if not p.name.startswith("relative_to_serial")
                                and not p.name.startswith("paired_")], key="figures"),
    ]
    return [s for s in out if s is not None]


def section_empty(rep: Report, sec: Section) -> str:
    """What an empty section says: its own reason, else a standalone table's, else "(none)"."""
    if sec.empty:
        return sec.empty
    if isinstance(sec.content, Table) and sec.content.empty != "(none)":
        return sec.content.empty
    return _standalone_empty(rep, "see the paired sections") or "(none)"
