"""`cleanup_after(pid)`: what a harness calls after it SIGKILLed a process that was running a program."""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys

import psutil

from reactor_backend import cleanup_after
from reactor_backend.segments import run_prefix

_PROGRAM = """
from reactor_backend import Input, Output, Reactor, Timer, msec, reaction, run, sec
class W(Reactor):
    out = Output()
    t = Timer(0, msec(1))
    @reaction(t, effects=[out])
    def s(self):
        self.out.set(1)
class S(Reactor):
    inp = Input(width=2)
    said = False
    @reaction(inp)
    def g(self):
        if not self.said:
            self.said = True
            print("running", flush=True)
class M(Reactor):
    def __init__(self):
        super().__init__()
        self.b = self.bank(W, 2)
        self.s = S()
        self.connect(self.b.out, self.s.inp)
run(M(), timeout=sec(120), fast=False, executor="processes", workers=2)
"""


def test_cleanup_after_a_killed_caller_removes_its_segments_only():
    proc = subprocess.Popen([sys.executable, "-c", _PROGRAM], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "running"
        workers = psutil.Process(proc.pid).children()
        os.kill(proc.pid, signal.SIGKILL)  # no chance to clean up: its segments stay behind
        proc.wait(timeout=30)
        psutil.wait_procs(workers, timeout=10)  # workers die with the caller (PR_SET_PDEATHSIG)
        left = sorted(os.path.basename(p) for p in glob.glob(f"/dev/shm/{run_prefix(proc.pid)}*"))
        assert left, "a SIGKILLed run leaves its segments"
        assert sorted(cleanup_after(proc.pid)) == left
        assert glob.glob(f"/dev/shm/{run_prefix(proc.pid)}*") == []
        assert cleanup_after(proc.pid) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_run_prefix_does_not_match_another_pid():
    assert run_prefix(12) == "rb-12-" and not run_prefix(123).startswith(run_prefix(12))
