"""`harness.hostwatch.wait_until_quiet`: `make proxy` waits for the load average to fall below the cores before its
jobs (their hand-offs count only from a quiet start), and never longer than it was told."""
from __future__ import annotations

import subprocess
import sys

from harness.hostwatch import wait_until_quiet


class FakeHost:
    """A load average that falls by ``step`` per second slept, and the clock those sleeps advance."""

    def __init__(self, load: float, step: float):
        self.now, self.value, self.step, self.slept = 0.0, load, step, []

    def load(self) -> float:
        return self.value

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        self.value = max(0.0, self.value - self.step * seconds)

    def clock(self) -> float:
        return self.now


def test_a_quiet_host_is_not_waited_for(capsys):
    host = FakeHost(load=1.2, step=0.1)
    assert wait_until_quiet(240, cores=2, load=host.load, sleep=host.sleep, clock=host.clock) == 1.2
    assert host.slept == [] and capsys.readouterr().out == ""


def test_a_busy_host_is_waited_for_until_its_load_falls_below_the_cores(capsys):
    host = FakeHost(load=9.0, step=0.1)
    last = wait_until_quiet(240, cores=2, poll_seconds=5, load=host.load, sleep=host.sleep, clock=host.clock)
    assert last < 2 and host.now == 75  # 9 -> 1.5 at 0.1 a second, read every 5 s
    out = capsys.readouterr().out
    assert "waiting up to 240 s for the load average (9.00) to fall below 2 cores" in out and "still" not in out


def test_the_wait_ends_at_its_limit_and_says_the_host_stayed_busy(capsys):
    host = FakeHost(load=9.0, step=0.01)
    last = wait_until_quiet(12, cores=2, poll_seconds=5, load=host.load, sleep=host.sleep, clock=host.clock)
    assert host.now == 12 and host.slept == [5, 5, 2] and last > 2
    assert "still at or above 2 after 12 s" in capsys.readouterr().out


def test_the_command_line_passes_its_limit_on():
    """``--wait-quiet 0``: on a quiet host nothing to say, on a busy one that it stayed busy after 0 s."""
    out = subprocess.run([sys.executable, "-m", "harness.hostwatch", "--wait-quiet", "0"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" or "still at or above" in out.stdout and "after 0 s" in out.stdout
