"""The reactor runtime's own overhead: reactions per second with trivial work (a runtime microbenchmark).

``shape=chain``: a pass-through pipeline of ``size`` workers (server -> w0 -> ... -> w[n-1] -> server);
``shape=fan``: the server broadcasts to ``size`` workers and gathers (1-to-N-to-1). Each worker adds one to
the integer it receives, so the checksum proves every reaction ran, in order, once per round. The unit is
``reactions``: the workers' plus the server's scatter and gather per round.
"""
from __future__ import annotations

from typing import Any, Sequence

from scenarios.base import Broadcast, Scenario, Server, Worker, WorkFacts
from scenarios.checksum import RunningChecksum


class PassThrough(Worker):
    def step(self, msg: int) -> int:
        return msg + 1


class TokenServer(Server):
    def __init__(self, chain: bool, size: int):
        self.chain = chain
        self.size = size
        self.round = 0
        self._sum = RunningChecksum()

    def scatter(self) -> Broadcast | list[int]:
        token = self.round * 1_000_003
        return [token] if self.chain else Broadcast(token)

    def gather(self, results: Sequence[int]) -> None:
        # one fold per round keeps the server's share small: the sum proves every worker answered
        self._sum.update((len(results), sum(results)))
        self.round += 1

    def checksum(self) -> str:
        return self._sum.hexdigest()


class OverheadScenario(Scenario):
    facts = WorkFacts(inputs_retained=False)  # roles read received arrays within the round only
    name = "overhead"
    unit = "reactions"

    @property
    def topology(self) -> str:
        return "chain" if self._shape == "chain" else "star"

    @property
    def _shape(self) -> str:
        return str(getattr(self.config.shape, "value", self.config.shape))

    @property
    def num_workers(self) -> int:
        return int(self.config.size)

    def make_server(self) -> Server:
        return TokenServer(self.topology == "chain", self.num_workers)

    def make_worker(self, index: int) -> Worker:
        return PassThrough()

    def units_per_round(self) -> int:
        return self.num_workers + 2

    def row_fields(self) -> dict[str, Any]:
        return {"num_envs": self.num_workers, "env_id": self._shape}
