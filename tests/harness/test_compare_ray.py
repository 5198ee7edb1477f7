"""A new user's first commands: `make compare-ray` (the reactor against Ray on the four RL workloads in paired jobs,
then the answer table: scripts/compare_ray.py) and `python -m harness --help` (every budget, backend preset and
``compare.*`` setting said, and what a paired job refuses)."""
from __future__ import annotations

import dataclasses
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.app import BACKEND_HELP, BUDGET_HELP, COMPARE_HELP, COMPARE_REFUSES, help_text
from harness.compare import REFUSED, CompareRanges
from harness.report.__main__ import answer_section

ROOT = Path(__file__).resolve().parents[2]
RAY_LAYOUTS = ("ray_packed", "ray_compiled_packed")


def _section(text: str, heading: str) -> list[str]:
    """The indented lines of ``--help`` under the line starting with ``heading``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        out.append(line)
    return out


def test_help_says_every_budget_backend_preset_and_compare_setting():
    text = help_text()
    budgets = sorted(p.stem for p in (ROOT / "conf" / "budget").glob("*.yaml"))
    presets = sorted(p.stem for p in (ROOT / "conf" / "backend").glob("*.yaml"))
    assert {"smoke", "local", "paper"} <= set(budgets) and {"serial", "reactor", *RAY_LAYOUTS} <= set(presets)
    said = {line.split(":")[0].strip(): line.split(":", 1)[1].strip() for line in _section(text, "budgets (")}
    assert all(said.get(b) for b in budgets), [b for b in budgets if not said.get(b)]
    assert all("rounds x" in said[b] for b in budgets)  # read from conf/budget
    said = {line.split(":")[0].strip(): line.split(":", 1)[1].strip() for line in _section(text, "backend presets (")}
    assert all(said.get(p) for p in presets), [p for p in presets if not said.get(p)]  # a preset without a line
    assert set(BACKEND_HELP) <= set(presets) and set(BUDGET_HELP) <= set(budgets)  # no line for a removed one
    keys = [f.name for f in dataclasses.fields(CompareRanges)]
    assert set(COMPARE_HELP) == set(keys)
    compare = _section(text, "compare (")
    assert all(any(line.startswith(f"  compare.{k}: ") for line in compare) for k in keys)
    refuses = next(line for line in compare if line.startswith("  refuses: "))
    assert refuses == f"  refuses: {COMPARE_REFUSES}"
    assert all(name in refuses for name in REFUSED) and "backend.address" in refuses
    assert "make compare-ray" in text


def _script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "scripts/compare_ray.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_compare_ray_runs_every_workload_against_every_ray_layout_then_the_answer(tmp_path: Path):
    done = _script("--dry-run", "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    commands = [shlex.split(line) for line in done.stdout.splitlines()]
    jobs, report = commands[:-1], commands[-1]
    assert [c[c.index("compare") + 1] for c in jobs] == ["scenario=gym", "scenario=atari", "scenario=dqn",
                                                          "scenario=marl"]
    assert "scenario.env=synthetic" in jobs[3]
    for job in jobs:
        assert job[1:4] == ["-m", "harness", "compare"]
        (backends,) = [a for a in job if a.startswith("backends=")]
        names = backends.removeprefix("backends=[").removesuffix("]").split(",")
        assert names[:2] == ["serial", "reactor"] and set(RAY_LAYOUTS) <= set(names)
        assert any(a.startswith("compare.max_seconds=") for a in job)
        assert f"hydra.run.dir={tmp_path / 'run'}/" in " ".join(job)
    assert report[1:] == ["-m", "harness.report", str(tmp_path / "run"), "--answer"]
    # about ten minutes: at most 90 s of cycles per job (start-up and the report come on top)
    seconds = [float(a.split("=")[1]) for job in jobs for a in job if a.startswith("compare.max_seconds=")]
    assert sum(seconds) <= 360


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_compare_ray_runs_the_script_with_the_makefile_settings(tmp_path: Path):
    stamp = tmp_path / "installed"  # `-o` keeps make from running the install for this stamp
    done = subprocess.run(["make", "--no-print-directory", "-n", "-o", str(stamp), f"STAMP={stamp}",
                           f"PY={sys.executable}", "compare-ray"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if "scripts/compare_ray.py" in ln]
    command = shlex.split(line)
    assert command[:2] == [sys.executable, "scripts/compare_ray.py"]
    dry = _script(*command[2:], "--dry-run")  # what make runs, printed: the four workloads against Ray
    assert dry.returncode == 0, dry.stderr
    assert sum("-m harness compare" in ln for ln in dry.stdout.splitlines()) == 4
    assert all(all(r in ln for r in RAY_LAYOUTS) for ln in dry.stdout.splitlines() if "harness compare" in ln)
    assert "make compare-ray" in (ROOT / "README.md").read_text().split("## Quick start")[1].split("\n## ")[0]


def test_a_failed_workload_fails_the_command_and_is_named(tmp_path: Path):
    """puffer is refused by a paired job before anything starts: the job fails in seconds, the command exits 1
    naming the workload, with no report and nothing left behind."""
    done = _script("--workloads", "gym", "--backends", "serial,puffer", "--out", str(tmp_path / "run"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "compare-ray: FAILED: gym (exit 1" in done.stderr
    assert "compare-ray: gym FAILED" in done.stdout and "left behind" not in done.stderr
    assert "busy-wait" in (tmp_path / "run" / "gym" / "compare-ray.log").read_text()
    assert not (tmp_path / "run" / "report").exists()


def test_answer_section_is_the_reports_answer():
    md = "# r\n\nMachine: x\n\n## The answer\n\n| a |\n|---|\n| 1 |\n\nnote\n\n## Headline\n\n| b |\n"
    assert answer_section(md) == "## The answer\n\n| a |\n|---|\n| 1 |\n\nnote"
    assert answer_section("# r\n\n## Headline\n").startswith("(the report has no answer")


def test_the_reactor_over_each_ray_layout_is_read_as_the_report_reads_it(tmp_path: Path):
    """What compare-ray prints after the answer, from the rows of paired jobs holding both packed layouts: the
    reactor 3x ray_packed and 1.5x ray_compiled_packed in every cycle. Every workload's lines, also where the
    report's markdown cuts its long tables (here: 25 jobs, whose ratio table passes report.md's rows)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import compare_ray

    from harness.report.build import build_report
    from tests.report.test_one_rule import paired_job

    n = 12
    jobs = 25
    for i in range(jobs):
        paired_job(tmp_path / "run" / f"gym{i:02d}", {
            ("serial", "-"): [100.0] * n, ("reactor", "processes"): [150.0] * n,
            ("ray", "actors_packed"): [50.0] * n, ("ray", "compiled_packed"): [100.0] * n})
    files = build_report([tmp_path / "run"], figures=False)
    text = files.markdown.read_text()
    assert "| gym CartPole-v1" in answer_section(text)
    lines = compare_ray.ray_lines(tmp_path / "run")
    assert len(lines) == 2 * jobs, lines
    assert sum("reactor / ray_packed = 3x [3, 3] (12 cycles; reactor faster)" in ln for ln in lines) == jobs
    assert sum("reactor / ray_compiled_packed = 1.5x [1.5, 1.5] (12 cycles; reactor faster)" in ln
               for ln in lines) == jobs


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize("paper_ray", [None, ""])
def test_make_bench_paired_holds_ray_at_its_best_everywhere_and_the_papers_layout_where_it_fits(tmp_path: Path,
                                                                                                paper_ray):
    """Every workload's paired job holds both packed layouts; the paper's layout (`ray`) only atari, dqn and marl's
    simple_spread_v3, whose rounds fit (the Makefile's rule, docs/ray.md); ``PAIRED_PAPER_RAY=`` leaves it out of
    all."""
    stamp = tmp_path / "installed"
    extra = [] if paper_ray is None else [f"PAIRED_PAPER_RAY={paper_ray}"]
    done = subprocess.run(["make", "--no-print-directory", "-n", "-o", str(stamp), f"STAMP={stamp}",
                           f"BENCH_DIR={tmp_path}", "bench-paired-jobs", *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    held = {}
    for ln in done.stdout.splitlines():
        if "harness compare" in ln:
            words = shlex.split(ln.split("; try ", 1)[-1])
            job = " ".join(w.split("=", 1)[1] for w in words if w.startswith(("scenario=", "scenario.env=")))
            held[job] = next(w for w in words if w.startswith("backends=["))[len("backends=["):-1].split(",")
    assert sorted(held) == ["atari", "dqn", "gym", "marl simple_spread_v3", "marl synthetic"]
    assert all(set(RAY_LAYOUTS) <= set(b) for b in held.values())
    with_paper = {s for s, b in held.items() if "ray" in b}
    assert with_paper == (set() if paper_ray == "" else {"atari", "dqn", "marl simple_spread_v3"})
