"""The processes of one job: the measuring child and everything it started, as seen while the job ran.

Ray's daemons, its workers and the reactor's worker processes are descendants of the measuring child, but some
outlive their parent or move to a session of their own. Walking the tree every second and remembering each
process (pid and start time, so a reused pid never matches) lets the runner's clean-up and the memory sampler
cover every process the job created, even one that is no longer below the child when the job ends.
"""
from __future__ import annotations

import psutil


class JobTree:
    """Every process of a job's tree seen so far, rooted at the measuring child."""

    def __init__(self, root_pid: int):
        self.root_pid = root_pid
        self.seen: dict[int, psutil.Process] = {}

    def walk(self) -> list[psutil.Process]:
        """The tree's processes alive now (root first); each is remembered for the clean-up."""
        try:
            root = psutil.Process(self.root_pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        for proc in procs:
            known = self.seen.get(proc.pid)
            if known is None or not known.is_running():  # a new process, or a pid reused since
                self.seen[proc.pid] = proc
        # a remembered process that left the tree (re-parented) but still runs is still the job's
        extra = [p for pid, p in self.seen.items() if pid not in {q.pid for q in procs} and _alive(p)]
        return procs + extra

    @property
    def pids(self) -> set[int]:
        """Pids of every process seen (alive or not): names of /dev/shm entries are matched against them."""
        return set(self.seen) | {self.root_pid}

    def survivors(self) -> list[psutil.Process]:
        """Processes of the job that still run (same pid and start time as when seen)."""
        return [p for p in self.seen.values() if _alive(p)]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
