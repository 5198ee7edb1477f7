"""Assembling a report from result folders and writing its files."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from harness.archive import ARCHIVE_FILE
import pandas as pd

from harness.report.figures import all_plots
from harness.report.opening import against_serial_frame, against_serial_plot
from harness.report.load import latest_runs, load_results
from harness.report.paper import side_by_side
from harness.report.documents import to_html, to_markdown
from harness.report.model import Report, config_names, is_rl, scenario_order
from harness.report.readme import readme_section, update_readme
from harness.report.tables import summary_csv
from harness.report.analysis import analyze
from harness.report.paired import analyze_paired, split_paired
from harness.report.paired_render import paired_against_serial, paired_plots, paired_sections
from harness.report.freethreaded import freethreaded_sections
from harness.report.scaling import scaling_plots
from harness.report.verdict import headline_frame

FIGURE_DIR = "figures"


@dataclass
class ReportFiles:
    """Where a report was written."""

    out: Path
    html: Path
    markdown: Path
    summary: Path
    figures: list[Path] = field(default_factory=list)


def make_report(paths: Iterable[Path | str], all_runs: bool = False, figures: bool = True) -> Report:
    """Load, analyze and draw (nothing written)."""
    paths = [Path(p) for p in paths]
    results = load_results(paths)
    # paired jobs (harness compare) are read apart: each is a whole reading, never pooled with standalone jobs
    paired_rows, results.rows = split_paired(results.rows)
    paired = analyze_paired(paired_rows, config_names(paired_rows) if len(paired_rows) else {}, results.problems)
    superseded = 0
    if not all_runs:
        results.rows, superseded = latest_runs(results.rows)
    analysis = analyze(results.rows)
    paper = side_by_side(results.rows, analysis.speedups, summary=analysis.summary, paired=paired,
                         paired_rows=paired_rows)
    plots, notes = (all_plots(analysis.summary, analysis.speedups, results.rows, results.latencies,
                              analysis.unequal) if figures
                    else ([], ["figures not drawn (--no-figures)"]))
    if figures:
        # the opening picture: standalone and paired readings on one axis (RL workloads and microbenchmarks
        # apart), then one figure per paired job
        names = config_names(paired_rows) if len(paired_rows) else {}
        frame, bounds = against_serial_frame(analysis.speedups, results.rows, analysis.unequal) \
            if len(results.rows) else (pd.DataFrame(), {})
        pframe, pbounds = paired_against_serial(paired, names)
        both = pd.concat([f for f in (frame, pframe) if len(f)], ignore_index=True) if len(frame) or len(pframe) \
            else pd.DataFrame()
        plots = [p for p in plots if p.name != "relative_to_serial"]
        opening = []
        if len(both):
            title = "Every backend against serial: throughput ratio (unit/s over serial's unit/s)"
            rl = both[both["scenario"].map(is_rl)]
            micro = both[~both["scenario"].map(is_rl)]
            opening = against_serial_plot(rl, {**bounds, **pbounds}, "relative_to_serial", title + ", RL workloads",
                                          scenario_order) + \
                against_serial_plot(micro, {**bounds, **pbounds}, "relative_to_serial_micro",
                                    title + ", microbenchmarks", scenario_order)
        else:
            notes = ["every backend against serial: no configuration with serial and another backend's ok rows",
                     *notes]
        plots = opening + plots
        if paired:
            units = {str(j): str(g["unit"].iloc[0]) for j, g in paired_rows.groupby("job")}
            plots += paired_plots(paired, names, units)
    rep = Report(results=results, analysis=analysis, paper=paper, plots=plots, sources=[str(p) for p in paths],
                 superseded_runs=superseded, figure_notes=notes, paired=paired, paired_rows=paired_rows)
    rep.paired_sections = paired_sections(rep) + freethreaded_sections(rep)  # (the latter: interpreter=ft rows)
    if figures:
        rep.plots = scaling_plots(rep) + rep.plots  # a many-core run opens with its scaling curve
    return rep


def build_report(paths: Iterable[Path | str], out: Optional[Path | str] = None, all_runs: bool = False,
                 figures: bool = True, readme: Optional[Path | str] = None,
                 embed_figures: Optional[bool] = None) -> ReportFiles:
    """Write report.html, report.md, summary.csv, headline.csv and figures/*.png into ``out`` (default
    ``<first path>/report``); with ``readme``, also rewrite that file's results section. ``embed_figures``:
    report.html carries its figures (self-contained) or, False, links figures/*.png; by default it links them
    when everything read is an archived run (`harness.archive`), so a reference run's report stays small
    however it is regenerated."""
    paths = [Path(p) for p in paths]
    rep = make_report(paths, all_runs=all_runs, figures=figures)
    out_dir = Path(out) if out is not None else (paths[0] if paths[0].is_dir() else paths[0].parent) / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    fig_files: list[Path] = []
    for plot in rep.plots:
        fig_files += plot.save(out_dir / FIGURE_DIR)
    files = ReportFiles(out=out_dir, html=out_dir / "report.html", markdown=out_dir / "report.md",
                        summary=out_dir / "summary.csv", figures=fig_files)
    if embed_figures is None:
        embed_figures = not (rep.results.files and all(f.name == ARCHIVE_FILE for f in rep.results.files))
    files.html.write_text(to_html(rep, figure_dir=None if embed_figures else FIGURE_DIR))
    files.markdown.write_text(to_markdown(rep, FIGURE_DIR))
    summary_csv(rep).to_csv(files.summary, index=False)
    headline_frame(rep.analysis.headlines or []).to_csv(out_dir / "headline.csv", index=False)
    if readme is not None:
        update_readme(Path(readme), readme_section(rep))
    return files
