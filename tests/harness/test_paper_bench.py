"""scripts/paper_bench.py: the paper's configurations, and the subset that fits a small machine."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def paper_bench():
    spec = importlib.util.spec_from_file_location("paper_bench", REPO / "scripts" / "paper_bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["paper_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_twelve_configurations(paper_bench) -> None:
    values = [(s, v) for s, (_k, vs) in paper_bench.SWEEPS.items() for v in vs]
    assert len(values) == 12
    assert ("dqn", "250") in values and ("marl", "4") in values and ("atari", "MsPacman-v4") in values


def test_subset_budget_cuts_rounds_to_the_job_length(paper_bench) -> None:
    budget = {"rounds": 10000, "warmup_rounds": 20, "repetitions": 5}
    # 2 ms rounds, 5 repetitions, 10 s jobs: 1,000 rounds each
    assert paper_bench.subset_budget(budget, 0.002, 10.0) == {"rounds": 1000, "warmup_rounds": 20}
    # slow rounds: never fewer than SUBSET_MIN_ROUNDS, warm-up no longer than the rounds
    cut = paper_bench.subset_budget({"rounds": 10000, "warmup_rounds": 100, "repetitions": 5}, 5.0, 10.0)
    assert cut == {"rounds": paper_bench.SUBSET_MIN_ROUNDS, "warmup_rounds": paper_bench.SUBSET_MIN_ROUNDS}
    # fast rounds: never more than the budget's own
    assert paper_bench.subset_budget(budget, 1e-7, 10.0)["rounds"] == 10000
