"""Train the TrafficJunction policies that `marl` loads with ``scenario.policy=trained`` (budget=paper).

The authors' recipe (6.Multi_Agent_Inference/marl_*_agents/ray/traffic_train.py in their repository): one
policy per agent, Linear(obs, 64)-ReLU-Linear(64, 2)-softmax, actions sampled from it, REINFORCE on each
agent's own discounted return (gamma 0.99) after every episode, Adam lr 0.01, 100 episodes, on the fully
observable TrafficJunction with 4 and with 10 agents. Here the env is `scenarios.traffic_junction` and
everything is seeded, so a rerun writes the same weights (on the same torch build).

    python scripts/train_traffic_junction.py            # writes scenarios/data/traffic_junction_{4,10}_agents.npz

Weights are stored as float16 (half the size; the benchmark loads them as float32, and every backend
loads the same file, so checksums stay equal).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def train(num_agents: int, episodes: int, seed: int, hidden: int = 64, lr: float = 0.01,
          gamma: float = 0.99) -> tuple[list, list[float]]:
    import torch

    from scenarios.configs import MarlConfig
    from scenarios.marl import dims, make_policy
    from scenarios.traffic_junction import TrafficJunctionEnv

    torch.set_num_threads(1)
    torch.manual_seed(seed)  # the action samples
    config = MarlConfig(env="traffic_junction", num_agents=num_agents, hidden=hidden)
    obs_dim, num_actions = dims(config)
    policies = [make_policy(obs_dim, hidden, num_actions, seed, i) for i in range(num_agents)]
    optimizers = [torch.optim.Adam(p.parameters(), lr=lr) for p in policies]
    env = TrafficJunctionEnv(num_agents)
    names = env.possible_agents
    totals = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed * 1000 + episode)
        log_probs: list[list] = [[] for _ in range(num_agents)]
        rewards: list[list[float]] = [[] for _ in range(num_agents)]
        while env.agents:
            actions = {}
            for i, name in enumerate(names):
                probs = torch.softmax(policies[i](torch.from_numpy(obs.get(name, np.zeros(obs_dim, np.float32)))), -1)
                dist = torch.distributions.Categorical(probs)
                action = dist.sample()
                if name in env.agents:
                    log_probs[i].append(dist.log_prob(action))
                    actions[name] = int(action)
            obs, rew, *_ = env.step(actions)
            for i, name in enumerate(names):
                if name in rew and len(rewards[i]) < len(log_probs[i]):
                    rewards[i].append(float(rew[name]))
        for i in range(num_agents):
            if not log_probs[i]:
                continue
            returns, ret = [], 0.0
            for r in reversed(rewards[i]):
                ret = r + gamma * ret
                returns.insert(0, ret)
            loss = -(torch.stack(log_probs[i]) * torch.tensor(returns)).sum()
            optimizers[i].zero_grad()
            loss.backward()
            optimizers[i].step()
        totals.append(float(sum(sum(r) for r in rewards)))
    return policies, totals


def save(policies: list, path: Path) -> None:
    arrays = {f"{i}/{key}": t.detach().numpy().astype(np.float16)
              for i, p in enumerate(policies) for key, t in p.state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


def main() -> None:
    from scenarios.marl import trained_weights_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[4, 10])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for n in args.agents:
        t0 = time.perf_counter()
        policies, totals = train(n, args.episodes, args.seed)
        path = trained_weights_path(n)
        save(policies, path)
        first, last = np.mean(totals[:10]), np.mean(totals[-10:])
        print(f"{n} agents: {args.episodes} episodes in {time.perf_counter() - t0:.1f} s, total reward per "
              f"episode {first:.1f} (first 10) -> {last:.1f} (last 10); {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
