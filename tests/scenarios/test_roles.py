"""The scenarios' roles in-process: contracts the CLI tests cannot see (what the checksum covers, what
verification catches, placement independence of seeded roles)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from scenarios import make_scenario
from tests.conftest import TickClock, run_rounds
from scenarios.base import Broadcast
from scenarios.checksum import encode_python
from scenarios.configs import ActorsConfig, AtariConfig, DqnConfig, MarlConfig, MarlEnv, ObjectSizeConfig
from scenarios.micro import BroadcastServer, PayloadCorrupted


# ---- object_size / actors ---------------------------------------------------------------------------

def one_round(server: BroadcastServer, clients: int = 3) -> tuple[np.ndarray, list[np.ndarray]]:
    payload = server.scatter().value
    return payload, [payload.copy() for _ in range(clients)]


def test_verification_accepts_exact_copies_and_advances():
    server = BroadcastServer(100_000, seed=0)
    before = server.checksum()
    _, copies = one_round(server)
    server.gather(copies)
    assert server.checksum() != before


@pytest.mark.parametrize("corrupt", ["sampled_byte", "stamp", "last_byte", "shape", "dtype", "not_array", "stale"])
def test_verification_catches_a_corrupted_payload(corrupt):
    server = BroadcastServer(100_000, seed=0)
    _, copies = one_round(server)
    server.gather(copies)  # round 0 fine; keep its copy to replay it as stale data in round 1
    stale = copies[0]
    _, copies = one_round(server)
    bad = copies[1]
    if corrupt == "sampled_byte":
        bad[server.stride * 7] ^= 0xFF
    elif corrupt == "stamp":
        bad[0] ^= 0x01
    elif corrupt == "last_byte":
        bad[-1] ^= 0x80
    elif corrupt == "shape":
        copies[1] = bad[:-1]
    elif corrupt == "dtype":
        copies[1] = bad.astype(np.int16)
    elif corrupt == "not_array":
        copies[1] = bad.tobytes()
    elif corrupt == "stale":
        copies[1] = stale
    with pytest.raises(PayloadCorrupted, match="client 1"):
        server.gather(copies)


def test_empty_payload_round_trip():
    server, _ = run_rounds(make_scenario(ActorsConfig(num_clients=2, payload_bytes=0), 0), 3)
    assert server.round == 3


def test_micro_work_is_done_by_clients():
    import time

    scenario = make_scenario(ObjectSizeConfig(num_clients=2, payload_bytes=10, work="sleep", work_us=2000), 0)
    assert scenario.round_work_seconds() == pytest.approx(0.002)
    t0 = time.perf_counter()
    run_rounds(scenario, 5)
    assert time.perf_counter() - t0 >= 5 * 2 * 0.002


# ---- dqn ---------------------------------------------------------------------------------------------

def dqn_config(**kw) -> DqnConfig:
    return DqnConfig(**{"num_rollouts": 2, "steps_per_round": 30, "minibatch": 32, "eval_episodes": 10, **kw})


def test_dqn_checksum_covers_the_weights():
    """Identical transitions, different learning rates: only the weights differ, and so must the checksums."""
    scenario = make_scenario(dqn_config(), 0)
    worker = scenario.make_worker(0)
    transitions = worker.step(scenario.make_server().scatter().value)
    sums = []
    for lr in (0.01, 0.001):
        server = make_scenario(dqn_config(lr=lr), 0).make_server()
        server.scatter()
        server.gather([transitions])
        sums.append(server.checksum())
    assert sums[0] != sums[1]


def test_dqn_checksum_ignores_rollout_timing_and_learner_trains():
    scenario = make_scenario(dqn_config(), 0)
    worker = scenario.make_worker(0)
    a, b = scenario.make_server(), scenario.make_server()
    w0 = [w.copy() for w in a.scatter().value]
    b.scatter()
    transitions, seconds, _encoded = worker.step(w0)
    assert transitions.shape == (30, 9) and transitions.dtype == np.float32
    assert set(np.unique(transitions[:, 3])) <= {0.0, 1.0}
    a.gather([(transitions, seconds)])
    b.gather([(transitions, seconds + 123.0)])
    assert a.checksum() == b.checksum()
    assert any(not np.array_equal(x, y) for x, y in zip(w0, a.scatter().value))


def test_dqn_roles_built_twice_agree_and_messages_pickle():
    """Same config and seed -> same rounds, whichever process builds the roles (here: fresh instances)."""
    s1, _ = run_rounds(make_scenario(dqn_config(), 3), 4)
    s2, _ = run_rounds(pickle.loads(pickle.dumps(make_scenario(dqn_config(), 3))), 4)
    assert s1.checksum() == s2.checksum()
    assert s1.final_metrics() == s2.final_metrics()
    msg = s1.scatter()
    assert isinstance(msg, Broadcast) and all(isinstance(w, np.ndarray) for w in msg.value)
    pickle.dumps(msg)
    m = s1.metrics()
    assert m["breakdown_rounds"] == 4 and m["training_s"] > 0 and m["rollout_total_s"] > 0
    assert "sampling_s" not in m and "communication_s" not in m  # the layout is the harness's to add


def test_weights_received_read_only_load_without_a_warning():
    """A broadcast's arrays arrive read-only where the backend shares memory (reactor ports, Ray's object
    store): a worker loads them and the learner reads a batch with no torch warning in the job's output (a
    read-only array is copied, a writable one read in place). In a fresh interpreter with warnings as errors:
    torch warns once per process."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = """
