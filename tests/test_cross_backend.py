"""Equal work on every backend: for each scenario at budget=smoke, every backend's checksums equal serial's.

A speedup between runs whose checksums differ would be a bug, so this is the project's central check. One
multirun per scenario over every backend that can run it (vector: gym and atari only); the fast gate keeps
one check of every backend and of every scenario's data path, ``make test-slow`` runs the rest (`RUNS`).
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import run_cli

ROLE_BACKENDS = ["serial", "reactor_inline", "reactor_threads", "reactor", "ray", "ray_compiled"]
CASES = {
    "gym": ["scenario.num_envs=3"],
    "atari": ["scenario.num_envs=2"],
    "dqn": ["scenario.num_rollouts=2"],
    "marl": ["scenario.num_agents=3", "scenario.env=simple_spread_v3"],  # synthetic: tests/scenarios
    "actors": ["scenario.num_clients=2"],
    "object_size": ["scenario.num_clients=2"],
    "overhead": ["scenario.size=5", "scenario.shape=chain,fan"],
}


def backends_for(scenario: str) -> list[str]:
    extra = ["vector"] if scenario in ("gym", "atari") else []
    if scenario == "gym":  # and Ray's packed actors: 3 roles on 2 workers, one actor of 2 and one of 1
        extra.append("ray_packed")
    if scenario == "overhead":  # the runtime-overhead benchmark: the reference and the reactor executors
        return ["serial", "reactor_inline", "reactor_threads", "reactor"]
    return ROLE_BACKENDS + extra


def _slow(reason: str) -> pytest.MarkDecorator:
    """Behind ``slow`` (``make test-slow``); ``reason`` names the fast test that still covers the behaviour."""
    return pytest.mark.slow(reason=reason)


#: (scenario, backends) of the fast gate and of ``make test-slow``. The fast gate runs every backend on gym but
#: Ray's one-actor-per-role modes (the one full per-backend check, with Ray's packed layout recorded: 3 roles on
#: 2 workers, an actor of 2 and one of 1; Ray's actor loop with one role per actor and its layout run
#: object_size, dqn and marl here, the compiled graph gym in tests/ray and object_size here), atari's frames on
#: the reactor's processes executor and on vector (in tests/scenarios/test_cli.py's atari multirun),
#: object_size's large payloads and overhead's chain/fan programs everywhere; the rest repeats a data path that a
#: fast test already checks against serial.
RUNS = [
    pytest.param("gym", [b for b in backends_for("gym") if b not in ("ray", "ray_compiled")], id="gym"),
    pytest.param("gym", ["serial", "ray", "ray_compiled"], id="gym-one-actor-per-role",
                 marks=_slow("gym's roles one per Ray actor: the same actor loop as ray_packed's [gym] (an actor of "
                             "one role included), one role per actor and its layout in [object_size] and the "
                             "paper-mode dqn and marl jobs; through a compiled graph: tests/ray's test_compiled_"
                             "envs_per_actor_2_matches_serial_and_teardown_leaves_no_ray_process (the same actor "
                             "loop, packed); one compiled actor per role from the CLI: [object_size]")),
    pytest.param("atari", ["serial", "reactor", "vector"], id="atari",
                 marks=_slow("the same backends and sizes, serial twice: tests/scenarios/test_cli.py's "
                             "test_atari_is_deterministic_and_vector_matches_serial")),
    pytest.param("atari", ["serial", "reactor_inline", "reactor_threads", "ray", "ray_compiled"], id="atari-more",
                 marks=_slow("executors and Ray modes: [gym] here; frames through Ray: [object_size]'s "
                             "100 kB arrays; atari on reactor and vector: [atari]")),
    pytest.param("dqn", backends_for("dqn"), id="dqn",
                 marks=_slow("dqn on serial, reactor and ray: test_paper_mode_checksums_equal_on_serial_reactor_"
                             "and_ray[dqn] (replay role, state_dict broadcasts); the other backends: [gym]")),
    pytest.param("marl", backends_for("marl"), id="marl",
                 marks=_slow("marl on serial and reactor: test_paper_mode_checksums_equal_on_serial_reactor_"
                             "and_ray[marl] (trained policies; on Ray: [marl-ray], slow too); simple_spread "
                             "determinism: tests/scenarios/test_cli.py; the other backends: [gym]")),
    pytest.param("actors", backends_for("actors"), id="actors",
                 marks=_slow("the same client and server roles as [object_size], with smaller payloads; actors "
                             "determinism: tests/scenarios/test_cli.py")),
    pytest.param("object_size", backends_for("object_size"), id="object_size"),
    pytest.param("overhead", backends_for("overhead"), id="overhead"),
]


@pytest.mark.parametrize("scenario,backends", RUNS)
def test_every_backend_computes_the_same_checksums(tmp_path, scenario, backends):
    proc = run_cli(f"scenario={scenario}", f"backend={','.join(backends)}", "budget=smoke",
                   "budget.rounds=4", "budget.repetitions=2", "budget.warmup_rounds=1", "workers=2",
                   *CASES[scenario], run_dir=tmp_path, multirun=True, timeout=600)
    frames = [pd.read_csv(f, keep_default_na=False) for f in tmp_path.glob("*/results.csv")]
    rows = pd.concat(frames, ignore_index=True)
    failed = rows[rows.status != "ok"]
    assert failed.empty, f"{proc.stderr[-3000:]}\n{failed[['backend', 'variant', 'error']]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows["label"] = rows.backend + ":" + rows.variant
    assert rows.label.nunique() == len(backends)
    rows["config"] = rows.params
    for (_, rep), group in rows.groupby(["config", "repetition"]):
        reference = group[group.backend == "serial"].checksum
        assert len(reference) == 1
        assert (group.checksum == reference.iloc[0]).all(), group[["label", "checksum"]].to_string()
    if scenario == "gym":
        serial = rows[rows.backend == "serial"].checksum
        assert len(serial) == 2 and serial.nunique() == 2  # each repetition extends the stream
        # a job that starts its own Ray instance prints no notice of Ray's default token authentication
        # (ray_backend.lifecycle.AUTH_NOTICE_LOGGER); its errors would still show
        assert "Token authentication" not in proc.stderr, proc.stderr[-3000:]
    # Ray's layouts, (envs per actor, actors): one actor per role (ray: [object_size]'s 2 clients, [gym-one-actor-
    # per-role]'s 3 envs), one actor per worker (ray_packed: [gym]'s 3 envs on 2 workers, an actor of 2 and one of 1)
    layouts = {("gym", "ray:actors"): (1, 3), ("object_size", "ray:actors"): (1, 2),
               ("gym", "ray:actors_packed"): (2, 2)}
    for label in ("ray:actors", "ray:actors_packed"):
        ray = rows[rows.label == label]
        if ray.empty or (scenario, label) not in layouts:
            continue
        layout = layouts[scenario, label]
        assert (ray.startup_seconds > 0).all() and (ray.throughput > 0).all(), label
        extra = json.loads(ray.extra.iloc[0])
        assert (extra["envs_per_actor"], extra["actors"]) == layout, label


#: budget=paper (the authors' settings: same seeding, Atari reset quirk and full actions, DQN first-N minibatch
#: and state_dict broadcasts) at smoke sizes, on the backends the paper compares plus the reference
PAPER_CASES = {
    "gym": ["scenario.num_envs=3"],
    "atari": ["scenario.num_envs=2"],
    # and two torch threads per worker: the same jobs check that threads_per_worker reaches torch in every
    # backend's worker processes (tests/harness/test_threads.py's fast check: one Ray start instead of two)
    "dqn": ["scenario.num_rollouts=2", "scenario.steps_per_round=20", "scenario.minibatch=64",
            "scenario.eval_episodes=5", "threads_per_worker=2"],
    "marl": ["scenario.num_agents=4"],  # TrafficJunction, trained policies
}


# gym and atari change only worker-local seeding and actions in paper mode (covered in-process by
# tests/scenarios): slow; dqn (replay role, state_dict broadcasts through the reactor's ports and Ray's object
# store) and marl (TrafficJunction's trained policies) change the data path: fast, marl on Ray slow (its
# broadcast is one array, its results ints: Ray's actor loop carries both in [dqn] here and in
# test_every_backend_computes_the_same_checksums[gym] and [object_size])
PAPER_RUNS = [
    pytest.param("atari", ["serial", "reactor", "ray"], id="atari", marks=pytest.mark.slow),
    pytest.param("dqn", ["serial", "reactor", "ray"], id="dqn"),
    pytest.param("gym", ["serial", "reactor", "ray"], id="gym", marks=pytest.mark.slow),
    pytest.param("marl", ["serial", "reactor"], id="marl"),
    pytest.param("marl", ["serial", "ray"], id="marl-ray", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("scenario,backends", PAPER_RUNS)
def test_paper_mode_checksums_equal_on_serial_reactor_and_ray(tmp_path, scenario, backends):
    proc = run_cli(f"scenario={scenario}", f"backend={','.join(backends)}", "budget=paper",
                   "budget.rounds=4", "budget.repetitions=2", "budget.warmup_rounds=1", "workers=2",
                   *PAPER_CASES[scenario], run_dir=tmp_path, multirun=True, timeout=600)
    frames = [pd.read_csv(f, keep_default_na=False) for f in tmp_path.glob("*/results.csv")]
    rows = pd.concat(frames, ignore_index=True)
    failed = rows[rows.status != "ok"]
    assert failed.empty, f"{proc.stderr[-3000:]}\n{failed[['backend', 'variant', 'error']]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(rows.backend) == set(backends) and set(rows.budget) == {"paper"}
    for rep, group in rows.groupby("repetition"):
        assert group.checksum.nunique() == 1, group[["backend", "checksum"]].to_string()
    if "threads_per_worker=2" in PAPER_CASES[scenario]:  # [dqn]: DQN's roles load torch in every worker process
        assert set(rows.variant[rows.backend == "reactor"]) == {"processes"}  # forked worker processes
        for backend, extra in zip(rows.backend, rows.extra):
            assert json.loads(extra)["torch_threads_observed"] == 2, backend
        assert (rows.threads_per_worker.astype(int) == 2).all()


@pytest.mark.slow  # 12 jobs; the fast suite covers replay=role on serial, reactor and ray through budget=paper
def test_dqn_replay_role_checksums_equal_on_every_role_backend(tmp_path):
    """The replay buffer as its own role (reactor, Ray actor, in-process) trains exactly as in the server."""
    backends = ROLE_BACKENDS
    proc = run_cli("scenario=dqn", f"backend={','.join(backends)}", "budget=smoke", "budget.rounds=3",
                   "budget.repetitions=2", "budget.warmup_rounds=1", "workers=2", "scenario.num_rollouts=2",
                   "scenario.replay=role,server", "scenario.minibatch_rule=first",
                   run_dir=tmp_path, multirun=True, timeout=900)
    frames = [pd.read_csv(f, keep_default_na=False) for f in tmp_path.glob("*/results.csv")]
    rows = pd.concat(frames, ignore_index=True)
    failed = rows[rows.status != "ok"]
    assert failed.empty, f"{proc.stderr[-3000:]}\n{failed[['backend', 'variant', 'error']]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(rows) == 2 * 2 * len(backends)
    for rep, group in rows.groupby("repetition"):  # both placements, every backend: one checksum
        assert group.checksum.nunique() == 1, group[["backend", "variant", "params", "checksum"]].to_string()
