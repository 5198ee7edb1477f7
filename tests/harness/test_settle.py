"""`harness.resident.settle` compares a window's CPU at a rate (``quiet_ns`` per `SETTLE_POLL_S` of the window that
actually passed between two readings), so a busy process is never quiet at the default threshold, and a threshold
above its rate (a parked Ray's idle rate, `Resident.measure_idle`) lets it settle."""
from __future__ import annotations

import subprocess
import sys

from harness.resident import QUIET_NS, SETTLE_POLL_S, settle

#: a process that spins on one core
SPIN = "while True:\n    pass\n"


def test_a_busy_process_never_settles_at_the_default_and_settles_above_its_rate():
    proc = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        assert settle([proc.pid], max_s=0.3) >= 0.3  # never quiet: the whole wait
        # a threshold of two cores per window: what one spinning process runs is below it
        assert settle([proc.pid], max_s=30.0, quiet_ns=int(2 * 1e9 * SETTLE_POLL_S)) < 30.0
    finally:
        proc.kill()
        proc.wait()


def test_a_sleeping_process_settles_at_the_default():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        settle([proc.pid], max_s=5.0)  # its start-up
        assert settle([proc.pid], max_s=30.0, quiet_ns=QUIET_NS) < 30.0
    finally:
        proc.kill()
        proc.wait()
