"""The results schema: every contract column, closed statuses, unknown columns refused."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from harness.results import COLUMNS, ResultsWriter, make_row, timing_fields

CONTRACT = ["scenario", "backend", "variant", "workers", "num_envs", "env_id", "budget", "seed", "repetition",
            "units", "unit", "seconds", "throughput", "latency_p50_ms", "latency_p99_ms", "checksum", "status",
            "error", "metadata"]


def test_contract_columns_present_in_order():
    assert list(COLUMNS[: len(CONTRACT)]) == CONTRACT


def test_timing_fields():
    f = timing_fields(100, 2.0, np.array([0.01, 0.02, 0.03]))
    assert f["throughput"] == 50.0 and f["latency_p50_ms"] == pytest.approx(20.0) and f["rounds"] == 3


def test_make_row_refuses_unknown_columns_and_statuses():
    with pytest.raises(KeyError):
        make_row({}, status="ok", bogus=1)
    with pytest.raises(ValueError):
        make_row({}, status="fine")


def test_writer_appends_with_one_header(tmp_path):
    w = ResultsWriter(tmp_path)
    for rep in range(3):
        w.append(make_row({"scenario": "gym", "metadata": {"a": 1}}, repetition=rep, status="ok"))
    df = pd.read_csv(tmp_path / "results.csv")
    assert list(df.columns) == list(COLUMNS) and len(df) == 3
    assert json.loads(df.metadata[0]) == {"a": 1}
