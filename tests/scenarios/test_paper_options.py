"""The authors' variants (budget=paper defaults) as named options: each does what their code does."""
from __future__ import annotations

import numpy as np

from scenarios import make_scenario
from backends.base import split_messages
from scenarios.configs import AtariConfig, DqnConfig, GymConfig


def rounds_of(scenario, rounds: int):
    server = scenario.make_server()
    workers = [scenario.make_worker(i) for i in range(scenario.num_workers)]
    received = []
    try:
        for _ in range(rounds):
            msgs = split_messages(server.scatter(), len(workers))
            results = [w.step(m) for w, m in zip(workers, msgs)]
            received.append(results)
            server.gather(results)
    finally:
        for w in workers:
            w.close()
    return server, received


def test_gym_seeding_same_gives_identical_trajectories_and_distinct_does_not():
    _, same = rounds_of(make_scenario(GymConfig(num_envs=3, seeding="same"), 0), 30)
    _, distinct = rounds_of(make_scenario(GymConfig(num_envs=3, seeding="distinct"), 0), 30)
    for results in same:
        for obs, _reward, _done, _encoded in results[1:]:
            np.testing.assert_array_equal(obs, results[0][0])
    assert any(not np.array_equal(r[0][0], r[1][0]) for r in distinct)


def test_atari_full_actions_cover_the_action_space_and_binary_only_0_1():
    full = make_scenario(AtariConfig(env_id="MsPacman-v4", num_envs=1, actions="full"), 0).make_worker(0)
    binary = make_scenario(AtariConfig(env_id="MsPacman-v4", num_envs=1, actions="binary"), 0).make_worker(0)
    try:
        n = full.env.action_space.n
        assert n == 9  # MsPacman-v4's minimal action set, as the authors' gym.make("MsPacman-v4") had
        assert set(full._action() for _ in range(400)) == set(range(n))
        assert set(binary._action() for _ in range(100)) == {0, 1}
    finally:
        full.close()
        binary.close()


def test_atari_reset_every_step_restarts_each_env():
    """After every step the env is reset: the frame a step returns is always one step from a reset."""
    worker = make_scenario(AtariConfig(env_id="Pong-v4", num_envs=1, reset_every_step=True), 0).make_worker(0)
    try:
        frames = [worker.step(None)[0] for _ in range(40)]
    finally:
        worker.close()
    # Pong's first frames after a reset show no ball: without resets, it appears within 40 steps
    fresh = make_scenario(AtariConfig(env_id="Pong-v4", num_envs=1), 0).make_worker(0)
    try:
        later = [fresh.step(None)[0] for _ in range(80)]
    finally:
        fresh.close()
    distinct_reset = len({f.tobytes() for f in frames})
    distinct_plain = len({f.tobytes() for f in later[40:]})
    assert distinct_reset < distinct_plain


def dqn(**kw) -> DqnConfig:
    base = dict(num_rollouts=2, steps_per_round=30, minibatch=16, buffer_capacity=100, eval_episodes=5)
    return DqnConfig(**{**base, **kw})


def test_dqn_first_minibatch_is_the_oldest_entries_in_order():
    server = make_scenario(dqn(minibatch_rule="first", minibatch=16), 0).make_server()
    rows = np.arange(40 * 9, dtype=np.float32).reshape(40, 9)
    server.replay.store(rows[:10])
    np.testing.assert_array_equal(server.replay.minibatch_indices(), np.arange(10))  # fewer than N: all of them
    server.replay.store(rows[10:])
    np.testing.assert_array_equal(server.replay.minibatch_indices(), np.arange(16))
    server.replay.store(rows + 1000)
    server.replay.store(rows + 2000)  # 120 rows into 100: the ring wrapped, the oldest is at pos
    assert server.replay.size == 100 and server.replay.pos == 20
    oldest = server.replay.buffer[server.replay.minibatch_indices()]
    np.testing.assert_array_equal(oldest, np.concatenate([rows[20:36]]))


def test_dqn_uniform_minibatch_samples_with_replacement():
    server = make_scenario(dqn(minibatch_rule="uniform", minibatch=64), 0).make_server()
    server.replay.store(np.zeros((50, 9), dtype=np.float32))
    idx = server.replay.minibatch_indices()
    assert len(idx) == 64 and idx.max() < 50 and len(set(idx.tolist())) < 64


def test_dqn_state_dict_message_trains_like_arrays():
    """The message form changes what travels, not what is learned: equal checksums either way."""
    a, _ = rounds_of(make_scenario(dqn(weights_message="state_dict"), 1), 3)
    b, _ = rounds_of(make_scenario(dqn(weights_message="arrays"), 1), 3)
    msg = a.scatter().value
    assert isinstance(msg, dict) and set(msg) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert a.checksum() == b.checksum()


def test_dqn_seeding_same_gives_identical_rollouts():
    _, received = rounds_of(make_scenario(dqn(seeding="same"), 0), 2)
    for results in received:
        np.testing.assert_array_equal(results[0][0], results[1][0])
    _, received = rounds_of(make_scenario(dqn(seeding="distinct"), 0), 1)
    assert not np.array_equal(received[0][0][0], received[0][1][0])


def test_dqn_replay_role_trains_exactly_like_the_in_server_buffer():
    """The buffer as its own relay role receives every transition and returns the same minibatches."""
    from scenarios.base import finish_round

    sums = {}
    for placement in ("server", "role"):
        for rule in ("first", "uniform"):
            scenario = make_scenario(dqn(replay=placement, minibatch_rule=rule, buffer_capacity=1000), 2)
            assert scenario.has_relay() == (placement == "role")
            server = scenario.make_server()
            workers = [scenario.make_worker(i) for i in range(scenario.num_workers)]
            relay = scenario.make_relay() if scenario.has_relay() else None
            for _ in range(4):
                msgs = split_messages(server.scatter(), len(workers))
                server.gather([w.step(m) for w, m in zip(workers, msgs)])
                finish_round(server, relay)
            sums[placement, rule] = server.checksum()
            if relay is not None:
                assert relay.replay.size == 4 * 2 * 30  # every transition reached the role
    assert sums["server", "first"] == sums["role", "first"] != sums["role", "uniform"] == sums["server", "uniform"]


def test_dqn_replay_role_refuses_a_backend_that_skips_it():
    import pytest

    scenario = make_scenario(dqn(replay="role"), 0)
    server = scenario.make_server()
    workers = [scenario.make_worker(i) for i in range(2)]
    for _ in range(2):
        msgs = split_messages(server.scatter(), 2)
        results = [w.step(m) for w, m in zip(workers, msgs)]
        if _:
            with pytest.raises(RuntimeError, match="replay=role"):
                server.gather(results)
        else:
            server.gather(results)
