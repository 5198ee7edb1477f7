"""A resident's watchdog (`harness.watchdog`): when the process that started a resident is SIGKILLed while the
resident's tree is stopped (parked), the watchdog kills the tree, leaves no process stopped and removes the tree's
/dev/shm entries; when that process ended the tree itself (`Watchdog.release`), the watchdog touches nothing.

The tree here is two real processes (a child in a session of its own and its own child) stopped with SIGSTOP, as
`harness.resident.Resident.park` stops a Ray resident; the Ray case itself is in tests/ray/test_ray_paired.py."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
SHM = Path("/dev/shm")

#: the parent: starts a watchdog, then a child tree (a child that maps nothing but names a /dev/shm entry after
#: itself, and a grandchild), tells the watchdog, stops the tree, prints the pids and the entry, and sleeps
PARENT = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from harness.jobtree import JobTree
    from harness.watchdog import Watchdog
    wd = Watchdog()
    code = ("import os, subprocess, sys, time\\n"
            "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\\n"
            "name = f'rbwatchdogtest-{os.getpid()}-0'\\n"
            "open('/dev/shm/' + name, 'w').write('x')\\n"
            "print(g.pid, name, flush=True)\\n"
            "time.sleep(600)\\n")
    child = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, start_new_session=True)
    grand, name = child.stdout.readline().split()
    tree = JobTree(child.pid)
    wd.root(child.pid)
    wd.tell(tree.walk())
    os.killpg(child.pid, signal.SIGSTOP)
    if sys.argv[1] == "release":
        wd.release()
    print(child.pid, grand.decode(), name.decode(), wd.proc.pid, flush=True)
    time.sleep(600)
""")


def _gone_or_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait(condition, limit_s: float = 60.0) -> bool:
    """Poll ``condition`` until it holds or ``limit_s`` passes (a guard against hanging, not a timing check)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _start_parent(mode: str) -> tuple[subprocess.Popen, list[int], str]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, mode], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child, grand, name, watchdog = parent.stdout.readline().split()
    return parent, [int(child), int(grand), int(watchdog)], name


def test_a_killed_parent_leaves_no_stopped_tree_and_no_shm_entry():
    parent, (child, grand, watchdog), name = _start_parent("watch")
    try:
        assert _wait(lambda: all(psutil.Process(p).status() == psutil.STATUS_STOPPED for p in (child, grand)))
        assert (SHM / name).exists()
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _wait(lambda: _gone_or_zombie(child) and _gone_or_zombie(grand)), \
            [psutil.Process(p).status() for p in (child, grand) if psutil.pid_exists(p)]
        assert _wait(lambda: _gone_or_zombie(watchdog))  # done, and the watchdog itself does not linger
        assert not (SHM / name).exists()
    finally:
        for pid in (child, grand, watchdog):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        (SHM / name).unlink(missing_ok=True)


def test_a_released_watchdog_touches_nothing():
    parent, (child, grand, watchdog), name = _start_parent("release")
    try:
        assert _wait(lambda: _gone_or_zombie(watchdog))  # released: it exits at once
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        # nothing acts on the tree now: it stays stopped, its entry stays (this test ends it)
        time.sleep(1.0)
        assert all(psutil.Process(p).status() == psutil.STATUS_STOPPED for p in (child, grand))
        assert (SHM / name).exists()
    finally:
        for pid in (child, grand):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        (SHM / name).unlink(missing_ok=True)


@pytest.mark.parametrize("line", ["root 1", "pids 1:0.0", ""])
def test_the_watchdog_exits_quietly_on_done_whatever_it_was_told(line):
    proc = subprocess.Popen([sys.executable, "-m", "harness.watchdog"], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    out, err = proc.communicate(line + "\ndone\n", timeout=60)
    assert proc.returncode == 0 and err == ""
