"""Synthetic result sets with known answers, written through the real results contract (make_row, ResultsWriter)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from harness.results import ResultsWriter, make_row

MACHINE = {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "ram_gb": 8.0, "os": "Linux",
           "python": "3.11.7", "versions": {"gymnasium": "1.0.0", "ray": "2.40.0"}, "git_sha": "abc",
           "git_dirty": False}


class Jobs:
    """Writes one job folder per call, like one Hydra job of a sweep."""

    def __init__(self, root: Path):
        self.root = root
        self.count = 0

    def write(self, scenario: str, backend: str, variant: str, workers: int, throughputs: Sequence[float],
              checksums: Optional[Sequence[str]] = None, params: Optional[dict[str, Any]] = None,
              failure: Optional[tuple[str, str]] = None, meta: Optional[dict[str, Any]] = None,
              extras: Optional[Sequence[dict[str, Any]]] = None, round_work_ms: Optional[float] = None,
              latency_ms: Optional[float] = None, rounds: int = 10, started_at: str = "2026-01-01T00:00:00+00:00",
              env_id: str = "CartPole-v1", num_envs: Optional[int] = 4, budget: str = "smoke") -> Path:
        job_dir = self.root / f"{self.count}_{scenario}_{backend}_{variant}_w{workers}"
        self.count += 1
        writer = ResultsWriter(job_dir)
        params = params if params is not None else {"env_id": env_id, "num_envs": num_envs}
        metadata = {**MACHINE, **(meta or {}), "started_at": started_at}
        base = {"scenario": scenario, "backend": backend, "variant": variant, "workers": workers,
                "num_envs": num_envs, "env_id": env_id, "budget": budget, "seed": 0, "params": params,
                "metadata": metadata, "unit": "env_steps", "threads_per_worker": 1, "startup_seconds": 0.5}
        for i, thr in enumerate(throughputs):
            units = 1000
            seconds = units / thr
            lat = latency_ms if latency_ms is not None else seconds / rounds * 1e3
            writer.append(make_row(base, repetition=i, units=units, seconds=seconds, throughput=thr,
                                   latency_p50_ms=lat, latency_p99_ms=lat * 1.5, latency_mean_ms=lat, rounds=rounds,
                                   round_work_ms=round_work_ms,
                                   checksum=(checksums[i] if checksums else f"ck{i}"), status="ok",
                                   extra=(extras[i] if extras else None)))
            writer.append_latencies(i, np.full(rounds, lat / 1e3) * (1 + 0.01 * np.arange(rounds)))
        if failure:
            writer.append(make_row(base, repetition=len(throughputs), status=failure[0], error=failure[1]))
        return job_dir
