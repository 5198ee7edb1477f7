"""A resident's watchdog: what ends its process tree when the paired job's parent dies without doing so.

A paired job parks a Ray resident by stopping (SIGSTOP) every process of its tree between its blocks
(`harness.resident.Resident.park`). A stopped process notices nothing: if the parent is killed (SIGKILL, the OOM
killer) while a resident is parked, no one continues or ends it, and its tree stays stopped forever, holding its
memory and /dev/shm segments (its group is in a session of its own, so the kernel's orphaned-group SIGHUP/SIGCONT
never reaches it). Each resident therefore has a watchdog: a small process outside the parked tree and in a session
of its own, started before the resident's child, that blocks reading a pipe only the parent writes. The parent sends
the tree's processes (pid and start time, after every walk of the tree) and, when it has ended the tree itself,
``done``. End of file without ``done`` means the parent died: the watchdog then kills every process of the tree
(SIGKILL reaches a stopped process; the group and each known process, a reused pid never matching), continues any
that is still stopped, and removes the /dev/shm entries created since it started that belong to the tree (named after
one of its pids or mapped by one of its processes: `harness.cleanup.ShmLedger`).

Protocol (lines on the watchdog's stdin): ``root <pid>``, ``pids <pid>:<start time> ...`` (cumulative), ``done``;
the watchdog writes ``ready`` on its stdout once it has taken its /dev/shm snapshot.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Optional

import psutil

from harness.cleanup import ShmLedger, kill_processes, mapped_shm

#: the fraction of a second two readings of one process's start time may differ by and still be the same process
_START_SLACK_S = 0.01


class Watchdog:
    """The parent's end: starts the watchdog process and tells it the tree; `release` when the parent itself has
    ended the tree (the watchdog then exits without touching anything)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "harness.watchdog"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, start_new_session=True,
                                     cwd=str(Path(__file__).resolve().parents[1]))
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()  # its /dev/shm snapshot is taken: the child may start
        if ready.strip() != b"ready":
            raise RuntimeError(f"the resident's watchdog did not start (it said {ready!r})")
        self.sent: set[str] = set()

    def _send(self, line: str) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # a watchdog that is gone cannot be told; the parent ends the tree itself as before

    def root(self, pid: int) -> None:
        self._send(f"root {pid}")

    def tell(self, procs: Iterable[psutil.Process]) -> None:
        """The tree's processes seen so far (only the ones not told before are sent)."""
        new = []
        for p in procs:
            try:
                key = f"{p.pid}:{p.create_time():.3f}"
            except psutil.Error:
                continue
            if key not in self.sent:
                self.sent.add(key)
                new.append(key)
        if new:
            self._send("pids " + " ".join(new))

    def release(self) -> None:
        """The parent ended the tree: the watchdog exits without acting. Safe to call twice."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self._send("done")
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _same(proc: psutil.Process, started: float) -> bool:
    try:
        return abs(proc.create_time() - started) < _START_SLACK_S
    except psutil.Error:
        return False


def end_tree(root: Optional[int], known: dict[int, float], ledger: ShmLedger) -> tuple[int, list[str]]:
    """Kill the tree of ``root`` and every process of ``known`` (pid -> start time) still running as itself,
    continue any left stopped, and remove the tree's /dev/shm entries created since ``ledger``'s snapshot;
    (processes killed, entries removed)."""
    procs: dict[int, psutil.Process] = {}
    for pid, started in known.items():
        try:
            p = psutil.Process(pid)
        except psutil.Error:
            continue
        if _same(p, started):
            procs[pid] = p
    if root is not None:
        try:
            r = psutil.Process(root)
            if root not in known or _same(r, known[root]):
                for p in [r, *r.children(recursive=True)]:
                    procs.setdefault(p.pid, p)
        except psutil.Error:
            pass
    for p in procs.values():  # what they map, read while they still exist (Ray's plasma files)
        ledger.note_mapped(mapped_shm(p))
    if root is not None and root in procs:
        try:
            os.killpg(root, signal.SIGKILL)  # the child leads its session's group: all of it at once
        except (ProcessLookupError, PermissionError):
            pass
    kill_processes(list(procs.values()))
    for p in procs.values():  # SIGKILL ends a stopped process too; one that somehow is not must not stay stopped
        try:
            if p.is_running() and p.status() == psutil.STATUS_STOPPED:
                p.send_signal(signal.SIGCONT)
        except psutil.Error:
            pass
    pids = set(known) | set(procs) | ({root} if root is not None else set())
    return len(procs), ledger.remove_owned(pids)


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)  # a terminal's Ctrl-C or hang-up is the parent's to handle
    ledger = ShmLedger.snapshot()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    root: Optional[int] = None
    known: dict[int, float] = {}
    for raw in sys.stdin.buffer:
        word, _, rest = raw.decode(errors="replace").strip().partition(" ")
        if word == "done":
            return 0
        if word == "root":
            root = int(rest)
        elif word == "pids":
            for item in rest.split():
                pid, _, started = item.partition(":")
                known[int(pid)] = float(started)
    # end of file without "done": the parent died without ending the tree
    if root is not None or known:
        killed, removed = end_tree(root, known, ledger)
        try:
            sys.stderr.write(f"harness.watchdog: the paired job's parent died: killed {killed} process(es) of "
                             f"resident {root}, removed {len(removed)} /dev/shm "
                             f"entr{'y' if len(removed) == 1 else 'ies'}\n")
        except OSError:
            pass  # the parent's stderr may be gone with it
    return 0


if __name__ == "__main__":
    sys.exit(main())
