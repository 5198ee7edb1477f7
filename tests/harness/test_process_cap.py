"""The reactor backend runs at most ``max_processes`` worker processes (0: the usable cores): more
``workers`` than that share the processes, the bank keeps every member, and the checksum stays serial's."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from backends.reactor import ReactorBackend, ReactorConfig, Executor, process_count, usable_cores, variant
from scenarios import make_scenario
from scenarios.configs import GymConfig
from tests.conftest import TickClock, read_rows, run_cli, run_rounds


@pytest.mark.parametrize("executor,workers,cap,expected", [
    ("processes", 8, 2, 2),
    ("processes", 2, 8, 2),
    ("processes", 3, 3, 3),
    ("processes", 1, 0, 1),
    ("threads", 8, 2, 8),
    ("inline", 4, 1, 4),
])
def test_process_count_caps_only_the_processes_executor(executor, workers, cap, expected):
    assert process_count(executor, workers, cap) == expected


def test_zero_means_the_usable_cores():
    cores = usable_cores()
    assert process_count("processes", cores + 5, 0) == cores
    assert process_count("processes", 1, 0) == 1


def test_variant_names_a_cap_other_than_the_cores():
    assert variant({"executor": "processes", "max_processes": 0}) == "processes"
    assert variant({"executor": "processes", "max_processes": 1024}) == "processes-max1024"
    assert variant({"executor": "threads", "max_processes": 4}) == "threads"


@pytest.mark.parametrize("workers,cap", [(4, 2), (3, 3)])
def test_capped_workers_share_the_processes_and_keep_serial_checksums(workers, cap):
    scenario = make_scenario(GymConfig(num_envs=6), seed=5)
    rounds = 30
    backend = ReactorBackend(ReactorConfig(executor=Executor.processes, max_processes=cap), workers)
    server = scenario.make_server()
    backend.start(scenario, server)
    clock = TickClock()
    backend.run(rounds, clock)
    assert backend.processes == cap and backend.startup_breakdown["processes"] == cap
    ranks = {int(k[4:].split("_")[0]) for k in backend.metrics() if k.startswith("bd_w")}
    assert ranks == set(range(cap))  # exactly `cap` processes ran rounds
    assert clock.ticks == rounds
    ref, roles = run_rounds(scenario, rounds)
    for role in roles:
        role.close()
    assert server.checksum() == ref.checksum()


def test_cli_rows_record_the_processes_and_refuse_a_negative_cap(tmp_path):
    done = run_cli("scenario=gym", "backend=reactor", "budget=smoke", "workers=3", "backend.max_processes=2",
                   run_dir=tmp_path / "ok")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = read_rows(tmp_path / "ok")
    assert set(rows["status"]) == {"ok"} and set(rows["workers"]) == {3}
    assert set(rows["variant"]) == {"processes-max2"}
    assert {json.loads(x)["processes"] for x in rows["extra"]} == {2.0}
    bad = run_cli("scenario=gym", "backend=reactor", "budget=smoke", "backend.max_processes=-1",
                  run_dir=tmp_path / "bad")
    assert bad.returncode != 0 and "max_processes" in bad.stderr
    assert not (tmp_path / "bad" / "results.csv").exists()
