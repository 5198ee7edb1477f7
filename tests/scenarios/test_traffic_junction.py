"""TrafficJunction's rules (ma-gym's documented ones) and its PettingZoo parallel API."""
from __future__ import annotations

import numpy as np
import pytest

from scenarios.traffic_junction import BRAKE, GAS, LEFT, RIGHT, STRAIGHT, TrafficJunctionEnv


def all_(env, action):
    return {a: action for a in env.agents}


def test_pettingzoo_parallel_api():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(TrafficJunctionEnv(4), num_cycles=300)


@pytest.mark.parametrize("n, dim", [(4, 4 * 9 * 9), (10, 10 * 9 * 15)])
def test_spaces_are_ma_gyms(n, dim):
    env = TrafficJunctionEnv(n)
    obs, _ = env.reset(seed=0)
    assert env.observation_space("car_0").shape == (dim,) and env.action_space("car_0").n == 2
    assert all(o.shape == (dim,) for o in obs.values())
    partial = TrafficJunctionEnv(n, full_observable=False)
    assert partial.observation_space("car_0").shape == (9 * (n + 5),)


def test_reset_puts_one_car_on_each_gate_and_the_rest_wait():
    env = TrafficJunctionEnv(10)
    env.reset(seed=3)
    on_road = [p for p in env.pos if p is not None]
    assert sorted(on_road) == sorted(env.gates) and env.pos[4:] == [None] * 6
    assert all(r in (STRAIGHT, RIGHT, LEFT) for r in env.route[:4])


def test_all_brake_costs_grow_with_age_and_the_episode_truncates_at_max_steps():
    env = TrafficJunctionEnv(4, max_steps=100)
    env.reset(seed=1)
    for t in range(1, 101):
        obs, rew, terms, truncs, _ = env.step(all_(env, BRAKE))
        assert rew == pytest.approx({a: -0.01 * t for a in rew})
        assert not any(terms.values())
    assert all(truncs.values()) and env.agents == []


@pytest.mark.parametrize("route, steps, dest", [(STRAIGHT, 13, (7, 13)), (RIGHT, 12, (13, 6)), (LEFT, 14, (0, 7))])
def test_a_lone_car_follows_its_route_to_its_destination(route, steps, dest):
    """One car from the west gate with gas, the others braking: 13 cells straight, 12 turning right, 14 left."""
    env = TrafficJunctionEnv(4, arrive_prob=0.0)
    env.reset(seed=0)
    car = env.pos.index((7, 0))
    env.route[car] = route
    name = env.possible_agents[car]
    for t in range(1, steps + 1):
        assert not env.done[car]
        _, rew, terms, _, _ = env.step({a: (GAS if a == name else BRAKE) for a in env.agents})
        assert rew[name] == pytest.approx(-0.01 * t)
    assert terms[name] and env.pos[car] == dest and name not in env.agents
    assert dest not in env.cell  # it left the road


def test_driving_into_a_car_is_a_collision_and_does_not_move():
    env = TrafficJunctionEnv(4, arrive_prob=0.0)
    env.reset(seed=0)
    a, b = env.pos.index((7, 0)), env.pos.index((0, 6))
    # park car b in the cell ahead of a
    del env.cell[env.pos[b]]
    env.pos[b] = (7, 1)
    env.cell[(7, 1)] = b
    names = env.possible_agents
    _, rew, _, _, infos = env.step({n: (GAS if n == names[a] else BRAKE) for n in env.agents})
    assert rew[names[a]] == pytest.approx(-10 - 0.01) and env.pos[a] == (7, 0)
    assert infos[names[a]]["step_collisions"] == 1


def test_waiting_cars_arrive_at_free_gates():
    env = TrafficJunctionEnv(10, arrive_prob=1.0)
    env.reset(seed=0)
    env.step(all_(env, GAS))  # the four cars leave their gates; one waiting car enters
    assert sum(p is not None for p in env.pos) == 5 and env.pos[4] in env.gates


def test_observation_shows_the_neighbours_features():
    env = TrafficJunctionEnv(4, full_observable=False, arrive_prob=0.0)
    obs, _ = env.reset(seed=0)
    car = env.pos.index((7, 0))
    view = obs[env.possible_agents[car]].reshape(3, 3, 9)
    centre = view[1, 1]
    assert centre[car] == 1 and centre[:4].sum() == 1
    np.testing.assert_allclose(centre[4:6], [7 / 13, 0])
    assert centre[5 + env.route[car]] == 1
    assert view.sum() == centre.sum()  # nobody else within one cell
    full = TrafficJunctionEnv(4)
    full_obs, _ = full.reset(seed=0)
    np.testing.assert_array_equal(full_obs["car_0"], full_obs["car_3"])


def test_seeded_episodes_repeat():
    def run(seed):
        env = TrafficJunctionEnv(10)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(5)
        out = []
        while env.agents:
            obs, rew, *_ = env.step({a: int(rng.integers(2)) for a in env.agents})
            out.append(sum(rew.values()))
        return out
    assert run(4) == run(4) and run(4) != run(5)
