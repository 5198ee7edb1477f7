"""Runs never mix (issue 47, item 9): a paired job rerun into a folder that holds one sets the earlier files aside
(``*.superseded-<time>.*``, as standalone jobs' resume does), and the report never pivots cycles of two runs
appended to one ``results.csv`` together."""
from __future__ import annotations

import sys
from pathlib import Path

from harness import compare
from harness.cycles import COMPARE_FILE, CompareOutcome
from harness.report.build import make_report
from harness.report.paired import runs_of_job
from harness.report.tables import warnings
from harness.resume import PAIRED_JOB_FILES, set_aside
from tests.report.test_one_rule import paired_job


def test_a_paired_rerun_sets_the_earlier_job_aside(tmp_path: Path, monkeypatch, capsys) -> None:
    out = tmp_path / "job"
    runs: list[int] = []

    def fake_run_compare(jobs, job_dir, settings, seed, log=print):  # what run_compare leaves in the folder
        assert not (job_dir / "results.csv").exists()  # every run starts from an empty folder
        runs.append(len(runs))
        paired_job(job_dir, {("serial", "-"): [100.0 + len(runs)] * 6, ("serial", "- #2"): [100.0] * 6})
        (job_dir / COMPARE_FILE).write_text("{}\n")
        return CompareOutcome("ok", cycles=6, block_rounds=5)

    monkeypatch.setattr(compare, "run_compare", fake_run_compare)
    for _ in range(2):
        monkeypatch.setattr(sys, "argv", ["harness", "scenario=gym", "budget=smoke", "workers=2",
                                          "backends=[serial,serial]", "quiet=true", f"hydra.run.dir={out}"])
        compare.main()
    assert runs == [0, 1]
    aside = sorted(p.name for p in out.iterdir() if ".superseded-" in p.name)
    assert [n.split(".superseded-")[0] for n in aside] == ["compare", "results"], aside
    assert "an earlier paired job in" in capsys.readouterr().err
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 12  # the header and the second run's blocks only


def test_set_aside_renames_a_paired_jobs_files(tmp_path: Path) -> None:
    for name in ("results.csv", "compare.json", "error.txt", "keep.txt"):
        (tmp_path / name).write_text("x")
    moved = set_aside(tmp_path, PAIRED_JOB_FILES)
    assert sorted(p.name.split(".superseded-")[0] for p in moved) == ["compare", "error", "results"]
    assert sorted(p.name for p in tmp_path.iterdir() if ".superseded-" not in p.name) == ["keep.txt"]


def test_the_report_reads_only_the_last_of_two_appended_runs(tmp_path: Path) -> None:
    job = tmp_path / "job"
    # run 1: the reactor 2x serial over 10 cycles; run 2, appended to the same file: 1.2x over 8 cycles
    paired_job(job, {("serial", "-"): [100.0] * 10, ("reactor", "processes"): [200.0] * 10})
    paired_job(job, {("serial", "-"): [100.0] * 8, ("reactor", "processes"): [120.0] * 8})
    rep = make_report([tmp_path], figures=False)
    (j,) = rep.paired
    assert j.cycles == 8 and (j.table["reactor:processes"] / j.table["serial:-"]).eq(1.2).all()
    assert any("holds 2 runs" in w and "only the last run is read" in w for w in warnings(rep)), warnings(rep)


def test_runs_are_told_apart_by_block_numbers_that_start_again() -> None:
    import pandas as pd

    g = pd.DataFrame({"block": [0, 1, 2, 3, 0, 1, float("nan"), 2, 0]})
    assert list(runs_of_job(g)) == [0, 0, 0, 0, 1, 1, 1, 1, 2]


def test_a_job_whose_cycles_repeat_a_backend_is_refused(tmp_path: Path) -> None:
    from harness.results import ResultsWriter, make_row
    from tests.report.test_one_rule import BASE

    writer = ResultsWriter(tmp_path / "job")
    block = 0
    for cycle in [0, 1, 2, 0, 1, 2]:  # block numbers keep growing, cycles repeat: no run boundary to read
        for backend, tp in (("serial", 100.0), ("reactor", 150.0)):
            writer.append(make_row({**BASE, "backend": backend, "variant": "-" if backend == "serial" else "processes",
                                    "workers": 2}, repetition=cycle, cycle=cycle, block=block, status="ok",
                                   units=1000, seconds=1000 / tp, throughput=tp, checksum=f"c{cycle}",
                                   extra={"paired": True, "block_rounds": 50}))
            block += 1
    rep = make_report([tmp_path], figures=False)
    assert rep.paired == []
    assert any("two blocks in one cycle" in w for w in warnings(rep))
