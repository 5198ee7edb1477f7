"""The report: statistics and figures from result files (``python -m harness.report [DIR ...]``).

Public API: `build_report` (files on disk), `make_report` (in memory), and the modules ``load``, ``stats``,
``figures``, ``paper``, ``render``. It reads only result files; docs/report.md defines every statistic.

The public names are imported on first use (PEP 562): every job prints its own summary through
`harness.report.jobline`, which needs neither matplotlib nor the report's builder, and importing them took about
1.2 s of CPU in each of the many processes a sweep (or the test suite) starts.
"""
from __future__ import annotations

from typing import Any

__all__ = ["ReportFiles", "build_report", "make_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from harness.report import build

        return getattr(build, name)
    raise AttributeError(f"module 'harness.report' has no attribute {name!r}")
