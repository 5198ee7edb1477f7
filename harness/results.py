"""The results contract: one module owns the columns of ``results.csv`` and how rows are written.

One row per timed repetition (warm-up rounds are never rows), plus one ``error`` or ``timeout`` row when a
measurement fails. Rows are appended as they arrive, so an interrupted sweep keeps every finished row.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

#: the contract's columns, in file order (docs/design.md, "Results contract"), then this project's extras
COLUMNS: tuple[str, ...] = (
    "scenario",
    "backend",
    "variant",
    "workers",
    "num_envs",
    "env_id",
    "budget",
    "seed",
    "repetition",
    "units",
    "unit",
    "seconds",
    "throughput",
    "latency_p50_ms",
    "latency_p99_ms",
    "checksum",
    "status",
    "error",
    "metadata",
    # extras: start-up time (framework + roles, excluded from throughput), mean round latency, the fixed
    # work per round of microbenchmarks, the scenario's own parameters, and scenario metrics (JSON)
    "startup_seconds",
    "latency_mean_ms",
    "rounds",
    "round_work_ms",
    "threads_per_worker",
    "params",
    "extra",
    # peak memory of the job's whole process tree, sampled by the parent (harness.memory)
    "peak_rss_mb",
    "peak_shm_mb",
    # paired jobs (`python -m harness compare`): the cycle of a block and its position in time within the job
    # (empty in a standalone job's rows)
    "cycle",
    "block",
    # the measuring child's Python (``3.13.5t``: free-threaded) and whether its GIL was on when the
    # repetition ended (harness.interpreter)
    "interpreter",
    "gil_enabled",
    # which resident of a doubled backend in an A/A paired job (1, 2, ...; empty: 1), `harness.labels`
    "copy",
)

#: ``skipped``: the job was not run, for the reason in ``error`` (a package its interpreter lacks)
STATUSES = ("ok", "error", "timeout", "skipped")
#: ``extra.tree_cpu_window`` of a row whose CPU columns (``tree_cpu_ms_per_unit``, ``tree_cpu_cores_busy``) count the
#: clock's timed stretches only (`harness.child.TreeCpu`); rows without it counted from row to row
TIMED_CPU_WINDOW = "timed"
RESULTS_FILE = "results.csv"
LATENCIES_FILE = "latencies.csv"


def timing_fields(units: int, seconds: float, latencies_s: np.ndarray) -> dict[str, Any]:
    """Throughput and per-round latency columns for one repetition."""
    lat_ms = np.asarray(latencies_s, dtype=float) * 1e3
    has = lat_ms.size > 0
    return {
        "units": int(units),
        "seconds": float(seconds),
        "throughput": float(units / seconds) if seconds > 0 else math.nan,
        "latency_p50_ms": float(np.percentile(lat_ms, 50)) if has else None,
        "latency_p99_ms": float(np.percentile(lat_ms, 99)) if has else None,
        "latency_mean_ms": float(lat_ms.mean()) if has else None,
        "rounds": int(lat_ms.size),
    }


def make_row(base: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """A complete row: ``base`` (job identity and metadata) plus ``fields``; unknown columns are refused."""
    row = {col: None for col in COLUMNS}
    for source in (base, fields):
        for key, value in source.items():
            if key not in row:
                raise KeyError(f"{key!r} is not a results column (harness.results.COLUMNS)")
            row[key] = value
    if row["status"] not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, not {row['status']!r}")
    for key in ("metadata", "params", "extra"):
        if row[key] is not None and not isinstance(row[key], str):
            row[key] = json.dumps(row[key], sort_keys=True, default=str)
    return row


class ResultsWriter:
    """Appends rows to ``<job_dir>/results.csv`` (header once) and per-round latencies beside it."""

    def __init__(self, job_dir: Path | str):
        self.job_dir = Path(job_dir)
        self.path = self.job_dir / RESULTS_FILE
        self.latency_path = self.job_dir / LATENCIES_FILE

    def append(self, row: Mapping[str, Any]) -> None:
        self.job_dir.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists()
        fields = COLUMNS if new else self._header()
        lost = [k for k, v in row.items() if k not in fields and v not in (None, "")]
        if lost:
            raise ValueError(f"{self.path} has an older header without {lost}: move it aside to write these rows")
        with self.path.open("a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})

    def _header(self) -> tuple[str, ...]:
        """The columns of the existing file (an older contract may lack the newest columns)."""
        with self.path.open(newline="") as fh:
            return tuple(next(csv.reader(fh), COLUMNS))

    def append_latencies(self, repetition: int, latencies_s: Iterable[float]) -> None:
        self.job_dir.mkdir(parents=True, exist_ok=True)
        new = not self.latency_path.exists()
        with self.latency_path.open("a", newline="") as fh:
            writer = csv.writer(fh)
            if new:
                writer.writerow(["repetition", "round", "latency_ms"])
            writer.writerows((repetition, i, f"{s * 1e3:.6f}") for i, s in enumerate(latencies_s))
