"""``threads_per_worker``: one setting, applied the same way by every backend in every process that runs roles.

Roles are built at one torch thread (`import_torch`): a process forked from one whose torch
(libgomp) thread pool was started hangs in its first parallel region, so nothing multi-threaded may run before
the reactor's worker processes or the capacity copies are forked. Once every role of a process is built, its
backend calls `apply_threads` there (the measuring process for serial and the in-process reactor executors,
each worker process of the reactor's processes executor, each capacity copy, each Ray actor, each vector env
process), and reports what torch says in a worker while the rounds run (`torch_threads`), recorded in every
row's ``extra`` as ``torch_threads_observed``.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Optional, Union

#: the thread-count variables of OpenMP, MKL and OpenBLAS (read when those libraries load)
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

_first_import = True


def import_torch() -> Any:
    """torch, at one intra-op thread when this process first loads it here: roles are built single-threaded,
    so that no torch thread pool exists when the reactor's or the capacity backend's worker processes are
    forked (a forked process hangs in a pool its parent started). The backend sets ``threads_per_worker``
    once every role is built (`apply_threads`); a role built later does not undo it."""
    global _first_import
    import torch

    if _first_import:
        _first_import = False
        torch.set_num_threads(1)
    return torch


def apply_threads(threads: int) -> Optional[int]:
    """Set this process's thread variables (for the processes it starts later) and, when torch is loaded, its
    intra-op thread count; returns `torch_threads` afterwards."""
    for var in THREAD_VARS:
        os.environ[var] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    return torch_threads()


def torch_threads() -> Optional[int]:
    """torch's intra-op thread count in this process, or None when no role of it loaded torch."""
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None


def observed(counts: Iterable[Optional[int]]) -> Union[int, list[int], None]:
    """What a row records from the counts read in its workers: the count when they agree, the sorted distinct
    counts when they do not, None when no worker loaded torch."""
    seen = sorted({int(c) for c in counts if c is not None})
    if not seen:
        return None
    return seen[0] if len(seen) == 1 else seen
