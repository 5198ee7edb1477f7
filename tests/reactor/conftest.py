"""Fixtures of the reactor conformance suite.

Every conformance test takes the ``executor`` fixture and runs its program with ``executor.run(main,
...)``, so each case runs under every executor listed in ``EXECUTOR_PARAMS``. To add an executor
(e.g. ``processes`` with 1, 2 and 4 workers) append ``("processes", 1)`` ... to ``EXECUTOR_PARAMS``.
The cases under ``SLOW_EXECUTORS`` are ``slow`` (``make test-slow``): four processes on the gate's two
cores add time, not behaviour, to the 1- and 2-process runs; more than two processes (children talking
to each other, meetings of several ranks) stay in the fast gate through test_processes.py's
``WORKERS`` cases, test_plan.py and test_architecture.py's small program.

Observations: tests record values in plain Python lists held by reactors that are *not* bank
members (main and its non-bank children are placed on worker 0, the calling process, by
``assign_workers``), so the lists are readable after ``run`` under a multi-process executor too.
Bank members send what they see to such a recorder through ports.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest

from reactor_backend import run

EXECUTOR_PARAMS: list[tuple[str, int]] = [("inline", 1), ("threads", 3), ("processes", 1), ("processes", 2), ("processes", 4)]
# REACTOR_EXECUTORS="inline:1,threads:2,processes:4" replaces the list (e.g. to try one executor alone)
if os.environ.get("REACTOR_EXECUTORS"):
    EXECUTOR_PARAMS = [(n, int(w)) for n, w in (item.split(":") for item in
                                                os.environ["REACTOR_EXECUTORS"].split(","))]

# REACTOR_BREAKDOWN=1 runs the processes executor with its time breakdown on (its timed link and advance), and the
# threads executor with its own (a timed crew)
BREAKDOWN = os.environ.get("REACTOR_BREAKDOWN") == "1"


@dataclass(frozen=True)
class ExecutorSpec:
    """An executor name and worker count; ``run`` runs a program with them."""

    name: str
    workers: int

    def run(self, main: Any, **kwargs: Any) -> Any:
        if self.name == "processes" and BREAKDOWN:
            kwargs.setdefault("breakdown", True)
        elif self.name == "threads" and BREAKDOWN:
            from reactor_backend.executors import ThreadBreakdown

            kwargs.setdefault("breakdown", ThreadBreakdown())
        return run(main, executor=self.name, workers=self.workers, **kwargs)


SLOW_EXECUTORS = {("processes", 4)}


@pytest.fixture(params=[pytest.param(p, marks=pytest.mark.slow) if p in SLOW_EXECUTORS else p
                        for p in EXECUTOR_PARAMS], ids=[f"{n}-{w}" for n, w in EXECUTOR_PARAMS])
def executor(request: pytest.FixtureRequest) -> ExecutorSpec:
    return ExecutorSpec(*request.param)
