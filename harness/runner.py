"""The isolated measurement runner: one fresh child process per measurement, a hard timeout, tidy rows.

The parent (the Hydra job) starts ``python -m harness.measure`` in a new session, reads its messages, and
appends one row per finished repetition to ``results.csv`` as it arrives. On an error, a timeout, or Ctrl-C
it kills the child's whole process tree (Ray's daemons and reactor workers included), asks the reactor
runtime to remove what those processes left (``reactor_backend.cleanup_after``: its shared-memory
segments), writes an ``error`` or ``timeout`` row, and reports failure to the caller; rows already on disk
stay. Messages are JSON lines on a pipe, read unbuffered (`read_lines`), so none waits in a buffer. After every job,
`harness.cleanup.end_job` also kills any process of the job that left the tree and removes every other
``/dev/shm`` entry the job created (Ray's semaphores, plasma files); `harness.memory` samples the tree's
peak memory for the rows.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np
import psutil

from harness.cleanup import ShmLedger, end_job, kill_processes
from harness.interpreter import DEFAULT as DEFAULT_INTERPRETER
from harness.interpreter import describe as describe_interpreter
from harness.interpreter import executable as interpreter_executable
from harness.interpreter import label as interpreter_label
from harness.interpreter import skip_reason
from harness.jobtree import JobTree
from harness.memory import MEMORY_FILE, MemorySampler
from harness.metadata import job_metadata
from harness.results import ResultsWriter, make_row, timing_fields
from reactor_backend import cleanup_after


#: while rounds run the parent samples the job's memory only when the child reports (progress at most every
#: 0.5 s, repetitions) and waits for it: a sample takes a core for milliseconds. A job that reports nothing
#: for this long (rounds of many seconds) is sampled anyway, so that the tree is still walked.
BLIND_S = 10.0


class MeasurementFailed(RuntimeError):
    """The measurement ended with status ``error`` or ``timeout`` (its row is on disk)."""


@dataclass
class JobOutcome:
    status: str
    rows: int
    message: str = ""
    checksums: list[str] = field(default_factory=list)
    #: what the job's tree still held when it ended (before the clean-up removed it): on a clean finish a
    #: backend should leave nothing, so anything here is a leak of the backend (the soak checks it)
    leftover_processes: int = 0
    leftover_shm: list[str] = field(default_factory=list)


def backend_variant(backend: dict[str, Any]) -> str:
    """The results row's ``variant`` (the reactor executor, the Ray mode, or ``-``), as the backend's own
    module says (`backends.backend_variant`). Raises ValueError on a bad value (e.g. Ray's
    ``envs_per_actor``), so the job fails before it starts."""
    from backends import backend_variant as variant

    return variant(backend)


def interpreter_variant(variant: str, info: dict[str, Any]) -> str:
    """The row's variant on another interpreter: ``threads ft`` (free-threaded), ``threads py3.12.1``."""
    tag = "ft" if info["free_threaded"] else f"py{info['version']}"
    return tag if variant in ("", "-") else f"{variant} {tag}"


def on_interpreter(base: dict[str, Any], cfg: dict[str, Any]) -> str | None:
    """Fit a job's row base to its interpreter (``cfg['interpreter']``); returns why the job cannot run there
    (a package it needs is missing), or None. On another interpreter than this one, rows are told apart by
    the variant (``reactor:threads ft``) and the metadata's python and package versions are the child's."""
    python = interpreter_executable(cfg.get("interpreter"))
    if python == sys.executable:
        return None
    info = describe_interpreter(python)
    base["variant"] = interpreter_variant(base["variant"], info)
    base["interpreter"] = interpreter_label(info["version"], info["free_threaded"])
    base["metadata"]["python"] = base["interpreter"]
    base["metadata"]["versions"] = info["versions"]
    return skip_reason(cfg)


