"""What a scenario declares about its work (`scenarios.base.WorkFacts`): once per scenario, frozen, the safe
side by default, and what the reactor backend decides its mechanisms from."""
from __future__ import annotations

import dataclasses

import pytest

from scenarios import SCENARIOS
from scenarios.base import Scenario, Server, Worker, WorkFacts, load_target

#: scenario name -> (incremental_gather, inputs_retained, side_effects), as docs/scenarios.md lists them
EXPECTED = {
    "gym": (True, False, False),
    "atari": (True, False, False),
    "dqn": (False, True, False),
    "marl": (False, False, False),
    "actors": (False, False, False),
    "object_size": (False, False, False),
    "overhead": (False, False, False),
    "fault": (False, True, True),
}


def test_work_facts_are_frozen_and_default_to_the_safe_side():
    facts = WorkFacts()
    assert (facts.incremental_gather, facts.inputs_retained, facts.side_effects) == (False, True, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.inputs_retained = False  # type: ignore[misc]
    assert Scenario.facts == facts


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_declares_its_facts_once(name):
    cls = load_target(SCENARIOS, name, "scenario")
    facts = cls.facts
    assert isinstance(facts, WorkFacts)
    assert (facts.incremental_gather, facts.inputs_retained, facts.side_effects) == EXPECTED[name]
    # one place: no fact left as a loose attribute of the scenario or its roles' base classes
    for loose in ("incremental_gather", "inputs_retained", "side_effects"):
        assert not hasattr(cls, loose) and not hasattr(Server, loose) and not hasattr(Worker, loose), loose


def test_every_scenario_is_listed():
    assert set(EXPECTED) == set(SCENARIOS)


def test_the_reactor_backend_splits_a_gather_only_where_the_facts_allow_it():
    from backends._reactor_program import ServerReactor, SplitGatherServerReactor
    from backends.reactor import BankSplit, ReactorBackend, ReactorConfig
    from scenarios import make_scenario
    from scenarios.configs import GymConfig
    from tests.conftest import TickClock

    def server_reactor(scenario):
        backend = ReactorBackend(ReactorConfig(placement=BankSplit.even, max_processes=2), 2)
        backend.start(scenario, scenario.make_server())
        return type(backend.program(3, TickClock()).server)

    scenario = make_scenario(GymConfig(num_envs=4), seed=0)
    assert server_reactor(scenario) is SplitGatherServerReactor
    scenario.facts = dataclasses.replace(scenario.facts, incremental_gather=False)
    assert server_reactor(scenario) is ServerReactor
