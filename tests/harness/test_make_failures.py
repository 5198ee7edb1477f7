"""Failures fail: a `make bench*` target whose sweep fails (here: a refused configuration) still finishes,
records the failed line in ``failed-sweeps.txt`` and exits non-zero (the Makefile's TRY / FINISH helpers)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_bench_target_with_a_refused_configuration_exits_non_zero(tmp_path: Path) -> None:
    stamp = tmp_path / "installed"  # `-o` keeps make from re-running the install for this stamp
    done = subprocess.run(
        ["make", "--no-print-directory", "-o", str(stamp), f"STAMP={stamp}", f"PY={sys.executable}",
         f"BENCH_DIR={tmp_path / 'bench'}", "WORKERS=-1", "bench-overhead"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stdout + done.stderr
    failed = (tmp_path / "bench" / "failed-sweeps.txt").read_text()
    assert failed.startswith("bench-overhead: exit 1 from: ") and "workers=-1" in failed
    assert "workers=-1: must be >= 1" in done.stderr  # the harness's own refusal, naming the key


def _probe(tmp_path: Path, *lines: str) -> subprocess.CompletedProcess:
    """A target made of the Makefile's helpers around ``lines`` (no install, no harness)."""
    recipe = "".join(f"\n\t{line}" for line in ("$(START)", *lines, "$(FINISH)"))
    return subprocess.run(["make", "--no-print-directory", "-s", "-f", str(ROOT / "Makefile"),
                           f"BENCH_DIR={tmp_path}", "--eval", f"probe:{recipe}", "probe"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_a_failed_line_lets_the_next_lines_run_then_fails_the_target(tmp_path: Path) -> None:
    done = _probe(tmp_path, "$(TRY) false", f"$(TRY) touch {tmp_path / 'after'}")
    assert done.returncode != 0
    assert (tmp_path / "after").exists()
    assert (tmp_path / "failed-sweeps.txt").read_text().splitlines() == ["probe: exit 1 from: false"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_a_target_whose_lines_pass_exits_zero_and_forgets_an_earlier_failure(tmp_path: Path) -> None:
    (tmp_path / "failed-sweeps.txt").write_text("probe: exit 1 from: an earlier run\n")
    done = _probe(tmp_path, "$(TRY) true")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "failed-sweeps.txt").exists()


def test_every_target_that_tries_lines_finishes_with_their_verdict() -> None:
    """A target whose lines run through $(TRY) records failures and goes on; without $(START) / $(FINISH) it
    would exit 0 whatever failed (as bench-paired-jobs once did when run by itself)."""
    recipes: dict[str, list[str]] = {}
    target = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line and not line.startswith(("\t", "#", " ")) and ":" in line and "=" not in line.split(":")[0]:
            target = line.split(":")[0].strip()
            recipes[target] = []
        elif line.startswith("\t") and target is not None:
            recipes[target].append(line.strip())
    trying = {t: r for t, r in recipes.items() if any(line.startswith("$(TRY)") for line in r)}
    assert "bench-paired-jobs" in trying
    first_try = {t: next(i for i, line in enumerate(r) if "$(TRY)" in line) for t, r in trying.items()}
    unfinished = [t for t, r in trying.items() if "$(START)" not in r[:first_try[t]] or r[-1] != "$(FINISH)"]
    assert unfinished == []
