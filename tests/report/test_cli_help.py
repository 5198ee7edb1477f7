"""The command line a user meets first: `python -m harness --help` lists the real options and subcommands,
a misspelled option names the nearest ones, and a finished job prints its median with an interval and flags a
repetition far off the others."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np

from harness.app import GROUPS, KEY_HELP, SUBCOMMANDS, help_text, options, unknown_options
from harness.config import RunConfig
from harness.report.jobline import job_lines, outlying
from tests.report.synthetic import Jobs

REPO = Path(__file__).resolve().parents[2]


def test_help_lists_real_options_subcommands_and_no_schema():
    text = help_text()
    assert "_schema" not in text
    for group in GROUPS:
        assert f"  {group}: " + ", ".join(options(group)) in text
    assert "ale_vector" in text and "reactor_threads" in text and "ray_packed" in text
    for sub in ("graph", "compare", "selftest"):
        assert f"python -m harness {sub}" in text and sub in SUBCOMMANDS
    keys = {f.name for f in dataclasses.fields(RunConfig)} - set(GROUPS)
    assert keys <= set(KEY_HELP), keys - set(KEY_HELP)  # every key of a run has a line
    assert all(f"  {k}: {KEY_HELP[k]}" in text for k in keys)


def test_help_from_the_command_line():
    out = subprocess.run([sys.executable, "-m", "harness", "--help"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "backend: ale_vector" in out.stdout and "_schema" not in out.stdout


def test_a_misspelled_backend_names_the_nearest():
    (msg,) = unknown_options(["scenario=gym", "backend=reactr", "workers=2"])
    assert msg.startswith("unknown backend 'reactr'; did you mean reactor") and "backends: ale_vector" in msg
    assert unknown_options(["-m", "backend=serial,ray_packd"])[0].startswith("unknown backend 'ray_packd'; did you "
                                                                             "mean ray_packed")
    assert unknown_options(["scenario=gym", "backend=serial,reactor", "budget=smoke"]) == []
    assert "unknown scenario 'atary'; did you mean atari" in unknown_options(["scenario=atary"])[0]


def test_a_typo_fails_before_anything_runs():
    out = subprocess.run([sys.executable, "-m", "harness", "scenario=gym", "backend=reactr", "budget=smoke"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "did you mean reactor" in out.stderr


def test_a_job_prints_its_median_and_flags_a_slow_first_repetition(tmp_path: Path):
    job = Jobs(tmp_path).write("gym", "serial", "-", 2, [500, 1000, 1010, 990, 1005, 995])
    lines = job_lines(job / "results.csv")
    assert lines[0].startswith("serial: median 998 env_steps/s, 95% interval [")  # median of 6: (995 + 1000) / 2
    assert "over 6 repetition(s)" in lines[0]
    assert len(lines) == 2 and "repetition 0 is far off the others: 0.50x their median" in lines[1]
    steady = Jobs(tmp_path / "b").write("gym", "serial", "-", 2, [1000, 1010, 990, 1005, 995])
    assert len(job_lines(steady / "results.csv")) == 1


def test_scattered_repetitions_flag_none():
    assert outlying(np.array([500, 1500, 900, 1200, 700])) == []  # wide everywhere: the interval says it
    assert outlying(np.array([1000, 1020, 980, 1030])) == []
    assert [i for i, _ in outlying(np.array([1000, 1010, 2100, 990, 1005]))] == [2]


def test_the_report_without_a_folder_reads_the_run_just_finished(tmp_path: Path, monkeypatch, capsys):
    import os

    from harness.report.__main__ import main as report_main

    monkeypatch.chdir(tmp_path)
    old = Jobs(tmp_path / "results" / "bench" / "latest").write("gym", "serial", "-", 2, [1000, 1010, 990])
    os.utime(old / "results.csv", (1_000_000, 1_000_000))
    job = Jobs(tmp_path / "results" / "runs" / "2026-12-04_10-00-00_gym_reactor_w2").write(
        "gym", "reactor", "processes", 2, [1800, 1810, 1790])
    assert report_main(["--no-figures"]) == 0
    out = capsys.readouterr().out
    assert "reading results/runs/2026-12-04_10-00-00_gym_reactor_w2 (the latest job;" in out
    assert (job.parent / "report" / "report.md").exists()
    assert not (tmp_path / "results" / "bench" / "latest" / "report").exists()
