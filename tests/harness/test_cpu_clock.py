"""CPU time of other processes, read exactly: `harness.hostwatch.process_cpu_ns` / `cpu_ns` and the rows'
`harness.child.TreeCpu`. A row of one 150-ms dqn round used to be rounded to the kernel's 10 ms ticks (psutil), and the
scaling prediction divides by serial's CPU per round: these tests fail on a tick-based reading."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from harness.child import TreeCpu
from harness.hostwatch import cpu_ns, process_cpu_ns

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the per-process CPU clock: Linux")

#: a child that burns CPU in a thread that then ends, and in its main thread, and reports its own CPU clock
#: (all its threads, in nanoseconds) each time a line arrives on stdin
_BURNER = textwrap.dedent("""
    import sys, threading, time

    def burn(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    t = threading.Thread(target=burn, args=(0.013,))
    t.start(); t.join()
    for line in sys.stdin:
        burn(float(line))
        print(time.process_time_ns(), flush=True)
""")


@pytest.fixture
def burner():
    proc = subprocess.Popen([sys.executable, "-c", _BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    yield proc
    proc.kill()
    proc.wait()


def _ask(proc: subprocess.Popen, seconds: float) -> int:
    proc.stdin.write(f"{seconds}\n")
    proc.stdin.flush()
    return int(proc.stdout.readline())


def test_another_process_cpu_is_read_to_the_microsecond_with_its_ended_threads(burner):
    for seconds in (0.0, 0.0037, 0.0152):
        own = _ask(burner, seconds)  # the child now blocks reading stdin: its clock barely moves
        seen = process_cpu_ns(burner.pid)
        # the child's own reading plus what its print and blocking read took: far under a 10 ms tick; the ended
        # thread's 13 ms included (a sum over /proc/<pid>/task would have lost it)
        assert own >= 13_000_000
        assert 0 <= seen - own < 2_000_000, (seen, own)
        assert cpu_ns([burner.pid]) - seen < 2_000_000


def test_a_gone_process_reads_none_and_counts_zero():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: no such process any more
    assert process_cpu_ns(proc.pid) is None
    assert cpu_ns([proc.pid]) == 0


def test_this_process_reads_its_own_process_clock():
    before = process_cpu_ns(os.getpid())
    assert before is not None and 0 < before <= process_cpu_ns(os.getpid())


def test_a_rows_tree_cpu_counts_a_live_child_exactly(burner):
    start = _ask(burner, 0.0)  # the child's own clock; it waits on stdin from here on, but for the burn asked below
    tree = TreeCpu()
    tree.start()
    own0 = time.process_time()
    end = _ask(burner, 0.0061)
    own1 = time.process_time()
    tree.stop()
    cpu, wall = tree.take()
    descendants = cpu - (own1 - own0)  # the tree less this process
    child = (end - start) / 1e9
    # the child's 6.1 ms burn (by its own clock), to well under a millisecond; a tick-based reading moves by 0, 10
    # or 20 ms
    assert child >= 0.0061
    assert abs(descendants - child) < 0.0015, (descendants, child)
    assert wall > 0 and tree.take() == (0.0, 0.0)
