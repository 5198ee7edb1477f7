"""A scenario that fails on purpose, so every backend's failure paths are tested with real processes.

Worker ``fail_worker`` raises ``EnvCrashed`` (or exits its process, or hangs) when it reaches round
``fail_at_round``; with ``kind=close`` it runs every round and raises ``EnvCrashed`` when the backend closes it at
teardown (an error after the rounds, which must fail the job as well). The other workers and rounds behave like a
tiny counting workload.
"""
from __future__ import annotations

import os
import time
from typing import Any, Sequence

from scenarios.base import Broadcast, Scenario, Server, Worker, WorkFacts
from scenarios.checksum import RunningChecksum


class EnvCrashed(RuntimeError):
    """Raised by the faulty worker: stands for an environment that crashes mid-run."""


class FaultyWorker(Worker):
    def __init__(self, index: int, fail: bool, fail_at_round: int, kind: str):
        self.index = index
        self.fail = fail
        self.fail_at_round = fail_at_round
        self.kind = kind
        self.round = 0

    def step(self, msg: Any) -> int:
        if self.fail and self.round == self.fail_at_round and self.kind != "close":
            if self.kind == "error":
                raise EnvCrashed(f"worker {self.index} crashed at round {self.round}")
            if self.kind == "exit":
                os._exit(17)
            while True:  # hang
                time.sleep(0.1)
        self.round += 1
        return self.index * 1000 + self.round

    def close(self) -> None:
        if self.fail and self.kind == "close":
            raise EnvCrashed(f"worker {self.index} failed to close after {self.round} rounds")


class CountingServer(Server):
    def __init__(self) -> None:
        self._sum = RunningChecksum()

    def scatter(self) -> Broadcast:
        return Broadcast(None)

    def gather(self, results: Sequence[int]) -> None:
        self._sum.update(list(results))

    def checksum(self) -> str:
        return self._sum.hexdigest()


class FaultScenario(Scenario):
    name = "fault"
    unit = "rounds"
    facts = WorkFacts(side_effects=True)  # a worker crashes (or exits) the process that runs it

    @property
    def num_workers(self) -> int:
        return int(self.config.num_workers)

    def make_server(self) -> Server:
        return CountingServer()

    def make_worker(self, index: int) -> Worker:
        c = self.config
        kind = getattr(c.kind, "value", c.kind)
        return FaultyWorker(index, index == c.fail_worker, c.fail_at_round, kind)

    def units_per_round(self) -> int:
        return 1

    def row_fields(self) -> dict[str, Any]:
        return {"num_envs": self.num_workers, "env_id": "-"}