def job_spec(cfg: dict[str, Any]) -> dict[str, Any]:
    """The part of the resolved config that defines the measurement (sent to the child, hashed)."""
    spec = {k: cfg[k] for k in ("scenario", "backend", "budget", "workers", "seed", "threads_per_worker")}
    spec["trial"] = cfg.get("trial", 0)
    if cfg.get("interpreter", DEFAULT_INTERPRETER) != DEFAULT_INTERPRETER:  # (default: hashes as before)
        spec["interpreter"] = cfg["interpreter"]
    if cfg.get("extra_work_wrapped"):  # a paired job that injects: every resident's clock is wrapped (harness.child)
        spec["extra_work_wrapped"] = True
    if cfg.get("preset"):  # the backend preset's name: stored in the rows' metadata, never hashed
        spec["preset"] = cfg["preset"]
    return spec


def kill_tree(pid: int) -> None:
    """SIGKILL a process, its session and every descendant; remove their reactor shm segments."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    pids = {p.pid for p in procs} | {pid}
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    kill_processes(procs)
    for dead in pids:
        cleanup_after(dead)


def read_lines(fd: int, deadline: float, on_wake: Callable[[], Any] | None = None,
               wake_s: Callable[[], float] | None = None) -> Iterator[str]:
    """Each complete line written to pipe ``fd``, as soon as it arrives, until the writer closes its end.

    Raises ``TimeoutError`` once ``time.monotonic()`` passes ``deadline``, after yielding every complete line
    that was in the pipe by then. Reads are raw ``os.read`` calls split into lines here: a buffered reader
    could hold a second line that ``select`` never reports, delaying it until the next write or losing it at
    a timeout. ``on_wake`` (e.g. a memory sampler) is called after every wait, which lasts at most
    ``wake_s()`` seconds when given.
    """
    pending = b""
    while True:
        now = time.monotonic()
        late = now >= deadline
        wait = 0.0 if late else deadline - now
        if wake_s is not None:
            wait = min(wait, max(0.0, wake_s()))
        ready, _, _ = select.select([fd], [], [], wait)
        if on_wake is not None:
            on_wake()
        if not ready:
            if late:
                raise TimeoutError
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:  # the writer closed its end: it finished or died
            if pending:
                yield pending.decode()
            return
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            yield line.decode()
        if late:  # one last read of what was there at the deadline, then stop
            raise TimeoutError


def run_measurement(
    cfg: dict[str, Any],
    job_dir: Path,
    on_progress: Optional[Callable[[int, int], None]] = None,
) -> JobOutcome:
    """Measure one job in a child process; append its rows to ``job_dir/results.csv``."""
    spec = job_spec(cfg)
    budget = cfg["budget"]
    scenario = cfg["scenario"]
    writer = ResultsWriter(job_dir)
    base: dict[str, Any] = {
        "scenario": scenario["name"],
        "backend": cfg["backend"]["name"],
        "variant": backend_variant(cfg["backend"]),
        "workers": cfg["workers"],
        "num_envs": scenario.get("num_envs"),
        "env_id": scenario.get("env_id", "-"),
        "budget": budget["name"],
        "seed": cfg["seed"],
        "threads_per_worker": cfg["threads_per_worker"],
        "params": {k: v for k, v in scenario.items() if k != "name"},
        "metadata": job_metadata(spec),
        "unit": None,
    }
    python = interpreter_executable(cfg.get("interpreter"))
    reason = on_interpreter(base, cfg)
    if reason is not None:
        writer.append(make_row(base, repetition=0, status="skipped", error=reason))
        return JobOutcome(status="skipped", rows=0, message=reason)
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(cfg["threads_per_worker"])
    env["PYTHONUNBUFFERED"] = "1"
    rfd, wfd = os.pipe()
    ledger = ShmLedger.snapshot()  # /dev/shm as found: the clean-up removes only what the job added
    child = subprocess.Popen(
        [python, "-m", "harness.measure", str(wfd), str(job_dir)],  # the dir names it in `ps`
        stdin=subprocess.PIPE,
        pass_fds=(wfd,),
        start_new_session=True,
        env=env,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    os.close(wfd)
    tree = JobTree(child.pid)
    sampler = MemorySampler(tree, ledger, job_dir / MEMORY_FILE)
    outcome = JobOutcome(status="ok", rows=0)
    deadline = time.monotonic() + float(budget["timeout_s"])
    timed = False  # True from the first round on: the parent works only while the child waits for it

    def wake_s() -> float:
        # start-up: sample on time; rounds: sample when the child reports (below), or after BLIND_S without a word
        return min(1.0, sampler.wait_s()) if not timed else max(0.0, sampler.last_at + BLIND_S - time.monotonic())

    def on_wake() -> None:
        if not timed:
            sampler.maybe_sample()
        elif time.monotonic() >= sampler.last_at + BLIND_S:
            sampler.sample()

    def acknowledge() -> None:
        """Let the child go on with its rounds: what it sent is stored (see harness.measure)."""
        sampler.maybe_sample()
        try:
            child.stdin.write(b"\n")
            child.stdin.flush()
        except (BrokenPipeError, ValueError):  # the child is gone: its end of the loop comes next
            pass

    try:
        assert child.stdin is not None
        child.stdin.write(json.dumps(spec).encode() + b"\n")
        child.stdin.flush()
        failure: Optional[tuple[str, str]] = None
        try:
            for line in read_lines(rfd, deadline, on_wake=on_wake, wake_s=wake_s):
                msg = json.loads(line)
                kind = msg["type"]
                if kind == "hello":
                    base["unit"] = msg["unit"]
                    base["num_envs"] = msg.get("num_envs", base["num_envs"])
                    base["env_id"] = msg.get("env_id", base["env_id"])
                    base["round_work_ms"] = msg.get("round_work_ms")
                    base["interpreter"] = msg.get("interpreter")
                elif kind == "started":
                    base["startup_seconds"] = msg["startup_seconds"]
                    sampler.sample()  # everything is up; the timed rounds have not begun (warm-up runs)
                    timed = True
                elif kind == "progress":
                    if on_progress is not None:
                        on_progress(msg["done"], msg["total"])
                    acknowledge()
                elif kind == "repetition":
                    if msg["index"] == int(budget["repetitions"]) - 1:
                        sampler.sample()  # the last timed round is done: the state at the end of the run
                    lat = np.asarray(msg["latencies"], dtype=float)
                    row = make_row(base, repetition=msg["index"], status="ok", checksum=msg["checksum"],
                                   gil_enabled=msg.get("gil_enabled"),
                                   extra=msg["extra"] or None, **timing_fields(msg["units"], msg["seconds"], lat),
                                   **sampler.peaks())
                    writer.append(row)
                    writer.append_latencies(msg["index"], lat)
                    outcome.rows += 1
                    outcome.checksums.append(msg["checksum"])
                    acknowledge()
                elif kind == "error":
                    failure = ("error", msg["message"])
                    (job_dir / "error.txt").write_text(msg["traceback"])
                    sys.stderr.write(msg["traceback"])
        except TimeoutError:
            failure = ("timeout", f"measurement exceeded timeout_s={budget['timeout_s']}")
        if failure is None:
            try:
                code = child.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                failure = ("timeout", f"measurement exceeded timeout_s={budget['timeout_s']} at exit")
            else:
                if code != 0:
                    failure = ("error", f"measurement process exited with code {code}")
    except BaseException:  # Ctrl-C or a bug here: the child must not outlive us; finished rows stay
        kill_tree(child.pid)
        child.wait()
        end_job(tree, ledger)
        raise
    finally:
        os.close(rfd)
        if child.stdin is not None:
            try:
                child.stdin.close()
            except BrokenPipeError:
                pass
    sampler.sample()  # the last look at the tree (every pid of it is remembered for the clean-up)
    outcome.leftover_processes = len([p for p in tree.survivors() if p.pid != child.pid])
    outcome.leftover_shm = ledger.owned(tree.pids)
    kill_tree(child.pid)  # also reaps anything a backend left behind
    child.wait()
    end_job(tree, ledger)  # what escaped the tree kill: re-parented processes, other libraries' /dev/shm entries
    if failure is not None:
        status, message = failure
        writer.append(make_row(base, repetition=outcome.rows, status=status, error=message, **sampler.peaks()))
        outcome.status, outcome.message = status, message
    return outcome
