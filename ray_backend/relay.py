"""The relay role as its own Ray actor (DQN's replay buffer, as the paper's ReplayBufferActor).

Each round the driver sends it ``server.relay_message()`` and hands its reply to ``server.relay_result``:
the data go driver -> relay actor -> driver, as in the authors' Ray program. It asks for no CPU of its own
(``num_cpus=0``) so that the worker actors keep every CPU of the instance.
"""
from __future__ import annotations

import os
from typing import Any

from scenarios.base import Scenario


class RelayActor:
    """Holds ``scenario.make_relay()``; one ``step`` per round."""

    def __init__(self, scenario: Scenario, threads: int):
        from scenarios.threads import apply_threads

        apply_threads(threads)
        self.role = scenario.make_relay()
        apply_threads(threads)  # the role is built (`scenarios.threads`)

    def ready(self) -> int:
        return os.getpid()

    def step(self, msg: Any) -> Any:
        return self.role.step(msg)

    def close(self) -> None:
        self.role.close()


def start_relay(ray: Any, scenario: Scenario, threads: int) -> Any:
    """The relay actor of ``scenario``, created and ready (None when the scenario has no relay)."""
    if not scenario.has_relay():
        return None
    actor = ray.remote(RelayActor).options(num_cpus=0, max_restarts=0, max_task_retries=0).remote(scenario, threads)
    ray.get(actor.ready.remote())
    return actor
