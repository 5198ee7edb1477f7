"""The reactor backend's split gather: the server gathers its own process's bank members first, then the
rest; only for servers whose gather is streaming (gym, atari), with the checksum of one serial gather."""
from __future__ import annotations

import pytest

from backends._reactor_program import ServerReactor, SplitGatherServerReactor
from backends.reactor import BankSplit, Executor, ReactorBackend, ReactorConfig
from reactor_backend.model import class_declarations
from scenarios import make_scenario
from scenarios.configs import GymConfig, MarlConfig, MarlEnv
from tests.conftest import TickClock, run_rounds


def _backend(scenario, workers: int, **config):
    backend = ReactorBackend(ReactorConfig(**config), workers)
    server = scenario.make_server()
    backend.start(scenario, server)
    return backend, server


def _serial_checksum(scenario, rounds: int) -> str:
    server, workers = run_rounds(scenario, rounds)
    for w in workers:
        w.close()
    return server.checksum()


def test_gym_server_gathers_its_own_members_first():
    scenario = make_scenario(GymConfig(num_envs=15), seed=3)
    backend, _ = _backend(scenario, 2, placement=BankSplit.even)
    top = backend.program(5, TickClock())
    assert type(top.server) is SplitGatherServerReactor
    assert top.server.n_local == 8 and top.server.local.width == 8 and top.server.results.width == 7
    names = [r.name for r in class_declarations(SplitGatherServerReactor)[1]]
    assert names.index("gather_local") < names.index("gather")  # own members first, then the round end


@pytest.mark.parametrize("workers,config,why", [
    (1, {}, "one process: nothing to overlap"),
    (2, {"split_gather": False}, "switched off"),
    (2, {"executor": Executor.threads}, "not the processes executor"),
    (6, {"max_processes": 6, "placement": BankSplit.even}, "one member on process 0: its own gather costs more"),
])
def test_gather_is_whole_where_a_split_cannot_help(workers, config, why):
    scenario = make_scenario(GymConfig(num_envs=6), seed=0)
    backend, _ = _backend(scenario, workers, **config)
    assert type(backend.program(3, TickClock()).server) is ServerReactor, why


def test_a_server_without_streaming_gather_is_not_split():
    scenario = make_scenario(MarlConfig(env=MarlEnv.synthetic, num_agents=4), seed=0)
    backend, server = _backend(scenario, 2)
    assert not scenario.facts.incremental_gather
    assert type(backend.program(3, TickClock()).server) is ServerReactor


@pytest.mark.parametrize("workers", [2, 3])
def test_split_gather_keeps_the_serial_checksum(workers):
    scenario = make_scenario(GymConfig(num_envs=7), seed=11)
    rounds = 40
    backend, server = _backend(scenario, workers, breakdown=False, max_processes=workers)
    assert backend.processes == workers
    clock = TickClock()
    assert type(backend.program(rounds, clock).server) is SplitGatherServerReactor
    backend.run(rounds, clock)
    assert clock.ticks == rounds
    assert server.checksum() == _serial_checksum(scenario, rounds)


def test_process_0_gathers_its_members_apart_only_where_it_keeps_two_or_more_leading_the_bank():
    from backends._bank_split import local_members

    assert local_members([0, 0, 0, 1, 1]) == 3
    assert local_members([0, 0, 1]) == 2
    assert local_members(list(range(16))) == 0  # one member: one gather of everything
    assert local_members([1, 0, 0]) == 0  # not leading the bank
    assert local_members([0, 1, 0]) == 0
    assert local_members([1, 1]) == 0
