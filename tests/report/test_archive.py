"""The compact form of a run (harness.archive): every row kept, the report and resume read it."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.archive import ARCHIVE_FILE, QUANTILES, compact_run, latency_summary, main, read_archive
from harness.report import make_report
from harness.report.load import load_results

from tests.report.synthetic import Jobs


def _run(jobs: Jobs) -> Path:
    for trial in (0, 1):
        meta = {"trial": trial}
        jobs.write("gym", "serial", "-", 1, [1000, 1010, 990], meta=meta)
        jobs.write("gym", "reactor", "processes", 2, [1800, 1810, 1790], meta=meta)
        jobs.write("gym", "ray", "actors", 2, [100, 101], failure=("error", "boom"), meta=meta)
    ex = [{"sampling_s": 1.0, "communication_s": 0.5, "training_s": 0.25}] * 3
    jobs.write("dqn", "reactor", "processes", 2, [10, 11, 10.5], extras=ex, env_id="Blackjack-v1",
               params={"minibatch": 500}, num_envs=None, rounds=200)
    return jobs.root


def test_the_compact_form_keeps_every_row_and_the_same_report(jobs: Jobs, tmp_path: Path) -> None:
    run = _run(jobs)
    hydra = run / "0_gym_serial_-_w1" / ".hydra"
    hydra.mkdir()
    (hydra / "overrides.yaml").write_text("- scenario=gym\n- backend=serial\n- workers=1\n")
    (run / "0_gym_serial_-_w1" / "compare.json").write_text('{"stopped_by": "precision"}')
    dest = tmp_path / "reference" / "run-a"
    assert main([str(run), str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["README.md", "report", ARCHIVE_FILE]
    records = list(read_archive(dest / ARCHIVE_FILE))
    assert len(records) == 7 and records[0]["job"] == "0_gym_serial_-_w1"
    assert records[0]["overrides"] == ["scenario=gym", "backend=serial", "workers=1"]  # how to run it again
    assert records[0]["files"] == {"compare.json": {"stopped_by": "precision"}} and records[1]["files"] == {}
    # metadata once per job, not once per row
    text = gzip.open(dest / ARCHIVE_FILE, "rt").read()
    assert text.count('"hostname"') == 7
    original, compact = load_results([run]), load_results([dest])
    cols = ["scenario", "backend", "variant", "repetition", "throughput", "checksum", "status", "error", "params",
            "extra", "config", "machine", "software"]
    pd.testing.assert_frame_equal(original.rows[cols], compact.rows[cols])
    assert list(original.rows["meta"]) == list(compact.rows["meta"])
    a, b = make_report([run], figures=False), make_report([dest], figures=False)
    pd.testing.assert_frame_equal(a.analysis.summary, b.analysis.summary)
    pd.testing.assert_frame_equal(a.analysis.speedups, b.analysis.speedups)
    # the latency summary is the same whichever form it was read from; the figures draw from it
    pd.testing.assert_frame_equal(original.latencies.drop(columns="job"), compact.latencies.drop(columns="job"))
    assert {"latency_cdf", "dqn_wall_time"} <= {p.name for p in make_report([dest]).plots}
    # the report of the compact run: figures as PNG files linked from report.html, nothing embedded
    html_text = (dest / "report" / "report.html").read_text()
    links = re.findall(r"src='(figures/[^']+\.png)'", html_text)
    assert "base64" not in html_text and links and all((dest / "report" / link).exists() for link in links)
    assert "results.jsonl.gz" in (dest / "README.md").read_text()
    # refused: writing into a folder that holds results, or into the run itself
    assert main([str(run), str(dest)]) == 2
    with pytest.raises(ValueError):
        compact_run(run, run / "inside")


def test_latency_summary_keeps_the_distribution_and_the_wall_time() -> None:
    rng = np.random.default_rng(0)
    reps, rounds = 3, 500
    lat = rng.exponential(2.0, size=(reps, rounds))
    values = np.array([(r, i, lat[r, i]) for r in range(reps) for i in range(rounds)])
    s = latency_summary(values)
    assert s["rounds"] == reps * rounds and len(s["q"]) == QUANTILES
    assert s["q"][0] == pytest.approx(lat.min(), rel=1e-4) and s["q"][-1] == pytest.approx(lat.max(), rel=1e-4)
    assert s["q"][100] == pytest.approx(np.median(lat), rel=1e-4)
    assert s["wall_round"][-1] == rounds and s["wall_round"][0] == 1
    assert s["wall_s"][-1] == pytest.approx(np.median(lat.sum(axis=1)) / 1e3, rel=1e-4)


def test_a_job_measured_again_in_an_archived_run_replaces_its_record(jobs: Jobs, tmp_path: Path) -> None:
    run = _run(jobs)
    dest = tmp_path / "archived"
    compact_run(run, dest, figures=False)
    again = Jobs(dest)
    again.count = 0
    again.write("gym", "serial", "-", 1, [2000, 2000, 2000], meta={"trial": 0})  # the same folder name
    rows = load_results([dest]).rows
    serial = rows[(rows["label"] == "serial:-")]
    assert len(rows) == 21 and sorted(serial["throughput"]) == [990, 1000, 1010, 2000, 2000, 2000]


def test_a_foreign_or_damaged_archive_is_named_not_read(tmp_path: Path) -> None:
    path = tmp_path / "run" / ARCHIVE_FILE
    path.parent.mkdir()
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps({"format": "other"}) + "\n")
    loaded = load_results([tmp_path / "run"])
    assert len(loaded.rows) == 0 and any("not a reactorbench-archive" in p for p in loaded.problems)
