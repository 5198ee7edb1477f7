"""The paper side by side reads paired jobs where the run has them: reactor / ray (the paper's layout) and reactor /
Ray at its best as medians of per-cycle ratios with their paired interval, the standalone jobs only where no paired
job holds the pair, and each cell says which kind it is."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.report.build import make_report
from harness.report.documents import to_markdown
from tests.report.synthetic import Jobs
from tests.report.test_paired_ray_answer import SPEEDS, _paired_job


def _standalone_gym(jobs: Jobs) -> None:
    """Standalone gym jobs whose reactor / ray:actors (18x) and reactor / ray_packed (6x) differ from the paired
    job's (3.6x and 1.5x), so a cell shows which it was read from."""
    jobs.write("gym", "serial", "-", 1, [1000, 1010, 990, 1005, 995], num_envs=15)
    jobs.write("gym", "reactor", "processes", 2, [1800, 1810, 1790, 1805, 1795], num_envs=15)
    jobs.write("gym", "ray", "actors", 2, [100, 101, 99, 102, 98], num_envs=15)
    jobs.write("gym", "ray", "actors_packed", 2, [300, 301, 299, 302, 298], num_envs=15)


def test_a_paired_job_fills_the_paper_columns_with_its_intervals(tmp_path: Path, jobs: Jobs):
    _paired_job(tmp_path / "paired")
    _standalone_gym(jobs)
    rep = make_report([tmp_path], figures=False)
    gym = rep.paper.set_index("scenario").loc["gym"]
    assert gym["measured_source"] == "paired" and gym["best_ray_source"] == "paired"
    # reactor 1.8x serial over the paper's layout 0.5x: 3.6x, read within cycles (the standalone jobs say 18x)
    assert gym["measured_value"] == pytest.approx(3.6, rel=0.02)
    assert gym["measured"].endswith("(paired)")
    m = re.search(r"(\d\.\d\d)x \[(\d\.\d\d), (\d\.\d\d)\], faster, 30 cycles", gym["how"])
    assert m, gym["how"]
    assert float(m.group(2)) <= float(m.group(1)) <= float(m.group(3)) and float(m.group(2)) > 1
    # Ray at its best in the job: ray_packed (1.2x serial), reactor over it 1.5x; never RLlib's sampler (3x)
    assert re.match(r"1\.[45]\dx \(paired; .*1\.[45]\dx \[1\.\d\d, 1\.\d\d\], faster, 30 cycles over ray_packed",
                    gym["best_ray"]), gym["best_ray"]
    assert "rllib" not in gym["best_ray"]
    assert "cores: 2 (paper 32)" in gym["this_machine"] and "CartPole-v1" in gym["this_machine"]
    md = to_markdown(rep)
    assert "3.6" in md.split("The paper side by side", 1)[1].split("\n#", 1)[0]


def test_standalone_jobs_fill_only_the_cells_no_paired_job_holds(tmp_path: Path, jobs: Jobs):
    # the paired job holds no ray:actors (the paper's layout), only the packed layouts
    _paired_job(tmp_path / "paired", speeds=tuple(s for s in SPEEDS if s[0] != ("ray", "actors")))
    _standalone_gym(jobs)
    rep = make_report([tmp_path], figures=False)
    paper = rep.paper.set_index("scenario")
    gym = paper.loc["gym"]
    assert gym["measured_source"] == "standalone" and gym["measured_value"] == pytest.approx(18.0)
    assert gym["measured"].endswith("(standalone)") and gym["how"].startswith("standalone:")
    assert gym["best_ray_source"] == "paired" and "over ray_packed" in gym["best_ray"]
    # nothing of atari: no source, no value
    assert paper.loc["atari", "measured_source"] == "" and "no atari rows" in paper.loc["atari", "how"]


def test_without_a_paired_job_the_standalone_reading_stays(jobs: Jobs):
    _standalone_gym(jobs)
    rep = make_report([jobs.root], figures=False)
    gym = rep.paper.set_index("scenario").loc["gym"]
    assert gym["measured_source"] == "standalone" and gym["measured_value"] == pytest.approx(18.0)
    assert gym["best_ray_source"] == "standalone" and "over ray:actors_packed" in gym["best_ray"]
