"""Checks against this machine's resources, before anything runs: a payload must fit in /dev/shm and in
memory, and the backend module may refuse what it cannot run (its optional ``job_errors``).

`harness.config.RANGES` holds the limits every machine shares; these depend on the machine. A payload larger
than ``/dev/shm`` cannot cross processes through shared memory (the reactor's ports, Ray's object store), and
on tmpfs the failure would come late and hard (SIGBUS on a write to a sparse segment, or the OOM killer
choosing some process of the machine). Refusing the job up front gives a clear error instead, names the key
and the value, and leaves nothing behind.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psutil

SHM_DIR = Path("/dev/shm")
#: payload copies alive at once in the actors round: the server's array, its broadcast, and per client the
#: received view's copy and the returned value (a conservative bound, not a measurement)
COPIES_BASE, COPIES_PER_CLIENT = 2, 2


def shm_size_bytes(shm_dir: Path = SHM_DIR) -> int:
    """The size of the tmpfs at ``shm_dir`` in bytes.

    Args:
        shm_dir: the shared-memory mount (``/dev/shm``).
    """
    st = os.statvfs(shm_dir)
    return st.f_blocks * st.f_frsize


def fit_errors(job: dict[str, Any]) -> list[str]:
    """What of the job cannot fit on this machine, as ``key=value: why``: its payload, and what its backend
    module's optional ``job_errors(job)`` refuses (e.g. `backends.puffer`: envs not divisible by workers).

    Args:
        job: the job's configuration as plain dicts (``scenario``, ``backend``, ...).
    """
    return backend_job_errors(job) + payload_errors(job)


def backend_job_errors(job: dict[str, Any]) -> list[str]:
    """The backend module's own pre-flight refusals (its optional ``job_errors(job) -> list[str]``)."""
    name = (job.get("backend") or {}).get("name")
    if not name:
        return []
    from backends import backend_module, backend_names

    if name not in backend_names():
        return []
    check = getattr(backend_module(name), "job_errors", None)
    return [] if check is None else list(check(job))


def payload_errors(job: dict[str, Any]) -> list[str]:
    """A payload larger than /dev/shm, or whose copies exceed this machine's memory."""
    scenario = job.get("scenario") or {}
    payload = scenario.get("payload_bytes")
    if not isinstance(payload, int) or isinstance(payload, bool) or payload <= 0:
        return []
    errors = []
    shm = shm_size_bytes()
    if payload > shm:
        errors.append(f"scenario.payload_bytes={payload}: larger than /dev/shm on this machine ({shm} bytes)")
    clients = int(scenario.get("num_clients") or 1)
    need = payload * (COPIES_BASE + COPIES_PER_CLIENT * clients)
    ram = psutil.virtual_memory().total
    if need > ram:
        errors.append(f"scenario.payload_bytes={payload}: {clients} clients hold about {need} bytes of copies at "
                      f"once, more than this machine's memory ({ram} bytes)")
    return errors
