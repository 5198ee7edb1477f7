"""Fixtures of the report tests: a folder to write synthetic jobs into."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.report.synthetic import Jobs


@pytest.fixture
def jobs(tmp_path: Path) -> Jobs:
    return Jobs(tmp_path / "results")
