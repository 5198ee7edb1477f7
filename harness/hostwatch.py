"""What the machine gave a paired job, cycle by cycle: a cheap calibration on every core, CPU steal, and the
CPU time of processes that should be idle.

Why: a VM's speed and its parallel capacity change within seconds (docs/design.md, "Measurement rules"), and
paired blocks cancel a change only when it spans a whole cycle. `CoreProbe` keeps one small resident process
per usable core (pinned to it) that times a fixed pure-Python loop when asked, all cores at once: the series of
those times shows the host's per-core speed, and their spread whether the cores really ran in parallel.
`steal_seconds` reads the hypervisor's steal time (``/proc/stat``). `cpu_ns` reads what a set of processes ran
(each process's CPU clock, nanoseconds; `psutil` cpu_times' 10 ms ticks as a fallback): the harness
uses it to see that backends waiting between their blocks take no core.

``python -m harness.hostwatch CORE`` is the probe process itself (pinned to CORE, one loop per stdin line);
``python -m harness.hostwatch --wait-quiet SECONDS`` waits for a quiet host (`wait_until_quiet`: `make proxy` before its
jobs).
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

import psutil

#: iterations of the calibration loop: a few milliseconds of one core
LOOP_ITERATIONS = 100_000


def calibration_loop(n: int = LOOP_ITERATIONS) -> float:
    """Seconds of a fixed pure-Python loop (interpreter speed of the core it ran on)."""
    t0 = time.perf_counter()
    s = 0
    for i in range(n):
        s += i * i
    return time.perf_counter() - t0


def usable_cores() -> list[int]:
    """The cores this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def wait_until_quiet(max_seconds: float, cores: int | None = None, poll_seconds: float = 5.0, *,
                     load: Callable[[], float] = lambda: os.getloadavg()[0],
                     sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> float:
    """Wait until the 1-minute load average is below the usable cores, or ``max_seconds`` have passed; returns the
    load average read last. Why: a job's hand-offs are read only where it started on a host below that load
    (`harness.report.predict`), and the load average trails the last minutes' work: a proxy run started right after
    a test run began at 9 on 2 cores, and its gym prediction fell back to the default hand-off.

    Args:
        max_seconds: the longest wait.
        cores: the bound (None: `usable_cores`).
        poll_seconds: between two reads.
        load, sleep, clock: the load average, sleep and monotonic clock (replaceable for tests).
    """
    bound = len(usable_cores()) if cores is None else cores
    deadline = clock() + max_seconds
    current = load()
    if current < bound:
        return current
    print(f"waiting up to {max_seconds:.0f} s for the load average ({current:.2f}) to fall below {bound} cores",
          flush=True)
    while current >= bound and clock() < deadline:
        sleep(min(poll_seconds, max(0.0, deadline - clock())))
        current = load()
    print(f"load average {current:.2f}"
          + ("" if current < bound else f": still at or above {bound} after {max_seconds:.0f} s"), flush=True)
    return current


class CoreProbe:
    """One resident process per core; `probe` times the calibration loop on all of them at once."""

    def __init__(self, cores: Iterable[int] | None = None):
        self.cores = list(usable_cores() if cores is None else cores)
        root = str(Path(__file__).resolve().parents[1])
        self.procs = [subprocess.Popen([sys.executable, "-m", "harness.hostwatch", str(c)], cwd=root,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
                      for c in self.cores]
        for p in self.procs:  # each answers once it is pinned and its loop compiled
            if not p.stdout.readline():
                raise RuntimeError("a calibration process did not start")

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def probe(self) -> list[float]:
        """Milliseconds of the loop on each core, all started together."""
        for p in self.procs:
            p.stdin.write(b"\n")
            p.stdin.flush()
        out = []
        for p in self.procs:
            line = p.stdout.readline()
            if not line:
                raise RuntimeError("a calibration process ended")
            out.append(float(line) * 1e3)
        return out

    def close(self) -> None:
        for p in self.procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def __enter__(self) -> "CoreProbe":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def steal_seconds() -> float:
    """CPU seconds the hypervisor gave other guests, summed over this machine's cores since boot (0 where the
    kernel does not report steal)."""
    return float(getattr(psutil.cpu_times(), "steal", 0.0) or 0.0)


def _load_cpu_clock_id() -> Callable[[int], int | None] | None:
    """``clock_getcpuclockid`` from the C library (POSIX; absent on macOS), wrapped: the id of process ``pid``'s CPU
    clock, or None where the process is gone or the call is refused."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.clock_getcpuclockid
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    call.restype = ctypes.c_int

    def clock_id(pid: int) -> int | None:
        out = ctypes.c_int()
        return out.value if call(pid, ctypes.byref(out)) == 0 else None

    return clock_id


_cpu_clock_id = _load_cpu_clock_id()


def process_cpu_ns(pid: int) -> int | None:
    """Nanoseconds of CPU process ``pid`` has run so far, all its threads, those that ended included: the kernel's
    per-process CPU clock (``clock_getcpuclockid``), exact where `psutil`'s cpu_times count 10 ms ticks; None where
    the process is gone (a zombie still reads its total) or the platform has no such clock."""
    if pid == os.getpid():
        return time.process_time_ns()
    clock = _cpu_clock_id(pid) if _cpu_clock_id is not None else None
    if clock is None:
        return None
    try:
        return time.clock_gettime_ns(clock)
    except OSError:  # it ended between the two calls
        return None


def cpu_ns(pids: Iterable[int]) -> int:
    """Nanoseconds of CPU the processes ``pids`` (all their threads) have run so far (`process_cpu_ns`; `psutil`'s
    10 ms ticks where that clock cannot be read); gone ones count 0."""
    total = 0
    for pid in pids:
        ns = process_cpu_ns(pid)
        if ns is None:
            try:
                t = psutil.Process(pid).cpu_times()
                ns = int((t.user + t.system) * 1e9)
            except psutil.Error:
                ns = 0
        total += ns
    return total


def pin_process(pid: int, cpus: Iterable[int]) -> bool:
    """Restrict every thread of process ``pid`` to ``cpus`` (an affinity is per thread: the process's own call
    would reach its main thread only); False where the process is gone or the call is refused."""
    cpus = set(cpus)
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return False
    done = False
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
            done = True
        except OSError:  # a thread that ended meanwhile
            pass
    return done


def tree_pids(root: int) -> list[int]:
    """The pid of ``root`` and of all its descendants alive now."""
    try:
        proc = psutil.Process(root)
        return [root, *(c.pid for c in proc.children(recursive=True))]
    except psutil.Error:
        return []


#: thread states that run nothing more: stopped by a signal or a tracer, zombie, dead (`/proc/<pid>/task/<tid>/stat`)
HALTED_STATES = frozenset("TtZX")


def unstopped_threads(pids: Iterable[int]) -> int:
    """How many threads of the processes ``pids`` are not halted (`HALTED_STATES`); gone ones count 0."""
    count = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0].decode()
            except (OSError, IndexError):
                continue
            count += state not in HALTED_STATES
    return count


def wait_stopped(pids: Iterable[int], max_s: float = 0.5, poll_s: float = 0.001) -> bool:
    """Wait until every thread of ``pids`` has stopped after a SIGSTOP; whether they all did within ``max_s``.
    `kill` returns before its targets stop: each thread stops as it next runs (a sleeping one is woken to), and
    that runs on its own account after `kill` returned: 1.7-2.2 ms of CPU for a local Ray's ~220 threads on the
    2-vCPU VM, which a block started at once would count as theirs."""
    pids = list(pids)
    deadline = time.perf_counter() + max_s
    while unstopped_threads(pids):
        if time.perf_counter() >= deadline:
            return False
        time.sleep(poll_s)
    return True


def _serve(core: int) -> None:
    try:
        os.sched_setaffinity(0, {core})
    except (AttributeError, OSError):
        pass
    calibration_loop(1000)
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for _ in sys.stdin:
        out.write(f"{calibration_loop():.9f}\n")
        out.flush()


def cpus_of(pids: Iterable[int]) -> list[int]:
    """The CPU each of ``pids`` last ran on (-1 for a process that is gone): where a resident sat during its
    block, recorded so that an offset between identical residents can be traced to their placement."""
    out = []
    for pid in pids:
        try:
            out.append(int(psutil.Process(pid).cpu_num()))
        except (psutil.Error, OSError):
            out.append(-1)
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--wait-quiet":
        wait_until_quiet(float(sys.argv[2]))
    else:
        _serve(int(sys.argv[1]))
