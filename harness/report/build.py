"""Assembling a report from result folders and writing its files."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from harness.archive import ARCHIVE_FILE
from harness.report.figures import all_plots
from harness.report.load import latest_runs, load_results
from harness.report.paper import side_by_side
from harness.report.render import Report, readme_section, summary_csv, to_html, to_markdown, update_readme
from harness.report.analysis import analyze
from harness.report.paired import analyze_paired, split_paired
from harness.report.paired_render import paired_plots, paired_sections
from harness.report.freethreaded import freethreaded_sections
from harness.report.render import config_names
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
    paired = analyze_paired(paired_rows, config_names(paired_rows) if len(paired_rows) else {})
    superseded = 0
    if not all_runs:
        results.rows, superseded = latest_runs(results.rows)
    analysis = analyze(results.rows)
    paper = side_by_side(results.rows, analysis.speedups, summary=analysis.summary)
    plots, notes = (all_plots(analysis.summary, analysis.speedups, results.rows, results.latencies,
                              analysis.unequal) if figures
                    else ([], ["figures not drawn (--no-figures)"]))
    if figures:
        plots += paired_plots(paired)
    rep = Report(results=results, analysis=analysis, paper=paper, plots=plots, sources=[str(p) for p in paths],
                 superseded_runs=superseded, figure_notes=notes, paired=paired, paired_rows=paired_rows)
    rep.paired_sections = paired_sections(rep) + freethreaded_sections(rep)  # (the latter: interpreter=ft rows)
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
