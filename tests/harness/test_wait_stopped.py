"""`harness.hostwatch.wait_stopped`: a SIGSTOP takes effect as each thread of its target next runs, on the target's
own account, after `kill` has returned (a parked Ray resident's ~220 threads ran 1.7-2.2 ms so on the 2-vCPU VM,
which the next backend's block counted as Ray's); once `wait_stopped` returns, the stopped tree runs nothing more."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from harness.hostwatch import cpu_ns, unstopped_threads, wait_stopped

#: a process of 100 threads that wake every 0.2 ms: stopping it takes each of them a turn on a core
THREADS = ("import threading, time\n"
           "def nap():\n"
           "    while True:\n"
           "        time.sleep(0.0002)\n"
           "for _ in range(100):\n"
           "    threading.Thread(target=nap, daemon=True).start()\n"
           "print('up', flush=True)\n"
           "time.sleep(600)\n")


def test_a_process_stopped_and_waited_for_runs_nothing_more():
    proc = subprocess.Popen([sys.executable, "-c", THREADS], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert unstopped_threads([proc.pid]) > 0  # sleeping threads are not stopped
        after = []
        for _ in range(6):
            os.kill(proc.pid, signal.SIGSTOP)
            assert wait_stopped([proc.pid], max_s=5.0)
            assert unstopped_threads([proc.pid]) == 0
            before = cpu_ns([proc.pid])
            time.sleep(0.05)
            after.append(cpu_ns([proc.pid]) - before)  # without the wait: 0.4-0.65 ms in 5 of 6 tries (2-vCPU VM)
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.05)
        assert after == [0] * 6
    finally:
        proc.kill()
        proc.wait()


def test_gone_processes_count_as_stopped():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert unstopped_threads([proc.pid]) == 0 and wait_stopped([proc.pid], max_s=0.1)