import numpy as np
from scenarios.dqn import set_weights
from scenarios.nets import seeded_mlp, tensor_of
source, net = seeded_mlp([3, 4, 2], 0), seeded_mlp([3, 4, 2], 1)
weights = [p.detach().numpy().copy() for p in source.parameters()]
for w in weights:
    w.flags.writeable = False
set_weights(net, weights)
assert all(np.array_equal(p.detach().numpy(), w) for p, w in zip(net.parameters(), weights))
batch = np.arange(6, dtype=np.float32).reshape(2, 3)
assert tensor_of(batch).data_ptr() == batch.ctypes.data  # writable: no copy
batch.flags.writeable = False
assert tensor_of(batch).tolist() == batch.tolist()
"""
    proc = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]  # a warning is an error there


def test_dqn_server_reports_each_rollouts_seconds_per_round():
    """worker_seconds(): one row per round, one column per rollout, the seconds the results carried;
    metrics() clears it with its own sums, so both cover the same rounds."""
    server, _ = run_rounds(make_scenario(dqn_config(num_rollouts=3), 0), 5)
    seconds = server.worker_seconds()
    assert seconds.shape == (5, 3) and (seconds > 0).all()
    m = server.metrics()
    assert m["rollout_total_s"] == pytest.approx(seconds.sum())
    assert m["rounds_s"] >= m["training_s"] > 0
    assert server.worker_seconds().shape == (0, 3)


def test_sampling_is_the_longest_per_process_sum_of_rollouts():
    from harness.phases import critical_sampling

    rounds = np.array([[0.1, 0.2, 0.4, 0.05], [0.3, 0.0, 0.1, 0.1]])
    # e.g. two Ray actors holding two rollout workers each: max(0.3, 0.45) + max(0.3, 0.2)
    assert critical_sampling(rounds, [1, 1, 2, 2]) == pytest.approx(0.75)
    assert critical_sampling(rounds, [0, 0, 0, 0]) == pytest.approx(rounds.sum())  # serial: every rollout
    assert critical_sampling(rounds, [1, 2, 3, 4]) == pytest.approx(0.4 + 0.3)  # one process each: the slowest
    with pytest.raises(ValueError, match="process index"):
        critical_sampling(rounds, [0, -1, 0, 0])
    with pytest.raises(ValueError, match="4 workers"):
        critical_sampling(rounds[:, :3], [0, 1, 2, 3])


def test_round_time_is_not_split_without_a_layout():
    from harness.phases import split_round_time

    m = {"rounds_s": 1.0, "training_s": 0.25}
    assert split_round_time(m, np.full((2, 2), 0.1), None) == {}
    assert split_round_time(m, None, [0, 1]) == {}
    split = split_round_time(m, np.full((2, 2), 0.1), [1, 2])
    assert split == pytest.approx({"sampling_s": 0.2, "communication_s": 0.55, "processes": 2.0})


def test_dqn_split_on_the_serial_backend_has_almost_no_communication():
    """Serial communicates nothing: sampling is the sum of all rollouts and the rest is bookkeeping."""
    from backends.serial import SerialBackend
    from backends.serial import SerialConfig
    from harness.phases import server_metrics

    scenario = make_scenario(dqn_config(num_rollouts=4, steps_per_round=50), 0)
    server = scenario.make_server()
    backend = SerialBackend(SerialConfig(), 2)
    backend.start(scenario, server)
    try:
        backend.run(10, TickClock())
    finally:
        backend.stop()
    m = server_metrics(server, backend)
    assert m["breakdown_rounds"] == 10 and m["processes"] == 1
    assert m["sampling_s"] == pytest.approx(m["rollout_total_s"])  # the critical path is every rollout
    # under the old "slowest rollout" rule three of the four rollouts (~75% of the round) were communication
    assert m["communication_s"] < 0.1 * m["sampling_s"], m


def test_dqn_buffer_is_a_ring():
    server = make_scenario(dqn_config(buffer_capacity=50), 0).make_server()
    rows = np.arange(40 * 9, dtype=np.float32).reshape(40, 9)
    server.replay.store(rows)
    server.replay.store(rows + 1000)
    assert server.replay.size == 50 and server.replay.pos == 30
    np.testing.assert_array_equal(server.replay.buffer[:30], rows[10:] + 1000)
    np.testing.assert_array_equal(server.replay.buffer[30:40], rows[30:])


# ---- marl --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("env", [MarlEnv.synthetic, MarlEnv.simple_spread_v3])
def test_marl_agents_are_seeded_per_index(env):
    scenario = make_scenario(MarlConfig(env=env, num_agents=4), 0)
    server = scenario.make_server()
    joint = server.scatter().value
    assert joint.dtype == np.float32 and joint.shape == (4, 24 if env == MarlEnv.simple_spread_v3 else 18)
    again = [scenario.make_worker(i) for i in range(4)]
    agents = [scenario.make_worker(i) for i in range(4)]
    actions = [a.step(joint) for a in agents]
    assert actions == [a.step(joint) for a in again]
    w0, w1 = (list(a.policy.parameters())[0].detach().numpy() for a in agents[:2])
    assert not np.array_equal(w0, w1)
    read_only = joint.copy()
    read_only.flags.writeable = False
    assert actions == [a.step(read_only) for a in agents]


def test_marl_spread_resets_after_max_cycles():
    cfg = MarlConfig(env=MarlEnv.simple_spread_v3, num_agents=3, max_cycles=5)
    scenario = make_scenario(cfg, 0)
    server, _ = run_rounds(scenario, 12)
    assert server.env.env.agents  # reset twice along the way, still live
    costs = server.final_metrics()
    assert costs["env_step_ms"] > 0 and costs["inference_ms"] > 0


@pytest.mark.parametrize("env", [MarlEnv.synthetic, MarlEnv.simple_spread_v3])
def test_marl_server_checksum_folds_each_value_in_order_resets_included(env):
    """The server folds a round's actions, observation, rewards and done flag (and after a reset the next
    episode's first observation) in one call: the same value as one ``update`` per value, in that order, so
    checksums recorded before stay comparable. Checked against a twin env stepped with the same actions."""
    from scenarios.checksum import RunningChecksum
    from scenarios.marl import make_joint_env

    cfg = MarlConfig(env=env, num_agents=3, max_cycles=5)
    scenario = make_scenario(cfg, 0)
    server = scenario.make_server()
    twin, expected = make_joint_env(cfg, scenario.seed), RunningChecksum()
    rng = np.random.default_rng(3)
    resets = 0
    for _ in range(12):
        server.scatter()
        actions = [int(a) for a in rng.integers(0, 5, 3)]
        server.gather(actions)
        obs, rewards, done = twin.step(np.asarray(actions, dtype=np.int64))
        for value in (np.asarray(actions, dtype=np.int64), obs, rewards, done):
            expected.update(value)
        if done:
            expected.update(twin.joint)
            resets += 1
    assert server.checksum() == expected.hexdigest()
    assert resets == (2 if env == MarlEnv.simple_spread_v3 else 0)


# ---- atari -------------------------------------------------------------------------------------------

def test_atari_workers_deliver_full_frames_with_restricted_actions():
    scenario = make_scenario(AtariConfig(num_envs=2, actions="binary"), 0)
    worker = scenario.make_worker(1)
    try:
        actions = [worker._action() for _ in range(50)]
        assert set(actions) == {0, 1}
        obs, reward, done, encoded = worker.step(None)
        assert obs.shape == (210, 160, 3) and obs.dtype == np.uint8
        assert isinstance(reward, float) and isinstance(done, bool)
        # the worker's encoding is the checksum's bytes of what it returned (a few dozen bytes, not the frame)
        assert bytes(encoded) == encode_python([obs, reward, done]) and encoded.size < 64
    finally:
        worker.close()
    assert scenario.row_fields() == {"num_envs": 2, "env_id": "ALE/Pong-v5"}


def test_vector_backend_refuses_non_env_scenarios():
    from backends.vector import VectorBackend, VectorBackendUnsupported
    from backends.vector import VectorConfig

    scenario = make_scenario(dqn_config(), 0)
    with pytest.raises(VectorBackendUnsupported, match="gym"):
        VectorBackend(VectorConfig(), 2).start(scenario, scenario.make_server())


def test_policies_built_in_concurrent_threads_equal_sequential_ones():
    """The threads executor builds workers in parallel: initial weights must not depend on the global RNG."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    scenario = make_scenario(MarlConfig(env=MarlEnv.synthetic, num_agents=6), 1)
    sequential = [scenario.make_worker(i) for i in range(6)]
    start = threading.Barrier(6)

    def build(i):
        start.wait()
        return scenario.make_worker(i)

    with ThreadPoolExecutor(6) as pool:
        concurrent = list(pool.map(build, range(6)))
    for a, b in zip(sequential, concurrent):
        for p, q in zip(a.policy.parameters(), b.policy.parameters()):
            assert np.array_equal(p.detach().numpy(), q.detach().numpy())


