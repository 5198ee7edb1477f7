"""`marl` on TrafficJunction: the authors' policy shape, the committed trained weights, seeded rounds."""
from __future__ import annotations

import numpy as np
import pytest

from scenarios import make_scenario
from backends.base import split_messages
from scenarios.configs import MarlConfig


def run(config, rounds, seed=0):
    scenario = make_scenario(config, seed)
    server = scenario.make_server()
    workers = [scenario.make_worker(i) for i in range(scenario.num_workers)]
    actions = []
    for _ in range(rounds):
        msgs = split_messages(server.scatter(), len(workers))
        results = [w.step(m) for w, m in zip(workers, msgs)]
        actions.append(results)
        server.gather(results)
    return server, workers, np.array(actions)


@pytest.mark.parametrize("n", [4, 10])
def test_trained_policies_have_the_authors_shape_and_act(n):
    config = MarlConfig(env="traffic_junction", num_agents=n, policy="trained")
    server, workers, actions = run(config, 120)  # past one 100-step episode: the server reset the env
    layers = list(workers[0].policy)
    obs_dim = n * 9 * (n + 5)
    assert [type(m).__name__ for m in layers] == ["Linear", "ReLU", "Linear", "Softmax"]
    assert (layers[0].in_features, layers[0].out_features, layers[2].out_features) == (obs_dim, 64, 2)
    assert set(np.unique(actions)) <= {0, 1}
    seeded = run(MarlConfig(env="traffic_junction", num_agents=n, policy="seeded"), 1)[1][0].policy
    assert not np.array_equal(layers[0].weight.detach().numpy(), seeded[0].weight.detach().numpy())
    assert server.env.env.t < 100  # reset after the first episode


def test_trained_needs_4_or_10_agents():
    with pytest.raises(FileNotFoundError, match="num_agents 4 or 10"):
        make_scenario(MarlConfig(env="traffic_junction", num_agents=3, policy="trained"), 0).make_worker(0)


def test_seeded_traffic_rounds_repeat():
    config = MarlConfig(env="traffic_junction", num_agents=3)
    assert run(config, 30)[0].checksum() == run(config, 30)[0].checksum()
    assert run(config, 30)[0].checksum() != run(config, 30, seed=1)[0].checksum()
