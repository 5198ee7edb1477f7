"""Shared test helpers: run the real CLI into a temporary directory and read its rows."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]


def run_cli(*overrides: str, run_dir: Path | None = None, multirun: bool = False,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m harness [overrides]`` in the repository, output dir under ``run_dir``."""
    args = [sys.executable, "-m", "harness"]
    if multirun:
        args.append("-m")
    args += list(overrides) + ["quiet=true"]
    if run_dir is not None:
        args.append(f"hydra.{'sweep' if multirun else 'run'}.dir={run_dir}")
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def read_rows(run_dir: Path) -> pd.DataFrame:
    return pd.read_csv(run_dir / "results.csv", keep_default_na=False)


@pytest.fixture
def cli():
    return run_cli
