"""What both measuring children share: a spec made into a scenario, a server and a backend, the row ``extra``
of a timed stretch, the injected extra work, and the error report. Each child keeps only its own loop:
`harness.measure` times repetitions, `harness.compare_child` times blocks for a paired job.

One body means one place where a row's fields are assembled, so a field a backend sets (RLlib's
``torch_threads_observed``, measured in its runners) cannot be overwritten by a default in one child and not
the other.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

#: a pure-Python loop of this many iterations is timed to calibrate the injected extra work
_CALIBRATION_ITERS = 200_000


def pin_threads(threads: int) -> None:
    """One BLAS / torch thread per worker unless configured otherwise (docs/design.md, "Measurement rules")."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


@dataclass
class Job:
    """A spec made real in the measuring child: the scenario, its server and the (not yet started) backend."""

    spec: dict[str, Any]
    scenario: Any
    server: Any
    backend: Any
    #: the ``hello`` message: the row fields known before start-up
    hello: dict[str, Any]
    created_at: float
    #: the job tree's CPU seconds and the wall clock when the current timed stretch began (`cpu_fields`)
    cpu_mark: tuple[float, float] = (0.0, 0.0)


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, the children it reaped, and its live descendants: what the
    backend's processes spent (a Ray actor is not a descendant and is not counted; Ray rows say so)."""
    import psutil

    me = psutil.Process()
    t = me.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in me.children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.Error:
            pass
    return total


def cpu_fields(job: "Job", units: float) -> dict[str, float]:
    """The CPU the job's process tree used per unit of work (and how many cores it kept busy) since the last
    call or `reset_metrics`: the cost of waiting that a throughput hides (a busy-waiting vectorizer burns cores
    to go fast; a sleeping one does not), for every backend alike."""
    now_cpu, now_wall = tree_cpu_seconds(), time.perf_counter()
    cpu0, wall0 = job.cpu_mark
    job.cpu_mark = (now_cpu, now_wall)
    cpu, wall = now_cpu - cpu0, now_wall - wall0
    if wall0 == 0.0 or units <= 0 or wall <= 0:
        return {}
    return {"tree_cpu_ms_per_unit": 1e3 * cpu / units, "tree_cpu_cores_busy": cpu / wall}


def build(spec: dict[str, Any]) -> Job:
    """Threads pinned, then the scenario, its server and the backend of ``spec`` (`harness.runner.job_spec`)."""
    from backends import backend_schema, make_backend  # imports this job's backend module only
    from harness.config import SCENARIO_SCHEMAS, config_object
    from harness.interpreter import running as running_interpreter
    from scenarios import make_scenario

    created = time.perf_counter()
    pin_threads(int(spec["threads_per_worker"]))
    scenario_cfg = config_object(SCENARIO_SCHEMAS[spec["scenario"]["name"]], spec["scenario"])
    backend_cfg = config_object(backend_schema(spec["backend"]["name"]), spec["backend"])
    scenario = make_scenario(scenario_cfg, spec["seed"])
    work = scenario.round_work_seconds()
    hello = {"type": "hello", **running_interpreter(), "unit": scenario.unit,
             "round_work_ms": None if work is None else work * 1e3, **scenario.row_fields()}
    backend = make_backend(backend_cfg, spec["workers"], threads_per_worker=int(spec["threads_per_worker"]))
    return Job(spec, scenario, scenario.make_server(), backend, hello, created)


def row_extra(job: Job, extra_work: "ExtraWork | None" = None, startup: bool = False) -> dict[str, Any]:
    """The ``extra`` of a timed stretch's row: the critical-path split (`harness.phases`), the backend's metrics,
    then what the backend itself recorded (``row_extra`` last: a value measured by the backend, such as RLlib's
    runners' thread count, wins over the base class's default ``torch_threads_observed``)."""
    from harness.phases import server_metrics

    extra = server_metrics(job.server, job.backend)
    if startup:
        extra.update(job.backend.startup_breakdown)  # e.g. Ray: init, actors, compile
    extra.update(job.backend.metrics())  # e.g. the reactor's per-round time breakdown
    extra["torch_threads_observed"] = job.backend.torch_threads_observed()  # read in the workers
    extra.update(job.backend.row_extra)  # e.g. Ray: envs_per_actor, actors; RLlib: its runners' threads
    if extra_work is not None:
        extra.update(extra_work.fields())
    return extra


def reset_metrics(job: Job) -> None:
    """Drop what the warm-up rounds left in the metrics, so a row counts its own timed rounds only."""
    from harness.phases import server_metrics

    server_metrics(job.server, job.backend)
    job.backend.metrics()
    job.cpu_mark = (tree_cpu_seconds(), time.perf_counter())


# ---------------------------------------------------------------- injected extra work (a known effect)

def _spin(n: int) -> int:
    x = 0
    for i in range(n):
        x += i
    return x


