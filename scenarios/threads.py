"""``threads_per_worker``: one setting, applied the same way by every backend in every process that runs roles.

Roles are built at one torch thread (`import_torch`): a process forked from one whose torch
(libgomp) thread pool was started hangs in its first parallel region, so nothing multi-threaded may run before
the reactor's worker processes or the capacity copies are forked. Once every role of a process is built, its
backend calls `apply_threads` there (the measuring process for serial, each worker process of the reactor's
processes executor, each capacity copy, each Ray actor, each vector env process), and reports what torch says
in a worker while the rounds run (`torch_threads`), recorded in every row's ``extra`` as
``torch_threads_observed``. The reactor's in-process executors (inline, threads) fork nothing: their backend
calls `apply_threads` once before the program runs, in the calling thread, and the threads executor's own
threads each call `apply_threads_here` as they start (torch's count is per thread); a role that loads torch
afterwards gets that count from `import_torch`. (The threads executor builds its roles in startup reactions
on several threads at once, which must not each write the process's environment.)

Thread safety (free-threaded Python): `import_torch` and `apply_threads` take one lock, so a process's
settings change in one piece (the three variables and torch's count together) and no caller gets torch
before its count is set; `apply_threads` writes only what differs, so calling it again is cheap.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any, Iterable, Optional, Union

#: the thread-count variables of OpenMP, MKL and OpenBLAS (read when those libraries load)
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

#: guards `_pinned` and `_applied`, and every write of the thread settings
_lock = threading.Lock()
#: torch's thread count was set by `import_torch` (or `apply_threads`) since torch loaded in this process
_pinned = False
#: the count `apply_threads` last set in this process, None before
_applied: Optional[int] = None


def import_torch() -> Any:
    """torch, at one intra-op thread when this process first loads it here (at the count `apply_threads`
    set, if it ran first): roles are built single-threaded, so that no torch thread pool exists when the
    reactor's or the capacity backend's worker processes are forked (a forked process hangs in a pool its
    parent started). The backend sets ``threads_per_worker`` once every role is built (`apply_threads`); a
    role built later does not undo it. Safe from several threads at once: none gets torch before its count
    is set."""
    global _pinned
    import torch

    with _lock:
        if not _pinned:
            torch.set_num_threads(1 if _applied is None else _applied)
            _pinned = True
    return torch


def apply_threads(threads: int) -> Optional[int]:
    """Set this process's thread variables (for the processes it starts later) and, when torch is loaded, its
    intra-op thread count, all under one lock and only what differs; returns `torch_threads` afterwards (read
    under the lock: the count this call set)."""
    global _applied, _pinned
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    value = str(threads)
    with _lock:
        for var in THREAD_VARS:
            if os.environ.get(var) != value:
                os.environ[var] = value
        _applied = threads
        torch = sys.modules.get("torch")
        if torch is not None:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            _pinned = True
        return torch_threads()


def apply_threads_here() -> Optional[int]:
    """This thread's share of the setting, once the process's is applied (`apply_threads`): torch's intra-op
    count is kept per thread (OpenMP's ``nthreads-var``, libgomp: a thread that never set one follows what the
    main thread set), so an executor's own threads that run roles set it at their start, before any reaction
    runs there (the threads executor's ``initializer``); returns `torch_threads` read in this thread."""
    with _lock:
        torch = sys.modules.get("torch")
        if torch is not None and _applied is not None and torch.get_num_threads() != _applied:
            torch.set_num_threads(_applied)
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
