"""The report's rendering, as one import (kept for callers of the former single module). It is split along
its seams: `harness.report.fmt` (numbers and tables as strings), `harness.report.model` (the Report, its
Sections, names), `harness.report.tables` (the content), `harness.report.answer` (the answer lines),
`harness.report.compose` (which sections, in what order), `harness.report.documents` (Markdown and HTML),
`harness.report.readme` (README's results block). The documents (`to_html`, `to_markdown`) and their
composition are not re-exported here: the report's sections import this module's names, and the composition
imports them."""
from __future__ import annotations

from harness.report.fmt import Table, interval, num, ratio_text
from harness.report.model import Report, Section, config_names, counts, machine_line, name_of
from harness.report.readme import README_END, README_START, readme_section, update_readme
from harness.report.tables import (environment_table, failure_table, geomean_table, headline_table, invalid_table,
                                   paper_table, reference_lines, scenario_tables, speedup_table, summary_csv,
                                   verdict_lines, warnings)

__all__ = ["README_END", "README_START", "Report", "Section", "Table", "config_names", "counts",
           "environment_table", "failure_table", "geomean_table", "headline_table", "interval", "invalid_table",
           "machine_line", "name_of", "num", "paper_table", "ratio_text", "readme_section", "reference_lines",
           "scenario_tables", "speedup_table", "summary_csv", "update_readme",
           "verdict_lines", "warnings"]