def test_vector_backend_with_reset_every_step_equals_serial_in_process():
    from backends.serial import SerialBackend
    from backends.vector import VectorBackend
    from backends.serial import SerialConfig
    from backends.vector import VectorConfig

    scenario = make_scenario(AtariConfig(num_envs=2, reset_every_step=True), 4)
    assert scenario.row_fields()["env_id"] == "ALE/Pong-v5+reset_every_step"
    sums = []
    for backend in (SerialBackend(SerialConfig(), 2), VectorBackend(VectorConfig(), 2)):
        server, clock = scenario.make_server(), TickClock()
        try:
            backend.start(scenario, server)
            backend.run(3, clock)
        finally:
            backend.stop()
        assert clock.ticks == 3
        sums.append(server.checksum())
    assert sums[0] == sums[1]


def test_vector_backend_in_paper_mode_equals_serial_in_process():
    """budget=paper's Atari options (same seeding, full action set, reset quirk) on the vector backend."""
    from backends.serial import SerialBackend
    from backends.vector import VectorBackend
    from backends.serial import SerialConfig
    from backends.vector import VectorConfig

    scenario = make_scenario(AtariConfig(env_id="MsPacman-v4", num_envs=2, reset_every_step=True, actions="full",
                                         seeding="same"), 1)
    sums = []
    for backend in (SerialBackend(SerialConfig(), 2), VectorBackend(VectorConfig(), 2)):
        server, clock = scenario.make_server(), TickClock()
        try:
            backend.start(scenario, server)
            backend.run(4, clock)
        finally:
            backend.stop()
        sums.append(server.checksum())
    assert sums[0] == sums[1]
