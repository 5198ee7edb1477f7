"""Memory is a cost too: peak RSS of a job's whole process tree and the /dev/shm bytes it uses.

Sampled by the parent (the Hydra job), never by the measuring child, so nothing runs inside the timed rounds
but the sampler's own few milliseconds of CPU (twice a second for the first 10 s, then every 2 s). Each sample walks the job's tree (`JobTree`: the
child, reactor workers, Ray's daemons and actors), sums the resident set size of every process (shared pages
count once per process that maps them, as ``ps`` shows them), and adds up the tmpfs bytes allocated to the
``/dev/shm`` files its processes map: the reactor's ports, Ray's object store (plasma) and channels, unlinked
files included. Samples go to ``memory.csv`` beside ``results.csv``; peaks go into every row.
"""
from __future__ import annotations

import csv
import os
import time
from pathlib import Path
from typing import Optional

import psutil

from harness.cleanup import ShmLedger, mapped_shm
from harness.jobtree import JobTree

MEMORY_FILE = "memory.csv"
#: twice a second for the first 10 s (start-up and short jobs), then every 2 s: a sample of a Ray tree (about
#: ten processes, their /proc maps read) costs the parent some 20 ms of CPU, 1% of a core at that pace
SAMPLE_EVERY_S = 0.5
SLOW_EVERY_S = 2.0
FAST_FOR_S = 10.0
MB = 1e6


def shm_bytes_in_use(maps: dict[str, tuple[str, int]], shm_dir: Path = Path("/dev/shm")) -> int:
    """tmpfs bytes allocated to the mapped files (each file once), falling back to the mapped length."""
    used, inodes = 0, set()
    for name, (alt_path, mapped) in maps.items():
        st = None
        for path in (shm_dir / name, alt_path):
            try:
                st = os.stat(path)
                break
            except OSError:
                continue
        if st is None:
            used += mapped
        elif st.st_ino not in inodes:
            inodes.add(st.st_ino)
            used += st.st_blocks * 512
    return used


class MemorySampler:
    """Samples a job's tree every `SAMPLE_EVERY_S` seconds; keeps the peaks and a time series."""

    def __init__(self, tree: JobTree, ledger: ShmLedger, path: Optional[Path] = None,
                 every_s: float = SAMPLE_EVERY_S):
        self.tree, self.ledger, self.path, self.every_s = tree, ledger, path, every_s
        self.t0 = time.monotonic()
        self.next_at = self.t0
        self.last_at = self.t0  # when the last sample was taken
        self.peak_rss_mb = 0.0
        self.peak_shm_mb = 0.0
        self.samples = 0

    def wait_s(self) -> float:
        """Seconds until the next sample is due."""
        return max(0.0, self.next_at - time.monotonic())

    def maybe_sample(self) -> None:
        if time.monotonic() >= self.next_at:
            self.sample()

    def sample(self) -> tuple[float, float, int]:
        """One sample now: (RSS MB summed over the tree, /dev/shm MB in use, processes)."""
        now = time.monotonic()
        self.last_at = now
        self.next_at = now + (self.every_s if now - self.t0 < FAST_FOR_S else max(self.every_s, SLOW_EVERY_S))
        procs = self.tree.walk()
        rss, maps = 0, {}
        for proc in procs:
            try:
                rss += proc.memory_info().rss
            except psutil.Error:
                continue
            maps.update(mapped_shm(proc))
        self.ledger.note_mapped(maps)
        rss_mb, shm_mb = rss / MB, shm_bytes_in_use(maps, self.ledger.shm_dir) / MB
        self.peak_rss_mb = max(self.peak_rss_mb, rss_mb)
        self.peak_shm_mb = max(self.peak_shm_mb, shm_mb)
        self.samples += 1
        if self.path is not None and procs:
            self._write(now - self.t0, rss_mb, shm_mb, len(procs))
        return rss_mb, shm_mb, len(procs)

    def peaks(self) -> dict[str, float]:
        """The row columns: peaks so far (rounded to 0.1 MB)."""
        return {"peak_rss_mb": round(self.peak_rss_mb, 1), "peak_shm_mb": round(self.peak_shm_mb, 3)}

    def _write(self, t: float, rss_mb: float, shm_mb: float, procs: int) -> None:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists()
        with self.path.open("a", newline="") as fh:
            w = csv.writer(fh)
            if new:
                w.writerow(["t_s", "rss_mb", "shm_mb", "processes"])
            w.writerow([f"{t:.2f}", f"{rss_mb:.1f}", f"{shm_mb:.3f}", procs])
