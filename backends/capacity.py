"""The machine's ceiling for a scenario's unit of work: k = ``workers`` copies of the serial loop in k
uncoordinated processes (no message between them), what `scripts/parallel_capacity.py` measures for one env.

Why: the ideal "serial x workers" assumes k cores that each run at serial speed. On a VM whose vCPUs share
physical cores, or next to noisy neighbours, k processes that never talk already fall short of k x. This
backend measures that bound with the scenario's own roles, in the same sweep as the backends it bounds, so
efficiency = throughput / (serial x measured capacity) = throughput / this backend's throughput.

The measuring process runs copy 0 with the real server (its checksum equals serial's: the same work);
k - 1 forked processes each build their own server and workers and run the same serial rounds, released
together with copy 0 and kept running until copy 0 has finished, so every timed round of copy 0 runs under
k-way load. The copies are symmetric, so the aggregate throughput is k x copy 0's (``units_factor = k``).
"""
from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from typing import Any

from backends.serial import SerialBackend
from backends.base import BackendConfig, Clock
from scenarios.base import Scenario, Server

NAME = "capacity"


@dataclass
class CapacityConfig(BackendConfig):
    """The machine's ceiling: ``workers`` uncoordinated copies of the serial loop, one process each."""

    name: str = "capacity"


#: seconds a copy may take to build its roles before the job fails
READY_TIMEOUT_S = 300.0


class _Stopped(Exception):
    """Copy 0 has finished: a load copy leaves its loop."""


class _LoadClock:
    """A clock for a load copy: counts nothing, ends the loop once ``stop`` is set."""

    def __init__(self, stop: Any):
        self.stop = stop

    def begin(self) -> None:
        pass

    def tick(self) -> None:
        if self.stop.is_set():
            raise _Stopped


def _load_copy(scenario: Scenario, ready: Any, start: Any, stop: Any) -> None:
    """One uncoordinated copy: its own server and workers, serial rounds from ``start`` until ``stop``."""
    server = scenario.make_server()
    copy = SerialBackend(None, 1)
    try:
        copy.start(scenario, server)
        ready.put(True)
        start.wait()
        copy.run(2**62, _LoadClock(stop))
    except _Stopped:
        pass
    finally:
        copy.stop()
        server.close()


class CapacityBackend(SerialBackend):
    """k = workers copies of the serial loop in k processes; throughput counts all k."""

    name = "capacity"
    variant = "-"

    def __init__(self, config: Any, workers: int):
        super().__init__(config, workers)
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1 for backend=capacity, got {self.workers}")
        #: the harness multiplies a round's units by this: k symmetric copies ran each round
        self.units_factor = self.workers
        self.row_extra["copies"] = self.workers
        self.procs: list[Any] = []

    def start(self, scenario: Scenario, server: Server) -> None:
        super().start(scenario, server)
        # fork, as scripts/parallel_capacity.py: spawn would start multiprocessing's resource tracker, a
        # process that outlives the backend; the copies build their own roles after the fork (threads are
        # pinned to 1 per role, so no OpenMP pool exists to be broken by it)
        ctx = mp.get_context("fork")
        self.ready, self.go, self.halt = ctx.Queue(), ctx.Event(), ctx.Event()
        self.procs = [ctx.Process(target=_load_copy, args=(scenario, self.ready, self.go, self.halt), daemon=True)
                      for _ in range(self.workers - 1)]
        for p in self.procs:
            p.start()
        for _ in self.procs:
            try:
                self.ready.get(timeout=READY_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - queue.Empty: a copy died while building its roles
                dead = [p.exitcode for p in self.procs if p.exitcode is not None]
                raise RuntimeError(f"a capacity copy did not start within {READY_TIMEOUT_S:g} s "
                                   f"(exit codes of dead copies: {dead})") from exc

    def run(self, rounds: int, clock: Clock) -> None:
        self.go.set()
        try:
            super().run(rounds, clock)
        finally:
            self.halt.set()

    def stop(self) -> None:
        if self.procs:
            self.halt.set()
            self.go.set()
            for p in self.procs:
                p.join(timeout=30)
            for p in self.procs:
                if p.is_alive():
                    p.kill()
                    p.join(timeout=5)
            self.procs = []
        super().stop()


SCHEMA = CapacityConfig
BACKEND = CapacityBackend
