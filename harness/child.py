"""What both measuring children share: a spec made into a scenario, a server and a backend, the row ``extra``
of a timed stretch, the injected extra work, and the error report. Each child keeps only its own loop:
`harness.measure` times repetitions, `harness.compare_child` times blocks for a paired job.

One body means one place where a row's fields are assembled, so a field a backend sets (RLlib's
``torch_threads_observed``, measured in its runners) cannot be overwritten by a default in one child and not
the other.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.results import TIMED_CPU_WINDOW


def pin_threads(threads: int) -> None:
    """One BLAS / torch thread per worker unless configured otherwise (docs/design.md, "Measurement rules")."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


class TreeCpu:
    """CPU seconds the job's process tree ran during the clock's timed stretches (`start` when its timer runs,
    `stop` when it stops), and their wall time: this process, its live descendants and the children it reaped.

    Why only the timed stretches: a row's CPU per unit is its rounds' cost, compared across backends and divided
    into by the scaling prediction; the harness's own work between blocks (the row, the messages) and a resident
    backend's waiting while others run their blocks are no part of it. The live processes are read on their CPU
    clocks (`harness.hostwatch.cpu_ns`: nanoseconds, ended threads included), so a row of one 150-ms round is exact;
    children reaped meanwhile count in the kernel's 10 ms ticks. The descendants are listed (psutil scans every
    process: about a millisecond and a half) after each stretch, for the next one, and at the first `start`: never
    right before a block, where it would leave the block's first rounds its cold caches. A Ray actor is not a
    descendant and is not counted; Ray rows say so."""

    def __init__(self) -> None:
        self._pids: list[int] | None = None  # the tree's processes, listed after the last stretch
        self._at: tuple[float, float] | None = None  # tree CPU and wall clock where the running stretch began
        self.cpu = self.wall = 0.0

    @staticmethod
    def _scan() -> list[int]:
        import psutil

        me = psutil.Process()
        try:
            return [me.pid] + [c.pid for c in me.children(recursive=True)]
        except psutil.Error:
            return [me.pid]

    def _read(self, pids: list[int]) -> float:
        import psutil

        from harness.hostwatch import cpu_ns

        t = psutil.Process().cpu_times()
        return t.children_user + t.children_system + cpu_ns(pids) / 1e9

    def start(self) -> None:
        if self._pids is None:
            self._pids = self._scan()
        self._at = (self._read(self._pids), time.perf_counter())

    def stop(self) -> None:
        if self._at is None:
            return
        cpu0, wall0 = self._at
        self._at = None
        self.cpu += self._read(self._pids or []) - cpu0
        self.wall += time.perf_counter() - wall0
        self._pids = self._scan()  # for the next stretch, now that this one has ended

    def take(self) -> tuple[float, float]:
        """The CPU and wall seconds counted since the previous call, and start again from zero."""
        out = (self.cpu, self.wall)
        self.cpu = self.wall = 0.0
        return out


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
    #: the CPU its process tree ran while the clock's timer ran (`counting_timer`, `cpu_fields`)
    cpu: TreeCpu = field(default_factory=TreeCpu)


def counting_timer(job: Job) -> Callable[[bool], None]:
    """The clock's timer listener for ``job``: its `TreeCpu` counts while the timer runs, and the backend's own
    ``timer`` hears every change (told after the count starts and before it stops)."""
    def on_timer(running: bool) -> None:
        if running:
            job.cpu.start()
            job.backend.timer(True)
        else:
            job.backend.timer(False)
            job.cpu.stop()

    return on_timer


def cpu_fields(job: Job, units: float) -> dict[str, float]:
    """The CPU the job's process tree used per unit of work during the timed stretches since the last call or
    `reset_metrics` (and how many cores it kept busy meanwhile): the cost of waiting that a throughput hides (a
    busy-waiting vectorizer burns cores to go fast; a sleeping one does not), for every backend alike."""
    cpu, wall = job.cpu.take()
    if units <= 0 or wall <= 0:
        return {}
    return {"tree_cpu_ms_per_unit": 1e3 * cpu / units, "tree_cpu_cores_busy": cpu / wall,
            # what the two count over (earlier versions: from row to row, which a paired job's waits diluted)
            "tree_cpu_window": TIMED_CPU_WINDOW}


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
    job.cpu.take()


