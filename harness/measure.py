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

import sys
from typing import Any, Callable

from harness.child import (ExtraWork, build, child_main, counting_timer, cpu_fields, pin_threads, reset_metrics,
                           row_extra, with_extra_work)
from harness.interpreter import running as running_interpreter


#: messages after which the child waits for the parent's acknowledgement before its rounds go on
ACKNOWLEDGED = frozenset({"progress", "repetition"})

__all__ = ["measure", "pin_threads", "ACKNOWLEDGED"]


def measure(spec: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> None:
    """Run the job described by ``spec`` and send its messages through ``send``."""
    from harness.clock import Repetition, RoundClock

    job = build(spec)
    send(job.hello)
    backend, server, budget = job.backend, job.server, spec["budget"]
    units = job.scenario.units_per_round() * int(budget["rounds"])
    extra_work: ExtraWork | None = None

    def on_repetition(rep: Repetition) -> None:
        extra = row_extra(job, extra_work, startup=True)
        if rep.index == clock.repetitions - 1:
            extra.update(server.final_metrics())
        # the capacity backend's copies each report the units they completed in the timed window
        done = sum(extra["copy_units"]) if "copy_units" in extra else units
        extra.update(cpu_fields(job, done))
        send({
            "type": "repetition",
            "index": rep.index,
            "units": done,
            "seconds": rep.seconds,
            "latencies": rep.latencies.tolist(),
            # a backend that does other work than the scenario's (backends.rllib) names it instead of a checksum
            "checksum": getattr(backend, "checksum_marker", None) or server.checksum(),
            "extra": extra,
            "gil_enabled": running_interpreter()["gil_enabled"],  # at the end of the job for the last one
        })

    def on_progress(done: int, total: int) -> None:
        send({"type": "progress", "done": done, "total": total})

    def on_begin(begun_at: float) -> None:
        send({"type": "started", "startup_seconds": begun_at - job.created_at})

    clock = RoundClock(int(budget["rounds"]), int(budget["warmup_rounds"]), int(budget["repetitions"]),
                       on_repetition, on_progress, on_begin=on_begin,
                       on_warmup_end=lambda: reset_metrics(job),  # timed rounds only
                       on_timer=counting_timer(job))
    timed, extra_work = with_extra_work(clock, spec)
    try:
        backend.start(job.scenario, server)
        backend.run(clock.total_rounds, timed)
        if not clock.finished:
            raise RuntimeError(f"backend ran {clock.done} of {clock.total_rounds} rounds")
    finally:
        try:
            backend.stop()
        finally:
            server.close()


def main() -> int:
    return child_main(measure, acknowledged=ACKNOWLEDGED)


if __name__ == "__main__":
    sys.exit(main())
