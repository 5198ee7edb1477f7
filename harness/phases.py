"""Where a round's wall time went, by critical path: one definition for every backend.

A scenario's server reports what its results say (each worker's own seconds per round,
`scenarios.base.Server.worker_seconds`, and the rounds' and learner's seconds in ``metrics()``); the backend
reports where the workers ran (`backends.base.Backend.process_of_worker`). Only together do they give the
round's critical path, so the split is made here, not in the scenario (which knows no layout) nor in each
backend (which would then define it once per framework).

*sampling* = per round, the longest per-process sum of the workers' seconds (the workers of one process run
one after another, different processes in parallel); *training* = the server's learner step; *communication*
= the rest of the round (moving messages, synchronization, scheduling). Serial runs every worker in one
process, so its sampling is the sum of all of them and its communication is near zero.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def critical_sampling(worker_seconds: np.ndarray, process_of_worker: Sequence[int]) -> float:
    """Sum over rounds of the longest per-process sum of worker seconds (``rounds x workers`` in)."""
    where = np.asarray(list(process_of_worker), dtype=np.int64)
    seconds = np.asarray(worker_seconds, dtype=float)
    if where.ndim != 1 or (where < 0).any():
        raise ValueError(f"process_of_worker must be one process index >= 0 per worker, got {process_of_worker!r}")
    if seconds.ndim != 2 or seconds.shape[1] != where.size:
        raise ValueError(f"worker seconds of shape {seconds.shape} for {where.size} workers")
    if seconds.shape[0] == 0:
        return 0.0
    per_process = seconds @ np.eye(int(where.max()) + 1)[where]  # rounds x processes
    return float(per_process.max(axis=1).sum())


def split_round_time(metrics: dict[str, Any], worker_seconds: np.ndarray | None,
                     process_of_worker: Sequence[int] | None) -> dict[str, float]:
    """``sampling_s``, ``communication_s`` and ``processes`` for a row's ``extra``, from the server's
    ``metrics()`` (``rounds_s``, ``training_s``) and worker seconds of the same rounds and the backend's
    layout; empty when any of them is missing (the split is never guessed)."""
    if worker_seconds is None or process_of_worker is None or "rounds_s" not in metrics:
        return {}
    sampling = critical_sampling(worker_seconds, process_of_worker)
    training = float(metrics.get("training_s", 0.0))
    return {
        "sampling_s": sampling,
        "communication_s": max(0.0, float(metrics["rounds_s"]) - sampling - training),
        "processes": float(len(set(int(p) for p in process_of_worker))),
    }


def server_metrics(server: Any, backend: Any) -> dict[str, float]:
    """The server's ``metrics()`` for the rounds since the previous call, with the critical-path split."""
    seconds = server.worker_seconds()  # before metrics(), which clears it
    out = dict(server.metrics())
    out.update(split_round_time(out, seconds, backend.process_of_worker))
    return out