# ---------------------------------------------------------------- injected extra work (a known effect)

class ExtraWork:
    """A known extra cost per timed round that changes no result: the harness's injected effect.

    ``share`` (``backend.extra_work``, e.g. 0.03): at the end of each timed round, the process that ticks the clock
    (the driver) busy-waits for ``share`` of that round's own wall time, measured from the moment the previous
    tick returned (so a pause between blocks, which happens inside the tick, is never counted). The round then
    takes ``1 + share`` times as long, whatever the host does during it: the throughput an identical copy without
    it should show over this one is ``1 + share``, and the ratio the self-test expects is ``1 / (1 + share)``.

    Why: an injected copy once read about a point slower than its name, so an effect called then was larger than its
    name. The loop it ran cost its share in CPU time; the rest was the wrapper's own calls, cold after the round's
    work, which only the injected copy paid (the readings: results/reference/README.md, "Timed, not kept"). So
    every resident of a paired job that injects runs its rounds through a wrapper
    (`with_extra_work`, share 0 for the others), and the wait is measured in wall time, the paired ratio's unit,
    in every round. The warm-up rounds spend nothing. What each row's rounds spent goes into it (`fields`)."""

    def __init__(self, share: float, warmup_rounds: int):
        if share < 0:
            raise ValueError(f"extra_work={share}: must be >= 0")
        self.share = float(share)
        self.warmup = int(warmup_rounds)
        self._ticks = 0
        self._since: float | None = None  # when the previous tick returned (or the clock began)
        self._rounds = 0
        self._work_s = 0.0
        self._spent_s = 0.0

    def round_starts(self) -> None:
        """A round starts now: the clock began, or its previous tick returned."""
        self._since = time.perf_counter()

    def before_tick(self) -> None:
        """Called at the end of every round, before the clock's ``tick``: past the warm-up, wait until ``share`` of
        the round's time has passed again."""
        now = time.perf_counter()
        since = self._since
        self._ticks += 1
        if since is None or self._ticks <= self.warmup:
            return
        work = now - since
        until = now + self.share * work
        clock = time.perf_counter
        end = clock()
        while end < until:
            end = clock()
        self._rounds += 1
        self._work_s += work
        self._spent_s += end - now

    def fields(self) -> dict[str, Any]:
        """The row's fields: the share asked, and what the row's timed rounds spent (mean per round, ms) beside
        their own time before it; then the next row counts afresh."""
        rounds = self._rounds
        out = {"extra_work": self.share,
               "extra_work_ms_per_round": self._spent_s / rounds * 1e3 if rounds else 0.0,
               "extra_work_round_ms": self._work_s / rounds * 1e3 if rounds else math.nan,
               "extra_work_rounds": rounds, "extra_work_clock": "wall time"}
        self._rounds, self._work_s, self._spent_s = 0, 0.0, 0.0
        return out


class ExtraWorkClock:
    """A clock that spends `ExtraWork` at the end of each round, then ticks the wrapped clock (every other
    attribute is the wrapped clock's)."""

    def __init__(self, inner: Any, extra: ExtraWork):
        self._inner = inner
        self._extra = extra

    def begin(self) -> None:
        self._inner.begin()
        self._extra.round_starts()

    def tick(self) -> bool | None:
        self._extra.before_tick()
        go_on = self._inner.tick()
        self._extra.round_starts()
        return go_on

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def with_extra_work(clock: Any, spec: dict[str, Any]) -> tuple[Any, ExtraWork | None]:
    """``clock`` wrapped to spend the spec's ``backend.extra_work``; unchanged, and None, when that is 0, unless the
    spec says ``extra_work_wrapped`` (every resident of a paired job that injects: a copy with the wrapper and one
    without would differ by the wrapper's own calls as well as the share; wrapped alike, by the share only)."""
    share = float(spec["backend"].get("extra_work", 0.0) or 0.0)
    if share <= 0 and not spec.get("extra_work_wrapped"):
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
