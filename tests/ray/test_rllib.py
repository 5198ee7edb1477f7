"""The RLlib backend (backends/rllib.py): refusals before anything runs, the env split, and, with real Ray and
RLlib (``slow``: building RLlib's env runners takes 20-40 s on a 2-core machine), the harness's smoke job and
a teardown that leaves no Ray process behind."""
from __future__ import annotations

import json
import sys

import psutil
import pytest

from backends.rllib import (NOT_EQUAL_WORK, REFERENCE_LABEL, RllibBackend, RllibConfig, RllibMissing,
                            RllibUnsupported, check_installed, missing_modules, split_envs, variant)
from scenarios import make_scenario
from scenarios.configs import AtariConfig, DqnConfig, GymConfig
from tests.conftest import TickClock, read_rows, run_cli
from tests.ray.test_ray_backend import our_ray_processes

# Ray started in this test process lives in pytest's session, which `our_ray_processes` reads: under `make test`'s
# xdist workers this module shares one worker with tests/ray/test_ray_backend.py, so no other test's Ray is seen
pytestmark = pytest.mark.xdist_group("ray_in_process")


def rllib_installed() -> bool:
    return not missing_modules()


needs_rllib = pytest.mark.skipif(not rllib_installed(), reason="RLlib's extra is not installed: pip install -e '.[rllib]'")


def _ray_started_here() -> bool:
    """Whether this test process connected to (or started) Ray. The session's process list is no witness here:
    another test of the suite may be starting or winding down its own Ray at the same moment."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


def test_a_missing_dependency_names_the_extra_before_anything_starts(monkeypatch):
    # Python's import system treats a None entry in sys.modules as "cannot be imported"
    monkeypatch.setitem(sys.modules, "tree", None)
    assert "dm_tree" in missing_modules()
    with pytest.raises(RllibMissing, match=r"dm_tree.*pip install -e '\.\[rllib\]'"):
        RllibBackend(RllibConfig(), 2)
    assert not _ray_started_here()


def test_check_installed_names_every_missing_distribution():
    with pytest.raises(RllibMissing, match="no_such_dist_a, no_such_dist_b"):
        check_installed({"no_such_module_a": "no_such_dist_a", "json": "json", "no_such_module_b": "no_such_dist_b"})
    check_installed({"json": "json"})  # present: no error


@pytest.mark.parametrize("num_envs, runners, expected", [(15, 2, (8, 16)), (4, 2, (2, 4)), (1, 3, (1, 3)), (16, 1, (16, 16))])
def test_every_runner_gets_the_same_number_of_envs(num_envs, runners, expected):
    assert split_envs(num_envs, runners) == expected


def test_variant_is_where_the_actions_come_from():
    assert variant({"name": "rllib", "actions": "module"}) == "module"
    assert variant({"name": "rllib", "actions": "random"}) == "random"


@needs_rllib
@pytest.mark.parametrize("scenario_cfg, needle", [
    (DqnConfig(), "supports only scenarios"),
    (AtariConfig(num_envs=2, reset_every_step=True), "reset_every_step"),
])
def test_an_unsupported_scenario_is_refused_before_ray_starts(scenario_cfg, needle):
    backend = RllibBackend(RllibConfig(), 2)
    scenario = make_scenario(scenario_cfg, 0)
    with pytest.raises(RllibUnsupported, match=needle):
        backend.start(scenario, scenario.make_server())
    backend.stop()
    assert not backend.instance.connected and not _ray_started_here()


def test_a_bad_actions_option_fails_at_composition_and_names_the_key(tmp_path):
    proc = run_cli("scenario=gym", "backend=rllib", "backend.actions=bogus", "budget=smoke", run_dir=tmp_path / "run")
    assert proc.returncode != 0
    assert "actions" in proc.stderr and "bogus" in proc.stderr
    assert not (tmp_path / "run" / "results.csv").exists()


@needs_rllib
@pytest.mark.slow
def test_smoke_job_writes_ok_rows_of_env_steps_marked_as_not_equal_work(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_cli("scenario=gym", "backend=rllib", "workers=2", "budget=smoke", run_dir=run_dir, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(run_dir)
    assert len(rows) == 3 and set(rows["status"]) == {"ok"} and set(rows["unit"]) == {"env_steps"}
    assert set(rows["backend"]) == {"rllib"} and set(rows["variant"]) == {"module"}
    assert set(rows["checksum"]) == {NOT_EQUAL_WORK}  # never a checksum that could equal serial's
    for _, r in rows.iterrows():
        extra = json.loads(r["extra"])
        assert extra["equal_work_promised"] is False and extra["reference"] == REFERENCE_LABEL
        # 4 envs on 2 runners, 20 rounds: at least 80 env steps, counted per runner
        assert r["units"] == sum(extra["copy_units"]) >= 20 * 4 and len(extra["copy_units"]) == 2
        assert extra["envs_per_runner"] == 2 and extra["torch_threads_observed"] == 1
        assert extra["rl_module"] == "DefaultPPOTorchRLModule"
        assert {"ray_init_s", "env_runners_s"} <= set(extra) and r["startup_seconds"] >= extra["env_runners_s"]
    assert not [p for p in psutil.process_iter(["cmdline"]) if "SingleAgentEnvRunner" in " ".join(p.info["cmdline"] or [])]


@needs_rllib
@pytest.mark.slow
def test_stop_leaves_no_ray_process_and_random_actions_sample_the_round():
    assert our_ray_processes() == [], "a Ray process was already running in this session"
    scenario = make_scenario(GymConfig(num_envs=3), 0)
    backend = RllibBackend(RllibConfig(actions="random"), 2)
    try:
        backend.start(scenario, scenario.make_server())
        assert our_ray_processes() != []
        # env i is first reset with the scenario's seed for it (3 envs on 2 runners: 4 envs, seeds 0..3)
        seeds = backend.group.foreach_env_runner(lambda r: list(r._seed), local_env_runner=False)
        assert sorted(seeds) == [[0, 1], [2, 3]]
        clock = TickClock()
        backend.run(5, clock)
        assert clock.ticks == 5
        units = backend.metrics()["copy_units"]
        assert len(units) == 2 and sum(units) >= 5 * 4  # 2 envs per runner: 4 env steps a round at least
        assert backend.metrics()["copy_units"] == [0, 0]  # counted since the previous call
    finally:
        backend.stop()
    assert our_ray_processes() == []
