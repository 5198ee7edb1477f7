"""The report: statistics and figures from result files (``python -m harness.report [DIR ...]``).

Public API: `build_report` (files on disk), `make_report` (in memory), and the modules ``load``, ``stats``,
``figures``, ``paper``, ``render``. It reads only result files; docs/report.md defines every statistic.
"""
from __future__ import annotations

from harness.report.build import ReportFiles, build_report, make_report

__all__ = ["ReportFiles", "build_report", "make_report"]
