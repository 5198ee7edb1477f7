"""A resident measuring child of ``python -m harness compare``: one backend, started once, timed in blocks.

Started by `harness.cycles` as ``python -m harness.compare_child FD JOB_DIR BACKEND`` in a new session, with the
job spec (JSON, as `harness.runner.job_spec`) on the first line of stdin. The backend's ``run`` is called once
with a very large round count; the clock given to it (`BlockClock`) holds the rounds at every block boundary
until the parent says what comes next, so the backend stays resident (its processes, environments, models)
while the other backends of the job take their turns. Messages on file descriptor FD, one JSON line each:

    {"type": "hello", ...row fields known before start-up}
    {"type": "started", "startup_seconds": s}
    {"type": "warm", "seconds": s, "rounds": r}      (warm-up done: seconds of its rounds but the first)
    {"type": "block", "seconds": s, "units": u, "latencies": [...], "checksum": c, "extra": {...}}
    {"type": "error", "message": m, "traceback": tb}

After ``warm`` and after each ``block`` the child waits for one command line on stdin: ``go N`` (time the
next N rounds) or ``stop`` (leave the rounds: the clock's ``tick`` returns False, the backend's ``run``
returns as after its last round, and ``stop`` closes the roles and tears it down; an error raised meanwhile is sent
as ``error``, and the parent reads it after ``stop``). While it waits it reads a pipe: no core is used by this process;
a backend whose other processes wait for the next round (the reactor's workers, the synchronized ceiling's
copies) lets them fall asleep in their own wait (docs/harness.md, "Paired blocks"), and one whose helpers
would run on (the uncoordinated ceiling's copies) is paused through its ``pause``/``resume`` hooks
(`backends.base.Backend`); one whose framework runs timers whatever the workload (Ray) says ``parkable`` in its
``warm`` message, and the parent stops its whole process tree, this child included, between its blocks.

Checksums: each block reports the server's checksum after it, i.e. of everything produced in the
warm-up and every block so far (sizing blocks included); every backend runs the same rounds per block, so the
checksums of one cycle are equal across backends, and equal to a standalone job's repetition ``cycle`` with
``budget.rounds = N`` and the same warm-up.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable

import numpy as np

from harness.child import (ExtraWork, build, child_main, counting_timer, cpu_fields, reset_metrics, row_extra,
                           with_extra_work)
from harness.interpreter import running as running_interpreter

#: the round count given to ``backend.run``: never reached, the parent ends the rounds with ``stop``
ENDLESS_ROUNDS = 2**40


class BlockClock:
    """Warm-up rounds untimed, then blocks of rounds the parent asks for one at a time.

    ``wait_command()`` returns the next block's round count, or None to stop (``tick`` then returns False, and
    ``stopped`` is set; a stop asked for in ``begin``, with no warm-up, ends the rounds at the first tick);
    ``on_warm(seconds, rounds)`` and ``on_block(seconds, latencies)`` report (both may block, e.g. on the
    parent's reply)."""

    def __init__(self, warmup: int, wait_command: Callable[[], int | None],
                 on_warm: Callable[[float, int], None], on_block: Callable[[float, np.ndarray], None],
                 on_begin: Callable[[float], None] | None = None,
                 pause: Callable[[], None] | None = None, resume: Callable[[], None] | None = None,
                 timer: Callable[[bool], None] | None = None):
        self.warmup = warmup
        self._wait_command = wait_command
        self._on_warm = on_warm
        self._on_block = on_block
        self._on_begin = on_begin
        self._pause = pause
        self._resume = resume
        self._timer = timer if timer is not None else (lambda running: None)
        self.done = 0
        self.blocks = 0
        #: the parent said ``stop``: every tick from now on returns False
        self.stopped = False
        self._said_stop = False
        self.begun_at: float | None = None
        self._left = 0  # rounds left in the current block (0: warming up)
        self._lat: list[float] = []
        self._last = self._start = 0.0
        self._warm_from = 0.0  # the end of the first warm-up round (the first may hold one-off costs)

    def begin(self) -> None:
        if self.begun_at is None:
            self.begun_at = time.perf_counter()
            if self._on_begin is not None:
                self._on_begin(self.begun_at)
            self._timer(True)
            self._last = self._start = self._warm_from = time.perf_counter()
            if self.warmup == 0:
                self._end_warmup(0.0)

    def timer_stops_at_next_tick(self) -> bool:
        """Whether the coming tick stops the timer (`backends.base.Clock`): a block's last round or the warm-up's."""
        if self.begun_at is None:
            return True
        if self._left > 0:
            return self._left == 1
        return self.done + 1 >= self.warmup

    def tick(self) -> bool:
        """A round is complete; whether to go on (False once the parent said ``stop``).

        Raises:
            RuntimeError: a round after this clock said stop (a backend's ``run`` that ignores the answer would
                never leave its rounds).
        """
        if self.stopped:
            if self._said_stop:
                raise RuntimeError("a round after the clock said stop: a backend's run must return where "
                                   "clock.tick() returns False (backends.base.Clock)")
            self._said_stop = True
            return False
        now = time.perf_counter()
        if self.begun_at is None:
            self.begin()
            now = time.perf_counter()
        self.done += 1
        if self._left > 0:  # a timed round
            self._lat.append(now - self._last)
            self._last = now
            self._left -= 1
            if self._left == 0:
                self._end_block(now)
        else:
            if self.done == 1:
                self._warm_from = now
            if self.done == self.warmup:
                self._end_warmup(now - self._warm_from)
        self._said_stop = self.stopped
        return not self.stopped

    def _end_warmup(self, seconds: float) -> None:
        self._timer(False)
        if self._pause is not None:
            self._pause()
        self._on_warm(seconds, max(0, self.warmup - 1))
        self._next()

    def _end_block(self, now: float) -> None:
        seconds = now - self._start
        lat = np.asarray(self._lat, dtype=np.float64)
        self.blocks += 1
        self._timer(False)
        if self._pause is not None:
            self._pause()
        self._on_block(seconds, lat)
        self._next()

    def _next(self) -> None:
        n = self._wait_command()
        if n is None:
            self.stopped = True
            return
        if self._resume is not None:
            self._resume()
        self._left = n
        self._lat = []
        self._timer(True)
        self._last = self._start = time.perf_counter()


def measure_blocks(spec: dict[str, Any], send: Callable[[dict[str, Any]], None],
                   wait_command: Callable[[], int | None]) -> None:
    """Build the spec's scenario on its backend and run it under a `BlockClock` until told to stop. An error
    the backend raises while leaving its rounds (after ``stop``) or while tearing down is not swallowed, nor a
    backend's ``run`` that returns before the parent said ``stop``."""
    job = build(spec)
    send(job.hello)
    backend, server = job.backend, job.server
    per_round = job.scenario.units_per_round()
    extra_work: ExtraWork | None = None

    def on_block(seconds: float, lat: np.ndarray) -> None:
        extra = row_extra(job, extra_work)
        # the capacity backend's copies each report the units they completed while the timer ran
        units = sum(extra["copy_units"]) if "copy_units" in extra else per_round * int(lat.size)
        extra.update(cpu_fields(job, units))
        send({"type": "block", "seconds": seconds, "units": units,
              "latencies": lat.tolist(), "extra": extra,
              # a backend that does not do the scenario's work says so instead (RLlib's sampler: `harness.measure`)
              "checksum": getattr(backend, "checksum_marker", None) or server.checksum(),
              "gil_enabled": running_interpreter()["gil_enabled"]})

    def on_warm(seconds: float, rounds: int) -> None:
        reset_metrics(job)  # the blocks' metrics count timed rounds only
        send({"type": "warm", "seconds": seconds, "rounds": rounds,
              "startup": dict(backend.startup_breakdown), "parkable": bool(backend.parkable)})

    clock = BlockClock(int(spec["budget"]["warmup_rounds"]), wait_command, on_warm, on_block,
                       on_begin=lambda at: send({"type": "started", "startup_seconds": at - job.created_at}),
                       pause=backend.pause, resume=backend.resume,
                       timer=counting_timer(job))
    timed, extra_work = with_extra_work(clock, spec)
    if backend.parkable:  # the parent will stop its processes between blocks (`harness.resident.Resident.park`)
        backend.prepare_to_park()
    try:
        backend.start(job.scenario, server)
        backend.run(ENDLESS_ROUNDS, timed)
        if not clock.stopped:
            raise RuntimeError(f"backend {spec['backend']['name']!r} left its rounds after {clock.done} rounds, "
                               "before the harness said stop")
    finally:
        try:
            backend.stop()
        finally:
            server.close()


def main() -> int:
    def wait_command() -> int | None:
        line = sys.stdin.readline()
        if not line:
            raise RuntimeError("the harness closed the job's pipe: no parent to store its results")
        word = line.split()
        if word and word[0] == "go":
            return int(word[1])
        return None

    return child_main(lambda spec, send: measure_blocks(spec, send, wait_command))


if __name__ == "__main__":
    sys.exit(main())
