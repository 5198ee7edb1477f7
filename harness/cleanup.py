"""Nothing left behind after a job, whoever created it: its processes and its /dev/shm entries.

The runner kills the measuring child's session and tree (`harness.runner.kill_tree`); this module covers the
rest. It snapshots ``/dev/shm`` before the child starts, and after the job removes only the entries that
provably belong to the job: created during it (not in the snapshot, by name and inode) and either named after
a process of the job's tree (the first number in the name is one of its pids: ``rb-<pid>-*`` of the reactor
runtime, Ray's ``sem.hdr<pid>-*`` / ``sem.obj<pid>-*`` semaphores) or seen mapped by one of its processes (Ray's
plasma files, any other library's segment). Entries of other jobs and other users of the machine, created at
the same time, match neither rule and stay.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import psutil

from harness.jobtree import JobTree

SHM_DIR = Path("/dev/shm")
_FIRST_NUMBER = re.compile(r"\d+")


def shm_snapshot(shm_dir: Path = SHM_DIR) -> dict[str, int]:
    """Entry name -> inode of everything in ``/dev/shm`` now."""
    out = {}
    try:
        with os.scandir(shm_dir) as it:
            for entry in it:
                try:
                    out[entry.name] = entry.inode()
                except OSError:
                    pass
    except OSError:
        pass
    return out


def first_pid(name: str) -> int | None:
    """The pid a segment's name carries (its first number), e.g. 123 in ``rb-123-4`` and ``sem.hdr123-99``."""
    m = _FIRST_NUMBER.search(name)
    return int(m.group()) if m else None


def tagged_processes(var: str, value: str) -> dict[int, str]:
    """pid -> name of every process whose environment carries ``var=value``: what a job started with that tag in
    its environment left running (Ray's daemons and workers inherit the environment of the job that started them).

    Args:
        var: the environment variable's name.
        value: its value for the job in question.
    """
    out = {}
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.environ().get(var) == value:
                out[proc.pid] = proc.info["name"]
        except (psutil.Error, OSError):
            continue
    return out


@dataclass
class ShmLedger:
    """``/dev/shm`` as found before a job, plus the entries the job's processes were seen mapping."""

    shm_dir: Path = SHM_DIR
    before: dict[str, int] = field(default_factory=dict)
    mapped: set[str] = field(default_factory=set)

    @classmethod
    def snapshot(cls, shm_dir: Path = SHM_DIR) -> "ShmLedger":
        return cls(shm_dir=shm_dir, before=shm_snapshot(shm_dir))

    def note_mapped(self, names: Iterable[str]) -> None:
        self.mapped.update(names)

    def owned(self, pids: set[int]) -> list[str]:
        """Entries created during the job that belong to it (named after one of ``pids``, or mapped by it)."""
        now = shm_snapshot(self.shm_dir)
        new = [n for n, ino in now.items() if self.before.get(n) != ino]
        return sorted(n for n in new if n in self.mapped or first_pid(n) in pids)

    def remove_owned(self, pids: set[int]) -> list[str]:
        """Unlink the job's entries; returns their names."""
        removed = []
        for name in self.owned(pids):
            try:
                (self.shm_dir / name).unlink()
                removed.append(name)
            except FileNotFoundError:
                pass
        return removed


def mapped_shm(proc: psutil.Process) -> dict[str, tuple[str, int]]:
    """``/dev/shm`` files a process maps: name -> (a path to stat it by, even when unlinked; mapped bytes)."""
    out: dict[str, tuple[str, int]] = {}
    try:
        with open(f"/proc/{proc.pid}/maps") as fh:
            for line in fh:
                at = line.find("/dev/shm/")
                if at < 0:
                    continue
                span, path = line[:line.find(" ")], line[at:].rstrip("\n")
                name = path[len("/dev/shm/"):].removesuffix(" (deleted)")
                lo, hi = (int(x, 16) for x in span.split("-"))
                prev = out.get(name)
                out[name] = (f"/proc/{proc.pid}/map_files/{span}", (prev[1] if prev else 0) + hi - lo)
    except OSError:
        pass
    return out


def kill_processes(procs: list[psutil.Process], wait_s: float = 5.0) -> None:
    """SIGKILL every process of ``procs`` (gone ones and ones we may not signal are skipped) and wait up to
    ``wait_s`` for them to be reaped: the one kill loop of the harness (`end_job`, `harness.runner.kill_tree`).
    `ray_backend.lifecycle` keeps its own, after a grace period: it may not import the harness."""
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=wait_s)


def end_job(tree: JobTree, ledger: ShmLedger) -> tuple[int, list[str]]:
    """Kill every process of the job still running and remove its /dev/shm entries.

    Returns (processes killed, entries removed). Called after `kill_tree`, so normally both are about what
    escaped it: processes that left the tree, segments of other libraries than the reactor runtime.
    """
    survivors = tree.survivors()
    kill_processes(survivors)
    return len(survivors), ledger.remove_owned(tree.pids)
