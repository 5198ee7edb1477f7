"""Who measured, where and with what: the ``metadata`` column of every results row."""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any, Mapping

import psutil

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("ray", "torch", "numpy", "gymnasium", "ale-py", "hydra-core", "pettingzoo", "mpe2", "reactorbench")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else "-"
    except (OSError, subprocess.SubprocessError):
        return "-"


@functools.lru_cache(maxsize=1)
def machine_metadata() -> dict[str, Any]:
    """Facts that do not change during a sweep (cached: git and /proc are read once per process)."""
    return {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in PACKAGES},
        "git_sha": _git("rev-parse", "HEAD"),
        # untracked files count: a new module changes what runs as much as an edited one (ignored files do not)
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=normal")),
    }


#: what a job config may carry besides the measurement: the preset it was named by (two presets that resolve to one
#: configuration measure the same thing, so the name is stored, never hashed)
NAME_KEYS = ("preset",)


def config_hash(config: Mapping[str, Any]) -> str:
    """Short stable hash of the job's resolved configuration (scenario, backend, budget, workers, seed; not the
    preset's name, `NAME_KEYS`)."""
    blob = json.dumps({k: v for k, v in config.items() if k not in NAME_KEYS}, sort_keys=True, default=str).encode()
    return hashlib.blake2b(blob, digest_size=8).hexdigest()


def cpu_affinity() -> list[int]:
    """The CPUs this process (and so the measuring child, which inherits it) may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages when the job starts: a busy machine changes results."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def job_metadata(config: Mapping[str, Any]) -> dict[str, Any]:
    """Machine facts plus this job's start time, configuration hash, thread pinning, CPU affinity and the
    load average at its start (both change results, and both can change between the jobs of a sweep), its
    trial (a deliberate repeat, pooled by the report), and the backend preset it was run with (``preset``: what
    the user typed, ``reactor_threads``; a report names the run's backends by it, `harness.labels.PresetNames`,
    whatever ``conf/backend`` holds when the report is made)."""
    meta = dict(machine_metadata())
    meta["cpu_affinity"] = cpu_affinity()
    meta["load_avg"] = load_average()
    meta["started_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    meta["config_hash"] = config_hash(config)
    meta["omp_num_threads"] = config.get("threads_per_worker", os.environ.get("OMP_NUM_THREADS", ""))
    meta["trial"] = int(config.get("trial", 0) or 0)
    if config.get("preset"):
        meta["preset"] = str(config["preset"])
    return meta
