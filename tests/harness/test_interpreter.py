"""The measuring child under another interpreter (``interpreter=<path>`` or ``ft``): refused up front when it
does not run, rows that record its version and GIL, and a clear ``skipped`` row when a package is missing."""
from __future__ import annotations

import stat
import sys
from pathlib import Path

from harness.interpreter import executable, skip_reason
from tests.conftest import read_rows, run_cli


def _wrapper(tmp_path: Path, *flags: str) -> Path:
    """An interpreter at another path: this one, started with ``flags`` (``-S``: without site-packages)."""
    exe = tmp_path / "python-other"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {' '.join(flags)} \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_an_interpreter_that_does_not_exist_is_refused_before_anything_runs(tmp_path):
    proc = run_cli("scenario=gym", "budget=smoke", f"interpreter={tmp_path / 'nope'}", run_dir=tmp_path / "run")
    assert proc.returncode != 0
    assert "interpreter=" in proc.stderr and "no executable" in proc.stderr
    assert not (tmp_path / "run" / "results.csv").exists()


def test_rows_record_the_child_interpreter_and_its_gil(tmp_path):
    exe = _wrapper(tmp_path)
    proc = run_cli("scenario=gym", "backend=serial", "budget=smoke", "budget.repetitions=1", f"interpreter={exe}",
                   run_dir=tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(tmp_path / "run")
    version = sys.version.split()[0]
    assert list(rows.status) == ["ok"]
    assert rows.interpreter[0] == version  # not free-threaded: no "t"
    assert str(rows.gil_enabled[0]) == "True"
    assert rows.variant[0] == f"py{version}"  # told apart from the default interpreter's serial:-


def test_a_job_needing_a_package_the_interpreter_lacks_is_skipped_with_the_reason(tmp_path):
    exe = _wrapper(tmp_path, "-S")  # no site-packages: no ray there
    job = {"interpreter": str(exe), "backend": {"name": "ray_packed"}, "scenario": {"name": "gym"}}
    assert executable(str(exe)) == str(exe)
    reason = skip_reason(job)
    assert reason is not None and "ray" in reason and "interpreter=" in reason
    proc = run_cli("scenario=gym", "backend=ray_packed", "budget=smoke", f"interpreter={exe}",
                   run_dir=tmp_path / "run")
    assert proc.returncode == 0, proc.stderr  # not a failure of the sweep
    rows = read_rows(tmp_path / "run")
    assert list(rows.status) == ["skipped"] and "ray" in rows.error[0]