def spin_seconds_per_iter(tries: int = 5) -> float:
    """CPU seconds of one iteration of the extra-work loop on this host (the median of ``tries`` timings; CPU
    time, as the rounds it is set against, so a loaded host's waiting counts in neither)."""
    import statistics

    times = []
    for _ in range(tries):
        t0 = time.process_time()
        _spin(_CALIBRATION_ITERS)
        times.append(time.process_time() - t0)
    return statistics.median(times) / _CALIBRATION_ITERS


class ExtraWork:
    """A calibrated extra CPU cost per timed round that changes no result: the harness's known effect.

    ``share`` (``backend.extra_work``, e.g. 0.03) is a fraction of the CPU time the process that calls ``tick``
    (the driver: its rounds are serial with it) spends per round: the median over its warm-up rounds, measured
    by this wrapper, sets how many iterations of a pure-Python loop each later round spends there. Both are
    CPU times (`time.process_time`): a warm-up of a few milliseconds runs in one time slice while a block shares
    a loaded host's cores, so wall times of the two would not compare. For serial the driver does all the work,
    so the effect is ``share`` of the round; for a backend whose workers run elsewhere it is a share of the
    driver's part. The loop slows down with the host as the real work does. What was calibrated goes into
    every row (`fields`)."""

    def __init__(self, share: float, warmup_rounds: int):
        if share < 0:
            raise ValueError(f"extra_work={share}: must be >= 0")
        if share > 0 and warmup_rounds < 3:
            raise ValueError(f"extra_work={share} calibrates on the warm-up rounds: budget.warmup_rounds="
                             f"{warmup_rounds} must be at least 3")
        self.share = float(share)
        self.warmup = int(warmup_rounds)
        self.iters = 0
        self.round_s = float("nan")
        self.iter_s = float("nan")
        self._ticks: list[float] = []

    def before_tick(self) -> None:
        """Called at the end of every round, before the clock's ``tick``: spend the extra cost of a timed round,
        or record a warm-up round's end (and calibrate after the last)."""
        if self.iters:
            _spin(self.iters)
            return
        if len(self._ticks) > self.warmup:
            return
        self._ticks.append(time.process_time())
        if len(self._ticks) == self.warmup:  # the warm-up's last round is ending: the next round is timed
            self._calibrate()

    def _calibrate(self) -> None:
        import numpy as np

        gaps = np.diff(np.asarray(self._ticks[1:], dtype=float))  # the first round may hold one-off costs
        if gaps.size == 0:
            gaps = np.diff(np.asarray(self._ticks, dtype=float))
        self.round_s = float(np.median(gaps))
        self.iter_s = spin_seconds_per_iter()
        self.iters = max(1, int(round(self.share * self.round_s / self.iter_s)))

    def fields(self) -> dict[str, Any]:
        return {"extra_work": self.share, "extra_work_iters_per_round": self.iters,
                "extra_work_ms_per_round": self.iters * self.iter_s * 1e3 if self.iters else 0.0,
                "extra_work_calibration_round_ms": self.round_s * 1e3, "extra_work_clock": "process CPU time"}


class ExtraWorkClock:
    """A clock that spends `ExtraWork` at the end of each round, then ticks the wrapped clock (every other
    attribute is the wrapped clock's)."""

    def __init__(self, inner: Any, extra: ExtraWork):
        self._inner = inner
        self._extra = extra

    def tick(self) -> None:
        self._extra.before_tick()
        self._inner.tick()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def with_extra_work(clock: Any, spec: dict[str, Any]) -> tuple[Any, ExtraWork | None]:
    """``clock`` wrapped to spend the spec's ``backend.extra_work`` (unchanged, and None, when it is 0)."""
    share = float(spec["backend"].get("extra_work", 0.0) or 0.0)
    if share <= 0:
        return clock, None
    extra = ExtraWork(share, int(spec["budget"]["warmup_rounds"]))
    return ExtraWorkClock(clock, extra), extra


# ---------------------------------------------------------------- the child's entry point

def child_main(body: Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], None],
               acknowledged: frozenset[str] = frozenset(), expected: tuple[type, ...] = ()) -> int:
    """Run ``body(spec, send)`` as a measuring child: the spec on stdin's first line, messages (JSON lines) on the
    file descriptor in ``argv[1]``; a message whose type is in ``acknowledged`` waits for one line on stdin.
    Every failure, during the rounds or after them (the backend's ``stop``), is sent as an ``error`` message
    with its traceback and exits 1; an exception of a type in ``expected`` ends the child normally."""
    out = os.fdopen(int(sys.argv[1]), "w", buffering=1)

    def send(msg: dict[str, Any]) -> None:
        out.write(json.dumps(msg) + "\n")
        if msg["type"] in acknowledged and not sys.stdin.readline():
            raise RuntimeError("the harness closed the job's pipe: no parent to store its results")

    spec = json.loads(sys.stdin.readline())
    try:
        try:
            body(spec, send)
        except expected:
            pass
    except BaseException as exc:  # noqa: BLE001 - every failure becomes an error row in the parent
        send({"type": "error", "message": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        out.close()
        return 1
    out.close()
    return 0
