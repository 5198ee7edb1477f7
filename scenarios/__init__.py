"""The paper's workloads as backend-neutral roles plus a round structure (see `scenarios.base`)."""
from __future__ import annotations

from typing import Any

from scenarios.base import Broadcast, Scenario, Server, Worker, WorkFacts, load_target
from scenarios.checksum import RunningChecksum

#: scenario name -> "module:Class"; imported only when used, so configs validate without heavy imports
SCENARIOS: dict[str, str] = {
    "gym": "scenarios.gym:GymScenario",
    "atari": "scenarios.atari:AtariScenario",
    "dqn": "scenarios.dqn:DqnScenario",
    "marl": "scenarios.marl:MarlScenario",
    "actors": "scenarios.micro:ActorsScenario",
    "object_size": "scenarios.micro:ObjectSizeScenario",
    "fault": "scenarios.fault:FaultScenario",
    "overhead": "scenarios.overhead:OverheadScenario",
}


def make_scenario(config: Any, seed: int) -> Scenario:
    """Build the scenario named by ``config.name`` (a picklable description; no env is created here).

    Args:
        config: a scenario config dataclass (`scenarios.configs`); its ``name`` is a key of ``SCENARIOS``.
        seed: the seed every role derives its randomness from.
    """
    return load_target(SCENARIOS, config.name, "scenario")(config, seed)


__all__ = ["Broadcast", "RunningChecksum", "Scenario", "Server", "Worker", "WorkFacts", "SCENARIOS", "make_scenario"]
