"""A resident of a paired job: one backend's measuring child (`harness.compare_child`), the pipes to it, and
the wait until its processes have gone quiet after a block (`settle`), and the parking of a backend that asks for
it (`Resident.park`: every process of its tree stopped between its blocks). `harness.cycles` runs the cycles over
several residents; this module knows one child and its process tree.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.hostwatch import cpu_ns, tree_pids, wait_stopped
from harness.interpreter import executable as interpreter_executable
from harness.jobtree import JobTree
from harness.runner import job_spec, kill_tree
from harness.watchdog import Watchdog

#: a finished backend counts as quiet once its processes ran less than this per `SETTLE_POLL_S`, twice running
QUIET_NS = 200_000
SETTLE_POLL_S = 0.005
#: at most this long is waited for a backend to go quiet (a backend that never does is recorded as such)
SETTLE_MAX_S = 0.5
#: a parked backend's idle CPU is read over this long once after its warm-up (`Resident.measure_idle`)
IDLE_SAMPLE_S = 0.25


class ChildFailed(RuntimeError):
    def __init__(self, backend: str, status: str, message: str, traceback: str = ""):
        super().__init__(f"{backend}: {status}: {message}")
        self.backend, self.status, self.message, self.traceback = backend, status, message, traceback


class Resident:
    """One backend's measuring child and the pipes to it."""

    def __init__(self, key: str, cfg: dict[str, Any], job_dir: Path):
        self.key = key
        self.cfg = cfg
        self.timeout_s = float(cfg["budget"]["timeout_s"])
        rfd, wfd = os.pipe()
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = str(cfg["threads_per_worker"])
        env["PYTHONUNBUFFERED"] = "1"
        #: ends the child's tree (parked or not) should this process die without doing so (`harness.watchdog`)
        self.watchdog = Watchdog()
        self.child = subprocess.Popen(
            [interpreter_executable(cfg.get("interpreter")), "-m", "harness.compare_child", str(wfd), str(job_dir),
             key],
            stdin=subprocess.PIPE, pass_fds=(wfd,), start_new_session=True, env=env,
            cwd=str(Path(__file__).resolve().parents[1]))
        os.close(wfd)
        self.fd = rfd
        self.pending = b""
        self.lines: list[str] = []
        self.tree = JobTree(self.child.pid)
        self.watchdog.root(self.child.pid)
        self.watchdog.tell(self.tree.walk())
        self.pids: list[int] = [self.child.pid]
        #: the backend asked to be parked between its blocks (its ``warm`` message: `backends.base.Backend.parkable`)
        self.parkable = False
        #: whether its processes are stopped now (`park`)
        self.parked = False
        #: what its tree runs per second when idle (`measure_idle`), and the CPU per `SETTLE_POLL_S` under which it
        #: counts as quiet once continued: back at its idle rate (Ray's daemons never go below it)
        self.idle_ns_per_s = 0.0
        self.quiet_ns = QUIET_NS
        self.send(json.dumps(job_spec(cfg)))

    def send(self, line: str) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write(line.encode() + b"\n")
        self.child.stdin.flush()

    def read(self, timeout_s: float) -> dict[str, Any]:
        """The next message; `ChildFailed` on an error message, a closed pipe or the timeout."""
        deadline = time.monotonic() + timeout_s
        while not self.lines:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise ChildFailed(self.key, "timeout", f"no answer within timeout_s={timeout_s:g}")
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise ChildFailed(self.key, "error", f"measurement process ended (exit code {self.child.poll()})")
            *done, self.pending = (self.pending + chunk).split(b"\n")
            self.lines += [d.decode() for d in done if d]
        msg = json.loads(self.lines.pop(0))
        if msg["type"] == "error":
            raise ChildFailed(self.key, "error", msg["message"], msg.get("traceback", ""))
        return msg

    def expect(self, kind: str) -> dict[str, Any]:
        """Messages up to the next one of type ``kind`` (the others are returned through `on_other`)."""
        while True:
            msg = self.read(self.timeout_s)
            if msg["type"] == kind:
                return msg
            self.on_other(msg)

    def on_other(self, msg: dict[str, Any]) -> None:
        self.last = msg

    def refresh_pids(self) -> None:
        self.tree.walk()
        self.watchdog.tell(self.tree.seen.values())  # before a park: the watchdog knows every process it stops
        self.pids = tree_pids(self.child.pid) or [self.child.pid]

    def park(self) -> None:
        """Stop (SIGSTOP) every process of the child's tree, the child included, until `unpark`: a backend whose
        daemons run timers whatever the workload (Ray) then takes no CPU during the other backends' blocks. The
        child is waiting for its next command on a pipe, which keeps what the parent writes meanwhile. Returns once
        every thread has stopped (`harness.hostwatch.wait_stopped`), so the stopping is not in the next block. Only
        for a backend that asked for it (``parkable``)."""
        if not self.parkable or self.parked:
            return
        self._signal(signal.SIGSTOP)
        wait_stopped(self.pids, SETTLE_MAX_S)  # stopping runs on the tree's account after the signal: not in a block
        self.parked = True

    def measure_idle(self, seconds: float = IDLE_SAMPLE_S) -> float:
        """Settle, then read what the tree runs per second while idle (its daemons' timers: tens of ms per second for
        a local Ray) and set `quiet_ns` to twice that per `SETTLE_POLL_S` (from `QUIET_NS` to five times it):
        continued after a park, the tree is settled once what its timers owe has run, instead of waiting
        `SETTLE_MAX_S` for a quiet that an idle Ray never reaches. The nanoseconds per second."""
        self.refresh_pids()
        settle(self.pids)
        before, t0 = cpu_ns(self.pids), time.perf_counter()
        time.sleep(seconds)
        self.idle_ns_per_s = max(0.0, (cpu_ns(self.pids) - before) / (time.perf_counter() - t0))
        # never more lenient than 1 ms per 5 ms (a fifth of a core): a reading taken while the tree was still busy
        self.quiet_ns = min(5 * QUIET_NS, max(QUIET_NS, int(2 * self.idle_ns_per_s * SETTLE_POLL_S)))
        return self.idle_ns_per_s

    def unpark(self) -> None:
        """Continue (SIGCONT) what `park` stopped; then `settle` lets what its timers owe run before a block."""
        if not self.parked:
            return
        self._signal(signal.SIGCONT, refresh=False)  # a stopped tree started no process since `park`
        self.parked = False

    def _signal(self, sig: int, refresh: bool = True) -> None:
        if refresh:
            self.refresh_pids()
        try:
            os.killpg(self.child.pid, sig)  # the child leads its session's process group: all at once
        except (ProcessLookupError, PermissionError):
            pass
        for pid in self.pids:  # and any process of the tree that left the group
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def finish(self, grace_s: float = 60.0) -> None:
        """Ask the child to stop and wait for it to tear its backend down and exit; `ChildFailed` when it reports
        an error while leaving its rounds or tearing down (its last message), or exits non-zero without one, or
        does not exit within ``grace_s`` seconds."""
        self.unpark()
        self.tree.walk()
        try:
            self.send("stop")
        except (BrokenPipeError, OSError):
            pass
        deadline = time.monotonic() + grace_s
        while True:  # the messages after "stop": none, or the error of the backend's teardown
            try:
                msg = self.read(max(0.0, deadline - time.monotonic()))
            except ChildFailed as exc:
                if exc.status == "error" and exc.message.startswith("measurement process ended"):
                    break  # the pipe closed: the child is gone
                if exc.status == "timeout":
                    raise ChildFailed(self.key, "timeout", f"the backend did not tear down within {grace_s:g} s "
                                                           "after stop") from None
                raise
            self.on_other(msg)
        try:
            code = self.child.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise ChildFailed(self.key, "timeout", f"the measurement process did not exit within {grace_s:g} s "
                                                   "after stop") from None
        if code != 0:
            raise ChildFailed(self.key, "error", f"measurement process exited with code {code} after stop")

    def close(self) -> None:
        """Kill the child's tree (whatever it left) and close the pipes; safe to call twice."""
        if self.fd < 0:
            return
        if self.child.poll() is None:
            self.tree.walk()
        kill_tree(self.child.pid)
        self.child.wait()
        self.watchdog.release()
        try:
            self.child.stdin.close()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError, AttributeError):
            pass
        os.close(self.fd)
        self.fd = -1


def settle(pids: list[int], max_s: float = SETTLE_MAX_S, polls: int = 2, quiet_ns: int = QUIET_NS) -> float:
    """Wait until the processes ``pids`` ran less than ``quiet_ns`` per `SETTLE_POLL_S` in each of ``polls``
    successive windows (one quiet window can be a busy process that the loaded host did not schedule); the
    seconds waited. A window is what passed between two readings: reading a tree of many threads (a Ray
    instance's hundreds) takes milliseconds on a loaded host, so a window can be several times `SETTLE_POLL_S`,
    and its CPU is compared at the same rate (``quiet_ns`` / `SETTLE_POLL_S`), not in absolute nanoseconds."""
    t0 = time.perf_counter()
    before, t_before = cpu_ns(pids), time.perf_counter()
    quiet = 0
    while time.perf_counter() - t0 < max_s:
        time.sleep(SETTLE_POLL_S)
        now, t_now = cpu_ns(pids), time.perf_counter()
        window = max(SETTLE_POLL_S, t_now - t_before)
        quiet = quiet + 1 if (now - before) * SETTLE_POLL_S < quiet_ns * window else 0
        if quiet >= polls:
            break
        before, t_before = now, t_now
    return time.perf_counter() - t0
