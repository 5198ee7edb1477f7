"""The measuring child process: builds one scenario on one backend, runs it, streams results to the parent.

Started by `harness.runner` as ``python -m harness.measure FD JOB_DIR`` in a new session, with the job spec (JSON)
on the first line of stdin. It writes one JSON message per line to file descriptor FD:

    {"type": "hello", ...row fields known before start-up}
    {"type": "started", "startup_seconds": s}
    {"type": "progress", "done": d, "total": t}            (at most every 0.5 s; acknowledged)
    {"type": "repetition", "index": r, "seconds": s, "latencies": [...], "checksum": c, "extra": {...}}  (acknowledged)
    {"type": "error", "message": m, "traceback": tb}         (then exit code 1)

Nothing is printed or logged inside the timed loop; the clock excludes the time spent sending. After a progress or
repetition message the child waits for the parent's acknowledgement (one line on stdin), which the parent sends
once it has stored the message and sampled the job's memory: the parent's own work then never runs beside timed
rounds, where it would take a core from a backend that uses them all (docs/harness.md: a memory sample of a Ray
tree costs the parent ~20 ms).
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any, Callable



#: messages after which the child waits for the parent's acknowledgement before its rounds go on
ACKNOWLEDGED = frozenset({"progress", "repetition"})


def pin_threads(threads: int) -> None:
    """One BLAS / torch thread per worker unless configured otherwise (docs/design.md, "Measurement rules")."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def measure(spec: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> None:
    """Run the job described by ``spec`` and send its messages through ``send``."""
    from backends import backend_schema, make_backend  # imports this job's backend module only
    from harness.clock import Repetition, RoundClock
    from harness.config import SCENARIO_SCHEMAS, config_object
    from harness.interpreter import running as running_interpreter
    from harness.phases import server_metrics
    from scenarios import make_scenario

    pin_threads(int(spec["threads_per_worker"]))
    scenario_cfg = config_object(SCENARIO_SCHEMAS[spec["scenario"]["name"]], spec["scenario"])
    backend_cfg = config_object(backend_schema(spec["backend"]["name"]), spec["backend"])
    budget = spec["budget"]

    scenario = make_scenario(scenario_cfg, spec["seed"])
    work = scenario.round_work_seconds()
    send({
        "type": "hello",
        **running_interpreter(),
        "unit": scenario.unit,
        "round_work_ms": None if work is None else work * 1e3,
        **scenario.row_fields(),
    })

    backend = make_backend(backend_cfg, spec["workers"], threads_per_worker=int(spec["threads_per_worker"]))
    server = scenario.make_server()
    units = scenario.units_per_round() * int(budget["rounds"])

    def on_repetition(rep: Repetition) -> None:
        extra = server_metrics(server, backend)  # with the critical-path split (harness.phases)
        extra.update(backend.startup_breakdown)  # e.g. Ray: init, actors, compile
        extra.update(backend.metrics())  # e.g. the reactor's per-round time breakdown
        extra.update(backend.row_extra)  # e.g. Ray: envs_per_actor, actors
        extra["torch_threads_observed"] = backend.torch_threads_observed()  # read in the workers
        if rep.index == clock.repetitions - 1:
            extra.update(server.final_metrics())
        send({
            "type": "repetition",
            "index": rep.index,
            # the capacity backend's copies each report the units they completed in the timed window
            "units": sum(extra["copy_units"]) if "copy_units" in extra else units,
            "seconds": rep.seconds,
            "latencies": rep.latencies.tolist(),
            # a backend that does other work than the scenario's (backends.rllib) names it instead of a checksum
            "checksum": getattr(backend, "checksum_marker", None) or server.checksum(),
            "extra": extra,
            "gil_enabled": running_interpreter()["gil_enabled"],  # at the end of the job for the last one
        })

    def on_progress(done: int, total: int) -> None:
        send({"type": "progress", "done": done, "total": total})

    t0 = time.perf_counter()

    def on_begin(begun_at: float) -> None:
        send({"type": "started", "startup_seconds": begun_at - t0})

    clock = RoundClock(int(budget["rounds"]), int(budget["warmup_rounds"]), int(budget["repetitions"]),
                       on_repetition, on_progress, on_begin=on_begin,
                       on_warmup_end=lambda: (server_metrics(server, backend), backend.metrics()),  # timed rounds only
                       on_timer=backend.timer)
    try:
        backend.start(scenario, server)
        backend.run(clock.total_rounds, clock)
        if not clock.finished:
            raise RuntimeError(f"backend ran {clock.done} of {clock.total_rounds} rounds")
    finally:
        backend.stop()
        server.close()


def main() -> int:
    fd = int(sys.argv[1])
    out = os.fdopen(fd, "w", buffering=1)

    def send(msg: dict[str, Any]) -> None:
        out.write(json.dumps(msg) + "\n")
        if msg["type"] in ACKNOWLEDGED and not sys.stdin.readline():
            raise RuntimeError("the harness closed the job's pipe: no parent to store its results")

    spec = json.loads(sys.stdin.readline())
    try:
        measure(spec, send)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes an error row in the parent
        send({"type": "error", "message": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        out.close()
        return 1
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
